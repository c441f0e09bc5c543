"""What notebook 08's language model is measured against, and the loop that trains them all the same way.

- ``UnigramLM``: P(next) = count(next) / total, the same distribution at every position.
- ``BigramLM``:  P(next | previous) = (count(previous, next) + α) / (count(previous) + α · vocab), one word back.
- ``LSTMLM``:    embeddings → an LSTM → logits, with as many parameters as the Transformer it is compared with.

Every model maps tokens ``(batch, seq)`` to logits ``(batch, seq, vocab)`` (row ``t`` predicts token ``t + 1``),
so ``validation_loss`` and ``agreement_accuracy`` treat them alike. ``train_lm`` trains any of the neural ones
with Adam on the next-token loss for a fixed number of steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import torch
from torch import nn

from .._validate import CourseInputError, check_positive_int
from ..decoder import next_token_loss
from .training import fast_path


class UnigramLM(nn.Module):
    """Counts of every token in the training sequences (the first token, ``<bos>``, is never a target)."""

    def __init__(self, sequences: Sequence[Sequence[int]], vocab_size: int, alpha: float = 0.1):
        super().__init__()
        counts = torch.full((vocab_size,), alpha, dtype=torch.float64)
        for sequence in sequences:
            counts += torch.bincount(torch.as_tensor(sequence[1:]), minlength=vocab_size)
        self.register_buffer("log_probs", (counts / counts.sum()).log().float())  # (vocab,)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.log_probs.expand(*tokens.shape, -1)  # (batch, seq, vocab): the same row everywhere


class BigramLM(nn.Module):
    """A table of next-token log-probabilities given the previous token, with add-α smoothing."""

    def __init__(self, sequences: Sequence[Sequence[int]], vocab_size: int, alpha: float = 0.1):
        super().__init__()
        counts = torch.full((vocab_size, vocab_size), alpha, dtype=torch.float64)  # counts[previous, next]
        for sequence in sequences:
            ids = torch.as_tensor(sequence)
            counts.index_put_((ids[:-1], ids[1:]), torch.ones(len(ids) - 1, dtype=torch.float64), accumulate=True)
        self.register_buffer("log_probs", (counts / counts.sum(dim=1, keepdim=True)).log().float())  # (vocab, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.log_probs[tokens]  # (batch, seq, vocab): the row of each position's own token


class LSTMLM(nn.Module):
    """Token embeddings → a one-layer LSTM → a linear readout over the vocabulary.

    forward(tokens): ``(batch, seq)`` → ``(batch, seq, vocab)``. ``hidden_for(n_params, ...)`` picks the hidden size
    that gives about ``n_params`` parameters, so the comparison with a Transformer is at the same size.
    """

    def __init__(self, vocab_size: int, d_embed: int, hidden_size: int):
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("d_embed", d_embed), ("hidden_size", hidden_size)):
            check_positive_int(name, value)
        self.embed = nn.Embedding(vocab_size, d_embed)
        self.lstm = nn.LSTM(d_embed, hidden_size, batch_first=True)
        self.readout = nn.Linear(hidden_size, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.lstm(self.embed(tokens))  # (batch, seq, hidden_size)
        return self.readout(hidden)

    @staticmethod
    def parameters_for(vocab_size: int, d_embed: int, hidden_size: int) -> int:
        """embedding + 4 gates × (input, hidden, two biases) + readout."""
        h = hidden_size
        return vocab_size * d_embed + 4 * h * (d_embed + h + 2) + (h + 1) * vocab_size

    @classmethod
    def hidden_for(cls, n_params: int, vocab_size: int, d_embed: int) -> int:
        """The hidden size whose parameter count is closest to ``n_params``."""
        sizes = range(1, 2048)
        return min(sizes, key=lambda h: abs(cls.parameters_for(vocab_size, d_embed, h) - n_params))


@torch.no_grad()
def validation_loss(model: nn.Module, tokens: torch.Tensor, pad_id: int = 0) -> float:
    """Mean next-token cross-entropy in nats per (non-padding) target token of ``tokens`` ``(n, seq)``."""
    was_training = model.training
    model.eval()
    loss = next_token_loss(model(tokens), tokens, ignore_index=pad_id).item()
    model.train(was_training)
    return loss


def train_lm(
    model: nn.Module,
    make_batch: Callable[[int, torch.Generator], torch.Tensor],
    steps: int,
    *,
    lr: float = 3e-3,
    batch_size: int = 32,
    seed: int = 0,
    pad_id: int = 0,
    clip: float = 1.0,
    lr_decay: float = 0.0,
    log_every: int | None = None,
    name: str = "model",
    snapshots: Sequence[int] = (),
) -> dict:
    """Adam on ``next_token_loss`` for ``steps`` fresh batches ``make_batch(batch_size, generator)`` ``(batch, seq)``.

    ``lr_decay``: the learning rate falls linearly by this fraction of ``lr`` over the run (0: constant). Prints the mean loss every ``log_every`` steps and returns
    ``{"loss": [per step], "seconds": wall-clock, "snapshots": {step: state_dict}}``, with a copy of the weights
    after each step listed in ``snapshots`` (0: before the first step), to look at the model as it was then.
    """
    check_positive_int("steps", steps)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, foreach=True)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 - lr_decay * step / steps)
    log_every = log_every or max(1, steps // 4)
    model.train()
    losses: list[float] = []
    kept = {0: _copy_weights(model)} if 0 in snapshots else {}
    start = time.perf_counter()
    with fast_path(model):  # the same attention and LayerNorm, faster (training.fast_path)
        for step in range(1, steps + 1):
            tokens = make_batch(batch_size, generator)
            loss = next_token_loss(model(tokens), tokens, ignore_index=pad_id)
            if not torch.isfinite(loss):
                raise CourseInputError(f"{name}: the loss became {loss.item()} at step {step}; lower the learning rate")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
            if step in snapshots:
                kept[step] = _copy_weights(model)
            if step % log_every == 0 or step == steps:
                recent = losses[-log_every:]
                first = step - len(recent) + 1
                print(
                    f"{name}: step {step:4d}/{steps}, mean loss of steps {first}–{step}: {sum(recent) / len(recent):.2f} nats/token"
                )
    return {"loss": losses, "seconds": time.perf_counter() - start, "snapshots": kept}


def _copy_weights(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}
