"""Next-word predictions and generation on the real-LLM page: top-5 bars under temperature / top-k / top-p, and a
continuation token by token with the KV cache, each step with its top-5.

URL: ``temp=``, ``top_k=`` (``off`` or a number), ``top_p=`` (``off`` or a number), ``n_new=``, ``decode=greedy|sample``,
``gen_seed=``. Probabilities as :mod:`transformer_core.analysis.predictions` computes them (float64, stable at
T = 0.01); top-k and top-p combine in Hugging Face's order (:data:`~transformer_core.analysis.predictions.
FILTER_ORDERS` ``"hf"``), as the caption and the figure's title say.
"""
from __future__ import annotations

import html
import json

import pandas as pd
import streamlit as st

from transformer_core.analysis.predictions import kept, softmax_t
from transformer_core.figures import predictions as figs
from transformer_core.figures.stage import chart_config
from transformer_core.records.serialize import csv_file
from transformer_core.text.tokenize import normalize_text

from ..parts.numbers import number
from ..shell.cache import per_trace
from ..shell.chart import chart, spec
from ..shell.downloads import download_button
from ..shell.i18n import N_, _
from ..shell.markdown import plain
from ..shell.url import bind_url
from . import compute
from .catalog import Choice

TEMPERATURES = (0.01, 0.1, 0.2, 0.5, 0.7, 1.0, 1.5, 2.0, 5.0, 10.0, 100.0)
TOP_K = ("off", 1, 2, 3, 5, 10, 20, 50, 100)
TOP_P = ("off", 0.5, 0.75, 0.9, 0.95, 0.99)
N_NEW = (1, 2, 4, 8, 12, 16, 24, 32)
DECODE = {"greedy": N_("greedy (most probable)"), "sample": N_("sample (seeded)")}


def _text(value) -> str:
    return value if isinstance(value, str) else f"{value:g}"


def _has_chinese(text: str) -> bool:
    return any("\u4e00" <= c <= "\u9fff" for c in text)


def filters() -> tuple[float, int | None, float | None]:
    """The temperature, top-k and top-p controls (stacked, bound to the URL)."""
    bind_url("llm_temp", "temp", TEMPERATURES, 1.0, to_text=_text)
    bind_url("llm_top_k", "top_k", TOP_K, 5, to_text=_text)
    bind_url("llm_top_p", "top_p", TOP_P, "off", to_text=_text, aliases={1: "off"})  # p = 1 keeps every token
    t = st.select_slider(_("Temperature T"), TEMPERATURES, key="llm_temp", format_func=_text)
    shown = {v: _("off") if v == "off" else _text(v) for v in set(TOP_K) | set(TOP_P)}  # the URL keeps "off"
    k = st.select_slider("top-k", TOP_K, key="llm_top_k", format_func=shown.get)
    p = st.select_slider("top-p", TOP_P, key="llm_top_p", format_func=shown.get)
    return float(t), None if k == "off" else int(k), None if p == "off" else float(p)


def section(choice: Choice, summary: dict, prompt: str) -> tuple[float, int | None, float | None]:
    """The next word after the prompt: bars of the kept tokens (top-k → top-p) and one "other" bar, a table and
    its CSV/JSON. Returns the filters (the generation uses them)."""
    st.subheader(_("Next-word predictions"))
    left, right = st.columns([1, 1.5], gap="medium")  # the bars beside their controls: in the first screen
    with left:
        t, k, p = filters()
        st.caption(_("With both: top-k first, then top-p on the k kept, renormalised (Hugging Face's order)."))
    explain = _("{model} gives every one of its {vocab} tokens a probability of coming next: softmax(logits / T). "
                "**T** below 1 sharpens, above 1 flattens. **top-k** keeps the k most likely tokens, **top-p** the "
                "fewest whose probabilities reach p. Order, as Hugging Face's `generate`: top-k first, renormalise "
                "the k kept, then top-p on those (TopKLogitsWarper → TopPLogitsWarper). The bars show the "
                "probabilities before filtering; the rest is one grey “other” bar, so the bars add up to 1.").format(
        model=plain(choice.label), vocab=f"{summary['config'].vocab:,}")
    probs = softmax_t(summary["logits"], t)  # [vocab] float64
    idx = kept(probs, k, p)  # most probable first
    shown_idx = idx[:20]  # the bars: at most 20 kept tokens (the rest of the kept ones join "other")
    labels = {int(i): compute.token_label(choice, int(i)) for i in shown_idx}
    bars = [(str(int(i)), float(probs[i])) for i in shown_idx]
    bars.append(("other", float(1.0 - sum(b[1] for b in bars))))
    trace = summary["trace"]
    pos = len(trace.tokens[0]) - 1

    def build():
        fig = figs.top_k_figure(bars, position=pos, token=trace.tokens[0][pos], target=None, temperature=t, k=k, p=p,
                                height=max(250, 60 + 26 * len(bars)))
        fig.update_traces(y=[labels[int(n)] if n != "other" else _("other") for n, _v in bars])
        fig.update_layout(title_text=_("After “{token}” (position {pos}) · T = {t} · {cut}").format(
            token=html.escape(trace.tokens[0][pos]), pos=pos, t=_text(t),
            cut=fig.layout.title.text.rsplit(" · ", 1)[-1]))
        return spec(fig)

    fig = per_trace(trace, ("llm_predictions", t, k, p), build)  # once per prompt and filters, shared
    fmt = st.session_state.get("shared_image_format", "png")
    chart(fig, key="llm_predictions", config=chart_config(f"{choice.slug}_predictions_T{_text(t)}", fmt), target=right)
    best = summary["top"][-1][0][0]  # the most probable token whatever T, top-k and top-p
    if choice.is_smollm2 and _has_chinese(prompt) and "<0x" in best:  # a byte piece on top: no whole character
        right.warning(_("SmolLM2 fails on this Chinese prompt: its most likely next token, “{token}”, is only part "
                        "of a character. It learned mostly English; on “{example}” it answers with a whole "
                        "character.").format(token=plain(best), example=compute.EXAMPLES["zh"]),
                      icon=":material/sentiment_dissatisfied:")
    if len(idx) > len(shown_idx):
        right.caption(_("{n} tokens are kept; the 20 most likely are drawn, the others are in “other”.").format(
            n=f"{len(idx):,}"))
    st.caption(explain)
    table = pd.DataFrame({"rank": range(1, len(shown_idx) + 1), "token": [labels[int(i)] for i in shown_idx],
                          "id": [int(i) for i in shown_idx], "probability": [float(probs[i]) for i in shown_idx]})
    # the prompt as the model read it: control and direction characters as their marks, as in "tokens"
    data = {"model": choice.label, "prompt": normalize_text(prompt), "temperature": t, "top_k": k, "top_p": p, "order": "hf",
            "tokens": list(trace.tokens[0]), "kept": table.to_dict(orient="records")}
    c1, c2 = st.columns(2)
    download_button(c1, "⬇ " + _("Predictions as CSV"), csv_file(table.to_csv(index=False)), mime="text/csv",
                       file_name=f"{choice.slug}_predictions_T{_text(t)}.csv", key="llm_pred_csv",
                       width="stretch")
    download_button(c2, "⬇ " + _("Predictions as JSON"), json.dumps(data, ensure_ascii=False, indent=1),
                       mime="application/json", file_name=f"{choice.slug}_predictions_T{_text(t)}.json",
                       key="llm_pred_json", width="stretch")
    return t, k, p


def streamed(choice: Choice, ids: tuple[int, ...], n_new: int, greedy: bool, t: float, k: int | None, p: float | None,
             seed: int) -> list[dict]:
    """Generate after ``ids``, each token written as soon as it is chosen (``st.write_stream``); returns the steps.
    The streamed words are replaced by the table once the last one came."""
    steps = []

    def words():
        for step in compute.generation_steps(choice, ids, n_new, greedy, t, k, p, seed):
            steps.append(step)
            yield "`" + compute.readable(step["label"]).replace("`", "ˋ") + "` "

    shown = st.empty()
    shown.write_stream(words())
    shown.empty()
    return steps


def generation(choice: Choice, prompt: str, ids: tuple[int, ...], t: float, k: int | None, p: float | None) -> None:
    """n new tokens after the prompt's ``ids``, greedy or seeded sampling with the filters above, through the KV
    cache, shown as they come, then as a table of the steps."""
    st.subheader(_("Generate a continuation"))
    bind_url("llm_n_new", "n_new", N_NEW, 8)
    bind_url("llm_decode", "decode", tuple(DECODE), "greedy")
    bind_url("llm_gen_seed", "gen_seed", range(1000), 0)
    c1, c2, c3 = st.columns([2, 2, 1.2], vertical_alignment="bottom")
    n_new = c1.select_slider(_("New tokens"), N_NEW, key="llm_n_new")
    names = {d: _(label) for d, label in DECODE.items()}
    decode = c2.radio(_("Choose each token by"), tuple(DECODE), key="llm_decode", format_func=names.get,
                      horizontal=True)
    seed = c3.number_input(_("Sampling seed"), 0, 999, key="llm_gen_seed", disabled=decode == "greedy")
    greedy = decode == "greedy"
    ss, key = st.session_state, (choice, prompt, int(n_new), greedy, t, k, p, int(seed))
    if st.button(_("Generate"), key="llm_gen_button", icon=":material/play_arrow:"):
        ss["llm_gen"] = (key, {"steps": streamed(choice, ids, *key[2:])})  # on request: n forward passes, shown as they come
    if ss.get("llm_gen", (None,))[0] != key:
        st.caption(_("Press **Generate** to continue the prompt by {n} tokens with these settings.").format(n=n_new))
        return
    out = ss["llm_gen"][1]
    how = (_("greedy: each step takes the most probable token") if greedy else
           _("sampled with T = {t}, top-k {k}, top-p {p} (Hugging Face's order), seed {seed}").format(
               t=_text(t), k=k if k is not None else _("off"), p=_text(p) if p is not None else _("off"), seed=seed))
    st.caption(_("Each step runs the model on the one new token only: the keys and values of the earlier tokens come "
                 "from the KV cache (they do not change under the causal mask). {how}.").format(how=how))
    said = compute.readable  # a byte piece that completes no character says so (<0xE4> (part of a character))
    words = (said(s["label"]).replace("`", "ˋ") for s in out["steps"])  # a backtick would end the code span
    st.markdown("**" + _("Continuation") + ":** " + " ".join(f"`{w}`" for w in words))
    rows = [{N_("step"): i + 1, N_("chosen token"): said(s["label"]), N_("p at T = 1"): s["prob"],
             **{f"#{r + 1}": f"{said(lab)} {number(q, '.1%')}" for r, (lab, _i, q) in enumerate(s["top"])}}
            for i, s in enumerate(out["steps"])]
    frame = pd.DataFrame(rows)
    st.dataframe(frame.rename(columns=lambda c: _(c)), hide_index=True, key="llm_gen_table",
                 column_config={_(N_("p at T = 1")): st.column_config.NumberColumn(format="%.3f")})
    download_button(st, "⬇ " + _("Steps as CSV"), csv_file(frame.to_csv(index=False)), mime="text/csv",
                       file_name=f"{choice.slug}_generation_{decode}_{n_new}.csv", key="llm_gen_csv")
