"""The course in one table: its parts, its notebooks in order, and the topics its quizzes report on.

The course has two parts. Part 1, *the Transformer from the ground up*, is notebooks 01-06 and 07, the knowledge
check over 01-06 only. Part 2, *toward language models*, starts at 08; each of its notebooks ends with its own quiz,
and a Part 2 knowledge check will close it as its last notebook. An exercise carries its notebook's number.

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

    ``number`` is its two-digit place in the course, ``file`` its name in ``notebooks/``, ``concepts`` the
    concept modules at the top of ``course_lib`` that it teaches, in the order it teaches them (empty for a
    knowledge check), ``exercise`` the exercise notebook that follows it (``None`` when there is none) and ``quiz``
    the bank its closing quiz uses.
    """

    number: str
    file: str
    title: str
    concepts: tuple[str, ...] = ()
    exercise: str | None = None
    quiz: str | None = None


@dataclass(frozen=True)
class Part:
    """One part of the course: its notebooks in order; ``check`` is its knowledge check (``None`` until it has one)."""

    number: int
    title: str
    notebooks: tuple[str, ...]
    check: str | None = None


COURSE: tuple[Notebook, ...] = (
    Notebook(
        "01", "01_why_rnns_struggle.ipynb", "Why RNNs struggle with long sequences", ("recurrent",), "ex01_rnn", "01"
    ),
    Notebook(
        "02", "02_attention_qkv.ipynb", "Attention: queries, keys and values", ("attention",), "ex02_attention", "02"
    ),
    Notebook("03", "03_multi_head_attention.ipynb", "Multi-head attention", ("multihead",), "ex03_multi_head", "03"),
    Notebook(
        "04", "04_positional_encoding.ipynb", "Positional encoding", ("positions",), "ex04_positional_encoding", "04"
    ),
    Notebook(
        "05",
        "05_residuals_and_layernorm.ipynb",
        "Residual connections and LayerNorm",
        ("blocks",),
        "ex05_layernorm_residual",
        "05",
    ),
    Notebook("06", "06_transformer_block.ipynb", "The Transformer block", ("blocks",), "ex06_encoder_block", "06"),
    Notebook("07", "07_knowledge_check.ipynb", "Knowledge check: Part 1", quiz="final"),
    Notebook(
        "08", "08_language_model.ipynb", "A small language model", ("decoder", "sampling"), "ex08_language_model", "08"
    ),
    Notebook(
        "09",
        "09_induction_heads.ipynb",
        "What heads learn: induction heads",
        ("attention_only",),
        "ex09_induction_heads",
        "09",
    ),
    Notebook(
        "10",
        "10_modern_block.ipynb",
        "Today's block and attention at scale",
        ("rotary", "rmsnorm", "swiglu", "tiled_attention", "modern_block"),
        "ex10_rope_online_softmax",
        "10",
    ),
    Notebook("11", "11_text_to_tokens.ipynb", "From text to tokens", ("tokenizer",), "ex11_tokenizer", "11"),
    Notebook("12", "12_part2_check.ipynb", "Knowledge check: Part 2", quiz="part2"),
)

PARTS: tuple[Part, ...] = (
    Part(1, "The Transformer from the ground up", ("01", "02", "03", "04", "05", "06", "07"), check="07"),
    # every notebook from 08 on, so a new notebook of Part 2 needs only its row in COURSE
    Part(2, "Toward language models", tuple(row.number for row in COURSE if row.number >= "08"), check="12"),
)

# The concept modules at the top of ``course_lib``, in teaching order: ``ls course_lib`` is this list plus ``_private``
# plumbing. It feeds the package's exports (``from course_lib import X`` for every name in a concept's ``__all__``),
# the package docstring, the layout test and the import contracts (tests/test_layout.py).
CONCEPTS: tuple[str, ...] = tuple(dict.fromkeys(concept for row in COURSE for concept in row.concepts))
# concept module → the notebook that first teaches it
CONCEPT_NOTEBOOK: dict[str, str] = {
    concept: next(row.number for row in COURSE if concept in row.concepts) for concept in CONCEPTS
}

# notebook number → (file in notebooks/, title): the view most callers want
NOTEBOOKS: dict[str, tuple[str, str]] = {notebook.number: (notebook.file, notebook.title) for notebook in COURSE}

# the notebooks that are knowledge checks (their questions point back to the lessons, never to a check)
KNOWLEDGE_CHECKS: tuple[str, ...] = tuple(part.check for part in PARTS if part.check)
# Part 1's knowledge check (notebook 07, bank final.yaml), the name older code uses
FINAL_CHECK = "07"
# the knowledge check of Part 2 (notebooks 08 onward), the course's last notebook
PART2_CHECK = "12"

# names that changed, so that what a learner wrote or recorded before still reads:
# the language-model exercise followed notebook 08 as ex07 until it took its notebook's number
RENAMED_EXERCISES: dict[str, str] = {"ex07_language_model": "ex08_language_model"}
# (quiz, question) → (quiz, question): 08's questions moved from Part 1's knowledge check into 08's own quiz
MOVED_QUESTIONS: dict[tuple[str, str], tuple[str, str]] = {
    ("final", "final-lm-causal"): ("08", "lm-causal-mask"),
    ("final", "final-lm-top-k"): ("08", "lm-top-k-equivalent"),
    ("final", "final-lm-cache-tokens"): ("08", "lm-cache-same-tokens"),
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
    "language_model": "A small language model",
    "induction_heads": "Induction heads and in-context learning",
    "modern_block": "Today's block: RoPE, RMSNorm, SwiGLU, GQA, tiled attention",
    "tokenization": "From text to tokens: bytes, BPE and bits per byte",
}


def notebook(number: str) -> Notebook:
    """``"02"`` → the row of notebook 02; a ``KeyError`` names the known numbers."""
    for row in COURSE:
        if row.number == number:
            return row
    raise KeyError(f"no notebook {number!r} in the course; known: {', '.join(NOTEBOOKS)}")


def lessons() -> tuple[Notebook, ...]:
    """The notebooks that teach (every one but the knowledge checks)."""
    return tuple(row for row in COURSE if row.number not in KNOWLEDGE_CHECKS)


def part_of(number: str) -> Part:
    """``"08"`` → Part 2; a ``KeyError`` names the known numbers."""
    for part in PARTS:
        if number in part.notebooks:
            return part
    raise KeyError(f"no notebook {number!r} in the course's parts; known: {', '.join(NOTEBOOKS)}")


def current_exercise(name: str) -> str:
    """An exercise's name today: ``"ex07_language_model"`` (its name before 08 had its number) → ``"ex08_language_model"``."""
    return RENAMED_EXERCISES.get(name, name)


def current_question(quiz: str, question: str) -> tuple[str, str]:
    """Where a recorded answer's question lives today: a question that moved to another bank is found there."""
    return MOVED_QUESTIONS.get((quiz, question), (quiz, question))


def notebook_label(number: str) -> str:
    """``"02"`` → ``"02 · Attention: queries, keys and values"``."""
    return f"{number} · {NOTEBOOKS[number][1]}" if number in NOTEBOOKS else number


def notebook_file(number: str) -> str:
    """``"02"`` → ``"02_attention_qkv.ipynb"`` (a path relative to ``notebooks/``)."""
    return NOTEBOOKS[number][0] if number in NOTEBOOKS else f"{number}.ipynb"
