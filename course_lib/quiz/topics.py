"""The course's notebooks and the topics the quizzes report on.

Every question names one topic (for the per-topic summary of the final knowledge check) and the notebook that
teaches it. The lists are fixed by the course's structure; a bank that names another topic or notebook is
rejected on load, which catches typos such as ``topic: layer_norm``.
"""

from __future__ import annotations

# notebook number → (file in notebooks/, title)
NOTEBOOKS: dict[str, tuple[str, str]] = {
    "01": ("01_why_rnns_struggle.ipynb", "Why RNNs struggle with long sequences"),
    "02": ("02_attention_qkv.ipynb", "Attention: queries, keys and values"),
    "03": ("03_multi_head_attention.ipynb", "Multi-head attention"),
    "04": ("04_positional_encoding.ipynb", "Positional encoding"),
    "05": ("05_residuals_and_layernorm.ipynb", "Residual connections and LayerNorm"),
    "06": ("06_transformer_block.ipynb", "The Transformer block"),
    "07": ("07_knowledge_check.ipynb", "Final knowledge check"),
}

# topic id → label shown in the summary (in teaching order)
TOPICS: dict[str, str] = {
    "rnn_limits": "Limits of RNNs",
    "qkv_attention": "Attention with queries, keys and values",
    "scaling": "Scaling by √d_k and the softmax",
    "multi_head": "Multi-head attention",
    "positional_encoding": "Positional encoding",
    "residuals": "Residual connections",
    "layernorm": "Layer normalization",
    "transformer_block": "The Transformer block",
}


def notebook_label(number: str) -> str:
    """``"02"`` → ``"02 · Attention: queries, keys and values"``."""
    return f"{number} · {NOTEBOOKS[number][1]}" if number in NOTEBOOKS else number


def notebook_file(number: str) -> str:
    """``"02"`` → ``"02_attention_qkv.ipynb"`` (a path relative to ``notebooks/``)."""
    return NOTEBOOKS[number][0] if number in NOTEBOOKS else f"{number}.ipynb"
