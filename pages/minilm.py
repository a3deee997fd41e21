"""Trained model (MiniLM-L6): a real BERT's attention on our own modules — every head at a glance,
per-head statistics, and any one head stage by stage."""
import math

import streamlit as st

from transformer_core import figures
from transformer_core.overview import overview_figure, picked_tile
from transformer_core.pretrained import PretrainedUnavailable
from ui import minilm, state, views

N_LAYERS, N_HEADS = 6, 12
ss = st.session_state
settings = state.current()
st.title("Trained model: MiniLM-L6")
st.caption("all-MiniLM-L6-v2 is a 6-layer BERT encoder (12 heads per layer, d_model = 384, d_k = 32) trained "
           "as a sentence-embedding model. Its trained weights are loaded into this app's own attention modules, "
           "so every stage below is what a real model computes — unlike the Explorer's random weights, these "
           "patterns were learned.")
st.caption("From the sidebar only the **sentences** and the **Padding mask** apply here. MiniLM always uses its "
           "own BERT WordPiece tokenizer, sizes and weights, and it attends in both directions: the tokenizer, "
           "causal mask, d_model, n_heads and seed controls belong to the toy model.")

if not settings.sentences:
    st.info("Type at least one sentence in the sidebar to begin.", icon=":material/edit:")
    st.stop()
sentences, example = minilm.with_example(settings.sentences)
try:
    trace = minilm.minilm_trace(sentences, settings.padding)
except PretrainedUnavailable as err:
    st.error(f"The trained model MiniLM-L6 is not available, so this page cannot run: {err}", icon=":material/block:")
    st.caption("The other pages use the toy model and keep working.")
    st.stop()
except ValueError as err:
    st.warning(f"Nothing to show: {err}.", icon=":material/warning:")
    st.stop()


def _open(layer: int, head: int) -> None:
    ss["minilm_layer"], ss["minilm_head"] = layer, head


def _open_tile() -> None:
    """A click on a tile centre of the overview (a selection of its transparent marker)."""
    event = ss.get("minilm_overview") or {}
    tile = picked_tile((event.get("selection") or {}).get("points"), N_HEADS)
    if tile is not None:
        _open(*tile)


def _open_row() -> None:
    """A selected row of the statistics table (rows are layer-major, whatever the sort)."""
    event = ss.get("minilm_stats") or {}
    rows = (event.get("selection") or {}).get("rows") or []
    if rows:
        _open(*divmod(int(rows[0]), N_HEADS))


if example:
    st.info(f"You typed one sentence, so the built-in example “{example}” is added as sentence 1. The two have "
            "different lengths, so the shorter one is padded with [PAD] and the **Padding mask** (sidebar) has "
            "something to act on.", icon=":material/add:")
views.token_table(trace)
if ss.get("minilm_batch", 0) >= len(trace.tokens):
    ss["minilm_batch"] = 0
batch = views.sentence_radio("Sentence to inspect",
                             [" ".join(t[1:n - 1]) for t, n in zip(trace.tokens, trace.lengths)], key="minilm_batch")

stats = minilm.minilm_stats(sentences, settings.padding, batch)
n_tokens, n_real = len(trace.tokens[batch]), trace.lengths[batch]
n_pad = n_tokens - n_real
padded = [b for b, n in enumerate(trace.lengths) if n < len(trace.tokens[b])]
if n_pad and settings.padding:
    st.success(f"Sentence {batch} ends with {n_pad} [PAD] token(s). **Padding mask on**: their key columns are "
               "blank in the overview and in the masked-score and weight figures below (weight exactly 0), so real "
               "tokens attend only to real tokens. "
               "Turn it off in the sidebar to see what happens without it.", icon=":material/view_column:")
elif n_pad:
    top = stats.loc[stats["pad_share"].idxmax()]
    st.warning(f"Sentence {batch} ends with {n_pad} [PAD] token(s). **Padding mask off**: MiniLM attends to them "
               f"as if they were words. Real tokens give [PAD] {stats['pad_share'].mean():.1%} of their attention on "
               f"average over all 72 heads, up to {top['pad_share']:.1%} in layer {int(top['layer'])}, head "
               f"{int(top['head'])} (column “to [PAD]” below), so this sentence's outputs depend on the padding.",
               icon=":material/warning:")
elif padded:
    st.caption(f"Sentence {batch} is the longest and has no [PAD]; sentence(s) {', '.join(map(str, padded))} "
               "are padded — pick one to see what the padding mask does.")
else:
    st.caption("All sentences have the same length: there is no [PAD], so the padding mask changes nothing here.")

hide = st.toggle("Hide attention to special tokens", key="minilm_hide_special",
                 help="Blank the [CLS], [SEP] and [PAD] key columns in the overview and the masked-score and "
                      "weight figures.")
if hide:
    st.caption("Hidden cells are only blanked, **not renormalised**: the weights left in a row add up to less "
               "than 1, and the missing part is what went to [CLS], [SEP] and [PAD]. Many heads park most of their "
               "attention on [SEP] or [CLS] when they have nothing better to do.")
hide_keys = minilm.special_mask(trace, batch) if hide else None

layer, head = ss.get("minilm_layer", 0), ss.get("minilm_head", 0)
st.subheader("Layer × head overview")
st.caption(f"All {N_LAYERS} × {N_HEADS} = {N_LAYERS * N_HEADS} attention-weight patterns of sentence {batch}: "
           f"each tile is one head's {n_tokens} × {n_tokens} weights (rows = queries, columns = keys, in token "
           "order). Hover a cell for its layer, head, tokens and weight. **Click the centre of a tile** to open that "
           "head below (or choose layer and head there); the red frame marks the open head.")
overview = overview_figure(trace, batch, hide_keys=hide_keys, highlight=(layer, head))
if (pool := overview.layout.meta["pool"]) > 1:
    st.caption(f"This sentence is long: to keep the overview quick, each of its cells shows the largest weight of "
               f"a {pool} × {pool} block of tokens. The figures of the open head below show every token.")
st.plotly_chart(overview, key="minilm_overview", on_select=_open_tile, selection_mode="points",
                config=figures.chart_config(figures.figure_filename("overview", None, None, trace.tokens[batch])))

st.subheader("Per-head statistics")
st.caption(f"Sentence {batch}, averaged over its {n_real} real query rows. Click a column header to sort; "
           f"select a row to open that head. Entropy runs from 0 (all weight on one key) to ln {n_tokens} = "
           f"{math.log(n_tokens):.2f} (spread evenly over every key).")
share = "Share of each query's attention that goes to {} keys (mean over real queries)."
shown = stats.copy()
shown[["cls_share", "sep_share", "pad_share"]] *= 100  # percentages, one format for every cell
percent = dict(format="%.1f%%", min_value=0.0, max_value=100.0)
st.dataframe(shown, key="minilm_stats", on_select=_open_row, selection_mode="single-row", hide_index=True,
             height=320, column_config={
                 "layer": st.column_config.NumberColumn("layer", width="small"),
                 "head": st.column_config.NumberColumn("head", width="small"),
                 "entropy": st.column_config.NumberColumn(
                     "entropy (nats)", format="%.2f",
                     help="−Σ w ln w of each query's weights: low = focused head, high = diffuse head."),
                 "mean_distance": st.column_config.NumberColumn(
                     "mean distance", format="%.2f",
                     help="Σ_j w_ij |i − j|: how many positions away a query looks, on average."),
                 "max_weight": st.column_config.ProgressColumn(
                     "max weight", format="%.2f", min_value=0.0, max_value=1.0,
                     help="The largest weight any real query gives any key."),
                 "cls_share": st.column_config.ProgressColumn("to [CLS]", help=share.format("[CLS]"), **percent),
                 "sep_share": st.column_config.ProgressColumn("to [SEP]", help=share.format("[SEP]"), **percent),
                 "pad_share": st.column_config.ProgressColumn(
                     "to [PAD]", help=share.format("[PAD]") + " 0 while the padding mask is on.", **percent),
             })

st.subheader("One head, stage by stage")
left, middle, right = st.columns([1, 1, 2], vertical_alignment="bottom")
layer = left.selectbox("Layer", range(N_LAYERS), key="minilm_layer", format_func=lambda i: f"layer {i}")
head = middle.selectbox("Head", range(N_HEADS), key="minilm_head", format_func=lambda i: f"head {i}")
all_heads = right.toggle(f"Show all {N_HEADS} heads of this layer", key="minilm_all_heads")
heads = None if all_heads else [head]
for stage, title in (("scores", "1 · Raw scores"), ("masked_scores", "2 · Masked scores"),
                     ("weights", "3 · Attention weights"), ("context", "4 · Per-head context")):
    st.markdown(f"#### {title} · layer {layer}" + ("" if all_heads else f", head {head}"))
    views.stage_block(trace, stage, batch=batch, layer=layer, heads=heads, per_row=4 if all_heads else 2,
                      hide_keys=hide_keys, key_prefix="minilm_")
