"""The information-flow route of one token (:mod:`transformer_core.analysis.routes`), drawn layer by layer.

Tokens run left to right, layers bottom to top: a dot is a residual-stream state on the route (``x`` entering a
block, at a whole layer; ``a`` after its attention, half a layer up), a blue line an attention edge (the earlier
token's stream moved by the block's heads), a small orange square an MLP, a grey line the residual. Line width and
opacity follow the edge's contribution. Each attention edge has a clickable diamond at its middle whose
``customdata`` is ``[layer, head, from, to, share]`` (the head that contributes most to it), so a page can open that
head. ``layout.meta["view"]`` is ``"routes"``.

Shape legend: layer, pos.
"""
from __future__ import annotations

import networkx as nx
import plotly.graph_objects as go

from ..text.i18n import _
from .ticks import fitted_positions
from .writes import _esc

ATTENTION, MLP, RESIDUAL = "#2166ac", "#e08214", "#9e9e9e"
WIDTHS = (0.15, 0.3, 0.6)  # contribution bins: under 0.15, under 0.3, under 0.6, above: thin to thick lines
_LEVEL = {"x": 0.0, "a": 0.5, "m": 0.75}
_OFFSET = {"x": 0.0, "a": 0.0, "m": 0.28}  # an MLP's square sits right of its token's column


def _point(node: tuple) -> tuple[float, float]:
    kind, layer, pos = node
    return pos + _OFFSET[kind], layer + _LEVEL[kind]


def _bin(weight: float) -> int:
    return sum(weight >= w for w in WIDTHS)


def routes_figure(graph: nx.DiGraph, tokens: list[str], n_layers: int, *, title: str, height: int = 600,
                  width_px: float = 600.0) -> go.Figure:
    """Draw ``graph`` (:func:`~transformer_core.analysis.routes.route_graph`) over ``tokens`` (readable labels, one
    per position) and ``n_layers`` blocks. ``width_px``: the plot's width on screen, to thin the token labels."""
    n = len(tokens)
    lines: dict[tuple[str, int], tuple[list, list]] = {}
    mids_x, mids_y, mids_data, mids_text = [], [], [], []
    for u, v, data in graph.edges(data=True):
        kind = "mlp" if "m" in (u[0], v[0]) else data["kind"]
        (x0, y0), (x1, y1) = _point(u), _point(v)
        xs, ys = lines.setdefault((kind, _bin(data["weight"])), ([], []))
        xs += [x0, x1, None]
        ys += [y0, y1, None]
        if kind == "attention" and data.get("heads"):
            head = max(data["heads"].items(), key=lambda item: item[1])[0]
            layer, j, i = u[1], u[2], v[2]
            mids_x.append((x0 + x1) / 2)
            mids_y.append((y0 + y1) / 2)
            mids_data.append([layer, head, j, i, round(data["weight"], 4)])
            heads = ", ".join(f"H{h} {s:.2f}" for h, s in sorted(data["heads"].items(), key=lambda it: -it[1]))
            mids_text.append(_("layer {layer}: {source} → {query}").format(
                layer=layer, source=f"{j}: {_esc(tokens[j])}", query=f"{i}: {_esc(tokens[i])}")
                + "<br>" + _("contribution {share} (heads: {heads})").format(share=f"{data['weight']:.2f}",
                                                                            heads=heads)
                + "<br>" + _("click: open layer {layer} head {head}").format(layer=layer, head=head))
    traces = []
    names = {"attention": _("attention"), "mlp": "MLP", "residual": _("residual")}
    colors = {"attention": ATTENTION, "mlp": MLP, "residual": RESIDUAL}
    for (kind, level), (xs, ys) in sorted(lines.items()):
        traces.append(go.Scatter(x=xs, y=ys, mode="lines", hoverinfo="skip", name=names[kind],
                                 legendgroup=kind, showlegend=False,
                                 line=dict(color=colors[kind], width=1 + 2 * level),
                                 opacity=0.35 + 0.2 * level))
    states = [node for node in graph.nodes if node[0] in ("x", "a")]
    traces.append(go.Scatter(x=[_point(s)[0] for s in states], y=[_point(s)[1] for s in states], mode="markers",
                             hoverinfo="skip", showlegend=False, marker=dict(size=3, color="#616161")))
    mlps = [node for node in graph.nodes if node[0] == "m"]
    traces.append(go.Scatter(x=[_point(m)[0] for m in mlps], y=[_point(m)[1] for m in mlps], mode="markers",
                             hoverinfo="skip", showlegend=False, marker=dict(size=7, symbol="square", color=MLP)))
    traces.append(go.Scatter(x=mids_x, y=mids_y, mode="markers", customdata=mids_data, text=mids_text,
                             hovertemplate="%{text}<extra></extra>", showlegend=False,
                             marker=dict(size=9, symbol="diamond", color=ATTENTION, line=dict(width=1, color="white"))))
    fig = go.Figure(data=traces)
    ticks = fitted_positions(n, width_px, 11)
    fig.update_layout(
        title=dict(text=_esc(title), font=dict(size=13), x=0), height=height, dragmode=False,
        margin=dict(l=70, r=10, t=40, b=10), plot_bgcolor="white", hovermode="closest",
        xaxis=dict(range=[-0.6, n - 0.4], tickmode="array", tickvals=ticks, fixedrange=True, automargin=True,
                   ticktext=[f"{j}: {_esc(tokens[j])}" for j in ticks], tickangle=-45, showgrid=False,
                   zeroline=False),
        yaxis=dict(range=[-0.5, n_layers + 0.5], tickmode="array", fixedrange=True, zeroline=False,
                   tickvals=[0] + list(range(5, n_layers, 5)) + [n_layers],
                   ticktext=[_("embeddings")] + [_("layer {layer}").format(layer=lay) for lay in range(5, n_layers, 5)]
                   + [_("output")], gridcolor="#eeeeee"),
        meta={"view": "routes", "n_layers": n_layers, "positions": n, "edges": graph.number_of_edges()})
    return fig
