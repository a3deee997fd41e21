"""Helpers the toy model's lessons share: the learner's settings as a link, the sentence, a short list of choices."""
from __future__ import annotations

import dataclasses

import numpy as np

from ..shell.controls import Settings, to_query_params


def link_params(settings: Settings, **view) -> dict:
    """The shared controls of ``settings`` as URL parameters (a new tab reads them), then the page's own."""
    values = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings) if f.name != "sentences"}
    values["text"] = "\n".join(settings.sentences)
    return {**to_query_params(values), **{k: v for k, v in view.items()}}


def first_sentence(trace, batch: int = 0) -> tuple[list[str], int]:
    """The tokens of one sentence without its padding, and its length."""
    n = int(trace.lengths[batch])
    return list(trace.tokens[batch][:n]), n


def few(positions, n: int, most: int = 4) -> list[int]:
    """Up to ``most`` distinct positions below ``n``, the given ones first, then from the start; sorted."""
    out: list[int] = []
    for p in [*positions, *range(n)]:
        if 0 <= p < n and p not in out:
            out.append(int(p))
        if len(out) == most:
            break
    return sorted(out)


def clearest_row(scores: np.ndarray) -> int:
    """The query row of ``scores [query_pos, key_pos]`` whose winner stands out most: the largest gap between its
    top two scores (the first such row on a tie; row 0 when there is a single key). A question about that row can
    be answered from the heatmap's colours; on a row of near-equal scores it could not."""
    scores = np.asarray(scores, np.float64)
    if scores.shape[1] < 2:
        return 0
    top_two = -np.sort(-scores, axis=1)[:, :2]
    return int(np.argmax(top_two[:, 0] - top_two[:, 1]))


def softmax(row: np.ndarray) -> np.ndarray:
    """Softmax of one row of finite scores (float64)."""
    row = np.asarray(row, np.float64)
    e = np.exp(row - row.max())
    return e / e.sum()
