"""What a heatmap's cells say beyond their colour.

* :func:`blank_overlays`: one-colour heatmaps laid over the cells the values leave blank, each with a hover of its
  own (a blank cell has none): blocked by the mask, a query row with no visible key, or hidden from view only (a
  special-token key the computation used as usual: the hover gives its value);
* :func:`add_cell_markers`: a transparent marker on every cell, for ``st.plotly_chart``'s click events.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..text.i18n import _, pgettext

MASKED_GREY, EMPTY_GREY = "#d9d9d9", "#b8b8b8"


def blank_overlays(*, blocked: np.ndarray, empty: np.ndarray, hidden: np.ndarray, values: np.ndarray, xs: list,
                   ys: list, xgap: int, ygap: int, row_title: str, col_title: str, empty_note: str) -> list[dict]:
    """Plotly heatmap traces (dicts) for the blank cells of a ``[rows, cols]`` heatmap on axes ``xs``, ``ys``.

    ``blocked``: cells the mask blocks (hover "masked"); ``empty``: blank cells of rows with no visible key (hover
    ``empty_note``); ``hidden``: cells blanked only in view (hover "hidden, not masked" and the cell's value from
    ``values``). All bool ``[rows, cols]``; a kind with no cell gets no trace. ``z`` is 1 on the cells, NaN
    elsewhere (float32)."""
    value = _("value")
    kinds = ((blocked, pgettext("blocked cell", "masked"), MASKED_GREY, None),
             (empty, empty_note, EMPTY_GREY, None),
             (hidden, _("hidden, not masked"), MASKED_GREY, values))
    traces = []
    for cells, text, colour, shown in kinds:
        if not cells.any():
            continue
        said = "" if shown is None else f"{value} %{{customdata:.4f}}<br>"
        trace = dict(type="heatmap", z=np.where(cells, np.float32(1), np.float32(np.nan)), x=xs, y=ys,
                     colorscale=[[0, colour], [1, colour]], zmin=0, zmax=1, showscale=False, hoverongaps=False,
                     xgap=xgap, ygap=ygap, name=text,
                     hovertemplate=f"{row_title} %{{y}}<br>{col_title} %{{x}}<br>{said}{text}<extra></extra>")
        if shown is not None:
            trace["customdata"] = np.asarray(shown, np.float32)
        traces.append(trace)
    return traces


def add_cell_markers(fig: go.Figure, labels: list[str], values: np.ndarray, hidden: np.ndarray | None = None,
                     hidden_values: np.ndarray | None = None) -> None:
    """A transparent marker on every cell, ``customdata = [query, key]``, so a click selects the cell.

    Clicking a heatmap cell does not reach Streamlit's ``on_select`` (streamlit #8760); a click on
    a scatter marker does (``clickmode="event+select"``). One marker per cell costs the browser
    time, so only small matrices get them (``stage.CELL_MARKERS_MAX``); the pickers always work.
    ``customdata`` is a plain list: a 2-D typed array would reach Streamlit's selection event as
    ``{"0": q, "1": k}`` objects rather than pairs. ``hidden`` cells (bool, blanked in view only) say so and
    give their value from ``hidden_values``.
    """
    n_rows, n_cols = values.shape
    qs, ks = np.divmod(np.arange(n_rows * n_cols), n_cols)
    flat = np.asarray(values, np.float64).ravel()
    masked, value = pgettext("blocked cell", "masked"), _("value")  # not the stage button's "masked"
    text = [masked if not np.isfinite(v) else f"{value} {v:.4f}" for v in flat]
    if hidden is not None:
        note = _("hidden, not masked")
        for i in np.flatnonzero(np.asarray(hidden, bool).ravel()):
            text[i] = f"{value} {float(np.ravel(hidden_values)[i]):.4f}<br>{note}"
    fig.add_trace(go.Scatter(
        x=[labels[k] for k in ks], y=[labels[q] for q in qs], customdata=np.stack([qs, ks], axis=1).tolist(),
        text=text, mode="markers", name="cells",
        showlegend=False, marker=dict(size=max(8, min(30, 360 // max(n_rows, 1))), symbol="square", opacity=0),
        selected=dict(marker=dict(opacity=0)), unselected=dict(marker=dict(opacity=0)),
        hovertemplate=_("query") + " %{y}<br>" + _("key") + " %{x}<br>%{text}<br><b>" + _("click to explain")
        + "</b><extra></extra>"))
    fig.update_layout(clickmode="event+select", hovermode="closest", dragmode=False)
