"""Trained model (MiniLM-L6): a real BERT's attention on our own modules — every head at a glance,
per-head statistics, and any one head stage by stage."""
from ui.shell import nav  # first, before the heavy imports below

nav.enter_through_app()  # a fresh server's first visitor by deep link: straight to app.py's menu

import dataclasses
import math
from functools import partial

import streamlit as st

from transformer_core.figures.overview import overview_figure
from transformer_core.models.minilm import PretrainedUnavailable
from ui.minilm import ablation, head_fragment, moves, wordpiece_note
from ui.minilm import compute as minilm
from ui.parts import ablation_controls, head_view, moves_panels, trace_tables
from ui.parts.labels import and_list, sentence_label
from ui.parts.numbers import number
from ui.shell import callbacks, controls, fragments, url
from ui.shell.i18n import _, language, ngettext
from ui.shell.lazy import lazy_expander

N_LAYERS, N_HEADS = 6, 12
ss = st.session_state
settings = controls.current()
st.title(_("Trained model: MiniLM-L6"))
st.caption(_("all-MiniLM-L6-v2, a 6-layer BERT encoder (12 heads per layer, d_model = 384, d_head = 32), trained as a "
             "sentence-embedding model and run on this app's own attention modules: these patterns were *learned*. "
             "From the sidebar only the **sentences** and the **Padding mask** apply here (MiniLM has its own "
             "WordPiece tokenizer, sizes and weights, and attends in both directions)."))

if not settings.sentences:
    st.info(_("Type at least one sentence in the sidebar to begin."), icon=":material/edit:")
    st.stop()
if language() != "en" and settings.sentences == controls.default_sentences(language()):
    # the untouched Chinese example would be mostly [UNK] here: MiniLM opens on the English one, and says why
    settings = dataclasses.replace(settings, sentences=controls.default_sentences("en"))
    st.caption(_("The sidebar's example sentences are Chinese, and MiniLM's WordPiece vocabulary reads most Chinese "
                 "characters as [UNK]: this page shows the English example instead. Sentences you type in the "
                 "sidebar are shown as typed."))
sentences, example = minilm.with_example(settings.sentences)
try:
    summary = minilm.minilm_summary(sentences, settings.padding)
except PretrainedUnavailable as err:
    st.error(_("The trained model MiniLM-L6 is not available, so this page cannot run: {error}").format(error=err),
             icon=":material/block:")
    st.caption(_("The other pages use the toy model and keep working."))
    st.stop()
except ValueError as err:
    st.warning(_("Nothing to show: {error}.").format(error=err), icon=":material/warning:")
    st.stop()


trace = summary["trace"]  # tokens and mask; one layer's stages are computed below, when it is open
sentences_shown = [" ".join(t[1:n - 1]) for t, n in zip(trace.tokens, trace.lengths)]
labels = tuple(sentence_label(b, text, 60) for b, text in enumerate(sentences_shown))
# widget callbacks from ui.shell.callbacks, never this page's functions (they would keep this run alive)
open_head = dict(layer_key="minilm_layer", head_key="minilm_head", n_heads=N_HEADS)
with url.batch():  # one message to the browser for both
    url.bind_url("minilm_batch", "sentence", range(len(sentences_shown)), 0, labels=labels)
    url.bind_url("minilm_hide_special", "hide", (False, True), False, to_text=lambda v: "1" if v else "0")
pick, hide_col = st.columns([3, 2], vertical_alignment="bottom")
batch = pick.selectbox(_("Sentence"), range(len(sentences_shown)), key="minilm_batch",
                       format_func=partial(callbacks.label_of, labels),
                       help=_("Which sentence of the batch to look at (one per line in the sidebar)."))
hide_col.toggle(_("Hide attention to special tokens"), key="minilm_hide_special",
                help=_("Blank the [CLS], [SEP] and [PAD] key columns in the overview and the masked-score and "
                       "weight figures. Hidden cells are only blanked, not renormalised: what is missing went to "
                       "[CLS], [SEP] and [PAD] (many heads park their attention there)."))
hide_keys = minilm.special_mask(trace, batch) if ss["minilm_hide_special"] else None
stats = summary["stats"][batch]
n_tokens, n_real = len(trace.tokens[batch]), trace.lengths[batch]
wordpiece_note.show(trace, batch, sentences[batch])  # Chinese is mostly [UNK] to MiniLM: say so, the count, the words
# notes on the sentence and its padding, before the overview's instruction and controls
if example:
    st.caption(_("You typed one sentence, so the built-in example “{example}” is added as sentence 1: the two have "
                 "different lengths, so the shorter one is padded with [PAD] and the **Padding mask** has something to "
                 "act on.").format(example=example)
               + (" " + _("The example stays English: MiniLM's WordPiece vocabulary reads most Chinese characters as "
                          "[UNK], so a Chinese example would show little.") if language() != "en" else ""))
n_pad = n_tokens - n_real
padded = [b for b, n in enumerate(trace.lengths) if n < len(trace.tokens[b])]
if n_pad and settings.padding:
    st.caption(ngettext("Sentence {b} ends with {n} [PAD] token. **Padding mask on**: its key column is blank (weight "
                        "exactly 0), so real tokens attend only to real tokens. Turn it off in the sidebar to see what "
                        "happens without it.",
                        "Sentence {b} ends with {n} [PAD] tokens. **Padding mask on**: their key columns are blank "
                        "(weight exactly 0), so real tokens attend only to real tokens. Turn it off in the sidebar to "
                        "see what happens without it.", n_pad).format(b=batch, n=n_pad))
elif n_pad:
    top = stats.loc[stats["pad_share"].idxmax()]
    st.warning(_("Sentence {b} ends with {pads}. **Padding mask off**: MiniLM attends to them as if they were words. "
                 "Real tokens give [PAD] {mean} of their attention on average over all 72 heads, up to {top} in layer "
                 "{layer}, head {head} (column “to [PAD]” below), so this sentence's outputs depend on the padding.")
               .format(b=batch, pads=ngettext("{n} [PAD] token", "{n} [PAD] tokens", n_pad).format(n=n_pad),
                       mean=number(stats["pad_share"].mean(), ".1%"), top=number(top["pad_share"], ".1%"),
                       layer=int(top["layer"]), head=int(top["head"])), icon=":material/warning:")
elif padded:
    one = len(padded) == 1
    st.caption((_("Sentence {b} is the longest and has no [PAD]; sentence {others} is padded — pick it to see what the "
                  "padding mask does.") if one else
                _("Sentence {b} is the longest and has no [PAD]; sentences {others} are padded — pick one to see what "
                  "the padding mask does.")).format(b=batch, others=and_list(padded)))

clicking = bool(ss.get("minilm_ablate_click"))  # "Click tiles to ablate heads", drawn under the overview
st.markdown((_("**All {layers} layers × {heads} heads** of sentence {b} (attention weights; rows = queries, columns = "
               "keys). **Click a tile's centre** to ablate that head in “What a head does” below, or to bring it "
               "back.") if clicking else
             _("**All {layers} layers × {heads} heads** of sentence {b} (attention weights; rows = queries, columns = "
               "keys). **Click a tile's centre** to open that head below.")).format(layers=N_LAYERS, heads=N_HEADS,
                                                                                     b=batch))
# no highlight frame: the figure stays byte-identical when a tile is clicked, so it is not resent
overview = overview_figure(trace, batch, height=320, n_layers=N_LAYERS, n_heads=N_HEADS,
                           tiles=summary["overview"][(batch, hide_keys is not None)])
color = moves_panels.color_control()  # ?color=: tiles fade by a head-type score; ?stage=norms: tiles of ‖α·f(x)‖
overview = moves.overview(overview, trace, sentences, settings.padding, batch, hide_keys is not None, color)
ablation_controls.click_toggle("minilm_")
if (pool := overview.layout.meta["pool"]) > 1:
    st.caption(_("Long sentence: each overview cell shows the largest weight of a {pool} × {pool} block of tokens. "
                 "The open head below shows every token.").format(pool=pool))
overview = ablation_controls.frame_ablated(overview, "minilm_", N_LAYERS, N_HEADS)
if hide_keys is not None:
    st.caption(_("Hidden cells are only blanked, **not renormalised**: a row's remaining weights add up to less than 1; "
                 "the missing part went to [CLS], [SEP] and [PAD]."))
# the overview and the head view are one part: a tile, stage, layer, head, cell or tab click reruns only them
# (ui/shell/fragments.py)
fragments.part("minilm", head_fragment.minilm, trace, sentences, settings.padding, batch, hide_keys, N_LAYERS, N_HEADS,
               overview=overview, open_head=open_head)

st.subheader(_("Per-head statistics"))
st.caption(_("Sentence {b}, averaged over its {n} real query rows. Click a column header to sort; select a row to open "
             "that head in the head view above ↑. Entropy runs from 0 (all weight on one key) to ln {tokens} = {max} "
             "(spread evenly over every key).").format(b=batch, n=n_real, tokens=n_tokens, max=number(math.log(n_tokens), ".2f")))
share = _("Share of each query's attention that goes to {} keys (mean over real queries).")
shown = stats.copy()
shown[["cls_share", "sep_share", "pad_share"]] *= 100  # percentages, one format for every cell
percent = dict(format="%.1f%%", min_value=0.0, max_value=100.0)
st.dataframe(shown, key="minilm_stats", on_select=partial(callbacks.open_row, "minilm_stats", **open_head,
                                                           then=partial(head_view.opened_by_tile, "minilm_")),
             selection_mode="single-row", hide_index=True, height=320, column_config={
                 # widths in px: all eight columns fit the 820-px column of a 1280×720 projector ("to [PAD]" was cut)
                 "layer": st.column_config.NumberColumn(_("layer"), width=52),
                 "head": st.column_config.NumberColumn(_("head"), width=52),
                 "entropy": st.column_config.NumberColumn(
                     _("entropy (nats)"), format="%.2f", width=104,
                     help=_("−Σ w ln w of each query's weights: low = focused head, high = diffuse head.")),
                 "mean_distance": st.column_config.NumberColumn(
                     _("mean distance"), format="%.2f", width=104,
                     help=_("Σ_j w_ij |i − j|: how many positions away a query looks, on average.")),
                 "max_weight": st.column_config.ProgressColumn(
                     _("max weight"), format="%.2f", min_value=0.0, max_value=1.0, width=112,
                     help=_("The largest weight any real query gives any key.")),
                 "cls_share": st.column_config.ProgressColumn(_("to [CLS]"), help=share.format("[CLS]"), width=108,
                                                              **percent),
                 "sep_share": st.column_config.ProgressColumn(_("to [SEP]"), help=share.format("[SEP]"), width=108,
                                                              **percent),
                 "pad_share": st.column_config.ProgressColumn(
                     _("to [PAD]"), help=share.format("[PAD]") + _(" 0 while the padding mask is on."), width=108,
                     **percent),
             })

moves.sections(trace, sentences, settings.padding, batch, color)  # ?view=rollout|flow, ?pair=i,j, head types
ablation.minilm_section(sentences, settings.padding, batch, labels)
ablation_controls.result_into_view("minilm_")  # after a tile click that ablated a head: its result in view

tokens_box = lazy_expander(_("Tokens of every sentence"), key="minilm_tokens", url="tokens", icon=":material/table:")
if tokens_box.open:  # its data grid is sent only once opened (ui/shell/lazy.py)
    with tokens_box:
        trace_tables.token_table(trace)
