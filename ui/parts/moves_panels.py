"""What attention moves, under any head view: the value-weighted norms panel (weight vs ‖α·f(x)‖, the cell's two
factors) and the "colour heads by type" picker. Used by the explorer, MiniLM and causal pages."""
from __future__ import annotations

import numpy as np
import streamlit as st

from transformer_core.analysis.head_stats import special_positions
from transformer_core.analysis.head_types import CAUSAL_SCORES, ENCODER_SCORES, SCORES, is_punctuation
from transformer_core.analysis.value_norms import moved_shares, output_projections, split_output_projection, value_norms
from transformer_core.records.trace import Trace

from ..shell.i18n import N_, _
from ..shell.markdown import plain
from ..shell.url import bind_url
from . import explain_panel
from .head_view import chosen_cell
from .numbers import number

COLORS = ("none",) + ENCODER_SCORES
CAUSAL_COLORS = ("none",) + CAUSAL_SCORES


def color_control(prefix: str = "minilm_", colors: tuple[str, ...] = COLORS) -> str:
    """The "colour heads by type" picker (``?color=``); returns the score name or ``"none"``."""
    bind_url(f"{prefix}color", "color", colors, "none")
    names = {c: _("none") if c == "none" else _(SCORES[c]) for c in colors}  # translated now
    return st.columns([2, 3])[0].selectbox(_("Colour heads by type"), colors, key=f"{prefix}color",
                        format_func=names.get,
                        help=_("Fade every overview tile by a head-type score (0 = faded, 1 = framed): "
                               "previous/next token, self, share to [CLS], to [SEP]/punctuation, broadness."))


def norms_panel(trace: Trace, *, batch: int, layer: int, head: int, key_prefix: str = "minilm_") -> None:
    """Under the open head when the stage is ``norms``: weight vs what moves to [CLS]/[SEP]/punctuation, and
    the chosen cell's two factors α_ij and ‖f_h(x_j)‖, recomputed."""
    n = trace.lengths[batch]
    tokens = trace.tokens[batch]
    weights, norms = trace.stage("weights", layer)[batch], trace.stage("norms", layer)[batch]
    special = special_positions(tokens, n)  # [CLS]/[SEP] by position, where the tokenizer put them
    groups = {"[CLS]": special["[CLS]"], "[SEP]": special["[SEP]"],
              N_("punctuation"): np.array([i < n and is_punctuation(t) for i, t in enumerate(tokens)])}
    shares = {name: moved_shares(weights[head:head + 1], norms[head:head + 1], keys, n)
              for name, keys in groups.items() if keys.any()}
    name, (w, m) = max(shares.items(), key=lambda kv: kv[1][0][0]) if shares else ("", ([0.0], [0.0]))
    verb = _("but only") if m[0] < w[0] else _("and")
    if shares:
        st.markdown(_("**{w}** of this head's weight goes to {name}, {verb} **{m}** of what it moves (‖α·f(x)‖). Weights "
                      "say where a head *looks*; value-weighted norms say what it *carries*: a key whose vector f(x) = "
                      "v·W_O is short moves little however much weight it gets (Kobayashi et al. 2020).").format(
            w=number(w[0], ".0%"), name=_(name), verb=verb, m=number(m[0], ".0%")))
    q, k = chosen_cell(trace, batch, key_prefix)  # the explain panel's own cell (URL, click or pickers)
    projections = output_projections(trace)
    heads = split_output_projection(projections[layer][0], trace.n_heads)
    f = value_norms(trace.stage("v", layer)[batch], heads)[head, k]  # ‖v_k W_O^head‖
    alpha = float(weights[head, q, k])
    diff = abs(alpha * float(f) - float(norms[head, q, k]))
    st.latex(rf"\lVert \alpha_{{{q},{k}}}\, f_{{{head}}}(x_{{{k}}}) \rVert = \alpha_{{{q},{k}}} \cdot "
             rf"\lVert v_{{{k}}} W_O^{{{head}}} \rVert = {alpha:.4f} \times {float(f):.4f} = {alpha * float(f):.4f}")
    st.caption(_("Query {q}, key {k} (pick another cell in the explain panel below, or click it). W_O^{head} = the {rows} "
                 "rows of W_O that multiply head {head}'s context; its output bias is shared by all heads and left out. "
                 "The figure shows {shown} (difference {diff}).").format(
        q=plain(f"{q}: {tokens[q]}"), k=plain(f"{k}: {tokens[k]}"), head=head, rows=heads.shape[1],
        shown=f"{float(norms[head, q, k]):.4f}", diff=f"{diff:.1e}"))
    st.divider()
    explain_panel.show(trace, batch=batch, layer=layer, head=head, key_prefix=key_prefix)
