"""course_lib.lab.training: side-by-side runs give the numbers of one-after-another runs; subnormals flushed only while
training. Notebooks 01 and 05 rely on both for their run time (benchmarks/run_course.py)."""

import os
import signal
import sys
import threading
import time

import pytest
import torch

from course_lib._validate import CourseInputError
from course_lib.lab import training
from course_lib.lab.models import TransformerClassifier
from course_lib.lab.tasks.recall import NUM_VALUES, VOCAB_SIZE, key_value_recall, recall_batches
from course_lib.lab.training import SOLVED_WINDOW, _subnormals_flushed, train_classifier, train_side_by_side

WIRINGS = {
    "pre-LN, learned positions": dict(norm_first=True, positions="learned"),
    "pre-LN": dict(norm_first=True),
    "post-LN": dict(norm_first=False),
}


def recall_8(batch_size, generator):
    return key_value_recall(batch_size, 8, generator)


def make_model(seed=0, **wiring):
    torch.manual_seed(seed)
    return TransformerClassifier(VOCAB_SIZE, NUM_VALUES, d_model=16, num_heads=2, d_ff=32, num_layers=3, **wiring)


def runs(steps=30, **extra):
    return {
        name: dict(model=make_model(**wiring), make_batch=recall_8, steps=steps, lr=1e-2, seed=3, name=name, **extra)
        for name, wiring in WIRINGS.items()
    }


def test_side_by_side_gives_the_histories_and_weights_of_one_after_another(capsys):
    together, alone = runs(warmup=5), runs(warmup=5)
    histories = train_side_by_side(together, workers=3)
    printed_together = capsys.readouterr().out
    for name, arguments in alone.items():
        history = train_classifier(**arguments)
        assert history["loss"] == histories[name]["loss"], f"{name}: the losses differ from a run on its own"
        assert history["diverged"] == histories[name]["diverged"]
        for (key, theirs), ours in zip(
            arguments["model"].state_dict().items(), together[name]["model"].state_dict().values()
        ):
            assert torch.equal(theirs, ours), f"{name}: trained weight {key} differs from a run on its own"
    assert printed_together == capsys.readouterr().out, "progress should print as if the runs went one by one"
    assert list(histories) == list(WIRINGS)


def test_side_by_side_with_a_stateful_stream_and_a_callback_per_run():
    seen = {}

    def callback_for(name):
        def record(step, model):
            seen.setdefault(name, []).append(step)

        return record

    def make(item_counts):
        return {
            name: dict(
                model=make_model(**wiring),
                make_batch=recall_batches(item_counts),
                steps=12,
                seed=1,
                log_every=100,
                callback=callback_for(name),
            )
            for name, wiring in WIRINGS.items()
        }

    histories = train_side_by_side(make((4, 8, 16)))
    expected = {name: train_classifier(**arguments) for name, arguments in make((4, 8, 16)).items()}
    assert all(histories[name]["loss"] == expected[name]["loss"] for name in WIRINGS)
    assert all(seen[name] == list(range(1, 13)) * 2 for name in WIRINGS)


def test_an_error_in_one_run_is_raised_after_the_others_finish(capsys):
    def broken(batch_size, generator):
        raise CourseInputError("this task is broken")

    bad = runs(steps=10)
    bad["pre-LN"]["make_batch"] = broken
    with pytest.raises(CourseInputError, match="this task is broken"):
        train_side_by_side(bad)
    out = capsys.readouterr().out
    assert "pre-LN, learned positions: step" in out and "post-LN: step" in out, (
        "the other runs' progress should still print"
    )
    assert type(sys.stdout).__name__ != "_PerThreadOutput", "stdout should be the notebook's own again"


@pytest.mark.parametrize(
    "bad, message",
    [
        ({}, "non-empty dict"),
        ({"a": {"steps": 3}}, "at least 'model' and 'make_batch'"),
        ([1, 2], "non-empty dict"),
    ],
)
def test_bad_runs_get_a_clear_message(bad, message):
    with pytest.raises(CourseInputError, match=message):
        train_side_by_side(bad)


def test_two_runs_may_not_share_one_model():
    model = make_model()
    with pytest.raises(CourseInputError, match="share one model"):
        train_side_by_side(
            {"a": dict(model=model, make_batch=recall_8, steps=1), "b": dict(model=model, make_batch=recall_8, steps=1)}
        )


def test_workers_must_be_a_positive_whole_number():
    with pytest.raises(CourseInputError, match="workers"):
        train_side_by_side(runs(steps=1), workers=0)


@pytest.fixture
def interruptible_runs():
    """Runs that train for a long time, under Python's own SIGINT handler (as a kernel runs a cell), each failing with
    a RuntimeError after 30 s: a test whose interrupt is never seen fails then, instead of hanging the suite."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    deadline = time.perf_counter() + 30

    def make_batch(batch_size, generator):
        if time.perf_counter() > deadline:
            raise RuntimeError("no interrupt was seen within 30 s")
        return recall_8(batch_size, generator)

    arguments = runs(steps=100_000, log_every=100_000)
    for run in arguments.values():
        run["make_batch"] = make_batch
    yield arguments
    signal.signal(signal.SIGINT, before)


def stopped_by(interrupt, runs_to_stop) -> None:
    """Train ``runs_to_stop`` side by side, call ``interrupt`` after 1 s: the cell ends at once with KeyboardInterrupt."""
    timer = threading.Timer(1.0, interrupt)
    timer.start()
    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        train_side_by_side(runs_to_stop)
    assert time.perf_counter() - start < 20, "the interrupt should stop the runs at once, not when they end"
    timer.join()


def test_an_interrupt_handed_to_a_training_thread_still_stops_the_cell(interruptible_runs):
    """The system may deliver the stop button's SIGINT to any thread of the kernel (a CI run hung for minutes when it
    went to a training thread while the notebook's thread waited in join): the cell stops all the same."""

    def interrupt_a_training_thread():  # train_side_by_side's threads run its function `worker`
        training = [t for t in threading.enumerate() if t.name.endswith("(worker)") and t.is_alive()]
        signal.pthread_kill(training[0].ident, signal.SIGINT)

    stopped_by(interrupt_a_training_thread, interruptible_runs)


def test_stopping_the_cell_stops_every_run(interruptible_runs):
    threads_before = set(threading.enumerate())
    stopped_by(lambda: os.kill(os.getpid(), signal.SIGINT), interruptible_runs)
    still_running = [thread for thread in threading.enumerate() if thread.is_alive() and thread not in threads_before]
    assert not still_running, f"no training thread should keep running: {still_running}"
    assert type(sys.stdout).__name__ != "_PerThreadOutput", "stdout should be the notebook's own again"


def subnormal_survives() -> bool:
    tiny = torch.tensor([1e-39])  # below float32's smallest normal number, 1.18e-38
    return bool((tiny * 1.5).item() != 0.0)


def test_subnormals_are_flushed_only_while_training():
    if not torch.set_flush_denormal(False):
        pytest.skip("this CPU cannot flush subnormals")
    assert subnormal_survives()
    during = []
    train_classifier(
        make_model(), recall_8, steps=2, log_every=10, callback=lambda step, model: during.append(subnormal_survives())
    )
    assert during == [False, False], "inside training, subnormal results should be flushed to 0"
    assert subnormal_survives(), "after training, arithmetic should be back to IEEE subnormals"
    with pytest.raises(RuntimeError):
        with _subnormals_flushed():
            raise RuntimeError("boom")
    assert subnormal_survives(), "an error inside training must not leave the flushing on"


@pytest.mark.parametrize(
    "cpu_max, expected", [("max 100000\n", 2), ("100000 100000\n", 1), ("150000 100000\n", 1), ("50000 100000", 1)]
)
def test_a_container_cpu_quota_caps_the_cores(monkeypatch, tmp_path, cpu_max, expected):
    import builtins

    from course_lib.lab import training

    quota_file = tmp_path / "cpu.max"
    quota_file.write_text(cpu_max)
    real_open = builtins.open
    monkeypatch.setattr(training.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(
        builtins,
        "open",
        lambda path, *a, **k: real_open(quota_file if path == "/sys/fs/cgroup/cpu.max" else path, *a, **k),
    )
    assert training.available_cores() == expected


def test_stop_above_ends_a_blown_up_run_and_says_so(capsys):
    history = train_classifier(make_model(), recall_8, steps=50, log_every=100, name="tiny", stop_above=0.5)
    out = capsys.readouterr().out
    assert history["diverged"] and len(history["loss"]) == 1, "the first loss (about ln 16) is above 0.5"
    assert "tiny: step 1/50" in out and "> 0.5" in out and "blew up" in out
    history = train_classifier(make_model(), recall_8, steps=5, log_every=100, stop_above=100.0)
    assert not history["diverged"] and len(history["loss"]) == 5, "a run below the limit takes every step"


def steps_to_solve(losses, below):
    """The first step whose last SOLVED_WINDOW losses average below ``below`` (steps count from 1), or None."""
    for step in range(SOLVED_WINDOW, len(losses) + 1):
        if sum(losses[step - SOLVED_WINDOW : step]) / SOLVED_WINDOW < below:
            return step
    return None


def test_stop_below_stops_where_the_full_run_first_averaged_below_it(capsys):
    full = train_classifier(make_model(), recall_8, steps=60, lr=1e-2, seed=3, log_every=100)["loss"]
    below = sum(full[20:40]) / 20 + 1e-6  # the window of steps 21-40 is below it, so the run stops there or sooner
    expected = steps_to_solve(full, below)
    assert expected is not None and expected <= 40
    capsys.readouterr()
    stopped = train_classifier(make_model(), recall_8, steps=60, lr=1e-2, seed=3, log_every=100, stop_below=below)
    assert len(stopped["loss"]) == expected and stopped["loss"] == full[:expected], "the same run, cut where solved"
    assert f"solved at step {expected:>5}/60" in capsys.readouterr().out
    assert steps_to_solve(full, below=-1.0) is None, "a loss never below the bar: never solved"
    assert len(train_classifier(make_model(), recall_8, steps=30, lr=1e-2, stop_below=-1.0)["loss"]) == 30


def test_side_by_side_shares_the_cores_between_its_runs_and_gives_them_back():
    before = torch.get_num_threads()
    seen = []
    arguments = runs(steps=2)
    for name in arguments:
        arguments[name]["callback"] = lambda step, model: seen.append(torch.get_num_threads())
    train_side_by_side(arguments, workers=2)
    assert torch.get_num_threads() == before
    assert seen and set(seen) == {max(1, training.available_cores() // 2)}
