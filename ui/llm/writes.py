"""What the heads write, on the real-LLM page: direct logit attribution (every head's and MLP's direct share of the
answer), the logit lens (the answer forming layer by layer) and activation patching (which heads and positions carry
it from a clean prompt into a corrupted one).

Attribution and the lens come from the prompt's one cached run (:func:`ui.llm.compute.summary`); patching runs on
request (two batched passes per layer, with a progress bar). URL: ``target=``, ``contrast=`` (token ids of the top-5, ``contrast``
may be ``none``) and ``corrupt=`` (the corrupted prompt).
"""
from __future__ import annotations

import contextlib
from functools import partial

import numpy as np
import streamlit as st

from transformer_core.analysis.token_choices import is_byte_piece
from transformer_core.figures.stage import chart_config
from transformer_core.figures.writes import dla_figure, lens_figure, patching_figure

from ..parts.numbers import number
from ..shell import cache, fragments, long_actions
from ..shell.cache import per_trace
from ..shell.chart import chart, spec
from ..shell.i18n import _
from ..shell.lazy import lazy_expander
from ..shell.markdown import plain
from ..shell.url import bind_url
from . import compute
from .catalog import Choice

MAX_CORRUPT_CHARS = 2000


def _pickers(choice: Choice, prompt: str) -> tuple[int, int | None, dict]:
    """The target and contrast tokens (``?target=``, ``?contrast=``): the top-5 after the prompt, then the prompt's
    own tokens. The default target is the prediction, the default contrast the prompt's token most like it."""
    offered = compute.choices(choice, prompt)
    ids = offered["ids"]
    names = {i: f"{offered['labels'][i]} ({number(offered['probs'][i], '.1%')})" for i in ids}  # labels: readable
    contrasts = ["none", *ids]
    fallback = offered["nearest"].get(ids[0]) or "none"
    ss = st.session_state
    # a new prompt brings new choices: one that is no longer among them goes back to the default
    if ss.get("llm_target", ids[0]) not in ids:
        ss["llm_target"] = ids[0]
    if ss.get("llm_contrast", "none") not in contrasts:
        ss["llm_contrast"] = fallback
    bind_url("llm_target", "target", ids, ids[0], labels=[names[i] for i in ids])
    bind_url("llm_contrast", "contrast", contrasts, fallback, labels=["none"] + [names[i] for i in ids])
    c1, c2 = st.columns(2)
    target = c1.selectbox(_("Target token"), ids, key="llm_target", format_func=names.get,
                          help=_("The five most likely next tokens, then the prompt's own tokens."))
    contrast = c2.selectbox(_("Contrast token (its logit is subtracted)"), contrasts, key="llm_contrast",
                            format_func=lambda c: _("none") if c == "none" else names[c])
    if contrast == target:
        contrast = "none"
        c2.caption(_("The contrast is the target itself: none is subtracted."))
    return target, None if contrast == "none" else int(contrast), names


def _where_it_looks(choice: Choice, prompt: str, layer: int, head: int, tokens: tuple[str, ...]) -> str:
    """``token (weight)`` the head's last query weighs most (its layer recomputed from the cached residual)."""
    weights = compute.layer_trace(choice, prompt, layer).stage("weights", layer)[0, head, -1]  # [key_pos]
    k = int(np.argmax(weights))
    return f"{tokens[k]} ({number(float(weights[k]), '.2f')})"


def _attribution(choice: Choice, prompt: str, summary: dict, target: int, contrast: int | None) -> None:
    out = compute.attribution(choice, prompt, target, contrast)
    short = partial(compute.lens_label, choice)  # the title names the tokens briefly (a byte piece as ‹bytes›), the pickers in full
    what = short(target) if contrast is None else f"{short(target)} − {short(contrast)}"
    fmt = st.session_state.get("shared_image_format", "png")
    left, right = st.columns([1.1, 1], gap="medium")
    figure = per_trace(summary["trace"], ("llm_dla", target, contrast), lambda: spec(dla_figure(
        out["heads"], out["mlps"], title=_("Direct logit attribution: {what}").format(what=what))))  # once, shared
    chart(figure, key="llm_dla", config=chart_config(f"{choice.slug}_dla", fmt), target=left)
    tokens = summary["trace"].tokens[0]
    order = np.argsort(-out["heads"].ravel(), kind="stable")[:5]
    config = summary["config"]
    best = [divmod(int(i), config.n_heads) for i in order]
    with right:
        # a checkpoint with output-projection biases (Llama's attention_bias) adds them in every layer: one term of
        # their own, as TransformerLens's "bias" row, or the parts would not add up
        said = (_("**The parts add up to the answer.** Embeddings {e}, the {n_heads} heads {h}, the {n_layers} MLPs "
                  "{m}: **{total}**, the model's own logit {kind} **{diff}**.") if out.get("bias") is None else
                _("**The parts add up to the answer.** Embeddings {e}, the {n_heads} heads {h}, the {n_layers} MLPs "
                  "{m}, the attention output biases {b}: **{total}**, the model's own logit {kind} **{diff}**."))
        st.markdown(said.format(
            b=number(out.get("bias") or 0.0, "+.2f"), n_heads=config.n_layers * config.n_heads, n_layers=config.n_layers,
            e=number(out["embed"], "+.2f"), h=number(float(out["heads"].sum()), "+.2f"),
            m=number(float(out["mlps"].sum()), "+.2f"), total=number(out["total"], "+.3f"),
            kind=_("difference") if contrast is not None else _("value"), diff=number(out["logit_diff"], "+.3f")))
        st.markdown(_("**The heads that write it most**, and the token their last query weighs most:"))
        st.markdown("\n".join(f"- L{lay}H{h}: **{number(float(out['heads'][lay, h]), '+.2f')}** → "
                              f"`{_where_it_looks(choice, prompt, lay, h, tokens).replace('`', 'ˋ')}`"
                              for lay, h in best))
        st.caption(_("Before the final norm the last position's residual stream is a sum: the embedding, every head's "
                     "output (its context through its slice of W_O) and every MLP's output. With the norm's scale "
                     "frozen from this run, each part's direct share of the logit is one dot product with W_U[target] "
                     "(minus W_U[contrast]), as TransformerLens's logit_attrs. It leaves out what a part does "
                     "through later layers: patching, below, sees that."))


def _lens(choice: Choice, prompt: str, summary: dict, target: int) -> None:
    # closed by default: a row per layer × the positions through W_U (SmolLM2: 31 × 49,152) is ~0.5 s at 16 tokens,
    # paid only by a student who opens it (?lens=1)
    box = lazy_expander(_("Logit lens: the answer forming layer by layer"), key="llm_lens_box", url="lens",
                        icon=":material/stacked_line_chart:")
    if not box.open:
        return
    with box:
        _lens_figure(choice, prompt, summary, target)


def _lens_figure(choice: Choice, prompt: str, summary: dict, target: int) -> None:
    out = compute.lens(choice, prompt, target)
    tokens = list(summary["trace"].tokens[0][out["first"]:])
    fmt = st.session_state.get("shared_image_format", "png")
    label = compute.readable(compute.token_label(choice, target))
    chart(lens_figure(out["target_prob"], out["labels"], tokens, target=label, first=out["first"]),
          key="llm_lens", config=chart_config(f"{choice.slug}_logit_lens", fmt))
    if out["first"]:
        st.caption(_("The last {n} positions are shown; the first {m} are left out.").format(
            n=len(tokens), m=out["first"]))
    st.caption(_("Logit lens (nostalgebraist 2020): the residual stream after each layer is read as if it were the "
                 "last, through the final RMSNorm and the unembedding W_U. The bottom row is the model's own "
                 "prediction."))


def _default_corrupt(choice: Choice, prompt: str, target: int, contrast: int | None) -> str:
    """The prompt with the contrast word's last occurrence replaced by the target word, so the answer flips (in the
    indirect-object prompt the subject's second mention becomes the other name: "…, Mary gave a drink to" → John);
    the prompt itself when the contrast word is not in it, or either token is a byte piece (its label is not text
    that could be typed: put in, it made the corrupted prompt twice as long)."""
    if contrast is None:
        return prompt
    a, b = (compute.token_label(choice, t).replace("␣", " ").strip() for t in (target, contrast))
    at = prompt.rfind(b) if a and b and not (is_byte_piece(a) or is_byte_piece(b)) else -1
    return prompt if at < 0 else prompt[:at] + a + prompt[at + len(b):]


def _patching(choice: Choice, prompt: str, summary: dict, target: int, contrast: int | None) -> None:
    st.markdown(_("**Activation patching.** Run a corrupted prompt of the same length, then put back one head's "
                  "output (or the residual stream at one position) from the clean run: how much of the clean logit "
                  "difference comes back? 1 = all of it, 0 = none."))
    if contrast is None:
        st.info(_("Patching measures a logit difference: pick a contrast token above."), icon=":material/info:")
        return
    ss = st.session_state
    if "llm_corrupt" not in ss or ss.get("llm_corrupt_for") != (choice, prompt, target, contrast):
        raw = st.query_params.get("corrupt") if "llm_corrupt" not in ss else None
        ss["llm_corrupt"] = str(raw)[:MAX_CORRUPT_CHARS] if raw else _default_corrupt(choice, prompt, target, contrast)
        ss["llm_corrupt_for"] = (choice, prompt, target, contrast)
    corrupt = st.text_input(_("Corrupted prompt (same number of tokens)"), key="llm_corrupt")[:MAX_CORRUPT_CHARS]
    if st.query_params.get("corrupt") != corrupt:
        st.query_params["corrupt"] = corrupt
    key = (choice, prompt, corrupt, target, contrast)
    ready = cache.cached(compute.patched, *key)  # free, not counted
    passes = 2 * summary["config"].n_layers
    if st.button(_("Patch every head and every position"), key="llm_patch_button", icon=":material/healing:",
                 help=_("{passes} batched passes of the model (SmolLM2: about 20 s of the server's time at 14 tokens "
                        "when it is idle, minutes when many students run things at once).").format(passes=passes)):
        note = st.empty()
        try:
            with contextlib.nullcontext() if ready else long_actions.turn(note):
                bar = note.progress(0.0, text=_("Patching …"))
                ss["llm_patch"] = (key, compute.patched(*key, progress=lambda done, total:
                                                        bar.progress(done / total, text=_("{done} of {total} passes")
                                                                     .format(done=done, total=total))))
            note.empty()
        except ValueError as err:
            note.empty()
            ss["llm_patch"] = (key, {"error": str(err)})
        except long_actions.Refused:
            pass  # the note says why and when
    if ss.get("llm_patch", (None,))[0] != key:
        st.caption(_("Press the button to patch (on request: it runs the model {passes} times in batches).").format(
            passes=passes) + " " + (
            _("Already computed on this server: shown at once, not counted.") if ready else
            long_actions.cost_note(_("about 20 s at 14 tokens") if choice.is_smollm2 else
                                   _("about {passes} runs of this model").format(passes=passes))))
        return
    out = ss["llm_patch"][1]
    if "error" in out:
        st.warning(_("Cannot patch: {error}.").format(error=plain(out["error"])), icon=":material/warning:")
        return
    if not abs(out["ld_clean"] - out["ld_corrupt"]) > 1e-4:  # every score divides by this gap: 0/0, or noise over ~0
        st.info(_("The corrupted prompt gives the same logit difference as the prompt ({ld}): there is nothing for a "
                  "patch to bring back, so no score can be computed. Change the corrupted prompt so that the answer "
                  "changes (swap a name, for instance).").format(ld=number(out["ld_clean"], "+.3f")),
                icon=":material/info:")
        return
    fmt = ss.get("shared_image_format", "png")
    tokens = summary["trace"].tokens[0]
    left, right = st.columns(2, gap="medium")
    chart(patching_figure(out["heads"], of="heads", x_labels=[str(h) for h in range(out["heads"].shape[1])],
                          x_title=_("head"), title=_("Each head's output patched in")), key="llm_patch_heads",
          config=chart_config(f"{choice.slug}_patch_heads", fmt), target=left)
    chart(patching_figure(out["positions"], of="positions", x_labels=[f"{j}: {t}" for j, t in enumerate(tokens)],
                          x_title=_("position"), title=_("The residual stream entering each layer, one position")),
          key="llm_patch_positions", config=chart_config(f"{choice.slug}_patch_positions", fmt), target=right)
    st.caption(_("Logit difference clean {clean}, corrupted {corrupt}. Scores are (patched − corrupted) ÷ (clean − "
                 "corrupted), as Wang et al. 2022 and TransformerLens's patching.").format(
        clean=number(out["ld_clean"], "+.3f"), corrupt=number(out["ld_corrupt"], "+.3f")))


def section(choice: Choice, prompt: str, summary: dict) -> None:
    """The section: pickers, then attribution, the logit lens (in a box opened on request) and patching."""
    st.subheader(_("What the heads write"))
    st.caption(_("Where a head looks is not what it writes. Pick the token to explain and one to compare it with."))
    target, contrast, _names = _pickers(choice, prompt)
    _attribution(choice, prompt, summary, target, contrast)
    _lens(choice, prompt, summary, target)
    # a part of its own: while patching runs (tens of seconds, minutes on a busy server) the rest of the page stays
    # as it is instead of greying, and editing the corrupted prompt reruns only this part
    fragments.part("llm_patching", _patching, choice, prompt, summary, target, contrast)
