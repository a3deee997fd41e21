"""Lesson 1: the scaled dot product and the softmax, on one head of the learner's first sentence (toy model)."""
from __future__ import annotations

import dataclasses

import numpy as np

from transformer_core.figures.stage import stage_figure

from ..shell.i18n import N_, _, language
from ..shell.markdown import plain
from .toy_steps import clearest_row, few, first_sentence, link_params, softmax
from .view import FIGURE_FIT, StepView, token_choice

TITLE = N_("Scores and the softmax")
HEAD = 0
HEIGHT = 400  # the whole heatmap and the question beside it in the first screen at 1280×720


def _trace(settings, sources):
    """The first sentence alone and no mask: the lesson is about the scores themselves (masks and [PAD] are
    lesson 2)."""
    settings = dataclasses.replace(settings, sentences=settings.sentences[:1], causal=False)
    return settings, sources.toy(settings)


def _why(row: np.ndarray, query: int, best: int, seed: int) -> str:
    """Step 1's explanation: the winning score, and its lead over the row's second score (none with one key)."""
    tail = _("A score is one dot product: a key scores high when its vector points the same way as the query's. "
             "These weights are random (seed {seed}), so the winner says nothing about meaning yet.").format(seed=seed)
    if len(row) < 2:
        head = _("Its score is {score}, the only one in row {row}.").format(score=f"{row[best]:.3f}", row=query)
    else:
        head = _("Its score is {score}, the largest in row {row}, ahead of the next by {gap}: of all the rows, this "
                 "one has the clearest winner.").format(score=f"{row[best]:.3f}", row=query,
                                                        gap=f"{row[best] - np.sort(row)[-2]:.3f}")
    return head + ("" if language() == "zh" else " ") + tail


def scores(settings, sources) -> StepView:
    settings, trace = _trace(settings, sources)
    tokens, n = first_sentence(trace)
    grid = trace.stage("scores")[0, HEAD, :n, :n]
    query = clearest_row(grid)  # the last row may be a tie of near-zero scores that no colour tells apart
    row = grid[query]
    best = int(np.argmax(row))
    shown = few([best, int(np.argmin(row)), query, 0], n)
    d_head = settings.d_model // settings.n_heads
    return StepView(
        title=_("Step 1: one score per pair of tokens"),
        intro=_("Head {head} of your first sentence. Each cell is the query row's vector **q** times the key column's "
                "vector **k**, divided by √d_head: **q·k/√{d}**.").format(head=HEAD, d=d_head),
        fig=stage_figure(trace, "scores", batch=0, head=HEAD, height=HEIGHT, **FIGURE_FIT),
        question=_("Which key does the query in row {row}, “{token}”, score highest?").format(
            row=query, token=plain(tokens[query])),
        choices=tuple(token_choice(tokens, p) for p in shown), correct=shown.index(best),
        explain=_why(row, query, best, settings.seed),
        note=_("The toy model's weights are random (seed {seed}), so expect arithmetic here, not meaning: trained "
               "heads come in lessons 4 and 5.").format(seed=settings.seed),
        page="", params=link_params(settings, stage="scores", head=HEAD, sentence=0), page_title=_("Explorer"))


def weights(settings, sources) -> StepView:
    settings, trace = _trace(settings, sources)
    tokens, n = first_sentence(trace)
    w = trace.stage("weights")[0, HEAD, n - 1, :n]
    return StepView(
        title=_("Step 2: the softmax turns a row of scores into weights"),
        intro=_("The same head after the softmax: each row of scores becomes e^score / Σ e^score."),
        fig=stage_figure(trace, "weights", batch=0, head=HEAD, height=HEIGHT, **FIGURE_FIT),
        question=_("What does each row of weights add up to?"),
        choices=(_("exactly 1"), _("the number of tokens"), _("the row's largest score"),
                 _("it differs from row to row")), correct=0,
        explain=_("Every weight is positive and each row adds up to 1 (the last row: {total}), so a row is a "
                  "share-out: the query's new vector is a weighted mix of the value vectors. The largest share of "
                  "the last row, {top}, goes to “{token}”, the key with the largest score: the softmax keeps the "
                  "order.").format(total=f"{w.sum():.4f}", top=f"{w.max():.3f}",
                                   token=plain(tokens[int(np.argmax(w))])),
        page="", params=link_params(settings, stage="weights", head=HEAD, sentence=0), page_title=_("Explorer"))


def scaling(settings, sources) -> StepView:
    settings, trace = _trace(settings, sources)
    _tokens, n = first_sentence(trace)
    d_head = settings.d_model // settings.n_heads
    row = trace.stage("scores")[0, HEAD, n - 1, :n]
    scaled, unscaled = softmax(row).max(), softmax(row * np.sqrt(d_head)).max()
    flatter = bool(unscaled < scaled - 1e-9)
    same = bool(abs(unscaled - scaled) <= 1e-9)
    return StepView(
        title=_("Step 3: why divide by √d_head"),
        intro=_("The weights of head {head} again, with the scores divided by √{d} = {root} before the softmax."
                ).format(head=HEAD, d=d_head, root=f"{np.sqrt(d_head):.2f}"),
        fig=stage_figure(trace, "weights", batch=0, head=HEAD, height=HEIGHT, **FIGURE_FIT),
        question=_("Without the division by √d_head, the last row's largest weight would be…"),
        choices=(_("larger: the row gets more peaked"), _("smaller: the row gets flatter"), _("the same")),
        correct=2 if same else 1 if flatter else 0,
        explain=_("Undivided, the scores are √{d} times larger, and the softmax exaggerates gaps: the largest weight "
                  "goes from {a} to {b}. With wide heads (large d_head) dot products grow, and without the division "
                  "most rows would put nearly all their weight on one key, where the gradients vanish.").format(
            d=d_head, a=f"{scaled:.3f}", b=f"{unscaled:.3f}"),
        page="", params=link_params(settings, stage="weights", head=HEAD, sentence=0), page_title=_("Explorer"))


STEPS = (scores, weights, scaling)
