"""What a switch of model keeps: the layer, head and ablated heads a student chose are remembered per model.

Switching to a model puts back what was chosen on it before. On a model seen for the first time, the choices it
has stay (layer 1 head 2 exists in both), and the ones it lacks (layer 25 on a 2-layer checkpoint) go back to their
defaults, with a note naming them: nothing a student picked disappears without a word.
"""
from __future__ import annotations

import streamlit as st

from ..parts.ablation_controls import head_names
from ..shell.i18n import _, ngettext
from ..shell.markdown import plain
from .catalog import Choice

KEYS = ("llm_layer", "llm_head", "llm_ablate")  # the choices whose options depend on the model's sizes


def keep(choice: Choice, n_layers: int, n_heads: int) -> None:
    """Call before the page's widgets, once the model's sizes are known. Remembers the last model's choices, puts
    back ``choice``'s own, and drops (and names, in an info note) the ones ``choice`` does not have."""
    ss = st.session_state
    kept: dict = ss.setdefault("llm_choices_kept", {})
    last = ss.get("llm_choices_for")
    ss["llm_choices_for"] = choice.label
    if last is None or last == choice.label:
        return
    # the head view scrolls its answer into view when the open head changes, as after a click on it; a layer or
    # head the switch restores or resets is not such a click, and the scroll took the picker and this note away
    ss.pop("_llm_answer_seen", None)
    kept[last] = {key: ss[key] for key in KEYS if key in ss}
    if choice.label in kept:  # back on a model seen before: what was chosen on it
        for key, value in kept[choice.label].items():
            ss[key] = value
        return
    dropped = []
    for key, size, name in (("llm_layer", n_layers, _("layer {n}")), ("llm_head", n_heads, _("head {n}"))):
        value = ss.get(key)
        if isinstance(value, int) and not 0 <= value < size:
            dropped.append(name.format(n=value))
            ss[key] = 0
    if isinstance(ablated := ss.get("llm_ablate"), list):
        exists = set(head_names(n_layers, n_heads))
        dropped += [h for h in ablated if h not in exists]
        ss["llm_ablate"] = [h for h in ablated if h in exists]
    if dropped:
        st.info(ngettext("{model} has {layers} layers of {heads} heads, so this choice went back to its default: "
                         "{dropped}. Switching back to {last} brings it back.",
                         "{model} has {layers} layers of {heads} heads, so these choices went back to their "
                         "defaults: {dropped}. Switching back to {last} brings them back.", len(dropped)).format(
            model=plain(choice.label), layers=n_layers, heads=n_heads, dropped=", ".join(dropped),
            last=plain(last)), icon=":material/swap_horiz:")
