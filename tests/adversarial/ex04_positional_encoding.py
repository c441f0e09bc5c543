"""Exercise 04: sinusoidal_encoding, as learners write it."""

import math

import numpy as np
import torch

from . import right, wrong

PE = "check_positional_encoding"


def _angles(seq_len, d_model, base=10000.0, start=0):
    positions = torch.arange(start, start + seq_len, dtype=torch.float32)[:, None]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)
    return positions / base ** (two_i / d_model)


def _interleave(first, second):
    return torch.stack([first, second], dim=-1).flatten(-2)


@wrong(PE, "sin_cos_swapped")
def pe_sin_and_cos_swapped(seq_len, d_model):
    angles = _angles(seq_len, d_model)
    return _interleave(torch.cos(angles), torch.sin(angles))


@wrong(PE, "exponent_pair_index")
def pe_exponent_i_not_2i(seq_len, d_model):
    positions = torch.arange(seq_len, dtype=torch.float32)[:, None]
    i = torch.arange(d_model // 2, dtype=torch.float32)
    angles = positions / 10000 ** (i / d_model)
    return _interleave(torch.sin(angles), torch.cos(angles))


@wrong(PE, "wrong_values")
def pe_rate_per_column(seq_len, d_model):
    positions = torch.arange(seq_len, dtype=torch.float32)[:, None]
    j = torch.arange(d_model, dtype=torch.float32)
    angles = positions / 10000 ** (j / d_model)  # the odd column gets its own, slower rate
    encoding = torch.sin(angles)
    encoding[:, 1::2] = torch.cos(angles[:, 1::2])
    return encoding


@wrong(PE, "positions_from_one")
def pe_positions_from_one(seq_len, d_model):
    angles = _angles(seq_len, d_model, start=1)
    return _interleave(torch.sin(angles), torch.cos(angles))


@wrong(PE, "wrong_dtype")
def pe_float64(seq_len, d_model):
    positions = torch.arange(seq_len, dtype=torch.float64)[:, None]
    angles = positions / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    return _interleave(torch.sin(angles), torch.cos(angles))


@wrong(PE, "halves_instead_of_interleaved")
def pe_halves_not_interleaved(seq_len, d_model):
    angles = _angles(seq_len, d_model)
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=-1)


@wrong(PE, "wrong_base")
def pe_base_1000(seq_len, d_model):
    angles = _angles(seq_len, d_model, base=1000.0)
    return _interleave(torch.sin(angles), torch.cos(angles))


@wrong(PE, "wrong_values")
def pe_multiplied_by_rate(seq_len, d_model):
    positions = torch.arange(seq_len, dtype=torch.float32)[:, None]
    angles = positions * 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    return _interleave(torch.sin(angles), torch.cos(angles))


@wrong(PE, "wrong_values")
def pe_integer_division(seq_len, d_model):
    positions = torch.arange(seq_len)[:, None]
    two_i = torch.arange(0, d_model, 2)
    angles = (positions // 10000 ** (two_i / d_model)).float()  # floor division on integer positions
    return _interleave(torch.sin(angles), torch.cos(angles))


@wrong(PE, ("wrong_values", "wrong_base"))  # 10000^(2i/16) is 100^(2i/8): for d_model = 8, another base indeed
def pe_d_model_written_in(seq_len, d_model):
    angles = _angles(seq_len, 16)[:, : d_model // 2]  # the printed example's d_model
    return _interleave(torch.sin(angles), torch.cos(angles))


@wrong(PE, "wrong_values")
def pe_degrees(seq_len, d_model):
    angles = torch.rad2deg(_angles(seq_len, d_model))
    return _interleave(torch.sin(angles), torch.cos(angles))


@wrong(PE, "wrong_shape")
def pe_transposed(seq_len, d_model):
    angles = _angles(seq_len, d_model)
    return _interleave(torch.sin(angles), torch.cos(angles)).T.contiguous()


@wrong(PE, "wrong_base")
def pe_exponent_over_d_model_minus_one(seq_len, d_model):
    positions = torch.arange(seq_len, dtype=torch.float32)[:, None]
    angles = positions / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float32) / (d_model - 1))
    return _interleave(torch.sin(angles), torch.cos(angles))


@right(PE)
def pe_exp_log_form(seq_len, d_model):
    positions = torch.arange(seq_len).unsqueeze(1).float()
    rates = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
    encoding = torch.empty(seq_len, d_model)
    encoding[:, 0::2] = torch.sin(positions * rates)
    encoding[:, 1::2] = torch.cos(positions * rates)
    return encoding


@right(PE)
def pe_python_loops(seq_len, d_model):
    rows = []
    for pos in range(seq_len):
        row = []
        for i in range(d_model // 2):
            angle = pos / 10000 ** (2 * i / d_model)
            row += [math.sin(angle), math.cos(angle)]
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float32).reshape(seq_len, d_model)


@right(PE)
def pe_numpy_float64_then_cast(seq_len, d_model):
    angles = np.arange(seq_len)[:, None] / np.power(10000.0, np.arange(0, d_model, 2) / d_model)
    table = np.empty((seq_len, d_model))
    table[:, 0::2], table[:, 1::2] = np.sin(angles), np.cos(angles)
    return torch.from_numpy(table).float()


@wrong(PE, "delegates")
def pe_delegates_to_course_lib(seq_len, d_model):
    from course_lib.positions import sinusoidal_encoding

    return sinusoidal_encoding(seq_len, d_model)
