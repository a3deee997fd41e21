"""What attention really moves, on the MiniLM page: value-weighted norms, rollout and flow, a token-pair search
and head types.

Everything is computed only when asked for (the default page records only the weights, then one layer):

* ``stage=norms`` — ‖α_ij f_h(x_j)‖ of the open layer (:func:`norm_layer`, from that layer's captured
  ``weights`` and ``v`` and the checkpoint's W_O) and, in the overview, of every layer;
* ``view=rollout|flow|flow_raw`` — the sentence's rollout or flow (rows normalised as Abnar & Zuidema's code;
  ``flow_raw``: the maximum flows in capacity units) beside the last layer's mean weights;
* ``pair=i,j`` — all 72 heads ranked for one (query, key) pair; a click on a cell of the open head
  (or the two pickers) sets it;
* ``color=<score>`` — the overview's tiles fade by a head-type score; the table below sorts by it.

The all-layer data (weights and ‖f_h(x_j)‖ of every layer) is one model run, cached by value
(:func:`moves_data`). Callbacks here take keys only (never a run's data).
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

from transformer_core.analysis.head_types import ENCODER_SCORES, SCORES, SOURCES, head_type_scores
from transformer_core.analysis.rollout import (CSV_CORNER, FLOW_KINDS, FLOW_TOKEN_LIMIT, attention_flow,
                                               attention_rollout, layer_means)
from transformer_core.analysis.token_pair import pair_table
from transformer_core.analysis.value_norms import output_projections, split_output_projection, value_norms, with_norms
from transformer_core.figures import stage as figures
from transformer_core.figures.moves import across_layers_figure, score_overlay
from transformer_core.figures.overview import overview_figure, tiled_weights
from transformer_core.records.serialize import csv_file
from transformer_core.records.trace import Trace

from ..parts.head_view import STAGES
from ..parts.numbers import number
from ..shell.chart import chart
from ..shell.downloads import download_button
from ..shell.cache import memo
from ..shell.i18n import N_, _
from ..shell.markdown import plain
from ..shell.url import bind_url
from .compute import MAX_MINILM_TOKENS, holding, large, minilm_layer

PREFIX = "minilm_"
MINILM_STAGES = STAGES + ("norms",)
VIEWS = ("off", "rollout", "flow", "flow_raw")
VIEW_LABELS = {"off": N_("off"), "rollout": N_("rollout"), "flow": N_("flow"), "flow_raw": N_("raw flow")}


class PairOptions(Sequence):
    """``None`` and every ``(query, key)`` of an ``n``-token sentence, with an O(1) ``in``."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return 1 + self.n * self.n

    def __getitem__(self, index: int):
        if not 0 <= index < len(self):
            raise IndexError(index)
        return None if index == 0 else divmod(index - 1, self.n)

    def __contains__(self, value) -> bool:
        return value is None or (isinstance(value, tuple) and len(value) == 2
                                 and all(isinstance(v, int) and 0 <= v < self.n for v in value))


def pair_text(pair) -> str:
    """URL text of a pair: ``"3,5"``, or ``"none"``."""
    return "none" if pair is None else f"{pair[0]},{pair[1]}"


# ------------------------------------------------------------------ compute (cached by value)


@memo("encoder_layers")
@holding
def moves_data(sentences: tuple[str, ...], padding: bool) -> dict:
    """One MiniLM run recording every layer's ``weights`` and ``v``: ``{"trace": Trace (weights only),
    "fnorm": ‖f_h(x_j)‖ float32 [batch, layer, head, key_pos]}`` (f_h(x_j) = v_j^h W_O^h)."""
    from transformer_core.models.minilm_trace import run_minilm

    with st.spinner(_("Running MiniLM-L6 (every layer's weights and values) …")):
        trace = run_minilm(list(sentences), padding=padding, max_tokens=MAX_MINILM_TOKENS,
                           only=lambda name: name.endswith((".attention.weights", ".attention.v")))
    projections = output_projections(trace)
    fnorm = np.stack([value_norms(trace.stage("v", l), split_output_projection(projections[l][0], trace.n_heads))
                      for l in range(trace.n_layers)], axis=1).astype(np.float32)  # [batch, layer, head, key_pos]
    weights = {k: v for k, v in trace.stages.items() if k.endswith(".weights")}
    return {"trace": Trace(tokens=trace.tokens, lengths=trace.lengths, truncated=trace.truncated, mask=trace.mask,
                           stages=weights, settings=trace.settings), "fnorm": fnorm}


def _norms(data: dict, batch: int) -> np.ndarray:
    """‖α_ij f_h(x_j)‖ of every layer for sentence ``batch``: ``[layer, head, query_pos, key_pos]`` float32."""
    trace = data["trace"]
    weights = np.stack([trace.stage("weights", l)[batch] for l in range(trace.n_layers)])
    return (weights * data["fnorm"][batch][:, :, None, :]).astype(np.float32)


@memo("encoder_summaries")
@holding
def norm_tiles(sentences: tuple[str, ...], padding: bool, batch: int, hide: bool) -> tuple:
    """The overview's tiles of ‖α f(x)‖ (every layer) and the largest of them: ``((z, gutter, pool), top)``."""
    from transformer_core.analysis.head_stats import special_keys

    data = moves_data(sentences, padding)
    trace = data["trace"]
    norms = _norms(data, batch)
    one = Trace(tokens=(trace.tokens[batch],), lengths=(trace.lengths[batch],), truncated=(False,),
                mask=None if trace.mask is None else trace.mask[batch:batch + 1],
                stages={f"layers.{l}.attention.norms": norms[l][None] for l in range(len(norms))})
    tiles = tiled_weights(one, 0, special_keys(trace.tokens[batch]) if hide else None, stage="norms")
    top = float(np.nanmax(tiles[0])) if np.isfinite(tiles[0]).any() else 1.0
    return tiles, top if top > 0 else 1.0


@memo("encoder_summaries")
@holding
def head_type_table(sentences: tuple[str, ...], padding: bool, batch: int) -> pd.DataFrame:
    """Every head-type score of :data:`ENCODER_SCORES` for sentence ``batch``: one row per layer × head."""
    trace = moves_data(sentences, padding)["trace"]
    n = trace.lengths[batch]
    tokens, visible = trace.tokens[batch][:n], trace.visible(batch)[:n, :n]
    rows = []
    for layer in range(trace.n_layers):
        scores = head_type_scores(trace.stage("weights", layer)[batch, :, :n, :n], tokens, visible)
        rows += [{"layer": layer, "head": h, **{k: float(v[h]) for k, v in scores.items()}}
                 for h in range(trace.n_heads)]
    return pd.DataFrame(rows, columns=["layer", "head", *ENCODER_SCORES])


@memo("encoder_summaries")
@holding
def across(sentences: tuple[str, ...], padding: bool, batch: int, view: str) -> tuple[np.ndarray, np.ndarray]:
    """``(rollout or flow [n, n], last layer's mean weights [n, n])`` over the n real tokens of ``batch``.

    Raises:
        ValueError: flow of more than :data:`FLOW_TOKEN_LIMIT` tokens.
    """
    means = layer_means(moves_data(sentences, padding)["trace"], batch)
    if view in ("flow", "flow_raw"):
        with st.spinner(_("Computing the maximum flow of {n} token pairs …").format(n=means.shape[-1] ** 2)):
            values = attention_flow(means, normalise=view == "flow")  # flow: rows ÷ their sums (compute_flows)
    else:
        values = attention_rollout(means)
    return values, means[-1]


@memo("encoder_layers")
@holding
def norm_layer(sentences: tuple[str, ...], padding: bool, layer: int) -> Trace:
    """:func:`ui.minilm.compute.minilm_layer`'s trace plus ``layers.{layer}.attention.norms``."""
    base = minilm_layer(sentences, padding, layer)
    return with_norms(base, [layer], output_projections(base))


def layer_trace(sentences: tuple[str, ...], padding: bool, layer: int, stage: str) -> Trace:
    """The open layer's trace for the head view: with its norms when ``stage == "norms"``."""
    return norm_layer(sentences, padding, layer) if stage == "norms" else minilm_layer(sentences, padding, layer)


# ------------------------------------------------------------------ overview: norms and head types


def overview(fig, trace: Trace, sentences: tuple[str, ...], padding: bool, batch: int, hide: bool, color: str):
    """The page's overview figure, redrawn with ‖α f(x)‖ when the stage is ``norms``, faded by ``color``."""
    if bind_url(f"{PREFIX}stage", "stage", MINILM_STAGES, "weights") == "norms":
        tiles, top = norm_tiles(sentences, padding, batch, hide)
        meta = fig.layout.meta
        fig = overview_figure(trace, batch, height=fig.layout.height, n_layers=meta["n_layers"],
                              n_heads=meta["n_heads"], tiles=tiles, value_name="norm", zmax=top, of="norms")
        st.caption(_("Stage **‖α·f(x)‖**: the overview shows every head's value-weighted norms (what each key moves "
                     "into each query), coloured 0 – {top}, the largest of all 72 heads.").format(top=number(top, ".3g")))
    if color != "none":
        table = head_type_table(sentences, padding, batch)
        fig = score_overlay(fig, table[color].to_numpy().reshape(fig.layout.meta["n_layers"], -1), SCORES[color],
                            SOURCES[color])
        st.caption(_("Score: {source}.").format(source=_(SOURCES[color])))
        st.caption(_("Tiles fade as their **{score}** score falls; a red frame marks a score of 0.25 or more "
                     "(thicker = higher). Hover a tile's centre for its score; the table under the per-head statistics "
                     "sorts every head by it.").format(score=_(SCORES[color])))
    return fig


# ------------------------------------------------------------------ across layers: rollout and flow


def across_layers(trace: Trace, sentences: tuple[str, ...], padding: bool, batch: int) -> None:
    """``view=rollout|flow``: the sentence's rollout or flow beside the last layer's mean weights (one chart)."""
    key = f"{PREFIX}view"
    bind_url(key, "view", VIEWS, "off")
    st.subheader(_("Across all 6 layers: which input tokens reach each output"))
    view_names = {v: _(label) for v, label in VIEW_LABELS.items()}  # translated now
    view = st.segmented_control(_("Across layers"), VIEWS, key=key, required=True, format_func=view_names.get,
                                label_visibility="collapsed",
                                help=_("Rollout multiplies the layers' head-averaged weights, each mixed half and "
                                       "half with the residual connection; flow is the maximum flow through them, "
                                       "each row divided by its sum as Abnar & Zuidema's code does; raw flow keeps "
                                       "the maximum flows, in capacity units."))
    if view == "off":
        st.caption(_("One layer's weights say little about which input tokens reach the output after six layers and "
                     "their residual connections (Abnar & Zuidema 2020). Pick **rollout** or **flow**."))
        return
    n = trace.lengths[batch]
    if view in ("flow", "flow_raw") and n > FLOW_TOKEN_LIMIT:
        st.info(_("Attention flow is computed for sentences of up to {limit} tokens ([CLS] and [SEP] included); "
                  "sentence {b} has {n}. It solves n² maximum-flow problems, so its time grows as n⁴. Rollout works at "
                  "any length.").format(limit=FLOW_TOKEN_LIMIT, b=batch, n=n), icon=":material/timer:")
        return
    values, last = across(sentences, padding, batch, view)
    tokens = trace.tokens[batch][:n]
    fig = across_layers_figure(values, last, tokens, view, batch=batch)
    chart(fig, key=f"{PREFIX}across", config=figures.chart_config(
        figures.figure_filename(view, None, None, tokens), st.session_state.get("shared_image_format", "png")))
    rule = (r"R = \hat A_5 \cdots \hat A_0,\quad \hat A_l = \operatorname{rownorm}\big(\tfrac12\,"
            r"\operatorname{mean}_h A_l + \tfrac12 I\big)")
    raw = r"\operatorname{maxflow}\big((0, j) \to (6, i)\big)"
    st.latex(rule if view == "rollout" else
             (r"F_{ij} = \frac{" + raw + r"}{\sum_{j'} " + raw.replace("j)", "j')") + r"}" if view == "flow" else
              r"F_{ij} = " + raw) + r"\ \text{with capacities}\ \hat A_l")
    top = int(np.argmax(values.sum(0)))
    what = {"rollout": _("A share: each row sums to 1"),
            "flow": _("A share: each row of maximum flows is divided by its sum, as Abnar & Zuidema's compute_flows "
                      "does, so each row sums to 1"),
            "flow_raw": _("Raw maximum flows, in the units of the edge capacities (each Â row sums to 1): each value "
                          "is at most 1, but a row sums to more than 1 (flows from different inputs share edges)")}[view]
    st.caption(_("Rows: output positions after layer 5; columns: input tokens, all {n} real ones ([CLS] and [SEP] "
                 "included, [PAD] left out). {what}. Input {top} reaches the outputs most. Right: layer 5 alone, on the "
                 "same colour range.").format(n=n, what=what, top=plain(f"{top}: {tokens[top]}")))
    frame = pd.DataFrame(values, index=[f"{i}: {t}" for i, t in enumerate(tokens)],
                         columns=[f"{j}: {t}" for j, t in enumerate(tokens)])
    document = {"view": view, "unit": FLOW_KINDS.get(view, "share: rows sum to 1"), "tokens": list(tokens),
                "rows": "output position after the last layer",
                "columns": "input token", "values": values.tolist(), "last_layer_mean_weights": last.tolist()}
    csv_col, json_col = st.columns(2)
    download_button(csv_col, "⬇ " + _("{view} as CSV").format(view=view_names[view]),
                            data=csv_file(frame.to_csv(float_format="%.9g", index_label=CSV_CORNER)),
                            key=f"{PREFIX}across_csv",
                            file_name=figures.figure_filename(view, None, None, tokens, "csv"), mime="text/csv", width="stretch")
    download_button(json_col, "⬇ " + _("{view} and layer 5's mean weights as JSON").format(view=view_names[view]), data=json.dumps(document),
                             key=f"{PREFIX}across_json", file_name=figures.figure_filename(view, None, None, tokens,
                                                                                          "json"),
                             mime="application/json", width="stretch")


# ------------------------------------------------------------------ token pair and head-type tables


def open_ranked(event_key: str, order: tuple[tuple[int, int], ...]) -> None:
    """``on_select`` of a ranked table: row r opens head ``order[r]`` (``(layer, head)``)."""
    rows = ((st.session_state.get(event_key) or {}).get("selection") or {}).get("rows") or []
    if rows and 0 <= int(rows[0]) < len(order):
        st.session_state[f"{PREFIX}layer"], st.session_state[f"{PREFIX}head"] = order[int(rows[0])]


def _pick_pair() -> None:
    q, k = st.session_state.get(f"{PREFIX}pair_q"), st.session_state.get(f"{PREFIX}pair_k")
    st.session_state[f"{PREFIX}pair"] = (q, k) if q is not None and k is not None else None


def pair_search(trace: Trace, sentences: tuple[str, ...], padding: bool, batch: int) -> None:
    """``pair=i,j``: every layer × head for one (query, key) pair, ranked; a row opens that head."""
    ss = st.session_state
    tokens = trace.tokens[batch]
    n = len(tokens)
    key = f"{PREFIX}pair"
    pair = bind_url(key, "pair", PairOptions(n), None, to_text=pair_text)
    cell = (ss.get(f"{PREFIX}q"), ss.get(f"{PREFIX}k"))
    if ss.get("_minilm_cell_seen", cell) != cell and cell in PairOptions(n):  # a cell was clicked or picked
        ss[key] = pair = cell
        st.query_params["pair"] = pair_text(cell)
    ss["_minilm_cell_seen"] = cell
    if pair is not None:
        ss[f"{PREFIX}pair_q"], ss[f"{PREFIX}pair_k"] = pair
    st.subheader(_("One token pair across all 72 heads"))
    left, right = st.columns(2)
    fmt = lambda i: "—" if i is None else f"{i}: {tokens[i]}"  # noqa: E731
    left.selectbox(_("Query token"), [None, *range(n)], key=f"{PREFIX}pair_q", format_func=fmt, on_change=_pick_pair)
    right.selectbox(_("Key token"), [None, *range(n)], key=f"{PREFIX}pair_k", format_func=fmt, on_change=_pick_pair)
    if pair is None:
        st.caption(_("Pick a query and a key, or click a cell of the open head: every head's weight and "
                     "value-weighted norm for that pair, ranked."))
        return
    q, k = pair
    with large(sentences):  # every layer's weights are held while the table is made
        data = moves_data(sentences, padding)
        table = pair_table(np.stack([data["trace"].stage("weights", l)[batch] for l in range(data["trace"].n_layers)]),
                           _norms(data, batch), q, k)
        del data
    order = tuple((int(a), int(b)) for a, b in zip(table["layer"], table["head"]))
    st.caption(_("Query {q} → key {k}, sentence {b}: sorted by weight α (rank 1 = largest); the value-weighted norm "
                 "‖α·f(x)‖ has its own rank. **Select a row** to open that head.").format(
        q=plain(fmt(q)), k=plain(fmt(k)), b=batch))
    st.dataframe(table, key=f"{PREFIX}pair_table", hide_index=True, height=300, selection_mode="single-row",
                 on_select=partial(open_ranked, f"{PREFIX}pair_table", order), column_config={
                     "layer": st.column_config.NumberColumn(_("layer")),
                     "head": st.column_config.NumberColumn(_("head")),
                     "weight": st.column_config.ProgressColumn(_("weight α"), format="%.3f", min_value=0.0,
                                                               max_value=1.0),
                     "weight_rank": st.column_config.NumberColumn(_("rank (α)"), width="small"),
                     "norm": st.column_config.NumberColumn("‖α·f(x)‖", format="%.3f"),
                     "norm_rank": st.column_config.NumberColumn(_("rank (norm)"), width="small"),
                     "norm_share": st.column_config.ProgressColumn(
                         _("share of what moves into the query"), format="%.2f", min_value=0.0, max_value=1.0,
                         help=_("This key's norm ÷ the sum of the query row's norms in that head.")),
                 })


def head_types_table(sentences: tuple[str, ...], padding: bool, batch: int, color: str) -> None:
    """Every head's type scores, sorted by the overview's colour score; a row opens that head."""
    table = head_type_table(sentences, padding, batch)
    if color != "none":
        table = table.sort_values(color, ascending=False, kind="stable")
    order = tuple((int(a), int(b)) for a, b in zip(table["layer"], table["head"]))
    score = dict(format="%.2f", min_value=0.0, max_value=1.0)
    st.dataframe(table, key=f"{PREFIX}types", hide_index=True, height=300, selection_mode="single-row",
                 on_select=partial(open_ranked, f"{PREFIX}types", order),
                 column_config={"layer": st.column_config.NumberColumn(_("layer")),
                                "head": st.column_config.NumberColumn(_("head")),
                                **{k: st.column_config.ProgressColumn(_(SCORES[k]), **score) for k in ENCODER_SCORES}})
    st.caption(_("Previous-, next-token and self: TransformerLens's head detector (“mul”): the weight on key i − 1, "
                 "i + 1, i summed over every query row ÷ the total weight, so a perfect previous-token head on n tokens "
                 "scores (n − 1)/n ([CLS] has no previous token). Shares to [CLS] and to [SEP]/punctuation: mean "
                 "over real queries. Broadness: row entropy ÷ ln(visible keys), 0 = one key, 1 = even spread."))


def sections(trace: Trace, sentences: tuple[str, ...], padding: bool, batch: int, color: str) -> None:
    """The page's sections below the per-head statistics: head types (with ``color``), rollout/flow, token pair."""
    if color != "none":
        st.subheader(_("Head types, sorted by {score}").format(score=_(SCORES[color])))
        head_types_table(sentences, padding, batch, color)
    across_layers(trace, sentences, padding, batch)
    pair_search(trace, sentences, padding, batch)
