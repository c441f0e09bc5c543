"""The small sequence classifiers the notebooks train and compare.

Both read a batch of token ids and predict one class per sequence:

- ``TransformerClassifier``: embeddings (+ optional positions) → encoder blocks → read one position.
- ``RecurrentClassifier``: embeddings → RNN / LSTM / GRU → the last hidden state.

Token ids may be ``(batch, seq)`` or ``(batch, seq, fields)``; with fields, a token is the sum of the
embeddings of its fields (e.g. a key id and a value id in the recall task), all from one shared table.
"""

from __future__ import annotations

import torch
from torch import nn

from .._validate import CourseInputError, shape_str
from ..blocks import TransformerEncoder
from ..positions import LearnedPositionalEmbedding, SinusoidalPositionalEncoding


def _embed(embedding: nn.Embedding, tokens: torch.Tensor) -> torch.Tensor:
    if not isinstance(tokens, torch.Tensor) or tokens.is_floating_point() or tokens.dim() not in (2, 3):
        got = shape_str(tokens.shape) if isinstance(tokens, torch.Tensor) else type(tokens).__name__
        raise CourseInputError(f"tokens must be integer ids (batch, seq) or (batch, seq, fields), got {got}")
    if tokens.numel() and (tokens.min() < 0 or tokens.max() >= embedding.num_embeddings):
        raise CourseInputError(
            f"token ids must lie between 0 and vocab_size - 1 = {embedding.num_embeddings - 1}, "
            f"got ids from {tokens.min().item()} to {tokens.max().item()}"
        )
    x = embedding(tokens)  # (batch, seq, d) or (batch, seq, fields, d)
    return x.sum(dim=2) if tokens.dim() == 3 else x


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


class TransformerClassifier(nn.Module):
    """Token ids → Transformer encoder → one class per sequence.

    positions: ``"none"``, ``"sinusoidal"`` or ``"learned"``.
    readout:   ``"last"`` (the last position), ``"first"`` (a CLS token at position 0) or ``"mean"``.
    forward(tokens, mask=None): tokens ``(batch, seq)`` or ``(batch, seq, fields)`` → logits ``(batch, num_classes)``.
    ``attention_weights`` lists each block's weights ``(batch, num_heads, seq, seq)`` from the last call.
    """

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        d_model: int = 64,
        num_heads: int = 2,
        d_ff: int = 128,
        num_layers: int = 1,
        max_len: int = 128,
        positions: str = "none",
        readout: str = "last",
        norm_first: bool = True,
        dropout: float = 0.0,
    ):
        super().__init__()
        if positions not in ("none", "sinusoidal", "learned"):
            raise CourseInputError(f"positions must be 'none', 'sinusoidal' or 'learned', got {positions!r}")
        if readout not in ("last", "first", "mean"):
            raise CourseInputError(f"readout must be 'last', 'first' or 'mean', got {readout!r}")
        self.readout = readout
        self.embedding = nn.Embedding(vocab_size, d_model)
        if positions == "sinusoidal":
            self.positions = SinusoidalPositionalEncoding(d_model, max_len)
        elif positions == "learned":
            self.positions = LearnedPositionalEmbedding(max_len, d_model)
        else:
            self.positions = nn.Identity()
        self.encoder = TransformerEncoder(num_layers, d_model, num_heads, d_ff, dropout, norm_first)
        self.head = nn.Linear(d_model, num_classes)

    def encode(self, tokens: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """tokens → contextual vectors ``(batch, seq, d_model)``."""
        x = self.positions(_embed(self.embedding, tokens))
        return self.encoder(x, mask)

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        h = self.encode(tokens, mask)  # (batch, seq, d_model)
        if self.readout == "last":
            pooled = h[:, -1]
        elif self.readout == "first":
            pooled = h[:, 0]
        else:
            pooled = h.mean(dim=1)
        return self.head(pooled)  # (batch, num_classes)

    @property
    def attention_weights(self) -> list[torch.Tensor | None]:
        return self.encoder.attention_weights


class RecurrentClassifier(nn.Module):
    """Token ids → embeddings → a recurrent network → the last hidden state → one class per sequence.

    kind: ``"rnn"`` (tanh), ``"lstm"`` or ``"gru"``, PyTorch's fused implementations with default init.
    forward(tokens): ``(batch, seq)`` or ``(batch, seq, fields)`` → logits ``(batch, num_classes)``.
    Everything the model knows about the sequence must pass through one ``hidden_size`` vector.
    """

    def __init__(
        self, vocab_size: int, num_classes: int, hidden_size: int = 64, embed_dim: int = 64, kind: str = "lstm"
    ):
        super().__init__()
        cells = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}
        if kind not in cells:
            raise CourseInputError(f"kind must be 'rnn', 'lstm' or 'gru', got {kind!r}")
        self.kind = kind
        self.embedding = nn.Embedding(vocab_size, embed_dim)
        self.rnn = cells[kind](embed_dim, hidden_size, batch_first=True)
        self.head = nn.Linear(hidden_size, num_classes)

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        hidden_states, _ = self.rnn(_embed(self.embedding, tokens))  # (batch, seq, hidden_size)
        return self.head(hidden_states[:, -1])  # (batch, num_classes)
