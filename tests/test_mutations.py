"""The verification tests must catch a broken building block.

Each case copies ``course_lib`` to a temporary folder, breaks one line the way a learner (or a tired author) might,
and runs the equivalence tests against the broken copy: they have to fail. A mutation they do not catch means the
tests cannot tell a correct block from a wrong one.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

MUTATIONS = {
    "no sqrt(d_k) scaling": ("attention.py", "keys.transpose(-2, -1) / math.sqrt(d_k)", "keys.transpose(-2, -1)"),
    "divide by d_k instead of sqrt(d_k)": ("attention.py", "/ math.sqrt(d_k)", "/ d_k"),
    "softmax without normalising": (
        "attention.py",
        "return exps / exps.sum(",
        "return exps + 0 * exps.sum(",
    ),
    "attention softmax over the query axis": (
        "attention.py",
        "weights = softmax(scores, dim=-1)",
        "weights = softmax(scores, dim=-2)",
    ),
    "mask filled with 0 instead of -inf": (
        "attention.py",
        'masked_fill(~mask, float("-inf"))',
        "masked_fill(~mask, 0.0)",
    ),
    "multi-head mask with the head axis in the wrong place": (
        "multihead.py",
        "mask = mask[:, None, :, :]  # (batch, 1, seq_q or 1, seq_k)",
        "mask = mask[:, :, None, :]  # (batch, 1, seq_q or 1, seq_k)",
    ),
    "LayerNorm centred once in float32 only": (
        "blocks.py",
        "x = x - x.mean(dim=-1, keepdim=True)",
        "x = x",
    ),
    "merge heads without transposing back": (
        "multihead.py",
        "return x.transpose(1, 2).reshape(batch, seq, num_heads * d_head)",
        "return x.reshape(batch, seq, num_heads * d_head)",
    ),
    "sin and cos swapped": (
        "positions.py",
        "encoding[:, 0::2] = torch.sin(angles)",
        "encoding[:, 0::2] = torch.cos(angles)",
    ),
    "LayerNorm with γ and β swapped": (
        "blocks.py",
        "return self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta",
        "return self.beta * (x - mean) / torch.sqrt(var + self.eps) + self.gamma",
    ),
    "post-LN residual placed outside the norm": (
        "blocks.py",
        "return self.norm(skip + self.dropout(sublayer(x)))",
        "return skip + self.norm(self.dropout(sublayer(x)))",
    ),
    "the block's post-LN residual placed outside the norm": (
        "blocks.py",
        "x = self.norm1(x + self.dropout(self.attend(x, mask)))",
        "x = x + self.norm1(self.dropout(self.attend(x, mask)))",
    ),
    "the block's pre-LN feed-forward reads the un-normalised stream": (
        "blocks.py",
        "x = x + self.dropout(self.feed_forward(self.norm2(x)))",
        "x = x + self.dropout(self.feed_forward(x))",
    ),
    "RNN without tanh": (
        "recurrent.py",
        "return torch.tanh(self.w_xh(x_t) + self.w_hh(h_prev))",
        "return self.w_xh(x_t) + self.w_hh(h_prev)",
    ),
}


# The equivalence tests of each mutated file run first: ``-x`` stops at the first failure, so a caught mutation costs
# only those; the rest of tests/test_equivalence.py still runs after them, so a mutation that only another test
# catches is caught as before (the tests are independent: their order changes nothing else).
FIRST = {
    "attention.py": ("test_sdpa_", "test_softmax_", "test_fully_masked_", "test_scaling_"),
    "multihead.py": ("test_multihead_", "test_split_and_merge_"),
    "positions.py": ("test_sinusoidal_",),
    "blocks.py": ("test_layernorm_", "test_residual_", "test_encoder_"),
    "recurrent.py": ("test_vanilla_rnn_",),
}

PYTEST_ARGS = [
    "-x",
    "-q",
    "-p",
    "no:cacheprovider",
    "-o",
    "addopts=",
    # plugins the equivalence tests do not use: they cost two of the ~3 s of each run's start
    "-p",
    "no:nbval",
    "-p",
    "no:xdist",
    "-p",
    "no:hypothesispytest",
    "-p",
    "no:anyio",
]

# One process imports torch and pytest once (no course_lib, no torch op), then forks one child per mutated copy: the
# child puts its copy first on sys.path, runs the equivalence tests on it (``pytest.main``) into output.txt in the
# copy's folder, and writes there its exit code and the file of the course_lib its tests imported.
RUNNER = """
import json, os, sys

import pytest
import torch  # noqa: F401  (shared by the children; no course_lib is imported here)

tests, args = sys.argv[1], json.loads(sys.argv[2])
for folder, first in json.loads(sys.argv[3]):
    pid = os.fork()
    if pid == 0:
        try:
            os.chdir(folder)
            sys.path.insert(0, folder)
            log = os.open("output.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(log, 1)
            os.dup2(log, 2)

            class RelevantFirst:
                @pytest.hookimpl(trylast=True)
                def pytest_collection_modifyitems(self, items):
                    items.sort(key=lambda item: not item.name.startswith(tuple(first)))

            code = int(pytest.main([tests, *args, "--rootdir", folder], plugins=[RelevantFirst()]))
            imported = getattr(sys.modules.get("course_lib"), "__file__", None)
            with open("result.json", "w") as handle:
                json.dump({"code": code, "imported": imported}, handle)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
    os.waitpid(pid, 0)
"""


@pytest.fixture(scope="module")
def mutation_runs(request, tmp_path_factory) -> dict[str, Path]:
    """name → the folder of its mutated copy of course_lib, after the equivalence tests ran on it (the mutations of
    the tests selected in this session, all in one runner process)."""
    names = [
        item.callspec.params["name"]
        for item in request.session.items
        if getattr(item, "originalname", None) == "test_equivalence_tests_catch_the_mutation"
    ]
    folders, jobs = {}, []
    for name in dict.fromkeys(names):
        filename, original, broken = MUTATIONS[name]
        folder = tmp_path_factory.mktemp("mutant")
        package = folder / "course_lib"
        shutil.copytree(ROOT / "course_lib", package, ignore=shutil.ignore_patterns("__pycache__"))
        source = (package / filename).read_text(encoding="utf-8")
        assert source.count(original) == 1, f"mutation target not found once in {filename}: {original!r}"
        (package / filename).write_text(source.replace(original, broken), encoding="utf-8")
        folders[name] = folder
        jobs.append((str(folder), FIRST[filename]))
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    runner = subprocess.run(
        [sys.executable, "-c", RUNNER, str(ROOT / "tests" / "test_equivalence.py"), json.dumps(PYTEST_ARGS),
         json.dumps(jobs)],
        cwd=tmp_path_factory.getbasetemp(), env=env, capture_output=True, text=True, timeout=300 + 60 * len(jobs),
    )  # fmt: skip
    assert runner.returncode == 0, runner.stdout[-2000:] + runner.stderr[-2000:]
    return folders


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MUTATIONS))
def test_equivalence_tests_catch_the_mutation(name, mutation_runs):
    folder = mutation_runs[name]
    output = (folder / "output.txt").read_text(encoding="utf-8", errors="replace")
    assert (folder / "result.json").exists(), f"the equivalence tests did not finish on '{name}':\n{output[-2000:]}"
    result = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    assert str(result["imported"]).startswith(str(folder / "course_lib")), (
        f"the broken copy must be the one imported, not {result['imported']}"
    )
    assert result["code"] == 1, (
        f"the equivalence tests did not catch '{name}' (exit {result['code']}):\n{output[-2000:]}"
    )


# ---------------------------------------------------------------------------------------------------------------
# The exercise checks must catch a broken learner solution: each case takes the solution notebook's own code,
# breaks one line the way a learner might, runs it and hands it to the check, which must fail and, where the
# mistake is catalogued, name it (otherwise it must say which part first went wrong).
# ---------------------------------------------------------------------------------------------------------------

LEARNER_MUTATIONS = {
    "ex06_encoder_block": {
        "FFN without the activation": (
            "torch.relu(x @ w_1 + b_1)",
            "(x @ w_1 + b_1)",
            ("check_feed_forward", "no_activation"),
        ),
        "FFN with tanh instead of ReLU": ("torch.relu(", "torch.tanh(", ("check_feed_forward", "other_activation")),
        "FFN with the bias after the ReLU": (
            "torch.relu(x @ w_1 + b_1)",
            "torch.relu(x @ w_1) + b_1",
            ("check_feed_forward", "activation_before_bias"),
        ),
        "FFN with a second ReLU on the output": (
            "return hidden @ w_2 + b_2",
            "return torch.relu(hidden @ w_2 + b_2)",
            ("check_feed_forward", "activation_on_output"),
        ),
        "FFN without its second bias": (
            "return hidden @ w_2 + b_2",
            "return hidden @ w_2",
            ("check_feed_forward", "missing_bias"),
        ),
        "block ignores norm_first": (
            "if norm_first:",
            "if not norm_first:",
            ("check_encoder_block", "ignores_norm_first"),
        ),
        "pre-LN: the second residual adds x (wrong residual)": (
            "return h + ffn(norm2(h))",
            "return x + ffn(norm2(h))",
            ("check_encoder_block", "second_skip_from_input"),
        ),
        "post-LN: the second residual adds x (wrong residual)": (
            "return norm2(h + ffn(h))",
            "return norm2(x + ffn(h))",
            ("check_encoder_block", "second_skip_from_input"),
        ),
        "post-LN: no residual around attention": (
            "h = norm1(x + self_attention(x))",
            "h = norm1(self_attention(x))",
            ("check_encoder_block", "missing_residual"),
        ),
        "post-LN: the feed-forward network reads x": (
            "return norm2(h + ffn(h))",
            "return norm2(h + ffn(x))",
            ("check_encoder_block", "ffn_reads_input"),
        ),
        "pre-LN: a final norm inside the block (LayerNorm in the wrong place)": (
            "return h + ffn(norm2(h))",
            "return norm2(h + ffn(norm2(h)))",
            ("check_encoder_block", "final_norm"),
        ),
        "post-LN: the first norm outside the residual (LayerNorm in the wrong place)": (
            "h = norm1(x + self_attention(x))",
            "h = x + norm1(self_attention(x))",
            ("check_encoder_block", "✗ norm1 receives"),
        ),
        "pre-LN: the first norm on the attention output (LayerNorm in the wrong place)": (
            "h = x + self_attention(norm1(x))",
            "h = x + norm1(self_attention(x))",
            ("check_encoder_block", "✗ norm1 receives self_attention's output"),
        ),
        "block with its FFN inlined without the activation": (
            "return feed_forward(h, w_1, b_1, w_2, b_2)",
            "return (h @ w_1 + b_1) @ w_2 + b_2",
            ("check_encoder_block", "ffn_no_activation"),
        ),
    },
}

LEARNER_CASES = [(exercise, name) for exercise, cases in LEARNER_MUTATIONS.items() for name in cases]


def _solution_code(exercise: str) -> list[str]:
    import nbformat

    notebook = nbformat.read(ROOT / "exercises" / "solutions" / f"{exercise}.ipynb", as_version=4)
    return [
        cell.source
        for cell in notebook.cells
        if cell.cell_type == "code"
        and not cell.source.startswith("# NBVAL_CHECK_OUTPUT")
        and "nbval-check-output" not in cell.metadata.get("tags", [])
        and "colab" not in cell.metadata.get("tags", [])
    ]


@pytest.mark.parametrize("exercise, name", LEARNER_CASES, ids=[name for _, name in LEARNER_CASES])
def test_the_exercise_checks_catch_a_mutated_solution(exercise, name, capsys):
    import contextlib
    import io

    from course_lib.checks import CHECKS, SPECS

    original, broken, (check, expected) = LEARNER_MUTATIONS[exercise][name]
    sources = _solution_code(exercise)
    assert sum(source.count(original) for source in sources) == 1, f"mutation target not found once: {original!r}"
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for source in sources:
            exec(compile(source.replace(original, broken), f"{exercise}.ipynb", "exec"), namespace)
    assert CHECKS[check](namespace[SPECS[check].function], verbose=False).passed is False
    result = CHECKS[check](namespace[SPECS[check].function], verbose=False)
    if expected in {mistake.key for mistake in SPECS[check].mistakes}:
        assert result.mistake == expected, f"{name}: expected the hint for {expected!r}, got:\n{result.message}"
    else:
        assert expected in result.message, f"{name}: the message does not say {expected!r}:\n{result.message}"


def test_the_unmutated_solutions_pass_the_same_checks():
    import contextlib
    import io

    from course_lib.checks import EXERCISES, SPECS

    for exercise in LEARNER_MUTATIONS:
        namespace: dict = {}
        with contextlib.redirect_stdout(io.StringIO()):
            for source in _solution_code(exercise):
                exec(compile(source, f"{exercise}.ipynb", "exec"), namespace)
        for spec in EXERCISES[exercise].specs:
            assert SPECS[spec.name] is spec
            from course_lib.checks.core import run_check

            assert run_check(spec, namespace[spec.function], verbose=False).passed, spec.name
