"""Lesson 2: masks on the learner's sentences — causal, padding, what −∞ does, and the two conventions."""
from __future__ import annotations

import dataclasses

import numpy as np

from transformer_core.figures.stage import stage_figure

from ..shell.i18n import N_, _
from ..shell.markdown import plain
from .toy_steps import first_sentence, link_params
from .view import FIGURE_FIT, StepView

TITLE = N_("Masks")
HEAD = 0
HEIGHT = 400  # the whole heatmap and the question beside it in the first screen at 1280×720


def _padded(settings, sources):
    """Two sentences of different lengths (the learner's first two; else the first and the first said twice), the
    trace with the padding mask, and the shorter one's index: the one that gets [PAD]."""
    pair = tuple(settings.sentences[:2])
    trace = sources.toy(dataclasses.replace(settings, sentences=pair, causal=False, padding=True))
    if len(pair) < 2 or trace.lengths[0] == trace.lengths[1]:
        pair = (pair[0], pair[0] + " " + pair[0])
        settings = dataclasses.replace(settings, sentences=pair, causal=False, padding=True)
        trace = sources.toy(settings)
    else:
        settings = dataclasses.replace(settings, sentences=pair, causal=False, padding=True)
    return settings, trace, int(np.argmin(trace.lengths))


def causal(settings, sources) -> StepView:
    settings = dataclasses.replace(settings, sentences=settings.sentences[:1], causal=True)
    trace = sources.toy(settings)
    tokens, n = first_sentence(trace)
    query = min(2, n - 1)
    return StepView(
        title=_("Step 1: the causal mask"),
        intro=_("Head {head} of your first sentence with the causal mask on: the scores after masking.").format(
            head=HEAD),
        fig=stage_figure(trace, "masked_scores", batch=0, head=HEAD, height=HEIGHT, **FIGURE_FIT),
        question=_("Which keys may the query at position {pos}, “{token}”, see?").format(pos=query,
                                                                                        token=plain(tokens[query])),
        choices=(_("itself and the tokens before it"), _("only the tokens after it"), _("every token"),
                 _("only itself")), correct=0,
        explain=_("Row {pos} keeps {kept} keys, positions 0 to {pos}; the blank cells to their right are scores set to "
                  "−∞. A model that writes text one token at a time cannot read tokens that do not exist yet, so it "
                  "is trained with the future hidden.").format(pos=query, kept=query + 1),
        page="masks_lab", params=link_params(settings, section="Causal and padding", mask="causal", sentence=0,
                                             head=HEAD), page_title=_("Masks lab"))


def padding(settings, sources) -> StepView:
    settings, trace, short = _padded(settings, sources)
    n, width = int(trace.lengths[short]), trace.stage("weights").shape[-1]
    w = trace.stage("weights")[short, HEAD, :n]
    on_pad = float(w[:, n:].max(initial=0.0))
    return StepView(
        title=_("Step 2: the padding mask, and what −∞ does"),
        intro=_("Sentence {b} is shorter, so it is filled up with {pads} [PAD] tokens to the batch's length; the "
                "padding mask sets their key columns to −∞ before the softmax.").format(b=short, pads=width - n),
        fig=stage_figure(trace, "weights", batch=short, head=HEAD, height=HEIGHT, **FIGURE_FIT),
        question=_("What weight does a [PAD] key get after the softmax?"),
        choices=(_("exactly 0"), _("a small positive weight"), _("1 / the number of tokens"), _("a negative weight")),
        correct=0,
        explain=_("e^−∞ = 0, so a blocked score gets exactly no weight: the largest weight on a [PAD] column here is "
                  "{pad}, and each real row still adds up to 1 ({total}). A large negative number instead of −∞ "
                  "would leave a tiny leak.").format(pad=f"{on_pad:g}", total=f"{w[-1].sum():.4f}"),
        page="masks_lab", params=link_params(settings, section="Causal and padding", mask="padding", sentence=short,
                                             head=HEAD), page_title=_("Masks lab"))


def conventions(settings, sources) -> StepView:
    settings, trace, short = _padded(settings, sources)
    settings = dataclasses.replace(settings, causal=True)
    trace = sources.toy(settings)
    kept = int(trace.visible(short).sum())
    size = trace.visible(short).size
    return StepView(
        title=_("Step 3: two conventions for one mask"),
        intro=_("Both masks at once on sentence {b}: {kept} of {size} cells may attend.").format(b=short, kept=kept,
                                                                                                 size=size),
        fig=stage_figure(trace, "masked_scores", batch=short, head=HEAD, height=HEIGHT, **FIGURE_FIT),
        question=_("A boolean mask is True at a cell. What does True mean in PyTorch's scaled_dot_product_attention, "
                   "and in nn.MultiheadAttention's attn_mask?"),
        choices=(_("SDPA: may attend; MultiheadAttention: blocked"), _("may attend in both"), _("blocked in both"),
                 _("SDPA: blocked; MultiheadAttention: may attend")), correct=0,
        explain=_("The two are opposite. scaled_dot_product_attention (and this app) read True as “may attend”; "
                  "nn.MultiheadAttention's attn_mask and key_padding_mask read True as “blocked, fill with −∞”. Code "
                  "moved from one to the other without ~mask inverts the mask silently: here it would keep the "
                  "{other} blocked cells and block the {kept} others.").format(other=size - kept, kept=kept),
        page="masks_lab", params=link_params(settings, section="Two conventions", sentence=short, head=HEAD),
        page_title=_("Masks lab"))


STEPS = (causal, padding, conventions)
