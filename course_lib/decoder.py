"""The decoder-only language model: predict every next token from the tokens before it (taught in notebook 08).

    x_0      = E[tokens] + P[positions]                    token embedding + learned position embedding
    x_l      = DecoderBlock_l(x_{l-1})  for l = 1..n_blocks  pre-LN blocks whose attention is causal
    logits   = LayerNorm(x_L) Eᵀ                           the unembedding; with weight tying it *is* Eᵀ
    loss     = mean_t −log softmax(logits_t)[tokens_{t+1}]  next-token cross-entropy (targets shifted by one)

A decoder block is the encoder block of notebook 06 with one change: position ``i`` may attend to ``0..i`` only
(``causal_mask`` of notebook 02), so the prediction at ``i`` cannot peek at the token it must predict.

Generation appends one token at a time. Without a cache every step recomputes the keys and values of the whole
prefix; with a ``KVCache`` each block keeps the keys and values it already computed and only the new token's
are added, so a step costs one token's work (plus attention over the cached positions).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ._validate import (
    check_cache_argument,
    check_generate,
    check_lm_input,
    check_loss_inputs,
    check_positive_int,
    shape_str,
)
from .blocks import LayerNorm, TransformerEncoderBlock

__all__ = ["KVCache", "DecoderBlock", "DecoderLM", "next_token_loss", "generate"]


class KVCache:
    """The keys and values every block has computed so far, so generation never recomputes them.

    ``keys[b]`` and ``values[b]`` of block ``b`` are ``(batch, n_kv_heads, positions, d_head)``, or ``None``
    before the first call. ``length`` is the number of cached positions: the position of the next token, which
    the model uses as the offset of its position embeddings. ``reset()`` empties the cache for a new prompt.

    Memory: ``nbytes`` = 2 (keys and values) × n_blocks × batch × n_kv_heads × positions × d_head × bytes per number,
    with ``n_kv_heads = num_heads`` unless the attention is grouped (GQA, notebook 10).
    """

    def __init__(self, n_blocks: int):
        self.n_blocks = check_positive_int("n_blocks", n_blocks)
        self.reset()

    def reset(self) -> None:
        """Forget every cached key and value (the next call starts again at position 0)."""
        self.keys: list[torch.Tensor | None] = [None] * self.n_blocks
        self.values: list[torch.Tensor | None] = [None] * self.n_blocks

    def positions(self, block: int) -> int:
        """Number of positions cached for ``block``."""
        return 0 if self.keys[block] is None else self.keys[block].shape[2]

    @property
    def length(self) -> int:
        """Number of cached positions (0 when empty); between two calls of the model every block holds as many."""
        return self.positions(0)

    def append(self, block: int, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add the new positions' ``keys``/``values`` ``(batch, heads, new, d_head)`` of ``block``; return all so far."""
        if self.keys[block] is not None:
            keys = torch.cat([self.keys[block], keys], dim=2)  # (batch, heads, old + new, d_head)
            values = torch.cat([self.values[block], values], dim=2)
        self.keys[block], self.values[block] = keys, values
        return keys, values

    @property
    def nbytes(self) -> int:
        """Bytes held by the cached keys and values."""
        return sum(t.numel() * t.element_size() for t in self.keys + self.values if t is not None)

    def __repr__(self) -> str:
        shape = "empty" if self.keys[0] is None else shape_str(self.keys[0].shape)
        return f"KVCache(n_blocks={self.n_blocks}, length={self.length}, keys per block {shape}, {self.nbytes} bytes)"


class DecoderBlock(TransformerEncoderBlock):
    """A pre-LN Transformer block with causal self-attention, able to read and extend a KV cache.

        x = x + MHA(LN₁(x), causal);   x = x + FFN(LN₂(x))

    It is ``TransformerEncoderBlock(norm_first=True)`` with the causal mask built in, so it equals
    ``torch.nn.TransformerEncoderLayer(norm_first=True)`` called with a causal mask (``load_from_torch`` copies one).
    forward(x, cache=None, index=0): x ``(batch, new, d_model)`` holds the new positions; with a cache, their keys
    and values are appended to block ``index``'s and the new queries attend to every cached position and to the
    new ones up to themselves. ``attention_weights``: ``(batch, num_heads, new, positions)``.
    """

    def __init__(self, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.0, n_kv_heads: int | None = None):
        super().__init__(d_model, num_heads, d_ff, dropout, norm_first=True, n_kv_heads=n_kv_heads)
        self.self_attention.causal = True  # new query i sees keys 0..start+i, start = the cached positions

    def forward(self, x: torch.Tensor, cache: KVCache | None = None, index: int = 0) -> torch.Tensor:
        check_cache_argument(cache)
        x = x + self.dropout(self.attend(self.norm1(x), None, cache, index))
        x = x + self.dropout(self.feed_forward(self.norm2(x)))
        return x


class DecoderLM(nn.Module):
    """A GPT-style decoder-only language model.

    tokens ``(batch, seq)`` of ids in ``0..vocab_size-1`` → logits ``(batch, seq, vocab_size)``: row ``t`` scores
    every candidate for token ``t + 1``. With ``tie_weights=True`` the unembedding uses the embedding's own tensor
    (``unembed.weight is embed.weight``), which saves ``vocab_size × d_model`` parameters.
    forward(tokens, cache=None): with a ``KVCache``, ``tokens`` are the *new* tokens, placed after the
    ``cache.length`` cached positions; the cache is extended in place. ``n_kv_heads``: GQA, a smaller cache.
    """

    def __init__(self, vocab_size, d_model, num_heads, n_blocks, d_ff, max_len, tie_weights=True, n_kv_heads=None):
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("n_blocks", n_blocks), ("max_len", max_len)):
            check_positive_int(name, value)
        self.vocab_size, self.d_model, self.max_len, self.n_blocks = vocab_size, d_model, max_len, n_blocks
        self.embed = nn.Embedding(vocab_size, d_model)  # E: (vocab_size, d_model)
        self.positions = nn.Embedding(max_len, d_model)  # P: (max_len, d_model)
        nn.init.normal_(self.embed.weight, std=0.02)  # small starts, as in GPT-2
        nn.init.normal_(self.positions.weight, std=0.01)
        self.blocks = nn.ModuleList(DecoderBlock(d_model, num_heads, d_ff, 0.0, n_kv_heads) for _ in range(n_blocks))
        self.final_norm = LayerNorm(d_model)
        self.unembed = nn.Linear(d_model, vocab_size, bias=False)  # weight: (vocab_size, d_model)
        if tie_weights:
            self.unembed.weight = self.embed.weight  # one tensor, two uses

    def new_cache(self) -> KVCache:
        """An empty cache with one slot per block."""
        return KVCache(self.n_blocks)

    def forward(self, tokens: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        start = check_lm_input(self, tokens, cache)  # the offset: new tokens sit after the cached ones
        positions = torch.arange(start, start + tokens.shape[1], device=tokens.device)  # (seq,)
        x = self.embed(tokens) + self.positions(positions)  # (batch, seq, d_model)
        for index, block in enumerate(self.blocks):
            x = block(x, cache, index)
        return self.unembed(self.final_norm(x))  # (batch, seq, vocab_size)

    @property
    def attention_weights(self) -> list[torch.Tensor | None]:
        """Each block's weights of the last call, ``(batch, num_heads, seq_q, seq_k)``."""
        return [block.attention_weights for block in self.blocks]


def next_token_loss(logits: torch.Tensor, tokens: torch.Tensor, ignore_index: int | None = None) -> torch.Tensor:
    """Mean cross-entropy of predicting ``tokens[:, t + 1]`` from ``logits[:, t]`` (nats per token).

    logits ``(batch, seq, vocab)``, tokens ``(batch, seq)``. The last position has no next token and the first
    token is never a target, so ``seq - 1`` predictions per row count. ``ignore_index`` (e.g. a padding id)
    leaves those targets out of the mean.
    """
    check_loss_inputs(logits, tokens)
    predictions = logits[:, :-1]  # (batch, seq-1, vocab): position t predicts ...
    targets = tokens[:, 1:]  # (batch, seq-1):           ... token t+1
    return nn.functional.cross_entropy(
        predictions.reshape(-1, logits.shape[-1]),
        targets.reshape(-1),
        ignore_index=-100 if ignore_index is None else ignore_index,
    )


@torch.no_grad()
def generate(
    model: DecoderLM,
    prompt: torch.Tensor,
    steps: int,
    *,
    sampler: Callable[..., torch.Tensor],
    use_cache: bool = True,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Append ``steps`` tokens to ``prompt`` ``(batch, prompt_len)``, one at a time; return ``(batch, prompt_len + steps)``.

    ``sampler(logits, generator=generator)`` maps the last position's logits ``(batch, vocab)`` to token ids
    ``(batch,)`` (see ``course_lib.sampling``). With ``use_cache`` the prompt is read once and every later step
    feeds only the newest token; without, every step feeds the whole sequence so far. Both give the same tokens.
    """
    check_generate(model, prompt, steps)
    was_training = model.training
    model.eval()
    tokens = prompt
    cache = model.new_cache() if use_cache else None
    new = prompt  # what the model has not read yet
    for _ in range(steps):
        logits = model(new if use_cache else tokens, cache)  # (batch, seq, vocab)
        next_token = sampler(logits[:, -1], generator=generator).reshape(-1, 1)  # (batch, 1)
        tokens = torch.cat([tokens, next_token.to(tokens.dtype)], dim=1)
        new = next_token
    model.train(was_training)
    return tokens
