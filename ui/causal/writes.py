"""What the causal model's heads write, on its page: each head's direct share of the next token's logit at every
position, and the logit lens (the next token's probability read after each layer), from the page's one cached run
(:mod:`transformer_core.analysis.post_ln_writes`: no model run; the weights are the checkpoint's)."""
from __future__ import annotations

import numpy as np
import streamlit as st

from transformer_core.analysis import post_ln_writes
from transformer_core.figures.post_ln_writes import head_attribution_figure, next_token_lens_figure
from transformer_core.figures.stage import chart_config
from transformer_core.models.causal import load_causal_model
from transformer_core.records.trace import Trace

from ..parts.numbers import number
from ..shell.cache import per_trace
from ..shell.chart import chart, image_format, spec
from ..shell.i18n import _


def _computed(trace: Trace, step: int) -> dict:
    model = load_causal_model(step)
    return {"dla": post_ln_writes.direct_logit_attribution(model, trace),
            "lens": post_ln_writes.logit_lens(model, trace)}


def section(trace: Trace, step: int, period: int | None) -> None:
    """The subheader, the two figures side by side and what they show on this sequence."""
    st.subheader(_("What the heads write"))
    ids = [int(t) for t in trace.tokens[0]]
    if len(ids) < 2:
        st.caption(_("One token: nothing comes next, so nothing is written towards it."))
        return
    out = per_trace(trace, ("causal_writes", step), lambda: _computed(trace, step))  # once per run, shared
    dla, lens = out["dla"], out["lens"]
    fmt = image_format()
    left, right = st.columns([1.25, 1], gap="medium")
    chart(per_trace(trace, ("causal_dla_fig", step), lambda: spec(head_attribution_figure(
        dla["heads"], dla["embed"], dla["biases"], ids, width_px=320))),
        key="causal_dla", config=chart_config("causal_dla", fmt), target=left)
    chart(per_trace(trace, ("causal_lens_fig", step), lambda: spec(next_token_lens_figure(
        lens["target_prob"], ids, width_px=220))), key="causal_lens", config=chart_config("causal_lens", fmt),
        target=right)
    gap = float(np.abs(dla["total"] - dla["logit_diff"]).max())
    with right:
        if period is not None and period >= 2 and len(ids) > period + 1:
            repeat = slice(period - 1, len(ids) - 1)  # positions whose next token is a repeat
            best = np.unravel_index(np.argmax(dla["heads"][repeat].mean(0)), dla["heads"].shape[1:])
            st.markdown(_("**On the repeat**, L{layer}H{head} writes the next token most: **{mean}** logits on "
                          "average (first period: {first}). After layer {last} the next token has p = **{p}** on the "
                          "repeat, after layer 0 only {p0}.").format(
                layer=best[0], head=best[1], mean=number(float(dla["heads"][repeat][:, best[0], best[1]].mean()),
                                                         "+.2f"),
                first=number(float(dla["heads"][:period - 1, best[0], best[1]].mean()), "+.2f"),
                last=len(lens["target_prob"]) - 2, p=number(float(lens["target_prob"][-1][repeat].mean()), ".2f"),
                p0=number(float(lens["target_prob"][1][repeat].mean()), ".2f")))
    st.caption(_("Each norm of this post-norm model is frozen at its scale in this run, so the next token's logit "
                 "(minus the mean logit) is an exact sum of what each head, the embeddings and the biases wrote, each "
                 "carried through the later norms (largest gap to the model's own: {gap}). A layer-0 head's share is "
                 "its direct path only; a previous-token head works by changing what the induction heads attend to, "
                 "which this does not count. The lens reads the stream after each layer through the unembedding "
                 "(the model has no final norm); its last row is the model's prediction.").format(
        gap=number(gap, ".1e")))
