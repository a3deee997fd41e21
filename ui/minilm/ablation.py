"""Head ablation on the MiniLM and causal pages: knock heads out, see what changes (issue 23).

Pages call :func:`minilm_section` / :func:`causal_section` (and :func:`tile_callback` /
:func:`click_toggle` by the MiniLM overview). The ablated heads live in the URL as
``ablate=L3H7,L4H2`` (with ``ablate_mode=zero|mean``); a bad list falls back to none with a note.
Compute is cached by value (:mod:`ui.cache` budgets ``minilm_layer`` and ``causal_trace``, shared with
the traces they sit beside), and the model is never changed: ablation runs in a thread-private context.
"""
from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from transformer_core.analysis.ablation import MODES, format_heads, parse_heads
from transformer_core.figures import ablation as figs
from transformer_core.figures.overview import mark_ablated
from transformer_core.figures.stage import chart_config
from transformer_core.records.serialize import csv_file

from .cache import memo
from .callbacks import clicked_tile
from .failover import moved_this_run
from .i18n import N_, _
from .markdown import plain
from .state import bind_url

MODE_LABELS = {"zero": N_("zero (context = 0, as head_mask did)"), "mean": N_("mean (context = its mean over real tokens)")}
MODE_NAMES = {"zero": N_("zero"), "mean": N_("mean")}  # in prose: "Ablating L3H7 (zero)"


def _names(n_layers: int, n_heads: int) -> list[str]:
    return [f"L{layer}H{head}" for layer in range(n_layers) for head in range(n_heads)]


def _kept(names, n_layers: int, n_heads: int) -> list[str]:
    """The head names of a multiselect's state that exist (a state no widget makes, from a script or a stale
    session, loses the rest)."""
    valid = set(_names(n_layers, n_heads))
    return [n for n in names if isinstance(n, str) and n in valid] if isinstance(names, list | tuple) else []


def bind_heads(key: str, n_layers: int, n_heads: int, default: tuple[str, ...] = ()) -> None:
    """``bind_url`` for a list of heads: seed ``st.session_state[key]`` (names ``L3H7``) from
    ``?ablate=L3H7,L4H2`` while the widget has no state, note and drop a bad list, write the URL back."""
    ss = st.session_state
    if moved_this_run() and key not in ss:
        return
    raw = st.query_params.get("ablate")
    if key not in ss:
        ss[key] = list(default)
        if raw is not None:
            try:
                ss[key] = [f"L{lay}H{h}" for lay, h in parse_heads(raw, n_layers, n_heads)]
            except ValueError as err:  # the note says what is ablated instead: nothing, or the page's default
                note = (_("URL parameter {param} ignored ({why}); the default heads {heads} are ablated.") if default
                        else _("URL parameter {param} ignored ({why}); no head is ablated."))
                st.warning(note.format(param=plain("ablate=" + str(raw)[:40]), why=plain(str(err)),
                                       heads=plain(", ".join(default))), icon=":material/warning:")
    if (kept := _kept(ss[key], n_layers, n_heads)) != ss[key]:
        ss[key] = kept
    text = format_heads(parse_heads(",".join(ss[key]), n_layers, n_heads))
    if raw != text:
        st.query_params["ablate"] = text


def ablated_heads(prefix: str, n_layers: int, n_heads: int, default: tuple[str, ...] = ()) -> tuple:
    """The heads the ablation section will ablate (``((3, 7), …)``), read before it runs: its widget's state, else
    ``?ablate=``, else the section's ``default``; a bad list is none (the section says so where it runs)."""
    names = st.session_state.get(f"{prefix}ablate")
    raw = (",".join(_kept(names, n_layers, n_heads)) if names is not None else
           st.query_params.get("ablate", ",".join(default)))
    try:
        return parse_heads(raw, n_layers, n_heads)
    except ValueError:
        return ()


def frame_ablated(fig, prefix: str, n_layers: int, n_heads: int, default: tuple[str, ...] = ()):
    """An overview figure with the ablated heads framed (and, in click-to-ablate mode, its hover saying so), plus a
    caption naming them here. Returns the figure."""
    clicking = bool(st.session_state.get(f"{prefix}ablate_click"))
    if (ablated := ablated_heads(prefix, n_layers, n_heads, default)) or clicking:
        fig = mark_ablated(fig, ablated, clicking)
    if ablated:
        st.caption(_("Dashed frames: the heads ablated in “What a head does” below ({heads}). The overview shows them "
                     "intact.").format(heads=plain(format_heads(ablated, ", "))))
    return fig


def click_toggle(prefix: str) -> bool:
    """A toggle: clicks on overview tiles ablate heads instead of opening them."""
    return st.toggle(_("Click tiles to ablate heads"), key=f"{prefix}ablate_click",
                     help=_("On: a click on a tile's centre adds that head to (or removes it from) the ablated heads "
                            "of “What a head does” below. Off: a click opens the head."))


def click_note(target, prefix: str, n_layers: int, n_heads: int, layer: int | None = None, head: int | None = None,
               default: tuple[str, ...] = ()) -> None:
    """Under an overview, in view at 1280×720: what a tile click did (its answer is below the fold): the head it
    opened (``layer``, ``head``; None: where it opens, for a note outside the head view's part, which a click inside
    the part would leave stale), or in click-to-ablate mode the heads now ablated. ``target``: a placeholder or
    ``st``."""
    if st.session_state.get(f"{prefix}ablate_click"):
        ablated = format_heads(ablated_heads(prefix, n_layers, n_heads, default), ", ")
        target.caption(_("Ablated: **{heads}**. What that changes is under “What a head does”, further down ↓").format(
            heads=ablated or _("none")))
    elif layer is None:
        target.caption(_("A click opens that head below, in “One head, stage by stage” ↓"))
    else:
        target.caption(_("Open below: **layer {layer} · head {head}** ↓").format(layer=layer, head=head))


def toggle_tile(event_key: str, layer_key: str, head_key: str, n_heads: int, prefix: str,
                n_layers: int | None = None) -> None:
    """``on_select`` of an overview: open the clicked head, or (click mode on) add/remove it from the ablated."""
    ss = st.session_state
    tile = clicked_tile(event_key, n_heads, n_layers)
    if tile is None:
        return
    if not ss.get(f"{prefix}ablate_click"):
        ss[layer_key], ss[head_key] = tile
        return
    name, heads = f"L{tile[0]}H{tile[1]}", list(ss.get(f"{prefix}ablate", []))
    ss[f"{prefix}ablate"] = [h for h in heads if h != name] if name in heads else heads + [name]


def tile_callback(event_key: str, open_head: dict, prefix: str, n_layers: int | None = None):
    """The overview's ``on_select`` (a partial of a module function: holds no run, see ui/callbacks)."""
    from functools import partial

    return partial(toggle_tile, event_key, open_head["layer_key"], open_head["head_key"], open_head["n_heads"],
                   prefix, n_layers)


def _controls(prefix: str, n_layers: int, n_heads: int, default: tuple[str, ...]) -> tuple[tuple, str]:
    bind_heads(f"{prefix}ablate", n_layers, n_heads, default)
    bind_url(f"{prefix}ablate_mode", "ablate_mode", MODES, "zero")
    c1, c2 = st.columns([3, 2], vertical_alignment="bottom")
    picked = c1.multiselect(_("Heads to ablate"), _names(n_layers, n_heads), key=f"{prefix}ablate",
                            placeholder=_("pick heads, e.g. L3H7"), help=_("Layer L, head H. In the URL: ablate=L3H7,L4H2"))
    modes = {m: _(label) for m, label in MODE_LABELS.items()}  # translated now (format_func may run later)
    mode = c2.radio(_("Ablation"), MODES, key=f"{prefix}ablate_mode", format_func=modes.get, horizontal=False)
    return parse_heads(",".join(picked), n_layers, n_heads), mode


# ------------------------------------------------------------------ MiniLM


@memo("minilm_layer")
def _effects(sentences: tuple[str, ...], padding: bool, heads: tuple, mode: str, batch: int, layer: int) -> dict:
    from transformer_core.analysis.ablation_minilm import ablation_effects

    out = ablation_effects(list(sentences), heads, mode=mode, padding=padding, max_tokens=512, weights_layer=layer)
    out["weights"] = {k: v[batch] for k, v in out["weights"].items()}  # [head, query_pos, key_pos], one sentence
    return out


@memo("minilm_summary", key=lambda sentences, padding, mode, progress=None: (sentences, padding, mode))
def _ranked(sentences: tuple[str, ...], padding: bool, mode: str, progress=None) -> dict:
    from transformer_core.analysis.ablation_minilm import rank_heads

    return rank_heads(list(sentences), mode=mode, padding=padding, max_tokens=512, progress=progress)


def minilm_section(sentences: tuple[str, ...], padding: bool, batch: int, labels: tuple[str, ...],
                   n_layers: int = 6, n_heads: int = 12) -> None:
    """"What a head does" on MiniLM: pick heads, see the embedding cosine, each layer's shift, a later
    layer's weights ablated beside intact, the nearest sentence; rank all heads on request."""
    st.subheader(_("What a head does: knock heads out"))
    st.caption(_("Attention weights only *suggest* what a head is for. Remove the head — set its context to zero before "
                 "W_O, or to its mean over the sentence — and measure what changes in the sentence embedding (mean "
                 "over real tokens, L2-normalised, as all-MiniLM-L6-v2 is used) and in every later layer."))
    heads, mode = _controls("minilm_", n_layers, n_heads, ())
    fmt = st.session_state.get("shared_image_format", "png")
    if heads:
        first = heads[0][0]
        later = list(range(first, n_layers))
        bind_url("minilm_ablate_layer", "ablate_layer", later, min(first + 1, n_layers - 1))
        out = _effects(sentences, padding, heads, mode, batch, st.session_state["minilm_ablate_layer"])
        text = format_heads(heads)
        cos = float(out["cosine"][batch])
        st.markdown(_("**Ablating {heads}** ({mode}): sentence {b}'s embedding has cosine **{cos}** with the intact "
                      "one (1 = unchanged). Layers before {first} do not move; from layer {first} on:").format(
            heads=format_heads(heads, ", "), mode=_(MODE_NAMES[mode]), b=batch, cos=f"{cos:.4f}", first=first))
        st.plotly_chart(figs.shift_figure(out["shift"][:, batch], cos, text, batch), key="minilm_ablate_shift",
                        config=chart_config(f"ablation_{text}_shift", fmt))
        layer = st.select_slider(_("Later layer to compare"), later, key="minilm_ablate_layer",
                                 help=_("Its attention weights, intact (top row) beside ablated (bottom row)."))
        tr = out["trace"]
        st.plotly_chart(figs.weights_beside(out["weights"]["intact"], out["weights"]["ablated"], tr.tokens[batch],
                                            layer=layer, visible=tr.visible(batch)),
                        key="minilm_ablate_weights", config=chart_config(f"ablation_{text}_L{layer}_weights", fmt))
        if len(sentences) > 1:
            near = out["nearest"]
            st.dataframe(pd.DataFrame({
                _("sentence"): list(labels), _("cosine ablated·intact"): out["cosine"],
                _("nearest other (intact)"): [labels[j] if j is not None else "" for j in near["intact"]],
                _("nearest other (ablated)"): [labels[j] if j is not None else "" for j in near["ablated"]],
                _("changed"): [a != b for a, b in zip(near["intact"], near["ablated"])]}),
                hide_index=True, key="minilm_ablate_nearest",
                column_config={_("cosine ablated·intact"): st.column_config.NumberColumn(format="%.5f")})
        _downloads(out, text, mode, labels)
    else:
        st.caption(_("Pick heads above (or turn on **Click tiles to ablate heads** by the overview) to see what "
                     "removing them does."))
    _rank(sentences, padding, batch, mode, fmt)


def _downloads(out: dict, text: str, mode: str, labels) -> None:
    frame = pd.DataFrame(out["shift"].T, columns=[f"layer {i} shift" for i in range(out["shift"].shape[0])])
    frame.insert(0, "cosine", out["cosine"])
    frame.insert(0, "sentence", list(labels))
    data = {"ablate": text, "mode": mode, "sentences": list(labels), "cosine": out["cosine"].tolist(),
            "shift_by_layer": out["shift"].tolist(), "nearest": out["nearest"]}
    c1, c2 = st.columns(2)
    c1.download_button("⬇ " + _("Effects as CSV"), csv_file(frame.to_csv(index=False)),
                       file_name=f"ablation_{text}.csv",
                       mime="text/csv", key="minilm_ablate_csv", on_click="ignore", width="stretch")
    c2.download_button("⬇ " + _("Effects as JSON"), json.dumps(data, indent=1), file_name=f"ablation_{text}.json",
                       mime="application/json", key="minilm_ablate_json", on_click="ignore", width="stretch")


def _rank(sentences, padding, batch, mode, fmt) -> None:
    ss = st.session_state
    key = (sentences, padding, mode)
    if st.button(_("Rank the heads: ablate each of the 72 alone"), key="minilm_rank_button", icon=":material/sort:"):
        bar = st.progress(0.0, text=_("Ablating the heads of layer 0 …"))
        passes = _("{done} of {total} passes (one per layer's heads) done")

        def progress(done: int, total: int) -> None:
            bar.progress(done / total, text=passes.format(done=done, total=total))

        ss["minilm_rank"] = (key, _ranked(sentences, padding, mode, progress=progress)["cosine"])
        bar.empty()
    if ss.get("minilm_rank", (None,))[0] != key:
        st.caption(_("**Rank the heads** ablates each head alone (72 runs, batched one layer at a time: a few seconds) "
                     "and sorts them by how far the embedding moves."))
        return
    cosine = ss["minilm_rank"][1]
    st.plotly_chart(figs.rank_figure(cosine, batch), key="minilm_rank_chart",
                    config=chart_config(f"ablation_rank_{mode}", fmt))
    table = pd.DataFrame([{"head": f"L{lay}H{h}", "layer": lay, "1 − cosine": float(1 - cosine[lay, h, batch])}
                          for lay in range(cosine.shape[0]) for h in range(cosine.shape[1])])
    table = table.sort_values("1 − cosine", ascending=False, kind="stable")
    st.download_button("⬇ " + _("Ranking as CSV"), csv_file(table.to_csv(index=False)),
                       file_name=f"ablation_rank_{mode}.csv",
                       mime="text/csv", key="minilm_rank_csv", on_click="ignore")


# ------------------------------------------------------------------ causal model


@st.cache_data(max_entries=512, show_spinner=False)
def _measure(step: int, heads: tuple, mode: str) -> dict:
    """Loss and accuracy of checkpoint ``step`` with ``heads`` ablated (a few floats: kept for the process)."""
    from transformer_core.analysis.ablation_causal import measure
    from transformer_core.models.causal import load_causal_model

    return measure(load_causal_model(step), heads, mode="zero" if not heads else mode)


def _causal_curve(heads: tuple, mode: str) -> dict:
    from transformer_core.models.causal import checkpoint_steps

    steps = checkpoint_steps()
    with st.spinner(_("Measuring every checkpoint …")):
        return {"steps": steps, "rows": {s: (_measure(s, (), "zero"), _measure(s, heads, mode)) for s in steps}}


CAUSAL_DEFAULT = tuple(f"L1H{h}" for h in range(4))  # layer 1's four induction heads


def causal_section(step: int, n_layers: int = 2, n_heads: int = 4) -> None:
    """"What a head does" on the causal model: induction accuracy and loss on the held-out repeated
    sequences per checkpoint, with the chosen heads ablated beside intact."""
    st.subheader(_("What a head does: knock heads out"))
    st.caption(_("Ablate heads and measure the model on 64 held-out random sequences of period 24 repeated once: "
                 "**induction accuracy** = how often its top prediction is right in the repeat (only copying can do it; "
                 "chance 1/64). Try layer 1's four induction heads, then L0H0, the previous-token head that feeds them, "
                 "then another layer-0 head."))
    heads, mode = _controls("causal_", n_layers, n_heads, CAUSAL_DEFAULT)
    if not heads:
        st.caption(_("Pick heads above to ablate them."))
        return
    text = format_heads(heads)
    curve = _causal_curve(heads, mode)
    steps, rows = curve["steps"], curve["rows"]
    intact, ablated = rows[step]
    fmt = st.session_state.get("shared_image_format", "png")
    st.plotly_chart(figs.causal_figure(steps, [rows[s][0]["accuracy"]["repeat"] for s in steps],
                                       [rows[s][1]["accuracy"]["repeat"] for s in steps], intact["chance"], text, step),
                    key="causal_ablate_curve", config=chart_config(f"ablation_{text}_induction", fmt))
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
    st.download_button("⬇ " + _("Per checkpoint as CSV"), csv_file(pd.DataFrame([
        {"step": s, "ablated": text, "mode": mode, "accuracy intact": rows[s][0]["accuracy"]["repeat"],
         "accuracy ablated": rows[s][1]["accuracy"]["repeat"], "loss repeat intact": rows[s][0]["loss"]["repeat"],
         "loss repeat ablated": rows[s][1]["loss"]["repeat"]} for s in steps]).to_csv(index=False)),
        file_name=f"ablation_{text}_checkpoints.csv", mime="text/csv", key="causal_ablate_csv", on_click="ignore")
