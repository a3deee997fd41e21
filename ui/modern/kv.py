"""The shared-KV-heads tab (parameters and cache bytes per n_kv_heads, who reads which key/value head) and the KV
cache tab (step by step on the trained causal model or SmolLM2: rows growing, one new query row, cached vs
recomputed logits)."""
from __future__ import annotations

import contextlib

import pandas as pd
import streamlit as st

from transformer_core.analysis import shared_kv
from transformer_core.figures import modern as figs
from transformer_core.figures.stage import chart_config, label
from transformer_core.models.causal import CausalUnavailable
from transformer_core.models.gguf_weights import SmolLM2Unavailable

from ..parts.numbers import number
from ..shell import cache, long_actions, url
from ..shell.chart import chart
from ..shell.i18n import N_, _
from ..shell.markdown import plain
from . import compute
from .export import json_download

KV_CHOICES = (1, 3, 9)  # divisors of SmolLM2's 9 query heads
MODELS = {"causal": N_("Trained causal model (2 layers, 4 heads)"), "smollm2": N_("SmolLM2-135M (30 layers, 9 heads)")}
PROMPT_LANGUAGE = {"causal": None, "smollm2": "en"}  # each model's demo prompt: token ids, or text in a language


def _mib(n: int) -> str:
    return _("{bytes} bytes ({mib} MiB)").format(bytes=f"{n:,}", mib=number(n / 2**20, ".1f"))


def draw_shared() -> None:
    url.bind_url("modern_n_kv", "n_kv", KV_CHOICES, 3)
    names = {1: _("1 (multi-query)"), 3: _("3 (SmolLM2)"), 9: _("9 (multi-head)")}
    n_kv = st.segmented_control(_("Key/value heads (n_kv_heads)"), KV_CHOICES, key="modern_n_kv", required=True,
                                format_func=names.get)
    rows = {r["n_kv_heads"]: r for r in shared_kv.kv_choices()}
    row = rows[n_kv]
    left, right = st.columns([1, 2])
    chart(figs.groups_figure(9, n_kv, _("Which key/value head each query head reads")),
          key="modern_groups", config=chart_config("kv_groups"), target=left)
    right.markdown(_("**KV cache per token** (float32): 2 (key and value) × 30 layers × {n_kv} heads × 64 × 4 bytes = "
                     "**{per:,} bytes**; for SmolLM2's whole context of 8,192 tokens **{ctx}**.").format(
        n_kv=n_kv, per=row["kv_bytes_per_token"], ctx=_mib(row["kv_bytes_context"])))
    right.markdown(_("**Attention weights** (W_Q, W_K, W_V, W_O of 30 layers): **{params:,}**; each query head still "
                     "has its own W_Q, only W_K and W_V shrink.").format(params=row["attention_params"]))
    table = pd.DataFrame([{"n_kv_heads": r["n_kv_heads"], _("query heads per kv head"): r["group"],
                           _("attention parameters"): f"{r['attention_params']:,}",
                           _("cache bytes per token"): f"{r['kv_bytes_per_token']:,}",
                           _("cache at 8,192 tokens"): _mib(r["kv_bytes_context"])} for r in rows.values()])
    right.dataframe(table, hide_index=True, width="stretch", key="modern_kv_table")
    left.markdown(_("A generation keeps every earlier token's keys and values (the KV cache, next tab). **Multi-query** "
                  "attention (Shazeer 2019) gives all query heads one key/value head; **grouped-query** attention "
                  "(Ainslie et al. 2023) gives each group of query heads one. SmolLM2-135M has 9 query heads in 3 groups: "
                  "query head h reads key/value head h // 3."))
    diff = shared_kv.gqa_vs_torch(9, n_kv)
    right.markdown(_("Equal to the plain computation: our grouped-query attention against torch's "
                     "`F.scaled_dot_product_attention(…, enable_gqa=True)` on the same q, k, v — largest difference "
                     "**{diff}**.").format(diff=number(diff, ".1e")))
    json_download(right, {"n_kv_heads": n_kv, "choices": list(rows.values()), "gqa_vs_torch_max_abs_diff": diff},
                  f"shared_kv_heads_{n_kv}", "modern_kv_json")


def draw_cache() -> None:
    url.bind_url("modern_model", "model", tuple(MODELS), "causal")
    url.bind_url("modern_step", "step", range(1, compute.N_NEW + 1), 1)
    c1, c2 = st.columns([1, 2])
    model = c1.radio(_("Model"), tuple(MODELS), key="modern_model", format_func={m: _(t) for m, t in MODELS.items()}.get)
    step = c2.select_slider(_("Generation step"), range(1, compute.N_NEW + 1), key="modern_step")
    # SmolLM2's first generation here is seconds of a core: a long action, unless it is cached (kept an hour)
    long = compute.is_large(model) and not cache.cached(compute.cache_steps, model)
    try:
        with (long_actions.turn() if long else contextlib.nullcontext(),
              st.spinner(_("Generating 32 tokens with a cache and checking each step…"), show_time=long)):
            data = compute.cache_steps(model)
    except (CausalUnavailable, SmolLM2Unavailable) as err:
        st.warning(_("This model cannot be loaded: {error}").format(error=plain(str(err))), icon=":material/warning:")
        return
    except long_actions.Refused:  # the note says why and when
        return
    i = step - 1
    rows, shape = data["rows"][i], data["query_shape"][i]
    left, right = st.columns([2.3, 1])
    seen = data["labels"][:rows]
    layer = _("layer {layer}").format(layer=data["layer"])
    fig = figs.query_row_figure(data["weights"][i], [label(t, j) for j, t in enumerate(seen)],
                                _("The new query's weights over the cached keys ({layer}, every head)").format(layer=layer),
                                model=model, step=step)
    chart(fig, key="modern_query_row", config=chart_config("kv_cache_row"), target=left)
    right.metric(_("Cached key rows (per layer)"), rows, delta=1 if i else None)
    right.metric(_("New query"), " × ".join(map(str, shape)),
                 help=_("batch × heads × query rows × d_head: one row per head, whatever the length."))
    right.metric(_("|cached − recomputed| logits"), number(data["diffs"][i], ".1e"),
                 help=_("Largest over all 32 steps: {d}").format(d=number(data["max_diff"], ".1e")))
    shown = " ".join(f"**{plain(t)}**" if j >= data["prefill"] else plain(t) for j, t in enumerate(seen))
    st.markdown(_("Sequence so far (generated in bold), then **{next}**: {text}").format(
        next=plain(data["labels"][rows]), text=shown))
    per_token = 2 * data["n_layers"] * data["n_kv"] * data["d_head"] * 4
    st.caption(_("The cache now holds {rows} rows × {layers} layers × {kv} key/value heads × d_head {d} for keys and "
                 "for values: {bytes} bytes in float32.").format(rows=rows, layers=data["n_layers"], kv=data["n_kv"],
                                                                 d=data["d_head"], bytes=f"{rows * per_token:,}"))
    st.markdown(_("Under the causal mask the keys and values of earlier tokens never change, so a generation computes "
                  "them once and keeps them. Each new token then brings **one query row** per head, scored against "
                  "every cached key, instead of the whole matrix again. 32 tokens are generated greedily; each step's "
                  "logits are compared with a run without cache."))
    st.caption(_("Generated and checked on this server in {s} s when first asked for, then kept for everyone (the "
                 "prompt is fixed): 32 steps with the cache and one run over the whole sequence to check them.").format(
        s=number(data["seconds"], ".1f")))
    timed = timings(model)
    json_download(st, {"model": model, "step": step, "tokens": data["labels"], "prefill_rows": data["prefill"],
                       "cache_rows": data["rows"], "query_shape": data["query_shape"],
                       "max_abs_diff_per_step": data["diffs"], "new_query_weights": data["weights"][i],
                       "seconds_per_token": timed}, f"kv_cache_{model}_step{step}", "modern_cache_json")


def timings(model: str) -> dict | None:
    """The cached and uncached seconds per token, measured on this server: at once for the small causal model
    (milliseconds), on request for SmolLM2 (without the cache each of its 32 steps reruns the whole sequence: seconds
    of a core). ``None`` until measured."""
    ss = st.session_state
    ready = not compute.is_large(model) or cache.cached(compute.token_times, model)  # measured already: free, not counted
    if not ready and not ss.get(f"modern_timed_{model}"):
        st.button(_("Time 32 tokens with and without the cache"), key=f"modern_time_{model}",
                  on_click=ss.__setitem__, args=(f"modern_timed_{model}", True),
                  help=_("Generates the 32 tokens twice on this server, once recomputing every earlier token at each "
                         "step."))
        st.caption(long_actions.cost_note(_("about 10 s")))
        return None
    try:
        with (contextlib.nullcontext() if ready else long_actions.turn(),
              st.spinner(_("Timing 32 tokens with and without the cache…"), show_time=not ready)):
            timed = compute.token_times(model)
    except long_actions.Refused:  # the note says why and when; the button comes back
        ss[f"modern_timed_{model}"] = False
        return None
    st.caption(_("Measured on this server when first asked for, {n} greedy tokens: **{cached} ms** a token "
                 "with the cache, **{full} ms** recomputing every earlier token each time ({ratio}× as long). Same "
                 "tokens both ways: {same}.").format(
        n=timed["n"], cached=number(timed["cached"] * 1000, ".1f"), full=number(timed["uncached"] * 1000, ".1f"),
        ratio=number(timed["uncached"] / max(timed["cached"], 1e-9), ".1f"), same=_("yes") if timed["same"] else _("no")))
    if timed["uncached"] < timed["cached"]:
        st.caption(_("On a model this small the cache's bookkeeping costs more than recomputing saves; the saving grows "
                     "with the model and the length (choose SmolLM2 above)."))
    return timed
