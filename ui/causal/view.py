"""The causal page below its sequence: the checkpoint slider and the mask toggle with everything they change (loss
curve, loss, overview, head scores, the head view, predictions, head ablation), as one part of the page
(:mod:`ui.shell.fragments`). A checkpoint or mask click reruns this part only, not the page's intro and sequence
controls above it; the head view, the predictions and the ablation section are parts inside it, so a click in one of
them reruns that one alone. The body lives in a module, not the page (a page function would keep a whole run alive,
see :mod:`ui.minilm.head_fragment`)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from transformer_core.analysis.head_types import head_types
from transformer_core.figures import stage as figures
from transformer_core.models.causal import CausalUnavailable

from ..parts import ablation_controls, moves_panels
from ..parts.numbers import number
from ..shell import fragments, i18n
from ..shell.chart import chart, image_format
from ..shell.i18n import _
from ..shell.markdown import plain
from ..shell.url import bind_url
from . import ablation, heads, predictions, writes
from . import compute as causal

_STICKY_BAR = ("<style>[data-testid='stLayoutWrapper']:has(> .st-key-causal_checkpoint_bar){position:sticky;top:60px;"
               "z-index:4;background:#fff;padding:2px 0 6px;border-bottom:1px solid rgba(49,51,63,0.2)}</style>")


def show(ids: tuple[int, ...], period: int | None, n_layers: int, n_heads: int) -> None:
    """Everything on the causal page that the checkpoint and the mask change, for the sequence ``ids``."""
    # the checkpoint and mask stick under the header over what they change on screen (loss curve, overview, head
    # scores), so a move of the slider is seen on the heads; they scroll away before the head view, whose answer
    # line sticks there in turn
    st.html(_STICKY_BAR)
    with st.container():
        trace, step = _sticky_part(ids, period, n_layers, n_heads)

    # ------------------------------------------------------------------ one head, every stage
    st.subheader(_("One head, stage by stage"))
    # a stage, layer, head, cell, tile or tab click reruns only the head view (ui/shell/fragments.py)
    fragments.part("causal", heads.causal, trace, step, n_layers, n_heads)
    # their own controls rerun only them (the ablation part reruns the page when its heads change: the overview frames them)
    fragments.part("causal_predictions", predictions.section, trace, list(ids), step, period)
    writes.section(trace, step, period)
    fragments.part("causal_ablation", ablation.causal_section, step)
    ablation_controls.result_into_view("causal_")  # after a tile click that ablated a head: its result in view


def _sticky_part(ids: tuple[int, ...], period: int | None, n_layers: int, n_heads: int):
    """The checkpoint and mask controls (sticky) and the loss curve, loss, overview and head scores under them;
    returns the trace and the step."""
    log = causal.log()
    steps = log["checkpoint_steps"]
    bind_url("causal_step", "checkpoint", steps, steps[-1])  # here, not in the page: a part's run keeps the URL too
    bind_url("causal_mask", "causal_mask", (True, False), True, to_text=lambda v: "1" if v else "0")
    s1, s2 = st.container(key="causal_checkpoint_bar").columns([3, 1.3], vertical_alignment="bottom")
    step = s1.select_slider(_("Training checkpoint (step)"), options=steps, key="causal_step",
                            help=_("The weights saved at this training step. The induction bump — the sudden drop of the "
                                   "loss — happens between steps 300 and 800."))
    mask_on = s2.toggle(_("Mask the future (as trained)"), key="causal_mask",
                        help=_("The model was trained with it. Off: every query may also read the tokens after it."))
    mask_note = st.container()  # "Causal mask off …", filled below: right under its toggle, in view at 1280×720
    chart(causal.loss_curve(step, i18n.language()), key="causal_loss_curve",
          config=figures.chart_config("causal_loss_curve", image_format()))

    try:
        trace = causal.causal_with_norms(tuple(ids), step, mask_on)  # every stage, plus ‖α·f(x)‖ (stage norms)
        reference = trace if mask_on else causal.causal_trace(tuple(ids), step, True)
    except CausalUnavailable as err:
        st.error(_("The trained causal model is not available, so this page cannot run: {error}").format(
            error=plain(str(err))), icon=":material/block:")
        st.caption(_("The other pages do not use it and keep working."))
        st.stop()

    # ------------------------------------------------------------------ what the loss says
    loss, ref_loss = causal.loss_summary(trace, period), causal.loss_summary(reference, period)
    if len(ids) == 1:
        st.markdown(_("**One token: there is no next token to predict**, so there is no loss and no head score on this "
                      "sequence (their cells stay empty); the figures show the token attending to itself. Type more ids."))
    elif period == 1:
        st.markdown(_("**A period of 1: every token repeats the one before**, so every prediction is a repeat. Loss "
                      "predicting each next token: **{loss}** nats (chance = ln 64 = 4.16), at step {step}.").format(
            loss=number(loss["repeat"]), step=step))
    elif period is not None and "repeat" in loss:
        st.markdown(_("**Period {period}** (the sequence repeats after {period} tokens). Loss predicting each next token: "
                      "**{first}** nats on the first period (chance = ln 64 = 4.16), **{repeat}** on the repeat, at step "
                      "{step}.").format(period=period, first=number(loss["first"]), repeat=number(loss["repeat"]),
                                        step=step))
    else:
        st.markdown(_("This sequence does not repeat itself, so there is nothing for an induction head to copy. Mean loss "
                      "{loss} nats (chance = ln 64 = 4.16).").format(loss=number(loss["all"])))
    if not mask_on:
        share = causal.future_share(trace)
        compared = "" if len(ids) == 1 else (
            _("Loss on this sequence: **{off}** nats without the mask vs **{on}** with it").format(
                off=number(loss["all"]), on=number(ref_loss["all"]))
            + (_(" (repeat: {off} vs {on})").format(off=number(loss["repeat"]), on=number(ref_loss["repeat"]))
               if "repeat" in loss else "")
            + _(". ") + (_("Lower: a query can now read the very token it must predict — cheating, which a language "
                           "model generating text cannot do (the future does not exist yet).")
                         if loss["all"] < ref_loss["all"] else
                         _("Higher: the heads were never trained to ignore the future, so their patterns smear over "
                           "tokens they do not understand, and the induction heads lose their stripe.")))
        mask_note.warning(_("**Causal mask off** on a model trained with it: queries now give {share} of their attention "
                            "(mean over layers, heads and queries) to tokens *after* them, which training never allowed. "
                            "{compared}").format(share=number(share, ".0%"), compared=compared), icon=":material/visibility:")

    # ------------------------------------------------------------------ overview
    clicking = bool(st.session_state.get("causal_ablate_click"))  # "Click tiles to ablate heads", drawn under the colour control
    st.markdown((_("**All {layers} layers × {heads} heads** (attention weights; rows = queries, columns = keys). Look for "
                   "the **previous-token head** (the diagonal just below the main one) in layer 0 and the **induction "
                   "stripe** (a diagonal offset by the period, in the second half) in layer 1. **Click a tile's centre** "
                   "to ablate that head in “What a head does” below, or to bring it back.") if clicking else
                 _("**All {layers} layers × {heads} heads** (attention weights; rows = queries, columns = keys). Look for "
                   "the **previous-token head** (the diagonal just below the main one) in layer 0 and the **induction "
                   "stripe** (a diagonal offset by the period, in the second half) in layer 1. **Click a tile's centre** "
                   "to open that head below.")).format(layers=n_layers, heads=n_heads))
    color = moves_panels.color_control("causal_", moves_panels.CAUSAL_COLORS)  # ?color=: tiles fade by a head-type score
    ablation_controls.click_toggle("causal_")
    ablated = ablation_controls.ablated_heads("causal_", n_layers, n_heads, ablation.CAUSAL_DEFAULT)
    overview, note = heads.overview(trace, period, color, ablated, clicking)
    if note:
        st.caption(note)
    ablation_controls.ablated_caption(ablated)
    open_head = {"layer_key": "causal_layer", "head_key": "causal_head", "n_heads": n_heads}
    chart(overview, key="causal_overview", selection_mode="points",
          on_select=ablation_controls.tile_callback("causal_overview", open_head, "causal_", n_layers),
          config=figures.chart_config(figures.figure_filename("overview", None, None, trace.tokens[0]),
                                       image_format()))
    ablation_controls.click_note(st, "causal_", n_layers, n_heads, default=ablation.CAUSAL_DEFAULT)

    # ------------------------------------------------------------------ head scores
    st.subheader(_("Head scores"))
    seq = causal.sequence_scores(trace, period)
    held = log["scores"][str(step)]
    detector = head_types(trace, 0, ("induction",))["induction"].to_numpy().reshape(n_layers, n_heads)
    rows = [{_("layer"): layer, _("head"): head,
             _("previous-token (held out)"): held["previous_token"][layer][head],
             _("induction, period diagonal (held out)"): held["induction"][layer][head],
             _("previous-token (this sequence)"): seq["previous_token"][layer][head],
             _("induction, period diagonal (this sequence)"): seq["induction"][layer][head],
             _("induction, TransformerLens detector (this sequence)"): float(detector[layer, head])}
            for layer in range(n_layers) for head in range(n_heads)]
    score_col = dict(format="%.2f", min_value=0.0, max_value=1.0)
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="causal_scores", column_config={
        name: st.column_config.ProgressColumn(name, **score_col) for name in rows[0] if name not in (_("layer"), _("head"))})
    st.caption(_("**Previous-token score**: mean weight on key = query − 1. **Induction, period diagonal** (Olsson et al. "
                 "2022): mean weight, over the second period's queries, on the token *after* the previous occurrence of "
                 "the current token (key = query − period + 1); the overview's colours use these two. **Induction, "
                 "TransformerLens detector**: its token-matching pattern (any key right after an earlier copy of the "
                 "query's token) scored Σ A·D ÷ Σ A over every query row — lower, since the first period's queries have "
                 "no target. Held out = 64 random sequences of period 24 repeated once (seed 12345, never seen in "
                 "training), checkpoint {step}; held-out loss there: {first} nats on the first period, {repeat} on the "
                 "repeat.").format(step=step, first=number(held["loss"]["first"], ".2f"),
                                   repeat=number(held["loss"]["repeat"], ".2f")))
    return trace, step
