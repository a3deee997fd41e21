"""The lesson pages' cached compute: :func:`~ui.shell.cache.memo` (one byte budget, keyed by value, arrays read-only)
around :mod:`transformer_core.analysis.masks_lab` (the numbers), :mod:`transformer_core.analysis.lessons` and
:func:`~transformer_core.models.toy.run_toy`; the sidebar's settings become the toy encoder's config here. NumPy
arrays and plain values out."""
from __future__ import annotations

from transformer_core import EncoderConfig, run_toy
from transformer_core.analysis import lessons, masks_lab
from transformer_core.records.trace import Trace
from transformer_core.text.i18n import use_language
from transformer_core.text.tokenize import batch_tokens

from ..shell.cache import memo
from ..shell.controls import Settings
from ..shell.i18n import language
from .lesson_figures import LESSON_TOKENS, lab_sentences


def config(settings: Settings, n_heads: int | None = None, dropout: float = 0.0) -> EncoderConfig:
    """The toy encoder's config for these settings (the explorer's model)."""
    return EncoderConfig(d_model=settings.d_model, n_heads=n_heads or settings.n_heads, d_ff=4 * settings.d_model,
                         dropout=dropout, seed=settings.seed)


# ---------------------------------------------------------------------------------------- masks lab
@memo("lesson_results")
def lab_trace(settings: Settings) -> Trace:
    """The toy encoder on the lab's two sentences, captured with no mask (raw scores, q, k, v, embeddings)."""
    pair, _added = lab_sentences(settings)
    return run_toy(list(pair), config(settings), tokenizer=settings.tokenizer, causal=False, padding=False,
                   max_tokens=LESSON_TOKENS)


@memo("lesson_results")
def mask_gallery(settings: Settings, batch: int, head: int) -> dict:
    """Causal, padding and both: ``{kind: {"mask", "masked", "weights"}}`` for one sentence and head
    (:func:`~transformer_core.analysis.masks_lab.mask_gallery`)."""
    return masks_lab.mask_gallery(lab_trace(settings), batch, head)


def conventions(settings: Settings, batch: int, head: int, empty_row: int) -> dict:
    """Seed 000 vs seed 001 vs ours on causal + padding with query row ``empty_row`` fully blocked; float16 too
    (its texts in the session's language: the language is part of the cache key)."""
    return _conventions(settings, batch, head, empty_row, language())


@memo("lesson_results")
def _conventions(settings: Settings, batch: int, head: int, empty_row: int, lang: str) -> dict:
    with use_language(lang):
        return masks_lab.conventions(lab_trace(settings), batch, head, empty_row, settings.d_model, settings.n_heads,
                                     settings.seed)


@memo("lesson_results")
def prefix(settings: Settings, batch: int, head: int, n_new: int) -> dict:
    """The last ``n_new`` real tokens as new queries against the whole sentence (a cached prefix,
    :func:`~transformer_core.analysis.masks_lab.prefix`)."""
    return masks_lab.prefix(lab_trace(settings), batch, head, n_new)


@memo("lesson_results")
def keys_vs_queries(settings: Settings, batch: int, head: int) -> dict:
    """Padding hidden on key columns, on query rows, or both: masks, weights (ours, seed 000) and measures
    (:func:`~transformer_core.analysis.masks_lab.keys_vs_queries`)."""
    return masks_lab.keys_vs_queries(lab_trace(settings), batch, head)


@memo("lesson_results")
def dropout_lab(settings: Settings, batch: int, head: int, training: bool, p: float, dropout_seed: int) -> dict:
    """Weights before and after attention dropout for the sidebar's mask; row sums of both
    (:func:`~transformer_core.analysis.masks_lab.dropout`)."""
    return masks_lab.dropout(lab_trace(settings), batch, head, config(settings, dropout=p), settings.causal,
                             settings.padding, training, dropout_seed)


# ---------------------------------------------------------------------------------------- pipeline
@memo("lesson_results")
def walkthrough(settings: Settings, batch: int, n_heads: int, causal: bool) -> dict:
    """One sentence through the toy encoder's first layer, every step (see ``lessons.encoder_walkthrough``)."""
    tb = batch_tokens([settings.sentences[batch]], settings.tokenizer, LESSON_TOKENS)
    tokens = tb.tokens[0]
    steps = lessons.encoder_walkthrough(tokens, config(settings, n_heads=n_heads), causal)
    return {"tokens": tokens, "truncated": tb.truncated[0], "steps": steps, **masks_lab.walkthrough_checks(steps)}


@memo("lesson_results")
def comparison(settings: Settings, batch: int, a: tuple[int, bool], b: tuple[int, bool]) -> dict:
    """Two settings ``(n_heads, causal)`` on one sentence: B − A for the attention output and the
    head-averaged weights (cells blocked under both settings are hidden)."""
    sa, sb = (walkthrough(settings, batch, *s)["steps"] for s in (a, b))
    return masks_lab.compare_steps(sa, sb)


@memo("lesson_results")
def parameter_counts(d_model: int, head_counts: tuple[int, ...]) -> dict[int, int]:
    """Parameters of ``MultiHeadAttention(d_model, h)`` for every ``h``, counted on built modules."""
    return lessons.attention_parameter_counts(d_model, list(head_counts))
