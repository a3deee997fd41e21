"""What one step of a lesson shows: a figure, one question with choices, and the answer kept until a choice."""
from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlencode

from ..shell.markdown import plain

# The figure column of :func:`ui.guided.ask.show` at 1280×720 (measured: 440 px). A lesson's heatmap is drawn for it
# with every k-th token labelled where one label per token would overlap (24 tokens' key labels ran together).
FIGURE_WIDTH_PX = 440
FIGURE_FIT = {"width_px": FIGURE_WIDTH_PX, "fit_ticks": True}  # stage_figure's keywords for that column


@dataclass(frozen=True)
class StepView:
    """One step, built live from the learner's input.

    ``title``, ``intro``, ``question`` and ``explain`` are translated Markdown written by us; anything the learner
    typed inside them must already be :func:`~ui.shell.markdown.plain`. ``choices`` are shown as plain labels;
    ``correct`` is the index of the right one, computed with the figure. ``page`` and ``params`` open the full
    page in the same state (``page`` "" is the explorer, the default page). ``note``, when not empty, is a caption
    under the question, read before the choice (e.g. that the weights are random)."""

    title: str
    intro: str
    fig: object
    question: str
    choices: tuple[str, ...]
    correct: int
    explain: str
    page: str
    params: dict = field(default_factory=dict)
    page_title: str = ""
    note: str = ""


def page_link(page: str, params: dict) -> str:
    """A relative link to another page with its URL parameters (relative: it works under any base path)."""
    query = urlencode({k: str(v) for k, v in params.items()})
    return f"./{page}" + (f"?{query}" if query else "")


def token_choice(tokens, pos: int) -> str:
    """``"3: cat"`` for a choice that names a token of the learner's sentence, inert as Markdown."""
    return plain(f"{pos}: {tokens[pos]}")
