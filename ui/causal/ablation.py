"""Head ablation on the causal page: induction accuracy and loss per checkpoint, the chosen heads ablated
beside intact (a few floats per checkpoint, kept for the process)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from transformer_core.analysis.ablation import format_heads
from transformer_core.figures import ablation as figs
from transformer_core.figures.stage import chart_config
from transformer_core.records.serialize import csv_file

from ..parts.ablation_controls import MODE_NAMES, controls, file_stem
from ..shell import cache, fragments, long_actions
from ..shell.cache import memo
from ..shell.chart import Spec, chart, spec
from ..shell.downloads import download_button
from ..shell.i18n import N_, _, language
from ..shell.lazy import lazy_expander

# ------------------------------------------------------------------ causal model


_INTACT: dict[int, dict] = {}  # checkpoint → its measure intact, from whichever run measured it (a few floats)


@st.cache_data(max_entries=512, show_spinner=False)
def _measure(step: int, heads: tuple, mode: str, ref_seed: int | None = None) -> tuple[dict, dict]:
    """Loss and accuracy of checkpoint ``step`` intact and with ``heads`` ablated (a few floats: kept for the
    process); ``ref_seed``: the mean ablation's reference sequences' seed (None = the default set). One forward:
    the first time a checkpoint is measured, intact and ablated come from one batch
    (:func:`~transformer_core.analysis.induction_pair.measure_intact_and_ablated`); after that, the intact numbers
    are known and only the ablated run goes through the model."""
    from transformer_core.analysis.ablation.induction import REFERENCE, measure
    from transformer_core.analysis.induction_pair import measure_intact_and_ablated
    from transformer_core.models import CausalFace

    reference = None if ref_seed is None else {**REFERENCE, "seed": int(ref_seed)}
    face, intact = CausalFace(step), _INTACT.get(step)
    if intact is None:
        intact, ablated = measure_intact_and_ablated(face, heads, mode=mode, reference=reference)
        _INTACT.setdefault(step, intact)
        return intact, ablated
    return intact, measure(face, heads, mode="zero" if not heads else mode, reference=reference)


@memo("fixed_inputs", key=lambda heads, mode, ref_seed=None, progress=None: (heads, mode, ref_seed))
def _causal_curve(heads: tuple, mode: str, ref_seed: int | None = None, progress=None) -> dict:
    """Intact and ablated per checkpoint: one cache hit per run rather than one per checkpoint (a few floats per
    checkpoint, kept an hour). ``progress(done, total)`` after each checkpoint."""
    from .compute import log

    steps, rows = log()["checkpoint_steps"], {}
    for i, s in enumerate(steps):
        rows[s] = _measure(s, heads, mode, ref_seed)
        if progress:
            progress(i + 1, len(steps))
    return {"steps": steps, "rows": rows}


def _curve_in_turn(heads: tuple, mode: str, ref_seed: int | None) -> dict:
    """:func:`_causal_curve`, at once when cached; else in a turn among the server's long computations
    (:mod:`ui.shell.long_actions`; 1-4 s of a core, not counted), with a progress bar over the checkpoints."""
    if cache.cached(_causal_curve, heads, mode, ref_seed):
        return _causal_curve(heads, mode, ref_seed)
    note = st.empty()
    with long_actions.turn(note, counted=False):
        bar = note.progress(0.0, text=_("Measuring every checkpoint …"))
        text = _("{done} of {total} checkpoints measured")
        curve = _causal_curve(heads, mode, ref_seed, progress=lambda done, total: bar.progress(
            done / total, text=text.format(done=done, total=total)))
    note.empty()
    return curve


@st.cache_data(max_entries=256, show_spinner=False)
def _curve_figure(heads: tuple, mode: str, ref_seed: int | None, step: int, lang: str) -> Spec:
    """The induction-accuracy curve with checkpoint ``step`` marked, as chart JSON (its words in ``lang``, a key)."""
    curve = _causal_curve(heads, mode, ref_seed)
    steps, rows = curve["steps"], curve["rows"]
    return spec(figs.causal_figure(steps, [rows[s][0]["accuracy"]["repeat"] for s in steps],
                                   [rows[s][1]["accuracy"]["repeat"] for s in steps], rows[step][0]["chance"],
                                   format_heads(heads), step))


@st.cache_data(max_entries=256, show_spinner=False)
def _ranked(step: int, mode: str, ref_seed: int | None) -> dict:
    """Each head of checkpoint ``step`` ablated alone (:func:`~transformer_core.analysis.ablation.induction.rank_heads`:
    one batched pass per layer over the 64 held-out sequences, ~0.3 s): induction accuracy and loss ``[layer, head]``
    and the intact model's, a few floats, kept for the process."""
    from transformer_core.analysis.ablation.induction import REFERENCE, rank_heads
    from transformer_core.models import CausalFace

    reference = None if ref_seed is None else {**REFERENCE, "seed": int(ref_seed)}
    return rank_heads(CausalFace(step), mode=mode, reference=reference)


@st.cache_data(max_entries=256, show_spinner=False)
def _rank_figure(step: int, mode: str, ref_seed: int | None, lang: str) -> Spec:
    """:func:`_ranked`'s bars as chart JSON (its words in ``lang``, a key): built once, not on every rerun."""
    from transformer_core.figures.ablation import rank_induction_figure

    ranked = _ranked(step, mode, ref_seed)
    return spec(rank_induction_figure(ranked["accuracy"], ranked["intact"]["accuracy"]["repeat"],
                                      ranked["intact"]["chance"], step, _(MODE_NAMES[mode])))


def rank_section(step: int, mode: str, ref_seed: int | None) -> None:
    """Every head ablated alone at checkpoint ``step``, ranked by how far induction accuracy falls, in a box that
    costs nothing until it is opened (``?rank=1``)."""
    box = lazy_expander(_("Rank the heads: each one ablated alone"), key="causal_rank_box", url="rank",
                        icon=":material/sort:")
    if not box.open:
        return
    with box:
        ranked = _ranked(step, mode, ref_seed)
        acc, intact = ranked["accuracy"], ranked["intact"]["accuracy"]["repeat"]  # [layer, head], the intact model's
        fall = intact - acc
        fmt = st.session_state.get("shared_image_format", "png")
        chart(_rank_figure(step, mode, ref_seed, language()), key="causal_rank_chart",
              config=chart_config(f"causal_rank_step{step}_{mode}", fmt))
        order = np.argsort(-fall, axis=None, kind="stable")
        top = [(int(i) // fall.shape[1], int(i) % fall.shape[1]) for i in order]
        first, second = top[0], top[1]
        together = _("A head that matters little alone may still matter with others: heads that do the same job back "
                     "each other up, so ablate them together above.")
        # accuracies as the bars show them (a fall in points, rounded apart, read 2.7 beside bars of 88.5 and 85.9);
        # below a point (15 of the 1,536 predictions) a fall is noise, as at the untrained checkpoints
        if fall[first] < 0.01:
            said = _("Ablated alone, no head lowers induction accuracy by a point or more at step {step} (intact "
                     "{intact}).").format(step=step, intact=f"{intact:.1%}")
        elif fall[second] < 0.01:
            said = _("Ablated alone, only {a} lowers induction accuracy by a point or more: {intact} → {va}.").format(
                a=f"L{first[0]}H{first[1]}", intact=f"{intact:.1%}", va=f"{acc[first]:.1%}")
        else:
            said = _("Ablated alone, {a} lowers induction accuracy most, {intact} → {va}, then {b}, → {vb}.").format(
                a=f"L{first[0]}H{first[1]}", intact=f"{intact:.1%}", va=f"{acc[first]:.1%}",
                b=f"L{second[0]}H{second[1]}", vb=f"{acc[second]:.1%}")
        st.caption(said + " " + together)
        download_button(st, "⬇ " + _("Each head alone as CSV"), csv_file(pd.DataFrame([
            {"step": step, "head": f"L{lay}H{h}", "mode": mode, "induction accuracy": acc[lay, h],
             "accuracy intact": intact, "loss repeat": ranked["loss"][lay, h]}
            for lay, h in top]).to_csv(index=False)),
            file_name=f"causal_rank_step{step}_{mode}.csv", mime="text/csv", key="causal_rank_csv")


def reference_control(mode: str) -> int | None:
    """The mean ablation's reference sequences (``"mean"`` mode), shown with their seed, which can be changed:
    the seed, or None for the default set."""
    from transformer_core.analysis.ablation.induction import REFERENCE

    if mode != "mean":
        return None
    seed = st.number_input(_("Reference set: 64 random sequences of period 24 repeated once, seed"), 0, 99_999,
                           value=REFERENCE["seed"], key="causal_ablate_ref_seed",
                           help=_("Mean ablation puts, at each position, the head's mean context at that position over "
                                  "these sequences (not the 64 held-out ones it is measured on, seed 12345)."))
    return None if int(seed) == REFERENCE["seed"] else int(seed)


CAUSAL_DEFAULT = tuple(f"L1H{h}" for h in range(4))  # layer 1's four induction heads


def causal_section(step: int, n_layers: int = 2, n_heads: int = 4) -> None:
    """"What a head does" on the causal model: induction accuracy and loss on the held-out repeated
    sequences per checkpoint, with the chosen heads ablated beside intact."""
    st.subheader(_("What a head does: knock heads out"))
    st.caption(_("Ablate heads and measure the model on 64 held-out random sequences of period 24 repeated once: "
                 "**induction accuracy** = how often its top prediction is right in the repeat (only copying can do it; "
                 "chance 1/64). Try layer 1's four induction heads, then L0H0, the previous-token head that feeds them, "
                 "then another layer-0 head. The sentence mean averages each sequence's own positions, so a causal "
                 "model's later tokens leak into earlier ones; the reference mean does not."))
    heads, mode = controls("causal_", n_layers, n_heads, CAUSAL_DEFAULT)
    # the overview above frames the ablated heads: when a click here changes them, the whole page reruns
    fragments.follow("causal_ablation", ablated=tuple(heads))
    ref_seed = reference_control(mode)
    if not heads:
        st.caption(_("Pick heads above to ablate them."))
        rank_section(step, mode, ref_seed)
        return
    text = format_heads(heads)
    try:
        curve = _curve_in_turn(heads, mode, ref_seed)
    except long_actions.Refused:  # the note says the server is busy
        return
    steps, rows = curve["steps"], curve["rows"]
    intact, ablated = rows[step]
    fmt = st.session_state.get("shared_image_format", "png")
    chart(_curve_figure(heads, mode, ref_seed, step, language()), key="causal_ablate_curve",
          config=chart_config(f"ablation_{file_stem(heads)}_induction", fmt))
    frame = pd.DataFrame([{N_("model"): name, N_("loss first period"): m["loss"]["first"],
                           N_("loss repeat"): m["loss"]["repeat"], N_("accuracy first period"): m["accuracy"]["first"],
                           N_("induction accuracy"): m["accuracy"]["repeat"]}
                          for name, m in (("intact", intact), (f"{text} ablated ({mode})", ablated))])
    st.markdown(_("At step {step}: induction accuracy **{intact}** intact, **{ablated}** with {heads} ablated (chance "
                  "{chance}).").format(step=step, intact=f"{intact['accuracy']['repeat']:.1%}",
                                       ablated=f"{ablated['accuracy']['repeat']:.1%}", heads=format_heads(heads, ", "),
                                       chance=f"{intact['chance']:.1%}"))
    shown = frame.rename(columns=lambda c: _(c))  # headers in the learner's language (the CSV keeps English)
    shown.iloc[:, 0] = [_("intact"), _("{heads} ablated ({mode})").format(heads=format_heads(heads, ", "),
                                                                          mode=_(MODE_NAMES[mode]))]
    st.dataframe(shown, hide_index=True, key="causal_ablate_table", column_config={
        c: st.column_config.NumberColumn(format="%.3f") for c in shown.columns[1:]})
    download_button(st, "⬇ " + _("Per checkpoint as CSV"), csv_file(pd.DataFrame([
        {"step": s, "ablated": text, "mode": mode, "accuracy intact": rows[s][0]["accuracy"]["repeat"],
         "accuracy ablated": rows[s][1]["accuracy"]["repeat"], "loss repeat intact": rows[s][0]["loss"]["repeat"],
         "loss repeat ablated": rows[s][1]["loss"]["repeat"]} for s in steps]).to_csv(index=False)),
        file_name=f"ablation_{file_stem(heads)}_checkpoints.csv", mime="text/csv", key="causal_ablate_csv")
    rank_section(step, mode, ref_seed)
