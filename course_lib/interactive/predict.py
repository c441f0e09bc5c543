"""Predict, then observe: a checkpoint before a key experiment, and its measurement next to the prediction.

    predict("01-lstm-32")                           # before the experiment: the question, lock in an answer
    ...                                             # the experiment runs
    reveal("01-lstm-32", measured=accuracy_32)      # after it: your prediction next to the measurement

Committing to a prediction before a demonstration makes learners see it correctly more often than only watching
(Miller et al., 2013). The checkpoints are data, in ``course_lib/checkpoints.yaml``: an id (its notebook's number
first), the question, and either options with the rule that picks the right one from the measurement
(``bins``: the measurement falls in option i's range) or a number with a unit, a tolerance and the ``range`` a guess
must fall in; and ``why``, the sentence the reveal shows after the measurement to explain it.

Both the locked prediction and the measurement go into the learning record (``course_lib.interactive.record``). Without a
kernel (the website, GitHub) the question shows with the measured answer folded under it. A guess locked after the
measurement has run in this kernel (Run All runs the experiment before anyone clicks) is recorded as ``hindsight``,
not as a prediction, and the reveal says so.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .._validate import CourseInputError
from . import record

CHECKPOINTS_FILE = Path(__file__).with_name("checkpoints.yaml")
LETTERS = "ABCDEFGHIJ"


@dataclass(frozen=True)
class Checkpoint:
    """One prediction checkpoint: ``options`` and ``bins`` (choice) or ``unit`` and ``tolerance`` (a number).

    ``bins[i] = (low, high)``: option i is right when ``low <= measured < high``.
    """

    id: str
    notebook: str
    prompt: str
    options: tuple[str, ...] = ()
    bins: tuple[tuple[float, float], ...] = ()
    unit: str = ""
    tolerance: float | None = None
    range: tuple[float, float] | None = None  # a number checkpoint: the smallest and largest sensible guess
    why: str = ""  # one sentence after the measurement: why it came out so

    @property
    def kind(self) -> str:
        return "choice" if self.options else "number"

    def right_option(self, measured: float) -> int | None:
        """The index of the option whose range holds ``measured`` (None if none does)."""
        for index, (low, high) in enumerate(self.bins):
            if low <= measured < high:
                return index
        return None

    def label(self, prediction) -> str:
        """A prediction as the learner sees it: ``"B) about 0.5"`` or ``"0.3"``."""
        if prediction is None:
            return "none"
        if self.kind == "choice":
            index = LETTERS.index(prediction)
            return f"{prediction}) {self.options[index]}"
        return f"{prediction:g}{(' ' + self.unit) if self.unit else ''}"


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise CourseInputError(f"{where} must be a finite number, got {value!r}")
    return float(value)


@lru_cache(maxsize=1)
def checkpoints() -> dict[str, Checkpoint]:
    """Every checkpoint of the course, by id, read and validated from ``checkpoints.yaml``."""
    import yaml

    raw = yaml.safe_load(CHECKPOINTS_FILE.read_text(encoding="utf-8"))
    found: dict[str, Checkpoint] = {}
    for item in raw["checkpoints"]:
        where = f"checkpoint {item.get('id')!r} in {CHECKPOINTS_FILE.name}"
        options = tuple(str(option) for option in item.get("options", ()))
        bins = tuple((_number(lo, where), _number(hi, where)) for lo, hi in item.get("bins", ()))
        if options and len(bins) != len(options):
            raise CourseInputError(f"{where}: give one range in bins for each option")
        if not options and "unit" not in item:
            raise CourseInputError(f"{where}: give options (with bins) or a unit (a number to predict)")
        span = item.get("range")
        if span is not None and (len(span) != 2 or _number(span[0], where) >= _number(span[1], where)):
            raise CourseInputError(f"{where}: range must be [low, high] with low < high")
        checkpoint = Checkpoint(
            id=str(item["id"]),
            notebook=str(item["id"])[:2],
            prompt=str(item["prompt"]),
            options=options,
            bins=bins,
            unit=str(item.get("unit", "")),
            tolerance=_number(item["tolerance"], where) if "tolerance" in item else None,
            range=(float(span[0]), float(span[1])) if span is not None else None,
            why=" ".join(str(item.get("why", "")).split()),
        )
        if checkpoint.id in found:
            raise CourseInputError(f"{where}: the id is used twice")
        found[checkpoint.id] = checkpoint
    return found


def checkpoint(checkpoint_id: str) -> Checkpoint:
    try:
        return checkpoints()[checkpoint_id]
    except KeyError:
        raise CourseInputError(f"there is no prediction checkpoint {checkpoint_id!r}") from None


_locked: dict[str, object] = {}  # checkpoint id → the prediction locked in this kernel
_measured: dict[str, float] = {}  # checkpoint id → the measurement already revealed in this kernel
_hindsight: set[str] = set()  # checkpoints whose guess was locked after their measurement had run

DECIMAL_COMMA = re.compile(r"^([+-]?\d+),(\d+)$")  # "0,5": a lone comma between digits is a decimal point
THOUSANDS = re.compile(r"^[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")  # "1,000,000" or "1,000.5": commas group thousands


def parse_number(text) -> float:
    """A typed guess as a number: ``"0.5"``, ``"0,5"`` (decimal comma), ``"1,000,000"``, ``" 3 "``."""
    if isinstance(text, bool):
        raise CourseInputError("type a number, for example 0.5")
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        typed = str(text).strip().replace(" ", "")
        if found := DECIMAL_COMMA.match(typed):
            typed = f"{found.group(1)}.{found.group(2)}"
        elif THOUSANDS.match(typed):
            typed = typed.replace(",", "")
        try:
            value = float(typed)
        except ValueError:
            raise CourseInputError(f"type a number, for example 0.5 (got {str(text).strip()!r})") from None
    if not math.isfinite(value):
        raise CourseInputError("type a finite number")
    return value


def lock(checkpoint_id: str, prediction) -> object:
    """Lock in a prediction (an option letter or a number) and record it; a checkpoint locks once.

    Locked after the checkpoint's measurement was revealed in this kernel, it is recorded as ``hindsight``.
    """
    spot = checkpoint(checkpoint_id)
    if checkpoint_id in _locked:
        return _locked[checkpoint_id]
    if spot.kind == "choice":
        if not isinstance(prediction, str) or prediction.strip().upper() not in LETTERS[: len(spot.options)]:
            raise CourseInputError(f"choose one of {', '.join(LETTERS[: len(spot.options)])}")
        prediction = prediction.strip().upper()
    else:
        prediction = parse_number(prediction)
        if spot.range is not None and not spot.range[0] <= prediction <= spot.range[1]:
            low, high = spot.range
            raise CourseInputError(
                f"{prediction:g} is outside what this question asks: type a number from {low:g} to {high:g}"
            )
    _locked[checkpoint_id] = prediction
    if checkpoint_id in _measured:
        _hindsight.add(checkpoint_id)
        record.append(
            {
                "kind": "hindsight",
                "checkpoint": checkpoint_id,
                "notebook": spot.notebook,
                "prediction": prediction,
                "measured": _measured[checkpoint_id],
            }
        )
        return prediction
    record.append(
        {"kind": "prediction", "checkpoint": checkpoint_id, "notebook": spot.notebook, "prediction": prediction}
    )
    return prediction


def outcome(spot: Checkpoint, prediction, measured: float) -> tuple[bool | None, float | None, str]:
    """(right?, signed error for a number, one sentence) for a prediction against the measurement."""
    if spot.kind == "choice":
        right_index = spot.right_option(measured)
        right = LETTERS[right_index] if right_index is not None else None
        if prediction is None:
            return None, None, f"The measurement picks {spot.label(right)}."
        if prediction == right:
            return True, None, f"Your prediction {spot.label(prediction)} matches the measurement."
        return False, None, f"You predicted {spot.label(prediction)}; the measurement picks {spot.label(right)}."
    if prediction is None:  # the "Measured:" line already gives the number; nothing to compare it with
        return None, None, ""
    error = prediction - measured
    close = spot.tolerance is not None and abs(error) <= spot.tolerance
    verdict = "within the tolerance" if close else f"off by {abs(error):.3g}"
    return (close if spot.tolerance is not None else None), error, f"You predicted {prediction:g}: {verdict}."


class Reveal:
    """The measurement next to the prediction; displayed as the last line of the result cell."""

    def __init__(self, spot: Checkpoint, prediction, measured: float, hindsight: bool = False):
        self.spot, self.prediction, self.measured, self.hindsight = spot, prediction, measured, hindsight
        self.correct, self.error, self.sentence = outcome(spot, prediction, measured)
        if hindsight:
            self.correct = None
            self.sentence = (
                f"You locked {spot.label(prediction)} after the measurement had run, so it counts as hindsight, not as "
                "a prediction. (Restart the kernel and lock in before running the experiment to predict.)"
            )

    def _lines(self) -> list[str]:
        made = self.prediction is not None
        lines = [
            f"Prediction checkpoint: {self.spot.prompt}",
            " ".join(
                part
                for part in (
                    f"Measured: {self.measured:.3g}{(' ' + self.spot.unit) if self.spot.unit else ''}.",
                    self.sentence,
                    "" if made else "(Lock in a prediction above before running the experiment to compare.)",
                )
                if part
            ),
        ]
        if self.spot.why:
            lines.append(f"Why: {self.spot.why}")
        return lines

    def __repr__(self) -> str:
        return "\n".join(self._lines())

    def _repr_html_(self) -> str:
        body = "</p><p>".join(html.escape(line) for line in self._lines()[1:])
        state = "" if self.prediction is None else " open"  # folded where no prediction was made (site, GitHub)
        return (
            f'<details class="course-checkpoint"{state}><summary><strong>Prediction checkpoint</strong> · '
            f"{html.escape(self.spot.prompt)} (the measured answer)</summary><p>{body}</p></details>"
        )


def reveal(checkpoint_id: str, measured: float) -> Reveal:
    """Show the measurement next to the prediction locked above, and record both (if one was locked)."""
    spot = checkpoint(checkpoint_id)
    measured = _number(float(measured) if hasattr(measured, "item") else measured, "measured")
    prediction = _locked.get(checkpoint_id)
    if prediction is None:
        _measured[checkpoint_id] = measured  # a guess locked from now on comes after the measurement
    hindsight = checkpoint_id in _hindsight
    shown = Reveal(spot, prediction, measured, hindsight=hindsight)
    if prediction is not None and not hindsight:
        record.append(
            {
                "kind": "observation",
                "checkpoint": checkpoint_id,
                "notebook": spot.notebook,
                "prediction": prediction,
                "measured": measured,
                "correct": shown.correct,
            }
        )
    return shown


class PredictionView:
    """The checkpoint's question as widgets (choose or type, then "Lock in"), with a static fallback."""

    def __init__(self, spot: Checkpoint):
        import ipywidgets as widgets

        self.spot = spot
        self.prompt = widgets.HTMLMath(f"<p><strong>Predict first.</strong> {html.escape(spot.prompt)}</p>")
        if spot.kind == "choice":
            self.answer = widgets.RadioButtons(
                options=[(f"{LETTERS[i]}) {text}", LETTERS[i]) for i, text in enumerate(spot.options)],
                value=None,
                layout=widgets.Layout(width="auto"),
            ).add_class("checkpoint-options")
        else:
            self.answer = widgets.Text(
                value="",
                placeholder="a number",
                description=f"Your guess{' (' + spot.unit + ')' if spot.unit else ''}:",
                style={"description_width": "initial"},
            ).add_class("checkpoint-number")
        self.button = widgets.Button(
            description="Lock in my prediction",
            button_style="primary",
            icon="lock",
            layout=widgets.Layout(width="auto"),
        )
        self.button.add_class("checkpoint-lock")
        self.button.on_click(self.on_lock)
        self.status = widgets.HTML("").add_class("checkpoint-status")
        self.widget = widgets.VBox([self.prompt, self.answer, self.button, self.status]).add_class("course-checkpoint")
        if spot.id in _locked:
            self._show_locked(_locked[spot.id])

    def on_lock(self, _button=None):
        try:
            value = lock(self.spot.id, self.answer.value)
        except CourseInputError as exc:
            self.status.value = f"<p>{html.escape(str(exc))}</p>"
            return None
        self._show_locked(value)
        return value

    def _show_locked(self, value) -> None:
        self.answer.disabled = True
        self.button.disabled = True
        if self.spot.id in _hindsight:
            self.status.value = (
                f"<p>Locked: <strong>{html.escape(self.spot.label(value))}</strong>, but the experiment below has "
                "already run, so this is kept as hindsight, not as a prediction. To predict, restart the kernel and "
                "lock in before running the experiment.</p>"
            )
            return
        self.status.value = (
            f"<p>Locked: <strong>{html.escape(self.spot.label(value))}</strong>. Run the experiment below; its "
            "result cell shows your prediction next to the measurement.</p>"
        )

    def text(self) -> str:
        lines = [f"Predict first. {self.spot.prompt}"]
        lines += [f"  {LETTERS[i]}) {text}" for i, text in enumerate(self.spot.options)]
        if self.spot.kind == "number":
            span = f" from {self.spot.range[0]:g} to {self.spot.range[1]:g}" if self.spot.range else ""
            lines.append(f"  (a number{span}{', in ' + self.spot.unit if self.spot.unit else ''})")
        return "\n".join(lines)

    def _repr_mimebundle_(self, include=None, exclude=None):
        data = dict(self.widget._repr_mimebundle_())
        items = "".join(f"<li>{LETTERS[i]}) {html.escape(t)}</li>" for i, t in enumerate(self.spot.options))
        data["text/html"] = (
            f'<div class="course-checkpoint"><p><strong>Predict first.</strong> {html.escape(self.spot.prompt)}</p>'
            + (f"<ul>{items}</ul>" if items else "")
            + "<p><em>Run the notebook to lock in a prediction; the measured answer is under the experiment.</em></p></div>"
        )
        data["text/plain"] = self.text()
        return data

    def __repr__(self) -> str:
        return self.text()


def predict(checkpoint_id: str) -> PredictionView:
    """The prediction checkpoint ``checkpoint_id``: put it on the last line of the cell before the experiment."""
    return PredictionView(checkpoint(checkpoint_id))
