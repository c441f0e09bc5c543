"""Stand-ins for the parts a check hands to a learner's function, shared by the checks (which build them) and the
grader's server in the sandbox (which rebuilds them from plain data): one definition, in a module the sandbox's copy
of the course keeps (it holds neither ``checks`` nor most of ``tools``).
"""

from __future__ import annotations

import torch


class Sublayer:
    """A fixed stand-in for attention or the feed-forward network: tanh(x W + c) · 2."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor):
        self.weight, self.bias = weight, bias

    def __call__(self, h: torch.Tensor) -> torch.Tensor:
        return torch.tanh(h @ self.weight + self.bias) * 2.0

    def __repr__(self) -> str:
        return "sublayer"


class CachedLM:
    """The parts of a one-block, one-head ``DecoderLM``, as plain functions (what ``kv_cache_step`` is given).

    embed(tokens, positions):  tokens ``(batch, n)``, positions ``(n,)`` → ``E[tokens] + P[positions]`` ``(batch, n, d_model)``
    project(x):                ``(batch, n, d_model)`` → ``(queries, keys, values)``, each ``(batch, n, d_model)``
    readout(x, attended):      the residual, the feed-forward sublayer and the unembedding → logits ``(batch, n, vocab)``
    """

    def __init__(self, model):  # a DecoderLM
        self.model = model
        self.d_model = model.d_model
        self.vocab_size = model.vocab_size
        self.max_len = model.max_len

    def embed(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        positions = torch.as_tensor(positions)
        if positions.numel() and (int(positions.min()) < 0 or int(positions.max()) >= self.max_len):
            raise IndexError(
                f"positions must lie between 0 and {self.max_len - 1}, got {int(positions.min())} .. "
                f"{int(positions.max())}"
            )
        return self.model.embed(tokens) + self.model.positions(positions)

    def project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        block = self.model.blocks[0]
        h = block.norm1(x)
        attention = block.self_attention
        return attention.w_q(h), attention.w_k(h), attention.w_v(h)

    def readout(self, x: torch.Tensor, attended: torch.Tensor) -> torch.Tensor:
        block = self.model.blocks[0]
        x = x + block.self_attention.w_o(attended)
        x = x + block.feed_forward(block.norm2(x))
        return self.model.unembed(self.model.final_norm(x))

    def __repr__(self) -> str:
        return f"CachedLM(vocab_size={self.vocab_size}, d_model={self.d_model}, one block, one head)"
