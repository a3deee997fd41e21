"""transformer_core — attention you can look inside.

Scaled dot-product and multi-head attention, the position-wise feed-forward network and
a post-LN encoder, with a hook point on every stage and :func:`capture` to record them.
Never imports Streamlit; usable from a notebook.

**Mask convention (one for the whole package): ``True`` = may attend**, as in
``torch.nn.functional.scaled_dot_product_attention``. ``nn.MultiheadAttention`` and seed
001 use ``True`` = blocked; seed 000 uses ``0`` = blocked. See :mod:`transformer_core.masks`.

Shape legend used in every docstring: batch, head, query_pos, key_pos, d_head (= d_k),
d_model, d_ff.
"""
from .attention import MultiHeadAttention, attention_scores, mask_scores, masked_softmax, scaled_dot_product_attention
from .config import EncoderConfig, divisors
from .encoder import Encoder, EncoderLayer
from .feed_forward import PositionwiseFeedForward
from .hooks import HookPoint, capture
from .masks import (causal_mask, combine, from_true_blocked, from_zero_blocked, padding_mask, to_true_blocked,
                    to_zero_blocked)
from .tokenize import PAD, TokenBatch, batch_tokens, word_tokenize, wordpiece_tokenize
from .trace import Trace, run_toy

MASK_CONVENTION = "True = may attend (as torch.nn.functional.scaled_dot_product_attention)"


def load_minilm():
    """Load MiniLM-L6 onto our modules; see :func:`transformer_core.pretrained.load_minilm`."""
    from .pretrained import load_minilm as _load

    return _load()


def run_minilm(sentences, **kwargs):
    """Trace MiniLM-L6 on sentences; see :func:`transformer_core.pretrained_trace.run_minilm`."""
    from .pretrained_trace import run_minilm as _run

    return _run(sentences, **kwargs)


def load_causal_model(step=None):
    """The trained causal model (after its SHA-256 check); see :func:`transformer_core.causal.load_causal_model`."""
    from .causal import load_causal_model as _load

    return _load(step)
