"""Formulas typeset when a page is built (``course_lib/tools/publish/typeset.py``): TeX in prose becomes MathML; code,
printed outputs, scripts and attributes are left exactly as they were; a formula the converter cannot read stops the
build with its name instead of being published as TeX. The site's pages in a browser: tests/browser/test_site_browser.py.
"""

from __future__ import annotations

import pytest

from course_lib.tools.publish import typeset


def test_inline_and_display_formulas_become_mathml():
    page = "<p>Scale by $\\sqrt{d_k}$:</p>\n<p>$$\\mathrm{softmax}\\left(\\frac{QK^\\top}{\\sqrt{d_k}}\\right)V$$</p>"
    out = typeset.typeset_page(page)
    assert out.count("<math ") == 2 and "$" not in out
    assert 'display="inline"' in out and 'display="block"' in out
    assert "<msqrt>" in out and "<mfrac>" in out and "&#x022A4;" in out  # the transpose sign, ⊤


def test_function_names_get_the_thin_spaces_tex_gives_them():
    """``a\\cos m`` reads "a cos m", not "acosm"; ``\\exp(x)`` keeps the parenthesis next to the name."""
    thin = '<mspace width="0.1667em"></mspace>'
    assert f"<mi>a</mi>{thin}<mi>cos</mi>{thin}<mi>m</mi>" in typeset.to_mathml(r"a\cos m")
    assert '<mi>exp</mi><mo stretchy="false">&#x00028;</mo>' in typeset.to_mathml(r"\exp(x)")
    assert "mspace" not in typeset.to_mathml(r"c \cdot s")  # an ordinary product: no space added


def test_a_limit_operator_takes_its_subscript_under_it_in_a_displayed_formula():
    """TeX's display style: max over j with j below it; inline, j stays beside it, as in TeX's text style."""
    displayed = typeset.to_mathml(r"m = \max_{j \le i} s_j + \min_k x_k", display=True)
    assert "<munder><mo>max</mo><mrow>" in displayed and "<munder><mo>min</mo><mi>k</mi></munder>" in displayed
    assert "<msub><mo>" not in displayed and displayed.count("<msub>") == 2  # s_j and x_k stay subscripts
    assert "<msub><mo>max</mo>" in typeset.to_mathml(r"\max_j s_j")


def test_html_escaped_tex_is_read_as_tex():
    """nbconvert escapes a formula's ``<`` and ``&``: ``$a &lt; b$`` is the formula ``a < b``."""
    out = typeset.typeset_page("<p>$a &lt; b$</p>")
    assert "<mo>&#x0003C;</mo>" in out and "&amp;" not in out and "lt;" not in out


@pytest.mark.parametrize(
    "untouched",
    [
        "<pre>price = '$5 and $6'</pre>",
        "<code>$x$</code>",
        "<script>const a = '$x$';</script>",
        '<img alt="costs $x$ > $y$" src="a.png">',
        "<!-- $x$ -->",
        "<textarea>$x$</textarea>",
    ],
)
def test_code_scripts_attributes_and_comments_are_left_alone(untouched):
    assert typeset.typeset_page(untouched) == untouched


def test_a_formula_in_prose_next_to_code_is_still_typeset():
    out = typeset.typeset_page("<p>The shape <code>(batch, seq)</code> and $d_k$.</p>")
    assert "<code>(batch, seq)</code>" in out and out.count("<math ") == 1


def test_an_unknown_command_stops_the_build_with_the_formula_named():
    with pytest.raises(typeset.TypesetError, match=r"\\notacommand"):
        typeset.typeset_page("<p>$\\notacommand{x}$</p>")
