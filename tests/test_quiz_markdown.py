"""Quiz text is Markdown rendered as JupyterLab renders a Markdown cell (issue 15): emphasis, code, lists, links and
math, in the widget and in the static fallback. tests/browser/test_quiz_browser.py checks it on the page."""

from __future__ import annotations

import re

import pytest

from course_lib.interactive.quiz import available_banks, load_bank, parse_bank
from course_lib.interactive.quiz.render import markup, quiz_html
from course_lib.interactive.quiz.widget import QuizView

SAMPLE = r"""Is it *was/were*, _chased_ or **the subject**? Look at `x * y` and $a_1 * b_2 < c$.

- one item with *emphasis*
- two

1. first
2. second

```python
scores = q @ k.T  # *not* emphasis
```

See [the notes](https://example.org/notes) and $$\sum_j w_{ij} = 1$$"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("*x*", "<em>x</em>"),
        ("_x_", "<em>x</em>"),
        ("**x**", "<strong>x</strong>"),
        ("`a*b*c`", "<code>a*b*c</code>"),
        ("snake_case_name", "snake_case_name"),  # no emphasis inside a word, as in JupyterLab
        ("$x_1 * y_2 * z$", "$x_1 * y_2 * z$"),  # math untouched by the emphasis rules
        ("$$a < b$$", "$$a &lt; b$$"),
        ("costs $5 and $6", "costs $5 and $6"),  # dollars followed by digits are not math
        ("<b>raw</b>", "&lt;b&gt;raw&lt;/b&gt;"),  # raw HTML is shown, not interpreted
    ],
)
def test_inline_markdown(text, expected):
    assert markup(text, paragraphs=False) == expected


def test_block_markdown():
    rendered = markup(SAMPLE)
    assert "<em>was/were</em>" in rendered and "<em>chased</em>" in rendered
    assert "<strong>the subject</strong>" in rendered and "<code>x * y</code>" in rendered
    assert "$a_1 * b_2 &lt; c$" in rendered and r"$$\sum_j w_{ij} = 1$$" in rendered
    assert re.search(r"<ul>\s*<li>one item with <em>emphasis</em></li>\s*<li>two</li>\s*</ul>", rendered)
    assert re.search(r"<ol>\s*<li>first</li>\s*<li>second</li>\s*</ol>", rendered)
    assert '<pre><code class="language-python">scores = q @ k.T  # *not* emphasis\n</code></pre>' in rendered
    assert re.search(r'<a [^>]*href="https://example.org/notes"[^>]*>the notes</a>', rendered)
    assert 'target="_blank"' in rendered


def test_unsafe_links_are_dropped():
    rendered = markup("[click](javascript:alert(1)) ![x](javascript:alert(2))")
    assert "javascript:" not in rendered


def test_indented_yaml_prose_is_not_a_code_block():
    assert (
        markup("first line\n      continued, indented for reading")
        == "<p>first line\ncontinued, indented for reading</p>"
    )
    assert "<pre>" not in markup("    four spaces of indent")


def visible_outside_code_and_math(rendered: str) -> str:
    """The text of rendered HTML without its code elements and math, where an asterisk may be literal."""
    text = re.sub(r"<(pre|code)[^>]*>.*?</\1>", " ", rendered, flags=re.S)
    text = re.sub(r"\$\$.+?\$\$|\$[^$]+?\$", " ", text, flags=re.S)
    return re.sub(r"<[^>]+>", " ", text)


def test_no_bank_shows_literal_emphasis_markers():
    """Bank 03 `head-cheap-clue` showed *was/were* with its asterisks; no bank text may show Markdown markers."""
    literal = re.compile(r"(?<![\w*])\*{1,2}[^\s*][^*]*?\*{1,2}(?![\w*])|(?<!\w)_[^\s_][^_]*?_(?!\w)")
    for name in available_banks():
        quiz = load_bank(name)
        view = QuizView(quiz)
        static = quiz_html(quiz)
        assert not literal.search(visible_outside_code_and_math(static)), name
        for item in view.question_widgets:
            shown = item.prompt.value + " ".join(box.description for box in item.options)
            assert not literal.search(visible_outside_code_and_math(shown)), (name, item.question.id)
    emphasised = load_bank("03").question("head-cheap-clue")
    if "*was/were*" in emphasised.prompt:  # the case the issue reported, while the bank still writes it
        assert "<em>was/were</em>" in QuizView(load_bank("03")).question_widget("head-cheap-clue").prompt.value


def test_option_labels_and_feedback_render_markdown():
    bank = """title: Synthetic
notebook: '01'
questions:
  - id: md-probe
    kind: single
    topic: rnn_limits
    prompt: Which?
    explanation: 'Because of *this*.'
    options:
      - text: 'the *right* one'
        correct: true
        feedback: 'Yes, _right_.'
      - text: 'a `wrong` one'
        feedback: 'No: **wrong**.'
"""
    quiz = parse_bank(bank, "zz.yaml")
    view = QuizView(quiz)
    item = view.question_widget("md-probe")
    labels = " ".join(box.description for box in item.options)
    assert "the <em>right</em> one" in labels and "a <code>wrong</code> one" in labels
    right = item.question.correct_indices[0]
    item.options[right].value = True
    item.on_check()
    assert "Yes, <em>right</em>." in item.feedback.value and "Because of <em>this</em>." in item.feedback.value
    static = quiz_html(quiz)
    assert "the <em>right</em> one" in static and "No: <strong>wrong</strong>." in static
