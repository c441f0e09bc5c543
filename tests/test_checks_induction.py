"""Exercise 09's checks: the solution passes, right alternatives pass, and wrong versions fail with true messages.

The wrong versions below are written the way a learner writes them (loops, python floats, a transposed index, the
model's weights zeroed in place), not copied from the catalogue; each lists the mistakes a message may name for it
without being false (None: only the general "what is measurably wrong" message). The catalogue's own buggy
examples are tested as well, and the solution notebook is graded in the bubblewrap sandbox with mutated lines.
"""

from __future__ import annotations

import contextlib
import copy
import io
import math
import sys
from pathlib import Path

import nbformat
import pytest
import torch
import torch.nn.functional as F
from optional_tools import require_sandbox

from course_lib.attention import causal_mask, scaled_dot_product_attention
from course_lib.attention_only import per_token_loss
from course_lib.checks import CHECKS, EXERCISES, SPECS, induction
from course_lib.checks.core import run_check
from course_lib.multihead import merge_heads
from course_lib.tools.grading import grade as grading

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "exercises" / "solutions" / "ex09_induction_heads.ipynb"
SPEC_LIST = (induction.BATCH_SPEC, induction.PREVIOUS_SPEC, induction.PREFIX_SPEC, induction.ABLATION_SPEC)


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
            if "google.colab" not in source:
                exec(compile(source, "ex09_induction_heads.ipynb", "exec"), namespace)
    return namespace


SOLUTION_FUNCTIONS = _namespace(_solution_cells())


def _statements(function: str) -> list[str]:
    """The solution's lines of ``function`` (and the right-hand sides of its assignments), 12+ characters."""
    source = next(s for s in _solution_cells() if f"def {function}(" in s)
    body = source.split("### BEGIN SOLUTION")[1].split("### END SOLUTION")[0]
    found = []
    for line in body.splitlines():
        code = " ".join(line.split("#")[0].split())
        for part in (code, code.split("=", 1)[-1].strip(), code.removeprefix("return ").strip()):
            if len(part) >= 12:
                found.append(part)
    return found


def flat(text: str) -> str:
    return " ".join(text.split())


# ---------------------------------------------------------------------------------------------- the solution


@pytest.mark.parametrize("spec", SPEC_LIST, ids=[s.name for s in SPEC_LIST])
def test_the_solution_notebooks_functions_pass(spec):
    result = run_check(spec, SOLUTION_FUNCTIONS[spec.function], verbose=False)
    assert result.passed and result.status == "passed", result.message


def test_the_exercise_is_registered_with_its_four_checks_in_notebook_order():
    assert EXERCISES["ex09_induction_heads"].checks == (
        ("check_repeated_batch", "repeated_batch"),
        ("check_previous_token_score", "previous_token_score"),
        ("check_prefix_matching_score", "prefix_matching_score"),
        ("check_ablated_repeat_loss", "ablated_repeat_loss"),
    )


def test_the_cases_have_random_sizes():
    """No size is special: across the cases, batch, heads, half and the model's widths take several values."""
    prefix = [case.build()[0] for case in induction.PREFIX_SPEC.cases]
    assert len({tuple(weights.shape) for weights, _ in prefix}) == len(prefix)
    batch = [case.build()[0] for case in induction.BATCH_SPEC.cases]
    assert len({args[:3] for args in batch}) == len(batch)
    models = [case.build()[0][0] for case in induction.ABLATION_SPEC.cases]
    assert len({(m.vocab_size, m.d_model, m.num_heads, m.max_len) for m in models}) >= 3
    assert {args[2] for args in (case.build()[0] for case in induction.ABLATION_SPEC.cases)} == {0, 1}


def test_the_ablation_reference_agrees_with_the_models_own_switch():
    for case in induction.ABLATION_SPEC.cases:
        (model, tokens, layer, head), expected = case.build()
        assert torch.allclose(induction._ablated(model, tokens, layer, head), expected, atol=1e-6)
        with torch.no_grad():
            whole = per_token_loss(model(tokens)[0], tokens)[:, tokens.shape[1] // 2 :].mean()
        assert abs(float(whole) - float(expected)) > 1e-2, "switching the head off must change the loss clearly"


# ---------------------------------------------------------------------------------------------- right alternatives


def batch_with_repeat(batch_size, half, vocab_size, seed):
    first = torch.randint(0, vocab_size, (batch_size, half), generator=torch.Generator().manual_seed(seed))
    return first.repeat(1, 2)


def previous_with_a_loop(weights):
    seq = weights.shape[-1]
    total = sum(weights[:, :, t, t - 1] for t in range(1, seq))  # (batch, num_heads)
    return (total / (seq - 1)).mean(dim=0)


def prefix_with_diagonal(weights, half):
    return weights.diagonal(offset=1 - half, dim1=2, dim2=3)[..., 1:].mean(dim=(0, 2))


def ablation_weights_zeroed_after_softmax(model, tokens, layer, head):
    seq = tokens.shape[1]
    x = model.embed(tokens)
    for index, block in enumerate(model.layers):
        q, k, v = block.project(x)
        scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~causal_mask(seq), float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        if index == layer:
            weights = torch.cat(
                [weights[:, :head], torch.zeros_like(weights[:, head : head + 1]), weights[:, head + 1 :]], 1
            )
        x = x + block.attention.w_o(merge_heads(weights @ v))
    logits = model.unembed(x)
    half = seq // 2
    return F.cross_entropy(logits[:, half:-1].reshape(-1, logits.shape[-1]), tokens[:, half + 1 :].reshape(-1))


def ablation_values_zeroed(model, tokens, layer, head):
    x = model.embed(tokens)
    for index, block in enumerate(model.layers):
        q, k, v = block.project(x)
        if index == layer:
            v = v.clone()
            v[:, head] = 0.0
        out, _ = scaled_dot_product_attention(q, k, v, causal_mask(tokens.shape[1]))
        x = x + block.attention.w_o(merge_heads(out))
    return per_token_loss(model.unembed(x), tokens)[:, tokens.shape[1] // 2 :].mean()


def ablation_by_the_models_switch(model, tokens, layer, head):
    logits, _ = model(tokens, ablate={(layer, head)})
    return per_token_loss(logits, tokens)[:, tokens.shape[1] // 2 :].mean()


def ablation_on_a_copy_of_the_weights(model, tokens, layer, head):
    mine = copy.deepcopy(model)  # zeroing W_O's columns of the head in a copy leaves the caller's model whole
    d_head = model.d_model // model.num_heads
    with torch.no_grad():
        mine.layers[layer].attention.w_o.weight[:, head * d_head : (head + 1) * d_head] = 0.0
    return per_token_loss(mine(tokens)[0], tokens)[:, tokens.shape[1] // 2 :].mean()


RIGHT = [
    (induction.BATCH_SPEC, batch_with_repeat),
    (induction.PREVIOUS_SPEC, previous_with_a_loop),
    (induction.PREFIX_SPEC, prefix_with_diagonal),
    (induction.ABLATION_SPEC, ablation_weights_zeroed_after_softmax),
    (induction.ABLATION_SPEC, ablation_values_zeroed),
    (induction.ABLATION_SPEC, ablation_on_a_copy_of_the_weights),
]


@pytest.mark.parametrize("spec, function", RIGHT, ids=[f.__name__ for _, f in RIGHT])
def test_right_alternatives_pass(spec, function):
    result = run_check(spec, function, verbose=False)
    assert result.passed, result.message


def test_the_models_own_switch_is_the_answer_and_does_not_pass():
    """model(tokens, ablate=...) is course_lib's ablation: the exercise is to write it (issue 26, item 3); the check's
    model refuses the switch with a message that says so, and its plain forward pass still works."""
    result = run_check(induction.ABLATION_SPEC, ablation_by_the_models_switch, verbose=False)
    assert not result.passed and result.status == "error"
    assert "model(tokens, ablate=...)" in result.message and "Traceback" not in result.message
    assert run_check(induction.ABLATION_SPEC, ablation_on_a_copy_of_the_weights, verbose=False).passed


# ---------------------------------------------------------------------------------------------- wrong versions


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def batch_from_rand(batch_size, half, vocab_size, seed):
    first = (torch.rand(batch_size, half, generator=_gen(seed)) * vocab_size).long()
    return torch.cat([first, first], dim=1)


def batch_as_floats(batch_size, half, vocab_size, seed):
    first = torch.randint(vocab_size, (batch_size, half), generator=_gen(seed)).float()
    return torch.cat([first, first], dim=1)


def batch_as_int32(batch_size, half, vocab_size, seed):
    first = torch.randint(vocab_size, (batch_size, half), generator=_gen(seed), dtype=torch.int32)
    return torch.cat([first, first], dim=1)


def batch_repeated_rows(batch_size, half, vocab_size, seed):
    first = torch.randint(vocab_size, (batch_size, half), generator=_gen(seed))
    return first.repeat(2, 1)


def batch_stacked(batch_size, half, vocab_size, seed):
    first = torch.randint(vocab_size, (batch_size, half), generator=_gen(seed))
    return torch.stack([first, first], dim=1)


def batch_one_generator_per_row(batch_size, half, vocab_size, seed):
    rows = []
    for _ in range(batch_size):
        row = torch.randint(vocab_size, (half,), generator=_gen(seed))
        rows.append(torch.cat([row, row]))
    return torch.stack(rows)


def batch_mirrored(batch_size, half, vocab_size, seed):
    first = torch.randint(vocab_size, (batch_size, half), generator=_gen(seed))
    return torch.cat([first, first.flip(1)], dim=1)


def previous_python_floats(weights):
    batch, heads, seq, _ = weights.shape
    scores = []
    for h in range(heads):
        total = 0.0
        for b in range(batch):
            for t in range(1, seq):
                total += weights[b, h, t, t - 1].item()
        scores.append(total / (batch * (seq - 1)))
    return torch.tensor(scores)


def previous_every_query(weights):
    seq = weights.shape[-1]
    return torch.stack([weights[..., t, t - 1] for t in range(seq)], dim=-1).mean(dim=(0, -1))


def previous_max(weights):
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).amax(dim=-1).mean(dim=0)


def previous_per_sequence(weights):
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=-1)


def previous_transposed_first(weights):
    return weights.transpose(-1, -2).diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, -1))


def previous_detached(weights):
    return weights.detach().diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, -1))


def prefix_python_floats(weights, half):
    picked = [
        [weights[:, h, t, t - half + 1].mean().item() for t in range(half, 2 * half)] for h in range(weights.shape[1])
    ]
    return torch.tensor([sum(row) / len(row) for row in picked])


def prefix_from_the_boundary(weights, half):
    picked = [weights[..., t, t - half + 1] for t in range(half - 1, 2 * half)]
    return torch.stack(picked, dim=-1).mean(dim=(0, -1))


def prefix_clamped_keys(weights, half):
    seq = weights.shape[-1]
    queries = torch.arange(seq)
    return weights[..., queries, (queries - half + 1).clamp(min=0)].mean(dim=(0, -1))


def prefix_positive_offset(weights, half):
    return weights.diagonal(offset=half - 1, dim1=-2, dim2=-1).mean(dim=(0, -1))


def prefix_summed(weights, half):
    queries = torch.arange(half, 2 * half)
    return weights[..., queries, queries - half + 1].sum(dim=-1).mean(dim=0)


def prefix_previous_token_in_the_repeat(weights, half):
    queries = torch.arange(half, 2 * half)
    return weights[..., queries, queries - 1].mean(dim=(0, -1))


def ablation_in_place(model, tokens, layer, head):
    d_head = model.d_model // model.num_heads
    with torch.no_grad():
        model.layers[layer].attention.w_o.weight[:, head * d_head : (head + 1) * d_head] = 0.0
    return per_token_loss(model(tokens)[0], tokens)[:, tokens.shape[1] // 2 :].mean()


def ablation_forgot_the_switch(model, tokens, layer, head):
    return per_token_loss(model(tokens)[0], tokens)[:, tokens.shape[1] // 2 :].mean()


def ablation_as_a_float(model, tokens, layer, head):
    logits, _ = model(tokens, ablate={(layer, head)})
    return per_token_loss(logits, tokens)[:, tokens.shape[1] // 2 :].mean().item()


def ablation_layer_and_head_swapped(model, tokens, layer, head):
    x = model.embed(tokens)
    for index, block in enumerate(model.layers):
        q, k, v = block.project(x)
        out, _ = scaled_dot_product_attention(q, k, v, causal_mask(tokens.shape[1]))
        if index == head:
            out = torch.cat([out[:, :layer], torch.zeros_like(out[:, layer : layer + 1]), out[:, layer + 1 :]], dim=1)
        x = x + block.attention.w_o(merge_heads(out))
    return per_token_loss(model.unembed(x), tokens)[:, tokens.shape[1] // 2 :].mean()


def ablation_masked_fill_scores(model, tokens, layer, head):
    seq = tokens.shape[1]
    x = model.embed(tokens)
    for index, block in enumerate(model.layers):
        q, k, v = block.project(x)
        scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~causal_mask(seq), float("-inf"))
        if index == layer:
            off = torch.zeros(model.num_heads, dtype=torch.bool)
            off[head] = True
            scores = scores.masked_fill(off[:, None, None], float("-inf"))
        x = x + block.attention.w_o(merge_heads(torch.softmax(scores, dim=-1) @ v))
    return per_token_loss(model.unembed(x), tokens)[:, seq // 2 :].mean()


def ablation_summed_over_positions(model, tokens, layer, head):
    mine = copy.deepcopy(model)  # the head switched off through a copy of W_O (the model's own switch is refused)
    d_head = model.d_model // model.num_heads
    with torch.no_grad():
        mine.layers[layer].attention.w_o.weight[:, head * d_head : (head + 1) * d_head] = 0.0
    return per_token_loss(mine(tokens)[0], tokens)[:, tokens.shape[1] // 2 :].sum(dim=1).mean()


def ablation_feature_slice_of_the_residual(model, tokens, layer, head):
    d_head = model.d_model // model.num_heads
    x = model.embed(tokens)
    for index, block in enumerate(model.layers):
        q, k, v = block.project(x)
        out, _ = scaled_dot_product_attention(q, k, v, causal_mask(tokens.shape[1]))
        written = block.attention.w_o(merge_heads(out))
        if index == layer:
            written = torch.cat(
                [
                    written[..., : head * d_head],
                    torch.zeros_like(written[..., :d_head]),
                    written[..., (head + 1) * d_head :],
                ],
                dim=-1,
            )
        x = x + written
    return per_token_loss(model.unembed(x), tokens)[:, tokens.shape[1] // 2 :].mean()


GENERAL = None  # only the general message: what is measurably wrong (shape, dtype, values, gradient)

#: wrong version -> (its check, the mistakes a message may name for it without being false)
WRONG = {
    batch_from_rand: (induction.BATCH_SPEC, {"other_draw"}),
    batch_as_floats: (induction.BATCH_SPEC, {"wrong_dtype"}),
    batch_as_int32: (induction.BATCH_SPEC, {"wrong_dtype"}),
    batch_repeated_rows: (induction.BATCH_SPEC, {"copied_along_batch"}),
    batch_stacked: (induction.BATCH_SPEC, {"wrong_shape"}),
    batch_one_generator_per_row: (induction.BATCH_SPEC, {"other_draw"}),
    batch_mirrored: (induction.BATCH_SPEC, {"second_half_not_a_copy"}),
    previous_python_floats: (induction.PREVIOUS_SPEC, {"no_gradient"}),
    previous_every_query: (induction.PREVIOUS_SPEC, {"counts_query_zero"}),
    previous_max: (induction.PREVIOUS_SPEC, {"wrong_values"}),
    previous_per_sequence: (induction.PREVIOUS_SPEC, {"wrong_shape", "mean_over_heads"}),
    previous_transposed_first: (induction.PREVIOUS_SPEC, {"above_diagonal"}),
    previous_detached: (induction.PREVIOUS_SPEC, {"no_gradient"}),
    prefix_python_floats: (induction.PREFIX_SPEC, {"no_gradient"}),
    prefix_from_the_boundary: (induction.PREFIX_SPEC, {"boundary_query_counted"}),
    prefix_clamped_keys: (induction.PREFIX_SPEC, {"wrong_values"}),
    prefix_positive_offset: (induction.PREFIX_SPEC, {"above_diagonal"}),
    prefix_summed: (induction.PREFIX_SPEC, {"wrong_values"}),
    prefix_previous_token_in_the_repeat: (induction.PREFIX_SPEC, {"wrong_values"}),
    ablation_in_place: (induction.ABLATION_SPEC, {"mutates_input"}),
    ablation_forgot_the_switch: (induction.ABLATION_SPEC, {"nothing_switched_off"}),
    ablation_as_a_float: (induction.ABLATION_SPEC, {GENERAL}),
    ablation_layer_and_head_swapped: (induction.ABLATION_SPEC, {"wrong_values", "nothing_switched_off"}),
    ablation_masked_fill_scores: (induction.ABLATION_SPEC, {"scores_minus_inf"}),
    ablation_summed_over_positions: (induction.ABLATION_SPEC, {"wrong_values"}),
    ablation_feature_slice_of_the_residual: (induction.ABLATION_SPEC, {"zeroed_after_w_o"}),
}


def test_there_are_at_least_twenty_wrong_versions_of_our_own():
    assert len(WRONG) >= 20
    assert {spec.name for spec, _ in WRONG.values()} == {spec.name for spec in SPEC_LIST}


@pytest.mark.parametrize("wrong", list(WRONG), ids=[f.__name__ for f in WRONG])
def test_a_wrong_version_fails_with_a_true_message(wrong, capsys):
    spec, allowed = WRONG[wrong]
    result = CHECKS[spec.name](wrong)
    printed = capsys.readouterr().out
    assert not result.passed, wrong.__name__
    assert result.mistake in allowed, f"{wrong.__name__}: named {result.mistake!r}\n{result.message}"
    assert printed.startswith(("❌", "⌛")) and "Hint:" in printed
    assert "tensor(" not in printed, "a check never prints tensors (the expected result)"
    leaked = [s for s in _statements(spec.function) if s in flat(printed)]
    assert not leaked, f"the message prints the solution: {leaked}"


def test_a_model_changed_in_place_is_caught_and_the_callers_model_stays_whole():
    (model, tokens, layer, head), _ = induction.ABLATION_SPEC.cases[0].build()
    before = copy.deepcopy(model.state_dict())
    result = run_check(induction.ABLATION_SPEC, ablation_in_place, verbose=False)
    assert result.mistake == "mutates_input" and "`model`" in result.message
    assert "leave its weights alone" in flat(result.message)
    fresh = induction.ABLATION_SPEC.cases[0].build()[0][0]
    assert all(torch.equal(before[k], v) for k, v in fresh.state_dict().items())


CATALOGUED = [
    (spec, mistake.key, buggy)
    for spec in SPEC_LIST
    for mistake in spec.mistakes
    for buggy in (mistake.example, *mistake.variants)
]


@pytest.mark.parametrize("spec, key, buggy", CATALOGUED, ids=[f"{s.name}-{k}-{b.__name__}" for s, k, b in CATALOGUED])
def test_each_catalogued_mistake_is_named(spec, key, buggy):
    result = run_check(spec, buggy, verbose=False)
    assert not result.passed and result.mistake == key, result.message
    title = next(m.title for m in spec.mistakes if m.key == key)
    assert flat(title) in flat(result.message)


def test_every_catalogued_mistake_differs_clearly_from_the_reference():
    """Not a rounding effect: on some test each buggy example is off by far more than a pass's tolerance."""
    for spec in SPEC_LIST:
        for mistake in spec.mistakes:
            gaps = []
            for case in spec.cases:
                args, expected = case.build()
                got = mistake.example(*args)
                if got.shape != expected.shape or not torch.isfinite(got.double()).all():
                    gaps.append(math.inf)
                else:
                    gaps.append(float((got.double() - expected.double()).abs().max()))
            assert max(gaps) > 1e-2, (spec.name, mistake.key, gaps)


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
    nbformat.write(notebook, path)
    return path


def _mutated(function: str, original: str, broken: str) -> list[str]:
    cells = _solution_cells()
    (index,) = [i for i, source in enumerate(cells) if f"def {function}(" in source]
    assert cells[index].count(original) == 1, f"mutation target not found once in {function}: {original!r}"
    cells[index] = cells[index].replace(original, broken)
    return cells


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is bubblewrap (Linux only)")
def test_graded_in_the_sandbox_the_solution_passes_and_mutations_are_named(tmp_path):
    require_sandbox()  # skipped without bubblewrap, a failure in CI (tests/optional_tools.py)
    submissions = {
        "right": (_solution_cells(), None, None),
        "earlier copy": (
            _mutated("prefix_matching_score", "queries - half + 1]", "queries - half]"),
            "check_prefix_matching_score",
            "earlier_copy_itself",
        ),
        "in place": (
            _mutated(
                "ablated_repeat_loss",
                "    x = model.embed(tokens)",
                "    d = model.d_model // model.num_heads\n"
                "    with torch.no_grad():\n"
                "        model.layers[layer].attention.w_o.weight[:, head * d : (head + 1) * d] = 0.0\n"
                "    keep[head] = 1.0\n"
                "    x = model.embed(tokens)",
            ),
            "check_ablated_repeat_loss",
            "mutates_input",
        ),
        "interleaved": (
            _mutated("repeated_batch", "torch.cat([first, first], dim=1)", "first.repeat_interleave(2, dim=1)"),
            "check_repeated_batch",
            "interleaved",
        ),
    }
    for label, (cells, failing, mistake) in submissions.items():
        path = _notebook_from(cells, tmp_path / f"{label.replace(' ', '_')}.ipynb")
        graded = grading.grade_notebook(path, "ex09_induction_heads", timeout=90, use_sandbox=True)
        assert graded.sandboxed, label
        results = {entry["check"]: entry for entry in graded.checks}
        assert set(results) == {name for name, _ in EXERCISES["ex09_induction_heads"].checks}, label
        for check, entry in results.items():
            if check == failing:
                assert not entry["passed"] and entry["mistake"] == mistake, (label, entry["message"])
            else:
                assert entry["passed"], (label, check, entry["message"])


def test_the_registry_exports_the_checks():
    for name in ("check_repeated_batch", "check_previous_token_score", "check_prefix_matching_score"):
        assert SPECS[name] in SPEC_LIST and CHECKS[name] is getattr(induction, name)
