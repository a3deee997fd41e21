"""Glue for the two teaching pages (masks lab, multi-head pipeline): prose, cached compute, figures.

* Prose lives in ``assets/<page>.md`` (Chinese: ``assets/zh/<page>.md``, the same sections), cut into sections
  by ``<!-- section: name -->`` lines.
* Compute is :func:`~ui.cache.memo` (one byte budget, keyed by value, arrays read-only) around :mod:`transformer_core.analysis.lessons`
  and :func:`~transformer_core.models.toy.run_toy`; it returns NumPy arrays and plain values.
* Figures are :func:`transformer_core.figures.stage.heatmap` with small touches (a two-colour
  boolean mask, head bands on feature matrices); no NaN or ±inf ever reaches a figure.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st
import torch

from transformer_core import EncoderConfig, run_toy
from transformer_core.figures import stage as figures
from transformer_core.analysis import lessons
from transformer_core.nn import masks
from transformer_core.nn.attention import masked_softmax
from transformer_core.text.tokenize import TokenBatch, batch_tokens
from transformer_core.models.toy import build_mask
from transformer_core.records.trace import Trace

from .cache import memo
from .i18n import _, language
from .state import Settings

ASSETS = Path(__file__).resolve().parent.parent / "assets"
PANEL_WIDTH_PX = 250  # lesson figures stand two or three across: about this wide at 1280 px
LESSON_TOKENS = 24  # tokens per sentence on the lesson pages (figures stay readable)
EXAMPLE_SENTENCE = "Hi there!"  # second sentence when the learner typed only one
HEAD_LINE = "#1a9641"  # green: not a colour of the diverging red–white–blue scale (white vanished, black read as data)
MASK_COLOURS = [[0.0, "#a6a6a6"], [0.5, "#a6a6a6"], [0.5, "#2c7bb6"], [1.0, "#2c7bb6"]]  # blocked, may attend
_SECTION = re.compile(r"^<!--\s*section:\s*([\w-]+)\s*-->[ \t]*$", re.M)


# ---------------------------------------------------------------------------------------- prose
def sections(page: str, lang: str = "en") -> dict[str, str]:
    """``assets/<page>.md`` (``assets/<lang>/<page>.md`` for another language) split at ``<!-- section: name -->``
    lines: name → markdown."""
    path = ASSETS / f"{page}.md" if lang == "en" else ASSETS / lang / f"{page}.md"
    return _sections_of(path, path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _sections_of(path: Path, mtime_ns: int) -> dict[str, str]:
    """The file read and split once per version (``mtime_ns``), not on every run; callers only read the dict."""
    parts = _SECTION.split(path.read_text(encoding="utf-8"))
    return {name: body.strip() for name, body in zip(parts[1::2], parts[2::2])}


def prose(page: str, name: str, target=st) -> None:
    """Show one prose section (a visible note if it is missing, never a crash)."""
    text = sections(page, language()).get(name)
    if text is None:
        target.caption(_("(missing text: `{page}.md` section `{name}`)").format(page=page, name=name))
    else:
        target.markdown(text)


# ---------------------------------------------------------------------------------------- helpers
def config(settings: Settings, n_heads: int | None = None, dropout: float = 0.0) -> EncoderConfig:
    """The toy encoder's config for these settings (the explorer's model)."""
    return EncoderConfig(d_model=settings.d_model, n_heads=n_heads or settings.n_heads, d_ff=4 * settings.d_model,
                         dropout=dropout, seed=settings.seed)


def labels(tokens) -> list[str]:
    """Escaped tick labels ``"0: The"`` for figures."""
    return [figures.label(t, i) for i, t in enumerate(tokens)]


def plain_labels(tokens) -> list[str]:
    """Unescaped unique labels ``"0: The"`` for tables (Streamlit never renders them as HTML)."""
    return [f"{i}: {t}" for i, t in enumerate(tokens)]


def lab_sentences(settings: Settings) -> tuple[tuple[str, ...], bool]:
    """The first two sentences (a batch for padding), or the one sentence plus an example; and whether one was added."""
    if len(settings.sentences) >= 2:
        return settings.sentences[:2], False
    return (settings.sentences[0], EXAMPLE_SENTENCE), True


def fmt(x: float, digits: int = 4) -> str:
    """A number as text; NaN and ±inf spelled out (for tables, never figures)."""
    if np.isnan(x):
        return "NaN"
    if np.isinf(x):
        return "−inf" if x < 0 else "+inf"
    return f"{x:.{digits}f}" if abs(x) < 1e5 else f"{x:.0e}"


def text_table(matrix: np.ndarray, rows: list[str], cols: list[str], digits: int = 4) -> pd.DataFrame:
    """A matrix as a DataFrame of strings (so NaN shows as the word "NaN")."""
    return pd.DataFrame([[fmt(float(v), digits) for v in row] for row in np.atleast_2d(matrix)], index=rows, columns=cols)


# ---------------------------------------------------------------------------------------- figures
def _titled(fig):
    """Room for the title above the top axis (``figures.heatmap`` puts the key ticks and their title
    on top, where they would overlap the figure title), and the colour bar under the plot: lesson
    panels stand two or three across, too narrow to give a vertical bar its width."""
    fig.update_traces(selector=dict(type="heatmap"), colorbar=dict(orientation="h", y=-0.04, yanchor="top",
                                                                   thickness=8, len=1.0, title=None))
    fig.update_layout(margin_b=40)
    if fig.layout.title.text:
        fig.update_layout(title=dict(yref="container", y=0.99, yanchor="top", x=0.01, xanchor="left"),
                          margin_t=110, height=fig.layout.height + 70)
    return fig


def mask_figure(mask: np.ndarray, rows: list[str], cols: list[str], title: str, **meta) -> "figures.go.Figure":
    """A boolean mask as a two-colour matrix: 1 = may attend (blue), 0 = blocked (grey)."""
    mask = np.asarray(mask, bool)
    fig = figures.heatmap(mask.astype(np.float32), rows, cols, zrange=(0.0, 1.0), colorscale=MASK_COLOURS,
                          title=title, meta={"kind": "mask", **meta}, width_px=PANEL_WIDTH_PX)
    words = np.where(mask, _("may attend"), _("blocked"))
    where = np.dstack(np.broadcast_arrays(np.asarray(rows, object)[:, None], np.asarray(cols, object)[None, :]))
    fig.update_traces(selector=dict(type="heatmap"), text=words.tolist(), customdata=where,
                      texttemplate="%{z:.0f}" if max(mask.shape) <= 16 else None,
                      hovertemplate=_("query") + " %{customdata[0]}<br>" + _("key") + " %{customdata[1]}<br>%{text}"
                                    "<extra></extra>",
                      colorbar=dict(tickvals=[0.25, 0.75], ticktext=[_("0 = blocked"), _("1 = may attend")]))
    return _titled(fig)


def pattern_figure(matrix: np.ndarray, rows: list[str], cols: list[str], title: str, *,
                   visible: np.ndarray | None = None, empty_rows: np.ndarray | None = None, signed: bool = False,
                   zrange: tuple[float, float] | None = None, height: int | None = None, show_scale: bool = True,
                   empty_note: str | None = None, **meta) -> "figures.go.Figure":
    """A ``[query, key]`` matrix; blocked (and non-finite) cells blank; rows with no visible key marked ⊘
    (``empty_rows``, by default the rows of ``visible`` with no True)."""
    matrix = np.asarray(matrix, np.float32)
    empty = empty_rows if empty_rows is not None or visible is None else ~np.asarray(visible, bool).any(-1)
    shown = np.isfinite(matrix) if visible is None else np.isfinite(matrix) & visible
    if zrange is None:
        values = matrix[shown]
        bound = float(np.abs(values).max()) if values.size else 1.0
        zrange = (-bound or -1.0, bound or 1.0) if signed else (0.0, float(values.max()) if values.size and values.max() > 0 else 1.0)
    return _titled(figures.heatmap(matrix, rows, cols, visible=visible, empty_rows=empty, zrange=zrange,
                                   colorscale=figures.DIVERGING if signed else figures.SEQUENTIAL, title=title,
                                   height=height, show_scale=show_scale,
                                   empty_note=empty_note or _("no visible key: weights 0"),
                                   meta={"kind": "pattern", **meta}, width_px=PANEL_WIDTH_PX))


def feature_figure(matrix: np.ndarray, rows: list[str], title: str, *, n_heads: int | None = None,
                   zrange: tuple[float, float] | None = None, height: int | None = None,
                   show_scale: bool = True, **meta) -> "figures.go.Figure":
    """A ``[pos, features]`` matrix (signed colours); with ``n_heads``, green lines mark each head's d_k columns
    (white ones vanished beside near-zero columns, which the diverging scale draws white; black ones looked like data)."""
    matrix = np.asarray(matrix, np.float32)
    n_cols = matrix.shape[1]
    if zrange is None:
        bound = float(np.abs(matrix[np.isfinite(matrix)]).max(initial=0.0)) or 1.0
        zrange = (-bound, bound)
    fig = figures.heatmap(matrix, rows, [f"d{j}" for j in range(n_cols)], zrange=zrange, colorscale=figures.DIVERGING,
                          title=title, row_title=_("position"), col_title=_("dimension"), height=height,
                          show_scale=show_scale, meta={"kind": "features", **meta})
    fig.update_traces(selector=dict(type="heatmap"), xgap=0)
    if n_heads and n_heads > 1:
        d_k = n_cols // n_heads
        # one green line between heads: the shapes add_vline makes, set at once (add_vline per line re-checks the
        # subplots each time: 6 % of a class's server CPU, py-spy)
        fig.update_layout(shapes=[dict(type="line", xref="x", yref="y domain", x0=h * d_k - 0.5, x1=h * d_k - 0.5,
                                       y0=0, y1=1, line=dict(color=HEAD_LINE, width=2)) for h in range(1, n_heads)])
        step = 1 if n_heads <= 8 else 2
        fig.update_xaxes(tickvals=[h * d_k + (d_k - 1) / 2 for h in range(0, n_heads, step)],
                         ticktext=[f"h{h}" for h in range(0, n_heads, step)], tickangle=0,
                         title=dict(text=_("{h} heads × d_k={d_k}").format(h=n_heads, d_k=d_k)))  # fits a third of the page
    else:
        step = max(1, n_cols // 16)
        fig.update_xaxes(tickvals=list(range(0, n_cols, step)), ticktext=[f"d{j}" for j in range(0, n_cols, step)])
    return _titled(fig)


def small_multiple(fig, first: bool):
    """A compact figure for a row of heads: no axis titles; row labels only on the first of the row."""
    fig.update_xaxes(title=None)
    fig.update_yaxes(title=None, showticklabels=first)
    fig.update_layout(margin=dict(l=4, r=4))
    return fig


def chart(fig, key: str, target=st, name: str = "figure") -> None:
    """``st.plotly_chart`` with the slide-sized download button."""
    target.plotly_chart(fig, key=key, config=figures.chart_config(name))


# ---------------------------------------------------------------------------------------- masks lab compute
@memo("lesson")
def lab_trace(settings: Settings) -> Trace:
    """The toy encoder on the lab's two sentences, captured with no mask (raw scores, q, k, v, embeddings)."""
    pair, _added = lab_sentences(settings)
    return run_toy(list(pair), config(settings), tokenizer=settings.tokenizer, causal=False, padding=False,
                   max_tokens=LESSON_TOKENS)


def _lab_inputs(settings: Settings, batch: int, head: int):
    trace = lab_trace(settings)
    n = len(trace.tokens[batch])
    scores = torch.from_numpy(trace.stage("scores")[batch, head].copy())  # [query_pos, key_pos]
    keys = masks.padding_mask(trace.lengths, n)[batch, 0, 0]  # [key_pos], True = real token
    return trace, n, scores, keys


@memo("lesson")
def mask_gallery(settings: Settings, batch: int, head: int) -> dict:
    """Causal, padding and both: ``{kind: {"mask", "masked", "weights"}}`` for one sentence and head."""
    trace, n, scores, keys = _lab_inputs(settings, batch, head)
    causal = masks.causal_mask(n)
    padding = keys[None, :].expand(n, n)
    out = {}
    for kind, mask in (("causal", causal), ("padding", padding), ("both", masks.combine(causal, padding))):
        masked, weights = lessons.masked_stages(scores, mask)
        out[kind] = {"mask": mask.numpy().copy(), "masked": masked.numpy(), "weights": weights.numpy()}
    return out


def _max_abs(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max()) if a.size else 0.0


def conventions(settings: Settings, batch: int, head: int, empty_row: int) -> dict:
    """Seed 000 vs seed 001 vs ours on causal + padding with query row ``empty_row`` fully blocked; float16 too
    (its texts in the session's language: the language is part of the cache key)."""
    return _conventions(settings, batch, head, empty_row, language())


@memo("lesson")
def _conventions(settings: Settings, batch: int, head: int, empty_row: int, lang: str) -> dict:
    from transformer_core.text.i18n import use_language

    with use_language(lang):
        return _conventions_in(settings, batch, head, empty_row)


def _conventions_in(settings: Settings, batch: int, head: int, empty_row: int) -> dict:
    trace, n, scores, keys = _lab_inputs(settings, batch, head)
    mask = masks.combine(masks.causal_mask(n), keys[None, :].expand(n, n)).clone()
    mask[empty_row] = False
    recipes = lessons.seed_conventions(scores, mask)
    ordinary = mask.any(-1).numpy()
    weights = {name: w.numpy() for name, (_m, w) in recipes.items()}
    masked = {name: m.numpy() for name, (m, _w) in recipes.items()}
    diffs = {pair: _max_abs(weights[pair[0]][ordinary], weights[pair[1]][ordinary])
             for pair in (("seed 000", "seed 001"), ("seed 000", "ours"), ("seed 001", "ours"))}
    # float16: fill values tried live on the same scores
    half = {}
    reference = weights["ours"][ordinary]
    for label_, fill in (("-1e9", lessons.SEED_001_FILL), ("float('-inf')", lessons.NEG_INF),
                         ("torch.finfo(torch.float16).min", float(torch.finfo(torch.float16).min))):
        m16, error = lessons.fill_in_dtype(scores, mask, fill, torch.float16)
        if error is None:
            w16 = masked_softmax(m16, mask).numpy()
            half[label_] = _("ok, {dtype}; the weights differ from float32 by at most {diff} (float16 rounding)").format(
                dtype=str(m16.dtype).removeprefix("torch."), diff=f"{_max_abs(w16[ordinary], reference):.1e}")
        else:
            half[label_] = error
    module_ok, module_text = lessons.half_module_runs(settings.d_model, settings.n_heads, n, seed=settings.seed)
    return {"mask": mask.numpy(), "ordinary": ordinary, "weights": weights, "masked": masked, "diffs": diffs,
            "half": half, "facts": lessons.float16_facts(), "module": (module_ok, module_text)}


@memo("lesson")
def prefix(settings: Settings, batch: int, head: int, n_new: int) -> dict:
    """The last ``n_new`` real tokens as new queries against the whole sentence (a cached prefix)."""
    trace = lab_trace(settings)
    length = trace.lengths[batch]
    qkv = [torch.from_numpy(trace.stage(s)[batch:batch + 1, head:head + 1, :length].copy()) for s in ("q", "k", "v")]
    res = lessons.cached_prefix(*qkv, n_new)
    square = bool(torch.equal(lessons.torch_is_causal_mask(length, length), masks.causal_mask(length)))
    return {"masks": {k: v.numpy() for k, v in res["masks"].items()}, "full": masks.causal_mask(length).numpy(),
            "weights": {k: v[0, 0].numpy() for k, v in res["weights"].items()},
            "reference": res["reference"][0, 0].numpy(), "max_diff": res["max_diff"], "square_equal": square}


@memo("lesson")
def keys_vs_queries(settings: Settings, batch: int, head: int) -> dict:
    """Padding hidden on key columns, on query rows, or both: masks, weights (ours, seed 000) and measures."""
    trace, n, scores, keys = _lab_inputs(settings, batch, head)
    real = keys.numpy()
    variants = {"keys": keys[None, :].expand(n, n), "queries": keys[:, None].expand(n, n)}
    variants["keys and queries"] = variants["keys"] & variants["queries"]
    out, reference = {}, None
    for name, mask in variants.items():
        recipes = lessons.seed_conventions(scores, mask)
        ours, seed000 = recipes["ours"][1].numpy(), recipes["seed 000"][1].numpy()
        reference = ours if reference is None else reference
        out[name] = {
            "mask": mask.numpy().copy(), "weights": ours, "seed000": seed000,
            "pad_weight": float(ours[real][:, ~real].sum(-1).max()) if (~real).any() and real.any() else 0.0,
            "empty_rows": int((~mask.any(-1)).sum()),
            "real_rows_diff": _max_abs(ours[real], reference[real]),
            "nan_rows": int(np.isnan(seed000).any(-1).sum()),
        }
    return out


@memo("lesson")
def dropout_lab(settings: Settings, batch: int, head: int, training: bool, p: float, dropout_seed: int) -> dict:
    """Weights before and after attention dropout for the sidebar's mask; row sums of both."""
    trace = lab_trace(settings)
    x = torch.from_numpy(trace.stages["embeddings"].copy())  # [batch, pos, d_model]
    mask = build_mask(TokenBatch(trace.tokens, trace.lengths, trace.truncated), settings.causal, settings.padding)
    stages = lessons.attention_dropout(x, mask, config(settings, dropout=p), training=training,
                                       dropout_seed=dropout_seed)
    before = stages["weights"][batch, head].numpy()
    after = stages["dropped_weights"][batch, head].numpy()
    visible = np.ones(before.shape, bool) if mask is None else mask[batch, 0].numpy().copy()  # [query, key]
    return {"before": before, "after": after, "visible": visible,
            "sum_before": before.sum(-1), "sum_after": after.sum(-1),
            "zeroed": int(((after == 0) & (before > 0)).sum()), "kept": int((before > 0).sum())}


# ---------------------------------------------------------------------------------------- pipeline compute
@memo("lesson")
def walkthrough(settings: Settings, batch: int, n_heads: int, causal: bool) -> dict:
    """One sentence through the toy encoder's first layer, every step (see ``lessons.encoder_walkthrough``)."""
    tb = batch_tokens([settings.sentences[batch]], settings.tokenizer, LESSON_TOKENS)
    tokens = tb.tokens[0]
    steps = lessons.encoder_walkthrough(tokens, config(settings, n_heads=n_heads), causal)
    return {"tokens": tokens, "truncated": tb.truncated[0], "steps": steps,
            "conv_diff": _max_abs(steps["ff_linear"], steps["ff_conv1d"]),
            "dropout_diff": _max_abs(steps["dropped"], steps["projected"]),
            "relu_zero": float((steps["ff_hidden"] == 0).mean())}


@memo("lesson")
def comparison(settings: Settings, batch: int, a: tuple[int, bool], b: tuple[int, bool]) -> dict:
    """Two settings ``(n_heads, causal)`` on one sentence: B − A for the attention output and the
    head-averaged weights (cells blocked under both settings are hidden)."""
    sa, sb = (walkthrough(settings, batch, *s)["steps"] for s in (a, b))
    return {"output_diff": sb["attn_output"][0] - sa["attn_output"][0],
            "mean_weights_diff": sb["weights"][0].mean(0) - sa["weights"][0].mean(0),
            "visible": sa["mask"] | sb["mask"],
            "max_output_diff": _max_abs(sb["attn_output"], sa["attn_output"])}


def shape_text(array: np.ndarray, names: tuple[str, ...]) -> str:
    """``[batch=1, pos=6, d_model=64]``."""
    return "[" + ", ".join(f"{n}={s}" for n, s in zip(names, array.shape)) + "]"


def step(page: str, number: int, title: str, section: str, shape: str, tutorial: str | None = None) -> None:
    """A pipeline step's heading, its shape, its one line of prose and (``tutorial``: a stage of
    :mod:`transformer_core.analysis.tutorial_lines`) the seed line that computes it."""
    st.subheader(f"{number} · {title}")
    st.markdown(f"`{shape}`")
    prose(page, section)
    if tutorial:
        from . import tutorial_lines

        tutorial_lines.show(tutorial)


def tutorial(stage: str) -> None:
    """The seed line that computes ``stage`` (:mod:`ui.tutorial_lines`)."""
    from . import tutorial_lines

    tutorial_lines.show(stage)


@memo("lesson")
def parameter_counts(d_model: int, head_counts: tuple[int, ...]) -> dict[int, int]:
    """Parameters of ``MultiHeadAttention(d_model, h)`` for every ``h``, counted on built modules."""
    return lessons.attention_parameter_counts(d_model, list(head_counts))
