"""Formulas typeset once, when a page is built: TeX in ``$...$`` / ``$$...$$`` becomes MathML, which browsers draw.

nbconvert leaves a Markdown cell's formulas as text (``$$\\frac{QK^\\top}{\\sqrt{d_k}}$$``, HTML-escaped) for a script
to typeset in the reader's browser. ``typeset_page`` does it at build time instead, with ``latex2mathml`` (pure
Python): every formula of the page becomes a ``<math>`` element, which Chromium, Firefox and Safari draw natively
and screen readers read as mathematics. A page then opens with its formulas already there: no typesetting script to
download, parse and run (with MathJax 2 that was about two thirds of the time a lesson page took to open), nothing
that shifts the page after it appears.

Only text is touched: tags, their attributes, and everything inside ``pre``, ``code``, ``script``, ``style`` and
``textarea`` (code, printed outputs) are copied as they are. A formula the converter cannot read raises
``TypesetError`` naming it, so a build never publishes TeX source as if it were typeset.
"""

from __future__ import annotations

import html
import re

# A tag (quoted attribute values may hold '>'), a comment, or a whole element whose text is not prose.
_TAG = re.compile(
    r"<!--.*?-->"
    r"|<(pre|code|script|style|textarea)\b(?:[^>\"']|\"[^\"]*\"|'[^']*')*>.*?</\1\s*>"
    r"|</?[A-Za-z](?:[^>\"']|\"[^\"]*\"|'[^']*')*>",
    re.S | re.I,
)
# nbconvert's own delimiters (nbconvert.filters.markdown_mistune): $$display$$ first, then $inline$.
_MATH = re.compile(r"(?<!\\)\$\$(?P<display>.+?)(?<!\\)\$\$|(?<![$\\])\$(?P<inline>.+?)(?<![$\\])\$", re.S)
MATHML_CLASS = "course-math"
# TeX's function names (\cos, \log, ...): latex2mathml writes them as a plain <mi>, which a browser sets with no space
# around (``a cos m`` reads "acosm"). TeX puts a thin space on each side, none before an opening parenthesis.
_FUNCTION = re.compile(
    r"<mi>(sin|cos|tan|cot|sec|csc|arcsin|arccos|arctan|sinh|cosh|tanh|exp|log|ln|lg|det|dim|ker|arg|deg|gcd|Pr)</mi>"
    r"(?P<paren><mo stretchy=\"false\">&#x00028;</mo>)?"
)
_THIN = '<mspace width="0.1667em"></mspace>'


def _space_function(match: re.Match) -> str:
    after = match.group("paren") or _THIN
    return f"{_THIN}<mi>{match.group(1)}</mi>{after}"


class TypesetError(ValueError):
    """A formula that could not be converted to MathML."""


# In a displayed formula TeX writes a limit operator's subscript under it (max over j, with j below); latex2mathml
# writes it as a subscript beside it, as inline.
_LIMIT_OPERATOR = re.compile(r"<msub><mo>(max|min|lim|sup|inf|argmax|argmin)</mo>")
_ELEMENT_TAG = re.compile(r"<(/?)([A-Za-z]+)[^>]*?(/?)>")


def _limits_under(mathml: str) -> str:
    """``<msub><mo>max</mo>X</msub>`` → ``<munder><mo>max</mo>X</munder>``, X whatever element follows."""
    while (match := _LIMIT_OPERATOR.search(mathml)) is not None:
        depth, position = 0, match.end()
        for tag in _ELEMENT_TAG.finditer(mathml, match.end()):
            closing, self_closing = tag.group(1) == "/", tag.group(3) == "/"
            depth += 0 if self_closing else (-1 if closing else 1)
            if depth == -1:  # the </msub> that closes the operator's subscript
                position = tag.start()
                break
        else:
            return mathml  # not well formed: leave it as latex2mathml wrote it
        mathml = (
            mathml[: match.start()]
            + f"<munder><mo>{match.group(1)}</mo>"
            + mathml[match.end() : position]
            + "</munder>"
            + mathml[position + len("</msub>") :]
        )
    return mathml


def to_mathml(tex: str, display: bool = False) -> str:
    """One formula (TeX, without its dollar signs) as a ``<math>`` element; ``display`` for a centred block."""
    from latex2mathml.converter import convert  # imported on first use: the command line starts without it

    try:
        mathml = convert(tex.strip(), display="block" if display else "inline")
    except Exception as error:  # the converter raises several types (its own, IndexError, KeyError)
        raise TypesetError(f"cannot typeset the formula ${tex}$: {error}") from error
    if "\\" in mathml:  # an unknown command is copied through as text
        raise TypesetError(f"cannot typeset the formula ${tex}$: a command latex2mathml does not know")
    mathml = _FUNCTION.sub(_space_function, mathml)
    if display:
        mathml = _limits_under(mathml)
    return mathml.replace("<math ", f'<math class="{MATHML_CLASS}" ', 1)


def typeset_text(text: str) -> str:
    """HTML text with no tags in it (entities allowed): each formula replaced by its MathML."""

    def replace(match: re.Match) -> str:
        display = match.group("display") is not None
        tex = html.unescape(match.group("display") if display else match.group("inline"))
        return to_mathml(tex, display=display)

    return _MATH.sub(replace, text)


def typeset_page(page: str) -> str:
    """A whole HTML page with every formula in its prose typeset as MathML (tags and code untouched)."""
    pieces: list[str] = []
    position = 0
    for tag in _TAG.finditer(page):
        pieces.append(typeset_text(page[position : tag.start()]))
        pieces.append(tag.group(0))
        position = tag.end()
    pieces.append(typeset_text(page[position:]))
    return "".join(pieces)
