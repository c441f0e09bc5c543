"""A vanilla recurrent network and a probe for vanishing gradients (taught in notebook 01).

    h_t = tanh(W_xh x_t + b_xh + W_hh h_{t-1} + b_hh)

The loop over time steps is the point here: step ``t`` cannot start before step ``t - 1`` ends, and
everything the network knows about the past must fit in the one vector ``h_t``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from . import _interop as interop
from ._validate import check_features, check_model_output, check_positive_int, check_tensor

__all__ = ["VanillaRNN", "input_gradients", "input_gradient_norms"]


class VanillaRNN(nn.Module):
    """A single-layer tanh RNN, written as an explicit loop over time.

    Initialised like ``torch.nn.RNN`` (uniform in ±1/√hidden_size), so it behaves like PyTorch's default.
    forward(x, h0=None): x ``(batch, seq, input_size)`` → ``(hidden_states, h_last)`` with
    hidden_states ``(batch, seq, hidden_size)`` and h_last ``(batch, hidden_size)``.
    """

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.input_size = check_positive_int("input_size", input_size)
        self.hidden_size = check_positive_int("hidden_size", hidden_size)
        self.w_xh = nn.Linear(input_size, hidden_size)
        self.w_hh = nn.Linear(hidden_size, hidden_size)
        bound = 1.0 / math.sqrt(hidden_size)
        for parameter in self.parameters():
            nn.init.uniform_(parameter, -bound, bound)

    def step(self, x_t: torch.Tensor, h_prev: torch.Tensor) -> torch.Tensor:
        """One time step: x_t ``(batch, input_size)``, h_prev ``(batch, hidden_size)`` → h_t ``(batch, hidden_size)``."""
        return torch.tanh(self.w_xh(x_t) + self.w_hh(h_prev))

    def forward(self, x: torch.Tensor, h0: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        check_features("x", x, self.input_size, f"(batch, seq, input_size={self.input_size})", min_dim=3, max_dim=3)
        batch, seq, _ = x.shape
        h = x.new_zeros(batch, self.hidden_size) if h0 is None else h0
        hidden_states = []
        for t in range(seq):  # sequential by nature: h_t needs h_{t-1}
            h = self.step(x[:, t], h)
            hidden_states.append(h)
        return torch.stack(hidden_states, dim=1), h

    def load_from_torch(self, rnn: nn.RNN) -> VanillaRNN:
        """Copy the weights of a one-layer, unidirectional, tanh ``torch.nn.RNN`` with biases and the same sizes."""
        return interop.copy_rnn(self, rnn)


def input_gradients(model: Callable[[torch.Tensor], torch.Tensor], inputs: torch.Tensor) -> torch.Tensor:
    """∂L/∂x for every input, with the loss L = ‖model output‖²: a tensor shaped like ``inputs`` ``(batch, seq, d_in)``.

    The output is whatever the model reads out at the end, e.g. the last hidden state ``(batch, d_out)``.
    """
    check_tensor("inputs", inputs, "(batch, seq, d_in)", min_dim=3, max_dim=3)
    x = inputs.detach().clone().requires_grad_(True)
    output = check_model_output(model(x))
    loss = output.pow(2).sum()
    (grad,) = torch.autograd.grad(loss, x)
    return grad


def input_gradient_norms(model: Callable[[torch.Tensor], torch.Tensor], inputs: torch.Tensor) -> torch.Tensor:
    """How strongly the loss at the end still depends on each input position.

    Runs ``model`` on ``inputs`` ``(batch, seq, d_in)``, takes the loss L = ‖model output‖², and returns ‖∂L/∂x_t‖
    for every position t as a ``(seq,)`` tensor (norm over batch and features). Divide by the last entry to see
    how the signal from ``d`` steps back compares with the newest input.

    The norm is computed as m · sqrt(Σ (g/m)²) with m = max |g|, which equals sqrt(Σ g²) but cannot underflow:
    far back in an RNN the entries of g are around 1e-25, and their squares are smaller than the smallest
    float32 number, so the plain formula would return exactly 0 for a gradient that is not 0.
    """
    grad = input_gradients(model, inputs)
    scale = grad.abs().amax(dim=(0, 2))  # (seq,): the largest entry at each position
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))
    return scale * (grad / safe[None, :, None]).pow(2).sum(dim=(0, 2)).sqrt()  # (seq,)
