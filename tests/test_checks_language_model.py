"""Exercise 08's checks catch the mistakes issue 14 names, on code mutated from the solution itself.

Each mutation breaks one line of the solution notebook the way a learner might (a filter applied after the
softmax, top-p one token short or long, a position offset that stays at 0, a cache that survives a new prompt, a
causal mask aligned to the wrong corner, a target shift off by one). The check must name exactly that mistake,
and the unmutated solution must pass. Some mutations are then graded through the sandboxed grading path too.
"""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

import nbformat
import pytest
import torch
from optional_tools import require_sandbox

from course_lib.checks import CHECKS, SPECS, language_model
from course_lib.decoder import generate
from course_lib.sampling import greedy
from course_lib.tools.grading import grade as grading

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "exercises" / "solutions" / "ex08_language_model.ipynb"

#: name -> (function, the solution line(s), the broken version, the check, the mistake it must name)
MUTATIONS = {
    "top-k filters probabilities after the softmax": (
        "top_k_filter",
        'return logits.masked_fill(logits < kth_largest, float("-inf"))',
        "return torch.softmax(logits, dim=-1).masked_fill(logits < kth_largest, 0.0)",
        "check_top_k_filter",
        "filtered_after_softmax",
    ),
    "top-p filters probabilities after the softmax": (
        "top_p_filter",
        'return logits.masked_fill(~keep, float("-inf"))',
        "filtered = torch.softmax(logits, dim=-1).masked_fill(~keep, 0.0)\n    return filtered / filtered.sum(-1, keepdim=True)",
        "check_top_p_filter",
        "filtered_after_softmax",
    ),
    "top-p keeps one token too few": (
        "top_p_filter",
        "mass_before = probs.cumsum(dim=-1) - probs",
        "mass_before = probs.cumsum(dim=-1)",
        "check_top_p_filter",
        "one_too_few",
    ),
    "top-p keeps one token too many": (
        "top_p_filter",
        "keep_sorted = mass_before < p",
        "keep_sorted = (mass_before - probs.roll(1, dims=-1)) < p",
        "check_top_p_filter",
        "one_too_many",
    ),
    "top-k keeps one token too many": (
        "top_k_filter",
        "logits.masked_fill(logits < kth_largest,",
        "logits.masked_fill(logits < logits.topk(min(k + 1, logits.shape[-1]), dim=-1).values[..., -1:],",
        "check_top_k_filter",
        "k_off_by_one",
    ),
    "the position offset does not advance": (
        "kv_cache_step",
        "torch.arange(n_cached, n_cached + n_new)",
        "torch.arange(n_new)",
        "check_kv_cache_step",
        "offset_not_advanced",
    ),
    "the causal mask is applied to the cached prefix from the wrong corner": (
        "kv_cache_step",
        "causal_mask(n_cached + n_new)[n_cached:]",
        "causal_mask(n_cached + n_new)[:n_new]",
        "check_kv_cache_step",
        "mask_top_left",
    ),
    "the new tokens may not see the cached prefix": (
        "kv_cache_step",
        "causal_mask(n_cached + n_new)[n_cached:]",
        "torch.cat([torch.zeros(n_new, n_cached, dtype=torch.bool), causal_mask(n_new)], dim=1)",
        "check_kv_cache_step",
        "prefix_blocked",
    ),
    "the target shift is off by one (no shift)": (
        "next_token_loss",
        "targets = tokens[:, 1:]",
        "targets = tokens[:, :-1]",
        "check_next_token_loss",
        "no_shift",
    ),
    "the target shift goes the wrong way": (
        "next_token_loss",
        "predictions = logits[:, :-1]",
        "predictions = logits[:, 1:]",
        "check_next_token_loss",
        "no_shift",
    ),
}

#: A cache that a new prompt does not reset: the learner keeps it in a global (appended to the solution's cells).
NOT_RESET = """
_kept = {}
_right_step = kv_cache_step


def kv_cache_step(lm, cache_keys, cache_values, new_tokens):
    if _kept:  # the cache of the previous call, never emptied
        cache_keys, cache_values = _kept["keys"], _kept["values"]
    logits, keys, values = _right_step(lm, cache_keys, cache_values, new_tokens)
    _kept.update(keys=keys, values=values)
    return logits, keys, values
"""


def _solution_cells() -> list[str]:
    notebook = nbformat.read(SOLUTION, as_version=4)
    return [
        cell.source
        for cell in notebook.cells
        if cell.cell_type == "code" and "nbval-check-output" not in cell.metadata.get("tags", [])
    ]


def _namespace(cells: list[str]) -> dict:
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for source in cells:
            if "google.colab" in source:
                continue
            exec(compile(source, "ex08_language_model.ipynb", "exec"), namespace)
    return namespace


def _mutated_cells(function: str, original: str, broken: str) -> list[str]:
    cells = _solution_cells()
    (index,) = [i for i, source in enumerate(cells) if f"def {function}(" in source]
    assert cells[index].count(original) == 1, f"mutation target not found once in {function}: {original!r}"
    cells[index] = cells[index].replace(original, broken)
    return cells


def flat(result) -> str:
    return " ".join(result.message.split())


@pytest.mark.parametrize(
    "check_name", ["check_next_token_loss", "check_top_k_filter", "check_top_p_filter", "check_kv_cache_step"]
)
def test_the_unmutated_solution_passes(check_name):
    function = _namespace(_solution_cells())[SPECS[check_name].function]
    result = CHECKS[check_name](function, verbose=False)
    assert result.passed, result.message


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_the_check_names_the_mutation(name):
    function, original, broken, check_name, mistake = MUTATIONS[name]
    namespace = _namespace(_mutated_cells(function, original, broken))
    result = CHECKS[check_name](namespace[function], verbose=False)
    assert not result.passed and result.mistake == mistake, f"{name}:\n{result.message}"
    hint = next(m.hint for m in SPECS[check_name].mistakes if m.key == mistake)
    assert " ".join(hint.split()) in flat(result)
    assert original not in result.message, "the hint must not print the solution line"


def test_a_cache_not_reset_between_prompts_is_named():
    namespace = _namespace([*_solution_cells(), NOT_RESET])
    result = CHECKS["check_kv_cache_step"](namespace["kv_cache_step"], verbose=False)
    assert not result.passed and result.mistake == "cache_kept_between_prompts", result.message
    assert "earlier call" in flat(result) and "reset" in flat(result)


def test_the_cached_step_generates_the_same_tokens_as_the_model_without_a_cache():
    """The solution's step, looped greedily, equals course_lib's generate without a cache, on several prompts."""
    kv_cache_step = _namespace(_solution_cells())["kv_cache_step"]
    lm = language_model.seeded_lm()
    for seed in range(5):
        prompt = torch.randint(0, lm.vocab_size, (2, 1 + seed), generator=torch.Generator().manual_seed(seed))
        keys = values = torch.zeros(2, 0, lm.d_model)
        tokens, new = prompt, prompt
        with torch.no_grad():
            for _ in range(6):
                logits, keys, values = kv_cache_step(lm, keys, values, new)
                new = logits[:, -1].argmax(dim=-1, keepdim=True)
                tokens = torch.cat([tokens, new], dim=1)
        expected = generate(lm.model, prompt, 6, sampler=greedy, use_cache=False)
        assert torch.equal(tokens, expected), seed


def test_the_top_p_cases_stay_clear_of_the_boundary():
    """No cumulative mass lies within 1e-3 of p, so one token more or less is a clear difference on every CPU."""
    for case in SPECS["check_top_p_filter"].cases:
        (logits, p), _ = case.build()
        mass = torch.softmax(logits.double(), dim=-1).sort(dim=-1, descending=True).values.cumsum(dim=-1)
        assert float((mass - p).abs().min()) > 1e-3, case.label


def test_the_step_cases_cover_a_prompt_one_token_and_a_chunk():
    shapes = [
        (args[1].shape[1], args[3].shape[1])
        for args, _ in (case.build() for case in SPECS["check_kv_cache_step"].cases)
    ]
    assert (0, 5) in shapes and (5, 1) in shapes and any(cached > 0 and new > 1 for cached, new in shapes)
    assert shapes[-1][0] == 0, "a new prompt comes last, after calls that a kept cache would remember"


# ---------------------------------------------------------------------------------------------- sandboxed grading


def _notebook_from(cells: list[str], path: Path) -> Path:
    notebook = nbformat.read(SOLUTION, as_version=4)
    code = [
        cell
        for cell in notebook.cells
        if cell.cell_type == "code" and "nbval-check-output" not in cell.metadata.get("tags", [])
    ]
    for cell, source in zip(code, cells):
        cell.source = source
    for source in cells[len(code) :]:
        notebook.cells.append(nbformat.v4.new_code_cell(source))
    nbformat.write(notebook, path)
    return path


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is bubblewrap (Linux only)")
def test_graded_in_the_sandbox_the_right_solution_passes_and_the_mutations_are_named(tmp_path):
    require_sandbox()  # skipped without bubblewrap, a failure in CI (tests/optional_tools.py)
    submissions = {
        "right": (_notebook_from(_solution_cells(), tmp_path / "right.ipynb"), None, None),
        "offset": (
            _notebook_from(
                _mutated_cells(*MUTATIONS["the position offset does not advance"][:3]), tmp_path / "o.ipynb"
            ),
            "check_kv_cache_step",
            "offset_not_advanced",
        ),
        "not_reset": (
            _notebook_from([*_solution_cells(), NOT_RESET], tmp_path / "n.ipynb"),
            "check_kv_cache_step",
            "cache_kept_between_prompts",
        ),
        "top_p": (
            _notebook_from(_mutated_cells(*MUTATIONS["top-p keeps one token too few"][:3]), tmp_path / "p.ipynb"),
            "check_top_p_filter",
            "one_too_few",
        ),
    }
    for label, (path, failing, mistake) in submissions.items():
        graded = grading.grade_notebook(path, "ex08_language_model", timeout=90, use_sandbox=True)
        assert graded.sandboxed, label
        results = {entry["check"]: entry for entry in graded.checks}
        assert set(results) == set(SPECS) & {name for name, _ in language_model_checks()}, label
        for check, entry in results.items():
            if check == failing:
                assert not entry["passed"] and entry["mistake"] == mistake, (label, entry["message"])
            else:
                assert entry["passed"], (label, check, entry["message"])


def language_model_checks():
    from course_lib.checks import EXERCISES

    return EXERCISES["ex08_language_model"].checks
