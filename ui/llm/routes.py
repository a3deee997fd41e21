"""Information-flow routes on the real-LLM page: which earlier tokens, through which heads and MLPs, a token's last
representation is built from (Ferrando & Voita 2024, as the LLM Transparency Tool draws them).

In a box opened on request (``?routes=1``): its contributions cost about a whole run of the model (every block
recomputed from the cached residual stream), paid once per prompt by whoever opens it; the token (``?route_pos=``)
and the threshold (``?threshold=``) are then served from them. A click on an attention edge opens that edge's
strongest head in the head view above.
"""
from __future__ import annotations

from functools import partial

import streamlit as st

from transformer_core.analysis.routes import DEFAULT_THRESHOLD, edge_rows, route_graph
from transformer_core.figures.routes import routes_figure
from transformer_core.figures.stage import chart_config

from ..parts import head_view
from ..parts.numbers import number
from ..shell import callbacks
from ..shell.cache import memo, per_trace
from ..shell.chart import chart, spec
from ..shell.i18n import _
from ..shell.lazy import lazy_expander
from ..shell.url import bind_url
from . import compute
from .catalog import Choice


@memo("llm_summaries")
def route_tables(choice: Choice, prompt: str) -> dict:
    """Every block's contributions for the information-flow routes of ``prompt``
    (:func:`~transformer_core.analysis.routes.decoder_tables`): each block recomputed once from the page's cached
    residual stream (:func:`ui.llm.compute.summary`; about one run of the model, 18 MB kept at 128 tokens)."""
    from transformer_core.analysis.routes import decoder_tables

    decoder = compute.face(choice)
    stream = compute.summary(choice, prompt)["stream"]
    with st.spinner(_("Measuring every block's contributions …")):
        return decoder_tables(decoder.module, stream, decoder.checkpoint)


THRESHOLDS = (0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.1, 0.15, 0.2)


def open_edge(event_key: str, n_layers: int, n_heads: int) -> None:
    """``on_select`` of the route: a click on an attention edge's diamond opens its strongest head above."""
    points = callbacks.selected_points(event_key)
    last = f"_last_edge_{event_key}"
    if isinstance(points, list | tuple) and not points:  # the same diamond clicked again: plotly deselected it
        picked = st.session_state.get(last)
    else:
        data = points[0].get("customdata") if points and isinstance(points[0], dict) else None
        ok = (isinstance(data, list | tuple) and len(data) >= 4 and all(isinstance(v, int) for v in data[:4])
              and 0 <= data[0] < n_layers and 0 <= data[1] < n_heads and 0 <= data[3] <= 4096
              and 0 <= data[2] <= data[3])
        picked = tuple(int(v) for v in data[:4]) if ok else None  # a tampered event is ignored
    if picked is not None:
        # the head, and the edge's cell (its query reads its key) explained in the head view
        st.session_state[last] = picked
        ss = st.session_state
        ss["llm_layer"], ss["llm_head"], ss["llm_k"], ss["llm_q"] = picked
        ss["llm_stage"] = "weights"
        head_view.opened_by_tile("llm_")


def _controls(tokens: tuple[str, ...], run: tuple) -> tuple[int, float]:
    n = len(tokens)
    positions = list(range(n))
    labels = [f"{j}: {t}" for j, t in enumerate(tokens)]
    ss = st.session_state
    if ss.get("llm_route_for") not in (None, run):  # another model or prompt: its own last token (also over ?route_pos=)
        ss["llm_route_pos"] = n - 1
    ss["llm_route_for"] = run
    if st.session_state.get("llm_route_pos", n - 1) not in positions:  # a shorter prompt: back to its last token
        st.session_state["llm_route_pos"] = n - 1
    bind_url("llm_route_pos", "route_pos", positions, n - 1, labels=labels)
    bind_url("llm_threshold", "threshold", THRESHOLDS, DEFAULT_THRESHOLD)
    left, right = st.columns([1.4, 1])
    position = left.selectbox(_("Route into the token"), positions, key="llm_route_pos",
                              format_func=lambda j: labels[j])
    threshold = right.select_slider(_("Contribution threshold"), THRESHOLDS, key="llm_threshold",
                                    help=_("Parts that contribute less to a representation are dropped; the rest "
                                           "are scaled to sum to 1 again (the LLM Transparency Tool's default "
                                           "is 0.04)."))
    return int(position), float(threshold)


def _strongest(rows: list[dict], tokens: tuple[str, ...]) -> str:
    attention = sorted((r for r in rows if r["kind"] == "attention" and r["from"] != r["to"]),
                       key=lambda r: -r["weight"])[:5]
    return "\n".join(
        "- " + _("layer {layer}: `{source}` → `{query}`, **{share}**, heads {heads}").format(
            layer=r["layer"], source=f"{r['from']}: {tokens[r['from']]}".replace("`", "ˋ"),
            query=f"{r['to']}: {tokens[r['to']]}".replace("`", "ˋ"),
            share=number(r["weight"], ".2f"),
            heads=", ".join(f"H{h}" for h, _s in sorted(r["heads"].items(), key=lambda it: -it[1])))
        for r in attention)


def _route_view(choice: Choice, prompt: str, tokens: tuple[str, ...], position: int, threshold: float,
                n_layers: int) -> tuple[list[dict], dict]:
    """The route's edge rows and its figure (as chart JSON) from the prompt's cached tables."""
    tables = route_tables(choice, prompt)
    graph = route_graph(tables["attn"], tables["attn_residual"], tables["mlp"], tables["mlp_residual"], position,
                        threshold)
    return edge_rows(graph), spec(routes_figure(graph, list(tokens[:position + 1]), n_layers, title=_(
        "Route into {token} (threshold {t})").format(token=f"{position}: {tokens[position]}", t=threshold),
        width_px=760))


def section(choice: Choice, prompt: str, summary: dict) -> None:
    """The box: token and threshold, the route beside its strongest edges."""
    box = lazy_expander(_("Information-flow routes: where a token's representation comes from"),
                        key="llm_routes_box", url="routes", icon=":material/account_tree:")
    if not box.open:
        return
    with box:
        tokens = summary["trace"].tokens[0]
        config = summary["config"]
        position, threshold = _controls(tokens, (choice, prompt))
        # the walk, its rows and the figure once per (prompt's run, token, threshold): a rerun for another reason
        # (a click elsewhere on the page) reuses them
        rows, figure = per_trace(summary["trace"], ("llm_routes", position, threshold),
                                       lambda: _route_view(choice, prompt, tokens, position, threshold,
                                                           config.n_layers))
        left, right = st.columns([2.2, 1], gap="medium")
        fmt = st.session_state.get("shared_image_format", "png")
        chart(figure, key="llm_routes", selection_mode="points", on_select=partial(open_edge, "llm_routes", config.n_layers, config.n_heads),
              config=chart_config(f"{choice.slug}_routes", fmt), target=left)
        with right:
            st.markdown(_("**Strongest attention edges** (another token's stream moved in):"))
            st.markdown(_strongest(rows, tokens) or _("none above the threshold"))
            st.caption(_("A block's parts — each head moving each earlier token, the MLP, the residual — each "
                         "contribute to the stream it writes by how close they are to it: max(0, ‖y‖₁ − ‖y − part‖₁), "
                         "normalised to sum to 1 (Ferrando & Voita 2024). Blue lines are attention, orange squares "
                         "MLPs, grey the residual. **Click a diamond** to open that edge's strongest head above."))
