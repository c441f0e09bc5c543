"""What a learning record says: a learner's summary (``progress``) and a class's misconceptions (``misconceptions``).

A record is the list of events of ``course_lib.interactive.record`` (quiz answers and exercise checks, in order). Both views
judge a question by the learner's *first* answer to it, the one that shows what they thought before the feedback.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from course_lib._syllabus import TOPICS, current_question, notebook_label
from course_lib.checks import EXERCISES, MISTAKES
from course_lib.interactive.quiz.model import within
from course_lib.interactive.review import known_questions

REVISIT_BELOW = 2 / 3  # a topic answered right the first time less often than this is worth another look


@lru_cache(maxsize=1)
def questions() -> dict[tuple[str, str], tuple]:
    """(quiz id, question id) → (quiz, question) for every bank of the course."""
    return known_questions()


def check_exercise() -> dict[str, str]:
    """check name → exercise name."""
    return {spec.name: exercise.name for exercise in EXERCISES.values() for spec in exercise.specs}


def answer_key(event: dict) -> tuple[str, str]:
    """A quiz event → (quiz, question) where that question lives today (a record from before a move still reads)."""
    return current_question(event["quiz"], event["question"])


def first_answers(events: list[dict]) -> dict[tuple[str, str], dict]:
    """(quiz, question) → the first recorded answer to it (questions the course no longer has are left out)."""
    first: dict[tuple[str, str], dict] = {}
    known = questions()
    for event in events:
        if event.get("kind") == "quiz":
            key = answer_key(event)
            if key in known and key not in first:
                first[key] = event
    return first


@dataclass
class TopicRow:
    topic: str
    label: str
    total: int
    answered: int = 0
    first_try: int = 0
    notebooks: set[str] = field(default_factory=set)

    @property
    def revisit(self) -> bool:
        return self.answered > 0 and self.first_try / self.answered < REVISIT_BELOW


@dataclass
class ExerciseRow:
    name: str
    title: str
    checks: tuple[str, ...]
    passed: set[str] = field(default_factory=set)
    passed_first: set[str] = field(default_factory=set)
    tried: set[str] = field(default_factory=set)
    mistakes: dict[str, int] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return set(self.checks) <= self.passed


@dataclass
class QuizRow:
    quiz: str
    title: str
    total: int
    answered: int = 0
    first_try: int = 0
    solved: int = 0


@dataclass
class Summary:
    quizzes: list[QuizRow]
    topics: list[TopicRow]
    exercises: list[ExerciseRow]
    attempts: int

    @property
    def revisit(self) -> list[TopicRow]:
        return [row for row in self.topics if row.revisit]


def summarize(events: list[dict]) -> Summary:
    """A learner's record as tables: quizzes, first-try score per topic, exercises and their checks."""
    known = questions()
    first = first_answers(events)
    solved = {answer_key(e) for e in events if e.get("kind") == "quiz" and e.get("correct")}
    quizzes: dict[str, QuizRow] = {}
    topics = {topic: TopicRow(topic, label, 0) for topic, label in TOPICS.items()}
    for (quiz_id, _), (quiz, question) in known.items():
        row = quizzes.setdefault(quiz_id, QuizRow(quiz_id, quiz.title, 0))
        row.total += 1
        topic = topics.setdefault(question.topic, TopicRow(question.topic, question.topic, 0))
        topic.total += 1
    for key, event in first.items():
        quiz, question = known[key]
        quizzes[key[0]].answered += 1
        quizzes[key[0]].first_try += bool(event["correct"])
        quizzes[key[0]].solved += key in solved
        topic = topics[question.topic]
        topic.answered += 1
        topic.first_try += bool(event["correct"])
        topic.notebooks.add(question.notebook)
    owner = check_exercise()
    exercises = {
        name: ExerciseRow(name, ex.title, tuple(spec.name for spec in ex.specs)) for name, ex in EXERCISES.items()
    }
    for event in events:
        if event.get("kind") != "check" or event["check"] not in owner:
            continue
        row = exercises[owner[event["check"]]]
        if event["check"] not in row.tried and event["correct"]:
            row.passed_first.add(event["check"])
        row.tried.add(event["check"])
        if event["correct"]:
            row.passed.add(event["check"])
        elif event.get("mistake"):
            row.mistakes[event["mistake"]] = row.mistakes.get(event["mistake"], 0) + 1
    return Summary(
        list(quizzes.values()), [t for t in topics.values() if t.total], list(exercises.values()), len(events)
    )


def revisit_text(row: TopicRow) -> str:
    places = ", ".join(notebook_label(number) for number in sorted(row.notebooks) if number)
    return f"{row.label}: {row.first_try} of {row.answered} right the first time" + (
        f" — revisit {places}" if places else ""
    )


# --- the class view -------------------------------------------------------------------------------------------


@dataclass
class OptionShare:
    choice: str  # "B", "A+C", or for a numeric question the mistake's answer or "other"
    text: str
    learners: int
    share: float


@dataclass
class QuestionReport:
    quiz: str
    question: str
    topic: str
    prompt: str
    answered: int
    first_try: int
    wrong: list[OptionShare]


@dataclass
class CheckReport:
    exercise: str
    check: str
    tried: int
    failed: int
    mistakes: list[tuple[str, str, int]]  # (key, title, learners)


def _choice(question, answer) -> tuple[str, str]:
    """A first answer as a (choice, text) pair to count: option letters, or the numeric mistake it matches."""
    if question.kind == "numeric":
        try:
            value = float(str(answer).replace(",", ""))
        except ValueError:
            return "other", "not a number"
        for mistake in question.mistakes:
            if within(value, mistake.answer, question.tolerance):
                return f"{mistake.answer:g}", mistake.feedback.split(". ")[0]
        return "other", "another number"
    chosen = answer if isinstance(answer, list) else [answer]
    chosen = [c for c in chosen if isinstance(c, str) and len(c) == 1]
    texts = []
    for c in chosen:
        index = ord(c) - ord("A")
        if 0 <= index < len(question.options):
            texts.append(question.options[index].text)
    return "+".join(chosen) or "none", " / ".join(texts)


def class_report(records: dict[str, list[dict]]) -> tuple[list[QuestionReport], list[CheckReport]]:
    """For each question, the share of learners whose first answer was each wrong choice; for each check, the
    mistakes most learners made (a learner counts once per mistake)."""
    known = questions()
    firsts = {learner: first_answers(events) for learner, events in records.items()}
    reports = []
    for key, (quiz, question) in known.items():
        answers = [first[key] for first in firsts.values() if key in first]
        if not answers:
            continue
        counts: dict[tuple[str, str], int] = {}
        for event in answers:
            if not event["correct"]:
                choice = _choice(question, event.get("answer"))
                counts[choice] = counts.get(choice, 0) + 1
        wrong = [
            OptionShare(c, t, n, n / len(answers)) for (c, t), n in sorted(counts.items(), key=lambda item: -item[1])
        ]
        reports.append(
            QuestionReport(
                quiz.id,
                question.id,
                question.topic,
                question.prompt,
                len(answers),
                sum(bool(e["correct"]) for e in answers),
                wrong,
            )
        )
    reports.sort(key=lambda r: (r.first_try / r.answered, r.quiz, r.question))
    owner = check_exercise()
    titles = {name: {m.key: m.title for m in mistakes} for name, mistakes in MISTAKES.items()}
    checks = []
    for check, exercise in owner.items():
        tried = failed = 0
        learners_per_mistake: dict[str, int] = {}
        for events in records.values():
            mine = [e for e in events if e.get("kind") == "check" and e["check"] == check]
            if not mine:
                continue
            tried += 1
            failed += any(not e["correct"] for e in mine)
            for key in {e.get("mistake") for e in mine if not e["correct"]}:
                name = key or "(not a catalogued mistake)"
                learners_per_mistake[name] = learners_per_mistake.get(name, 0) + 1
        if tried:
            mistakes = sorted(learners_per_mistake.items(), key=lambda item: (-item[1], item[0]))
            checks.append(
                CheckReport(
                    exercise,
                    check,
                    tried,
                    failed,
                    [(key, titles.get(check, {}).get(key, ""), n) for key, n in mistakes],
                )
            )
    return reports, checks


# --- prediction checkpoints in the class view -------------------------------------------------------------------


@dataclass
class CheckpointReport:
    checkpoint: str
    prompt: str
    learners: int  # learners who locked in a prediction
    choices: list[tuple[str, str, int]]  # (letter, option text, learners) for a choice checkpoint
    measured: float | None  # the measurement the learners saw (the median over learners who saw one)
    right: int  # learners whose prediction matched the measurement
    observed: int  # learners who ran the experiment after predicting
    errors: list[float]  # for a number: each learner's prediction − measurement

    @property
    def median_error(self) -> float | None:
        if not self.errors:
            return None
        ordered = sorted(abs(e) for e in self.errors)
        middle = len(ordered) // 2
        return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def checkpoint_report(records: dict[str, list[dict]]) -> list[CheckpointReport]:
    """Per prediction checkpoint: the distribution of the class's predictions and how far they were from the
    measurement (a learner counts once, with the first prediction they locked)."""
    from course_lib.interactive.predict import LETTERS, checkpoints

    reports = []
    for spot in checkpoints().values():
        predictions, observations = {}, {}
        for learner, events in records.items():
            for event in events:
                if event.get("checkpoint") != spot.id:
                    continue
                if event.get("kind") == "prediction":
                    predictions.setdefault(learner, event.get("prediction"))
                elif event.get("kind") == "observation":
                    observations.setdefault(learner, event)
        if not predictions:
            continue
        choices = []
        if spot.kind == "choice":
            for index, text in enumerate(spot.options):
                count = sum(1 for value in predictions.values() if value == LETTERS[index])
                choices.append((LETTERS[index], text, count))
        measured_values = sorted(
            float(e["measured"]) for e in observations.values() if isinstance(e.get("measured"), (int, float))
        )
        measured = measured_values[len(measured_values) // 2] if measured_values else None
        errors = []
        if spot.kind == "number":
            for learner, event in observations.items():
                value, seen = predictions.get(learner), event.get("measured")
                if isinstance(value, (int, float)) and isinstance(seen, (int, float)):
                    errors.append(float(value) - float(seen))
        right = sum(1 for e in observations.values() if e.get("correct") is True)
        reports.append(
            CheckpointReport(
                spot.id, spot.prompt, len(predictions), choices, measured, right, len(observations), errors
            )
        )
    return reports
