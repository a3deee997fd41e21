"""Next-token predictions on the causal-model page: temperature, top-k/top-p, a seeded sample.

URL: ``temp=`` (one of :data:`TEMPERATURES`), ``top_k=``, ``top_p=`` (``off`` or a number),
``pred_pos=`` (the position whose next token is shown), ``sample_seed=``. The probabilities are
computed by :mod:`transformer_core.analysis.predictions` exactly as shown (float64, stable at T = 0.01).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from transformer_core.analysis.generation import sample
from transformer_core.analysis.predictions import softmax_t, top_tokens
from transformer_core.figures import predictions as figs
from transformer_core.figures.stage import chart_config
from transformer_core.records.serialize import csv_file
from transformer_core.records.trace import Trace

from ..shell.cache import memo
from ..shell.chart import Spec, chart, spec
from ..shell.downloads import download_button
from ..shell.i18n import N_, _, language
from ..shell.lazy import lazy_expander
from ..shell.url import bind_url

TEMPERATURES = (0.01, 0.05, 0.1, 0.2, 0.5, 0.7, 1.0, 1.5, 2.0, 5.0, 10.0, 100.0)
TOP_K = (1, 2, 3, 5, 10, 20, 64)
TOP_P = ("off", 0.5, 0.75, 0.9, 0.95, 0.99)
N_NEW = 16  # tokens sampled (fewer when the sequence leaves less room in the model's 48 positions)


def _text(value) -> str:
    return value if isinstance(value, str) else f"{value:g}"


@memo("causal_traces")
def _sample(ids: tuple[int, ...], step: int, temperature: float, k: int, p: float | None, seed: int) -> dict:
    from transformer_core.models.causal import load_causal_model

    model = load_causal_model(step)
    room = model.config.max_positions
    prompt = list(ids[:max(1, room - N_NEW)])
    return sample(model, prompt, N_NEW, temperature=temperature, k=k, p=p, seed=seed)


@st.cache_data(max_entries=256, show_spinner=False)
def _sample_figure(ids: tuple[int, ...], step: int, temperature: float, k: int, p: float | None, seed: int,
                   period: int | None, lang: str) -> tuple[dict, Spec]:
    """The seeded sample and its loss figure as chart JSON, built once per choice (``lang``: the figure's words)."""
    drawn = _sample(ids, step, temperature, k, p, seed)
    return drawn, spec(figs.sample_figure(drawn["ids"], drawn["loss"], drawn["n_prompt"], period))


def section(trace: Trace, ids: list[int], step: int, period: int | None) -> None:
    """Top-k next tokens at one position under a temperature, every position's prediction as a table,
    and a seeded sampled continuation drawn with the loss at every position."""
    st.subheader(_("Next-token predictions"))
    st.caption(_("At every position the model gives a probability to each of the 64 tokens being next: "
                 "softmax(logits / T). **T** (temperature) divides the logits: below 1 sharpens (T → 0 picks the "
                 "most likely token), above 1 flattens (T = 100 is nearly uniform). **top-k** keeps the k most likely "
                 "tokens, **top-p** the fewest whose probabilities reach p. With both, Hugging Face's order: top-k "
                 "first, then top-p on the k kept, renormalised (TopKLogitsWarper → TopPLogitsWarper). The bars show "
                 "the probabilities before filtering; the rest is one grey “other” bar, so the bars add up to 1."))
    bind_url("causal_temp", "temp", TEMPERATURES, 1.0, to_text=_text)
    bind_url("causal_top_k", "top_k", TOP_K, 10)
    bind_url("causal_top_p", "top_p", TOP_P, "off", to_text=_text, aliases={1: "off"})  # p = 1 keeps every token
    bind_url("causal_pred_pos", "pred_pos", range(len(ids)), min(len(ids) - 1, (period or 0) + 2))
    bind_url("causal_sample_seed", "sample_seed", range(1000), 0)
    c1, c2, c3 = st.columns([2, 1.4, 1.4])
    t = c1.select_slider(_("Temperature T"), TEMPERATURES, key="causal_temp", format_func=_text)
    k = c2.select_slider("top-k", TOP_K, key="causal_top_k")
    p_shown = {v: _("off") if v == "off" else _text(v) for v in TOP_P}  # the URL keeps "off"
    p_choice = c3.select_slider("top-p", TOP_P, key="causal_top_p", format_func=p_shown.get)
    p = None if p_choice == "off" else float(p_choice)
    # one token: a slider from 0 to 0 is refused by Streamlit (StreamlitInvalidMinMaxError), and there is one position
    pos = st.slider(_("Position (its next token is predicted)"), 0, len(ids) - 1, key="causal_pred_pos") \
        if len(ids) > 1 else 0
    logits = trace.stages["logits"][0]  # [pos, vocab]
    probs = softmax_t(logits, t)  # [pos, vocab] float64
    target = str(ids[pos + 1]) if pos + 1 < len(ids) else None
    fmt = st.session_state.get("shared_image_format", "png")
    bars = top_tokens(probs[pos], k, p)
    chart(figs.top_k_figure(bars, position=pos, token=str(ids[pos]), target=target, temperature=t,
                            k=k, p=p), key="causal_predictions",
          config=chart_config(f"predictions_pos{pos}_T{_text(t)}", fmt))
    # lazy (ui/shell/lazy.py): the data grid is built, sent and mounted only once the box is open (``?preds=1``)
    box = lazy_expander(_("Every position's prediction (table, CSV)"), key="causal_preds_box", url="preds",
                        icon=":material/table:")
    if box.open:
        with box:
            if len(ids) > 1:
                _table(trace, ids, probs, step, t)
            else:  # each row pairs a prediction with the token that follows it: one token has none
                st.info(_("One token has no next token to check a prediction against: each row of this table pairs "
                          "a position's prediction with the token that really comes next. Type at least 2 tokens. "
                          "The chart above still shows what the model predicts after this one."),
                        icon=":material/info:")

    st.markdown(_("**Sample a continuation** with these T, top-k and top-p (seeded: the same seed draws the same "
                  "tokens). The line is the model's loss at every position: high on the first period, low on the "
                  "repeat — and on the sampled tokens, when they continue the repetition."))
    seed = st.number_input(_("Sampling seed"), 0, 999, key="causal_sample_seed")
    drawn, sampled = _sample_figure(tuple(ids), step, t, k, p, int(seed), period, language())
    new = drawn["ids"][drawn["n_prompt"]:]
    st.code(" ".join(map(str, drawn["ids"][:drawn["n_prompt"]])) + "  →  " + " ".join(map(str, new)), language=None)
    chart(sampled, key="causal_sample",
          config=chart_config(f"sample_seed{seed}_T{_text(t)}", fmt))


def _table(trace: Trace, ids: list[int], probs: np.ndarray, step: int, t: float) -> None:
    """Every position's prediction as a data grid and a CSV (``probs``: ``[pos, vocab]`` at temperature ``t``)."""
    loss = trace.stages["token_loss"][0]  # [pos−1], T = 1
    table = pd.DataFrame({
        N_("position"): np.arange(len(ids) - 1), N_("token"): ids[:-1], N_("next token"): ids[1:],
        N_("top prediction"): probs[:-1].argmax(-1), N_("its probability"): probs[:-1].max(-1),
        N_("probability of next token"): probs[np.arange(len(ids) - 1), ids[1:]], N_("loss (nats, T = 1)"): loss})
    # headers in the learner's language on screen; the CSV keeps the English ones
    st.dataframe(table.rename(columns=lambda c: _(c)), hide_index=True, key="causal_pred_table", column_config={
        _(c): st.column_config.NumberColumn(format="%.4f")
        for c in (N_("its probability"), N_("probability of next token"), N_("loss (nats, T = 1)"))})
    download_button(st, "⬇ " + _("Predictions as CSV"), csv_file(table.to_csv(index=False)), mime="text/csv",
                    file_name=f"predictions_step{step}_T{_text(t)}.csv", key="causal_pred_csv")
