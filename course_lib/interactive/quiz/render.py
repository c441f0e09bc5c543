"""Turning questions into HTML and plain text: the markup of the banks and the static (no-widget) quiz.

The banks are written in Markdown, rendered as JupyterLab renders a Markdown cell (with mistune, which Jupyter's
nbconvert already uses): paragraphs, *emphasis*, **bold**, ``inline code``, fenced code blocks (three backticks),
lists, links, and LaTeX math in ``$...$`` or ``$$...$$``, passed through untouched for MathJax (JupyterLab,
nbviewer) to typeset. The plain-text view keeps the Markdown as written, which reads well as text.

The static quiz is what a reader sees where widgets do not run (GitHub, nbviewer, an HTML export, a notebook
opened before its cells run): the questions and options, with the answers folded away in ``<details>`` blocks.
"""

from __future__ import annotations

import html
import re
import textwrap

import mistune
from mistune.plugins import math as mistune_math

from ..._syllabus import notebook_file, notebook_label
from .model import Question, Quiz, TopicScore, format_number, letter

_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)


class _QuizRenderer(mistune.HTMLRenderer):
    """Markdown → HTML as JupyterLab shows a Markdown cell: raw HTML escaped, unsafe links dropped, and math left
    as ``$...$`` / ``$$...$$`` (HTML-escaped) for MathJax to typeset, never touched by the Markdown rules."""

    def __init__(self) -> None:
        super().__init__(escape=True)

    def inline_math(self, text: str) -> str:
        return "$" + html.escape(text, quote=False) + "$"

    def block_math(self, text: str) -> str:
        return "$$" + html.escape(text, quote=False) + "$$"

    def link(self, text: str, url: str, title: str | None = None) -> str:
        # links open outside the notebook: the quiz stays where it is
        return super().link(text, url, title).replace("<a ", '<a target="_blank" rel="noopener" ', 1)


def _math_plugin(md: mistune.Markdown) -> None:
    mistune_math.math(md)
    md.renderer.register("inline_math", lambda renderer, text: renderer.inline_math(text))
    md.renderer.register("block_math", lambda renderer, text: renderer.block_math(text))


_MARKDOWN = mistune.create_markdown(renderer=_QuizRenderer(), plugins=[_math_plugin, "strikethrough"])
_ONE_PARAGRAPH = re.compile(r"\A<p>((?:(?!</?p>).)*)</p>\Z", re.S)


def _dedent(text: str) -> str:
    """Bank text sits in YAML blocks whose lines may be indented for reading. Outside fenced code, an indent is cut
    to at most 3 spaces: enough for a nested list item, never Markdown's indented code block (fences mark code)."""
    out, fenced = [], False
    for line in text.splitlines():
        stripped = line.lstrip()
        if stripped.startswith("```"):
            fenced = not fenced
            out.append(stripped)
        else:
            out.append(line if fenced else " " * min(len(line) - len(stripped), 3) + stripped)
    return "\n".join(out)


def markup(text: str, paragraphs: bool = True) -> str:
    """Bank text (Markdown, as a learner writes it in a JupyterLab Markdown cell) → HTML.

    Emphasis (``*x*``, ``_x_``, ``**x**``), ``inline code``, fenced code, lists, links, and LaTeX math in ``$...$`` or
    ``$$...$$`` (kept for MathJax). Raw HTML in the text is escaped. With ``paragraphs=False`` a one-paragraph text is
    returned without ``<p>`` (for option labels).
    """
    rendered = _MARKDOWN(_dedent(text)).strip()
    if not paragraphs:
        match = _ONE_PARAGRAPH.match(rendered)
        if match:
            return match.group(1)
    return rendered


def plain(text: str, indent: str = "", width: int = 100) -> str:
    """Bank text → plain text: paragraphs re-wrapped to ``width``, code blocks kept, markup left as written."""
    blocks: list[str] = []
    last = 0

    def prose(chunk: str) -> None:
        for part in re.split(r"\n\s*\n", chunk):
            if part.strip():
                joined = " ".join(line.strip() for line in part.strip().splitlines())
                blocks.append(textwrap.fill(joined, width=width, initial_indent=indent, subsequent_indent=indent))

    for match in _FENCE.finditer(text):
        prose(text[last : match.start()])
        blocks.append("\n".join(indent + "    " + line for line in match.group(1).rstrip().splitlines()))
        last = match.end()
    prose(text[last:])
    return "\n\n".join(blocks)


KIND_HINT = {
    "single": "Choose one answer.",
    "multiple": "Select all that apply.",
    "numeric": "Type a number.",
}


# -- the static quiz --------------------------------------------------------------------------------------
STATIC_NOTE = (
    "This is the static view of the quiz. Run the cell in Jupyter to answer it interactively with feedback; "
    "here, try each question first, then unfold its answer."
)


def quiz_html(quiz: Quiz, questions: list[Question] | None = None, title: str | None = None) -> str:
    """The static HTML quiz: questions, options, and each answer folded in a ``<details>`` block."""
    questions = list(quiz.questions) if questions is None else questions
    parts = [
        '<div class="course-quiz-static">',
        f"<p><strong>{html.escape(title or quiz.title)}</strong> · {len(questions)} questions</p>",
        f"<p><em>{html.escape(STATIC_NOTE)}</em></p>",
        "<ol>",
    ]
    for question in questions:
        parts.append(f"<li>{markup(question.prompt)}<p><em>{KIND_HINT[question.kind]}</em></p>")
        if question.options:
            items = "".join(
                f"<li><strong>{letter(i)})</strong> {markup(o.text, paragraphs=False)}</li>"
                for i, o in enumerate(question.options)
            )
            parts.append(f"<ul>{items}</ul>")  # explicit letters: sanitizers (GitHub) may drop <ol type="a">
        parts.append(f"<details><summary>Show the answer</summary>{_answer_html(question)}</details></li>")
    parts.append("</ol></div>")
    return "\n".join(parts)


def _answer_html(question: Question) -> str:
    text = f"<p><strong>Answer: {html.escape(question.answer_text())}.</strong></p>{markup(question.explanation)}"
    if question.options:
        rows = "".join(
            f"<li><strong>({letter(i)}) {'right' if o.correct else 'wrong'}:</strong> {markup(o.feedback, paragraphs=False)}</li>"
            for i, o in enumerate(question.options)
        )
        text += f"<ul>{rows}</ul>"
    elif question.mistakes:
        rows = "".join(
            f"<li><strong>{format_number(m.answer)}:</strong> {markup(m.feedback, paragraphs=False)}</li>"
            for m in question.mistakes
        )
        text += f"<p>Common wrong answers:</p><ul>{rows}</ul>"
    return text


def quiz_text(
    quiz: Quiz, questions: list[Question] | None = None, title: str | None = None, answers: bool = False
) -> str:
    """The quiz as plain text (for ``text/plain`` and the command line); answers only with ``answers=True``."""
    questions = list(quiz.questions) if questions is None else questions
    lines = [f"{title or quiz.title} · {len(questions)} questions", ""]
    for number, question in enumerate(questions, start=1):
        prompt = plain(question.prompt, indent="   ")
        if prompt.startswith("       "):  # the prompt opens with a code block: keep its indentation
            lines.append(f"{number}.")
            lines.append(prompt)
        else:
            lines.append(f"{number}. " + prompt.lstrip())
        lines.append(f"   ({KIND_HINT[question.kind]})")
        for i, option in enumerate(question.options):
            lines.append(f"   {letter(i)}) " + plain(option.text, indent="      ").lstrip())
        if answers:
            lines.append(f"   Answer: {question.answer_text()}")
            lines.append(plain(question.explanation, indent="   "))
        lines.append("")
    if not answers:
        bank = quiz.id
        lines.append(
            f"Run this in Jupyter to answer interactively, or see the answers with: python -m course_lib quiz show {bank} --answers"
        )
    return "\n".join(lines).rstrip() + "\n"


# -- the per-topic summary ----------------------------------------------------------------------------------
def summary_html(rows: list[TopicScore], live: bool) -> str:
    """The per-topic table. ``live=False``: the static version (no scores yet, which notebook teaches what)."""
    head = "<tr><th>Topic</th><th>Questions</th><th>Right first try</th><th>Status</th><th>Taught in</th></tr>"
    body = []
    for row in rows:
        taught = ", ".join(f'<a href="{notebook_file(n)}">{html.escape(notebook_label(n))}</a>' for n in row.notebooks)
        score = f"{row.first_try} / {row.total}" if live and row.answered else "–"
        status = _status_html(row) if live else "answer the questions to see"
        body.append(
            f'<tr class="quiz-summary-row" data-topic="{row.topic}"><td>{html.escape(row.label)}</td>'
            f"<td>{row.total}</td><td>{score}</td><td>{status}</td><td>{taught}</td></tr>"
        )
    if live:
        first_try, total = sum(r.first_try for r in rows), sum(r.total for r in rows)
        answered = sum(r.answered for r in rows)
        body.append(
            f"<tr><td><strong>All topics</strong></td><td>{total}</td><td><strong>{first_try} / {total}</strong></td>"
            f"<td>{answered} of {total} answered</td><td></td></tr>"
        )
    table = f'<table class="quiz-summary-table">{head}{"".join(body)}</table>'
    if not live:
        note = (
            "<p><em>Your score per topic appears here when you run the notebook in Jupyter and answer the questions. "
            "This static table shows which notebook teaches each topic.</em></p>"
        )
        return f'<div class="course-quiz-static">{note}{table}</div>'
    return table + _advice_html(rows)


def _status_html(row: TopicScore) -> str:
    if row.revisit:
        links = ", ".join(f'<a href="{notebook_file(n)}">{html.escape(notebook_label(n))}</a>' for n in row.revisit)
        return f"<strong>revisit</strong> {links}"
    if row.answered == 0:
        return "not answered yet"
    if row.answered < row.total:
        return "good so far"
    return "solid ✓"


def _advice_html(rows: list[TopicScore]) -> str:
    weak = [row for row in rows if row.revisit]
    answered = sum(row.answered for row in rows)
    total = sum(row.total for row in rows)
    if answered == 0:
        return "<p>Answer the questions above; this table updates as you go.</p>"
    if weak:
        names = ", ".join(html.escape(row.label) for row in weak)
        return (
            f"<p>Topics to revisit: {names}. Reread the notebook named in the table, then try its questions again.</p>"
        )
    if answered < total:
        return f"<p>So far so good: {answered} of {total} questions answered.</p>"
    return "<p>Every topic right at the first try. You are ready for the exercises.</p>"


def summary_text(rows: list[TopicScore], live: bool) -> str:
    """The per-topic table as plain text."""
    header = f"{'Topic':<42} {'Questions':>9}  {'Right first try':>15}  Status / taught in"
    lines = [header, "-" * len(header)]
    for row in rows:
        score = f"{row.first_try} / {row.total}" if live and row.answered else "-"
        status = row.status if live else "taught in " + ", ".join(notebook_label(n) for n in row.notebooks)
        lines.append(f"{row.label:<42} {row.total:>9}  {score:>15}  {status}")
    if not live:
        lines.append("")
        lines.append("Run the notebook in Jupyter and answer the questions to see your score per topic.")
    return "\n".join(lines) + "\n"
