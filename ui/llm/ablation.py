"""The heads behind an answer, on the real LLM: the indirect-object sentence (Wang et al. 2022), any heads
ablated (zero, or the mean over a named reference set of prompts), p(" Mary"), p(" John") and the top-5 before and
after; "Rank the heads" ablates each head alone with a progress bar; where the top heads' last position attends.
The mean mode's reference set runs on the chosen model itself.

URL: ``ablate=L9H3,…`` and ``ablate_mode=zero|mean`` (:mod:`ui.parts.ablation_controls`' binding of the heads).
"""
from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from transformer_core.analysis.ablation import format_heads, parse_heads
from transformer_core.figures.smollm2 import attend_figure, rank_figure
from transformer_core.figures.stage import chart_config
from transformer_core.models.face import ModelConfig
from transformer_core.records.serialize import csv_file

from ..parts.ablation_controls import bind_heads, head_names
from ..parts.numbers import number
from ..shell import cache, long_actions
from ..shell.chart import chart
from ..shell.downloads import download_button
from ..shell.i18n import N_, _
from ..shell.markdown import plain
from ..shell.url import bind_url
from . import compute
from .catalog import Choice

MODES = {"zero": N_("zero (context = 0)"), "mean": N_("mean over the reference set")}
TOP_ATTEND = 6  # heads drawn in "where the top heads attend"


def _controls(choice: Choice, config: ModelConfig) -> tuple[tuple, str]:
    n_layers, n_heads = config.n_layers, config.n_heads
    modes = tuple(MODES)
    bind_heads("llm_ablate", n_layers, n_heads)
    bind_url("llm_ablate_mode", "ablate_mode", modes, "zero")
    c1, c2 = st.columns([3, 2], vertical_alignment="bottom")
    # the examples are heads of this model (SmolLM2's L9H3 and L12H0 do not exist in a 2-layer checkpoint)
    first, second = f"L{min(9, n_layers - 1)}H{min(3, n_heads - 1)}", f"L{min(12, n_layers - 1)}H0"
    picked = c1.multiselect(_("Heads to ablate"), head_names(n_layers, n_heads), key="llm_ablate",
                            placeholder=_("pick heads, e.g. {head}").format(head=first),
                            help=_("Layer L, head H. In the URL: ablate={heads}").format(heads=f"{first},{second}"))
    names = {m: _(label) for m, label in MODES.items()}
    mode = c2.radio(_("Ablation"), modes, key="llm_ablate_mode", format_func=names.get)
    return parse_heads(",".join(picked), n_layers, n_heads), mode


def _reference(mode: str) -> str:
    from transformer_core.analysis.ablation.next_token import REFERENCE_SETS

    name = "ioi"
    if mode == "mean":
        with st.expander(_("Reference set “{name}”: {n} prompts of the same shape").format(
                name=name, n=len(REFERENCE_SETS[name])), icon=":material/dataset:"):
            st.caption(_("A head's mean context over every position of these prompts replaces its context (Wang et al. "
                         "2022 ablate with a mean over IOI prompts)."))
            st.markdown("\n".join(f"- {plain(p)}" for p in REFERENCE_SETS[name]))
    return name


def section(choice: Choice, config: ModelConfig) -> None:
    from transformer_core.analysis.ablation.next_token import IOI_PROMPT, TARGETS

    st.subheader(_("The heads behind an answer"))
    st.caption(_("The indirect-object sentence of interpretability research (Wang et al. 2022): `{prompt}` → {model} "
                 "should say “Mary”, the name not repeated. Ablate heads — their context set to 0, or to its mean over "
                 "a reference set of prompts — and see what the next word becomes. The model is never changed: the "
                 "ablation is private to this run.").format(prompt=IOI_PROMPT, model=plain(choice.label)))
    heads, mode = _controls(choice, config)
    reference = _reference(mode)
    try:
        if heads:
            out = compute.effect(choice, heads, mode, reference)
            intact, ablated = out["intact"], out["ablated"]
        else:  # nothing ablated: the intact numbers come from the page's cached run of the prompt
            intact, ablated = compute.ioi_intact(choice), None
    except ValueError as err:  # e.g. this model's tokenizer splits " Mary" into pieces
        st.warning(_("Cannot ablate on this model: {error}.").format(error=plain(str(err))), icon=":material/warning:")
        return
    mary, john = TARGETS
    if heads:
        st.markdown(_("**Ablating {heads}** ({mode}): p(“Mary”) **{m0}** → **{m1}**, p(“John”) **{j0}** → **{j1}**.")
                    .format(heads=format_heads(heads, ", "), mode=_(MODES[mode]),
                            m0=number(intact["targets"][mary], ".3f"), m1=number(ablated["targets"][mary], ".3f"),
                            j0=number(intact["targets"][john], ".3f"), j1=number(ablated["targets"][john], ".3f")))
    else:
        st.markdown(_("Intact: p(“Mary”) = **{m0}**, p(“John”) = **{j0}**. Pick heads above to ablate them.").format(
            m0=number(intact["targets"][mary], ".3f"), j0=number(intact["targets"][john], ".3f")))
    rows = [{N_("rank"): r + 1, N_("intact"): f"{a[0]}  {number(a[2], '.3f')}",
             **({N_("ablated"): f"{ablated['top'][r][0]}  {number(ablated['top'][r][2], '.3f')}"} if ablated else {})}
            for r, a in enumerate(intact["top"])]
    st.dataframe(pd.DataFrame(rows).rename(columns=lambda c: _(c)), hide_index=True, key="llm_ablate_top")
    data = {"model": choice.label, "prompt": IOI_PROMPT, "ablate": format_heads(heads), "mode": mode, "reference": reference,
            "intact": intact, "ablated": ablated}
    download_button(st, "⬇ " + _("Effect as JSON"), json.dumps(data, ensure_ascii=False, indent=1),
                       file_name=f"{choice.slug}_ablation_{format_heads(heads) or 'none'}.json", mime="application/json",
                       key="llm_ablate_json")
    _rank(choice, config, mode, reference)


def _rank(choice: Choice, config: ModelConfig, mode: str, reference: str) -> None:
    ss = st.session_state
    key = (choice, mode, reference)
    ready = cache.cached(compute.ranked, *key)  # another student's ranking: served free, not counted
    if st.button(_("Rank the heads: ablate each of the {n} alone").format(n=config.n_layers * config.n_heads),
                 key="llm_rank_button", icon=":material/sort:"):
        note = st.empty()
        try:
            if ready:
                ss["llm_rank"] = (key, compute.ranked(*key))
            else:
                with long_actions.turn(note):
                    passes = _("{done} of {total} layers done (one batched pass per layer's {heads} heads)").format(
                        done="{done}", total="{total}", heads=config.n_heads)
                    bar = note.progress(0.0, text=_("Ablating the heads of layer 0 …"))

                    def progress(done: int, total: int) -> None:
                        bar.progress(done / total, text=passes.format(done=done, total=total))

                    ss["llm_rank"] = (key, compute.ranked(*key, progress=progress))
                note.empty()
        except long_actions.Refused:
            pass  # the note says why and when
    if ss.get("llm_rank", (None,))[0] != key:
        what = _("**Rank the heads** ablates each head alone and sorts them by how much p(“Mary”) falls: {n} batched "
                 "passes, each from the ablated layer on.").format(n=config.n_layers)
        st.caption(what + " " + (_("Already computed on this server: shown at once, not counted.") if ready else
                                 long_actions.cost_note(_("about 10 s") if choice.is_smollm2 else
                                                        _("about {n} runs of this model").format(n=config.n_layers))))
        return
    result = ss["llm_rank"][1]
    fmt = ss.get("shared_image_format", "png")
    effect = result["effect"]  # [layer, head]
    chart(rank_figure(effect, "Mary"), key="llm_rank_chart", config=chart_config(f"{choice.slug}_rank_{mode}", fmt))
    # the heads whose ablation lowers p(Mary) most: only those that lower it at all (on a small or random model some
    # of the first six raise it, and "lowers it most" would misname them)
    order = [int(i) for i in effect.ravel().argsort()[::-1][:TOP_ATTEND] if effect.ravel()[i] > 0]
    if not order:
        st.caption(_("No head's ablation lowers p(“Mary”) here: there is no head to show where it looks."))
    else:
        _where_top_heads_look(choice, config, [divmod(i, config.n_heads) for i in order], mode, fmt)
    table = pd.DataFrame([{"head": f"L{lay}H{h}", "layer": lay, "p_mary_ablated": float(result["probs"][lay, h, 0]),
                           "p_john_ablated": float(result["probs"][lay, h, 1]), "effect": float(effect[lay, h])}
                          for lay in range(effect.shape[0]) for h in range(effect.shape[1])])
    table = table.sort_values("effect", ascending=False, kind="stable")
    download_button(st, "⬇ " + _("Ranking as CSV"), csv_file(table.to_csv(index=False)),
                       file_name=f"{choice.slug}_rank_{mode}.csv", mime="text/csv", key="llm_rank_csv")


def _where_top_heads_look(choice: Choice, config: ModelConfig, top: list[tuple[int, int]], mode: str,
                          fmt: str) -> None:
    """Where the last token looks in each of the ``top`` heads (their rows of the IOI prompt's cached run)."""
    last = compute.ioi_last_rows(choice)
    rows = [last["rows"][lay, h] for lay, h in top]
    names = [f"L{lay}H{h}" for lay, h in top]
    tokens = last["tokens"]
    mary_pos = [i for i, t in enumerate(tokens) if t == "␣Mary"]
    share = [float(last["rows"][lay, h, mary_pos].sum()) for lay, h in top]
    chart(attend_figure(rows, names, tokens), key="llm_attend_chart",
          config=chart_config(f"{choice.slug}_attend_{mode}", fmt))
    john_pos = [i for i, t in enumerate(tokens) if t == "␣John"]
    on = {"Mary": share, "John": [float(last["rows"][lay, h, john_pos].sum()) for lay, h in top],
          "sink": [float(last["rows"][lay, h, 0]) for lay, h in top]}
    most = {what: max(zip(values, names)) for what, values in on.items()}  # (weight, head) with the most
    st.caption(_("The last token “to” in the {n} heads whose ablation lowers p(“Mary”) most: weight on “Mary” "
                 "{shares}. The most on “Mary”: {m_head} ({m}); on “John” (both): {j_head} ({j}); on the first token "
                 "(the sink): {s_head} ({s}).").format(
        n=len(top), shares=", ".join(f"{n} {number(s, '.2f')}" for n, s in zip(names, share)),
        m_head=most["Mary"][1], m=number(most["Mary"][0], ".2f"), j_head=most["John"][1],
        j=number(most["John"][0], ".2f"), s_head=most["sink"][1], s=number(most["sink"][0], ".2f")))
