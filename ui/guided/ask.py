"""One step on screen: the figure beside the question; the answer, said plainly, only once a choice is made."""
from __future__ import annotations

from functools import partial

import streamlit as st

from transformer_core.figures.files import chart_config

from ..shell import callbacks
from ..shell.chart import chart
from ..shell.i18n import _, language
from .view import StepView, page_link


def answer_key(lesson: int, step: int) -> str:
    """The question's widget key: one per step, so going back shows the choice made there."""
    return f"guided_answer_{lesson}_{step}"


def show(view: StepView, lesson: int, step: int) -> None:
    """Draw ``view``: the figure on the left from the top (a 30-layer grid stays whole), what it shows under it; the
    question and (after a choice) the answer on the right, in the first screen at 1280×720."""
    st.subheader(view.title)
    figure, talk = st.columns([1.25, 1], gap="medium")
    with figure:
        chart(view.fig, key=f"guided_fig_{lesson}_{step}",
              config=chart_config(f"lesson{lesson}_step{step}", st.session_state.get("shared_image_format", "png")))
        st.markdown(view.intro)
    with talk:
        # index=None: nothing is chosen until the learner commits to a prediction; the choices turn by the step's
        # number, so the right one is not always first
        n = len(view.choices)
        order = [(i + lesson + step) % n for i in range(n)]
        picked = st.radio(view.question, order, index=None, key=answer_key(lesson, step),
                          format_func=partial(callbacks.label_of, view.choices))
        if view.note:
            st.caption(view.note)
        if picked is None:
            st.caption(_("Choose an answer: the explanation appears once you have."))
            return
        right = view.choices[view.correct]
        gap = "" if language() == "zh" else " "  # Chinese puts no space after its full stop
        if picked == view.correct:
            st.success(_("Right: {answer}.").format(answer=right) + gap + view.explain, icon=":material/check_circle:")
        else:
            st.error(_("Not quite. The answer is {answer}.").format(answer=right) + gap + view.explain,
                     icon=":material/cancel:")
        st.markdown(_("[Open the full page in this state: {page}]({link})").format(
            page=view.page_title, link=page_link(view.page, view.params)))
