"""Properties of the quiz engine, checked on many generated cases (hypothesis).

- Numeric tolerance: a value within ``tolerance`` of the answer is right, a value clearly outside is wrong, whatever
  the scale, and typed text ("16,640") reads as the same number.
- Multiple choice: a set of ticks is right exactly when it equals the set of correct options.
- Markup: no bank text can inject HTML into the widgets or the static page.
"""

from __future__ import annotations

import html
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.interactive.quiz import Question
from course_lib.interactive.quiz.model import Option, format_number
from course_lib.interactive.quiz.render import markup

finite = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False)
tolerances = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)


def numeric(answer: float, tolerance: float) -> Question:
    return Question(
        id="q",
        kind="numeric",
        topic="scaling",
        notebook="02",
        prompt="How many?",
        explanation="Because.",
        answer=answer,
        tolerance=tolerance,
        wrong_feedback="Count again.",
    )


@settings(max_examples=300, deadline=None)
@given(answer=finite, tolerance=tolerances, fraction=st.floats(min_value=-1, max_value=1))
def test_values_within_the_tolerance_are_right(answer, tolerance, fraction):
    assert numeric(answer, tolerance).check(answer + fraction * tolerance).correct


@settings(max_examples=300, deadline=None)
@given(
    answer=finite, tolerance=tolerances, excess=st.floats(min_value=1e-3, max_value=1e6), sign=st.sampled_from([-1, 1])
)
def test_values_outside_the_tolerance_are_wrong(answer, tolerance, excess, sign):
    gap = tolerance + excess * max(1.0, abs(answer), tolerance) * 1e-3 + 1e-6 * max(1.0, abs(answer))
    result = numeric(answer, tolerance).check(answer + sign * gap)
    assert not result.correct and result.feedback == "Count again." and result.explanation is None


@settings(max_examples=200, deadline=None)
@given(value=st.integers(min_value=-(10**12), max_value=10**12))
def test_typed_numbers_with_thousands_separators(value):
    question = numeric(value, 0)
    assert question.check(f"{value:,}").correct and question.check(format_number(value)).correct
    assert question.check(str(value)).correct


@settings(max_examples=300, deadline=None)
@given(data=st.data(), size=st.integers(min_value=2, max_value=6))
def test_multiple_choice_is_right_exactly_for_the_correct_set(data, size):
    correct = data.draw(st.sets(st.integers(0, size - 1), min_size=1))
    options = tuple(Option(text=f"option {i}", correct=i in correct, feedback=f"why {i}") for i in range(size))
    question = Question(
        id="q", kind="multiple", topic="scaling", notebook="02", prompt="?", explanation="Because.", options=options
    )
    ticked = data.draw(st.sets(st.integers(0, size - 1), min_size=1))
    result = question.check(sorted(ticked))
    assert result.correct == (ticked == correct)
    for i in ticked - correct:
        assert f"why {i}" in result.feedback, "each wrongly ticked option explains itself"
    if not result.correct:
        assert result.explanation is None


# the tags Markdown itself produces; anything else (raw HTML in the text) must arrive escaped
MARKDOWN_TAGS = "p code pre strong em ul ol li a blockquote h1 h2 h3 h4 h5 h6 hr br img del".split()
ALLOWED_TAGS = set(MARKDOWN_TAGS) | {"/" + tag for tag in MARKDOWN_TAGS}


@settings(max_examples=500, deadline=None)
@given(text=st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_markup_never_emits_foreign_html(text):
    rendered = markup(text)
    tags = re.findall(r"<\s*(/?[a-zA-Z][a-zA-Z0-9]*)", rendered)
    assert set(tags) <= ALLOWED_TAGS, f"unexpected tags {set(tags) - ALLOWED_TAGS} from {text!r}"
    assert "<script" not in rendered.lower()
    assert not re.search(r"<[^>]*\son\w+\s*=", rendered), "no event-handler attributes"
    assert not re.search(r"(href|src)=\"\s*(javascript|vbscript):", rendered, re.I), "no script links"


@settings(max_examples=200, deadline=None)
@given(words=st.lists(st.text(alphabet="abc xyz<>&", min_size=1, max_size=8), min_size=1, max_size=6))
def test_markup_keeps_the_text(words):
    text = "x " + " ".join(words)  # not opening with ">", which Markdown reads as a quote marker
    rendered = markup(text, paragraphs=False)
    plain = html.unescape(re.sub(r"<[^>]+>", "", rendered))
    assert " ".join(plain.split()) == " ".join(text.split())
