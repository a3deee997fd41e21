"""transformer_core — attention you can look inside.

Scaled dot-product and multi-head attention, the position-wise feed-forward network and
a post-LN encoder, with a hook point on every stage and :func:`capture` to record them.
Never imports Streamlit; usable from a notebook.

**Mask convention (one for the whole package): ``True`` = may attend**, as in
``torch.nn.functional.scaled_dot_product_attention``. ``nn.MultiheadAttention`` and seed
001 use ``True`` = blocked; seed 000 uses ``0`` = blocked. See :mod:`transformer_core.nn.masks`.

Shape legend used in every docstring: batch, head, query_pos, key_pos, d_head (= d_k),
d_model, d_ff.

Rooms, imports pointing one way (a room imports only rooms above it in this list):
``text`` (tokenizers, the text entrance) → ``nn`` (attention math, masks, hooks, encoder) →
``records`` (Trace and its files) → ``models`` (toy, MiniLM, causal) → ``analysis`` (explain,
statistics, lessons) → ``figures`` (Plotly builders) → ``cli`` (the export command).
"""
from .nn.attention import MultiHeadAttention, attention_scores, mask_scores, masked_softmax, scaled_dot_product_attention
from .nn.config import EncoderConfig, divisors
from .nn.encoder import Encoder, EncoderLayer
from .nn.feed_forward import PositionwiseFeedForward
from .nn.hooks import HookPoint, capture
from .nn.masks import (causal_mask, combine, from_true_blocked, from_zero_blocked, padding_mask, to_true_blocked,
                    to_zero_blocked)
from .text.tokenize import PAD, TokenBatch, batch_tokens, word_tokenize, wordpiece_tokenize
from .models.toy import run_toy
from .records.trace import Trace

MASK_CONVENTION = "True = may attend (as torch.nn.functional.scaled_dot_product_attention)"


def load_minilm():
    """Load MiniLM-L6 onto our modules; see :func:`transformer_core.models.minilm.load_minilm`."""
    from .models.minilm import load_minilm as _load

    return _load()


def run_minilm(sentences, **kwargs):
    """Trace MiniLM-L6 on sentences; see :func:`transformer_core.models.minilm_trace.run_minilm`."""
    from .models.minilm_trace import run_minilm as _run

    return _run(sentences, **kwargs)


def load_causal_model(step=None):
    """The trained causal model (after its SHA-256 check); see :func:`transformer_core.models.causal.load_causal_model`."""
    from .models.causal import load_causal_model as _load

    return _load(step)
