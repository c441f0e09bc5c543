"""Checks for exercise 04: the sinusoidal positional encoding.

Learner signature:

    sinusoidal_encoding(seq_len, d_model) -> (seq_len, d_model) float32
        PE[pos, 2i] = sin(pos / 10000^(2i / d_model)),  PE[pos, 2i+1] = cos(pos / 10000^(2i / d_model))

Reference: ``course_lib.sinusoidal_encoding``.
"""

from __future__ import annotations

import math

import torch

from ..positions import sinusoidal_encoding
from .core import export_checks
from .judging import same
from .spec import Case, CheckSpec, Mistake, TensorOut


def _case(seq_len: int, d_model: int):
    def build():
        return (seq_len, d_model), sinusoidal_encoding(seq_len, d_model)

    return build


def _encode(seq_len, d_model, base=10000.0, exponent="2i", sign=-1.0, layout="interleaved", first=0, swap=False):
    """The encoding with switches to reproduce each typical mistake (computed in float64, returned as float32)."""
    positions = torch.arange(first, first + seq_len, dtype=torch.float64)[:, None]
    pair = torch.arange(d_model // 2, dtype=torch.float64)
    power = {"2i": 2 * pair, "i": pair, "4i": 4 * pair}[exponent] / d_model
    angles = positions * base ** (sign * power)
    sin, cos = torch.sin(angles), torch.cos(angles)
    if swap:
        sin, cos = cos, sin
    if layout == "halves":
        encoding = torch.cat([sin, cos], dim=1)
    else:
        encoding = torch.zeros(seq_len, d_model, dtype=torch.float64)
        encoding[:, 0::2], encoding[:, 1::2] = sin, cos
    return encoding.float()


def pe_sin_cos_swapped(seq_len, d_model):
    return _encode(seq_len, d_model, swap=True)


def pe_halves(seq_len, d_model):
    return _encode(seq_len, d_model, layout="halves")


def pe_exponent_i(seq_len, d_model):
    return _encode(seq_len, d_model, exponent="i")


def pe_exponent_4i(seq_len, d_model):
    return _encode(seq_len, d_model, exponent="4i")


def pe_positive_exponent(seq_len, d_model):
    return _encode(seq_len, d_model, sign=1.0)


def pe_positions_from_one(seq_len, d_model):
    return _encode(seq_len, d_model, first=1)


def pe_base_1000(seq_len, d_model):
    return _encode(seq_len, d_model, base=1000.0)


def _wrong_frequencies_probe(value, args) -> bool:
    """The first pair of columns (frequency 1, whatever the base) is right, and the whole table is the encoding of
    some other base: the one read off pair 1 at position 1 (a table wrong in another way, e.g. angles floored to
    whole numbers, is not this mistake)."""
    seq_len, d_model = args
    expected = sinusoidal_encoding(seq_len, d_model)
    if not (
        isinstance(value, torch.Tensor)
        and tuple(value.shape) == (seq_len, d_model)
        and value.is_floating_point()
        and seq_len > 1
        and d_model > 2
        and same(value[:, :2], expected[:, :2])
        and not same(value, expected)
    ):
        return False
    rate = float(torch.atan2(value[1, 2].double(), value[1, 3].double()) % (2 * math.pi))  # pair 1's angle per step
    if not 0 < rate < 2 * math.pi or rate == 1.0:
        return False
    base = rate ** (-d_model / 2)  # rate = base^(-2 / d_model)
    return math.isfinite(base) and bool(
        torch.allclose(value.double(), _encode(seq_len, d_model, base=base).double(), atol=1e-3)
    )


MISTAKES = [
    Mistake(
        "sin_cos_swapped",
        "sine and cosine are swapped",
        "Even columns (0, 2, 4, ...) hold the sines and odd columns the cosines, so position 0 encodes as "
        "[0, 1, 0, 1, ...] (sin 0 = 0, cos 0 = 1).",
        pe_sin_cos_swapped,
    ),
    Mistake(
        "halves_instead_of_interleaved",
        "all the sines come first and all the cosines after, instead of alternating",
        "Interleave them: encoding[:, 0::2] = sines and encoding[:, 1::2] = cosines, so that each (sin, cos) pair "
        "of one frequency sits in neighbouring columns 2i and 2i + 1.",
        pe_halves,
    ),
    Mistake(
        "exponent_pair_index",
        "the exponent does not use 2i / d_model, with i the index of the (sin, cos) pair",
        "Pair i (columns 2i and 2i + 1) has frequency 1 / 10000^(2i / d_model). torch.arange(0, d_model, 2) already "
        "counts 0, 2, 4, ... (that is 2i), while torch.arange(d_model // 2) counts i.",
        pe_exponent_i,
        variants=(pe_exponent_4i,),
    ),
    Mistake(
        "positive_exponent",
        "the positions are multiplied by 10000^(2i / d_model) instead of divided by it",
        "The waves must get slower from pair to pair: angle = pos / 10000^(2i / d_model), i.e. a frequency of "
        "10000^(-2i / d_model), between 1 and 1/10000.",
        pe_positive_exponent,
    ),
    Mistake(
        "positions_from_one",
        "the positions start at 1 instead of 0",
        "Use positions 0, 1, ..., seq_len - 1 (torch.arange(seq_len)); the first row must be [0, 1, 0, 1, ...].",
        pe_positions_from_one,
    ),
    Mistake(
        "wrong_base",
        "the first two columns are right but the slower waves have the frequencies of another base (it should be 10000)",
        "Pair i turns at frequency 1 / 10000^(2i / d_model): check the base (10000.0) and that the exponent is "
        "2i / d_model.",
        pe_base_1000,
        probe=_wrong_frequencies_probe,
    ),
]


def _diagnose(value, expected, args) -> str | None:
    if not isinstance(value, torch.Tensor) or value.shape != expected.shape:
        return None
    first_row = value[0].double()
    target = torch.tensor([0.0, 1.0] * (value.shape[1] // 2), dtype=torch.float64)
    if not torch.allclose(first_row, target, atol=1e-4):
        return (
            "Position 0 must encode as [0, 1, 0, 1, ...]: sin(0) = 0 in the even columns, cos(0) = 1 in the odd ones."
        )
    if not torch.allclose(
        value[:, 0].double(), torch.sin(torch.arange(value.shape[0], dtype=torch.float64)), atol=1e-4
    ):
        return "Column 0 must be sin(pos) for pos = 0, 1, 2, ...: the first pair turns at one radian per position."
    return None


SPEC = CheckSpec(
    name="check_positional_encoding",
    function="sinusoidal_encoding",
    own=("course_lib.positions", "sinusoidal_encoding"),
    arg_names=("seq_len", "d_model"),
    output=TensorOut("(seq_len, d_model)"),
    cases=[
        Case("a short table", _case(10, 16)),
        Case("a long table", _case(50, 8)),
        Case("a tiny table", _case(3, 4)),
    ],
    mistakes=MISTAKES,
    success="Sines in the even columns, cosines in the odd ones, frequencies from 1 down to 1/10000.",
    diagnose=_diagnose,
    dtype_hint="Return float32 (PyTorch's default): build the tensors with dtype=torch.float32, or end with .float().",
    atol=1e-4,
)


__all__ = export_checks(globals())  # check_* functions, one per CheckSpec above
