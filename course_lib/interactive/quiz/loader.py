"""Reading and validating question banks (YAML files in ``course_lib/interactive/quiz/banks/``).

Every problem is reported as one ``QuizBankError`` that names the file and the question id, e.g.

    quiz bank 02.yaml (…/banks/02.yaml), question 'scaling-variance': no option is marked "correct: true";
    a single-choice question needs exactly one.

The bank format is described in ``docs/quizzes.md``.
"""

from __future__ import annotations

import difflib
import math
import re
import unicodedata
from pathlib import Path
from typing import Any

import yaml

from ..._syllabus import KNOWLEDGE_CHECKS, NOTEBOOKS, TOPICS, lessons
from .errors import QuizBankError
from .model import KINDS, Mistake, Option, Question, Quiz, display_order

BANKS_DIR = Path(__file__).resolve().parent / "banks"

BANK_KEYS = {"title", "notebook", "intro", "questions"}
QUESTION_KEYS = {
    "single": {"id", "kind", "topic", "notebook", "prompt", "options", "explanation"},
    "multiple": {"id", "kind", "topic", "notebook", "prompt", "options", "explanation"},
    "numeric": {
        "id",
        "kind",
        "topic",
        "notebook",
        "prompt",
        "answer",
        "tolerance",
        "unit",
        "mistakes",
        "wrong_feedback",
        "explanation",
    },
}
# Every question may also say where its numbers come from (checked by tests/test_quiz_quotes.py, not at load):
# "quotes" lists numbers read from a notebook's stored outputs, "exact" the numbers that are arithmetic or settings.
EVIDENCE_KEYS = {"quotes", "exact"}
for _keys in QUESTION_KEYS.values():
    _keys |= EVIDENCE_KEYS
QUOTE_KEYS = {"number", "range", "below", "output", "notebook", "source"}
QUOTE_CLAIMS = ("number", "range", "below")  # one per entry: rounds to it, lies within it, lies under it
OPTION_KEYS = {"text", "correct", "feedback"}
MISTAKE_KEYS = {"answer", "feedback"}
ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


def _value(text: str) -> float:
    return float(str(text).replace(",", "").strip().removesuffix("%"))


def _is_number(text) -> bool:
    """``"1e-5"``, ``"0.6"``, ``"37,456"``, ``"98%"``: a finite number as a quote writes it."""
    try:
        return math.isfinite(_value(text))
    except ValueError:
        return False


class _StrictLoader(yaml.SafeLoader):
    """A SafeLoader that refuses a key given twice in one mapping (plain PyYAML keeps the last one silently) and a
    key that is not a plain value (``? [a, b]``)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            raise yaml.constructor.ConstructorError(
                "while reading a mapping",
                node.start_mark,
                "found a key that is a list or a mapping; a key must be a plain word",
                key_node.start_mark,
            )
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                "while reading a mapping", node.start_mark, f"found the key {key!r} twice", key_node.start_mark
            )
        seen[key] = key_node
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def available_banks() -> list[str]:
    """The names of the banks shipped with the course: ``["01", ..., "06", "final"]``."""
    return sorted(path.stem for path in BANKS_DIR.glob("*.yaml"))


def bank_path(name: str | Path) -> Path:
    """``"01"``, ``1``, ``"final"`` or a path to a ``.yaml`` file → the file's path."""
    if isinstance(name, Path) or (isinstance(name, str) and name.endswith((".yaml", ".yml"))):
        path = Path(name)
        if not path.is_file():
            raise QuizBankError(path, None, "no such file.")
        return path
    key = str(name).strip()
    if key.isdigit():
        key = f"{int(key):02d}"
    path = BANKS_DIR / f"{key}.yaml"
    if not path.is_file():
        raise QuizBankError(
            path, None, f"there is no quiz called {name!r}; the quizzes are: {', '.join(available_banks())}."
        )
    return path


def load_bank(name: str | Path) -> Quiz:
    """Load and validate one bank; see ``bank_path`` for the names it accepts."""
    path = bank_path(name)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise QuizBankError(path, None, f"cannot read the file ({exc}).") from None
    return parse_bank(text, path)


def parse_bank(text: str, path: str | Path = "<text>") -> Quiz:
    """Validate the YAML ``text`` of a bank and build the ``Quiz``; ``path`` is used in messages and as the id."""
    path = Path(path)
    try:
        data = yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        raise _yaml_error(path, text, exc) from None
    except (TypeError, ValueError, OverflowError) as exc:  # e.g. a key PyYAML cannot hash
        raise QuizBankError(path, None, f"this is not a valid question bank: {exc}.") from None
    except RecursionError:
        raise QuizBankError(path, None, "the file is nested too deeply to be a question bank.") from None
    latex = _latex_in_double_quotes(path, text)
    if latex is not None:
        raise latex
    return _Validator(path).bank(data)


# YAML escapes that LaTeX in double quotes turns into control characters: "$\beta$" → backspace + "eta",
# "$\theta$" → tab + "heta", "$\nabla$" → newline + "abla", "$\frac$" → form feed + "rac", "$\alpha$" → bell + "lpha".
_LATEX_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\([abefnrtv0NLP_])([A-Za-z]+)")
_LATEX_COMMANDS = {
    "alpha",
    "beta",
    "epsilon",
    "eta",
    "theta",
    "nabla",
    "nu",
    "neq",
    "not",
    "frac",
    "forall",
    "top",
    "times",
    "tau",
    "text",
    "tanh",
    "rightarrow",
    "rho",
    "vec",
    "varepsilon",
    "left",
    "leq",
    "ldots",
    "boldsymbol",
    "bar",
    "mathbb",
    "mathbf",
    "mathrm",
    "sqrt",
    "sum",
    "sigma",
    "softmax",
    "exp",
    "approx",
    "cdot",
    "cdots",
    "in",
    "infty",
    "odot",
    "partial",
    "prod",
    "quad",
    "hat",
    "lambda",
    "mu",
    "omega",
    "phi",
    "pi",
    "psi",
    "Delta",
    "Sigma",
    "Theta",
    "Lambda",
}


def _latex_in_double_quotes(path: Path, text: str) -> QuizBankError | None:
    """A double-quoted scalar whose backslash escapes look like LaTeX commands (YAML turned them into control characters)."""
    try:
        events = list(yaml.parse(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError:
        return None
    for event in events:
        if isinstance(event, yaml.ScalarEvent) and event.style == '"':
            source = text[event.start_mark.index : event.end_mark.index]
            match = next(
                (
                    m
                    for m in _LATEX_ESCAPE.finditer(source)
                    if source[: m.start()].count("$") % 2 == 1 or m.group(1) + m.group(2) in _LATEX_COMMANDS
                ),
                None,
            )  # inside $...$, or a LaTeX command name: "First line\nSecond" stays a newline
            if match:
                snippet = source[max(0, match.start() - 10) : match.end() + 4].strip()
                question_id = _question_at(text, event.start_mark.line)
                return QuizBankError(
                    path,
                    question_id,
                    f'line {event.start_mark.line + 1}: inside double quotes YAML reads "\\{match.group(1)}" in '
                    f"{snippet!r} as a control character, not as LaTeX. Write the text in single quotes or as a block "
                    '("prompt: |" and the text indented below).',
                )
    return None


def _question_at(text: str, line: int) -> str | None:
    """The last ``id:`` on or before ``line``: the question a problem sits in."""
    question_id = None
    for row in text.splitlines()[: line + 1]:
        match = re.match(r"^\s*(?:-\s+)?id:\s*['\"]?([^'\"#\s]+)", row)
        if match:
            question_id = match.group(1)
    return question_id


def _control_character(value: str) -> str | None:
    """The first control character in ``value`` other than a newline, named, or None."""
    for char in value:
        if char != "\n" and (unicodedata.category(char) == "Cc" or char in "\u2028\u2029"):
            name = unicodedata.name(char, None) or {"\t": "TAB", "\b": "BACKSPACE", "\f": "FORM FEED"}.get(
                char, f"U+{ord(char):04X}"
            )
            return f"U+{ord(char):04X} {name}"
    return None


def _yaml_error(path: Path, text: str, exc: yaml.YAMLError) -> QuizBankError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is None:
        return QuizBankError(path, None, f"this is not valid YAML: {problem}.")
    question_id = None
    for line in text.splitlines()[: mark.line + 1]:  # the last "id:" before the error names the question
        match = re.match(r"^\s*(?:-\s+)?id:\s*['\"]?([^'\"#\s]+)", line)
        if match:
            question_id = match.group(1)
    lines = text.splitlines()
    bad_line = lines[mark.line] if mark.line < len(lines) else ""
    hint = ""
    if "\\t" in problem or "\t" in bad_line:
        hint = " Indent with spaces, not tabs."
    elif "mapping values are not allowed" in problem:
        hint = ' A text containing ": " must be quoted or written as a block ("prompt: |" and the text indented below).'
    elif "found unknown escape character" in problem:
        hint = " Inside double quotes a backslash starts an escape: write LaTeX in single quotes or in a block (|)."
    return QuizBankError(
        path, question_id, f"this is not valid YAML (line {mark.line + 1}, column {mark.column + 1}): {problem}.{hint}"
    )


def _number_text(value: int | float) -> str:
    try:
        return str(value)
    except ValueError:  # an int with more digits than Python prints
        return "a number with thousands of digits"


def _nice(value: Any) -> str:
    try:
        text = repr(value)
    except ValueError:  # an int with more digits than Python prints
        text = "a number with thousands of digits"
    return text if len(text) <= 40 else text[:37] + "..."


class _Validator:
    def __init__(self, path: Path):
        self.path = path

    def fail(self, question_id: str | None, problem: str) -> QuizBankError:
        return QuizBankError(self.path, question_id, problem)

    def evidence(self, raw: dict, qid: str) -> None:
        """``quotes:`` is a list of {number | range | below, output[, notebook][, source]}, ``exact:`` a list of
        numbers written as strings (docs/quizzes.md)."""
        quotes = raw.get("quotes", [])
        if not isinstance(quotes, list):
            raise self.fail(qid, '"quotes:" must be a list of entries with "number:" and "output:".')
        for item in quotes:
            claims = [key for key in QUOTE_CLAIMS if isinstance(item, dict) and key in item]
            if not isinstance(item, dict) or len(claims) != 1 or "output" not in item:
                raise self.fail(
                    qid,
                    'each entry of "quotes:" needs "output:" and one of "number:" (as the text writes it), '
                    '"range:" ([low, high]) or "below:".',
                )
            self.unknown_keys(item, QUOTE_KEYS, '"quotes:"', qid)
            if "range" in item and not (
                isinstance(item["range"], list)
                and len(item["range"]) == 2
                and all(isinstance(v, str) for v in item["range"])
            ):
                raise self.fail(qid, "\"range:\" must be two numbers written in quotes, e.g. ['0.6', '0.8'].")
            if "range" in item and (
                not all(map(_is_number, item["range"])) or _value(item["range"][0]) > _value(item["range"][1])
            ):
                raise self.fail(qid, f'"range:" must be two numbers, the lower first; got {_nice(item["range"])}.')
            if "below" in item and not (isinstance(item["below"], str) and _is_number(item["below"])):
                raise self.fail(
                    qid, f"\"below:\" must be one number written in quotes, e.g. '1e-5'; got {_nice(item['below'])}."
                )
            if item.get("source", "outputs") not in ("outputs", "text"):
                raise self.fail(
                    qid, '"source:" is "outputs" (the default: printed results) or "text" (the notebook\'s prose).'
                )
            try:
                re.compile(str(item["output"]))
            except re.error as error:
                raise self.fail(
                    qid, f'"output: {item["output"]}" is not a valid regular expression ({error}).'
                ) from None
        exact = raw.get("exact", [])
        if not isinstance(exact, list) or not all(isinstance(number, str) for number in exact):
            raise self.fail(qid, "\"exact:\" must be a list of numbers written in quotes, e.g. ['0.2447'].")

    def unknown_keys(self, mapping: dict, allowed: set[str], where: str, question_id: str | None) -> None:
        for key in mapping:
            if key not in allowed:
                close = difflib.get_close_matches(str(key), sorted(allowed), n=1)
                hint = f' (did you mean "{close[0]}"?)' if close else f" (allowed: {', '.join(sorted(allowed))})"
                raise self.fail(question_id, f'unknown key "{key}" in {where}{hint}.')

    def text(self, mapping: dict, key: str, where: str, question_id: str | None, required: bool = True) -> str:
        value = mapping.get(key)
        if value is None:
            if required:
                raise self.fail(question_id, f'{where} has no "{key}:"; add a non-empty text.')
            return ""
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = _number_text(value)
        if not isinstance(value, str) or not value.strip():
            raise self.fail(question_id, f'"{key}:" in {where} must be a non-empty text, got {_nice(value)}.')
        return self.clean(value.strip(), key, where, question_id)

    def clean(self, value: str, key: str, where: str, question_id: str | None) -> str:
        """Refuse a control character (LaTeX read as a YAML escape, a pasted tab) in a text field."""
        found = _control_character(value)
        if found:
            raise self.fail(
                question_id,
                f'"{key}:" in {where} contains the control character {found} (in {_nice(value)}): in double quotes a '
                "backslash starts a YAML escape, so write LaTeX in single quotes or a block, and replace tabs by spaces.",
            )
        return value

    def number(self, mapping: dict, key: str, where: str, question_id: str) -> float:
        if key not in mapping or mapping[key] is None:
            raise self.fail(question_id, f'{where} needs "{key}:" (a number).')
        value = mapping[key]
        if isinstance(value, str):  # YAML 1.1 reads 1e-4 as text; accept numbers written like that
            try:
                value = float(value.replace(",", "").replace("_", ""))
            except ValueError:
                pass
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**15:
            raise self.fail(
                question_id,
                f'"{key}:" in {where} is too large to check reliably (more than 15 digits), got {_nice(mapping[key])}.',
            )
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.fail(question_id, f'"{key}:" in {where} must be a finite number, got {_nice(mapping[key])}.')
        return value if isinstance(value, int) else float(value)  # keep 16640 an int, so it prints as 16,640

    def notebook(self, value: Any, question_id: str | None) -> str:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise self.fail(question_id, f'"notebook:" must be a notebook number such as "02", got {_nice(value)}.')
        text = str(value).strip()
        number = f"{int(text):02d}" if re.fullmatch(r"[0-9]{1,3}", text) else text  # "²" is a digit to isdigit()
        if number not in NOTEBOOKS or number in KNOWLEDGE_CHECKS:
            taught = ", ".join(row.number for row in lessons())
            raise self.fail(
                question_id, f'"notebook: {value}" is not one of the course notebooks that teach: {taught}.'
            )
        return number

    # ---------------------------------------------------------------------------------------------------
    def bank(self, data: Any) -> Quiz:
        if not isinstance(data, dict):
            raise self.fail(None, 'the file must be a mapping with "title:" and "questions:" (a list of questions).')
        self.unknown_keys(data, BANK_KEYS, "the bank", None)
        title = self.text(data, "title", "the bank", None)
        intro = self.text(data, "intro", "the bank", None, required=False)
        bank_notebook = self.notebook(data["notebook"], None) if data.get("notebook") is not None else None
        raw_questions = data.get("questions")
        if not isinstance(raw_questions, list) or not raw_questions:
            raise self.fail(
                None, '"questions:" must be a non-empty list of questions (each starting with "- id: ...").'
            )
        questions: list[Question] = []
        first_seen: dict[str, int] = {}
        for number, raw in enumerate(raw_questions, start=1):
            question = self.question(raw, number, bank_notebook)
            if question.id in first_seen:
                raise self.fail(
                    question.id,
                    f"duplicate id: questions {first_seen[question.id]} and {number} both use it; ids must be unique.",
                )
            first_seen[question.id] = number
            questions.append(question)
        return Quiz(
            id=self.path.stem,
            title=title,
            questions=tuple(questions),
            path=self.path,
            notebook=bank_notebook,
            intro=intro,
        )

    def question(self, raw: Any, number: int, bank_notebook: str | None) -> Question:
        if not isinstance(raw, dict):
            raise self.fail(
                f"#{number}", f"question {number} must be a mapping (id:, kind:, prompt:, ...), got {_nice(raw)}."
            )
        qid = raw.get("id")
        if not isinstance(qid, str) or not ID_PATTERN.match(qid):
            label = f"#{number}" if qid is None else str(qid)
            raise self.fail(
                label, f'question {number} needs an "id:" of lowercase letters, digits, "-" or "_" (got {_nice(qid)}).'
            )
        kind = raw.get("kind")
        if kind not in KINDS:
            raise self.fail(qid, f"unknown kind {_nice(kind)}; use one of: {', '.join(KINDS)}.")
        self.unknown_keys(raw, QUESTION_KEYS[kind], f"a {kind} question", qid)
        self.evidence(raw, qid)
        topic = raw.get("topic")
        if not isinstance(topic, str) or topic not in TOPICS:
            close = difflib.get_close_matches(str(topic), list(TOPICS), n=1)
            hint = f' (did you mean "{close[0]}"?)' if close else ""
            raise self.fail(qid, f"unknown topic {_nice(topic)}{hint}; use one of: {', '.join(TOPICS)}.")
        if raw.get("notebook") is not None:
            notebook = self.notebook(raw["notebook"], qid)
        elif bank_notebook is not None:
            notebook = bank_notebook
        else:
            raise self.fail(
                qid, 'which notebook teaches this? Add "notebook:" (e.g. "02") to the question or to the bank.'
            )
        prompt = self.text(raw, "prompt", "the question", qid)
        explanation = self.text(raw, "explanation", "the question", qid)
        common = dict(id=qid, kind=kind, topic=topic, notebook=notebook, prompt=prompt, explanation=explanation)
        if kind == "numeric":
            return self.numeric(raw, qid, common)
        return Question(options=self.options(raw, qid, kind), **common)

    def options(self, raw: dict, qid: str, kind: str) -> tuple[Option, ...]:
        raw_options = raw.get("options")
        if not isinstance(raw_options, list) or len(raw_options) < 2:
            raise self.fail(qid, f'a {kind}-choice question needs "options:", a list of at least 2 options.')
        if len(raw_options) > 8:
            raise self.fail(qid, f"{len(raw_options)} options are too many for one question (at most 8).")
        options = []
        for number, item in enumerate(raw_options, start=1):
            where = f"option {number}"
            if not isinstance(item, dict):
                raise self.fail(
                    qid,
                    f'{where} must be a mapping with "text:", "feedback:" and optionally "correct: true", got {_nice(item)}.',
                )
            self.unknown_keys(item, OPTION_KEYS, where, qid)
            text = self.text(item, "text", where, qid)
            where = f"{where} ({_nice(text)})"
            if not isinstance(item.get("feedback"), str) or not item["feedback"].strip():
                raise self.fail(
                    qid, f'{where} has no feedback; every option needs "feedback:" explaining why it is right or wrong.'
                )
            self.clean(item["feedback"].strip(), "feedback", where, qid)
            correct = item.get("correct", False)
            if not isinstance(correct, bool):
                raise self.fail(qid, f'"correct:" in {where} must be true or false, got {_nice(correct)}.')
            options.append(Option(text=text, correct=correct, feedback=item["feedback"].strip(), bank_index=number - 1))
        texts = [option.text for option in options]
        for i, text in enumerate(texts):
            if text in texts[:i]:
                raise self.fail(qid, f"options {texts.index(text) + 1} and {i + 1} have the same text {_nice(text)}.")
        right = sum(option.correct for option in options)
        if right == 0:
            need = "exactly one" if kind == "single" else "at least one"
            raise self.fail(qid, f'no option is marked "correct: true"; a {kind}-choice question needs {need}.')
        if kind == "single" and right > 1:
            raise self.fail(
                qid,
                f'{right} options are marked "correct: true"; a single-choice question needs exactly one (or use "kind: multiple").',
            )
        return tuple(options[i] for i in display_order(qid, len(options)))

    def numeric(self, raw: dict, qid: str, common: dict) -> Question:
        answer = self.number(raw, "answer", "a numeric question", qid)
        tolerance = self.number(raw, "tolerance", "a numeric question", qid)
        if tolerance < 0:
            raise self.fail(qid, f'"tolerance:" must be 0 or more, got {raw["tolerance"]!r}.')
        wrong_feedback = self.text(raw, "wrong_feedback", "a numeric question", qid)
        unit = self.text(raw, "unit", "the question", qid, required=False)
        mistakes = []
        raw_mistakes = raw.get("mistakes") or []
        if not isinstance(raw_mistakes, list):
            raise self.fail(qid, '"mistakes:" must be a list of {answer: ..., feedback: ...}.')
        for number, item in enumerate(raw_mistakes, start=1):
            where = f"mistake {number}"
            if not isinstance(item, dict):
                raise self.fail(qid, f'{where} must be a mapping with "answer:" and "feedback:", got {_nice(item)}.')
            self.unknown_keys(item, MISTAKE_KEYS, where, qid)
            value = self.number(item, "answer", where, qid)
            feedback = self.text(item, "feedback", where, qid)
            if abs(value - answer) <= tolerance:
                raise self.fail(qid, f"{where} ({value:g}) lies within the tolerance of the right answer {answer:g}.")
            for other in mistakes:
                if abs(value - other.answer) <= tolerance:
                    raise self.fail(qid, f"{where} ({value:g}) repeats an earlier mistake ({other.answer:g}).")
            mistakes.append(Mistake(answer=value, feedback=feedback))
        return Question(
            answer=answer,
            tolerance=tolerance,
            unit=unit,
            mistakes=tuple(mistakes),
            wrong_feedback=wrong_feedback,
            **common,
        )


def check_banks(names: list[str | Path] | None = None) -> tuple[list[Quiz], list[QuizBankError]]:
    """Validate several banks (default: all shipped ones). Also reports an id used in two banks.

    Returns ``(quizzes, errors)``: every bank that loaded, and one error per bank that did not.
    """
    names = list(names) if names else available_banks()
    unique: dict[Path, str | Path] = {}  # `quiz check 01 01` checks bank 01 once, not against itself
    for name in names:
        try:
            key = bank_path(name).resolve()
        except QuizBankError:
            key = Path(f"<unknown {name!r}>")
        unique.setdefault(key, name)
    names = list(unique.values())
    quizzes, errors = [], []
    for name in names:
        try:
            quizzes.append(load_bank(name))
        except QuizBankError as exc:
            errors.append(exc)
    owner: dict[str, Quiz] = {}
    for quiz in quizzes:
        for question in quiz.questions:
            if question.id in owner:
                errors.append(
                    QuizBankError(
                        quiz.path,
                        question.id,
                        f"this id is also used in {owner[question.id].path.name}; ids must be unique across the banks.",
                    )
                )
            else:
                owner[question.id] = quiz
    return quizzes, errors
