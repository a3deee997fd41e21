"""The explorer's attention of today: shared key/value heads (``?n_kv_heads=``) and a sliding-window mask
with sinks (``?window=``, ``?sinks=``) on the toy model, with the parameter and KV-cache figures of the choice."""
from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from transformer_core.analysis.shared_kv import SMOLLM2, kv_choices, toy_figures
from transformer_core.nn.config import divisors

from ..parts.window_mask import convention
from ..shell.controls import MAX_TOKENS, Settings
from ..shell.i18n import _
from ..shell.url import batch, bind_url

MAX_SINKS = 8


@dataclass(frozen=True)
class Variant:
    """What the explorer's own choices say: key/value heads, and the window (None = off) with its sinks."""

    n_kv_heads: int
    window: int | None
    sinks: int


def values(settings: Settings) -> Variant:
    """The three choices, bound to the URL, before the trace is computed (:func:`controls` draws them later, beside
    the figure they change). ``n_kv_heads`` defaults to ``n_heads`` and a window to off, so a link without them shows
    the numbers it did."""
    h = settings.n_heads
    with batch():  # one message to the browser for the three URL writes, not three
        n_kv = bind_url("explorer_n_kv_heads", "n_kv_heads", divisors(h), h)
        window = bind_url("explorer_window", "window", range(MAX_TOKENS + 1), 0)
        sinks = bind_url("explorer_sinks", "sinks", range(MAX_SINKS + 1), 0)
    return Variant(int(n_kv), int(window) or None, int(sinks) if window else 0)


def controls(settings: Settings) -> None:
    """The three controls in an expander (open when a choice differs from plain attention), stacked for the focused
    head's side column; their values were bound by :func:`values` this run."""
    h = settings.n_heads
    choices = divisors(h)
    ss = st.session_state
    changed = ss.get("explorer_n_kv_heads", h) != h or ss.get("explorer_window", 0) > 0
    names = {n: (_("{n} (multi-query: one K/V head for all)").format(n=n) if n == 1 and h > 1 else
                 _("{n} (multi-head: one K/V head per query head)").format(n=n) if n == h else
                 _("{n} (grouped-query: {g} query heads per K/V head)").format(n=n, g=h // n)) for n in choices}
    with st.expander(_("Today's attention: shared key/value heads, sliding window with sinks"),
                     expanded=changed, icon=":material/tune:"):
        n_kv = st.selectbox(_("n_kv_heads (key/value heads)"), choices, key="explorer_n_kv_heads",
                            format_func=names.get,
                            help=_("Query head h reads key/value head h // (n_heads / n_kv_heads). Only divisors "
                                   "of n_heads are offered: each key/value head serves the same number of query "
                                   "heads."))
        left, right = st.columns(2)
        window = left.number_input(_("Sliding window w (0 = off)"), 0, MAX_TOKENS, step=1, key="explorer_window",
                                   help=_("Each query sees itself and the w − 1 tokens before it (plus the sinks)."))
        sinks = right.number_input(_("Sinks s"), 0, MAX_SINKS, step=1, key="explorer_sinks", disabled=window == 0,
                                   help=_("The first s tokens stay visible to every later query (attention sinks)."))
        st.caption(kv_caption(settings.d_model, h, int(n_kv)))
        if window:
            st.caption(convention(int(window), int(sinks)))


def kv_caption(d_model: int, n_heads: int, n_kv: int) -> str:
    """Parameters and KV-cache bytes per token of the toy's attention with ``n_kv`` key/value heads, SmolLM2's beside."""
    f, p = toy_figures(d_model, n_heads, n_kv), toy_figures(d_model, n_heads, n_heads)
    group = n_heads // n_kv
    groups = ", ".join(f"{g * group}–{g * group + group - 1} → KV {g}" if group > 1 else f"{g} → KV {g}"
                       for g in range(n_kv))
    smol = next(r for r in kv_choices(SMOLLM2) if r["is_model"])
    smol_mha = next(r for r in kv_choices(SMOLLM2) if r["n_kv_heads"] == SMOLLM2.n_heads)
    return _("**n_kv_heads = {n_kv} key/value heads for n_heads = {h} query heads** (query heads {groups}). Toy attention weights: W_Q {q:,} + "
             "W_K {k:,} + W_V {v:,} + W_O {o:,} = **{total:,}** (biases not counted; {mha:,} with one K/V head per "
             "query head). KV cache per token in float32: 2 × 1 layer × {n_kv} × {d_head} × 4 bytes = **{bytes:,} "
             "bytes** ({mha_bytes:,} without sharing). SmolLM2-135M, for comparison: {sh} query heads on {skv} key/value "
             "heads, {sl} layers: attention weights {sp:,}, KV cache **{sb:,} bytes** per token ({smb:,} with {sh} "
             "K/V heads).").format(
        n_kv=n_kv, h=n_heads, groups=groups, q=f["params"]["W_Q"], k=f["params"]["W_K"], v=f["params"]["W_V"],
        o=f["params"]["W_O"], total=f["params"]["total"], mha=p["params"]["total"], d_head=f["d_head"],
        bytes=f["kv_bytes_per_token"], mha_bytes=f["mha_kv_bytes_per_token"], sh=SMOLLM2.n_heads,
        skv=SMOLLM2.n_kv_heads, sl=SMOLLM2.n_layers, sp=smol["attention_params"], sb=smol["kv_bytes_per_token"],
        smb=smol_mha["kv_bytes_per_token"])
