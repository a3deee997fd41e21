"""Figures of head ablation: how far each layer moved, later layers' weights ablated beside intact, the
72 heads ranked, and the causal model's induction accuracy per checkpoint with heads ablated.

Pure builders from the numbers of :mod:`transformer_core.analysis.ablation.embedding` and
:mod:`~transformer_core.analysis.ablation.induction`; ``layout.meta["stage"]`` names each figure
(``ablation_shift``, ``ablation_weights``, ``ablation_rank``, ``ablation_rank_induction``,
``ablation_causal``) for tests and exports.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..text.i18n import _
from .heads import tiled_heads

INTACT, ABLATED = "#08519c", "#d62728"
SHORT_BAR = 0.12  # of the 0…1 accuracy axis: a bar shorter holds no "88.5%" (~45 px of a ~600 px axis)
NEAR = 0.2  # of the axis: two line labels centred closer than this overlap (each ~75 px wide)


def shift_figure(shift: np.ndarray, cosine: float, heads: str, batch: int = 0, height: int = 300) -> go.Figure:
    """Bars: ``shift[layer]`` = ‖ablated − intact‖ / ‖intact‖ of each layer's output for one sentence;
    the title gives the embedding cosine. ``heads`` is the ablated list as text (``L3H7,L4H2``)."""
    n = len(shift)
    fig = go.Figure(go.Bar(
        x=[_("layer {layer}").format(layer=i) for i in range(n)], y=np.asarray(shift, np.float64), marker_color=ABLATED,
        text=[f"{v:.1%}" for v in shift], textposition="outside", cliponaxis=False,
        hovertemplate="%{x}: " + _("output moved {share} of its length").format(share="%{y:.2%}") + "<extra></extra>"))
    fig.update_layout(
        title=dict(text=_("Ablating {heads}: how far each layer's output moved (sentence {b}); embedding cosine "
                          "ablated·intact = {cosine}").format(heads=heads.replace(",", ", "), b=batch, cosine=f"{cosine:.4f}"),
                   font=dict(size=13), x=0),
        height=height, margin=dict(l=50, r=10, t=40, b=30), yaxis=dict(title=_("relative L2 change"), tickformat=".0%",
                                                                      rangemode="tozero"),
        meta={"stage": "ablation_shift", "batch": batch, "heads": heads, "cosine": float(cosine)})
    return fig


def weights_beside(intact: np.ndarray, ablated: np.ndarray, tokens, *, layer: int, visible: np.ndarray | None = None,
                   tile_px: int = 86) -> go.Figure:
    """One layer's attention weights, every head, intact (top row) beside ablated (bottom row), on one
    0…1 colour range. ``intact``/``ablated``: ``[head, query_pos, key_pos]`` of one sentence."""
    n_heads = intact.shape[0]
    fig = tiled_heads(np.concatenate([intact, ablated]), tokens, "weights", visible=visible, zrange=(0.0, 1.0),
                      n_cols=n_heads, tile_px=tile_px, meta={"layer": layer})
    for i, note in enumerate(fig.layout.annotations):
        note.text = _("head {head}").format(head=i % n_heads)
    fig.add_annotation(text="<b>" + _("intact") + "</b>", xref="paper", yref="paper", x=0, y=1.0, xanchor="right",
                       showarrow=False, textangle=-90, font=dict(color=INTACT))
    fig.add_annotation(text="<b>" + _("ablated") + "</b>", xref="paper", yref="paper", x=0, y=0.0, xanchor="right",
                       yanchor="bottom", showarrow=False, textangle=-90, font=dict(color=ABLATED))
    fig.update_layout(margin=dict(l=28, r=4, t=22, b=4), dragmode="zoom", clickmode="none",
                      meta={**fig.layout.meta, "stage": "ablation_weights"})
    return fig


def top_head_bars(effect: np.ndarray, top: int, text_format: str, hover: str) -> tuple[go.Figure, list[str]]:
    """Horizontal bars of the ``top`` largest values of ``effect [layer, head]``, largest first, named ``L3H7``;
    ``text_format`` formats each bar's label, ``hover`` is its hover template. Returns the figure and the names."""
    order = np.argsort(-effect, axis=None, kind="stable")[:top]
    names = [f"L{i // effect.shape[1]}H{i % effect.shape[1]}" for i in order]
    fig = go.Figure(go.Bar(
        x=effect.ravel()[order], y=names, orientation="h", marker_color=ABLATED,
        text=[text_format.format(v) for v in effect.ravel()[order]], textposition="outside", cliponaxis=False,
        hovertemplate=hover + "<extra></extra>"))
    return fig, names


def rank_figure(cosine: np.ndarray, batch: int = 0, top: int = 20, height: int = 420) -> go.Figure:
    """The ``top`` heads whose ablation alone moves sentence ``batch``'s embedding most: bars of
    ``1 − cosine``, largest first. ``cosine``: ``[layer, head, batch]`` from ``rank_heads``."""
    effect = 1.0 - np.asarray(cosine, np.float64)[..., batch]  # [layer, head]
    fig, names = top_head_bars(effect, top, "{:.4f}",
                               _("{head} alone: 1 − cosine = {value}").format(head="%{y}", value="%{x:.5f}"))
    fig.update_layout(
        title=dict(text=_("Each of the {n} heads ablated alone: the {top} that move sentence {b}'s embedding most (1 − "
                          "cosine to intact)").format(n=effect.size, top=top, b=batch), font=dict(size=13), x=0),
        height=height, margin=dict(l=60, r=40, t=40, b=30),
        yaxis=dict(autorange="reversed", type="category"), xaxis=dict(title="1 − cosine", rangemode="tozero"),
        meta={"stage": "ablation_rank", "batch": batch, "order": names})
    return fig


def rank_induction_figure(accuracy: np.ndarray, intact: float, chance: float, step: int, mode: str,
                          height: int = 330) -> go.Figure:
    """Each head of the causal model ablated alone: bars of induction accuracy ``accuracy [layer, head]`` (0…1),
    the head whose ablation lowers it most first, beside the intact model's accuracy and chance (dotted lines).
    ``step``: the checkpoint; ``mode``: the ablation's name as shown."""
    acc = np.asarray(accuracy, np.float64)
    order = np.argsort(acc, axis=None, kind="stable")  # lowest accuracy = largest fall first
    names = [f"L{i // acc.shape[1]}H{i % acc.shape[1]}" for i in order]
    values = acc.ravel()[order]
    # labels inside the bars' ends (outside, they sat under the intact line), but beside a bar too short to hold
    # one, right of the two lines: before training every bar is ~1.6 % wide and its label was a white smudge, and
    # just past the bar's end the dashed lines ran through its first digit
    inside = values >= SHORT_BAR
    fig = go.Figure(go.Bar(
        x=values, y=names, orientation="h", marker_color=ABLATED,
        text=[f"{v:.1%}" if i else "" for v, i in zip(values, inside)],
        textposition="inside", insidetextanchor="end", textfont=dict(color="white", size=13),
        hovertemplate=_("{head} ablated alone: induction accuracy {value}").format(head="%{y}", value="%{x:.1%}")
        + "<extra></extra>"))
    for name, v in zip(np.asarray(names)[~inside], values[~inside]):
        fig.add_annotation(x=max(v, intact, chance), y=name, text=f"{v:.1%}", xanchor="left", xshift=4,
                           showarrow=False, font=dict(color="#333", size=13))
    fig.add_vline(x=intact, line=dict(color=INTACT, dash="dash"))
    fig.add_vline(x=chance, line=dict(color="#555", dash="dot"))
    above = dict(y=1, yref="y domain", yanchor="bottom", showarrow=False)  # above the bars, not on them
    if abs(intact - chance) < NEAR:  # one label for both lines: two centred on lines this close wrote over each other
        fig.add_annotation(x=max(intact, chance), xanchor="left", text=_("intact {intact} · chance {chance}").format(
            intact=f"{intact:.1%}", chance=f"{chance:.1%}"), **above)
    else:
        fig.add_annotation(x=intact, text=_("intact {value}").format(value=f"{intact:.1%}"), **above)
        fig.add_annotation(x=chance, text=_("chance {value}").format(value=f"{chance:.1%}"), **above)
    fig.update_layout(
        title=dict(text=_("Step {step}: induction accuracy with each head ablated alone ({mode})").format(
            step=step, mode=mode), font=dict(size=13), x=0),
        height=height, margin=dict(l=60, r=50, t=56, b=40), uniformtext=dict(minsize=12, mode="show"),
        xaxis=dict(title=_("induction accuracy"), range=[0, 1.08], tickformat=".0%"),
        yaxis=dict(autorange="reversed", type="category"),
        meta={"stage": "ablation_rank_induction", "step": step, "order": names})
    return fig


def causal_figure(steps: list[int], intact: list[float], ablated: list[float], chance: float, heads: str,
                  step: int | None = None, height: int = 300) -> go.Figure:
    """Induction accuracy (top-1 on the repeat of held-out sequences) per training checkpoint, intact
    and with ``heads`` ablated, with chance (1/vocab) as a dotted line and checkpoint ``step`` marked."""
    fig = go.Figure()
    fig.add_scatter(x=steps, y=intact, mode="lines+markers", name=_("intact"), line=dict(color=INTACT))
    fig.add_scatter(x=steps, y=ablated, mode="lines+markers", name=_("{heads} ablated").format(heads=heads.replace(",", ", ")),
                    line=dict(color=ABLATED))
    fig.add_hline(y=chance, line=dict(color="#555", dash="dot"),
                  annotation_text=_("chance 1/64 = {chance}").format(chance=f"{chance:.3f}"),
                  annotation_position="top right")  # above its line: below, it sat on the last step's tick label
    if step is not None:
        fig.add_vline(x=step, line=dict(color="#999", dash="dash"))
    fig.update_layout(
        height=height, margin=dict(l=50, r=10, t=30, b=40), xaxis_title=_("training step"),
        yaxis=dict(title=_("induction accuracy"), range=[0, 1], tickformat=".0%"),
        legend=dict(orientation="h", y=1.15, x=0), meta={"stage": "ablation_causal", "heads": heads, "step": step})
    return fig
