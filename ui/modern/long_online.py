"""The long-inputs tab (a sliding window and sinks on SmolLM2: the top-5 with the first token dropped and kept) and
the online-softmax tab (FlashAttention's tiles, one step at a time, with the running max m and sum l)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from transformer_core.analysis.long_inputs import cache_rows_needed
from transformer_core.figures import modern as figs
from transformer_core.figures.stage import chart_config, label
from transformer_core.models.gguf_weights import SmolLM2Unavailable

from ..parts.numbers import number
from ..shell.chart import chart
from ..shell import url
from ..shell.i18n import N_, _, language
from ..shell.markdown import plain
from . import compute
from .export import json_download

MASKS = {"none": N_("no mask"), "causal": N_("causal"), "window": N_("causal, window 4"),
         "sink": N_("window 4 + 1 sink")}


def _top_table(rows, title: str) -> pd.DataFrame:
    # a data table shows its cells as plain text: no Markdown escapes (``\:`` would be shown as typed)
    return pd.DataFrame([{title: f"{t}  {number(p, '.1%')}"} for t, _i, p in rows])


def draw_long() -> None:
    try:
        text = compute.long_input_ids()
    except SmolLM2Unavailable as err:
        st.warning(_("SmolLM2 cannot be loaded: {error}").format(error=plain(str(err))), icon=":material/warning:")
        return
    n = len(text["ids"])
    url.bind_url("modern_window", "window", range(1, n), n // 2)
    url.bind_url("modern_sinks", "sinks", range(0, 5), 1)
    c1, c2 = st.columns(2)
    window = c1.select_slider(_("Window w (keys each token sees, itself included)"), range(1, n), key="modern_window")
    sinks = c2.select_slider(_("Sinks (first tokens always kept)"), range(0, 5), key="modern_sinks")
    if language() != "en":
        st.caption(_("The sentence stays English: SmolLM2 learned mostly English, and after a Chinese sentence its "
                     "top five are mostly pieces of characters, so what the window changes would not show."))
    with st.spinner(_("Running SmolLM2 with the window…")):
        out = compute.window_run(window, sinks)
    left, right = st.columns([1, 1.4])
    labels = [label(t, i) for i, t in enumerate(text["labels"])]
    chart(figs.mask_panel(out["mask"], labels, labels, _("Window {w} + {s} sink(s)").format(w=window, s=sinks),
                          window=window, sinks=sinks), key="modern_window_mask",
          config=chart_config("window_mask"), target=left)
    cols = right.columns(3)
    for col, key, title in zip(cols, ("full", "window", "sinks"),
                               (_("every key"), _("window {w}").format(w=window),
                                _("window {w} + {s} sink(s)").format(w=window, s=sinks))):
        col.dataframe(_top_table(out[key], title), hide_index=True, width="stretch", key=f"modern_top_{key}")
    right.markdown(_("The last token's window has dropped the first **{d}** token(s). KL(every key ‖ window) = "
                     "**{kw}** nats; with the sinks **{ks}** nats. Same top token: window {tw}, with sinks {ts}.").format(
        d=out["dropped"], kw=number(out["kl_window"], ".3f"), ks=number(out["kl_sinks"], ".3f"),
        tw=_("yes") if out["same_top1_window"] else _("no"), ts=_("yes") if out["same_top1_sinks"] else _("no")))
    right.caption(_("At SmolLM2's 8,192 tokens a cache keeps {full:,} rows per layer; with a window of 4,096 and 4 "
                    "sinks, {windowed:,}.").format(full=cache_rows_needed(8192, None),
                                                    windowed=cache_rows_needed(8192, 4096, 4)))
    json_download(right, {"window": window, "sinks": sinks, "tokens": text["labels"], **out},
                  f"long_inputs_w{window}_s{sinks}", "modern_long_json")
    st.markdown(_("With a **sliding window** of w keys (Mistral 7B) each token sees only itself and the w − 1 before "
                  "it, so the cache never holds more than w rows per layer. Once the window has moved past the first "
                  "token, trained models lose their footing: they park much attention on the first tokens (the "
                  "**attention sinks** of Xiao et al. 2024). Keeping those few in view repairs most of it. SmolLM2 on "
                  "one sentence, the window applied in all 30 layers:"))


def draw_online() -> None:
    url.bind_url("modern_n", "n", range(6, 25), 12)
    url.bind_url("modern_bq", "bq", range(1, 9), 4)
    url.bind_url("modern_bk", "bk", range(1, 9), 3)
    url.bind_url("modern_mask", "mask", tuple(MASKS), "window")
    c1, c2, c3, c4, c5 = st.columns([1, 0.8, 0.8, 1.2, 1.6])
    n = c1.select_slider(_("Tokens"), range(6, 25), key="modern_n")
    bq = c2.select_slider("B_q", range(1, 9), key="modern_bq")
    bk = c3.select_slider("B_k", range(1, 9), key="modern_bk")
    mask_kind = c4.selectbox(_("Mask"), tuple(MASKS), key="modern_mask", format_func={k: _(v) for k, v in MASKS.items()}.get)
    data = compute.online(n, bq, bk, mask_kind)
    steps = data["steps"]
    url.bind_url("modern_tile", "tile", range(1, len(steps) + 1), 1)
    tile = c5.select_slider(_("Tile (in the order computed)"), range(1, len(steps) + 1), key="modern_tile")
    step = steps[tile - 1]
    (r0, r1), (c0, c1_) = step["rows"], step["cols"]
    done = [(s["rows"], s["cols"], s["skipped"]) for s in steps[:tile - 1]]
    left, right = st.columns([1.1, 1])
    labels = [f"{i}" for i in range(n)]
    chart(figs.tile_figure(data["scores"], data["visible"], labels, (r0, r1), (c0, c1_), done,
                           _("Tile {t} of {all}: queries {r0}–{r1}, keys {c0}–{c1}").format(
                               t=tile, all=len(steps), r0=r0, r1=r1 - 1, c0=c0, c1=c1_ - 1),
                           tile=tile), key="modern_tiles", config=chart_config("online_tiles"), target=left)
    if step["skipped"]:
        right.info(_("Every cell of this tile is blocked by the mask: it is skipped, m and l stay as they were."),
                   icon=":material/block:")
    table = pd.DataFrame({_("query"): list(range(r0, r1)), "m": [number(x, ".3f") for x in step["m"]],
                          "l": [number(x, ".3f") for x in step["l"]],
                          _("correction"): [number(x, ".3f") if x > 0 else "—" for x in step["rescale"]],
                          _("output so far"): [number(x, ".3f") for x in step["output"][:, 0]],
                          _("final"): [number(x, ".3f") for x in data["plain"][r0:r1, 0]]})
    right.dataframe(table, hide_index=True, width="stretch", key="modern_running")
    right.markdown(_("After the last tile: largest |tiled − plain softmax attention| = **{d}**; without the correction "
                     "**{w}**. Working memory: tiles {t:,} bytes, the whole score and weight matrices {p:,} bytes. "
                     "Tiles computed {c}, skipped {s}.").format(
        d=number(data["diff"], ".1e"), w=number(data["diff_wrong"], ".2g"), t=data["peak_tiled"], p=data["peak_plain"],
        c=data["computed"], s=data["skipped"]))
    json_download(right, {"tokens": n, "B_q": bq, "B_k": bk, "mask": mask_kind, **data},
                  f"online_softmax_{n}_{bq}x{bk}", "modern_online_json")
    right.caption(_("Output columns: dimension 0 of the output after this tile, and of the plain computation. "
                    "Correction — : nothing summed yet (m was −∞). m = −∞ is shown −∞: the row has seen no visible key."))
    st.markdown(_("The score matrix is never held whole: queries go in blocks of B_q rows, keys in blocks of B_k. For "
                  "each query row the tile keeps a running maximum **m** and a running sum **l** of exp(score − m), and "
                  "a running output. When a tile brings a larger maximum, what was summed so far is multiplied by "
                  "exp(m_old − m_new) (the correction), so every term ends up measured against the same maximum. A "
                  "tile the mask blocks entirely is skipped."))
