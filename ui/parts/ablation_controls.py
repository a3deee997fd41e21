"""Head ablation's shared controls: the heads in the URL (``ablate=L3H7,L4H2``, ``ablate_mode=``), tile clicks
that toggle them, frames on the ablated tiles. The MiniLM and causal pages' sections use them."""
from __future__ import annotations

import streamlit as st

from transformer_core.analysis.ablation import MODES, format_heads, parse_heads
from transformer_core.figures.overview import mark_ablated

from ..shell.callbacks import clicked_tile
from ..shell.failover import moved_this_run
from ..shell.i18n import N_, _
from ..shell.markdown import plain
from ..shell.url import bind_url, sent_by_browser
from .head_view import opened_by_tile


MODE_LABELS = {"zero": N_("zero (context = 0, as head_mask did)"),
               "mean": N_("mean over a reference set, per position (as IOI, ACDC, TransformerLens patching)"),
               "mean_sentence": N_("mean over this sentence (its mean over the sentence's own tokens)")}
MODE_NAMES = {"zero": N_("zero"), "mean": N_("reference mean"), "mean_sentence": N_("sentence mean")}  # in prose


def head_names(n_layers: int, n_heads: int) -> list[str]:
    """Every head's name, layer-major: ``["L0H0", "L0H1", …]`` (``n_layers × n_heads`` names, as in ``?ablate=``)."""
    return [f"L{layer}H{head}" for layer in range(n_layers) for head in range(n_heads)]


def _kept(names, n_layers: int, n_heads: int) -> list[str]:
    """The head names of a multiselect's state that exist (a state no widget makes, from a script or a stale
    session, loses the rest)."""
    valid = set(head_names(n_layers, n_heads))
    return [n for n in names if isinstance(n, str) and n in valid] if isinstance(names, list | tuple) else []


def bind_heads(key: str, n_layers: int, n_heads: int, default: tuple[str, ...] = ()) -> None:
    """``bind_url`` for a list of heads: seed ``st.session_state[key]`` (names ``L3H7``) from
    ``?ablate=L3H7,L4H2`` while the widget has no state, note and drop a bad list, write the URL back."""
    ss = st.session_state
    if moved_this_run() and key not in ss and sent_by_browser(key):  # the browser's value counts (ui/shell/url.py)
        return
    raw = st.query_params.get("ablate")
    if key not in ss:
        ss[key] = list(default)
        if raw is not None:
            try:
                ss[key] = [f"L{lay}H{h}" for lay, h in parse_heads(raw, n_layers, n_heads)]
            except ValueError as err:  # the note says what is ablated instead: nothing, or the page's default
                note = (_("URL parameter {param} ignored ({why}); the default heads {heads} are ablated.") if default
                        else _("URL parameter {param} ignored ({why}); no head is ablated."))
                st.warning(note.format(param=plain("ablate=" + str(raw)[:40]), why=plain(str(err)),
                                       heads=plain(", ".join(default))), icon=":material/warning:")
    if (kept := _kept(ss[key], n_layers, n_heads)) != ss[key]:
        ss[key] = kept
    text = format_heads(parse_heads(",".join(ss[key]), n_layers, n_heads))
    if raw != text:
        st.query_params["ablate"] = text


def ablated_heads(prefix: str, n_layers: int, n_heads: int, default: tuple[str, ...] = ()) -> tuple:
    """The heads the ablation section will ablate (``((3, 7), …)``), read before it runs: its widget's state, else
    ``?ablate=``, else the section's ``default``; a bad list is none (the section says so where it runs)."""
    names = st.session_state.get(f"{prefix}ablate")
    raw = (",".join(_kept(names, n_layers, n_heads)) if names is not None else
           st.query_params.get("ablate", ",".join(default)))
    try:
        return parse_heads(raw, n_layers, n_heads)
    except ValueError:
        return ()


def frame_ablated(fig, prefix: str, n_layers: int, n_heads: int, default: tuple[str, ...] = ()):
    """An overview figure with the ablated heads framed (and, in click-to-ablate mode, its hover saying so), plus a
    caption naming them here. Returns the figure."""
    clicking = bool(st.session_state.get(f"{prefix}ablate_click"))
    if (ablated := ablated_heads(prefix, n_layers, n_heads, default)) or clicking:
        fig = mark_ablated(fig, ablated, clicking)
    ablated_caption(ablated)
    return fig


def ablated_caption(ablated: tuple) -> None:
    """Under an overview whose ``ablated`` heads are framed: a caption naming them (nothing when there are none)."""
    if ablated:
        st.caption(_("Dashed frames: the heads ablated in “What a head does” below ({heads}). The overview shows them "
                     "intact.").format(heads=plain(format_heads(ablated, ", "))))


def click_toggle(prefix: str) -> bool:
    """A toggle: clicks on overview tiles ablate heads instead of opening them."""
    return st.toggle(_("Click tiles to ablate heads"), key=f"{prefix}ablate_click",
                     help=_("On: a click on a tile's centre adds that head to (or removes it from) the ablated heads "
                            "of “What a head does” below. Off: a click opens the head."))


def click_note(target, prefix: str, n_layers: int, n_heads: int, layer: int | None = None, head: int | None = None,
               default: tuple[str, ...] = ()) -> None:
    """Under an overview, in view at 1280×720: what a tile click did (its answer is below the fold): the head it
    opened (``layer``, ``head``; None: where it opens, for a note outside the head view's part, which a click inside
    the part would leave stale), or in click-to-ablate mode the heads now ablated. ``target``: a placeholder or
    ``st``."""
    if st.session_state.get(f"{prefix}ablate_click"):
        ablated = format_heads(ablated_heads(prefix, n_layers, n_heads, default), ", ")
        target.caption(_("Ablated: **{heads}**. What that changes is under “What a head does”, further down ↓").format(
            heads=ablated or _("none")))
    elif layer is None:
        target.caption(_("A click opens that head below, in “One head, stage by stage” ↓"))
    else:
        target.caption(_("Open below: **layer {layer} · head {head}** ↓").format(layer=layer, head=head))


def toggle_tile(event_key: str, layer_key: str, head_key: str, n_heads: int, prefix: str,
                n_layers: int | None = None) -> None:
    """``on_select`` of an overview: open the clicked head, or (click mode on) add/remove it from the ablated."""
    ss = st.session_state
    tile = clicked_tile(event_key, n_heads, n_layers)
    if tile is None:
        return
    if not ss.get(f"{prefix}ablate_click"):
        ss[layer_key], ss[head_key] = tile
        opened_by_tile(prefix)  # the opened head is below the fold: its answer and heatmap come into view
        return
    name, heads = f"L{tile[0]}H{tile[1]}", list(ss.get(f"{prefix}ablate", []))
    ss[f"{prefix}ablate"] = [h for h in heads if h != name] if name in heads else heads + [name]
    ss[f"_{prefix}ablate_tiled"] = True  # the section's result comes into view (result_into_view)


# Scrolls an ablation section's controls row (the mode picker heads it) to the top of the screen, under Streamlit's
# header, once per tile click: what the click changed (the cosine line, each layer's shift) is then in view under
# the heads picker, instead of ~3,000 px below the tiles (MiniLM). Sent after the section, so the row is in the page.
_INTO_VIEW = """<span id="{id}"></span><script>
(() => {{ const row = document.querySelector(".st-key-{prefix}ablate_mode");
  if (!row) return;
  const header = document.querySelector('[data-testid="stHeader"]');
  row.style.scrollMarginTop = ((header ? Math.max(0, header.getBoundingClientRect().bottom) : 0) + 8) + "px";
  row.scrollIntoView({{block: "start", behavior: "instant"}});
}})();
</script>"""


def result_into_view(prefix: str) -> None:
    """After an ablation section: when a tile click in click-to-ablate mode (:func:`toggle_tile`) changed the heads
    this run, bring the section's heads picker and result into view (nothing on other runs)."""
    ss = st.session_state
    if ss.pop(f"_{prefix}ablate_tiled", False):
        count = ss[f"_{prefix}ablate_scrolls"] = ss.get(f"_{prefix}ablate_scrolls", 0) + 1  # a new element: it runs
        st.html(_INTO_VIEW.format(id=f"ae-ablate-{prefix}{count}", prefix=prefix), unsafe_allow_javascript=True)


def tile_callback(event_key: str, open_head: dict, prefix: str, n_layers: int | None = None):
    """The overview's ``on_select`` (a partial of a module function: holds no run, see ui/shell/callbacks)."""
    from functools import partial

    return partial(toggle_tile, event_key, open_head["layer_key"], open_head["head_key"], open_head["n_heads"],
                   prefix, n_layers)


def controls(prefix: str, n_layers: int, n_heads: int, default: tuple[str, ...]) -> tuple[tuple, str]:
    """The heads and mode pickers of an ablation section (``?ablate=``, ``?ablate_mode=``): ``(heads, mode)``."""
    bind_heads(f"{prefix}ablate", n_layers, n_heads, default)
    bind_url(f"{prefix}ablate_mode", "ablate_mode", MODES, "zero")
    c1, c2 = st.columns([3, 2], vertical_alignment="bottom")
    picked = c1.multiselect(_("Heads to ablate"), head_names(n_layers, n_heads), key=f"{prefix}ablate",
                            placeholder=_("pick heads, e.g. L3H7"), help=_("Layer L, head H. In the URL: ablate=L3H7,L4H2"))
    modes = {m: _(label) for m, label in MODE_LABELS.items()}  # translated now (format_func may run later)
    mode = c2.radio(_("Ablation"), MODES, key=f"{prefix}ablate_mode", format_func=modes.get, horizontal=False)
    return parse_heads(",".join(picked), n_layers, n_heads), mode


def file_stem(heads, most: int = 48) -> str:
    """The heads' part of a download's or chart's file name: every head (``L3H7,L4H2``) while short, else the first
    three and a count (``L0H0,L0H1,L0H2+69more``): 72 heads made a 384-character name."""
    text = format_heads(heads)
    if len(text) <= most:
        return text
    return f"{format_heads(heads[:3])}+{len(heads) - 3}more"
