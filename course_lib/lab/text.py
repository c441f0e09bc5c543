"""Real text for notebook 11, and what its models are measured with: bits per byte and samples.

- ``python_docs()``: the Python documentation topics that ship with every Python (``pydoc_data.topics``, the text
  of ``help("topics")``; © Python Software Foundation, PSF License), about 465,000 characters; nothing downloads.
- ``python_source(modules)``: standard-library Python source read with ``inspect.getsource``.
- ``bits_per_byte``: the model's cross-entropy summed over every predicted token, in bits, divided by the UTF-8
  bytes those tokens stand for:

      bits per byte = Σ_t −log₂ p(token_{t+1} | tokens_{≤t}) / Σ_t bytes(token_{t+1})

  so models that cut the same text into different tokens are compared on the same scale.
- ``window_batches(ids, length)``: random windows of a token stream, the ``make_batch`` of ``train_lm``.
- ``sample_ids``: a continuation drawn token by token from any model that maps ``(batch, seq)`` → logits.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence

import torch
from torch import nn

from .._validate import CourseInputError, check_positive_int

DOCS_SOURCE = "pydoc_data.topics (the Python documentation topics shipped with Python; © PSF, PSF License)"
SOURCE_MODULES = ("textwrap", "string", "json.decoder", "json.encoder", "shlex", "fractions", "calendar")


def python_docs() -> str:
    """The documentation topics of the running Python, joined in the order of their names (about 465,000 characters)."""
    from pydoc_data.topics import topics

    return "".join(topics[name] for name in sorted(topics))


def python_source(modules: Sequence[str] = SOURCE_MODULES) -> str:
    """The source code of standard-library ``modules``, joined (Python, not prose)."""
    import importlib

    return "\n".join(inspect.getsource(importlib.import_module(name)) for name in modules)


def split(text: str, fraction: float = 0.9) -> tuple[str, str]:
    """``text[:cut]``, ``text[cut:]`` with ``cut = fraction · len(text)``: the part to learn from and the held-out rest."""
    cut = int(len(text) * fraction)
    return text[:cut], text[cut:]


def window_batches(ids: Sequence[int], length: int):
    """``make_batch(batch_size, generator)`` → ``(batch_size, length)`` windows of ``ids`` at random starts."""
    check_positive_int("length", length)
    stream = torch.as_tensor(ids)
    if len(stream) <= length:
        raise CourseInputError(f"the token stream has {len(stream)} tokens, fewer than a window of {length}")

    def make_batch(batch_size: int, generator: torch.Generator) -> torch.Tensor:
        starts = torch.randint(len(stream) - length, (batch_size,), generator=generator)  # (batch,)
        return stream[starts[:, None] + torch.arange(length)]  # (batch, length)

    return make_batch


@torch.no_grad()
def bits_per_byte(model: nn.Module, ids: Sequence[int], token_bytes: Sequence[int], length: int) -> float:
    """Σ −log₂ p(next token) / Σ bytes of the next tokens, over ``ids`` cut into windows of ``length`` tokens.

    ``token_bytes[i]`` is the number of UTF-8 bytes token ``i`` stands for. Each window's first token is context
    only; every other token is predicted from the tokens before it in its window.
    """
    stream = torch.as_tensor(ids)
    n = len(stream) // length * length
    windows = stream[:n].reshape(-1, length)  # (windows, length)
    was_training = model.training
    model.eval()
    log_probs = torch.log_softmax(model(windows).double(), dim=-1)[:, :-1]  # (windows, length - 1, vocab)
    model.train(was_training)
    targets = windows[:, 1:]  # (windows, length - 1)
    nats = -log_probs.gather(-1, targets[..., None]).sum().item()
    n_bytes = torch.as_tensor(token_bytes)[targets].sum().item()
    return nats / math.log(2) / n_bytes


@torch.no_grad()
def sample_ids(
    model: nn.Module, prompt: Sequence[int], steps: int, *, temperature: float = 1.0, seed: int = 0, context: int = 64
) -> list[int]:
    """``prompt`` followed by ``steps`` tokens drawn one at a time from ``softmax(logits / temperature)``.

    Each step feeds the model the last ``context`` tokens (its window) and draws the next token from the last row.
    Works for any model ``(batch, seq)`` → ``(batch, seq, vocab)``: the decoder and the count baselines alike.
    """
    generator = torch.Generator().manual_seed(seed)
    was_training = model.training
    model.eval()
    ids = list(prompt)
    for _ in range(steps):
        logits = model(torch.tensor([ids[-context:]]))[0, -1].double()  # (vocab,)
        probs = torch.softmax(logits / temperature, dim=-1)
        ids.append(int(torch.multinomial(probs, 1, generator=generator)))
    model.train(was_training)
    return ids


def shown(text: str) -> str:
    """``text`` on one line for printing: a new line shows as ``⏎``, any other control character as ``�``."""
    return "".join(" ⏎ " if c == "\n" else c if c.isprintable() or c == " " else "�" for c in text)
