"""No exercise can be passed by pasting a lesson, and Part 2's typical mistakes are named (issue 42).

- Every function that a code cell of a lesson (01-06, 08-11) defines under the name of a graded function (or that
  name with ``my_``, and without ``_filter``) is pasted into the exercise as it stands, with the lesson's imports, and
  graded: it must fail. The lessons show another form (one token's vector, one row, one head on one sequence), so the
  exercise asks for more than a copy.
- The mistakes the issue lists get a message that names them: each is written below as a learner would write it
  (not taken from the catalogue), graded, and the message must say what is wrong.
"""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from course_lib._syllabus import COURSE
from course_lib.checks import EXERCISES
from course_lib.checks.core import run_check

ROOT = Path(__file__).resolve().parents[1]
LESSONS = {
    **{row.number: f"notebooks/{row.file}" for row in COURSE if row.number in ("01", "02", "03", "04", "05", "06")},
    "08": "notebooks/08_language_model.ipynb",
    "09": "notebooks/09_induction_heads.ipynb",
    "10": "notebooks/10_modern_block.ipynb",
    "11": "notebooks/11_text_to_tokens.ipynb",
}
# a lesson function that writes a graded idea under another name (11 counts and merges pairs of one list of ids; the
# exercise asks for both on a text split into words)
ALIASES = {"count_pairs": "pair_counts", "merge": "merge_pair"}
GRADED = {spec.function: spec for exercise in EXERCISES.values() for spec in exercise.specs}


def _lesson_functions(path: str) -> dict[str, object]:
    """The functions the lesson's code cells define, each compiled with every import the lesson makes."""
    cells = json.loads((ROOT / path).read_text(encoding="utf-8"))["cells"]
    sources = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]
    no_magics = [
        "\n".join(line for line in source.split("\n") if not line.startswith(("%", "!"))) for source in sources
    ]
    trees = [ast.parse(source) for source in no_magics]
    imports = [node for tree in trees for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    defs = [node for tree in trees for node in tree.body if isinstance(node, ast.FunctionDef)]
    namespace: dict[str, object] = {"torch": torch, "F": F, "math": math}
    exec(compile(ast.Module(body=imports, type_ignores=[]), path, "exec"), namespace)  # noqa: S102 - our own notebooks
    found = {}
    for node in defs:
        local = dict(namespace)
        exec(compile(ast.Module(body=[node], type_ignores=[]), path, "exec"), local)  # noqa: S102
        found[node.name] = local[node.name]
    return found


def _pasteable():
    for number, path in LESSONS.items():
        for name, function in _lesson_functions(path).items():
            names = (name, name.removeprefix("my_"), name.removeprefix("my_") + "_filter", ALIASES.get(name, name))
            for graded in names:  # my_top_k, count_pairs
                if graded in GRADED:
                    yield pytest.param(GRADED[graded], function, id=f"{number}:{name}")
                    break


PASTEABLE = list(_pasteable())


def test_the_lessons_do_show_the_graded_ideas():
    """The paste test below is not empty: 08 writes top-k and top-p, 09 both detectors, in their own form."""
    assert {param.id for param in PASTEABLE} >= {
        "08:my_top_k",
        "08:my_top_p",
        "09:previous_token_score",
        "09:prefix_matching_score",
        "05:layer_norm",
        "11:count_pairs",
        "11:merge",
    }


@pytest.mark.parametrize(("spec", "function"), PASTEABLE)
def test_a_lesson_function_pasted_into_the_exercise_fails(spec, function):
    result = run_check(spec, function, verbose=False)
    assert not result.passed, f"{spec.function} can be copied from a lesson cell and passes {spec.name}"


# -- wrong solutions, written as a learner would ---------------------------------------------------------------
def top_p_without_scatter(logits, p):
    probs, order = torch.softmax(logits, dim=-1).sort(dim=-1, descending=True)
    keep = probs.cumsum(dim=-1) - probs < p  # decided in sorted order ...
    return logits.masked_fill(~keep, float("-inf"))  # ... and applied to the tokens in vocabulary order


def _angles(x):
    theta = 10000.0 ** (-torch.arange(0, x.shape[-1], 2, dtype=torch.float32) / x.shape[-1])
    return torch.arange(x.shape[-2], dtype=torch.float32)[:, None] * theta


def rope_turning_the_wrong_way(x):
    cos, sin = torch.cos(_angles(x)), torch.sin(_angles(x))
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos + b * sin, -a * sin + b * cos], dim=-1).flatten(-2)


def _rope(x):
    cos, sin = torch.cos(_angles(x)), torch.sin(_angles(x))
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)


def rope_attention_softmax_over_queries(queries, keys, values):
    scores = _rope(queries) @ _rope(keys).transpose(1, 2) / math.sqrt(queries.shape[-1])
    return torch.softmax(scores, dim=1) @ values  # dim=1 is the queries' axis of (batch, seq_q, seq_k)


def step_inverted_factor(running_max, running_sum, output, scores, values):
    new_max = torch.maximum(running_max, scores.max(dim=-1).values)
    factor = torch.exp(new_max - running_max)
    w = torch.exp(scores - new_max.unsqueeze(-1))
    return new_max, factor * running_sum + w.sum(-1), factor.unsqueeze(-1) * output + w @ values


def step_weights_against_the_old_max(running_max, running_sum, output, scores, values):
    new_max = torch.maximum(running_max, scores.max(dim=-1).values)
    factor = torch.exp(running_max - new_max)
    w = torch.exp(scores - running_max.unsqueeze(-1))
    return new_max, factor * running_sum + w.sum(-1), factor.unsqueeze(-1) * output + w @ values


def step_normalised_each_time(running_max, running_sum, output, scores, values):
    new_max = torch.maximum(running_max, scores.max(dim=-1).values)
    factor = torch.exp(running_max - new_max)
    w = torch.exp(scores - new_max.unsqueeze(-1))
    new_sum = factor * running_sum + w.sum(-1)
    return new_max, new_sum, (factor.unsqueeze(-1) * output + w @ values) / new_sum.unsqueeze(-1)


def step_running_average(running_max, running_sum, output, scores, values):
    new_max = torch.maximum(running_max, scores.max(dim=-1).values)
    factor = torch.exp(running_max - new_max)
    w = torch.exp(scores - new_max.unsqueeze(-1))
    new_sum = factor * running_sum + w.sum(-1)
    average = (factor * running_sum).unsqueeze(-1) * output + w @ values  # output taken as already averaged
    return new_max, new_sum, average / new_sum.unsqueeze(-1)


WRONG = [
    ("top_p_filter", top_p_without_scatter, "not_scattered_back", ("sorted order", "vocabulary order")),
    ("apply_rope", rope_turning_the_wrong_way, "negative_angle", ("wrong way",)),
    ("rope_attention", rope_attention_softmax_over_queries, "softmax_over_queries", ("queries' axis",)),
    ("online_softmax_step", step_inverted_factor, "inverted_factor", ("e^(m_new − m)", "instead of e^(m − m_new)")),
    ("online_softmax_step", step_weights_against_the_old_max, "weights_old_max", ("old maximum",)),
    ("online_softmax_step", step_normalised_each_time, "output_normalised", ("divided by the running sum",)),
    ("online_softmax_step", step_running_average, "output_kept_normalised", ("running average",)),
]


@pytest.mark.parametrize(("function", "wrong", "key", "words"), WRONG, ids=[row[2] for row in WRONG])
def test_the_mistake_is_named(function, wrong, key, words):
    result = run_check(GRADED[function], wrong, verbose=False)
    assert not result.passed
    assert result.mistake == key, f"{wrong.__name__}: recognised as {result.mistake!r}, not {key!r}:\n{result.message}"
    assert "It looks like" in result.message and all(word in result.message for word in words), result.message
