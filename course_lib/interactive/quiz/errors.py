"""The two errors of the quiz system, each one friendly sentence (no traceback in a notebook)."""

from __future__ import annotations

from pathlib import Path


class QuizError(ValueError):
    """Base class. In IPython/Jupyter the error is shown as its message only, not as a traceback."""

    def _render_traceback_(self) -> list[str]:  # IPython calls this instead of formatting a traceback
        return [f"{type(self).__name__}: {self}"]


class QuizBankError(QuizError):
    """A question bank (a YAML file) is malformed: the message names the file and the question.

    Attributes: ``path`` (the file), ``question_id`` (``None`` when the problem is not inside one question)
    and ``problem`` (what is wrong and how to fix it).
    """

    def __init__(self, path: str | Path, question_id: str | None, problem: str):
        self.path = Path(path)
        self.question_id = question_id
        self.problem = problem
        where = f", question {question_id!r}" if question_id is not None else ""
        super().__init__(f"quiz bank {self.path.name} ({self.path}){where}: {problem}")


class QuizAnswerError(QuizError):
    """An answer cannot be checked: nothing chosen, an unknown option letter or question id, not a number."""
