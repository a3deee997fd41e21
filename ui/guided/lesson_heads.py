"""Lesson 3: many heads — what n_heads changes (each head's width, the number of patterns) and what stays."""
from __future__ import annotations

import dataclasses

import numpy as np

from transformer_core.figures.heads import heads_figure

from ..shell.controls import head_choices
from ..shell.i18n import N_, _
from .toy_steps import link_params
from .view import StepView

TITLE = N_("Many heads")


def _trace(settings, sources):
    """The first sentence alone, no mask: every tile shows only what the heads do."""
    settings = dataclasses.replace(settings, sentences=settings.sentences[:1], causal=False)
    return settings, sources.toy(settings)


def width(settings, sources) -> StepView:
    settings, trace = _trace(settings, sources)
    d, h = settings.d_model, settings.n_heads
    options = list(dict.fromkeys((d // h, d, h, d * h)))
    return StepView(
        title=_("Step 1: one layer, {h} heads").format(h=h),
        intro=_("The weights of every head on your first sentence, one tile a head (the sidebar sets n_heads)."),
        fig=heads_figure(trace, "weights", batch=0),
        question=_("With d_model = {d} and n_heads = {h}, how long is each head's query vector?").format(d=d, h=h),
        choices=tuple(str(x) for x in options), correct=0,
        explain=_("d_head = d_model / n_heads = {d} / {h} = {d_head}. The layer's W_Q makes one vector of {d} numbers "
                  "per token; the heads split it into {h} slices of {d_head}, and each slice scores the keys on its "
                  "own. That is why n_heads must divide d_model.").format(d=d, h=h, d_head=d // h),
        page="", params=link_params(settings, stage="q", head=0, sentence=0, all=1), page_title=_("Explorer"))


def different(settings, sources) -> StepView:
    settings, trace = _trace(settings, sources)
    w = trace.stage("weights")[0]
    n = int(trace.lengths[0])
    gap = float(np.abs(w[0, :n, :n] - w[1, :n, :n]).max()) if w.shape[0] > 1 else 0.0
    said = (_("Heads 0 and 1 differ here by up to {gap} in one weight.").format(gap=f"{gap:.3f}")
            if w.shape[0] > 1 else _("With n_heads = 1 there is one pattern only: pick 8 heads in the sidebar."))
    return StepView(
        title=_("Step 2: same sentence, different patterns"),
        intro=_("The same tiles: every head reads the same tokens."),
        fig=heads_figure(trace, "weights", batch=0),
        question=_("Do two heads of the same layer weigh the same sentence the same way?"),
        choices=(_("no: each head has its own slices of W_Q, W_K and W_V"), _("yes: they share the same weights"),
                 _("only their first rows differ")), correct=0,
        explain=said + " " + _("Each head projects the tokens with its own slices of W_Q, W_K and W_V, so it scores "
                               "other pairs of tokens highly: one layer can follow several relations at once."),
        page="", params=link_params(settings, stage="weights", head=min(1, settings.n_heads - 1), sentence=0),
        page_title=_("Explorer"))


def stays(settings, sources) -> StepView:
    settings, trace = _trace(settings, sources)
    d, h = settings.d_model, settings.n_heads
    other = min(head_choices(d), key=lambda c: (c == h, abs(c - 2)))
    return StepView(
        title=_("Step 3: what n_heads does not change"),
        intro=_("Each head's context vectors (its weighted mix of values): {h} heads × d_head = {d_head} "
                "numbers per token.").format(h=h, d_head=d // h),
        fig=heads_figure(trace, "context", batch=0),
        question=_("You change n_heads from {h} to {other} and keep d_model = {d}. What stays the same?").format(
            h=h, other=other, d=d),
        choices=(_("the layer's output size and its weight matrices' sizes"), _("each head's d_head"),
                 _("the number of attention patterns"), _("nothing")), correct=0,
        explain=_("The heads' contexts are concatenated back to {d} numbers per token, and W_Q, W_K, W_V and W_O stay "
                  "{d} × {d}: n_heads only cuts them into slices. What changes is the number of patterns ({h} → "
                  "{other}) and each head's width ({a} → {b}).").format(d=d, h=h, other=other, a=d // h, b=d // other),
        page="pipeline", params=link_params(settings, step="A vs B", a_heads=h, b_heads=other),
        page_title=_("Multi-head pipeline"))


STEPS = (width, different, stays)
