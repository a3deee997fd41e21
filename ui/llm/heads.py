"""Every head of the real LLM at a glance (SmolLM2: 30 layers × 9 heads, one colour each), the open head stage by stage with the
explain panel and its key/value group, and the per-head statistics with the attention-sink share.

The grid and the head view are one fragment (:mod:`ui.shell.fragments`): a tile, stage, layer, head or cell click
reruns only them. Bodies live here, not in the page script (a page function would keep the run alive,
tests/test_callbacks_hold_no_run.py). URL: ``color=``, and the head view's ``layer, head, stage, scale, all, q, k``.
"""
from __future__ import annotations

import math
from functools import partial

import numpy as np
import streamlit as st

from transformer_core.figures.smollm2 import head_grid_figure
from transformer_core.figures.stage import chart_config, figure_filename
from transformer_core.models.face import ModelConfig
from transformer_core.records.trace import Trace

from ..parts import head_view, trace_tables
from ..parts.numbers import number
from ..shell import callbacks, fragments
from ..shell.cache import per_trace
from ..shell.chart import chart, spec
from ..shell.downloads import download_button
from ..shell.i18n import N_, _
from ..shell.url import bind_url
from . import compute
from .catalog import Choice

COLORS = {"sink_share": N_("share to the first token (sink)"), "max_weight": N_("largest weight"),
          "entropy": N_("entropy (nats)")}


def color_control() -> str:
    """Which number colours the grid (``?color=``)."""
    bind_url("llm_color", "color", tuple(COLORS), "sink_share")
    names = {c: _(label) for c, label in COLORS.items()}
    return st.segmented_control(_("Colour each head by"), tuple(COLORS), key="llm_color", required=True,
                                format_func=names.get)


def open_tile(event_key: str, n_heads: int, n_layers: int) -> None:
    """``on_select`` of the grid: a click on a head opens it, and the next run brings the opened head's answer line
    and heatmap (under the grid) to the top of the screen, also when that head was open already."""
    tile = callbacks.clicked_tile(event_key, n_heads, n_layers)
    if tile is not None:
        st.session_state["llm_layer"], st.session_state["llm_head"] = tile
        head_view.opened_by_tile("llm_")


def grid_and_head(choice: Choice, prompt: str, trace: Trace, grids: dict, config: ModelConfig) -> None:
    """The fragment: the layer × head grid (a click opens a head) beside its colour choice and the open head's
    key/value group; under them, the open head's view as wide as the page (a tile click scrolls it into view)."""
    ss = st.session_state
    n_layers, n_heads = config.n_layers, config.n_heads
    bind_url("llm_layer", "layer", range(n_layers), 0)
    bind_url("llm_head", "head", range(n_heads), 0)
    layer, head = int(ss.get("llm_layer", 0)), int(ss.get("llm_head", 0))
    n = len(trace.tokens[0])
    # the grid is tall and narrow: beside it its legend and the open head's KV group; the open head goes under it,
    # as wide as the page (beside the grid at 1280×720 its heatmap was ~105 px, its labels and stage row cut)
    left, right = st.columns([1, 1.6], gap="medium")
    with right:
        st.markdown(_("**All {layers} layers × {heads} heads**, one colour per head. **Click a head** to open it "
                      "below. The white lines part the {groups} key/value groups.").format(
            layers=n_layers, heads=n_heads, groups=config.n_kv_heads))
        color = color_control()
        st.caption(_("Open below: **layer {layer} · head {head}** ↓").format(layer=layer, head=head))
    zmax = math.log(n) if color == "entropy" else 1.0
    # built once per (prompt, colour, open head) and shared: a click elsewhere in the fragment does not rebuild it
    fig = per_trace(trace, ("llm_grid", color, layer, head), lambda: spec(head_grid_figure(
        grids[color], value_name=_(COLORS[color]), zmax=max(zmax, 1e-6), highlight=(layer, head),
        fmt=".1%" if color == "sink_share" else ".2f")))
    fmt = ss.get("shared_image_format", "png")
    chart(fig, key="llm_grid", selection_mode="points", on_select=partial(open_tile, "llm_grid", n_heads, n_layers),
          config=chart_config(figure_filename(f"grid_{color}", None, None, trace.tokens[0]), fmt),
          target=left)
    stage, _batch, layer, head, scale, all_large = head_view.controls(n_heads, "llm_", n_layers=n_layers)
    layer_trace = compute.layer_trace(choice, prompt, layer)
    with right:
        kv_note(layer_trace, layer, head, config)
    head_view.show(layer_trace, batch=0, layer=layer, stage=stage, head=head, fixed=scale, all_large=all_large,
                   key_prefix="llm_", title_prefix=_("layer {layer} · ").format(layer=layer))
    # the CSV button on its own row: a third of the page cut its label ("⬇ Attention weights softmax(·)…")
    trace_tables.stage_csv(layer_trace, stage, batch=0, layer=layer, key_prefix="llm_")
    trace_tables.trace_downloads(layer_trace, batch=0, stages=head_view.STAGES, layer=layer, key_prefix="llm_")


def kv_note(trace: Trace, layer: int, head: int, config: ModelConfig) -> None:
    """Which key/value head the open query head reads, its sibling query heads, and that their K and V are the
    same numbers (the largest difference, from the captured tensors). Nothing for a model without grouped-query
    attention (one key/value head per query head)."""
    n_kv = config.n_kv_heads
    if n_kv == config.n_heads:
        return
    group = config.n_heads // n_kv
    kv = head // group
    siblings = [h for h in range(kv * group, (kv + 1) * group)]
    k = trace.stage("k", layer)[0]  # [head, pos, d_head]
    v = trace.stage("v", layer)[0]
    k_kv, v_kv = trace.stage("k_kv", layer)[0], trace.stage("v_kv", layer)[0]  # [kv_head, pos, d_head]
    diff = max(float(np.abs(k[h] - k_kv[kv]).max()) for h in siblings)
    diff = max(diff, *(float(np.abs(v[h] - v_kv[kv]).max()) for h in siblings))
    other = float(np.abs(k_kv[kv] - k_kv[(kv + 1) % n_kv]).max()) if n_kv > 1 else None
    text = _("**Grouped-query attention:** query head {head} uses key/value head {kv} = {head} // {group}. Query heads "
             "{heads} share it: their K and V are the same numbers (largest difference {diff}).").format(
        head=head, kv=kv, group=group, heads=", ".join(map(str, siblings)), diff=number(diff, "g"))
    if other is not None:
        text += " " + _("Another group's keys differ by up to {other}.").format(other=number(other, ".2f"))
    text += " " + _("{heads} query heads, {kv} key/value heads: the KV cache holds 1/{group} of the keys and values "
                    "full attention would keep.").format(heads=config.n_heads, kv=n_kv, group=group)
    st.caption(text)


def stats_table(stats, n_tokens: int, n_heads: int, file_prefix: str) -> None:
    """Per-head statistics with the sink share; a selected row opens that head."""
    st.subheader(_("Per-head statistics"))
    st.caption(_("**Share to the first token** (the attention sink, BertViz #131): the mean weight that queries 1 … n−1 "
                 "give token 0. Many heads of trained models park attention there when they have nothing to read: "
                 "softmax must give the row 1 in total, and the first token, seen by every query, takes the rest. "
                 "Entropy runs from 0 to ln {n} = {max}. Select a row to open that head above ↑.").format(
        n=n_tokens, max=number(math.log(max(n_tokens, 1)), ".2f")))
    shown = stats.copy()
    shown["sink_share"] = shown["sink_share"] * 100
    open_head = {"layer_key": "llm_layer", "head_key": "llm_head", "n_heads": n_heads}
    st.dataframe(shown, key="llm_stats", on_select=partial(callbacks.open_row, "llm_stats", **open_head,
                                                     then=partial(head_view.opened_by_tile, "llm_")),
                 selection_mode="single-row", hide_index=True, height=300, column_config={
                     "layer": st.column_config.NumberColumn(_("layer"), width=52),
                     "head": st.column_config.NumberColumn(_("head"), width=52),
                     "kv_head": st.column_config.NumberColumn(_("KV head"), width=64),
                     "entropy": st.column_config.NumberColumn(_("entropy (nats)"), format="%.2f"),
                     "mean_distance": st.column_config.NumberColumn(_("mean distance"), format="%.2f"),
                     "max_weight": st.column_config.ProgressColumn(_("max weight"), format="%.2f", min_value=0.0,
                                                                   max_value=1.0),
                     "sink_share": st.column_config.ProgressColumn(_("to the first token"), format="%.1f%%",
                                                                   min_value=0.0, max_value=100.0)})
    from transformer_core.records.serialize import csv_file

    download_button(st, "⬇ " + _("Statistics as CSV"), csv_file(stats.to_csv(index=False)), mime="text/csv",
                       file_name=f"{file_prefix}_head_stats.csv", key="llm_stats_csv")


def section(choice: Choice, prompt: str, summary: dict) -> None:
    """The section's title, then the fragment (the grid, its colour choice and the open head)."""
    st.subheader(_("Every head at a glance, one head stage by stage"))
    fragments.part("llm", grid_and_head, choice, prompt, summary["trace"], summary["grids"], summary["config"])
