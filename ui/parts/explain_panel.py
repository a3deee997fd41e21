""""Explain this number": the arithmetic behind one cell of the focused head, step by step.

The cell is chosen by clicking it in the focused heatmap (our chart element reads the click at any size; with
``st.plotly_chart``, small matrices carry a transparent click marker per cell) or with the query/key pickers, which
always work; both live in the URL
as ``?q=5&k=2``. Every number comes from :func:`transformer_core.analysis.explain.explain_cell`, i.e.
from the trace's captured tensors.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from transformer_core.analysis.explain import TOLERANCE, explain_cell
from transformer_core.records.trace import Trace

from ..shell import chart, fragments
from ..shell.i18n import N_, _
from ..shell.language_widgets import tabs as translated_tabs
from ..shell.markdown import plain
from ..shell.url import bind_url
from . import tutorial_lines
from .labels import spans
from .numbers import number

TOP_KEYS = 6  # keys listed in the context step


def pick_cell(key: str, q_key: str, k_key: str) -> None:
    """A click on a cell marker of the focused heatmap: ``customdata = [query, key]``."""
    event = st.session_state.get(key) or {}
    for point in (event.get("selection") or {}).get("points") or []:
        custom = point.get("customdata")
        if isinstance(custom, (list, tuple)) and len(custom) >= 2:
            st.session_state[q_key], st.session_state[k_key] = int(custom[0]), int(custom[1])
            return


def _num(x: float) -> str:
    return number(x, ".4f")  # −∞ for a blocked score, — for a row with no visible key (ui/parts/numbers.py)


# The answer line's "every step below ↓" link: the panel's steps start ~700 px under it. A click scrolls the panel's
# heading to the top of the screen, under Streamlit's header (opaque, 60 px), without changing the address (a "#…"
# in a copied link would open the page scrolled). Registered once per browser page: the link is Markdown, so the
# listener catches it on the document.
_TO_STEPS = """<script>
(() => {{ if (window.aeStepsLink) return; window.aeStepsLink = true;
  document.addEventListener("click", (event) => {{
    const link = event.target.closest && event.target.closest('a[href^="{anchor}"]');
    const target = link && document.querySelector(".st-key-" + link.getAttribute("href").slice({cut}) + "explain_head");
    if (!target) return;
    event.preventDefault();
    const header = document.querySelector('[data-testid="stHeader"]');
    target.style.scrollMarginTop = ((header ? Math.max(0, header.getBoundingClientRect().bottom) : 0) + 8) + "px";
    target.scrollIntoView({{block: "start", behavior: "instant"}});
  }}, true);
}})();
</script>"""
STEPS_ANCHOR = "#ae-steps-"


def steps_link(key_prefix: str) -> str:
    """Markdown: a link that scrolls to the steps of the panel :func:`show` draws with ``key_prefix``."""
    words = _("every step below ↓").replace(" ", "\u00a0")  # wraps as one piece, never a lone ↓ on a line
    return f"[{words}]({STEPS_ANCHOR}{key_prefix})"


def first_line(trace: Trace, *, batch: int, layer: int, head: int, query: int, key: int, outlined: bool = True,
               below: str | None = None) -> None:
    """The answer for the chosen cell in two short lines, placed beside (or above) the focused heatmap so a click's
    answer is in view at 1280×720: the score, the weight and the row's softmax; the steps follow in :func:`show`.
    ``outlined``: the focused heatmap frames the cell (a query × key stage, not Q, K, V or the context). ``below``:
    the key prefix of that panel, drawn further down the page: the line ends with a link that scrolls to it."""
    e = explain_cell(trace, batch=batch, layer=layer, head=head, query=query, key=key)
    tokens = trace.tokens[batch]
    cell = _("q {q} → k {k}").format(q=plain(f"{query}: {tokens[query]}"), k=plain(f"{key}: {tokens[key]}"))
    if e.empty_row:
        body = _("no visible key in this row: every weight is 0")
    elif not e.visible:
        body = _("score {s}, masked ({why}): weight **0**").format(s=_num(e.score), why=plain(e.why))
    else:
        body = _("score {s}, weight **{w}** = {num} / {den} (e^(s − m) / Σ over the row)").format(
            s=_num(e.score), w=_num(e.weight), num=_num(e.exps[key]), den=_num(e.exp_sum))
    if below is not None:
        body += " · " + steps_link(below)
    if not outlined:  # Q, K, V, context: the heatmap is position × dimension, no cell is framed
        st.markdown(f"**{cell}**: {body}", help=_("Pick the query and key under **Explain this number**, which shows "
                                                   "every step."))
        return
    if chart.fallback_reason() is None:  # our element reads a click on the heatmap itself, at any size
        hint = _("The cell outlined in the large heatmap: click another or pick the query and key under **Explain "
                 "this number**, which shows every step.")
    else:
        hint = _("The cell outlined in the large heatmap: click another (up to 32 tokens) or pick the query and "
                 "key under **Explain this number**, which shows every step.")
    st.markdown(f"**{cell}** " + _("(outlined)") + f": {body}", help=hint)


def show(trace: Trace, *, batch: int, layer: int, head: int, key_prefix: str, clickable: bool = True) -> None:
    """The panel for the cell chosen in the URL or the pickers (query and key of sentence ``batch``).
    ``clickable``: the large heatmap is query × key (a click there picks the cell); False on Q, K, V and context."""
    tokens = trace.tokens[batch]
    n = len(tokens)
    q_key, k_key = f"{key_prefix}q", f"{key_prefix}k"
    options = [f"{i}: {t}" for i, t in enumerate(tokens)]
    bind_url(q_key, "q", range(n), 0, labels=options)
    bind_url(k_key, "k", range(n), 0, labels=options)
    with st.container(key=f"{key_prefix}explain_head"):  # where the answer line's link scrolls to (steps_link)
        st.markdown("#### " + _("Explain this number · head {head}").format(head=head)
                    + (_(", layer {layer}").format(layer=layer) if trace.n_layers > 1 or layer else ""))
        st.html(_TO_STEPS.format(anchor=STEPS_ANCHOR, cut=len(STEPS_ANCHOR)), unsafe_allow_javascript=True)
    left, right, note = st.columns([1, 1, 2], vertical_alignment="bottom")
    query = left.selectbox(_("Query (row)"), range(n), key=q_key, format_func=options.__getitem__)
    key = right.selectbox(_("Key (column)"), range(n), key=k_key, format_func=options.__getitem__)
    if not clickable:  # the large heatmap is positions × d_k: its cells are not a query and a key
        note.caption(_("On the scores and weights stages a click on the large heatmap picks a cell too. The link in "
                       "the address bar now opens this very number."))
    elif chart.fallback_reason() is None:  # our element reads a click on the heatmap itself, at any size
        note.caption(_("Or click a cell of the large heatmap. The link in the address bar now opens this very number."))
    else:
        note.caption(_("Or click a cell of the large heatmap (up to 32 tokens). The link in the address bar now opens "
                       "this very number."))
    # its own fragment inside the head view's: a tab click reruns only the steps (ui/shell/fragments.py)
    fragments.part(f"{key_prefix}explain", _steps, trace, batch=batch, layer=layer, head=head, query=query, key=key,
                   key_prefix=key_prefix)


def _steps(trace: Trace, *, batch: int, layer: int, head: int, query: int, key: int, key_prefix: str) -> None:
    """The four steps of :func:`show`, one tab open at a time."""
    tokens = trace.tokens[batch]
    e = explain_cell(trace, batch=batch, layer=layer, head=head, query=query, key=key)
    qi, kj = plain(f"{query}: {tokens[query]}"), plain(f"{key}: {tokens[key]}")  # user text: never Markdown
    # keyed tabs, names translated; the open one survives a language switch. Only the open tab's step is built and
    # sent (``.open``): the others' tables and formulas would cost every rerun, and a first visit the table and
    # KaTeX bundles, for tabs nobody has opened
    tabs = translated_tabs([N_("Score"), N_("Mask"), N_("Softmax"), N_("Context")], key=f"{key_prefix}explain_step",
                           format_label=lambda i, label: f"{i + 1} · {label}")
    for tab, step in zip(tabs, (_score_step, _mask_step, _softmax_step, _context_step)):
        if tab.open:
            with tab:
                step(e, tokens, query=query, key=key, qi=qi, kj=kj, key_prefix=key_prefix)
    ok = "✓" if e.max_diff <= TOLERANCE else "✗"
    st.caption(_("Every number above is recomputed from the captured Q, K and V. Largest difference from the captured "
                 "scores, weights and context: {diff} {ok} (limit {limit}).").format(
                     diff=f"{e.max_diff:.1e}", ok=ok, limit=f"{TOLERANCE:.0e}"))


def _score_step(e, tokens, *, query: int, key: int, qi: str, kj: str, key_prefix: str) -> None:
    """Step 1: the scaled dot product q·k / √d_k, one row per dimension."""
    tutorial_lines.show("scores")
    st.latex(rf"s_{{{query},{key}}} = \frac{{q_{{{query}}} \cdot k_{{{key}}}}}{{\sqrt{{d_k}}}}"
             rf" = \frac{{{number(e.dot, '.4f')}}}{{\sqrt{{{e.d_k}}}}} = \frac{{{number(e.dot, '.4f')}}}{{{number(e.scale, '.4f')}}} = {number(e.score, '.4f')}")
    # one row per dimension (reads down, never sideways at d_k = 64), as a Markdown table in a box that scrolls past
    # 8 rows: this tab is open on a first visit, and a data grid here loaded ~1.2 MB of grid code for a table below
    # the first screen; Markdown's code is loaded already
    head = ["", f"q ({plain(f'{query}: {tokens[query]}')})", f"k ({plain(f'{key}: {tokens[key]}')})", "q × k"]
    rows = [[f"d{d}", *(number(v, ".4f") for v in (e.q[d], e.k[d], e.products[d]))] for d in range(e.d_k)]
    box = st.container(height=320, key=f"{key_prefix}explain_qk") if e.d_k > 8 else st.container(
        key=f"{key_prefix}explain_qk")
    box.markdown(markdown_table(head, rows))
    st.caption(_("Sum of the {d_k} products = {dot}; divided by √{d_k} = {scale}. The raw-scores figure shows "
                 "{captured}.").format(d_k=e.d_k, dot=number(e.dot, ".4f"), scale=number(e.scale, ".4f"),
                                       captured=number(e.captured_score, ".4f")))


def markdown_table(head: list[str], rows: list[list[str]]) -> str:
    """A Markdown table, numbers right-aligned after the first column; ``head`` and cells are Markdown already
    (user text through :func:`~ui.shell.markdown.plain`)."""
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join([":---"] + ["---:"] * (len(head) - 1)) + "|"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def _key_column(tokens, key: int) -> list[str]:
    """The key labels of a step's table, the chosen key marked ▶ (the row the formula above is about)."""
    return [("▶ " if j == key else "") + f"{j}: {t}" for j, t in enumerate(tokens)]


def _mask_step(e, tokens, *, query: int, key: int, qi: str, kj: str, key_prefix: str) -> None:
    """Step 2: may the query attend to the key (the masks), and what that does to the score."""
    n = len(tokens)
    tutorial_lines.show("masked_scores")
    masked = number(e.score, ".4f") if e.visible else r"-\infty"
    st.latex(rf"\tilde s_{{{query},{key}}} = \begin{{cases}} s_{{{query},{key}}} & \text{{{_('may attend')}}} \\ "
             rf"-\infty & \text{{{_('blocked')}}} \end{{cases}} \; = {masked}")
    if e.visible:
        st.markdown(_("Query {q} **may attend** to key {k}: the score stays {score}.").format(
            q=qi, k=kj, score=number(e.score, ".4f")))
    else:
        st.markdown(_("Query {q} **may not attend** to key {k} ({why}): the masked score is **−∞**, so its weight "
                      "is exactly 0.").format(q=qi, k=kj, why=e.why.removeprefix(_("blocked — "))))
    # the row's mask in one line (a table here made the tab click ~0.3 s slower; the Softmax tab has the table)
    seen, hidden = np.flatnonzero(e.row_visible), np.flatnonzero(~e.row_visible)
    st.markdown(_("Row {q} of the mask: keys **{seen}** may attend; **{hidden}** blocked (−∞).").format(
        q=query, seen=spans(seen) or _("none"), hidden=spans(hidden) or _("none")))
    st.caption(_("Mask convention: True = may attend. This row sees {seen} of {n} keys.").format(
        seen=int(e.row_visible.sum()), n=n))


def _softmax_step(e, tokens, *, query: int, key: int, qi: str, kj: str, key_prefix: str) -> None:
    """Step 3: the row's softmax, with the largest score subtracted."""
    n = len(tokens)
    tutorial_lines.show("weights")
    if e.empty_row:
        st.markdown(_("Query {q} sees **no key at all**: softmax over nothing is undefined (−∞ everywhere gives "
                      "NaN), so this app sets every weight of the row to exactly 0 and its context to 0.").format(q=qi))
    else:
        st.latex(rf"w_{{{query},{key}}} = \frac{{e^{{s_{{{query},{key}}} - m}}}}{{\sum_j e^{{s_{{{query},j}} - m}}}}"
                 rf" = \frac{{{number(e.exps[key], '.4f')}}}{{{number(e.exp_sum, '.4f')}}} = {number(e.weight, '.4f')}, \quad m = {number(e.row_max, '.4f')}")
        st.caption(_("m is the row's largest visible score. Subtracting it changes no weight (it cancels in the "
                     "fraction) but keeps every exp ≤ 1, so nothing overflows."))
    rows = pd.DataFrame({
        _("key"): _key_column(tokens, key),
        _("visible"): e.row_visible,
        _("score"): [_num(s) for s in e.row_scores],
        _("masked score"): [_num(s if v else float("-inf")) for s, v in zip(e.row_scores, e.row_visible)],
        "exp(score − m)": [f"{number(x, '.4f')}" for x in e.exps],
        _("weight"): [f"{number(w, '.4f')}" for w in e.row_weights],
    })
    st.dataframe(rows, hide_index=True, key=f"{key_prefix}explain_row", height=min(320, 38 + 35 * n))
    st.caption(_("Sum of exp = {total}; the weights add up to {sum}. The weights figure shows {captured} for this "
                 "cell.").format(total=number(e.exp_sum, ".4f"), sum=number(e.row_weights.sum(), ".4f"),
                                 captured=number(e.captured_weight, ".4f")))


def _context_step(e, tokens, *, query: int, key: int, qi: str, kj: str, key_prefix: str) -> None:
    """Step 4: the context, the weighted sum of the values; the keys with the largest weights."""
    tutorial_lines.show("context")
    order = np.argsort(-e.row_weights)[:TOP_KEYS]
    st.latex(rf"c_{{{query}}} = \sum_j w_{{{query},j}}\, v_j")
    labels = _key_column(tokens, key)
    top = pd.DataFrame({_("key"): [labels[j] for j in order],
                        _("weight"): [f"{number(e.row_weights[j], '.4f')}" for j in order],
                        _("‖w·v‖ (size of its share)"): [f"{number(np.linalg.norm(e.contributions[j]), '.4f')}" for j in order]})
    st.dataframe(top, hide_index=True, key=f"{key_prefix}explain_top")
    shown = min(8, e.d_k)
    st.caption(_("Context of query {q}, first {shown} of {d_k} numbers: {numbers}. Same as the context figure's "
                 "row.").format(q=qi, shown=shown, d_k=e.d_k, numbers=", ".join(
                     f"{number(x, '.4f')}" for x in e.context[:shown]) + (" …" if e.d_k > shown else "")))


def show_position(steps: dict, tokens, *, key: str = "pipeline_pos") -> None:
    """One position's path through concat, W_O, the residual and LayerNorm (``?pos=`` in the URL)."""
    from transformer_core.analysis.explain import explain_position

    n = len(tokens)
    options = [f"{i}: {t}" for i, t in enumerate(tokens)]
    bind_url(key, "pos", range(n), 0, labels=options)
    st.markdown("#### " + _("Explain one position: concat → W_O → residual → LayerNorm"))
    pos = st.selectbox(_("Position"), range(n), key=key, format_func=options.__getitem__)
    e = explain_position(steps, pos)
    shown = min(8, e.concat.size)
    cols = [f"d{j}" for j in range(shown)]
    heads_of = [f"h{j // e.d_k}" for j in range(shown)]
    table = pd.DataFrame([e.concat[:shown], e.projected[:shown], e.x[:shown], e.residual[:shown],
                          e.normalized[:shown], e.output[:shown]],
                         columns=[f"{c} ({h})" for c, h in zip(cols, heads_of)],
                         index=[_("concat (the heads' contexts side by side)"), "concat W_Oᵀ + b_O", _("x (input)"),
                                _("x + projected (residual)"), "(residual − μ) / √(σ² + ε)", _("γ ⊙ … + β (output)")])
    st.dataframe(table.style.format("{:.4f}"), key=f"{key}_table")
    st.latex(rf"\mu = {number(e.mean, '.4f')}, \quad \sigma^2 = {number(e.var, '.4f')}, \quad \varepsilon = {e.eps:g}, \quad "
             rf"\frac{{1}}{{\sqrt{{\sigma^2 + \varepsilon}}}} = {number(1 / np.sqrt(e.var + e.eps), '.4f')}")
    ok = "✓" if e.max_diff <= TOLERANCE else "✗"
    st.caption(_("First {shown} of {size} numbers (d_k = {d_k} per head, {h} heads). Recomputed from the captured "
                 "contexts, W_O, b_O, γ and β; largest difference from the captured concat, projection, residual and "
                 "output: {diff} {ok} (limit {limit}).").format(shown=shown, size=e.concat.size, d_k=e.d_k,
                                                               h=e.n_heads, diff=f"{e.max_diff:.1e}", ok=ok,
                                                               limit=f"{TOLERANCE:.0e}"))
