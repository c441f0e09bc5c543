"""Self-check quizzes: question banks as data, a pure-Python engine, widgets with a static fallback.

    from course_lib.interactive.quiz import show_quiz
    show_quiz("01")                       # the quiz of notebook 01 (widgets in Jupyter, text elsewhere)

    from course_lib.interactive.quiz import Quiz
    quiz = load_bank("01")                # course_lib/interactive/quiz/banks/01.yaml, validated
    quiz.check("rnn-loop-bug", "a")       # Result(correct=..., feedback=..., explanation=...)
    quiz.score                            # Score(total=..., answered=..., solved=..., first_try=...)

The banks are YAML files in ``course_lib/interactive/quiz/banks/``; ``docs/quizzes.md`` explains how to edit them and
``python -m course_lib quiz check`` validates them.
"""

from ..._syllabus import NOTEBOOKS, TOPICS
from .errors import QuizAnswerError, QuizBankError, QuizError
from .loader import available_banks, check_banks, load_bank, parse_bank
from .model import Mistake, Option, Question, Quiz, Result, Score, TopicScore


def show_quiz(bank, topics=None, title=None):
    """The interactive quiz of one notebook, e.g. ``show_quiz("01")``; see ``course_lib.interactive.quiz.widget.show_quiz``."""
    from .widget import show_quiz as _show_quiz  # ipywidgets is imported only when a quiz is shown

    return _show_quiz(bank, topics=topics, title=title)


def show_summary(quiz):
    """The per-topic score table of a quiz; see ``course_lib.interactive.quiz.widget.show_summary``."""
    from .widget import show_summary as _show_summary

    return _show_summary(quiz)


__all__ = [
    "show_quiz",
    "show_summary",
    "Quiz",
    "Question",
    "Option",
    "Mistake",
    "Result",
    "Score",
    "TopicScore",
    "QuizError",
    "QuizBankError",
    "QuizAnswerError",
    "load_bank",
    "parse_bank",
    "check_banks",
    "available_banks",
    "TOPICS",
    "NOTEBOOKS",
]
