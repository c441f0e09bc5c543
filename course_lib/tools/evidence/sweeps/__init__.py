"""The sweeps behind the notebooks' "we checked 10 seeds": one table of them, each a function you can rerun.

A notebook runs each experiment once, with one seed, in seconds. Where it says how often a result holds ("in 9 of
10 seeds", "with 15,000 steps"), the sweep that measured it is listed here and reruns with
``python -m course_lib evidence NAME`` (``--list`` shows them all; docs/evidence.md is the same table in prose).

To add a sweep, write a function ``run(seeds, *, setting=default, ...) -> Table`` (see ``common.py``) in any module
and add one ``Sweep(...)`` line to ``SWEEPS``; the function is named as ``"module:function"`` and imported only
when the sweep runs, so a module of its own (for a new notebook, say) needs nothing else.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from .common import Table

__all__ = ["SWEEPS", "Sweep", "Table", "find"]


@dataclass(frozen=True)
class Sweep:
    """One registered sweep.

    ``name`` is what you type after ``evidence``; ``notebook`` the notebook whose claim it backs; ``shows`` that
    claim in a line; ``function`` the ``"module:function"`` that runs it; ``seeds`` how many seeds it runs by
    default (seeds 0, 1, …); ``minutes`` its rough run time with those seeds on a 2-core laptop.
    """

    name: str
    notebook: str
    shows: str
    function: str
    seeds: int = 10
    minutes: float = 1.0

    def load(self) -> Callable[..., Table]:
        module, _, attribute = self.function.partition(":")
        return getattr(importlib.import_module(module), attribute)


_HERE = __name__

SWEEPS: tuple[Sweep, ...] = (
    # notebook 01
    Sweep(
        "recall-bottleneck",
        "01",
        "the 1-block Transformer recalls at every N; the LSTM drops as N grows",
        f"{_HERE}.nb01:recall_bottleneck",
        seeds=5,
        minutes=2,
    ),
    Sweep(
        "lstm-budget",
        "01",
        "with 10x the training the LSTM improves at every N, and still drops as N grows",
        f"{_HERE}.nb01:lstm_budget",
        seeds=1,
        minutes=3,
    ),
    Sweep(
        "lstm-width",
        "01",
        "at the notebook's budget a wider LSTM does better at every N, and still drops as N grows",
        f"{_HERE}.nb01:lstm_width",
        seeds=3,
        minutes=4,
    ),
    Sweep(
        "rnn-recency",
        "01",
        "a vanilla RNN recalls the last items best, and the very first item better than the next",
        f"{_HERE}.nb01:rnn_recency",
        seeds=10,
        minutes=0.7,
    ),
    Sweep(
        "gradient-probe",
        "01",
        "the tanh RNN's gradient falls ~0.5x per step; attention's does not fall with distance",
        f"{_HERE}.nb01:gradient_probe",
        seeds=10,
        minutes=0.2,
    ),
    # notebook 02
    Sweep(
        "sqrt-dk-training",
        "02",
        "at d_k = 256 the scaled head learns recall and the unscaled one does not",
        f"{_HERE}.nb02:sqrt_dk_training",
        seeds=10,
        minutes=2,
    ),
    Sweep(
        "softmax-saturation",
        "02",
        "unscaled scores saturate the softmax as d_k grows; the query gradient does not shrink",
        f"{_HERE}.nb02:softmax_saturation",
        seeds=5,
        minutes=0.3,
    ),
    # notebook 03
    Sweep(
        "head-split",
        "03",
        "how often a 4-head model puts subject and clause noun in different heads",
        f"{_HERE}.nb03:head_split",
        seeds=10,
        minutes=2,
    ),
    Sweep(
        "one-head",
        "03",
        "one head of the same width on both questions: does it fail, or take longer, where four heads succeed?",
        f"{_HERE}.nb03:one_head",
        seeds=10,
        minutes=1,
    ),
    Sweep(
        "agreement-heads",
        "03",
        "one head finds the subject; with was/were in the clause it reads the auxiliary",
        f"{_HERE}.nb03:agreement_heads",
        seeds=10,
        minutes=1.5,
    ),
    # notebook 04
    Sweep(
        "positions",
        "04",
        "without positions the model scores about 0.5; with sinusoidal or learned positions 1.0",
        f"{_HERE}.nb04:positions",
        seeds=10,
        minutes=1,
    ),
    # notebook 05
    Sweep(
        "token-collapse",
        "05",
        "without skips the tokens collapse within 3 layers at initialisation; with skips not",
        f"{_HERE}.nb05:token_collapse",
        seeds=10,
        minutes=0.3,
    ),
    Sweep(
        "deep-training",
        "05",
        "a 6-block model learns recall with skips and stays at chance without them",
        f"{_HERE}.nb05:deep_training",
        seeds=5,
        minutes=1,
    ),
    Sweep(
        "high-learning-rate",
        "05",
        "at lr 1e-2: no LN blows up, post-LN needs a warm-up, pre-LN trains as it is",
        f"{_HERE}.nb05:high_learning_rate",
        seeds=5,
        minutes=2.5,
    ),
    Sweep(
        "convergence-speed",
        "05",
        "steps to loss 0.1 at three learning rates: LayerNorm is faster only at a higher rate",
        f"{_HERE}.nb05:convergence_speed",
        seeds=3,
        minutes=4,
    ),
    Sweep(
        "init-scale",
        "05",
        "weights started at 0.3x or 3x their size: LayerNorm copes with too small, not with 3x in 150 steps",
        f"{_HERE}.nb05:init_scale",
        seeds=3,
        minutes=2,
    ),
    # notebook 06
    Sweep(
        "first-token",
        "06",
        "Transformer vs LSTM on 'what was the first token?' at L = 5 ... 50, fixed budgets",
        f"{_HERE}.nb06:first_token_lengths",
        seeds=5,
        minutes=3,
    ),
    Sweep(
        "lstm-curriculum",
        "06",
        "an LSTM trained 1,000 steps on a mix of lengths: above chance at every length, by how much depends on the seed",
        f"{_HERE}.nb06:lstm_curriculum",
        seeds=3,
        minutes=2,
    ),
    Sweep(
        "block-mutations",
        "06",
        "a wiring mistake in the block misses PyTorch's output by far more than rounding",
        f"{_HERE}.nb06:block_mutations",
        seeds=1,
        minutes=0.1,
    ),
    # notebook 08
    Sweep(
        "language-model",
        "08",
        "the decoder LM beats unigram and bigram and learns agreement across the clause; the same-size LSTM alongside",
        f"{_HERE}.nb08:language_model",
        seeds=10,
        minutes=5,
    ),
    # notebook 09
    Sweep(
        "induction-heads",
        "09",
        "an induction head forms as the repeated-half loss falls; switched off, the drop is gone; one layer forms none",
        f"{_HERE}.nb09:induction_heads",
        seeds=10,
        minutes=1,
    ),
    # notebook 10
    Sweep(
        "block-changes",
        "10",
        "RMSNorm, SwiGLU, one KV head (GQA), the three together and today's block against the 2017 block on 08's "
        "corpus: validation loss over seeds",
        f"{_HERE}.nb10:block_changes",
        seeds=5,
        minutes=2,
    ),
    # notebook 11
    Sweep(
        "tokens-ladder",
        "11",
        "the decoder on BPE 512 passes the bigram in bits per byte within 800 steps",
        f"{_HERE}.nb11:ladder",
        seeds=10,
        minutes=2,
    ),
    Sweep(
        "tokens-every-cut",
        "11",
        "the same decoder on characters, bytes, BPE 512 and BPE 1024: bits per byte fall as tokens grow",
        f"{_HERE}.nb11:every_cut",
        seeds=3,
        minutes=2,
    ),
)


def find(name: str) -> Sweep:
    """The sweep called ``name``; a ``KeyError`` lists the known names."""
    for sweep in SWEEPS:
        if sweep.name == name:
            return sweep
    raise KeyError(name)
