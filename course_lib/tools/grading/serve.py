"""Inside the sandbox: run a learner's whole notebook as they ran it, then answer the grader's calls.

    python -m course_lib.tools.grading.serve NOTEBOOK CELL_SECONDS

Every code cell runs in order in one IPython shell (magics included), as in Jupyter; a cell that raises is noted
and the next one runs. Then this process serves the grader, one request at a time, over its stdin and stdout
(``wire`` frames: JSON and raw tensor bytes, nothing pickled):

- ``describe``: is there an object of that name, is it callable, what are its parameters;
- ``call``: call the function on the arguments sent (tensors, numbers, and the parts a check hands over, rebuilt
  here by ``given``), return what it returned and which inputs it changed; with ``grad``, the inputs' gradients of
  ``Σ output · cotangent`` for the cotangents sent.

Nothing here judges: the grader draws the inputs, computes the expected values and the verdict itself, and a
frame this process (or the notebook, which shares it) writes can only claim what a function returned. The course
package seen here is a copy without the implementations the exercise grades (``sandbox.course_copy``).
"""

from __future__ import annotations

import contextlib
import linecache
import os
import signal
import sys
import sysconfig
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from course_lib._standins import CachedLM, Sublayer
from course_lib.tools.grading import wire


class TimeLimitExceeded(BaseException):
    """A call or a cell ran past its time."""


def _alarm(seconds: float):
    @contextlib.contextmanager
    def scope():
        def on_alarm(signum, frame):
            raise TimeLimitExceeded(seconds)

        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.01), 0.25)  # repeats, in case a bare except swallows it
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    return scope()


# ---------------------------------------------------------------------------------------------------------------
# Running the notebook
# ---------------------------------------------------------------------------------------------------------------


def read_cells(path: str) -> list[str]:
    import json

    with open(path, "rb") as handle:
        notebook = json.loads(handle.read().decode("utf-8-sig"))
    sources = []
    for cell in notebook.get("cells", []) if isinstance(notebook, dict) else []:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            if isinstance(source, list):
                source = "".join(part for part in source if isinstance(part, str))
            sources.append(source if isinstance(source, str) else "")
    return sources


CELLS: dict[int, int] = {}  # IPython's execution count → code cell number, to say where a learner's line is


def run_cells(shell, sources: list[str], seconds: float) -> dict:
    report: dict = {"cells": 0, "cell_errors": [], "stopped_cell": None}
    deadline = time.monotonic() + seconds
    for number, source in enumerate(sources, 1):
        if not source.strip():
            continue
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            report["stopped_cell"] = number
            break
        report["cells"] += 1
        CELLS[shell.execution_count] = number
        try:
            with _alarm(remaining):
                outcome = shell.run_cell(source, store_history=True, silent=False)
        except TimeLimitExceeded:
            report["stopped_cell"] = number
            break
        error = outcome.error_in_exec or outcome.error_before_exec
        if isinstance(error, TimeLimitExceeded):
            report["stopped_cell"] = number
            break
        if error is not None and len(report["cell_errors"]) < 20:
            first = (wire._text(error, 400).strip().splitlines() or [""])[0]
            report["cell_errors"].append(f"code cell {number}: {type(error).__name__}: {wire._text(first, 200)}")
    return report


# ---------------------------------------------------------------------------------------------------------------
# The parts a check hands to the learner's function, rebuilt from plain data
# ---------------------------------------------------------------------------------------------------------------


class GivenLayerNorm(torch.nn.Module):
    """A LayerNorm with these weights (given, not graded here): biased variance, eps inside the root."""

    def __init__(self, gamma: torch.Tensor, beta: torch.Tensor, eps: float):
        super().__init__()
        self.gamma, self.beta, self.eps = torch.nn.Parameter(gamma), torch.nn.Parameter(beta), eps
        self.requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.layer_norm(x, self.gamma.shape, self.gamma, self.beta, self.eps)


class Part:
    """A named, plain-function view of one part (the learner sees ``self_attention(x) -> tensor``)."""

    def __init__(self, name: str, function):
        self.name, self.function = name, function

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.function(x)

    def __repr__(self) -> str:
        return self.name


def _parts_only(model):
    """The model ``ablated_repeat_loss`` is given: its parts and plain forward pass, without ``ablate=``."""

    class PartsOnlyLM(type(model)):
        def forward(self, tokens, ablate=()):
            if tuple(ablate):
                raise ValueError(
                    "ablated_repeat_loss switches the head off itself, with the model's parts: the check's model does "
                    "not run model(tokens, ablate=...) (compare with it afterwards, outside your function)"
                )
            x, weights = self.embed(tokens), []
            for layer in self.layers:
                x, w = layer(x, None)
                weights.append(w)
            return self.unembed(x), weights

    model.__class__ = PartsOnlyLM
    return model


def _module(factory, config: dict, state: dict):
    torch.manual_seed(0)
    module = factory(**config)
    module.load_state_dict(state)
    return module.eval().requires_grad_(False)


def given(entry: dict, cache: dict) -> Any:
    """The object a ``{"t": "given", "kind": ..., "key": ...}`` argument stands for (the same key: the same object)."""
    key = entry.get("key")
    if key in cache:
        return cache[key]
    kind, config, tensors = entry.get("kind"), dict(entry.get("config") or {}), dict(entry.get("tensors") or {})
    if kind == "sublayer":
        value: Any = Sublayer(tensors["weight"], tensors["bias"])
    elif kind == "layer_norm":
        norm = GivenLayerNorm(tensors["gamma"], tensors["beta"], float(config.get("eps", 1e-5)))
        value = Part(str(config["name"]), norm) if config.get("name") else norm
    elif kind == "self_attention":
        from course_lib.multihead import MultiHeadAttention

        attention = _module(MultiHeadAttention, config, tensors)
        value = Part("self_attention", lambda h: attention(h)[0])
    elif kind == "attention_only_lm":
        from course_lib.attention_only import AttentionOnlyLM

        value = _parts_only(_module(AttentionOnlyLM, config, tensors))
    elif kind == "cached_lm":
        from course_lib.decoder import DecoderLM

        value = CachedLM(_module(DecoderLM, config, tensors))
    else:
        raise wire.WireError(f"unknown part {kind!r}")
    cache[key] = value
    return value


def _key(value: Any) -> Any:
    return tuple(_key(x) for x in value) if isinstance(value, list) else value


def arguments(items: list, cache: dict) -> tuple:
    def one(item):
        if isinstance(item, dict) and item.get("t") == "given":
            return given(item, cache)
        if isinstance(item, dict) and item.get("t") == "tuple":
            return tuple(one(x) for x in item.get("items", []))
        if isinstance(item, dict) and item.get("t") == "dict":  # plain data (merges), with its tuple keys
            return {_key(one(k)): one(v) for k, v in item.get("items", [])}
        if isinstance(item, list):
            return [one(x) for x in item]
        return item

    return tuple(one(item) for item in items)


# ---------------------------------------------------------------------------------------------------------------
# Answering calls
# ---------------------------------------------------------------------------------------------------------------


def _roots() -> tuple[str, ...]:
    roots = {str(Path(__file__).resolve().parents[3])}  # the course package (its copy)
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        with contextlib.suppress(Exception):
            roots.add(str(Path(sysconfig.get_paths()[key]).resolve()))
    roots |= {str(Path(sys.prefix).resolve()), str(Path(sys.base_prefix).resolve())}
    for module in ("torch", "numpy", "IPython"):
        loaded = sys.modules.get(module)
        if loaded is not None and getattr(loaded, "__file__", None):
            roots.add(str(Path(loaded.__file__).resolve().parent))
    return tuple(roots)


def _frame(exc: BaseException) -> dict | None:
    """The learner's deepest line in the traceback: its function name, its text and where it is."""
    roots = _roots()
    try:
        frames = traceback.extract_tb(exc.__traceback__)
    except Exception:
        return None
    for frame in reversed(frames):
        name = frame.filename
        if name.startswith("<frozen") or any(str(Path(name).resolve()).startswith(root + "/") for root in roots):
            continue
        where = f"{Path(name).name}, line {frame.lineno}"
        with contextlib.suppress(Exception):
            from IPython import get_ipython

            shell = get_ipython()
            named = shell.compile.format_code_name(name) if shell is not None else None
            if named:
                count = int("".join(ch for ch in named[1] if ch.isdigit()) or 0)
                where = f"code cell {CELLS.get(count, count)}, line {frame.lineno}"
        line = frame.line or linecache.getline(name, frame.lineno or 0).strip()
        return {"name": wire._text(frame.name, 100), "line": wire._text(line, 300), "location": wire._text(where, 200)}
    return None


def _raised(exc: BaseException) -> dict:
    frame = _frame(exc)
    line = (frame or {}).get("line", "")
    stub = isinstance(exc, NotImplementedError) and (frame is None or "NotImplementedError" in line or not line)
    return {
        "kind": "timeout" if isinstance(exc, TimeLimitExceeded) else "raised",
        "type": wire._text(type(exc).__name__, 100),
        "message": wire._text(exc),
        "stub": bool(stub),
        "frame": frame,
    }


def _snapshot(args: tuple) -> list:
    shot = []
    for arg in args:
        if isinstance(arg, torch.Tensor):
            shot.append(arg.detach().clone())
        elif isinstance(arg, torch.nn.Module):
            shot.append({k: v.detach().clone() for k, v in arg.state_dict().items()})
        elif isinstance(arg, (list, dict)):  # plain data (token ids, merges)
            import copy

            shot.append(("plain", copy.deepcopy(arg)))
        else:
            shot.append(None)
    return shot


def _changed(before: list, args: tuple) -> list[int]:
    changed = []
    for index, (old, new) in enumerate(zip(before, args)):
        try:
            if isinstance(old, tuple):  # plain data: the same type and contents
                same = type(new) is type(old[1]) and new == old[1]
            elif isinstance(old, torch.Tensor):
                same = old.shape == new.shape and old.dtype == new.dtype and torch.equal(old, new.detach())
            elif isinstance(old, dict):
                state = new.state_dict()
                same = state.keys() == old.keys() and all(
                    state[k].shape == old[k].shape and torch.equal(state[k], old[k]) for k in old
                )
            else:
                continue
        except Exception:
            same = False
        if not same:
            changed.append(index)
    return changed


def _outputs(value: Any) -> list[torch.Tensor] | None:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return list(value)
    return None


def answer(request: dict, namespace: dict, cache: dict) -> dict:
    op = request.get("op")
    function = namespace.get(str(request.get("name", "")))
    if op == "describe":
        present = str(request.get("name", "")) in namespace
        if not present or not callable(function):
            return {"present": present, "callable": False, "value": wire.describe(function)}
        import inspect

        try:
            parameters = [
                [p.name, int(p.kind), p.default is not p.empty] for p in inspect.signature(function).parameters.values()
            ]
        except (TypeError, ValueError):
            parameters = None
        return {"present": True, "callable": True, "parameters": parameters}
    if op != "call":
        raise wire.WireError(f"unknown request {op!r}")
    args = arguments(request.get("args", []), cache)
    seconds = float(request.get("seconds", 5.0))
    grad = request.get("grad")
    if grad is not None:
        return _gradients(function, args, grad, seconds)
    before = _snapshot(args)
    try:
        with _alarm(seconds):
            value = function(*args)
    except BaseException as exc:
        return _raised(exc)
    return {"kind": "value", "value": wire.describe(value), "changed": _changed(before, args)}


def _gradients(function, args: tuple, grad: dict, seconds: float) -> dict:
    wanted = [i for i in grad.get("wanted", []) if isinstance(i, int) and 0 <= i < len(args)]
    cotangents = list(grad.get("cotangents", []))
    with torch.enable_grad():
        leaves = [args[i] for i in wanted]
        try:
            with _alarm(seconds):
                value = function(*args)
        except TimeLimitExceeded as exc:
            return _raised(exc)
        except BaseException as exc:  # it ran on the same inputs without gradients: autograd is what it fails on
            return {"kind": "raised", "text": wire._text(f"{type(exc).__name__}: {exc}", 300)}
        got = _outputs(value)
        if got is None or len(got) != len(cotangents):
            return {"kind": "error", "text": "the function returned something else than on the same inputs before"}
        cut = [index for index, out in enumerate(got) if not out.requires_grad]
        if cut:
            return {"kind": "cut", "items": cut}
        try:
            loss = sum((out.double() * c).sum() for out, c in zip(got, cotangents))
            grads = torch.autograd.grad(loss, leaves, allow_unused=True)
        except BaseException as exc:
            return {"kind": "error", "text": wire._text(f"{type(exc).__name__}: {exc}", 300)}
    return {"kind": "grads", "grads": [None if g is None else g.detach().double() for g in grads]}


def main(argv: list[str]) -> int:
    path, cell_seconds = argv[0], float(argv[1])
    requests = os.fdopen(os.dup(0), "rb", buffering=0)
    replies = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the notebook's prints and input() go nowhere
        os.dup2(devnull, fd)
    os.environ.setdefault("MPLBACKEND", "Agg")
    import shutil

    for module in Path(path).parent.glob("*.py"):  # a module beside the notebook imports as it did in Jupyter
        if not Path(module.name).exists():
            shutil.copyfile(module, module.name)
    sys.path.insert(0, os.getcwd())

    def send(message: dict) -> None:
        view = memoryview(wire.pack(message))
        while view:
            view = view[os.write(replies, view) :]

    try:
        sources = read_cells(path)
    except Exception as exc:
        send({"op": "ready", "unreadable": wire._text(f"{type(exc).__name__}: {exc}", 200)})
        return 0
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    with contextlib.suppress(ImportError):  # course_lib's version of a graded function is the learner's own
        import course_lib._graded as graded

        graded.NAMESPACE = shell.user_ns
    try:
        report = run_cells(shell, sources, cell_seconds)
    except BaseException as exc:
        report = {"cells": 0, "cell_errors": [f"the cells could not run: {type(exc).__name__}"], "stopped_cell": None}
    send({"op": "ready", **report})
    namespace, cache = shell.user_ns, {}
    while True:
        try:
            request = wire.read_frame(lambda n: _read(requests, n))
        except wire.WireError:
            return 1
        if request is None or request.get("op") == "stop":
            return 0
        try:
            reply = answer(request, namespace, cache)
        except BaseException as exc:  # a request the notebook's objects broke: say so, keep serving
            reply = {"kind": "broken", "text": wire._text(f"{type(exc).__name__}: {exc}", 300)}
        reply["id"] = request.get("id")
        send(reply)


def _read(stream, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = stream.read(left)
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


if __name__ == "__main__":
    code = main(sys.argv[1:])
    os._exit(code)  # no atexit handlers, no waiting for the notebook's threads
