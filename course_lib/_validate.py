"""Friendly input checks for everything a learner calls.

A learner who passes the wrong thing should read one short sentence naming the argument and what was
expected, e.g. ``queries must be (batch, seq, d_k), got (5, 8)``, not a traceback from deep inside torch.
"""

from __future__ import annotations

try:
    import torch
except (
    ModuleNotFoundError
):  # only the error classes are usable without torch (`python -m course_lib doctor` on a bare Python)
    torch = None

from ._errors import CommandError, CourseInputError  # noqa: F401  (both are imported from here too)


def shape_str(shape) -> str:
    """Format a shape as ``(5, 8)``."""
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def check_tensor(name: str, value, expected: str, min_dim: int = 1, max_dim: int | None = None) -> torch.Tensor:
    """Check that ``value`` is a floating-point tensor with between ``min_dim`` and ``max_dim`` axes.

    ``expected`` is the shape as the learner should read it, e.g. ``"(batch, seq, d_k)"``.
    """
    if not isinstance(value, torch.Tensor):
        kind = type(value).__name__
        hint = " (convert it with torch.as_tensor)" if kind == "ndarray" else ""
        raise CourseInputError(f"{name} must be a torch.Tensor of shape {expected}, got {kind}{hint}")
    if value.dim() < min_dim or (max_dim is not None and value.dim() > max_dim):
        raise CourseInputError(f"{name} must be {expected}, got {shape_str(value.shape)}")
    if not value.is_floating_point():
        raise CourseInputError(f"{name} must hold floating-point numbers (float32 or float64), got {value.dtype}")
    return value


def check_features(
    name: str, value, size: int, expected: str, min_dim: int = 1, max_dim: int | None = None
) -> torch.Tensor:
    """Check ``value`` like ``check_tensor`` and that its last axis (the features) has ``size`` entries."""
    check_tensor(name, value, expected, min_dim=min_dim, max_dim=max_dim)
    if value.shape[-1] != size:
        raise CourseInputError(f"{name} must be {expected}, got {shape_str(value.shape)}")
    return value


def check_positive_int(name: str, value) -> int:
    """Check that ``value`` is a positive whole number."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise CourseInputError(f"{name} must be a positive whole number, got {value!r}")
    return value


def broadcast_shape(*shapes) -> tuple[int, ...] | None:
    """The shape NumPy/PyTorch broadcasting gives ``shapes``, or None if they do not broadcast.

    The same rule as ``torch.broadcast_shapes``, in plain Python: that one imports a symbolic-maths library on its
    first call (0.3 s) and costs 40 µs a call after it, twice per attention layer per training step.
    """
    shapes = [tuple(shape) for shape in shapes]
    ndim = max((len(shape) for shape in shapes), default=0)
    result = []
    for axis in range(-ndim, 0):  # align the shapes at their last axis
        sizes = {shape[axis] for shape in shapes if len(shape) >= -axis} - {1}
        if len(sizes) > 1:
            return None
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


def check_mask(mask, scores_shape) -> torch.Tensor:
    """Check that ``mask`` is a boolean tensor that broadcasts to exactly ``scores_shape`` ``(..., seq_q, seq_k)``.

    A mask with more axes than the scores (e.g. ``(batch, 1, 1, seq_k)`` on 3-D queries) would make the result
    bigger than the scores, so it is refused with its shape and the shapes that fit.
    """
    if not isinstance(mask, torch.Tensor):
        raise CourseInputError(f"mask must be a boolean torch.Tensor (True = may attend), got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise CourseInputError(f"mask must have dtype torch.bool (True = may attend), got {mask.dtype}")
    scores_shape = tuple(scores_shape)
    fits = broadcast_shape(mask.shape, scores_shape) == scores_shape
    if not fits:
        extra = (
            f"; it has {mask.dim()} axes but the scores have {len(scores_shape)}"
            if mask.dim() > len(scores_shape)
            else ""
        )
        raise CourseInputError(
            f"mask of shape {shape_str(mask.shape)} does not broadcast to the scores {shape_str(scores_shape)} "
            f"(..., seq_q, seq_k){extra}: each axis of the mask must be 1 or the scores' size, e.g. "
            f"(seq_q, seq_k) = {shape_str(scores_shape[-2:])} or (..., 1, seq_k)"
        )
    return mask


# --- one check per entry point of the concept modules (attention, multihead, positions, blocks, decoder, ...) ---


def check_softmax(scores, dim) -> None:
    """``softmax(scores, dim)``: a floating-point tensor and one of its axes."""
    check_tensor("scores", scores, "a tensor of scores, e.g. (batch, seq_q, seq_k)")
    if isinstance(dim, bool) or not isinstance(dim, int) or not -scores.dim() <= dim < scores.dim():
        raise CourseInputError(
            f"dim must be an axis of scores {shape_str(scores.shape)}, between {-scores.dim()} and {scores.dim() - 1}, got {dim!r}"
        )


def check_attention_inputs(queries, keys, values, mask) -> None:
    """``scaled_dot_product_attention``: shapes that fit Q Kᵀ and weights @ V, and a mask that fits the scores."""
    check_tensor("queries", queries, "(batch, seq_q, d_k)", min_dim=2)
    check_tensor("keys", keys, "(batch, seq_k, d_k)", min_dim=2)
    check_tensor("values", values, "(batch, seq_k, d_v)", min_dim=2)
    if queries.shape[-1] != keys.shape[-1]:
        raise CourseInputError(
            f"queries and keys must share their last axis d_k, got queries {shape_str(queries.shape)} "
            f"and keys {shape_str(keys.shape)}"
        )
    if keys.shape[-2] != values.shape[-2]:
        raise CourseInputError(
            f"keys and values must have one row per position (same seq_k), got keys {shape_str(keys.shape)} "
            f"and values {shape_str(values.shape)}"
        )
    for name, other in (("keys", keys), ("values", values)):
        if broadcast_shape(queries.shape[:-2], other.shape[:-2]) is None:
            raise CourseInputError(
                f"queries and {name} must have the same leading (batch, ...) axes, got queries {shape_str(queries.shape)} "
                f"and {name} {shape_str(other.shape)}"
            )
    if mask is not None:
        leading = broadcast_shape(queries.shape[:-2], keys.shape[:-2])
        check_mask(mask, (*leading, queries.shape[-2], keys.shape[-2]))


def check_lengths(lengths, seq_len: int):
    """``padding_mask``: 1-D integer lengths between 0 and ``seq_len``."""
    check_positive_int("seq_len", seq_len)
    if lengths.dim() != 1 or lengths.is_floating_point():
        raise CourseInputError(
            f"lengths must be a 1-D integer tensor (batch,), got {lengths.dtype} {shape_str(lengths.shape)}"
        )
    if (lengths < 0).any() or (lengths > seq_len).any():
        raise CourseInputError(f"lengths must lie between 0 and seq_len={seq_len}, got {lengths.tolist()}")
    return lengths


def check_heads(d_model, num_heads) -> int:
    """``d_model`` and ``num_heads`` positive, and the heads split ``d_model`` evenly; returns ``num_heads``."""
    check_positive_int("d_model", d_model)
    check_positive_int("num_heads", num_heads)
    if d_model % num_heads != 0:
        raise CourseInputError(f"d_model={d_model} must split evenly across num_heads={num_heads}")
    return num_heads


def check_kv_heads(num_heads: int, n_kv_heads) -> int:
    """GQA: ``n_kv_heads`` (``None`` means ``num_heads``) is positive and divides ``num_heads``; returns it."""
    if n_kv_heads is None:
        return num_heads
    check_positive_int("n_kv_heads", n_kv_heads)
    if num_heads % n_kv_heads != 0:
        raise CourseInputError(
            f"num_heads={num_heads} must be a multiple of n_kv_heads={n_kv_heads}: each key/value head serves "
            "a whole group of query heads"
        )
    return n_kv_heads


def check_multihead_inputs(d_model: int, queries, keys, values, mask) -> None:
    """``MultiHeadAttention.forward``: three ``(batch, seq, d_model)`` tensors that fit together, and a mask form."""
    for name, tensor in (("queries", queries), ("keys", keys), ("values", values)):
        check_features(name, tensor, d_model, f"(batch, seq, d_model={d_model})", min_dim=3, max_dim=3)
    if not keys.shape[0] == values.shape[0] == queries.shape[0]:
        raise CourseInputError(
            f"queries, keys and values must have the same batch size, got queries {shape_str(queries.shape)}, "
            f"keys {shape_str(keys.shape)} and values {shape_str(values.shape)}"
        )
    if keys.shape[1] != values.shape[1]:
        raise CourseInputError(
            f"keys and values must have one row per position (same seq_k), got keys {shape_str(keys.shape)} "
            f"and values {shape_str(values.shape)}"
        )
    if isinstance(mask, torch.Tensor) and mask.dim() not in (1, 2, 3, 4):
        raise CourseInputError(
            f"mask must be (seq_q, seq_k), (batch, seq_q, seq_k) or (batch, 1, seq_k), got {shape_str(mask.shape)}"
        )


def check_positions_input(x, d_model: int, max_len: int) -> None:
    """Positional encodings: ``x`` is ``(batch, seq, d_model)`` with at most ``max_len`` positions."""
    check_features("x", x, d_model, f"(batch, seq, d_model={d_model})", min_dim=3, max_dim=3)
    if x.shape[1] > max_len:
        raise CourseInputError(f"the sequence has {x.shape[1]} positions but max_len is {max_len}")


def check_model_output(output):
    """``input_gradients``: the model must return a tensor."""
    if not isinstance(output, torch.Tensor):
        raise CourseInputError(f"model must return a tensor, got {type(output).__name__}")
    return output


def check_token_ids(name: str, tokens, vocab_size: int | None = None):
    """Check that ``tokens`` is an integer tensor ``(batch, seq)`` of ids in ``0..vocab_size-1``."""
    if (
        not isinstance(tokens, torch.Tensor)
        or tokens.dim() != 2
        or tokens.is_floating_point()
        or tokens.dtype == torch.bool
    ):
        got = f"{tokens.dtype} {shape_str(tokens.shape)}" if isinstance(tokens, torch.Tensor) else type(tokens).__name__
        raise CourseInputError(f"{name} must be integer token ids (batch, seq), got {got}")
    if vocab_size is not None and tokens.numel() and (tokens.min() < 0 or tokens.max() >= vocab_size):
        raise CourseInputError(
            f"token ids must lie between 0 and vocab_size - 1 = {vocab_size - 1}, "
            f"got ids from {tokens.min().item()} to {tokens.max().item()}"
        )
    return tokens


def check_cache_argument(cache) -> None:
    """``DecoderBlock.forward``: the second argument is a cache, not a mask."""
    if isinstance(cache, torch.Tensor):
        raise CourseInputError(
            "DecoderBlock builds its causal mask itself: pass a KVCache (or nothing) as its second argument"
        )


def check_lm_input(model, tokens, cache) -> int:
    """``DecoderLM.forward``: token ids that fit the vocabulary and, after the cached ones, ``max_len``.

    Returns the position of the first new token (the number of cached positions)."""
    check_token_ids("tokens", tokens, model.vocab_size)
    if cache is not None and cache.n_blocks != model.n_blocks:
        raise CourseInputError(f"the cache has {cache.n_blocks} blocks but the model {model.n_blocks}")
    start = 0 if cache is None else cache.length
    if start + tokens.shape[1] > model.max_len:
        raise CourseInputError(
            f"{start} cached + {tokens.shape[1]} new positions exceed max_len={model.max_len} (no position vector)"
        )
    return start


def check_loss_inputs(logits, tokens) -> None:
    """``next_token_loss``: logits ``(batch, seq, vocab)`` and token ids ``(batch, seq)``."""
    check_tensor("logits", logits, "(batch, seq, vocab)", min_dim=3, max_dim=3)
    check_token_ids("tokens", tokens)
    if logits.shape[:2] != tokens.shape:
        raise CourseInputError(
            f"logits {shape_str(logits.shape)} and tokens {shape_str(tokens.shape)} must share (batch, seq)"
        )


def check_generate(model, prompt, steps) -> None:
    """``generate``: a non-empty prompt of token ids and a whole number of steps."""
    check_token_ids("prompt", prompt, model.vocab_size)
    if prompt.shape[1] == 0:
        raise CourseInputError("the prompt needs at least one token to predict the next from")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise CourseInputError(f"steps must be a non-negative integer, got {steps!r}")


def check_logits(logits) -> None:
    """Sampling: a floating-point tensor of logits ``(..., vocab)``."""
    check_tensor("logits", logits, "(batch, vocab)")


def check_temperature(tau) -> None:
    if not tau > 0:
        raise CourseInputError(f"the temperature τ must be positive, got {tau} (τ → 0 is greedy: use greedy)")


def check_top_k(logits, k) -> None:
    check_logits(logits)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k:
        raise CourseInputError(f"k must be an integer >= 1, got {k!r}")


def check_top_p(logits, p) -> None:
    check_logits(logits)
    if not 0 < p <= 1:
        raise CourseInputError(f"p must lie in (0, 1], got {p}")
