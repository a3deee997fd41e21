"""Where the learner is: ``?lesson=2&step=3`` in the URL, the lesson picker, back and next, and the progress bar."""
from __future__ import annotations

from functools import partial

import streamlit as st

from ..shell import callbacks
from ..shell.i18n import _
from ..shell.url import bind_url

LESSON_KEY, STEP_KEY = "guided_lesson", "guided_step"


def _restart_lesson() -> None:
    """A newly picked lesson starts at its first step."""
    st.session_state[STEP_KEY] = 1


def _move(counts: tuple[int, ...], by: int) -> None:
    """``on_click`` of back and next: one step, across the end of a lesson into the next one (or the previous)."""
    ss = st.session_state
    lesson, step = ss[LESSON_KEY], ss[STEP_KEY] + by
    if step > counts[lesson - 1] and lesson < len(counts):
        lesson, step = lesson + 1, 1
    elif step < 1 and lesson > 1:
        lesson, step = lesson - 1, counts[lesson - 2]
    ss[LESSON_KEY], ss[STEP_KEY] = lesson, max(1, min(step, counts[lesson - 1]))


def where(titles: tuple[str, ...], counts: tuple[int, ...], target=st) -> tuple[int, int]:
    """``(lesson, step)``, both from 1, bound to ``?lesson=`` and ``?step=``; draws the lesson picker in ``target``."""
    lesson = bind_url(LESSON_KEY, "lesson", range(1, len(titles) + 1), 1)
    step = bind_url(STEP_KEY, "step", range(1, counts[lesson - 1] + 1), 1)
    names = tuple(_("Lesson {n}: {title}").format(n=i + 1, title=_(t)) for i, t in enumerate(titles))
    target.selectbox(_("Lesson"), range(1, len(titles) + 1), key=LESSON_KEY, on_change=_restart_lesson,
                     format_func=partial(callbacks.label_of, ("",) + names), label_visibility="collapsed")
    return lesson, step


def progress(lesson: int, step: int, counts: tuple[int, ...], target=st) -> None:
    """The bar over all steps of all lessons, with where this one is."""
    done = sum(counts[:lesson - 1]) + step
    target.progress(done / sum(counts), text=_("Lesson {lesson} of {lessons} · step {step} of {steps}").format(
        lesson=lesson, lessons=len(counts), step=step, steps=counts[lesson - 1]))


def buttons(lesson: int, step: int, counts: tuple[int, ...]) -> None:
    """Back and next, side by side; disabled at the very first and the very last step."""
    left, right, _rest = st.columns([1, 1, 3])
    left.button(_("Back"), key="guided_back", icon=":material/arrow_back:", on_click=_move, args=(counts, -1),
                disabled=lesson == 1 and step == 1, width="stretch")
    last = lesson == len(counts) and step == counts[-1]
    right.button(_("Next"), key="guided_next", icon=":material/arrow_forward:", on_click=_move, args=(counts, 1),
                 disabled=last, type="primary", width="stretch")
