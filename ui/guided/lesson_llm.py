"""Lesson 5: a real LLM — SmolLM2-135M on the indirect-object prompt: what it predicts, which heads write the name,
where they look, and its attention sinks. Everything comes from the SmolLM2 page's caches (one model run a prompt)."""
from __future__ import annotations

import numpy as np

from transformer_core.figures.predictions import top_k_figure
from transformer_core.figures.smollm2 import attend_figure, head_grid_figure
from transformer_core.figures.writes import dla_figure

from ..shell.i18n import N_, _
from .view import StepView

TITLE = N_("A real LLM: SmolLM2")
PROMPT = "When Mary and John went to the store, John gave a drink to"  # English in both languages: SmolLM2's own
WORDS = ("␣Mary", "␣John", "␣store", "When")  # the prompt's tokens a question offers (first mention of each)


def _positions(tokens) -> dict[str, int]:
    return {w: list(tokens).index(w) for w in WORDS}


def _names(sources) -> tuple[dict, dict, int, int]:
    """The cached summary, the prompt's word positions, and the ids of “ Mary” (target) and “ John” (contrast)."""
    whole = sources.llm_summary(PROMPT)
    at = _positions(whole["trace"].tokens[0])
    return whole, at, int(whole["ids"][at["␣Mary"]]), int(whole["ids"][at["␣John"]])


def _params(mary: int, john: int, layer: int = 0, head: int = 0) -> dict:
    return {"prompt": PROMPT, "target": mary, "contrast": john, "layer": layer, "head": head}


LATE = range(20, 30)  # the layers searched for heads that look at Mary: where the writers are, and 10 cached layers


def _lookers(sources, at: dict) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The last position's weights ``[layer, head, key]`` of the late layers (each layer recomputed once from the
    page's cached residual stream, then cached) and the five heads that weigh Mary most, most first."""
    rows = np.stack([sources.llm_layer(PROMPT, lay).stage("weights", lay)[0, :, -1] for lay in LATE])
    on_mary = rows[:, :, at["␣Mary"]]
    order = np.argsort(-on_mary.ravel(), kind="stable")[:5]
    return rows, [(LATE[0] + i // rows.shape[1], i % rows.shape[1]) for i in map(int, order)]


def _on(row: np.ndarray, tokens, word: str) -> float:
    """A head's weight on ``word``: its largest over the positions that hold it (John appears twice)."""
    return float(max(row[i] for i, t in enumerate(tokens) if t == word))


def predicts(settings, sources) -> StepView:
    whole, at, mary, john = _names(sources)
    top = whole["top"][-1]
    bars = [(label, p) for label, _i, p in top] + [("other", max(0.0, 1.0 - sum(p for _l, _i, p in top)))]
    logits = whole["logits"]
    ids = [int(whole["ids"][at[w]]) for w in WORDS]
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    return StepView(
        title=_("Step 1: SmolLM2 finishes a sentence"),
        intro=_("SmolLM2-135M (30 layers × 9 heads) reads “{prompt}”. The bars are its next-token probabilities."
                ).format(prompt=PROMPT),
        fig=top_k_figure(bars, position=len(whole["ids"]) - 1, token=whole["trace"].tokens[0][-1], target=None,
                         temperature=1.0, k=5, p=None),
        question=_("Which word does it predict next?"),
        choices=tuple(w.lstrip("␣") for w in WORDS), correct=int(np.argmax(logits[ids])),
        explain=_("p(Mary) = {mary}, p(John) = {john}. John is the one giving, Mary the one receiving: the name that "
                  "appears once. Nobody wrote this rule into the model; some of its heads learned it from text."
                  ).format(mary=f"{probs[mary]:.3f}", john=f"{probs[john]:.4f}"),
        page="llm", params=_params(mary, john), page_title=_("Real LLM (SmolLM2)"))


def looks(settings, sources) -> StepView:
    whole, at, mary, john = _names(sources)
    tokens = list(whole["trace"].tokens[0])
    rows, best = _lookers(sources, at)
    shown = np.stack([rows[lay - LATE[0], h] for lay, h in best])
    layer, head = best[0]
    weights = [_on(shown[0], tokens, w) for w in WORDS]
    return StepView(
        title=_("Step 2: the heads that look at Mary"),
        intro=_("Where the last position (“to”) looks in the five heads of layers 20–29 that weigh Mary most: one row "
                "a head, one column a token of the prompt."),
        fig=attend_figure(shown, [f"L{lay}H{h}" for lay, h in best], tokens),
        question=_("Which token does the top row's head, L{layer}H{head}, weigh most?").format(layer=layer, head=head),
        choices=tuple(w.lstrip("␣") for w in WORDS), correct=int(np.argmax(weights)),
        explain=_("L{layer}H{head} puts {mary} on Mary, {john} on John and {first} on the first token. Reading the "
                  "name at the last position is what a head that copies the answer would need. But does it copy? "
                  "Looking is not writing: the next step measures what each head adds.").format(
            layer=layer, head=head, mary=f"{weights[0]:.2f}", john=f"{weights[1]:.2f}", first=f"{weights[3]:.2f}"),
        page="llm", params=_params(mary, john, layer, head), page_title=_("Real LLM (SmolLM2)"))


def writes(settings, sources) -> StepView:
    whole, at, mary, john = _names(sources)
    tokens = list(whole["trace"].tokens[0])
    out = sources.llm_attribution(PROMPT, mary, john)
    rows, lookers = _lookers(sources, at)
    layer, head = lookers[0]
    value = float(out["heads"][layer, head])
    top = divmod(int(np.argmax(out["heads"])), out["heads"].shape[1])
    top_row = rows[top[0] - LATE[0], top[1]] if top[0] in LATE else None
    looked = (_(" It looks most at “{token}” ({w}).").format(token=tokens[int(np.argmax(top_row))].lstrip("␣"),
                                                             w=f"{top_row.max():.2f}") if top_row is not None else "")
    return StepView(
        title=_("Step 3: the heads that write it"),
        intro=_("Each cell: how much one head's output, added to the last position's residual stream, raises the logit "
                "of Mary minus that of John (direct logit attribution; the last column is each layer's MLP)."),
        fig=dla_figure(out["heads"], out["mlps"], title=_("logit Mary − John"), height=440),
        question=_("L{layer}H{head} looks at Mary more than any other head. What does it do to Mary − John?").format(
            layer=layer, head=head),
        choices=(_("raises it: it writes Mary"), _("lowers it: it pushes Mary down"), _("nothing (less than 0.1)")),
        correct=2 if abs(value) < 0.1 else 0 if value > 0 else 1,
        explain=_("It adds {value}. The head that raises Mary − John most is L{tl}H{th} ({top}).{looked} A head can "
                  "read a name and push it down, or read John and push John down: looking and writing are measured "
                  "separately, and only together do they say what a head does.").format(
            value=f"{value:+.2f}", tl=top[0], th=top[1], top=f"{out['heads'][top]:+.2f}", looked=looked),
        page="llm", params=_params(mary, john, layer, head), page_title=_("Real LLM (SmolLM2)"))


def sinks(settings, sources) -> StepView:
    whole, _at, mary, john = _names(sources)
    share = np.asarray(whole["grids"]["sink_share"], float)
    mean = float(np.nanmean(share))
    return StepView(
        title=_("Step 4: attention sinks in a real model"),
        intro=_("Each cell: the share of a head's weight that goes to the prompt's first token, “When”, averaged over "
                "the queries after it."),
        fig=head_grid_figure(share, value_name=_("sink share"), height=440),
        question=_("Over SmolLM2's 270 heads, what share of the weight goes to the first token on average?"),
        choices=(_("more than half"), _("between a tenth and a half"), _("less than a tenth")),
        correct=0 if mean > 0.5 else 1 if mean >= 0.1 else 2,
        explain=_("On average {mean}; {many} of the 270 heads give it more than half. “When” means little here: the "
                  "first token is where a head parks the weight it does not need, as the trained causal model did in "
                  "lesson 4.").format(mean=f"{mean:.2f}", many=int((share > 0.5).sum())),
        page="llm", params=_params(mary, john), page_title=_("Real LLM (SmolLM2)"))


STEPS = (predicts, looks, writes, sinks)
