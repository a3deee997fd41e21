"""The masks lab's six sections, one tab at a time, as one part of the page (:mod:`ui.shell.fragments`): a tab click
or a control inside a tab reruns only this part, not the page's intro, token table and sentence and head pickers above
it. The body lives in a module, not the page (a page function would keep a whole run alive)."""
from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

from ..parts.numbers import number
from ..shell import callbacks, url
from ..shell.i18n import N_, _
from ..shell.language_widgets import tabs as translated_tabs
from ..shell.markdown import plain
from . import compute as lesson_compute
from . import lesson_figures as L
from . import window_lab

PAGE = "masks_lab"


def show(settings, batch: int, head: int, tokens: list[str], length: int, rows: list[str]) -> None:
    """The six sections for sentence ``batch`` and ``head`` of the lab's trace (``tokens``, ``length`` real ones,
    ``rows`` their labels); only the open tab runs and is drawn, its English name in the URL as ``?section=…``."""
    n = len(tokens)
    # One section at a time (lazy: only the open tab runs and is drawn), its name in the URL as ?section=…
    # (translated labels; the open tab survives a language switch and its English name is the URL's: ui/shell/language_widgets.tabs)
    tabs = translated_tabs([N_("Causal and padding"), N_("Two conventions"), N_("Cached prefix"), N_("Keys vs queries"),
                            N_("Dropout"), N_("Sliding window")], key="section", url="section")

    # 1 · causal, padding, both ------------------------------------------------------------------------
    with tabs[0]:
        if tabs[0].open:
            st.header("1 · " + _("Causal, padding, and both"))
            L.prose(PAGE, "gallery")
            if length == n:
                st.info(_("This sentence is the longest of the two, so it has no [PAD]: pick the other sentence to see "
                          "the padding mask hide something."), icon=":material/info:")
            gallery = lesson_compute.mask_gallery(settings, batch, head)
            kinds = {"causal": _("Causal mask"), "padding": _("Padding mask"), "both": _("Causal AND padding")}
            url.bind_url("masks_kind", "mask", list(kinds), "causal")
            kind = st.segmented_control(_("Mask"), list(kinds), key="masks_kind", format_func=kinds.get, required=True)
            title, g = kinds[kind], gallery[kind]
            L.prose(PAGE, f"gallery-{kind}")
            # one colour range for the three masks, so switching between them compares like with like
            bound = max(float(np.abs(x["masked"][x["mask"]]).max(initial=0)) for x in gallery.values()) or 1.0
            top = max(float(x["weights"][x["mask"]].max(initial=0)) for x in gallery.values()) or 1.0
            cols = st.columns(3)
            L.chart(L.mask_figure(g["mask"], rows, rows, title + _(" (True = may attend)"), section=kind),
                    f"masks_{kind}_mask", cols[0], f"{kind}_mask")
            L.chart(L.pattern_figure(g["masked"], rows, rows, _("Masked scores (blocked = blank = −∞)"),
                                     visible=g["mask"],
                                     signed=True, zrange=(-bound, bound), section=kind), f"masks_{kind}_masked", cols[1],
                    f"{kind}_masked_scores")
            L.chart(L.pattern_figure(g["weights"], rows, rows, _("Weights = softmax by row"), visible=g["mask"],
                                     zrange=(0.0, top), section=kind), f"masks_{kind}_weights", cols[2], f"{kind}_weights")
            st.caption(_("Causal, padding and both share one colour range (switch between them to compare): scores "
                         "−{bound} … {bound}, weights 0 … {top}.").format(bound=number(bound, ".3g"), top=number(top, ".3g")))

    # 2 · two conventions from the seeds ----------------------------------------------------------------
    with tabs[1]:
        if tabs[1].open:
            st.header("2 · " + _("The seeds' two conventions"))
            L.prose(PAGE, "conventions")
            url.bind_url("masks_empty_row", "row", range(n), 0, labels=[f"{i}: {t}" for i, t in enumerate(tokens)])
            row_labels = tuple(f"{i}: {t}" for i, t in enumerate(tokens))
            empty_row = st.selectbox(_("Query row whose every key we block (a row with no visible key)"), range(n),
                                     key="masks_empty_row", format_func=partial(callbacks.label_of, row_labels))
            conv = lesson_compute.conventions(settings, batch, head, empty_row)
            cols = st.columns(3)
            shown = conv["mask"] | ~conv["ordinary"][:, None]  # ordinary rows: visible keys; the empty row: every cell
            # one colour range for the three recipes (NaN and the empty row's uniform 1/n are left out by value_range)
            top = max(float(np.nan_to_num(conv["weights"][r][conv["mask"]], nan=0).max(initial=0))
                      for r in conv["weights"]) or 1.0
            for col, name, title in zip(cols, ("seed 000", "seed 001", "ours"),
                                        (_("seed 000: mask == 0 → −inf"), _("seed 001: True → −1e9"),
                                         _("ours: True = may attend, −inf"))):
                L.chart(L.pattern_figure(conv["weights"][name], rows, rows, title, visible=shown,
                                         empty_rows=~conv["ordinary"], section="conventions", recipe=name,
                                         zrange=(0.0, top),
                                         empty_note=_("no visible key: softmax gave NaN (blank)") if name == "seed 000"
                                         else _("no visible key: weights 0")), f"masks_conv_{name.replace(' ', '')}", col, f"weights_{name.replace(' ', '')}")
            d = conv["diffs"]
            st.markdown(_("**Ordinary rows** (every row with a visible key) — max |seed 000 − seed 001| = `{a}`, max |seed 000 − "
                          "ours| = `{b}`, max |seed 001 − ours| = `{c}`.").format(
                a=number(d[("seed 000", "seed 001")], ".3g"), b=number(d[("seed 000", "ours")], ".3g"),
                c=number(d[("seed 001", "ours")], ".3g")))
            st.markdown(_("**Row {row} ({token}), no visible key** — masked scores and weights as each recipe computes them:")
                        .format(row=empty_row, token=plain(tokens[empty_row])))
            recipes = ("seed 000", "seed 001", "ours")
            table = pd.concat([L.text_table(np.stack([conv["masked"][r][empty_row] for r in recipes]),
                                            [f"{r} · {_('masked score')}" for r in recipes], L.plain_labels(tokens), 3),
                               L.text_table(np.stack([conv["weights"][r][empty_row] for r in recipes]),
                                            [f"{r} · {_('weight')}" for r in recipes], L.plain_labels(tokens))])
            st.dataframe(table, width="stretch", key="masks_conv_table")
            L.prose(PAGE, "conventions-after")

            st.subheader(_("In float16"))
            L.prose(PAGE, "float16")
            facts = "\n".join(f"{expr:<42} → {value}" for expr, value in conv["facts"].items())
            tries = "\n".join(f"mask_scores(scores.half(), mask, {fill})\n    → {what}" for fill, what in conv["half"].items())
            st.code(facts + "\n\n" + tries, language=None, wrap_lines=True)
            ok, text = conv["module"]
            st.markdown(_("Our `MultiHeadAttention(fill_value=-1e9).half()` on this sentence length: **{result}** — {text}.")
                        .format(result=_("runs") if ok else _("fails"), text=text))
            L.prose(PAGE, "float16-after")

    # 3 · causal with a cached prefix --------------------------------------------------------------------
    with tabs[2]:
        if tabs[2].open:
            st.header("3 · " + _("Causal masking with fewer queries than keys"))
            L.prose(PAGE, "prefix")
            if length < 2:
                st.info(_("This needs a sentence of at least two tokens."), icon=":material/info:")
            else:
                url.bind_url("masks_n_new", "new", range(1, length), 1)
                n_new = (st.slider(_("New tokens (queries) against the cached sentence"), 1, length - 1, key="masks_n_new")
                         if length > 2 else 1)
                pre = lesson_compute.prefix(settings, batch, head, n_new)
                q_rows, k_cols = L.labels(tokens[:length])[length - n_new:], L.labels(tokens[:length])
                cols = st.columns(3)
                L.chart(L.mask_figure(pre["full"], k_cols, k_cols, _("full sentence: square causal mask"), section="prefix",
                                      align="full"), "masks_prefix_full", cols[2], "prefix_full")
                cols[2].markdown(_("the answer: its last row") if n_new == 1 else _("the answer: its last {n} rows").format(n=n_new))
                for col, name, title in zip(cols, ("top-left", "bottom-right"),
                                            (_("top-left: torch is_causal=True (tril)"),
                                             _("bottom-right: causal_mask(n_query, n_key)"))):
                    L.chart(L.mask_figure(pre["masks"][name], q_rows, k_cols, title, section="prefix", align=name),
                            f"masks_prefix_{name}", col, f"prefix_{name}")
                    col.markdown(_("max |weights − full-sentence causal weights| = `{diff}`").format(
                        diff=number(pre["max_diff"][name], ".3g")))
                st.markdown(_("With as many queries as keys ({n} × {n}) the two alignments are **{verdict}** (compared live).")
                            .format(n=length, verdict=_("the same") if pre["square_equal"] else _("different")))
                L.prose(PAGE, "prefix-after")

    # 4 · padding on keys vs queries ---------------------------------------------------------------------
    with tabs[3]:
        if tabs[3].open:
            st.header("4 · " + _("Padding: hide keys, not queries"))
            L.prose(PAGE, "keys-queries")
            kq = lesson_compute.keys_vs_queries(settings, batch, head)
            top = max(float(v["weights"][v["mask"]].max(initial=0)) for v in kq.values()) or 1.0  # one range for all
            cols = st.columns(3)
            variant_names = {"keys": _("keys"), "queries": _("queries"), "keys and queries": _("keys and queries")}
            for col, name in zip(cols, kq):
                v = kq[name]
                L.chart(L.mask_figure(v["mask"], rows, rows, _("[PAD] hidden on {what}").format(what=variant_names.get(name, name)),
                                      section="keys-queries", variant=name),
                        f"masks_kq_mask_{name.replace(' ', '_')}", col, "mask")
                L.chart(L.pattern_figure(v["weights"], rows, rows, _("weights (ours)"), visible=v["mask"],
                                         section="keys-queries",
                                         variant=name, zrange=(0.0, top)), f"masks_kq_weights_{name.replace(' ', '_')}", col, "weights")
            summary = pd.DataFrame({variant_names.get(name, name): {
                _("largest weight a real query puts on [PAD] keys"): L.fmt(v["pad_weight"]),
                _("rows with no visible key"): str(v["empty_rows"]),
                _("real rows: max |Δ| vs keys-only"): L.fmt(v["real_rows_diff"]),
                _("rows that are NaN with seed 000 (−inf)"): str(v["nan_rows"])} for name, v in kq.items()})
            st.dataframe(summary, width="stretch", key="masks_kq_table")
            L.prose(PAGE, "keys-queries-after")

    # 5 · dropout ---------------------------------------------------------------------------------------
    with tabs[4]:
        if tabs[4].open:
            st.header("5 · " + _("Dropout on the weights (training only)"))
            L.prose(PAGE, "dropout")
            c1, c2, c3 = st.columns(3)
            url.bind_url("masks_training", "train", (False, True), False, to_text=lambda v: "1" if v else "0")
            url.bind_url("masks_dropout_p", "p", [round(0.05 * i, 2) for i in range(19)], 0.3)
            url.bind_url("masks_dropout_seed", "draw", range(10_001), 0)
            training = c1.toggle(_("Training mode"), key="masks_training")
            p = c2.slider(_("Dropout p"), 0.0, 0.9, step=0.05, key="masks_dropout_p")
            dseed = c3.number_input(_("Dropout draw (seed)"), 0, 10_000, key="masks_dropout_seed")
            drop = lesson_compute.dropout_lab(settings, batch, head, training, float(p), int(dseed))
            top = float(max(drop["before"][drop["visible"]].max(initial=0), drop["after"][drop["visible"]].max(initial=0))) or 1.0
            cols = st.columns([2, 2, 1.4])  # the row-sum table's two columns fit beside the figures at 1280×720
            L.chart(L.pattern_figure(drop["before"], rows, rows, _("weights (before dropout)"), visible=drop["visible"],
                                     zrange=(0.0, top), section="dropout", which="before"), "masks_drop_before", cols[0], "weights")
            after_title = (_("after dropout (p = {p}, train mode)").format(p=number(p, ".2f")) if training and p > 0
                           else _("after dropout: eval mode, dropout is the identity") if not training
                           else _("after dropout: p = 0"))
            L.chart(L.pattern_figure(drop["after"], rows, rows, after_title, visible=drop["visible"], zrange=(0.0, top),
                                     section="dropout", which="after", training=training), "masks_drop_after", cols[1], "dropped")
            cols[2].dataframe(pd.DataFrame({_("before"): [L.fmt(s) for s in drop["sum_before"]],
                                            _("after"): [L.fmt(s) for s in drop["sum_after"]]}, index=L.plain_labels(tokens)),
                              key="masks_drop_sums", column_config={_("before"): st.column_config.TextColumn(width=62),
                                                                    _("after"): st.column_config.TextColumn(width=62)})
            cols[2].caption(_("Row sums. Cells zeroed by dropout: {zeroed} of {kept} non-zero weights.").format(
                zeroed=drop["zeroed"], kept=drop["kept"]))
            L.prose(PAGE, "dropout-after")

    # 6 · sliding window with sinks ---------------------------------------------------------------------
    with tabs[5]:
        if tabs[5].open:
            st.header("6 · " + _("Sliding window and attention sinks"))
            window_lab.show(settings, batch, head, tokens, rows)
