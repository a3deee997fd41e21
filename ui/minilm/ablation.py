"""Head ablation on the MiniLM page: pick heads, see the embedding and every later layer change; rank all 72.

Compute is cached by value (:mod:`ui.shell.cache` budget ``encoder_layers``, shared with the traces it sits beside), and
the model is never changed: ablation runs in a thread-private context.
"""
from __future__ import annotations

import functools
import inspect
import json

import pandas as pd
import streamlit as st

from transformer_core.analysis.ablation import format_heads
from transformer_core.figures import ablation as figs
from transformer_core.figures.stage import chart_config
from transformer_core.records.serialize import csv_file

from ..parts.ablation_controls import MODE_NAMES, controls, file_stem
from ..shell import cache, heavy, long_actions
from ..shell.cache import memo
from ..shell.chart import chart
from ..shell.downloads import download_button
from ..shell.i18n import _
from ..shell.url import bind_url
from . import compute

# ------------------------------------------------------------------ MiniLM


def holding_with_reference(func):
    """Decorator: ``func(sentences, …, reference=…)`` runs inside the heavy slot (:mod:`ui.shell.heavy`), sized by
    the larger of the page's run on ``sentences`` and the reference set's largest batch: a short sentence with a
    long reference set is a large computation too."""
    @functools.wraps(func)
    def run(sentences, *args, **kwargs):
        bound = inspect.signature(func).bind(sentences, *args, **kwargs)
        reference = bound.arguments.get("reference")
        with heavy.large(max(compute.attention_nbytes(sentences), reference_nbytes(reference))):
            return func(sentences, *args, **kwargs)
    return run


def reference_nbytes(reference: tuple[str, ...] | None) -> int:
    """Attention bytes of the reference set's largest batch (0 for the default set, which is small)."""
    if not reference:
        return 0
    from transformer_core.analysis.ablation.embedding_reference import reference_attention_bytes

    try:
        return reference_attention_bytes(reference)
    except Exception:  # noqa: BLE001  (a missing MiniLM is reported by the computation itself)
        return 0


@memo("encoder_layers")
@holding_with_reference  # the whole model on the batch: one large computation at a time (ui/shell/heavy.py)
def _effects(sentences: tuple[str, ...], padding: bool, heads: tuple, mode: str, batch: int, layer: int,
             reference: tuple[str, ...] | None = None) -> dict:
    from transformer_core.analysis.ablation.embedding import ablation_effects

    out = ablation_effects(list(sentences), heads, mode=mode, padding=padding, max_tokens=512, weights_layer=layer,
                           reference=reference)
    out["weights"] = {k: v[batch] for k, v in out["weights"].items()}  # [head, query_pos, key_pos], one sentence
    return out


@memo("encoder_summaries", key=lambda sentences, padding, mode, reference=None, progress=None:
      (sentences, padding, mode, reference))
@holding_with_reference
def _ranked(sentences: tuple[str, ...], padding: bool, mode: str, reference: tuple[str, ...] | None = None,
            progress=None) -> dict:
    from transformer_core.analysis.ablation.embedding import rank_heads

    return rank_heads(list(sentences), mode=mode, padding=padding, max_tokens=512, progress=progress,
                      reference=reference)


REFERENCE_LONG_TOKENS = 512  # a pasted reference set above this many tokens is a long action (0.6-1.8 s of a core)


def _effects_in_turn(sentences, padding, heads, mode, batch, layer, reference):
    """:func:`_effects`, as a long action (:mod:`ui.shell.long_actions`) when it must compute the means of a pasted
    reference set of more than :data:`REFERENCE_LONG_TOKENS` tokens; otherwise at once."""
    from transformer_core.analysis.ablation.embedding_reference import reference_is_cached

    args = (sentences, padding, heads, mode, batch, layer, reference)
    if (reference is None or cache.cached(_effects, *args) or _fit("\n".join(reference)).tokens
            <= REFERENCE_LONG_TOKENS or reference_is_cached(reference)):
        return _effects(*args)
    with long_actions.turn(), st.spinner(_("Computing the reference set's mean contexts ({n} tokens) …").format(
            n=f"{_fit(chr(10).join(reference)).tokens:,}"), show_time=True):
        return _effects(*args)


def reference_control(mode: str) -> tuple[str, ...] | None:
    """The mean ablation's reference set (``"mean"`` mode): shown, and editable one sentence a line; None = the
    default set :data:`~transformer_core.analysis.ablation.embedding_reference.REFERENCE_SENTENCES`."""
    from transformer_core.analysis.ablation.embedding_reference import REFERENCE_NAME, REFERENCE_SENTENCES

    if mode != "mean":
        return None
    key = "minilm_ablate_reference"
    st.session_state.setdefault(key, "\n".join(REFERENCE_SENTENCES))
    fit = _fit(str(st.session_state[key]))
    lines = fit.sentences
    custom = bool(lines) and lines != REFERENCE_SENTENCES
    title = (_("Reference set: {n} sentences of your own").format(n=len(lines)) if custom else
             _("Reference set: {name} ({n} everyday sentences)").format(name=REFERENCE_NAME,
                                                                        n=len(REFERENCE_SENTENCES)))
    with st.expander(title, icon=":material/dataset:"):
        st.text_area(_("One sentence a line"), key=key, height=200,
                     help=_("Mean ablation puts, at each position, the head's mean context at that position over these "
                            "sentences (padding mask on); a position beyond the longest of them gets the head's mean "
                            "over all their tokens. Empty = the default set."))
        if not lines:
            st.caption(_("No sentence: the default set {name} is used.").format(name=REFERENCE_NAME))
        elif custom and fit.tokens > REFERENCE_LONG_TOKENS:
            st.caption(_("These {n} tokens' mean contexts are computed once, then kept a minute.").format(
                n=f"{fit.tokens:,}") + " " + long_actions.cost_note(_("up to 2 s")))
    if fit.cut_by is not None:  # said outside the box too: the student may not have it open
        st.info(cut_note(fit), icon=":material/content_cut:")
    return lines if custom else None


def _fit(text: str):
    # not memoized: the key would be the whole pasted text, kept for the process's life; the budget's byte cut
    # comes before tokenizing, so a rerun costs a few ms whatever was pasted
    from transformer_core.analysis.ablation.embedding_reference import fit_reference

    return fit_reference(text.splitlines())


def cut_note(fit) -> str:
    """The page's note for a reference set cut to its budget
    (:func:`~transformer_core.analysis.ablation.embedding_reference.fit_reference`), in the page's language."""
    from transformer_core.analysis.ablation.embedding_reference import (
        REFERENCE_MAX_BYTES,
        REFERENCE_MAX_LINES,
        REFERENCE_MAX_TOKENS,
    )

    return _("Reference set cut to its first {kept} of {given} sentences: a reference set may hold at most {lines} "
             "sentences, {tokens} tokens and {kb} kB of text, so that its mean fits in the server's memory.").format(
        kept=len(fit.sentences), given=fit.given, lines=REFERENCE_MAX_LINES, tokens=f"{REFERENCE_MAX_TOKENS:,}",
        kb=REFERENCE_MAX_BYTES // 1024)


def minilm_section(sentences: tuple[str, ...], padding: bool, batch: int, labels: tuple[str, ...],
                   n_layers: int = 6, n_heads: int = 12) -> None:
    """"What a head does" on MiniLM: pick heads, see the embedding cosine, each layer's shift, a later
    layer's weights ablated beside intact, the nearest sentence; rank all heads on request."""
    st.subheader(_("What a head does: knock heads out"))
    st.caption(_("Attention weights only *suggest* what a head is for. Remove the head — set its context to zero before "
                 "W_O, or to its mean at each position over a reference set of sentences (mean ablation, as in "
                 "IOI, ACDC and TransformerLens's patching; or over this sentence's own tokens) — and measure what "
                 "changes in the sentence embedding (as sentence-transformers makes it: the first 256 tokens, mean over "
                 "real tokens, L2-normalised) and in every later layer."))
    heads, mode = controls("minilm_", n_layers, n_heads, ())
    reference = reference_control(mode)
    fmt = st.session_state.get("shared_image_format", "png")
    if heads:
        first = heads[0][0]
        later = list(range(first, n_layers))
        compared = bind_url("minilm_ablate_layer", "ablate_layer", later, min(first + 1, n_layers - 1))
        try:
            out = _effects_in_turn(sentences, padding, heads, mode, batch, compared, reference)
        except long_actions.Refused:  # the note says why and when; the ranking below stays available
            _rank(sentences, padding, batch, mode, fmt, reference)
            return
        text = format_heads(heads)
        cos = float(out["cosine"][batch])
        said = (_("**Ablating {heads}** ({mode}): sentence {b}'s embedding has cosine **{cos}** with the intact "
                  "one (1 = unchanged). Layers before {first} do not move; from layer {first} on:") if first else
                _("**Ablating {heads}** ({mode}): sentence {b}'s embedding has cosine **{cos}** with the intact "
                  "one (1 = unchanged). Every layer can move, from layer 0 on:"))  # not "layers before 0"
        st.markdown(said.format(heads=format_heads(heads, ", "), mode=_(MODE_NAMES[mode]), b=batch, cos=f"{cos:.4f}",
                                first=first))
        long = [b for b, (seen, n) in enumerate(zip(out["embedding_tokens"], out["trace"].lengths)) if seen < n]
        if long:
            st.caption(_("Sentence {b} has {n} tokens: its embedding uses the first {cut}, as sentence-transformers "
                         "cuts all-MiniLM-L6-v2's input (max_seq_length = {cut}); the layers' shifts and weights use all "
                         "{n}.").format(b=long[0], n=out["trace"].lengths[long[0]], cut=out["embedding_tokens"][long[0]]))
        chart(figs.shift_figure(out["shift"][:, batch], cos, text, batch), key="minilm_ablate_shift",
              config=chart_config(f"ablation_{file_stem(heads)}_shift", fmt))
        layer = st.select_slider(_("Later layer to compare"), later, key="minilm_ablate_layer",
                                 help=_("Its attention weights, intact (top row) beside ablated (bottom row)."))
        tr = out["trace"]
        chart(figs.weights_beside(out["weights"]["intact"], out["weights"]["ablated"], tr.tokens[batch],
                                  layer=layer, visible=tr.visible(batch)),
              key="minilm_ablate_weights", config=chart_config(f"ablation_{file_stem(heads)}_L{layer}_weights", fmt))
        if len(sentences) > 1:
            near = out["nearest"]
            st.dataframe(pd.DataFrame({
                _("sentence"): list(labels), _("cosine ablated·intact"): out["cosine"],
                _("nearest other (intact)"): [labels[j] if j is not None else "" for j in near["intact"]],
                _("nearest other (ablated)"): [labels[j] if j is not None else "" for j in near["ablated"]],
                _("changed"): [a != b for a, b in zip(near["intact"], near["ablated"])]}),
                hide_index=True, key="minilm_ablate_nearest",
                column_config={_("cosine ablated·intact"): st.column_config.NumberColumn(format="%.5f")})
        _downloads(out, text, mode, labels, file_stem(heads))
    else:
        st.caption(_("Pick heads above (or turn on **Click tiles to ablate heads** by the overview) to see what "
                     "removing them does."))
    _rank(sentences, padding, batch, mode, fmt, reference)


def _downloads(out: dict, text: str, mode: str, labels, stem: str) -> None:
    frame = pd.DataFrame(out["shift"].T, columns=[f"layer {i} shift" for i in range(out["shift"].shape[0])])
    frame.insert(0, "cosine", out["cosine"])
    frame.insert(0, "sentence", list(labels))
    data = {"ablate": text, "mode": mode, "reference": out["reference"], "sentences": list(labels),
            "embedding_tokens": out["embedding_tokens"], "cosine": out["cosine"].tolist(),
            "shift_by_layer": out["shift"].tolist(), "nearest": out["nearest"]}
    c1, c2 = st.columns(2)
    download_button(c1, "⬇ " + _("Effects as CSV"), csv_file(frame.to_csv(index=False)),
                       file_name=f"ablation_{stem}.csv",
                       mime="text/csv", key="minilm_ablate_csv", width="stretch")
    download_button(c2, "⬇ " + _("Effects as JSON"), json.dumps(data, indent=1), file_name=f"ablation_{stem}.json",
                       mime="application/json", key="minilm_ablate_json", width="stretch")


def _rank(sentences, padding, batch, mode, fmt, reference=None) -> None:
    ss = st.session_state
    key = (sentences, padding, mode, reference)
    ready = cache.cached(_ranked, sentences, padding, mode, reference)  # computed for anyone: free, not counted
    if st.button(_("Rank the heads: ablate each of the 72 alone"), key="minilm_rank_button", icon=":material/sort:"):
        kept = {k: v for k, v in ss.get("minilm_rank", {}).items() if k[:2] == key[:2]} if isinstance(
            ss.get("minilm_rank"), dict) else {}  # rankings of other sentences are dropped
        note = st.empty()
        try:
            if ready:
                kept[key] = _ranked(sentences, padding, mode, reference)["cosine"]
            else:
                with long_actions.turn(note):
                    bar = note.progress(0.0, text=_("Ablating the heads of layer 0 …"))
                    passes = _("{done} of {total} passes (one per layer's heads) done")

                    def progress(done: int, total: int) -> None:
                        bar.progress(done / total, text=passes.format(done=done, total=total))

                    kept[key] = _ranked(sentences, padding, mode, reference, progress=progress)["cosine"]
                note.empty()
            ss["minilm_rank"] = kept
        except long_actions.Refused:
            pass  # the note says why and when
    # every ranking of these sentences is kept in the session, keyed by its inputs (mode, reference set): a rerun
    # or a switch of the mode and back shows it again without the seconds of work
    ranks = ss.get("minilm_rank") if isinstance(ss.get("minilm_rank"), dict) else {}
    if key not in ranks:
        what = _("**Rank the heads** ablates each head alone (72 runs, batched one layer at a time) and sorts them "
                 "by how far the embedding moves.")
        st.caption(what + " " + (_("Already computed on this server: shown at once, not counted.") if ready else
                                 long_actions.cost_note(_("from under a second (one short sentence) to about 10 s "
                                                          "(6 sentences of 64 tokens)"))))
        return
    cosine = ranks[key]
    chart(figs.rank_figure(cosine, batch), key="minilm_rank_chart",
          config=chart_config(f"ablation_rank_{mode}", fmt))
    table = pd.DataFrame([{"head": f"L{lay}H{h}", "layer": lay, "1 − cosine": float(1 - cosine[lay, h, batch])}
                          for lay in range(cosine.shape[0]) for h in range(cosine.shape[1])])
    table = table.sort_values("1 − cosine", ascending=False, kind="stable")
    download_button(st, "⬇ " + _("Ranking as CSV"), csv_file(table.to_csv(index=False)),
                       file_name=f"ablation_rank_{mode}.csv",
                       mime="text/csv", key="minilm_rank_csv")
