"""The lessons in order: each a title and its steps (functions of the settings and the sources to a StepView)."""
from __future__ import annotations

from . import lesson_dot, lesson_heads, lesson_llm, lesson_masks, lesson_trained

LESSONS = (
    (lesson_dot.TITLE, lesson_dot.STEPS),
    (lesson_masks.TITLE, lesson_masks.STEPS),
    (lesson_heads.TITLE, lesson_heads.STEPS),
    (lesson_trained.TITLE, lesson_trained.STEPS),
    (lesson_llm.TITLE, lesson_llm.STEPS),
)
TITLES = tuple(title for title, _steps in LESSONS)
COUNTS = tuple(len(steps) for _title, steps in LESSONS)
