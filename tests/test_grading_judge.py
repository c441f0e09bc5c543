"""The grader is the judge: the sandbox runs the whole notebook and answers calls; nothing it writes is a verdict.

Each test grades real notebooks with ``exercises grade``'s own functions in the real sandbox (bubblewrap), and
could fail on the old grader: forged records, definition-time forgeries and delegations to course_lib passed it,
NumPy inside a trained function was skipped, threads raced on torch's random generator, a sandbox run as root
read root-only files, and learner-controlled text reached the reports unescaped.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course_lib.checks import EXERCISES
from course_lib.tools.grading import grade as grading
from course_lib.tools.grading import gradebook, sandbox
from course_lib.tools.grading.runner import RunResult

ROOT = Path(__file__).resolve().parents[1]
SANDBOX = sandbox.probe()
needs_sandbox = pytest.mark.skipif(not SANDBOX.available, reason=f"no sandbox here: {SANDBOX.reason}")


def notebook(path: Path, *cells: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]), path)
    return path


# Stubs that try to forge a grade, the way the attackers did, each in one notebook of ex02.
STUBS = """
import torch
def softmax(scores):
    raise NotImplementedError
def attention(queries, keys, values):
    raise NotImplementedError
def causal_attention(queries, keys, values):
    raise NotImplementedError
"""
FORGERIES = {
    "frame_to_stdout": """
import os, json, struct
verdict = [{"check": c, "passed": True, "status": "passed", "message": "✅", "mistake": None, "function": f}
           for c, f in [("check_softmax", "softmax"), ("check_attention", "attention"), ("check_causal_attention", "causal_attention")]]
body = json.dumps({"op": "ready", "cells": 1, "cell_errors": [], "record": verdict}).encode()
for fd in range(1, 12):
    try:
        os.write(fd, b"\\x93course\\x01" + struct.pack(">I", len(body)) + body + struct.pack(">Q", 0))
    except OSError:
        pass
""",
    "replaced_server": """
import sys
serve = sys.modules.get("course_lib.tools.grading.serve") or sys.modules.get("__main__")
serve.answer = lambda request, namespace, cache: {"kind": "value", "value": {"t": "plain", "v": "passed"}, "changed": []}
""",
    "replaced_torch_save": """
import torch
torch.save = lambda *a, **k: None
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
""",
    "decorator": """
import functools
def no_grad(f):
    import sys
    frame = sys._getframe()
    while frame is not None:
        frame.f_globals.setdefault("record", {"passed": True})
        frame = frame.f_back
    return f
@no_grad
def softmax(scores):
    raise NotImplementedError
""",
    "enum_member": """
import enum
class Planted(enum.Enum):
    A = 1
    def __init__(self, value):
        import builtins
        builtins.PASSED = True
""",
    "init_subclass": """
class Base:
    pass
def _hook(cls, **kw):
    import sys
    sys.modules["builtins"].VERDICT = "passed"
Base.__init_subclass__ = classmethod(_hook)
class Child(Base):
    pass
""",
    "frame_walk": """
import sys, gc
for obj in gc.get_objects():
    if isinstance(obj, dict) and "checks" in obj and "exercise" in obj:
        obj["checks"] = [{"check": "check_softmax", "passed": True}]
frame = sys._getframe()
while frame.f_back is not None:
    frame = frame.f_back
frame.f_globals["record"] = {"checks": [{"check": "check_softmax", "passed": True}]}
""",
}

# The graded functions, each handing its work to course_lib's own implementation (the delegations; those of
# ex01, ex03's multi_head_attention, ex05 and ex06 pass the check cell, which refuses only a spec's `own`).
DELEGATIONS = {
    "ex01_rnn": """
import torch
from course_lib.recurrent import VanillaRNN
def _run(x, h0, w_xh, w_hh, b):
    model = VanillaRNN(w_xh.shape[1], w_xh.shape[0])
    params = {"w_xh.weight": w_xh, "w_xh.bias": b, "w_hh.weight": w_hh, "w_hh.bias": torch.zeros_like(b)}
    return torch.func.functional_call(model, params, (x, h0))
def rnn_step(x_t, h_prev, w_xh, w_hh, b):
    return _run(x_t.unsqueeze(1), h_prev, w_xh, w_hh, b)[1]
def rnn_forward(x, h0, w_xh, w_hh, b):
    return _run(x, h0, w_xh, w_hh, b)
""",
    "ex03_multi_head": """
import torch
from course_lib.multihead import split_heads as _split, merge_heads as _merge, MultiHeadAttention
def split_heads(x, num_heads):
    return _split(x, num_heads)
def merge_heads(x):
    return _merge(x)
def multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads):
    module = MultiHeadAttention(x.shape[-1], num_heads, bias=False)
    params = {"w_q.weight": w_q.T, "w_k.weight": w_k.T, "w_v.weight": w_v.T, "w_o.weight": w_o.T}
    return torch.func.functional_call(module, params, (x,))[0]
""",
    "ex04_positional_encoding": """
from course_lib.positions import sinusoidal_encoding as _encoding
def sinusoidal_encoding(seq_len, d_model):
    return _encoding(seq_len, d_model)
""",
    "ex05_layernorm_residual": """
import torch
from course_lib.blocks import LayerNorm, Residual
def layer_norm(x, gamma, beta, eps=1e-5):
    module = LayerNorm(x.shape[-1], eps)
    return torch.func.functional_call(module, {"gamma": gamma, "beta": beta}, (x,))
def sublayer_connection(x, sublayer, norm, norm_first):
    block = Residual(x.shape[-1], norm_first)
    block._modules["norm"] = norm
    return block(x, sublayer)
""",
    "ex06_encoder_block": """
import torch
from course_lib.blocks import FeedForward
def feed_forward(x, w_1, b_1, w_2, b_2):
    module = FeedForward(w_1.shape[0], w_1.shape[1])
    params = {"linear1.weight": w_1.T, "linear1.bias": b_1, "linear2.weight": w_2.T, "linear2.bias": b_2}
    return torch.func.functional_call(module, params, (x,))
""",
    "ex02_attention": """
from course_lib.attention import softmax as _softmax, scaled_dot_product_attention as _sdpa, causal_mask
def softmax(scores):
    return _softmax(scores)
def attention(queries, keys, values):
    return _sdpa(queries, keys, values)[0]
def causal_attention(queries, keys, values):
    return _sdpa(queries, keys, values, mask=causal_mask(queries.shape[-2]))[0]
""",
    "ex08_language_model": """
from course_lib.decoder import next_token_loss as _loss
from course_lib.sampling import top_k_filter as _k, top_p_filter as _p
def next_token_loss(logits, tokens):
    return _loss(logits, tokens)
def top_k_filter(logits, k):
    return _k(logits, k)
def top_p_filter(logits, p):
    return _p(logits, p)
def kv_cache_step(lm, cache_keys, cache_values, new_tokens):
    import torch
    tokens = new_tokens
    logits = lm.model(tokens)
    return logits, cache_keys, cache_values
""",
    "ex09_induction_heads": """
import torch
from course_lib.lab.tasks.repeated import repeated_tokens
from course_lib.attention_only import previous_token_score as _prev, prefix_matching_score as _prefix, AttentionOnlyLM, per_token_loss
def repeated_batch(batch_size, half, vocab_size, seed):
    return repeated_tokens(batch_size, half, vocab_size, torch.Generator().manual_seed(seed))
def previous_token_score(weights):
    return _prev(weights)
def prefix_matching_score(weights, half):
    return _prefix(weights, half)
def ablated_repeat_loss(model, tokens, layer, head):
    logits, _ = AttentionOnlyLM.forward(model, tokens, ablate={(layer, head)})
    return per_token_loss(logits, tokens)[:, tokens.shape[1] // 2:].mean()
""",
    "ex10_rope_online_softmax": """
import torch, math
from course_lib.rotary import apply_rotary
from course_lib.tiled_attention import online_softmax_step as _step
def apply_rope(x):
    return apply_rotary(x, torch.arange(x.shape[-2]))
def rope_attention(queries, keys, values):
    q, k = apply_rope(queries), apply_rope(keys)
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), -1) @ values
def online_softmax_step(running_max, running_sum, output, scores, values):
    return _step(running_max, running_sum, output, scores, values)
""",
    "ex11_tokenizer": """
from course_lib.tokenizer import pair_counts_in_chunks as _counts, merge_pair as _merge
from course_lib.tokenizer import encode as _encode, decode as _decode
def pair_counts(chunks):
    return dict(_counts(chunks))
def merge_pair(chunks, pair, new_id):
    return [_merge(chunk, pair, new_id) for chunk in chunks]
def encode(text, merges):
    return _encode(text, merges)
def decode(ids, merges):
    return _decode(ids, merges)
""",
}

NUMPY_SOFTMAX = """
import numpy as np, torch
def softmax(scores):
    a = scores.numpy()
    e = np.exp(a - a.max(-1, keepdims=True))
    return torch.from_numpy(e / e.sum(-1, keepdims=True))
"""


@pytest.fixture(scope="module")
def class_run(tmp_path_factory):
    """One class: the forgeries, the delegations and a NumPy softmax, graded together with --jobs 2."""
    if not SANDBOX.available:
        pytest.skip(f"no sandbox here: {SANDBOX.reason}")
    folder = tmp_path_factory.mktemp("submissions")
    for name, forgery in FORGERIES.items():
        notebook(folder / f"forge_{name}" / "ex02_attention.ipynb", STUBS, forgery)
    for exercise, code in DELEGATIONS.items():
        notebook(folder / "delegator" / f"{exercise}.ipynb", code)
    notebook(folder / "numpy" / "ex02_attention.ipynb", STUBS, NUMPY_SOFTMAX)
    out = tmp_path_factory.mktemp("out")
    report = grading.grade(folder, out, timeout=30, jobs=2, echo=None)
    return report, out


@needs_sandbox
@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_a_forged_grade_gets_no_point(class_run, forgery):
    report, _ = class_run
    graded = report.cells[(f"forge_{forgery}", "ex02_attention")]
    assert graded.checks_passed == 0, [c["message"] for c in graded.checks]


@needs_sandbox
@pytest.mark.parametrize("exercise", sorted(DELEGATIONS))
def test_a_function_delegating_to_course_lib_gets_no_point(class_run, exercise):
    report, _ = class_run
    graded = report.cells[("delegator", exercise)]
    assert graded.checks_passed == 0, [c["message"][:300] for c in graded.checks if c["passed"]]
    assert any("is not available while your notebook is graded" in c["message"] for c in graded.checks), [
        c["message"][:300] for c in graded.checks
    ]


@needs_sandbox
def test_a_function_through_numpy_fails_on_its_gradients_instead_of_being_skipped(class_run):
    report, _ = class_run
    (softmax,) = [c for c in report.cells[("numpy", "ex02_attention")].checks if c["check"] == "check_softmax"]
    assert not softmax["passed"] and softmax["mistake"] == "no_gradient", softmax["message"]


@needs_sandbox
def test_five_solutions_graded_with_four_jobs_all_pass(tmp_path):
    """Five learners hand in the solution of ex09 (ablated_repeat_loss builds reference models with torch's random
    generator, which threads grading at once shared: 3 of 161 failed): every check of every notebook passes."""
    for learner in range(5):
        target = tmp_path / "class" / f"learner{learner}" / "ex09_induction_heads.ipynb"
        target.parent.mkdir(parents=True)
        shutil.copyfile(ROOT / "exercises" / "solutions" / "ex09_induction_heads.ipynb", target)
    report = grading.grade(tmp_path / "class", tmp_path / "out", timeout=60, jobs=4, echo=None)
    graded = [g for g in report.cells.values() if g is not None]
    failed = [(g.path, c["message"][:300]) for g in graded for c in g.checks if not c["passed"]]
    assert len(graded) == 5 and not failed, failed


@needs_sandbox
@pytest.mark.skipif(os.geteuid() != 0, reason="the canary needs a grader run as root")
def test_a_root_only_file_is_unreadable_from_a_sandbox_run_by_root(tmp_path):
    canary = Path("/etc/course-grading-canary")
    canary.write_text("root's secret")
    os.chmod(canary, 0o600)
    try:
        root = sandbox.course_copy("ex02_attention", tmp_path / "copy")
        inside = tmp_path / "in"
        inside.mkdir()
        os.chmod(tmp_path, 0o755)
        os.chmod(inside, 0o755)
        probe = (
            "import os\n"
            f"try:\n    print(open({str(canary)!r}).read())\nexcept OSError as exc:\n    print('refused', exc.errno)\n"
            "print('uid', os.getuid())\n"
        )
        command = sandbox.bwrap_command([sys.executable, "-c", probe], inside, [], course_root=root)
        run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    finally:
        canary.unlink()
    assert "root's secret" not in run.stdout and "refused 13" in run.stdout, (run.stdout, run.stderr[-500:])
    assert "uid 65534" in run.stdout


def test_the_sandbox_copy_of_course_lib_lacks_what_the_exercise_grades(tmp_path):
    root = sandbox.course_copy("ex10_rope_online_softmax", tmp_path)
    probe = (
        "from course_lib.rotary import apply_rotary\nimport torch\n"
        "try:\n    apply_rotary(torch.zeros(1, 2, 4), torch.arange(2))\nexcept RuntimeError as exc:\n    print(exc)\n"
        "from course_lib.checks import short_training, check_rope\nprint(short_training(3).shape)\n"
        "import course_lib.checks.modern as m\ntry:\n    m.reference_rope\nexcept ImportError as exc:\n    print('no', exc)\n"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(root)}, cwd=tmp_path)  # fmt: skip
    assert "course_lib.rotary.apply_rotary is not available while your notebook is graded" in run.stdout, run.stderr
    assert "torch.Size([20])" in run.stdout and "no course_lib.checks." in run.stdout, run.stdout + run.stderr


def test_the_sandbox_copy_of_course_lib_lacks_the_tokenizer_that_ex11_grades(tmp_path):
    root = sandbox.course_copy("ex11_tokenizer", tmp_path)
    probe = (
        "from course_lib import tokenizer\n"
        "for call in (lambda: tokenizer.pair_counts([1, 2]), lambda: tokenizer.merge_pair([1, 2], (1, 2), 256),\n"
        "             lambda: tokenizer.pair_counts_in_chunks([[1, 2]]),\n"
        "             lambda: tokenizer.merge_pair_in_chunks([[1, 2]], (1, 2), 256),\n"
        "             lambda: tokenizer.encode('ab' * 40, {(97, 98): 256}), lambda: tokenizer.decode([97], {})):\n"
        "    try:\n        print('ran', call())\n    except RuntimeError as exc:\n        print(exc)\n"
        "print(tokenizer.train_bpe('abab', 257), tokenizer.vocabulary({(97, 98): 256})[256])\n"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(root)}, cwd=tmp_path)  # fmt: skip
    for name in ("pair_counts", "merge_pair", "pair_counts_in_chunks", "merge_pair_in_chunks", "encode", "decode"):
        assert f"course_lib.tokenizer.{name} is not available while your notebook is graded" in run.stdout, run.stderr
    assert "write it with lists, dicts and bytes" in run.stdout and "ran" not in run.stdout, run.stdout
    assert "{(97, 98): 256} b'ab'" in run.stdout, run.stdout + run.stderr  # the notebook's train_bpe still runs


def test_plain_data_crosses_the_wire_whole_and_a_forged_one_is_refused():
    """What ex11's functions return (long lists of ids, chunks, dicts of pair counts, bytes, long text) comes back
    from the sandbox's description as the same plain data; a reply that is not what ``wire.describe`` writes is
    refused."""
    import collections
    import io

    import torch

    from course_lib.tools.grading import remote, wire

    def through(value):
        frame = io.BytesIO(wire.pack({"value": wire.describe(value)}))
        return remote.decode(wire.read_frame(frame.read)["value"])

    ids = list(range(300)) * 3
    counts = collections.Counter(zip(ids, ids[1:]))
    text = "naïve 東京 🙂 " * 100
    assert through(ids) == ids and type(through(ids)) is list
    assert through(tuple(ids[:5])) == tuple(ids[:5])
    assert through(counts) == dict(counts) and type(through(counts)) is dict
    assert through(text) == text and through(b"\xc3\xa9") == b"\xc3\xa9"
    assert through([True, 2]) == [True, 2] and through([]) == []  # not ids: item by item, as before
    chunks = [[104, 105], [], (32, 104, 105), [300]] * 10  # a text split into words: more chunks than MAX_ITEMS
    assert through(chunks) == chunks and through(tuple(chunks)) == tuple(chunks) and through([[]]) == [[]]
    assert isinstance(through({i: i for i in range(wire.MAX_MAPPING + 1)}), remote._Opaque)
    with pytest.raises(remote.RecordError):
        remote.decode(
            {"t": "mapping", "items": [[{"t": "mapping", "items": []}, {"t": "plain", "v": 1}]]}
        )  # a dict as key
    with pytest.raises(remote.RecordError):
        remote.decode({"t": "ints", "kind": "list", "v": torch.zeros(3)})  # whole numbers only
    with pytest.raises(remote.RecordError):
        remote.decode({"t": "text", "v": "x" * (wire.MAX_STRING + 1)})
    record = {"t": "chunks", "kind": "list", "v": torch.arange(5), "lengths": torch.tensor([3, 2]), "kinds": "lt"}
    assert remote.decode(record) == [[0, 1, 2], (3, 4)]
    for forged in ({"lengths": torch.tensor([2, 2])}, {"kinds": "lx"}, {"v": torch.arange(5.0)}):
        with pytest.raises(remote.RecordError):  # lengths that do not add up, an unknown chunk kind, float ids
            remote.decode({**record, **forged})


# A learner's ex11 as they might get it wrong: every graded function with one classic mistake (pair_counts: the
# lesson's count_pairs on the chunks joined first).
WRONG_TOKENIZER = """
def count_pairs(ids):
    counts = {}
    for t in range(len(ids) - 1):
        pair = (ids[t], ids[t + 1])
        counts[pair] = counts.get(pair, 0) + 1
    return counts
def pair_counts(chunks):
    ids = []
    for chunk in chunks:
        ids += chunk
    return count_pairs(ids)
def merge_pair(chunks, pair, new_id):
    result = []
    for ids in chunks:
        out = []
        for t in range(len(ids)):
            if t + 1 < len(ids) and (ids[t], ids[t + 1]) == pair:
                out.append(new_id)
            elif t > 0 and (ids[t - 1], ids[t]) == pair:
                continue
            else:
                out.append(ids[t])
        result.append(out)
    return result
def most_frequent(counts):
    return max(counts, key=counts.get)
def encode(text, merges):
    from collections import Counter
    ids = list(text.encode("utf-8"))
    while True:
        counts = Counter(p for p in zip(ids, ids[1:]) if p in merges)
        if not counts:
            return ids
        pair = max(counts, key=counts.get)
        out, t = [], 0
        while t < len(ids):
            if t + 1 < len(ids) and (ids[t], ids[t + 1]) == pair:
                out.append(merges[pair])
                t += 2
            else:
                out.append(ids[t])
                t += 1
        ids = out
def decode(ids, merges):
    vocab = {i: bytes([i]) for i in range(256)}
    for (a, b), new_id in merges.items():
        vocab[new_id] = vocab[a] + vocab[b]
    return "".join(vocab[i].decode("utf-8") for i in ids)
"""

# Notebook 11's own count_pairs and merge, pasted into the exercise as they are (renamed): they take one list of ids,
# the exercise gives chunks.
LESSON_TOKENIZER = """
def pair_counts(ids):
    counts = {}
    for t in range(len(ids) - 1):
        pair = (ids[t], ids[t + 1])
        counts[pair] = counts.get(pair, 0) + 1
    return counts
def merge_pair(ids, pair, new_id):
    out, t = [], 0
    while t < len(ids):
        if t + 1 < len(ids) and (ids[t], ids[t + 1]) == pair:
            out.append(new_id)
            t += 2
        else:
            out.append(ids[t])
            t += 1
    return out
"""


@needs_sandbox
def test_the_tokenizer_exercise_is_graded_across_the_sandbox_wall(tmp_path):
    """ex11's functions take and return plain data (chunks, lists of ids, dicts of counts, merges, text): the solution
    notebook passes the real grader, and each classic mistake fails with its own name, the decode that raises on a
    split character included (its exception comes back from the sandbox and is read with the check's inputs), and so
    do notebook 11's own count_pairs and merge pasted as they are."""
    folder = tmp_path / "class"
    (folder / "solution").mkdir(parents=True)
    shutil.copyfile(
        ROOT / "exercises" / "solutions" / "ex11_tokenizer.ipynb", folder / "solution" / "ex11_tokenizer.ipynb"
    )
    notebook(folder / "wrong" / "ex11_tokenizer.ipynb", WRONG_TOKENIZER)
    notebook(folder / "lesson" / "ex11_tokenizer.ipynb", LESSON_TOKENIZER)
    report = grading.grade(folder, tmp_path / "out", timeout=60, jobs=1, echo=None)
    solution = report.cells[("solution", "ex11_tokenizer")]
    assert solution.outcome == "pass" and not solution.cell_errors, solution.cell_errors
    assert solution.checks_passed == 5, [c["message"][:300] for c in solution.checks if not c["passed"]]
    wrong = {c["check"]: c for c in report.cells[("wrong", "ex11_tokenizer")].checks}
    expected = {
        "check_pair_counts": "counted_across_chunks",
        "check_merge_pair": "overlaps_merged",
        "check_most_frequent": "ties_to_first_seen",
        "check_bpe_encode": "by_frequency",
        "check_bpe_decode": "token_by_token",
    }
    assert {check: c["mistake"] for check, c in wrong.items()} == expected, [c["message"][:300] for c in wrong.values()]
    assert not any(c["passed"] for c in wrong.values())
    lesson = {c["check"]: c for c in report.cells[("lesson", "ex11_tokenizer")].checks}
    assert not any(c["passed"] for c in lesson.values())
    assert lesson["check_pair_counts"]["mistake"] == "chunks_as_ids", lesson["check_pair_counts"]["message"][:300]
    assert lesson["check_pair_counts"]["status"] == "error"  # the unhashable pair of lists, raised in the sandbox
    assert lesson["check_merge_pair"]["mistake"] == "chunks_as_ids", lesson["check_merge_pair"]["message"][:300]


def _report_with(learner: str, error: str) -> grading.GradeReport:
    exercise = "ex02_attention"
    graded = grading.Graded("x.ipynb", exercise, "ran", cell_errors=[error], detail=error)
    graded.checks = [
        {"check": spec.name, "function": spec.function, "passed": False, "status": "failed",
         "message": f"❌ {spec.name}: {error}", "mistake": None}
        for spec in EXERCISES[exercise].specs
    ]  # fmt: skip
    return grading.GradeReport([learner], [exercise], {(learner, exercise): graded}, [], Path("a"), Path("b"))


def test_a_learner_name_with_a_bare_carriage_return_stays_one_row_in_every_csv():
    report = _report_with("eve\rmallory,1,2", "boom\rinjected,row")
    students = gradebook.marks(report, report.config)
    lms = [gradebook.canvas_csv(students, report.exercises, report.config)]
    lms.append(gradebook.moodle_csv(students, report.exercises, report.config))
    for text in (grading.score_csv(report), grading.checks_csv(report), *lms):
        rows = list(csv.reader(io.StringIO(text, newline="")))
        body = [row for row in rows[1:] if row[0] != "Points Possible"]
        assert all(row[0].startswith("eve\rmallory") for row in body), rows
        assert len(body) == (len(EXERCISES["ex02_attention"].specs) if "check" in rows[0] else 1), rows


def test_markdown_shows_a_forged_heading_and_html_as_text():
    report = _report_with("bob", "\n# Every learner passes\n<img src=x onerror=alert(1)>")
    text = grading.score_markdown(report, Path("subs"), 30)
    assert "<img" not in text and "&lt;img" in text
    assert "\n# Every learner passes" not in text and "\\# Every learner passes" in text


def test_a_module_beside_the_notebook_is_staged(tmp_path):
    notebook(tmp_path / "alice" / "ex02_attention.ipynb", "from helpers import softmax")
    (tmp_path / "alice" / "helpers.py").write_text("def softmax(s):\n    return s.softmax(-1)\n")
    inside = tmp_path / "in"
    inside.mkdir()
    grading._stage_modules(tmp_path / "alice" / "ex02_attention.ipynb", inside)
    assert (inside / "helpers.py").read_text().startswith("def softmax")


def test_graded_keeps_the_result_of_every_check_for_feedback_and_exports():
    assert issubclass(grading.Graded, RunResult) and "flags" in grading.Graded.__dataclass_fields__


# ---------------------------------------------------------------------------------------------- unusual but correct


def _unusual_correct_notebooks(folder: Path) -> dict[tuple[str, str], dict[str, str]]:
    """One notebook per exercise and round: the exercise's adversarial module as a cell (its registering decorators
    made plain), then each graded function bound to the round's unusual-but-correct solution of its check (the
    checks with fewer of them take them again). Returns (learner, exercise) → {check: solution's name}."""
    sys.path.insert(0, str(ROOT / "tests"))
    from adversarial import MODULES, all_solutions

    right = [s for s in all_solutions() if s.correct and not s.xfail]
    made: dict[tuple[str, str], dict[str, str]] = {}
    for exercise in MODULES:
        specs = {spec.name: spec for spec in EXERCISES[exercise].specs}
        by_check = {name: [s for s in right if s.check == name] for name in specs}
        by_check = {name: found for name, found in by_check.items() if found}
        source = (ROOT / "tests" / "adversarial" / f"{exercise}.py").read_text(encoding="utf-8")
        source = source.replace(
            "from . import right, wrong", "def right(*a, **k):\n    return lambda f: f\nwrong = right"
        )
        for round_ in range(max(map(len, by_check.values()))):
            chosen = {name: found[round_ % len(found)].function.__name__ for name, found in by_check.items()}
            binding = "\n".join(f"{specs[name].function} = {function}" for name, function in chosen.items())
            learner = f"unusual{round_}"
            notebook(folder / learner / f"{exercise}.ipynb", source, binding)
            made[(learner, exercise)] = chosen
    return made


@needs_sandbox
def test_the_unusual_correct_solutions_pass_the_sandboxed_grader(tmp_path):
    """tests/adversarial's unusual but correct solutions (85, written the way learners write them) pass the real
    grader as they pass the check cells: the sandbox's course package and the calls across the wall fail none."""
    made = _unusual_correct_notebooks(tmp_path / "class")
    report = grading.grade(tmp_path / "class", tmp_path / "out", timeout=60, jobs=2, echo=None)
    failed = []
    for (learner, exercise), chosen in made.items():
        graded = report.cells[(learner, exercise)]
        by_check = {c["check"]: c for c in graded.checks}
        for check, function in chosen.items():
            if not by_check[check]["passed"]:
                failed.append((exercise, function, graded.cell_errors[:2], by_check[check]["message"][:400]))
    assert not failed, failed
    assert sum(map(len, made.values())) >= 80


def test_markdown_shows_an_apostrophe_as_itself():
    """An exception message's quote stays a quote: not an HTML entity whose # a Markdown escape then breaks."""
    text = grading.score_markdown(_report_with("bob", "input tensor's size"), Path("subs"), 30)
    assert "input tensor's size" in text and "&#x27;" not in text and "&\\#x27;" not in text


def test_a_near_verbatim_copy_of_a_reference_is_flagged_for_the_instructor():
    import inspect

    from course_lib import attention

    copied = inspect.getsource(attention.softmax).replace("scores", "s").replace("row_max", "m")
    data = nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(copied)])).encode()
    own = "def softmax(scores):\n    e = (scores - scores.amax(-1, keepdim=True)).exp()\n    return e / e.sum(-1, keepdim=True)\n"
    mine = nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(own)])).encode()
    flags = grading.copied_references(data, "ex02_attention")
    assert flags == ["softmax is a near-verbatim copy of course_lib's course_lib.attention.softmax"], flags
    assert grading.copied_references(mine, "ex02_attention") == []
    report = _report_with("bob", "x")
    report.cells[("bob", "ex02_attention")].flags = flags
    text = grading.score_markdown(report, Path("subs"), 30)
    assert "## For the instructor to look at" in text and "near\\-verbatim copy" in text
