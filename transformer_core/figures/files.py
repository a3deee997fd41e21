"""What a saved figure is called, and how the chart's camera button saves it."""
from __future__ import annotations


SPACE_MARKS = "\u2423\u0120\u2581 "  # ␣ (a readable label), Ġ (GPT-2 byte level), ▁ (SentencePiece), a space


def figure_filename(stage: str, head: int | None, layer: int | None, tokens: tuple[str, ...], ext: str = "") -> str:
    """A meaningful file name: ``weights_L0_H3_the-cat-sat`` (+ ``.ext``).

    The first four tokens that are words, read without the space mark of byte-level tokenizers (``"␣Mary"`` as
    SmolLM2's readable labels show it, ``"ĠMary"`` raw, ``"▁Mary"`` SentencePiece): ``when-mary-and-john``."""
    words = [w for w in (t.lstrip(SPACE_MARKS) for t in tokens) if w.isalnum()][:4] or ["text"]
    slug = "-".join(w.lower() for w in words)[:40]
    parts = [stage] + ([f"L{layer}"] if layer is not None else []) + ([f"H{head}"] if head is not None else []) + [slug]
    return "_".join(parts) + (f".{ext}" if ext else "")


def chart_config(filename: str, fmt: str = "png") -> dict:
    """``st.plotly_chart``/``fig.show`` config: the modebar camera saves the figure as drawn, at twice its pixels.

    ``width``/``height`` ``None`` (null): plotly.js keeps the graph's current size, so square cells stay square
    and nothing is re-laid out (a fixed 1280×720 stretched the cells to 16:9); the focused head carries its
    title, sentence and settings on screen (:func:`title_and_caption`), so its image does too.
    """
    return {"displaylogo": False, "modeBarButtons": [["toImage"]],  # the camera only: a full toolbar covered titles
            "toImageButtonOptions": {"format": fmt, "filename": filename, "width": None, "height": None, "scale": 2}}
