"""The lesson pages' (masks lab, multi-head pipeline) prose, labels and figures; their compute: :mod:`ui.lessons.compute`.

* Prose lives in ``assets/<page>.md`` (Chinese: ``assets/zh/<page>.md``, the same sections), cut into sections
  by ``<!-- section: name -->`` lines.
* Figures are :func:`transformer_core.figures.stage.heatmap` with small touches (a two-colour
  boolean mask, head bands on feature matrices); no NaN or ±inf ever reaches a figure.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from transformer_core.figures import stage as figures

from ..shell.chart import chart as plotly_element, image_format
from ..shell.i18n import _, language
from ..shell.controls import Settings

ASSETS = Path(__file__).resolve().parents[2] / "assets"
PANEL_WIDTH_PX = 250  # lesson figures stand two or three across: about this wide at 1280 px
LESSON_TOKENS = 24  # tokens per sentence on the lesson pages (figures stay readable)
# second sentence when the learner typed only one, by the page's language: (short, long); the long one where the
# learner's sentence is shorter, so that the learner's own sentence is the padded one
EXAMPLES = {
    "en": ("Hi there!", "After a long day at the busy harbour, the old fisherman finally sat down to rest."),
    "zh": ("下课了。", "今天下午，我们在安静的教室里一起认真地学习注意力机制和掩码。"),
}
EXAMPLE_SENTENCE = EXAMPLES["en"][0]
HEAD_LINE = "#1a9641"  # green: not a colour of the diverging red–white–blue scale (white vanished, black read as data)
MASK_COLOURS = [[0.0, "#a6a6a6"], [0.5, "#a6a6a6"], [0.5, "#2c7bb6"], [1.0, "#2c7bb6"]]  # blocked, may attend
_SECTION = re.compile(r"^<!--\s*section:\s*([\w-]+)\s*-->[ \t]*$", re.M)


# ---------------------------------------------------------------------------------------- prose
def sections(page: str, lang: str = "en") -> dict[str, str]:
    """``assets/<page>.md`` (``assets/<lang>/<page>.md`` for another language) split at ``<!-- section: name -->``
    lines: name → markdown."""
    path = ASSETS / f"{page}.md" if lang == "en" else ASSETS / lang / f"{page}.md"
    return _sections_of(path, path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _sections_of(path: Path, mtime_ns: int) -> dict[str, str]:
    """The file read and split once per version (``mtime_ns``), not on every run; callers only read the dict."""
    parts = _SECTION.split(path.read_text(encoding="utf-8"))
    return {name: body.strip() for name, body in zip(parts[1::2], parts[2::2])}


def prose(page: str, name: str, target=st) -> None:
    """Show one prose section (a visible note if it is missing, never a crash)."""
    text = sections(page, language()).get(name)
    if text is None:
        target.caption(_("(missing text: `{page}.md` section `{name}`)").format(page=page, name=name))
    else:
        target.markdown(text)


# ---------------------------------------------------------------------------------------- helpers
def labels(tokens) -> list[str]:
    """Escaped tick labels ``"0: The"`` for figures."""
    return [figures.label(t, i) for i, t in enumerate(tokens)]


def plain_labels(tokens) -> list[str]:
    """Unescaped unique labels ``"0: The"`` for tables (Streamlit never renders them as HTML)."""
    return [f"{i}: {t}" for i, t in enumerate(tokens)]


def english_example(tokenizer: str, lang: str) -> bool:
    """Whether a non-English page keeps the English example: MiniLM's WordPiece reads most Chinese as [UNK]."""
    return lang != "en" and (tokenizer == "wordpiece" or lang not in EXAMPLES)


def example_for(sentence: str, tokenizer: str, lang: str = "en") -> str:
    """The second sentence added to ``sentence``: in the page's language where the tokenizer reads it, the long
    example where ``sentence`` is shorter than it (``sentence`` is padded), else the short one."""
    from transformer_core.text.tokenize import TOKENIZERS

    short, long = EXAMPLES["en" if english_example(tokenizer, lang) else lang]
    split = TOKENIZERS[tokenizer]
    return long if len(split(sentence)) < len(split(long)) else short


def lab_sentences(settings: Settings, lang: str = "en") -> tuple[tuple[str, ...], bool]:
    """The first two sentences (a batch for padding), or the one sentence plus an example (:func:`example_for`, in
    ``lang``); and whether one was added."""
    if len(settings.sentences) >= 2:
        return settings.sentences[:2], False
    return (settings.sentences[0], example_for(settings.sentences[0], settings.tokenizer, lang)), True


def fmt(x: float, digits: int = 4) -> str:
    """A number as text; NaN and ±inf spelled out (for tables, never figures)."""
    if np.isnan(x):
        return "NaN"
    if np.isinf(x):
        return "−inf" if x < 0 else "+inf"
    return f"{x:.{digits}f}" if abs(x) < 1e5 else f"{x:.0e}"


def text_table(matrix: np.ndarray, rows: list[str], cols: list[str], digits: int = 4) -> pd.DataFrame:
    """A matrix as a DataFrame of strings (so NaN shows as the word "NaN")."""
    return pd.DataFrame([[fmt(float(v), digits) for v in row] for row in np.atleast_2d(matrix)], index=rows, columns=cols)


# ---------------------------------------------------------------------------------------- figures
def _titled(fig):
    """Room for the title above the top axis (``figures.heatmap`` puts the key ticks and their title
    on top, where they would overlap the figure title), and the colour bar under the plot: lesson
    panels stand two or three across, too narrow to give a vertical bar its width."""
    fig.update_traces(selector=dict(type="heatmap"), colorbar=dict(orientation="h", y=-0.04, yanchor="top",
                                                                   thickness=8, len=1.0, title=None))
    fig.update_layout(margin_b=40)
    if fig.layout.title.text:  # 26 px for the title above the key labels and their axis title (long vertical
        # labels such as "12: Everyone" reached it under a fixed 110-px margin, found by scripts/layout_audit.py)
        top = max(110, (fig.layout.margin.t or 0) + 26)
        fig.update_layout(title=dict(yref="container", y=0.99, yanchor="top", x=0.01, xanchor="left"),
                          margin_t=top, height=fig.layout.height + 70 + top - 110)
    return fig


def mask_figure(mask: np.ndarray, rows: list[str], cols: list[str], title: str, **meta) -> "figures.go.Figure":
    """A boolean mask as a two-colour matrix: 1 = may attend (blue), 0 = blocked (grey)."""
    mask = np.asarray(mask, bool)
    fig = figures.heatmap(mask.astype(np.float32), rows, cols, zrange=(0.0, 1.0), colorscale=MASK_COLOURS,
                          title=title, meta={"kind": "mask", **meta}, width_px=PANEL_WIDTH_PX, fit_ticks=True)
    words = np.where(mask, _("may attend"), _("blocked"))
    where = np.dstack(np.broadcast_arrays(np.asarray(rows, object)[:, None], np.asarray(cols, object)[None, :]))
    fig.update_traces(selector=dict(type="heatmap"), text=words.tolist(), customdata=where,
                      texttemplate="%{z:.0f}" if max(mask.shape) <= 16 else None,
                      hovertemplate=_("query") + " %{customdata[0]}<br>" + _("key") + " %{customdata[1]}<br>%{text}"
                                    "<extra></extra>",
                      colorbar=dict(tickvals=[0.25, 0.75], ticktext=[_("0 = blocked"), _("1 = may attend")]))
    return _titled(fig)


def pattern_figure(matrix: np.ndarray, rows: list[str], cols: list[str], title: str, *,
                   visible: np.ndarray | None = None, empty_rows: np.ndarray | None = None, signed: bool = False,
                   zrange: tuple[float, float] | None = None, height: int | None = None, show_scale: bool = True,
                   empty_note: str | None = None, **meta) -> "figures.go.Figure":
    """A ``[query, key]`` matrix; blocked (and non-finite) cells blank; rows with no visible key marked ⊘
    (``empty_rows``, by default the rows of ``visible`` with no True)."""
    matrix = np.asarray(matrix, np.float32)
    empty = empty_rows if empty_rows is not None or visible is None else ~np.asarray(visible, bool).any(-1)
    shown = np.isfinite(matrix) if visible is None else np.isfinite(matrix) & visible
    if zrange is None:
        values = matrix[shown]
        bound = float(np.abs(values).max()) if values.size else 1.0
        zrange = (-bound or -1.0, bound or 1.0) if signed else (0.0, float(values.max()) if values.size and values.max() > 0 else 1.0)
    return _titled(figures.heatmap(matrix, rows, cols, visible=visible, empty_rows=empty, zrange=zrange,
                                   colorscale=figures.DIVERGING if signed else figures.SEQUENTIAL, title=title,
                                   height=height, show_scale=show_scale,
                                   empty_note=empty_note or _("no visible key: weights 0"),
                                   meta={"kind": "pattern", **meta}, width_px=PANEL_WIDTH_PX, fit_ticks=True))


def feature_figure(matrix: np.ndarray, rows: list[str], title: str, *, n_heads: int | None = None,
                   zrange: tuple[float, float] | None = None, height: int | None = None,
                   show_scale: bool = True, **meta) -> "figures.go.Figure":
    """A ``[pos, features]`` matrix (signed colours); with ``n_heads``, green lines mark each head's d_k columns
    (white ones vanished beside near-zero columns, which the diverging scale draws white; black ones looked like data)."""
    matrix = np.asarray(matrix, np.float32)
    n_cols = matrix.shape[1]
    if zrange is None:
        bound = float(np.abs(matrix[np.isfinite(matrix)]).max(initial=0.0)) or 1.0
        zrange = (-bound, bound)
    fig = figures.heatmap(matrix, rows, [f"d{j}" for j in range(n_cols)], zrange=zrange, colorscale=figures.DIVERGING,
                          title=title, row_title=_("position"), col_title=_("dimension"), height=height,
                          show_scale=show_scale, meta={"kind": "features", **meta})
    fig.update_traces(selector=dict(type="heatmap"), xgap=0)
    if n_heads and n_heads > 1:
        d_k = n_cols // n_heads
        # one green line between heads: the shapes add_vline makes, set at once (add_vline per line re-checks the
        # subplots each time: 6 % of a class's server CPU, py-spy)
        fig.update_layout(shapes=[dict(type="line", xref="x", yref="y domain", x0=h * d_k - 0.5, x1=h * d_k - 0.5,
                                       y0=0, y1=1, line=dict(color=HEAD_LINE, width=2)) for h in range(1, n_heads)])
        step = 1 if n_heads <= 8 else 2
        fig.update_xaxes(tickvals=[h * d_k + (d_k - 1) / 2 for h in range(0, n_heads, step)],
                         ticktext=[f"h{h}" for h in range(0, n_heads, step)], tickangle=0,
                         title=dict(text=_("{h} heads × d_k={d_k}").format(h=n_heads, d_k=d_k)))  # fits a third of the page
    else:
        step = max(1, n_cols // 16)
        fig.update_xaxes(tickvals=list(range(0, n_cols, step)), ticktext=[f"d{j}" for j in range(0, n_cols, step)])
    return _titled(fig)


def small_multiple(fig, first: bool):
    """A compact figure for a row of heads: no axis titles; row labels only on the first of the row."""
    fig.update_xaxes(title=None)
    fig.update_yaxes(title=None, showticklabels=first)
    fig.update_layout(margin=dict(l=4, r=4))
    return fig


def chart(fig, key: str, target=st, name: str = "figure") -> None:
    """Our Plotly element (ui/shell/chart.py) with the slide-sized download button."""
    plotly_element(fig, key=key, config=figures.chart_config(name, image_format()), target=target)
