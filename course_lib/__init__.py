"""course_lib: the one tested implementation of every building block the course teaches.

One module per concept, in teaching order:

- ``recurrent``   notebook 01: a vanilla RNN and a vanishing-gradient probe
- ``attention``   notebook 02: softmax, scaled dot-product attention, masks
- ``multihead``   notebook 03: split/merge heads, multi-head attention
- ``positions``   notebook 04: sinusoidal and learned positional encodings
- ``blocks``      notebooks 05–06: LayerNorm, residual connections, feed-forward, encoder block and stack
- ``decoder``     notebook 08: the decoder-only language model, its next-token loss, the KV cache, generation

On top of them: ``models`` (the small classifiers the notebooks train), ``sampling`` (greedy, temperature, top-k,
top-p), ``lm_baselines`` (unigram, bigram and LSTM language models), ``tasks`` (synthetic data and corpora),
``training`` (a seeded training loop), ``plots``, ``widgets``, ``quiz`` (the self-check quizzes) and ``checks`` (the
exercise checks). ``syllabus`` is the table of the course's notebooks and topics. Everything a learner never needs
to read (the command line ``python -m course_lib``, slides, bundle, grading) lives in ``course_lib.tools``.
"""

import importlib

# Where each name of ``from course_lib import ...`` lives. They are imported on first use (PEP 562), so that the
# command line (``python -m course_lib quiz check``, ``slides``, ``site``...) starts without loading torch.
_HOME = {
    "attention": ("causal_mask", "padding_mask", "scaled_dot_product_attention", "softmax"),
    "blocks": ("FeedForward", "LayerNorm", "Residual", "TransformerEncoder", "TransformerEncoderBlock"),
    "decoder": ("DecoderBlock", "DecoderLM", "KVCache", "generate", "next_token_loss"),
    "multihead": ("MultiHeadAttention", "merge_heads", "split_heads"),
    "positions": ("LearnedPositionalEmbedding", "SinusoidalPositionalEncoding", "sinusoidal_encoding"),
    "recurrent": ("VanillaRNN", "input_gradient_norms", "input_gradients"),
    "reproducibility": ("get_device", "set_seed"),
    "sampling": ("greedy", "sample", "top_k_filter", "top_p_filter"),
}
_MODULE_OF = {name: module for module, names in _HOME.items() for name in names}


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'course_lib' has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(f".{module}", __name__), name)
    except ModuleNotFoundError as missing:  # torch or numpy is not installed: the command line (doctor) still runs
        if missing.name not in ("torch", "numpy"):
            raise
        import sys

        raise ImportError(
            f"course_lib needs {missing.name}, which is not installed in this Python ({sys.executable}). "
            "Run `python -m course_lib doctor` to see what is missing and how to fix it."
        ) from None
    globals()[name] = value  # the next use finds it directly
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__version__ = "0.1.0"

__all__ = [
    "softmax",
    "scaled_dot_product_attention",
    "causal_mask",
    "padding_mask",
    "split_heads",
    "merge_heads",
    "MultiHeadAttention",
    "sinusoidal_encoding",
    "SinusoidalPositionalEncoding",
    "LearnedPositionalEmbedding",
    "LayerNorm",
    "Residual",
    "FeedForward",
    "TransformerEncoderBlock",
    "TransformerEncoder",
    "DecoderBlock",
    "DecoderLM",
    "KVCache",
    "next_token_loss",
    "generate",
    "greedy",
    "sample",
    "top_k_filter",
    "top_p_filter",
    "VanillaRNN",
    "input_gradient_norms",
    "input_gradients",
    "set_seed",
    "get_device",
]
