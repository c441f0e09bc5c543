"""The course in one table: its notebooks, in order, and the topics its quizzes report on.

This is the one place that knows the course's structure. The quizzes (which notebook a question sends a learner
back to), the slide decks and the learner bundle (which notebooks to take), the site and the tests (every notebook
on disk is listed here, and every row has its file) all read it. Adding a notebook means adding a row here; see
CONTRIBUTING.md for the rest of the walk-through.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Notebook:
    """One notebook of the course.

    ``number`` is its two-digit place in the course, ``file`` its name in ``notebooks/``, ``module`` the
    ``course_lib`` module it teaches (``None`` when it teaches none), ``exercise`` the exercise notebook that
    follows it (``None`` when there is none) and ``quiz`` the bank its closing quiz uses.
    """

    number: str
    file: str
    title: str
    module: str | None = None
    exercise: str | None = None
    quiz: str | None = None


COURSE: tuple[Notebook, ...] = (
    Notebook(
        "01", "01_why_rnns_struggle.ipynb", "Why RNNs struggle with long sequences", "recurrent", "ex01_rnn", "01"
    ),
    Notebook(
        "02", "02_attention_qkv.ipynb", "Attention: queries, keys and values", "attention", "ex02_attention", "02"
    ),
    Notebook("03", "03_multi_head_attention.ipynb", "Multi-head attention", "multihead", "ex03_multi_head", "03"),
    Notebook(
        "04", "04_positional_encoding.ipynb", "Positional encoding", "positions", "ex04_positional_encoding", "04"
    ),
    Notebook(
        "05",
        "05_residuals_and_layernorm.ipynb",
        "Residual connections and LayerNorm",
        "blocks",
        "ex05_layernorm_residual",
        "05",
    ),
    Notebook("06", "06_transformer_block.ipynb", "The Transformer block", "blocks", "ex06_encoder_block", "06"),
    Notebook("07", "07_knowledge_check.ipynb", "Final knowledge check", quiz="final"),
    Notebook("08", "08_language_model.ipynb", "A small language model", "decoder", "ex07_language_model", "08"),
    Notebook(
        "10",
        "10_modern_block.ipynb",
        "Today's block and attention at scale",
        "modern_block",
        "ex10_rope_online_softmax",
        "10",
    ),
    Notebook("11", "11_part2_check.ipynb", "Part 2 knowledge check", quiz="part2"),
)

# notebook number → (file in notebooks/, title): the view most callers want
NOTEBOOKS: dict[str, tuple[str, str]] = {notebook.number: (notebook.file, notebook.title) for notebook in COURSE}

# the notebook that holds the final knowledge check (its questions point back to the lessons, never to it)
FINAL_CHECK = "07"
# the knowledge check of Part 2 (notebooks 08 onward), the course's last notebook
PART2_CHECK = "11"

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
    "language_model": "A small language model",
    "modern_block": "Today's block: RoPE, RMSNorm, SwiGLU, GQA, tiled attention",
}


def notebook(number: str) -> Notebook:
    """``"02"`` → the row of notebook 02; a ``KeyError`` names the known numbers."""
    for row in COURSE:
        if row.number == number:
            return row
    raise KeyError(f"no notebook {number!r} in the course; known: {', '.join(NOTEBOOKS)}")


def lessons() -> tuple[Notebook, ...]:
    """The notebooks that teach (every one but the knowledge checks)."""
    return tuple(row for row in COURSE if row.number not in (FINAL_CHECK, PART2_CHECK))


def notebook_label(number: str) -> str:
    """``"02"`` → ``"02 · Attention: queries, keys and values"``."""
    return f"{number} · {NOTEBOOKS[number][1]}" if number in NOTEBOOKS else number


def notebook_file(number: str) -> str:
    """``"02"`` → ``"02_attention_qkv.ipynb"`` (a path relative to ``notebooks/``)."""
    return NOTEBOOKS[number][0] if number in NOTEBOOKS else f"{number}.ipynb"
