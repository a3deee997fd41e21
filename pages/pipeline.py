"""Multi-head pipeline: one sentence followed step by step through multi-head attention and the
feed-forward network of the toy encoder's first layer, then two settings side by side."""
from ui import nav  # first, before the heavy imports below

nav.enter_through_app()  # a fresh server's first visitor by deep link: straight to app.py's menu

import numpy as np
import pandas as pd
import streamlit as st

from transformer_core.figures import stage as figures
from transformer_core.figures.heads import tiled_heads
from ui import lesson_panels as L
from ui import compute, explain_panel, state, views
from ui.i18n import N_, _, ngettext, tabs as translated_tabs
from ui.numbers import number

PAGE = "pipeline"
settings = state.current()
st.title(_("Multi-head pipeline"))
settings = compute.usable(settings)  # WordPiece unavailable: word-level tokens, with a note
L.prose(PAGE, "intro")
if not settings.sentences:
    st.info(_("Type at least one sentence in the sidebar to begin."), icon=":material/edit:")
    st.stop()
batch = 0
if len(settings.sentences) > 1:
    batch = views.sentence_picker(_("Sentence to follow"), list(settings.sentences), key="pipeline_batch")
h, d_model = settings.n_heads, settings.d_model
data = L.walkthrough(settings, batch, h, settings.causal)
s, tokens = data["steps"], data["tokens"]
rows, d_k, per_row = L.labels(tokens), d_model // h, min(h, 4)
if data["truncated"]:
    st.info(_("The sentence is cut to {n} tokens on this page.").format(n=L.LESSON_TOKENS), icon=":material/content_cut:")
st.markdown(_("**{n} tokens** · d_model = **{d_model}** · n_heads = **{h}** → d_k = {d_model} / {h} = **{d_k}** · "
              "causal mask **{state}** (sidebar)").format(n=len(tokens), d_model=d_model, h=h, d_k=d_k,
                                                          state=_("on") if settings.causal else _("off")))

counts = L.parameter_counts(d_model, tuple(state.head_choices(d_model)))
st.info(_("MultiHeadAttention(d_model={d_model}, n_heads={h}) has **{n} parameters** (counted on the module).")
        .format(d_model=d_model, h=h, n=f"{counts[h]:,}"), icon=":material/calculate:")
with st.expander(_("Parameters for every head count (the same: heads only split d_model)")):
    L.prose(PAGE, "params")
    st.dataframe(pd.DataFrame({"n_heads": list(counts), "d_k": [d_model // c for c in counts],
                               _("parameters"): [f"{v:,}" for v in counts.values()]}), hide_index=True,
                 key="pipeline_params_table")


def heads_row(stage: str, title: str) -> None:
    """Every head of a ``[1, head, rows, cols]`` step tiled in ONE figure, one colour range for all heads."""
    data4 = s[stage][0]
    zrange = figures.value_range(data4[:, s["mask"]] if stage == "weights" else data4, stage)
    fig = tiled_heads(data4, tokens, stage, visible=s["mask"] if stage == "weights" else None, zrange=zrange,
                      n_cols=min(h, 4), tile_px=150, meta={"step": stage})
    L.chart(fig, f"pipeline_{stage}_heads", st, f"{stage}_heads")
    st.caption(_("{title}: all {h} heads, one colour range: {low} … {high}.").format(
        title=title, h=h, low=number(zrange[0], ".3g"), high=number(zrange[1], ".3g")))


BSD = ("batch", "pos", "d_model")
# One tab at a time (lazy: only the open tab runs and is drawn), its name in the URL as ?step=…
# (translated labels; the open tab survives a language switch and its English name is the URL's: ui/i18n.tabs)
tabs = translated_tabs([N_("Projections"), N_("Split heads"), N_("Attention"), N_("Concat and W_O"),
                        N_("Feed-forward"), N_("A vs B")], key="step", url="step")
with tabs[0]:
    if tabs[0].open:
        L.step(PAGE, 1, _("Input x"), "step-x", L.shape_text(s["x"], BSD))
        L.chart(L.feature_figure(s["x"][0], rows, "x", step="x"), "pipeline_x", st.columns(2)[0], "x")
        L.step(PAGE, 2, _("Three projections: x W_Q, x W_K, x W_V"), "step-proj",
               L.shape_text(s["xW_Q"], BSD) + _(" each"), tutorial="projections")
        for col, name in zip(st.columns(3), ("xW_Q", "xW_K", "xW_V")):
            L.chart(L.feature_figure(s[name][0], rows, name.replace("xW_", "x W_"), n_heads=h, step=name),
                    f"pipeline_{name}", col, name)
with tabs[1]:
    if tabs[1].open:
        L.step(PAGE, 3, _("Split into {h} heads: view, then transpose").format(h=h), "step-split",
               f"[batch=1, pos={len(tokens)}, d_model={d_model}] → view [batch=1, pos={len(tokens)}, head={h}, "
               f"d_k={d_k}] → transpose(1, 2) → {L.shape_text(s['q'], ('batch', 'head', 'pos', 'd_k'))}",
               tutorial="split")
        heads_row("q", "Q")
        if st.toggle(_("Show K and V split too"), key="pipeline_show_kv"):
            heads_row("k", "K")
            heads_row("v", "V")
with tabs[2]:
    if tabs[2].open:
        L.step(PAGE, 4, _("Attention in every head at once"), "step-attention",
               L.shape_text(s["weights"], ("batch", "head", "query_pos", "key_pos")) + f" {_('weights')}, "
               + L.shape_text(s["context"], ("batch", "head", "pos", "d_k")) + f" {_('context')}", tutorial="scores")
        L.tutorial("masked_scores")
        L.tutorial("weights")
        heads_row("weights", _("weights"))
        L.tutorial("context")
        heads_row("context", _("context"))
with tabs[3]:
    if tabs[3].open:
        L.step(PAGE, 5, _("Concatenate the heads"), "step-concat", L.shape_text(s["concat"], BSD), tutorial="concat")
        L.chart(L.feature_figure(s["concat"][0], rows, "concat", n_heads=h, step="concat"), "pipeline_concat",
                st.columns(2)[0], "concat")
        L.step(PAGE, 6, _("Output projection W_O"), "step-wo", L.shape_text(s["projected"], BSD), tutorial="w_o")
        L.chart(L.feature_figure(s["projected"][0], rows, "concat W_O", step="projected"), "pipeline_projected",
                st.columns(2)[0], "projected")
        L.step(PAGE, 7, _("Dropout, then the residual x + …"), "step-dropout", L.shape_text(s["attn_residual"], BSD),
               tutorial="residual")
        st.markdown(_("max |dropout(W_O …) − W_O …| = `{diff}` (the page runs the model in eval mode)").format(
            diff=number(data["dropout_diff"], ".3g")))
        L.chart(L.feature_figure(s["attn_residual"][0], rows, "x + dropout(concat W_O)", step="attn_residual"),
                "pipeline_attn_residual", st.columns(2)[0], "attn_residual")
        L.step(PAGE, 8, _("LayerNorm: the attention block's output"), "step-norm1", L.shape_text(s["attn_output"], BSD),
               tutorial="norm1")
        L.chart(L.feature_figure(s["attn_output"][0], rows, "LayerNorm(x + …)", step="attn_output"),
                "pipeline_attn_output", st.columns(2)[0], "attn_output")
        explain_panel.show_position(s, tokens)
with tabs[4]:
    if tabs[4].open:
        L.step(PAGE, 9, _("Feed-forward: W_1 and ReLU"), "step-ffn1",
               L.shape_text(s["ff_hidden"], ("batch", "pos", "d_ff")), tutorial="ffn1")
        st.markdown(_("ReLU set **{share}** of the hidden numbers to 0.").format(share=number(data["relu_zero"], ".0%")))
        L.chart(L.feature_figure(s["ff_hidden"][0], rows, "ReLU(x W_1 + b_1)", step="ff_hidden"),
                "pipeline_ff_hidden", st.container(), "ff_hidden")
        L.step(PAGE, 10, _("Feed-forward: W_2 — Linear or Conv1d(kernel_size=1)"), "step-ffn2",
               L.shape_text(s["ff_linear"], BSD), tutorial="ffn2")
        cols = st.columns(2)
        L.chart(L.feature_figure(s["ff_linear"][0], rows, _("Linear W_2 (ours)"), step="ff_linear"),
                "pipeline_ff_linear", cols[0], "ff_linear")
        L.chart(L.feature_figure(s["ff_conv1d"][0], rows, _("Conv1d pair, same weights (seed 001)"),
                                  step="ff_conv1d"),
                "pipeline_ff_conv1d", cols[1], "ff_conv1d")
        st.markdown(_("max |Linear − Conv1d| = `{diff}` over all {n} numbers.").format(
            diff=number(data["conv_diff"], ".3g"), n=f"{s['ff_linear'].size:,}"))
        L.step(PAGE, 11, _("Residual + LayerNorm: the layer's output"), "step-norm2", L.shape_text(s["ff_output"], BSD),
               tutorial="norm2")
        L.chart(L.feature_figure(s["ff_output"][0], rows, "LayerNorm(y + FFN(y))", step="ff_output"),
                "pipeline_ff_output", st.columns(2)[0], "ff_output")

# side by side ------------------------------------------------------------------------------------
with tabs[5]:
    if tabs[5].open:
        st.header(_("Side by side: two settings, one sentence"))
        L.prose(PAGE, "compare")
        choices = state.head_choices(d_model)
        defaults = {"a": (1, False), "b": (max(c for c in choices if c <= 8), False)}
        chosen, runs = {}, {}
        cols = st.columns(2)
        for side, col in zip(("a", "b"), cols):
            heads_key, causal_key = f"pipeline_{side}_heads", f"pipeline_{side}_causal"
            state.bind_url(heads_key, f"{side}_heads", choices, defaults[side][0])
            state.bind_url(causal_key, f"{side}_causal", (False, True), defaults[side][1],
                           to_text=lambda v: "1" if v else "0")
            with col.form(f"pipeline_form_{side}"):
                st.markdown(_("**Setting {side}**").format(side=side.upper()))
                st.selectbox("n_heads", choices, key=heads_key)
                st.toggle(_("Causal mask"), key=causal_key)
                st.form_submit_button(_("Apply {side}").format(side=side.upper()))
            chosen[side] = (st.session_state[heads_key], st.session_state[causal_key])
            runs[side] = L.walkthrough(settings, batch, *chosen[side])["steps"]
        # A and B share one colour range, so equal colours mean equal weights
        shared = figures.value_range(np.concatenate([
            runs[x]["weights"][0, 0][figures.informative_cells(runs[x]["mask"], "weights")] for x in "ab"]), "weights")
        for side, col in zip(("a", "b"), cols):
            L.chart(L.pattern_figure(runs[side]["weights"][0, 0], rows, rows,
                                     _("{side}: head 0 weights ({heads}, causal {state})").format(
                                         side=side.upper(), heads=ngettext("{n} head", "{n} heads", chosen[side][0]).format(n=chosen[side][0]),
                                         state=_("on") if chosen[side][1] else _("off")), visible=runs[side]["mask"],
                                     zrange=shared, side=side),
                    f"pipeline_cmp_{side}", col, f"weights_{side}")
        st.caption(_("A and B share one colour range: 0 … {high}.").format(high=number(shared[1], ".3g")))
        cmp = L.comparison(settings, batch, chosen["a"], chosen["b"])
        cols = st.columns(2)
        L.chart(L.feature_figure(cmp["output_diff"], rows, _("attention output, B − A"), step="output_diff"),
                "pipeline_cmp_output_diff", cols[0], "output_diff")
        L.chart(L.pattern_figure(cmp["mean_weights_diff"], rows, rows, _("head-averaged weights, B − A"),
                                 visible=cmp["visible"], signed=True, step="mean_weights_diff"),
                "pipeline_cmp_weights_diff", cols[1], "mean_weights_diff")
        st.markdown(_("max |attention output B − A| = `{diff}`").format(diff=number(cmp["max_output_diff"], ".3g")))
        L.prose(PAGE, "compare-after")
