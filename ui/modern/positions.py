"""The positions tab: the sidebar's first sentence scored by one head under sinusoidal, learned, RoPE and ALiBi
positions, each panel on its own colour range; score against distance; RoPE's turning pairs; the relative-only check in numbers."""
from __future__ import annotations

import html
from functools import partial

import pandas as pd
import streamlit as st

from transformer_core.analysis import positions_lab
from transformer_core.figures import modern as figs
from transformer_core.figures.stage import chart_config
from transformer_core.models.minilm import PretrainedUnavailable
from transformer_core.text.tokenize import word_tokenize

from ..parts.numbers import number
from ..shell import callbacks, url
from ..shell.chart import chart
from ..shell.controls import Settings
from ..shell.i18n import N_, _
from ..shell.markdown import plain
from . import compute
from .export import json_download

DEFAULT_SENTENCE = "The cat sat on the mat."
SCHEME_NAMES = {"sinusoidal": N_("Sinusoidal (added)"), "learned": N_("Learned table (added)"),
                "rope": N_("RoPE (rotated)"), "alibi": N_("ALiBi (bias)")}


def _title(token: str) -> str:
    """A token inside a Plotly title: Plotly reads HTML-like tags and entities, not Markdown, so ``<``, ``>`` and
    ``&`` are escaped (quotes stay: Plotly would show ``&quot;`` as typed)."""
    return html.escape(token, quote=False)


def lab_tokens(settings: Settings) -> tuple[str, ...]:
    """The first sentence's word-level tokens (at most 16), or the example sentence's."""
    text = settings.sentences[0] if settings.sentences else DEFAULT_SENTENCE
    tokens = tuple(word_tokenize(text))[:compute.MAX_LAB_TOKENS]
    return tokens or tuple(word_tokenize(DEFAULT_SENTENCE))


def draw(settings: Settings) -> None:
    tokens = lab_tokens(settings)
    labels = [f"{i}: {t}" for i, t in enumerate(tokens)]
    slopes = [f"1/{2 ** (h + 1)}" for h in range(8)]
    url.bind_url("modern_alibi_head", "alibi_head", range(8), 3)
    last_word = max((i for i, t in enumerate(tokens) if any(ch.isalnum() for ch in t)), default=len(tokens) - 1)
    url.bind_url("modern_query", "query", range(len(tokens)), last_word, labels=labels)
    url.bind_url("modern_key", "key", range(len(tokens)), 0, labels=labels)
    c1, c2, c3 = st.columns(3)
    alibi_head = c1.selectbox(_("ALiBi head (of 8)"), range(8), key="modern_alibi_head",
                              format_func=partial(callbacks.label_of, tuple(
                                  _("head {h}: slope {s}").format(h=h, s=s) for h, s in enumerate(slopes))),
                              help=_("Press et al. (2022): with 8 heads the slopes are 1/2, 1/4, …, 1/256."))
    query = c2.selectbox(_("Query token"), range(len(tokens)), key="modern_query",
                         format_func=partial(callbacks.label_of, tuple(labels)))
    key = c3.selectbox(_("Key token"), range(len(tokens)), key="modern_key",
                       format_func=partial(callbacks.label_of, tuple(labels)))
    try:
        data = compute.positions(tokens, alibi_head, query, key)
    except PretrainedUnavailable as err:
        st.warning(_("The learned table is MiniLM's, which cannot be loaded: {error}").format(error=plain(str(err))),
                   icon=":material/warning:")
        return
    cols = st.columns(4)
    bounds = {}
    for col, scheme in zip(cols, SCHEME_NAMES):
        # each panel on its own range: on one shared range the learned table's strong row 0 left the other three
        # using a tenth of it, nearly empty
        fig = figs.score_panel(data["scores"][scheme], tokens, _(SCHEME_NAMES[scheme]), scheme=scheme)
        bounds[scheme] = fig.data[0].zmax
        chart(fig, key=f"modern_scores_{scheme}", config=chart_config(f"scores_{scheme}"), target=col)
    st.caption(_("Raw scores q·k/√d_head, each panel on its own colour range (its bar under it), symmetric around 0: "
                 "{ranges}. Compare colours within a panel, sizes by these numbers. The learned table was "
                 "multiplied by {scale} so its size matches the sinusoidal table's; its row 0 (where BERT's [CLS] "
                 "sits) is {ratio} times as long as the others, hence the strong first row and column. ALiBi's slope "
                 "here is {slope}.")
               .format(ranges=", ".join(f"{_(SCHEME_NAMES[s]).split(' (')[0].split('（')[0]} ±{number(b, '.3g')}"
                                        for s, b in bounds.items()),
                       scale=number(data["learned_scale"], ".3g"),
                       ratio=number(data["row0_ratio"], ".1f"), slope=number(data["slope"], ".4g")))
    st.markdown(_("One attention head with random weights scores the sidebar's first sentence four ways. **Sinusoidal** "
                  "(2017) and a **learned** table (BERT; here MiniLM's, scaled to the same size) are *added* to the word "
                  "vectors before W_Q and W_K. **RoPE** adds nothing: it *turns* each pair of features of q and k by an "
                  "angle proportional to the position. **ALiBi** adds nothing to the vectors: it subtracts "
                  "slope × distance from the score."))

    st.subheader(_("The same two tokens, further and further apart"))
    names = {s: _(n) for s, n in SCHEME_NAMES.items()}
    fig = figs.distance_figure(data["curves"], names, compute.QUERY_POSITIONS,
                               _("Score of {q} against {k}, with {k} d positions before {q}").format(
                                   q=_title(tokens[query]), k=_title(tokens[key])))
    chart(fig, key="modern_distance", config=chart_config("distance"))
    st.markdown(_("Solid: the query at position {a}; dashed: at position {b}. Where the two lines of a scheme lie on "
                  "each other, the score depends only on the distance, not on where the pair stands.").format(
        a=compute.QUERY_POSITIONS[0], b=compute.QUERY_POSITIONS[1]))

    left, right = st.columns([1.2, 1])
    pairs = data["pairs"]
    chart(figs.rope_figure(pairs["xy"], pairs["pairs"], pairs["positions"], pairs["theta"],
                           _("RoPE turns the query of {q}: positions 0 … 24 (big dot: 0)").format(
                               q=_title(tokens[query]))),
          key="modern_rope", config=chart_config("rope_pairs"), target=left)
    right.markdown(_("**Relative only?** The score of the same two tokens at positions (m, n) = (30, 20) and shifted by "
                     "s = 100:"))
    table = pd.DataFrame([{_("scheme"): names[r["scheme"]], "(m, n)": number(r["score"], ".4f"),
                           "(m+s, n+s)": number(r["shifted"], ".4f"), _("difference"): number(r["difference"], ".1g")}
                          for r in data["relative"]])
    right.dataframe(table, hide_index=True, width="stretch", key="modern_relative")
    right.markdown(_("RoPE: q_m·k_n = (R_m q)·(R_n k) = q·R_(n−m) k, a function of n − m only (Su et al. 2021, Eq. 16); "
                     "its difference is float32 rounding. ALiBi's bias is −slope·|m − n| on position-free scores. The added "
                     "tables mix word and position in W_Q and W_K, so shifting both changes the score."))
    st.markdown(_("**Past the length a scheme was built or trained for.** Sinusoidal vectors exist for every position, "
                  "but a model never saw the far ones in training. A learned table has no row past its end: MiniLM's "
                  "has {rows}, so position {rows} cannot be encoded at all (the MiniLM page stops at {rows} tokens). "
                  "RoPE turns each pair by position × θ_i; SmolLM2's slowest pair (d_head 64, base 100,000) has turned "
                  "only {turn} of a circle at its trained 8,192 tokens, so later positions give it angles training never "
                  "showed — why a RoPE model falters past its context unless the base is rescaled. ALiBi only "
                  "subtracts slope × distance, a straight line that continues at any length (Press et al. 2022 "
                  "trained on 1,024 tokens and tested on 2,048 and more).").format(
        rows=positions_lab.MAX_POSITION, turn=number(positions_lab.slowest_rope_turn(64, 100000.0, 8192), ".3f")))
    json_download(right, {"alibi_head": alibi_head, "query": query, "key": key, **data},
                  f"positions_q{query}_k{key}", "modern_positions_json")
