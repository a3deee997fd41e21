"""The tutorials' own lines beside the numbers: for each stage, the line of seed 000 or seed 001 that computes it.

The two tutorials this project implements (``shared/seeds/000_…`` and ``001_…``) are written in Chinese.
Each entry is a code line copied as it stands in the seed and the English of the tutorial's own comment on
it; the comment itself, in the tutorial's words, is the Chinese catalog's translation of that English
(``transformer_core/locales/zh``), so the Chinese page shows the tutorial's line and comment verbatim and
the English page its translation. ``tests/test_tutorial_lines.py`` checks every code line and every Chinese
comment against the seed files.

Stages are the app's: ``q``/``k``/``v``, ``scores``, ``masked_scores``, ``weights``, ``context`` (explorer,
explain panel) and the pipeline's steps (``projections``, ``split``, ``concat``, ``w_o``, ``residual``,
``norm1``, ``ffn1``, ``ffn2``, ``norm2``).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..text.i18n import N_, _


@dataclass(frozen=True)
class TutorialLine:
    """One line of a seed: ``seed`` ("000" or "001"), its ``code`` (as in the seed, indentation stripped) and
    ``comment``, the English of the tutorial's comment (its Chinese original: :meth:`original`)."""

    seed: str
    code: str
    comment: str

    def text(self) -> str:
        """The comment in the current language (Chinese: the tutorial's own words)."""
        return _(self.comment)

    def original(self) -> str:
        """The tutorial's own Chinese comment."""
        return _(self.comment, "zh")


L = TutorialLine
LINES: dict[str, tuple[TutorialLine, ...]] = {
    "projections": (
        L("000", "self.W_Q = nn.Linear(d_model,d_model)", N_("map the input to the three vectors Q, K, V")),
        L("001", "q_s = self.W_Q(Q).view(batch_size, -1, n_heads, d_k).transpose(1,2)",
          N_("project and reshape the input for what follows")),
    ),
    "split": (
        L("000", "Q = self.W_Q(Q).view(batch_size,-1,self.n_heads,self.d_k).transpose(1, 2)",
          N_("so that each attention head handles the whole sequence on its own, which makes the attention "
             "weights easy to compute next")),
    ),
    "scores": (
        L("000", "scores = torch.matmul(Q,K.transpose(-2,-1)) / math.sqrt(d_k)",
          N_("scale by sqrt(d_k) to keep the scores from growing too large.")),
        L("001", "scores = torch.matmul(Q, K.transpose(-1, -2)) / np.sqrt(d_k)",
          N_("compute the attention scores (raw weights) [batch_size, n_heads, len_q, len_k]")),
    ),
    "masked_scores": (
        L("000", "scores = scores.masked_fill(mask==0, float('-inf'))",
          N_("masked attention: positions where mask==0 (blocked) become -inf (minus infinity), so the positions "
             "to be guessed are hidden")),
        L("001", "scores.masked_fill_(attn_mask, -1e9)",
          N_("apply the attention mask: weights where attn_mask is 1 are replaced by a tiny value")),
    ),
    "weights": (
        L("001", "weights = nn.Softmax(dim=-1)(scores)", N_("normalise the attention scores with softmax")),
        L("000", "attn = self.softmax(scores)", N_("apply softmax to the scores to get the attention weights.")),
    ),
    "context": (
        L("001", "context = torch.matmul(weights, V)",
          N_("compute the context vector (the attention's output), a compact summary of the context")),
        L("000", "out = torch.matmul(attn,V)", N_("take the weighted sum of V with the attention weights.")),
    ),
    "concat": (
        L("001", "context = context.transpose(1, 2).contiguous().view(batch_size, -1, n_heads * d_v)",
          N_("join the heads' context vectors together by rearranging the dimensions")),
    ),
    "w_o": (
        L("001", "output = self.linear(context)",
          N_("a linear layer turns the joined multi-head result back into the original embedding size")),
        L("000", "self.fc = nn.Linear(d_model,d_model)", N_("after joining, map back to the original d_model")),
    ),
    "residual": (
        L("001", "residual, batch_size = Q, Q.size(0)", N_("keep the residual connection")),
        L("000", "out = self.dropout(out)", N_("against overfitting")),
    ),
    "norm1": (
        L("001", "output = self.layer_norm(output + residual)",
          N_("residual connection with the input (Q), then layer normalisation, and output")),
        L("000", "self.norm = nn.LayerNorm(d_model)", N_("layer normalisation after the residual")),
    ),
    "ffn1": (
        L("001", "output = nn.ReLU()(self.conv1(inputs.transpose(1, 2)))", N_("ReLU after convolution layer 1")),
    ),
    "ffn2": (
        L("001", "output = self.conv2(output).transpose(1, 2)",
          N_("convolution layer 2 brings the dimension back down")),
    ),
    "norm2": (
        L("001", "output = self.layer_norm(output + residual)",
          N_("residual connection with the input, then layer normalisation")),
    ),
}
LINES["q"] = LINES["k"] = LINES["v"] = LINES["projections"]


def lines_for(stage: str) -> tuple[TutorialLine, ...]:
    """The seed lines that compute ``stage`` (empty for a stage the tutorials do not write out), seed 000's first."""
    return tuple(sorted(LINES.get(stage, ()), key=lambda line: line.seed))  # stable: each seed's own order
