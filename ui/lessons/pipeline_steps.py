"""The pipeline page's six steps, one lesson tab at a time, as one part of the page (:mod:`ui.shell.fragments`): a tab click
or a control inside a tab reruns only this part, not the page's intro, controls and parameter table above it.

Each tab is one function of ``w``, the walkthrough of the page's sentence (:func:`ui.lessons.compute.walkthrough`,
cached) with its settings, labels and sizes.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import streamlit as st

from transformer_core.figures import stage as figures
from transformer_core.figures.heads import tiled_heads

from ..parts import explain_panel, tutorial_lines
from ..parts.numbers import number
from ..shell.controls import head_choices
from ..shell.i18n import N_, _, ngettext
from ..shell.language_widgets import tabs as translated_tabs
from ..shell.url import bind_url
from . import lesson_figures as L
from .compute import comparison, walkthrough

PAGE = "pipeline"
BSD = ("batch", "pos", "d_model")


def shape_text(array: np.ndarray, names: tuple[str, ...]) -> str:
    """``[batch=1, pos=6, d_model=64]``."""
    return "[" + ", ".join(f"{n}={s}" for n, s in zip(names, array.shape)) + "]"


def step(page: str, number: int, title: str, section: str, shape: str, tutorial: str | None = None) -> None:
    """A pipeline step's heading, its shape, its one line of prose and (``tutorial``: a stage of
    :mod:`transformer_core.analysis.tutorial_lines`) the seed line that computes it."""
    st.subheader(f"{number} · {title}")
    st.markdown(f"`{shape}`")
    L.prose(page, section)
    if tutorial:
        tutorial_lines.show(tutorial)


def tutorial(stage: str) -> None:
    """The seed line that computes ``stage`` (:mod:`ui.parts.tutorial_lines`)."""
    tutorial_lines.show(stage)


def _heads_row(w, stage: str, title: str) -> None:
    """Every head of a ``[1, head, rows, cols]`` step tiled in ONE figure, one colour range for all heads."""
    s = w.s
    data4 = s[stage][0]
    zrange = figures.value_range(data4[:, s["mask"]] if stage == "weights" else data4, stage)
    fig = tiled_heads(data4, w.tokens, stage, visible=s["mask"] if stage == "weights" else None, zrange=zrange,
                      n_cols=min(w.h, 4), tile_px=150, meta={"step": stage})
    L.chart(fig, f"pipeline_{stage}_heads", st, f"{stage}_heads")
    st.caption(_("{title}: all {h} heads, one colour range: {low} … {high}.").format(
        title=title, h=w.h, low=number(zrange[0], ".3g"), high=number(zrange[1], ".3g")))


def _feature(w, name: str, title: str, target, **kwargs) -> None:
    """Step tensor ``name`` (``[1, pos, features]``) as a feature figure in ``target``."""
    L.chart(L.feature_figure(w.s[name][0], w.rows, title, step=name, **kwargs), f"pipeline_{name}", target, name)


def _projections(w) -> None:
    step(PAGE, 1, _("Input x"), "step-x", shape_text(w.s["x"], BSD))
    _feature(w, "x", "x", st.columns(2)[0])
    step(PAGE, 2, _("Three projections: x W_Q, x W_K, x W_V"), "step-proj",
           shape_text(w.s["xW_Q"], BSD) + _(" each"), tutorial="projections")
    for col, name in zip(st.columns(3), ("xW_Q", "xW_K", "xW_V")):
        _feature(w, name, name.replace("xW_", "x W_"), col, n_heads=w.h)


def _split(w) -> None:
    n, h = len(w.tokens), w.h
    step(PAGE, 3, _("Split into {h} heads: view, then transpose").format(h=h), "step-split",
           f"[batch=1, pos={n}, d_model={w.d_model}] → view [batch=1, pos={n}, head={h}, d_k={w.d_k}] → "
           f"transpose(1, 2) → {shape_text(w.s['q'], ('batch', 'head', 'pos', 'd_k'))}", tutorial="split")
    _heads_row(w, "q", "Q")
    if st.toggle(_("Show K and V split too"), key="pipeline_show_kv"):
        _heads_row(w, "k", "K")
        _heads_row(w, "v", "V")


def _attention(w) -> None:
    step(PAGE, 4, _("Attention in every head at once"), "step-attention",
           shape_text(w.s["weights"], ("batch", "head", "query_pos", "key_pos")) + f" {_('weights')}, "
           + shape_text(w.s["context"], ("batch", "head", "pos", "d_k")) + f" {_('context')}", tutorial="scores")
    tutorial("masked_scores")
    tutorial("weights")
    _heads_row(w, "weights", _("weights"))
    tutorial("context")
    _heads_row(w, "context", _("context"))


def _concat(w) -> None:
    s = w.s
    step(PAGE, 5, _("Concatenate the heads"), "step-concat", shape_text(s["concat"], BSD), tutorial="concat")
    _feature(w, "concat", "concat", st.columns(2)[0], n_heads=w.h)
    step(PAGE, 6, _("Output projection W_O"), "step-wo", shape_text(s["projected"], BSD), tutorial="w_o")
    _feature(w, "projected", "concat W_O", st.columns(2)[0])
    step(PAGE, 7, _("Dropout, then the residual x + …"), "step-dropout", shape_text(s["attn_residual"], BSD),
           tutorial="residual")
    st.markdown(_("max |dropout(W_O …) − W_O …| = `{diff}` (the page runs the model in eval mode)").format(
        diff=number(w.data["dropout_diff"], ".3g")))
    _feature(w, "attn_residual", "x + dropout(concat W_O)", st.columns(2)[0])
    step(PAGE, 8, _("LayerNorm: the attention block's output"), "step-norm1", shape_text(s["attn_output"], BSD),
           tutorial="norm1")
    _feature(w, "attn_output", "LayerNorm(x + …)", st.columns(2)[0])
    explain_panel.show_position(s, w.tokens)


def _feed_forward(w) -> None:
    s = w.s
    step(PAGE, 9, _("Feed-forward: W_1 and ReLU"), "step-ffn1",
           shape_text(s["ff_hidden"], ("batch", "pos", "d_ff")), tutorial="ffn1")
    st.markdown(_("ReLU set **{share}** of the hidden numbers to 0.").format(
        share=number(w.data["relu_zero"], ".0%")))
    _feature(w, "ff_hidden", "ReLU(x W_1 + b_1)", st.container())
    step(PAGE, 10, _("Feed-forward: W_2 — Linear or Conv1d(kernel_size=1)"), "step-ffn2",
           shape_text(s["ff_linear"], BSD), tutorial="ffn2")
    cols = st.columns(2)
    _feature(w, "ff_linear", _("Linear W_2 (ours)"), cols[0])
    _feature(w, "ff_conv1d", _("Conv1d pair, same weights (seed 001)"), cols[1])
    st.markdown(_("max |Linear − Conv1d| = `{diff}` over all {n} numbers.").format(
        diff=number(w.data["conv_diff"], ".3g"), n=f"{s['ff_linear'].size:,}"))
    step(PAGE, 11, _("Residual + LayerNorm: the layer's output"), "step-norm2", shape_text(s["ff_output"], BSD),
           tutorial="norm2")
    _feature(w, "ff_output", "LayerNorm(y + FFN(y))", st.columns(2)[0])


def _compare(w) -> None:
    """Two settings of n_heads and the causal mask, one sentence: head 0's weights and the output's difference."""
    st.header(_("Side by side: two settings, one sentence"))
    L.prose(PAGE, "compare")
    choices = head_choices(w.d_model)
    defaults = {"a": (1, False), "b": (max(c for c in choices if c <= 8), False)}
    chosen, runs = {}, {}
    cols = st.columns(2)
    for side, col in zip(("a", "b"), cols):
        heads_key, causal_key = f"pipeline_{side}_heads", f"pipeline_{side}_causal"
        bind_url(heads_key, f"{side}_heads", choices, defaults[side][0])
        bind_url(causal_key, f"{side}_causal", (False, True), defaults[side][1],
                       to_text=lambda v: "1" if v else "0")
        # no form: a change is drawn at once (the toy model is cheap), so the title never names a setting the
        # figure below it does not show yet
        with col.container(border=True):
            st.markdown(_("**Setting {side}**").format(side=side.upper()))
            st.selectbox("n_heads", choices, key=heads_key)
            st.toggle(_("Causal mask"), key=causal_key)
        chosen[side] = (st.session_state[heads_key], st.session_state[causal_key])
        runs[side] = walkthrough(w.settings, w.batch, *chosen[side])["steps"]
    # A and B share one colour range, so equal colours mean equal weights
    shared = figures.value_range(np.concatenate([
        runs[x]["weights"][0, 0][figures.informative_cells(runs[x]["mask"], "weights")] for x in "ab"]), "weights")
    for side, col in zip(("a", "b"), cols):
        n_heads, causal = chosen[side]
        title = _("{side}: head 0 weights ({heads}, causal {state})").format(
            side=side.upper(), heads=ngettext("{n} head", "{n} heads", n_heads).format(n=n_heads),
            state=_("on") if causal else _("off"))
        L.chart(L.pattern_figure(runs[side]["weights"][0, 0], w.rows, w.rows, title, visible=runs[side]["mask"],
                                 zrange=shared, side=side), f"pipeline_cmp_{side}", col, f"weights_{side}")
    st.caption(_("A and B share one colour range: 0 … {high}.").format(high=number(shared[1], ".3g")))
    cmp = comparison(w.settings, w.batch, chosen["a"], chosen["b"])
    cols = st.columns(2)
    L.chart(L.feature_figure(cmp["output_diff"], w.rows, _("attention output, B − A"), step="output_diff"),
            "pipeline_cmp_output_diff", cols[0], "output_diff")
    L.chart(L.pattern_figure(cmp["mean_weights_diff"], w.rows, w.rows, _("head-averaged weights, B − A"),
                             visible=cmp["visible"], signed=True, step="mean_weights_diff"),
            "pipeline_cmp_weights_diff", cols[1], "mean_weights_diff")
    st.markdown(_("max |attention output B − A| = `{diff}`").format(diff=number(cmp["max_output_diff"], ".3g")))
    L.prose(PAGE, "compare-after")


STEPS = ((N_("Projections"), _projections), (N_("Split heads"), _split), (N_("Attention"), _attention),
         (N_("Concat and W_O"), _concat), (N_("Feed-forward"), _feed_forward), (N_("A vs B"), _compare))


def show(settings, batch: int) -> None:
    """The six tabs for sentence ``batch`` under ``settings``; only the open one runs and is drawn, its English
    name in the URL as ``?step=…`` (translated labels; the open tab survives a language switch: ui/shell/language_widgets.tabs)."""
    h, d_model = settings.n_heads, settings.d_model
    data = walkthrough(settings, batch, h, settings.causal)
    w = SimpleNamespace(settings=settings, batch=batch, data=data, s=data["steps"], tokens=data["tokens"],
                        rows=L.labels(data["tokens"]), h=h, d_model=d_model, d_k=d_model // h)
    tabs = translated_tabs([name for name, _step in STEPS], key="step", url="step")
    for tab, (_name, step) in zip(tabs, STEPS):
        if tab.open:
            with tab:
                step(w)
