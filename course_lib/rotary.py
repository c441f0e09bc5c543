"""Rotary position embedding (RoPE; Su et al., 2021): positions as rotations of the queries and keys (notebook 10).

Notebook 04 added a position vector to each token. RoPE instead *turns* every query and key by an angle that
grows with its position. Cut a head's ``d_head`` features into ``d_head / 2`` pairs; pair ``i`` of the vector at
position ``m`` turns by ``θ_i · m``:

    θ_i = base^(−2i / d_head)                         i = 0 .. d_head/2 − 1, base = 10000
    (a, b) → (a cos(mθ_i) − b sin(mθ_i),  a sin(mθ_i) + b cos(mθ_i))

A rotation keeps lengths, and turning ``q`` by ``mθ`` and ``k`` by ``nθ`` changes their dot product only through
the difference of the angles, so ``score(m, n)`` depends on ``m − n`` alone: attention sees relative positions.
Only queries and keys turn; values carry content and stay as they are. Position 0 turns by 0 (the identity).

Which features form a pair is a convention, and models disagree:
- ``pairing="halves"`` (GPT-NeoX, Llama in its usual code): pair i = features ``(i, i + d_head/2)``;
- ``pairing="interleaved"`` (the paper, GPT-J): pair i = features ``(2i, 2i + 1)``.
Both are correct when queries and keys use the same one; mixing them gives scores that are no longer relative.
"""

from __future__ import annotations

import torch

from ._validate import CourseInputError, check_tensor, shape_str

__all__ = ["rotary_angles", "apply_rotary", "rotation_matrix", "PAIRINGS"]

PAIRINGS = ("halves", "interleaved")


def rotary_angles(positions: torch.Tensor, d_head: int, base: float = 10000.0) -> torch.Tensor:
    """The angles ``m · θ_i``: positions ``(seq,)`` → ``(seq, d_head / 2)``, computed in float64."""
    if d_head % 2:
        raise CourseInputError(f"d_head must be even (RoPE turns pairs of features), got {d_head}")
    two_i = torch.arange(0, d_head, 2, dtype=torch.float64)  # 0, 2, 4, ..., d_head - 2
    theta = base ** (-two_i / d_head)  # (d_head / 2,)
    return positions.to(torch.float64)[:, None] * theta[None, :]  # (seq, d_head / 2)


def _pairs(x: torch.Tensor, pairing: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The two members ``(a, b)`` of every pair, each ``(..., d_head / 2)``."""
    if pairing == "halves":
        half = x.shape[-1] // 2
        return x[..., :half], x[..., half:]
    return x[..., 0::2], x[..., 1::2]


def _unpairs(a: torch.Tensor, b: torch.Tensor, pairing: str) -> torch.Tensor:
    """Put the pairs back where ``_pairs`` took them from: ``(..., d_head)``."""
    if pairing == "halves":
        return torch.cat([a, b], dim=-1)
    return torch.stack([a, b], dim=-1).flatten(-2)  # a0 b0 a1 b1 ...


def apply_rotary(
    x: torch.Tensor, positions: torch.Tensor | None = None, pairing: str = "halves", base: float = 10000.0
) -> torch.Tensor:
    """Turn each pair of features of ``x`` ``(..., seq, d_head)`` by ``m · θ_i``; same shape back.

    ``positions``: ``(seq,)`` integer positions ``m`` (default ``0, 1, ..., seq − 1``; a KV cache passes the
    absolute positions of the new tokens). Apply it to the queries and the keys, never to the values.
    """
    a, b = _pairs(_check(x, pairing), pairing)  # each (..., seq, d_head / 2)
    seq, d_head = x.shape[-2], x.shape[-1]
    positions = torch.arange(seq, device=x.device) if positions is None else positions
    if positions.shape != (seq,):
        raise CourseInputError(f"positions must be ({seq},), one per row of x, got {shape_str(positions.shape)}")
    angles = rotary_angles(positions, d_head, base).to(device=x.device)  # (seq, d_head / 2)
    cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
    return _unpairs(a * cos - b * sin, a * sin + b * cos, pairing)  # (..., seq, d_head)


def _check(x, pairing: str) -> torch.Tensor:
    check_tensor("x", x, "(..., seq, d_head)", min_dim=2)
    if pairing not in PAIRINGS:
        raise CourseInputError(f"pairing must be 'halves' or 'interleaved', got {pairing!r}")
    if x.shape[-1] % 2:
        raise CourseInputError(f"d_head must be even (RoPE turns pairs of features), got x {shape_str(x.shape)}")
    return x


def rotation_matrix(position: int, d_head: int, pairing: str = "halves", base: float = 10000.0) -> torch.Tensor:
    """The ``(d_head, d_head)`` float64 matrix ``R_m`` with ``apply_rotary(x)[m] = R_m x[m]`` (for teaching and tests).

    It is block-diagonal (``interleaved``) or a permuted block-diagonal (``halves``) of 2×2 rotations.
    """
    eye = torch.eye(d_head, dtype=torch.float64)[:, None, :]  # (d_head, 1, d_head): each basis vector at one place
    turned = apply_rotary(eye, torch.tensor([position]), pairing, base)[:, 0, :]  # (d_head, d_head): rows R e_j
    return turned.T
