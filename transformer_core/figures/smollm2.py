"""Figures of the SmolLM2 page: one colour per head for the 30 × 9 heads, the ranked heads, and where the final
position of a prompt attends in chosen heads.

Pure builders (NumPy in, ``go.Figure`` out). The head grid follows :mod:`~transformer_core.figures.overview`'s click
convention: trace 1 holds a transparent marker on every cell with ``customdata = [layer, head]``, so
:func:`~transformer_core.figures.overview.picked_tile` reads a click (clicking a ``go.Heatmap`` cell does not reach
Streamlit, streamlit #8760). ``layout.meta["stage"]`` is ``head_grid`` / ``llm_rank`` / ``llm_attend``.

Shape legend: layer (30), head (9), pos.
"""
from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from ..text.i18n import _
from .ablation import top_head_bars
from .stage import SEQUENTIAL



def head_grid_figure(values: np.ndarray, *, value_name: str, zmax: float = 1.0, n_kv_group: int = 3,
                     highlight: tuple[int, int] | None = None, height: int = 560, fmt: str = ".2f") -> go.Figure:
    """``values [layer, head]`` as one cell per head (layer rows, head columns), coloured 0 … ``zmax``; thin white
    lines between the key/value groups of ``n_kv_group`` query heads; ``highlight`` framed in red."""
    values = np.asarray(values, np.float32)
    n_layers, n_heads = values.shape
    z = np.where(np.isfinite(values), values, np.nan)
    text = [[("—" if not np.isfinite(v) else format(float(v), fmt)) for v in row] for row in values]
    # the hover names layer and head from customdata: %{y} gives the y axis's tick text ("layer 2") where there is one
    heat = go.Heatmap(z=z, x=np.arange(n_heads), y=np.arange(n_layers), zmin=0.0, zmax=zmax, colorscale=SEQUENTIAL,
                      text=text, hoverongaps=False, xgap=1, ygap=1,
                      customdata=[[[layer, head] for head in range(n_heads)] for layer in range(n_layers)],
                      hovertemplate=_("layer {layer}, head {head}").format(layer="%{customdata[0]}",
                                                                           head="%{customdata[1]}")
                      + f"<br>{html.escape(value_name)} %{{text}}<extra></extra>",
                      colorbar=dict(title=dict(text=html.escape(value_name), side="right"), thickness=10, len=0.9))
    cells = [(layer, head) for layer in range(n_layers) for head in range(n_heads)]
    centres = go.Scatter(
        x=[h for _l, h in cells], y=[lay for lay, _h in cells], customdata=np.array(cells, dtype=np.int16),
        mode="markers", showlegend=False, name="open", marker=dict(size=14, opacity=0, color="white"),
        selected=dict(marker=dict(opacity=0)), unselected=dict(marker=dict(opacity=0)),
        hovertemplate=_("layer {layer}, head {head}").format(layer="%{customdata[0]}", head="%{customdata[1]}")
        + "<br><b>" + _("click to open") + "</b><extra></extra>")
    shapes = [dict(type="line", xref="x", yref="paper", x0=g - 0.5, x1=g - 0.5, y0=0, y1=1,
                   line=dict(color="white", width=4)) for g in range(n_kv_group, n_heads, n_kv_group)]
    if highlight is not None:
        lay, h = highlight
        shapes.append(dict(type="rect", xref="x", yref="y", x0=h - 0.5, x1=h + 0.5, y0=lay - 0.5, y1=lay + 0.5,
                           line=dict(color="#ff4b4b", width=3)))
    groups = [dict(x=(g + (n_kv_group - 1) / 2), y=0, xref="x", yref="paper", yanchor="top", showarrow=False,
                   text=_("KV {kv}").format(kv=g // n_kv_group), font=dict(size=11, color="#555"))
              for g in range(0, n_heads, n_kv_group)]
    fig = go.Figure(data=[heat, centres])
    fig.update_layout(
        height=height, margin=dict(l=60, r=10, t=50, b=26), plot_bgcolor="#d9d9d9", shapes=shapes, annotations=groups,
        clickmode="event+select", hovermode="closest", dragmode=False, hoverdistance=1,
        xaxis=dict(range=[-0.5, n_heads - 0.5], tickmode="array", tickvals=list(range(n_heads)),
                   ticktext=[str(h) for h in range(n_heads)], side="top", showgrid=False, zeroline=False,
                   fixedrange=True, title=dict(text=_("head"), standoff=2)),
        yaxis=dict(range=[n_layers - 0.5, -0.5], tickmode="array", tickvals=list(range(0, n_layers, 2)),
                   ticktext=[_("layer {layer}").format(layer=lay) for lay in range(0, n_layers, 2)], showgrid=False,
                   zeroline=False, fixedrange=True),
        meta={"stage": "head_grid", "value": value_name, "n_layers": n_layers, "n_heads": n_heads,
              "highlight": list(highlight) if highlight is not None else None})
    return fig


def rank_figure(effect: np.ndarray, target: str, top: int = 15, height: int = 400) -> go.Figure:
    """The ``top`` heads whose ablation alone lowers p(``target``) most: bars of ``effect [layer, head]`` (intact −
    ablated probability), largest first; every head when the model has at most ``top``."""
    effect = np.asarray(effect, np.float64)
    fig, names = top_head_bars(effect, top, "{:+.3f}",
                               _("{head} alone: p falls by {value}").format(head="%{y}", value="%{x:.4f}"))
    title = (_("Each of the {n} heads ablated alone: the {top} that lower p({target}) most") if effect.size > top
             else _("Each of the {n} heads ablated alone, by how much p({target}) falls"))  # a small model: all
    fig.update_layout(
        title=dict(text=title.format(n=effect.size, top=top, target=html.escape(target)), font=dict(size=13), x=0),
        height=height, margin=dict(l=60, r=50, t=40, b=30), yaxis=dict(autorange="reversed", type="category"),
        xaxis=dict(title=_("p intact − p ablated"), rangemode="tozero"),
        meta={"stage": "llm_rank", "order": names, "target": target})
    return fig


def attend_figure(rows: np.ndarray, heads: list[str], tokens: list[str], height: int | None = None) -> go.Figure:
    """Where the last position attends in each of ``heads``: ``rows [head, key_pos]`` of attention weights, one row
    per head, keys labelled with ``tokens``."""
    rows = np.asarray(rows, np.float32)
    labels = [f"{i}: {html.escape(t)}" for i, t in enumerate(tokens)]
    fig = go.Figure(go.Heatmap(
        z=rows, x=list(range(len(tokens))), y=list(range(len(heads))), zmin=0.0, zmax=1.0, colorscale=SEQUENTIAL,
        customdata=np.array([[labels[j] for j in range(len(tokens))] for _h in heads], dtype=object),
        hovertemplate="%{customdata}<br>" + _("weight") + " %{z:.3f}<extra></extra>", xgap=1, ygap=1,
        colorbar=dict(title=dict(text=_("weight"), side="right"), thickness=10)))
    fig.update_layout(
        height=height or 90 + 30 * len(heads), margin=dict(l=60, r=10, t=30, b=90),
        xaxis=dict(tickmode="array", tickvals=list(range(len(tokens))), ticktext=[html.escape(t) for t in tokens],
                   tickangle=-45, showgrid=False, zeroline=False),
        yaxis=dict(tickmode="array", tickvals=list(range(len(heads))), ticktext=heads, autorange="reversed",
                   showgrid=False, zeroline=False),
        title=dict(text=_("Where the last token attends in these heads"), font=dict(size=13), x=0),
        meta={"stage": "llm_attend", "heads": heads})
    return fig
