"""Checks split across two processes, so that a submission cannot forge its grade.

``harvest`` runs where the learner's code runs (a sandbox when grading): it calls the learner's functions on the
checks' inputs and records only what they returned (tensors, the kind of anything else, the exception's type,
message and line, which inputs they changed, and their gradients), as plain data that ``torch.load`` can read
with ``weights_only=True``. No verdict is recorded.

``judge`` runs on the trusted side: it builds the same inputs itself, computes the expected results with its own
``course_lib``, and replays the record through the very code a check cell uses (``core.judge``), so the verdict,
the named mistake and the message are exactly those the learner would see in the notebook. A record is untrusted
input: every field is type-checked, sizes are capped, and anything malformed becomes a failed check, never a pass.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Mapping
from typing import Any

import torch

from . import core, tensors
from .calling import RecordedFrame, TimeLimitExceeded
from .core import LearnerCalls
from .registry import EXERCISES
from .spec import MISSING, CheckResult, CheckSpec

FORMAT = 1
MAX_TENSOR_ENTRIES = 1_000_000
MAX_ITEMS = 16
MAX_TEXT = 2000


# ---------------------------------------------------------------------------------------------------------------
# Encoding what the learner's function returned (sandbox side)
# ---------------------------------------------------------------------------------------------------------------


def _text(value: Any, limit: int = MAX_TEXT) -> str:
    return core._shorten(core._safe_str(value), limit)


def encode(value: Any, depth: int = 0) -> dict:
    """A plain-data description of ``value`` that keeps what the checks look at (tensors, kinds, shapes)."""
    try:
        if isinstance(value, torch.Tensor):
            plain = value.detach()
            if type(plain) not in (torch.Tensor, torch.nn.Parameter):
                plain = plain.as_subclass(torch.Tensor)
            shape = [int(s) for s in plain.shape]
            if plain.layout != torch.strided:
                return {"t": "layout", "layout": str(plain.layout), "shape": shape}
            if plain.device.type != "cpu":
                return {"t": "device", "device": str(plain.device.type), "shape": shape}
            if plain.numel() > MAX_TENSOR_ENTRIES:
                return {"t": "huge", "shape": shape}
            return {"t": "tensor", "v": plain.clone().contiguous()}
        if value is None or isinstance(value, (bool, float, str)):
            return {"t": "plain", "v": value if not isinstance(value, str) else _text(value, 200)}
        if isinstance(value, int):
            return {"t": "plain", "v": value if abs(value) < 2**62 else float("inf") if value > 0 else float("-inf")}
        if value is NotImplemented:
            return {"t": "notimplemented"}
        if isinstance(value, (tuple, list)) and depth < 3:
            items = [encode(item, depth + 1) for item in list(value)[:MAX_ITEMS]]
            return {
                "t": type(value).__name__ if type(value) in (tuple, list) else "tuple",
                "items": items,
                "n": len(value),
            }
        module = type(value).__module__ or ""
        if module.startswith("numpy"):
            shape = getattr(value, "shape", None)
            return {
                "t": "numpy",
                "type": _text(type(value).__name__, 40),
                "shape": [int(s) for s in shape] if shape else [],
            }
        return {"t": "object", "type": _text(type(value).__name__, 40)}
    except Exception:
        return {"t": "object", "type": "unreadable value"}


def _frame_record(exc: BaseException) -> dict | None:
    frame = core._learner_frame(exc)
    if frame is None:
        return None
    try:
        return {
            "name": _text(frame.name, 100),
            "line": _text(frame.line or "", 300),
            "location": _text(core._frame_location(frame), 200),
        }
    except Exception:
        return None


def _exception_record(exc: BaseException) -> dict:
    return {
        "kind": "timeout" if isinstance(exc, TimeLimitExceeded) else "raised",
        "type": _text(type(exc).__name__, 100),
        "message": _text(exc),
        "stub": bool(core._is_stub(exc)),
        "frame": _frame_record(exc),
        "limit": float(exc.args[0]) if isinstance(exc, TimeLimitExceeded) and exc.args else core.TIME_LIMIT,
    }


def harvest_check(spec: CheckSpec, function: Any) -> dict:
    """Call ``function`` the way ``spec``'s check does and record what happened, as plain data."""
    record: dict = {
        "check": spec.name,
        "function": spec.function,
        "present": function is not None,
        "cases": [],
        "gradients": [],
    }
    if function is None:
        return record
    calls = LearnerCalls(function)
    problem = calls.problem(spec)
    record["problem"] = problem
    if problem:
        record["describe"] = encode(function)
        return record
    passed_values = True
    for number, case in enumerate(spec.cases, 1):
        args = case.build()[0]  # only the inputs: the sandbox never builds an expected result
        if number == 1:
            record["signature"] = calls.signature(spec, args)
            if record["signature"]:
                return record
        learner_args, before = core._clone(args), core._clone(args)
        try:
            value = calls.call(spec, number, learner_args)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            record["cases"].append(_exception_record(exc))
            return record
        record["cases"].append(
            {
                "kind": "value",
                "value": encode(value),
                "changed": list(calls.changed(spec, number, before, learner_args)),
                "delegated": calls.delegated(spec, number),
            }
        )
        if value is NotImplemented:
            return record
        passed_values = passed_values and core._tensors(value) is not None
    if spec.reference is not None and spec.trains and passed_values:
        for number, case in enumerate(spec.cases, 1):
            args = case.build()[0]
            try:
                record["gradients"].append(calls.gradients(spec, number, args))
            except KeyboardInterrupt:
                raise
            except BaseException as exc:
                record["gradients"].append({"kind": "error", "text": _text(core._exception_text(exc), 300)})
    return record


def harvest(exercise: str, namespace: Mapping[str, Any]) -> dict:
    """Record what the learner's functions in ``namespace`` return on every check of ``exercise``.

    Run it inside ``tensors.salt_scope(salt)`` and ``judge`` the record inside a scope of the same salt: both sides
    then build the same inputs. Outside a scope both use ``UNSCOPED_SALT``."""
    with _scope():
        return _harvest(exercise, namespace)


#: The salt of a harvest or judgement made outside any ``salt_scope`` (a grader that does not pass a salt yet):
#: fixed, so that the two sides still agree (a sandbox does not see the grader's ``COURSE_CHECK_SALT``).
UNSCOPED_SALT = 0


def _scope():
    salt = tensors.current_salt()
    return tensors.salt_scope(UNSCOPED_SALT if salt is None else salt)


def _harvest(exercise: str, namespace: Mapping[str, Any]) -> dict:
    checks = []
    for spec in EXERCISES[exercise].specs:
        try:
            function = namespace.get(spec.function) if hasattr(namespace, "get") else None
        except Exception:
            function = None
        try:
            checks.append(harvest_check(spec, function))
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # record what we can; the trusted side turns it into a failed check
            checks.append(
                {
                    "check": spec.name,
                    "function": spec.function,
                    "present": True,
                    "broken": _text(core._exception_text(exc), 300),
                }
            )
    return {"format": FORMAT, "exercise": exercise, "checks": checks}


# ---------------------------------------------------------------------------------------------------------------
# Replaying a record (trusted side)
# ---------------------------------------------------------------------------------------------------------------


class RecordError(ValueError):
    """A record that is not what ``harvest`` writes: the submission tampered with it, or the sandbox broke."""


def _expect(condition: bool, what: str) -> None:
    if not condition:
        raise RecordError(what)


def _string(value: Any, what: str, limit: int = MAX_TEXT) -> str:
    _expect(isinstance(value, str), f"{what} is not a string")
    return value[:limit]


_SAFE_BASES = {
    name: getattr(builtins, name)
    for name in (
        "ArithmeticError",
        "AssertionError",
        "AttributeError",
        "BufferError",
        "EOFError",
        "Exception",
        "FloatingPointError",
        "ImportError",
        "IndexError",
        "KeyError",
        "LookupError",
        "MemoryError",
        "ModuleNotFoundError",
        "NameError",
        "NotImplementedError",
        "OSError",
        "OverflowError",
        "RecursionError",
        "RuntimeError",
        "StopIteration",
        "TypeError",
        "UnboundLocalError",
        "UnicodeError",
        "ValueError",
        "ZeroDivisionError",
    )
}


def _replayed_exception(record: dict) -> BaseException:
    """An exception that looks to the checks like the learner's: same class name and message, its frame attached."""
    name = _string(record.get("type"), "an exception type", 100)
    message = _string(record.get("message", ""), "an exception message")
    frame = record.get("frame")
    recorded = None
    if frame is not None:
        _expect(isinstance(frame, dict), "a frame is not a mapping")
        recorded = RecordedFrame(
            _string(frame.get("name", ""), "a frame name", 100),
            _string(frame.get("line", ""), "a frame line", 300),
            _string(frame.get("location", ""), "a frame location", 200),
        )
    if record.get("kind") == "timeout":
        limit = record.get("limit", core.TIME_LIMIT)
        exc: BaseException = TimeLimitExceeded(
            float(limit) if isinstance(limit, (int, float)) and math.isfinite(limit) else core.TIME_LIMIT
        )
    else:
        base = _SAFE_BASES.get(name, Exception)
        cls = type(
            name if name.isidentifier() else "Error",
            (base,),
            {"__str__": lambda self: message, "__module__": "learner"},
        )
        exc = cls(message)
        exc._course_stub = bool(record.get("stub")) and base is NotImplementedError
    exc._course_frame = recorded
    return exc


class _Opaque:
    """Stands for a value that is not a tensor; only its kind matters to the checks."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


def _opaque(type_name: str, module: str = "learner", **attributes) -> Any:
    name = type_name if type_name.isidentifier() else "object"
    return type(name, (_Opaque,), {"__module__": module, **attributes})()


def decode(item: Any, depth: int = 0) -> Any:
    """The value ``encode`` described, rebuilt from plain data (never by running anything from the record)."""
    _expect(isinstance(item, dict) and isinstance(item.get("t"), str), "a value is not a tagged mapping")
    kind = item["t"]
    if kind == "tensor":
        value = item.get("v")
        _expect(
            type(value) is torch.Tensor and value.numel() <= MAX_TENSOR_ENTRIES, "a tensor is malformed or too large"
        )
        return value
    if kind == "plain":
        value = item.get("v")
        _expect(value is None or type(value) in (bool, int, float, str), "a plain value has another type")
        return value[:200] if isinstance(value, str) else value
    if kind == "notimplemented":
        return NotImplemented
    if kind in ("tuple", "list"):
        _expect(depth < 4, "values are nested too deeply")
        items = item.get("items")
        _expect(isinstance(items, list) and len(items) <= MAX_ITEMS, "a sequence is malformed")
        values = [decode(x, depth + 1) for x in items]
        return tuple(values) if kind == "tuple" else values
    shape = item.get("shape", [])
    _expect(
        isinstance(shape, list) and len(shape) <= 8 and all(type(s) is int and 0 <= s < 2**31 for s in shape),
        "a shape is malformed",
    )
    if kind == "layout":
        entries = math.prod(shape) if shape else 1
        if entries <= MAX_TENSOR_ENTRIES:
            return torch.zeros(shape).to_sparse()
        return _opaque("sparse_tensor")
    if kind == "device":
        return _opaque(f"tensor_on_{_string(item.get('device', ''), 'a device', 20)}")
    if kind == "huge":
        return _opaque("tensor_with_too_many_entries")
    if kind == "numpy":
        return _opaque(_string(item.get("type", "ndarray"), "a NumPy type", 40), module="numpy", shape=tuple(shape))
    if kind == "object":
        return _opaque(_string(item.get("type", "object"), "a type name", 40))
    raise RecordError(f"unknown value kind {kind!r}")


class Replay(LearnerCalls):
    """``LearnerCalls`` answered from a sandbox's record instead of by running the learner's code."""

    def __init__(self, record: dict):
        super().__init__(None)
        self.record = record
        cases = record.get("cases", [])
        gradients = record.get("gradients", [])
        _expect(isinstance(cases, list) and isinstance(gradients, list), "cases or gradients are not lists")
        self.cases, self.grads = cases, gradients
        if "describe" in record:
            self.function = decode(record["describe"])

    def problem(self, spec: CheckSpec) -> str | None:
        problem = self.record.get("problem")
        if problem is None:
            return None
        # the trusted side words it again from the described value: a submission cannot inject text here
        return core._not_a_function(spec, self.function) or "did not get a function."

    def signature(self, spec: CheckSpec, args: tuple) -> str | None:
        text = self.record.get("signature")
        return None if text is None else _string(text, "a signature message", 400)

    def _case(self, number: int) -> dict:
        _expect(number - 1 < len(self.cases), f"no record of test {number}")
        case = self.cases[number - 1]
        _expect(isinstance(case, dict), "a test record is not a mapping")
        return case

    def call(self, spec: CheckSpec, number: int, args: tuple) -> Any:
        case = self._case(number)
        if case.get("kind") in ("raised", "timeout"):
            raise _replayed_exception(case)
        _expect(case.get("kind") == "value", "a test record has an unknown kind")
        return decode(case.get("value"))

    def delegated(self, spec: CheckSpec, number: int) -> bool:
        delegated = self._case(number).get("delegated", False)
        _expect(type(delegated) is bool, "a delegation flag is not True or False")
        return delegated

    def changed(self, spec: CheckSpec, number: int, before: tuple, after: tuple) -> list[str]:
        changed = self._case(number).get("changed", [])
        _expect(
            isinstance(changed, list) and all(isinstance(name, str) for name in changed), "changed inputs are malformed"
        )
        return [name for name in changed if name in spec.arg_names or name.startswith("argument ")][:8]

    def gradients(self, spec: CheckSpec, number: int, args: tuple) -> dict:
        if number - 1 >= len(self.grads):
            return {"kind": "skip"}
        entry = self.grads[number - 1]
        _expect(isinstance(entry, dict), "a gradient record is not a mapping")
        kind = entry.get("kind")
        if kind == "cut":
            items = entry.get("items", [])
            _expect(isinstance(items, list), "cut outputs are malformed")
            known = {name.strip(": ") for name in core._item_names(spec.output)}
            return {"kind": "cut", "items": [name for name in items if name in known]}
        if kind == "error":
            return {"kind": "error", "text": _string(entry.get("text", ""), "a gradient error", 300)}
        if kind == "grads":
            grads = entry.get("grads")
            _expect(isinstance(grads, list), "gradients are malformed")
            for g in grads:
                _expect(
                    g is None or (type(g) is torch.Tensor and g.numel() <= MAX_TENSOR_ENTRIES),
                    "a gradient is malformed",
                )
            return {"kind": "grads", "grads": grads}
        return {"kind": "skip"}

    @property
    def traceable(self) -> bool:
        return False


def _failed(spec: CheckSpec, text: str) -> CheckResult:
    return CheckResult(spec.name, False, core.ERROR, f"{core.ICONS[core.ERROR]} {spec.name}: {text}")


def judge(exercise: str, record: Any) -> list[dict]:
    """One result dict per check of ``exercise`` (``CheckResult.to_dict`` plus ``function``), from a harvest record.

    Never raises: a record that is missing, malformed or tampered with gives failed checks, never a pass.
    Judge inside ``tensors.salt_scope`` with the salt the record was harvested with (see ``harvest``).
    """
    with _scope():
        return _judge_record(exercise, record)


def _judge_record(exercise: str, record: Any) -> list[dict]:
    specs = EXERCISES[exercise].specs
    entries: dict[str, dict] = {}
    problem = None
    try:
        _expect(isinstance(record, dict), "the record is not a mapping")
        _expect(
            record.get("format") == FORMAT and record.get("exercise") == exercise,
            "the record is for another exercise or format",
        )
        checks = record.get("checks")
        _expect(isinstance(checks, list), "the record has no list of checks")
        for entry in checks:
            if isinstance(entry, dict) and isinstance(entry.get("check"), str):
                entries.setdefault(entry["check"], entry)
    except RecordError as exc:
        problem = str(exc)
    results = []
    for spec in specs:
        entry = entries.get(spec.name)
        if problem is not None or entry is None:
            result = _failed(spec, f"the grader could not read what your function returned ({problem or 'no record'}).")
        elif not entry.get("present"):
            result = CheckResult(
                spec.name,
                False,
                MISSING,
                f"❌ {spec.name}: there is no function named {spec.function} (was its cell run?).",
            )
        elif "broken" in entry:
            result = _failed(spec, "the grader could not examine your function (it broke the check).")
        else:
            try:
                result = core.judge(spec, Replay(entry))
            except RecordError as exc:
                result = _failed(spec, f"the grader could not read what your function returned ({exc}).")
            except Exception as exc:  # pragma: no cover - core.judge has its own safety net
                result = _failed(spec, f"the grader could not judge the record ({type(exc).__name__}).")
        results.append({**result.to_dict(), "function": spec.function})
    return results
