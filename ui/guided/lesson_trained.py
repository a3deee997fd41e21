"""Lesson 4: a trained model's heads — the previous-token head, the induction head and the attention sink on the
trained causal model (its own token ids: a random sequence of the sidebar's seed, then its repeat)."""
from __future__ import annotations

import numpy as np

from transformer_core.figures.stage import stage_figure

from ..shell.i18n import N_, _
from .view import StepView

TITLE = N_("A trained model's heads")
PERIOD = 10  # ten random ids, then the same ten again: the repeat is what an induction head predicts


def _run(settings, sources):
    """The ids, the final checkpoint's trace under the causal mask, and every head's weights ``[layer, head, q, k]``."""
    ids = tuple(sources.sequence(PERIOD, settings.seed % 100))
    trace = sources.causal(ids, None, True)
    w = np.stack([trace.stage("weights", layer)[0] for layer in range(trace.n_layers)])
    return ids, trace, w


def _diagonal(w: np.ndarray, queries: np.ndarray, back: int) -> np.ndarray:
    """Mean weight ``[layer, head]`` on key = query − ``back`` over ``queries``."""
    return w[:, :, queries, queries - back].mean(-1)


def _best(score: np.ndarray) -> tuple[int, int]:
    return tuple(int(x) for x in np.unravel_index(int(np.argmax(score)), score.shape))


def _params(ids, settings, layer: int, head: int) -> dict:
    return {"period": PERIOD, "seq_seed": settings.seed % 100, "seq": " ".join(map(str, ids)), "layer": layer,
            "head": head, "stage": "weights"}


def _figure(trace, layer: int, head: int):
    return stage_figure(trace, "weights", layer=layer, head=head, height=420,
                        title=_("layer {layer} · head {head}").format(layer=layer, head=head))


def previous(settings, sources) -> StepView:
    ids, trace, w = _run(settings, sources)
    q = np.arange(1, len(ids))
    shares = np.stack([_diagonal(w, q, 1), _diagonal(w, q, 0), w[:, :, 1:, 0].mean(-1)])  # [kind, layer, head]
    layer, head = _best(shares[0])
    means = shares[:, layer, head]
    return StepView(
        title=_("Step 1: a previous-token head"),
        intro=_("A 2-layer causal model trained here on random token ids whose second half repeats the first. Its "
                "input: {n} ids, ten random ones and their repeat. One head of layer {layer}:").format(
            n=len(ids), layer=layer),
        fig=_figure(trace, layer, head),
        question=_("Where does this head's query at position t put most of its weight?"),
        choices=(_("on the token just before it, t − 1"), _("on itself, t"), _("on the first token"),
                 _("evenly on every earlier token")), correct=int(np.argmax(means)),
        explain=_("On average {prev} of a row's weight goes to key t − 1 ({self} to itself, {first} to the first "
                  "token). A previous-token head copies “what came just before me” into every position: on its own it "
                  "predicts nothing, but the next layer can search for it.").format(
            prev=f"{means[0]:.2f}", self=f"{means[1]:.2f}", first=f"{means[2]:.2f}"),
        page="causal", params=_params(ids, settings, layer, head), page_title=_("Trained causal model"))


def induction(settings, sources) -> StepView:
    ids, trace, w = _run(settings, sources)
    q = np.arange(PERIOD, len(ids))
    shares = np.stack([_diagonal(w, q, PERIOD - 1), _diagonal(w, q, PERIOD), _diagonal(w, q, 1),
                       w[:, :, PERIOD:, 0].mean(-1)])
    layer, head = _best(shares[0])
    means = shares[:, layer, head]
    return StepView(
        title=_("Step 2: an induction head"),
        intro=_("A head of layer {layer}, on the same {n} ids. From position {p} on, every id is a repeat.").format(
            layer=layer, n=len(ids), p=PERIOD),
        fig=_figure(trace, layer, head),
        question=_("In the repeat, which key does this head's query weigh most?"),
        choices=(_("the token after the earlier copy of the current token (key = query − {b})").format(b=PERIOD - 1),
                 _("the earlier copy of the current token itself (key = query − {b})").format(b=PERIOD),
                 _("the token just before, key = query − 1"), _("the first token")),
        correct=int(np.argmax(means)),
        explain=_("It puts {ind} on the diagonal key = query − {b} (the earlier copy itself gets {dup}): it finds "
                  "where "
                  "the current token appeared before, through the previous-token head's message, and reads the token "
                  "that followed it, which is the next token now. That is an induction head; it makes the repeat "
                  "predictable.").format(ind=f"{means[0]:.2f}", b=PERIOD - 1, dup=f"{means[1]:.2f}"),
        page="causal", params=_params(ids, settings, layer, head), page_title=_("Trained causal model"))


def sink(settings, sources) -> StepView:
    ids, trace, w = _run(settings, sources)
    q = np.arange(PERIOD, len(ids))
    layer, head = _best(_diagonal(w, q, PERIOD - 1))
    first = np.arange(1, PERIOD)
    on_first, on_prev = float(w[layer, head, first, 0].mean()), float(w[layer, head, first, first - 1].mean())
    return StepView(
        title=_("Step 3: nothing to copy — the attention sink"),
        intro=_("The induction head again. Look at its first {p} rows: the ids there have not appeared before.").format(
            p=PERIOD),
        fig=_figure(trace, layer, head),
        question=_("Before anything repeats, where does this head put most of its weight?"),
        choices=(_("on the first token"), _("on the token just before"), _("on the tokens after the query")),
        correct=0 if on_first >= on_prev else 1,
        explain=_("Rows 1 to {last} put {first} on average on the first token and {prev} on the token before. A row "
                  "must add up to 1 even when the head finds nothing to do, so trained heads park the weight on one "
                  "place, usually the first token: an attention sink. The tokens after the query are masked (−∞), so "
                  "they get exactly 0. SmolLM2's heads do it too (lesson 5).").format(
            last=PERIOD - 1, first=f"{on_first:.2f}", prev=f"{on_prev:.2f}"),
        page="causal", params=_params(ids, settings, layer, head), page_title=_("Trained causal model"))


STEPS = (previous, induction, sink)
