"""Figures of what the heads write: direct logit attribution (layer × head, with each layer's MLP), the logit lens
(layers × positions, the top token in each cell) and activation patching (layer × head, layer × position).

Pure builders (NumPy in, ``go.Figure`` out); words through :func:`~transformer_core.text.i18n._`, token labels escaped
for Plotly's HTML. ``layout.meta["view"]`` is ``"dla"``, ``"logit_lens"`` or ``"patching"``.

Shape legend: layer, head, row (layer + 1), pos.
"""
from __future__ import annotations

import html
import math

import numpy as np
import plotly.graph_objects as go

from ..text.i18n import _
from ..text.tokenize import show_controls
from .stage import SEQUENTIAL
from .text_size import display_width, text_px

DIVERGING = "RdBu"  # negative red, positive blue; zmid 0
CELL_CHARS = 7  # a logit-lens cell shows at most this many characters of its top token (the hover has it whole)
# The logit lens's rows: 18 px each, so a cell's 10-px top token reads at 1280×720. At a fixed 620 px, SmolLM2's 31
# rows were 16 px, 15 under a prompt of long words (their tilted position labels took the rows' room), and a deeper
# model's rows would be thinner still. A position label keeps at most LENS_LABEL_COLUMNS columns of its token (the
# hover has it whole), so no label eats the rows: SmolLM2's whole figure stays within a 720-px screen.
LENS_ROW_PX = 18
LENS_LABEL_COLUMNS = 12  # a CJK character counts two (text_size.display_width)
LENS_TOP_PX = 40  # the title's band
TICK_FONT_PX = 12  # Plotly's default tick label size


def _esc(text: str) -> str:
    """Plotly's text is HTML-like: escape <, > and & (it shows &quot; literally, so quotes stay as they are); a
    control character (a checkpoint's raw vocabulary can hold one) is shown as its picture, which plotly.js draws
    where the character itself broke the image export."""
    return html.escape(show_controls(str(text)), quote=False)


def _short(label: str, chars: int = CELL_CHARS) -> str:
    return label if len(label) <= chars else label[:chars - 1] + "…"


def _cut(label: str, columns: int) -> str:
    """``label`` cut to at most ``columns`` display columns, "…" the last when cut."""
    if display_width(label) <= columns:
        return label
    while display_width(label) > columns - 1:
        label = label[:-1]
    return label + "…"


def _tilted_px(labels: list[str], font_px: float = TICK_FONT_PX) -> int:
    """How far below the plot the longest of ``labels`` reaches, drawn at −45° under its tick: its width and its
    height projected on the vertical, the tick and a gap."""
    longest = max((text_px(label, font_px) for label in labels), default=0.0)
    return math.ceil((longest + font_px) * math.sqrt(0.5)) + 12


def _symmetric(values: np.ndarray) -> float:
    finite = np.abs(values[np.isfinite(values)])
    return float(finite.max()) if finite.size and finite.max() > 0 else 1.0


def dla_figure(heads: np.ndarray, mlps: np.ndarray, *, title: str, height: int = 560) -> go.Figure:
    """``heads [layer, head]`` and ``mlps [layer]`` (logit units) as one grid: head columns, then an MLP column;
    blue helps the target, red the contrast."""
    n_layers, n_heads = heads.shape
    z = np.concatenate([heads, mlps[:, None]], axis=1).astype(np.float64)
    names = [_("head {head}").format(head=h) for h in range(n_heads)] + ["MLP"]
    custom = [[[layer, names[c]] for c in range(n_heads + 1)] for layer in range(n_layers)]
    limit = _symmetric(z)
    heat = go.Heatmap(z=z, x=list(range(n_heads + 1)), y=list(range(n_layers)), zmid=0, zmin=-limit, zmax=limit,
                      colorscale=DIVERGING, xgap=1, ygap=1, customdata=custom,
                      hovertemplate=_("layer {layer}, {part}").format(layer="%{customdata[0]}",
                                                                      part="%{customdata[1]}")
                      + "<br>" + _("direct effect on the logit difference") + " %{z:+.3f}<extra></extra>",
                      colorbar=dict(title=dict(text=_("logit"), side="right"), thickness=10, len=0.9))
    fig = go.Figure(data=[heat])
    fig.update_layout(
        # the title at the very top of the figure, the top axis's ticks and title under it: they never overlap
        title=dict(text=_esc(title), font=dict(size=13), x=0, y=1, yref="container", yanchor="top", pad=dict(t=6)),
        height=height, margin=dict(l=60, r=10, t=84, b=20), plot_bgcolor="#d9d9d9", dragmode=False,
        xaxis=dict(tickmode="array", tickvals=list(range(n_heads + 1)),
                   ticktext=[str(h) for h in range(n_heads)] + ["MLP"], side="top", fixedrange=True,
                   title=dict(text=_("head"), standoff=2)),
        yaxis=dict(range=[n_layers - 0.5, -0.5], tickmode="array", tickvals=list(range(0, n_layers, 2)),
                   ticktext=[_("layer {layer}").format(layer=lay) for lay in range(0, n_layers, 2)], fixedrange=True),
        meta={"view": "dla", "n_layers": n_layers, "n_heads": n_heads})
    return fig


def lens_figure(target_prob: np.ndarray, top_labels: list[list[str]], tokens: list[str], *, target: str,
                first: int = 0, height: int | None = None) -> go.Figure:
    """The logit lens: ``target_prob [row, pos]`` coloured 0–1 with each cell's top token written in it; rows
    ``embeddings, after layer 0 … after layer n − 1`` from the top; columns the tokens (positions ``first …``).

    ``height`` (px): by default as tall as :data:`LENS_ROW_PX` a row needs, with the title above and the tilted
    position labels (at most :data:`LENS_LABEL_COLUMNS` columns of a token) below: 31 rows are 670–700 px."""
    rows, n = target_prob.shape
    row_names = [_("embeddings")] + [_("after layer {layer}").format(layer=i) for i in range(rows - 1)]
    text = [[_esc(_short(label)) for label in row] for row in top_labels]
    whole = [[_esc(label) for label in row] for row in top_labels]
    x = [f"{first + j}: {_esc(t)}" for j, t in enumerate(tokens)]  # whole, for the hover
    labels = [f"{first + j}: {_cut(show_controls(str(t)), LENS_LABEL_COLUMNS)}" for j, t in enumerate(tokens)]
    shown, below = [_esc(label) for label in labels], _tilted_px(labels)
    if height is None:
        height = LENS_TOP_PX + rows * LENS_ROW_PX + below
    heat = go.Heatmap(z=target_prob, x=x, y=row_names, zmin=0, zmax=1, colorscale=SEQUENTIAL, xgap=1, ygap=1,
                      text=text, texttemplate="%{text}", textfont=dict(size=10), customdata=whole,
                      hovertemplate="%{y} · %{x}<br>" + _("top token") + " %{customdata}<br>"
                      + _("p({target})").format(target=_esc(target)) + " %{z:.3f}<extra></extra>",
                      colorbar=dict(title=dict(text=_("p({target})").format(target=_esc(target)), side="right"),
                                    thickness=10, len=0.9))
    fig = go.Figure(data=[heat])
    fig.update_layout(
        title=dict(text=_("Logit lens: each layer's residual stream through the final norm and W_U — colour "
                          "p({target}), text the top token").format(target=_esc(target)),
                   font=dict(size=13), x=0),
        height=height, margin=dict(l=110, r=10, t=LENS_TOP_PX, b=below), dragmode=False,
        # automargin stays as a safety net: a label wider than estimated takes room from the rows, not the screen
        xaxis=dict(side="bottom", tickangle=-45, fixedrange=True, automargin=True, tickmode="array", tickvals=x,
                   ticktext=shown),
        yaxis=dict(autorange="reversed", fixedrange=True, tickmode="array",
                   tickvals=row_names[::3] + ([row_names[-1]] if (rows - 1) % 3 else []),
                   ticktext=row_names[::3] + ([row_names[-1]] if (rows - 1) % 3 else [])),
        meta={"view": "logit_lens", "rows": rows, "positions": n, "first": first})
    return fig


def patching_figure(scores: np.ndarray, *, of: str, x_labels: list[str], x_title: str, title: str,
                    height: int = 560) -> go.Figure:
    """Normalised patching scores ``[layer, column]`` of ``of`` (``"heads"`` or ``"positions"``): 1 restores the clean
    answer, 0 changes nothing; coloured −1 … 1 around 0."""
    n_layers, n_cols = scores.shape
    limit = max(1.0, _symmetric(scores))
    heat = go.Heatmap(z=scores, x=list(range(n_cols)), y=list(range(n_layers)), zmid=0, zmin=-limit, zmax=limit,
                      colorscale=DIVERGING, xgap=1, ygap=1, customdata=[[x_labels[c] for c in range(n_cols)]] * n_layers,
                      hovertemplate=_("layer {layer}").format(layer="%{y}") + ", %{customdata}<br>"
                      + _("share of the clean logit difference restored") + " %{z:.3f}<extra></extra>",
                      colorbar=dict(title=dict(text=_("restored"), side="right"), thickness=10, len=0.9))
    fig = go.Figure(data=[heat])
    step = max(1, n_cols // 24)
    fig.update_layout(
        # the title at the very top of the figure, the top axis's ticks and title under it: they never overlap
        title=dict(text=_esc(title), font=dict(size=13), x=0, y=1, yref="container", yanchor="top", pad=dict(t=6)),
        height=height, margin=dict(l=60, r=10, t=84, b=20), plot_bgcolor="#d9d9d9", dragmode=False,
        xaxis=dict(tickmode="array", tickvals=list(range(0, n_cols, step)),
                   ticktext=[_esc(x_labels[c]) for c in range(0, n_cols, step)], fixedrange=True, automargin=True,
                   side="top" if n_cols <= 9 else "bottom", tickangle=-45 if n_cols > 9 else 0,
                   title=dict(text=_esc(x_title), standoff=2)),
        yaxis=dict(range=[n_layers - 0.5, -0.5], tickmode="array", tickvals=list(range(0, n_layers, 2)),
                   ticktext=[_("layer {layer}").format(layer=lay) for lay in range(0, n_layers, 2)], fixedrange=True),
        meta={"view": "patching", "of": of, "n_layers": n_layers})
    return fig
