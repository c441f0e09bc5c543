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


# --------------------------------------------------------------------------- formulas as plain text (search)

# What a reader sees for a TeX command in plain text (search excerpts): the symbol, or the word itself for operator
# names (\log, \max, \mathrm{...} keep their letters).
_SYMBOLS = {
    "alpha": "α",
    "beta": "β",
    "gamma": "γ",
    "delta": "δ",
    "epsilon": "ε",
    "varepsilon": "ε",
    "zeta": "ζ",
    "eta": "η",
    "theta": "θ",
    "vartheta": "θ",
    "iota": "ι",
    "kappa": "κ",
    "lambda": "λ",
    "mu": "μ",
    "nu": "ν",
    "xi": "ξ",
    "pi": "π",
    "rho": "ρ",
    "sigma": "σ",
    "tau": "τ",
    "phi": "φ",
    "varphi": "φ",
    "chi": "χ",
    "psi": "ψ",
    "omega": "ω",
    "Gamma": "Γ",
    "Delta": "Δ",
    "Theta": "Θ",
    "Lambda": "Λ",
    "Pi": "Π",
    "Sigma": "Σ",
    "Phi": "Φ",
    "Psi": "Ψ",
    "Omega": "Ω",
    "cdot": "·",
    "times": "×",
    "div": "÷",
    "pm": "±",
    "mp": "∓",
    "top": "ᵀ",
    "intercal": "ᵀ",
    "le": "≤",
    "leq": "≤",
    "ge": "≥",
    "geq": "≥",
    "ne": "≠",
    "neq": "≠",
    "approx": "≈",
    "sim": "~",
    "simeq": "≃",
    "equiv": "≡",
    "propto": "∝",
    "ll": "≪",
    "gg": "≫",
    "to": "→",
    "rightarrow": "→",
    "leftarrow": "←",
    "Rightarrow": "⇒",
    "mapsto": "↦",
    "infty": "∞",
    "sum": "Σ",
    "prod": "∏",
    "int": "∫",
    "in": "∈",
    "notin": "∉",
    "subset": "⊂",
    "cup": "∪",
    "cap": "∩",
    "forall": "∀",
    "exists": "∃",
    "partial": "∂",
    "nabla": "∇",
    "ldots": "…",
    "dots": "…",
    "cdots": "⋯",
    "vdots": "⋮",
    "odot": "⊙",
    "otimes": "⊗",
    "oplus": "⊕",
    "circ": "∘",
    "mid": "|",
    "vert": "|",
    "lVert": "‖",
    "rVert": "‖",
    "Vert": "‖",
    "langle": "⟨",
    "rangle": "⟩",
    "lfloor": "⌊",
    "rfloor": "⌋",
    "lceil": "⌈",
    "rceil": "⌉",
    "ell": "ℓ",
    "mathbb": "",
    "lbrace": "{",
    "rbrace": "}",
    "quad": " ",
    "qquad": " ",
    "prime": "′",
    "star": "⋆",
    "ast": "∗",
    "bullet": "•",
    "neg": "¬",
    "land": "∧",
    "lor": "∨",
    "emptyset": "∅",
    "hat": "",
    "tilde": "",
    "bar": "",
    "vec": "",
    "dot": "",
    "widehat": "",
    "overline": "",
}
_DROPPED = {
    "left",
    "right",
    "big",
    "Big",
    "bigg",
    "Bigg",
    "bigl",
    "bigr",
    "Bigl",
    "Bigr",
    "displaystyle",
    "textstyle",
    "limits",
    "nolimits",
}  # sizing: nothing to read
_SPACES = {",": " ", ";": " ", ":": " ", "!": "", " ": " ", "\\": " "}
_SUPERSCRIPTS = str.maketrans("0123456789+-=()niT", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱᵀ")
_SUPERSCRIPT_CHARS = set("0123456789+-=()niT")
_TEX_TOKEN = re.compile(r"\\([A-Za-z]+)|\\(.)|([{}])|(\s+)|(.)", re.S)


def _tex_tokens(tex: str) -> list[tuple[str, str]]:
    tokens = []
    for command, symbol, brace, space, char in _TEX_TOKEN.findall(tex):
        if command:
            tokens.append(("cmd", command))
        elif symbol:
            tokens.append(("sym", symbol))
        elif brace:
            tokens.append((brace, brace))
        elif space:
            tokens.append(("space", " "))
        else:
            tokens.append(("char", char))
    return tokens


def _group(tokens: list, position: int) -> tuple[str, int]:
    """The text of the argument at ``position`` (a braced group or one token) and the position after it."""
    while position < len(tokens) and tokens[position][0] == "space":
        position += 1
    if position >= len(tokens):
        return "", position
    if tokens[position][0] == "{":
        depth, end = 1, position + 1
        while end < len(tokens) and depth:
            depth += {"{": 1, "}": -1}.get(tokens[end][0], 0)
            end += 1
        return _tex_text(tokens[position + 1 : end - 1]), end
    return _tex_text(tokens[position : position + 1]), position + 1


def _wrapped(text: str) -> str:
    """``text`` in parentheses when it is more than one symbol or word (``(a + b)/2``, but ``a/b``)."""
    return text if re.fullmatch(r"[\w.′ᵀ√]+|\(.*\)", text) else f"({text})"


def _tex_text(tokens: list) -> str:
    out: list[str] = []
    position = 0
    while position < len(tokens):
        kind, value = tokens[position]
        position += 1
        if kind == "cmd":
            if value in ("frac", "dfrac", "tfrac"):
                top, position = _group(tokens, position)
                bottom, position = _group(tokens, position)
                out.append(f"{_wrapped(top)}/{_wrapped(bottom)}")
            elif value == "sqrt":
                inner, position = _group(tokens, position)
                out.append("√" + _wrapped(inner))
            elif value in (
                "mathrm",
                "text",
                "textrm",
                "textit",
                "textbf",
                "mathbf",
                "mathit",
                "mathsf",
                "mathtt",
                "operatorname",
                "boldsymbol",
                "bm",
                "mathcal",
                "mathbb",
                "mbox",
                "emph",
            ):
                inner, position = _group(tokens, position)
                out.append(inner)
            elif value in ("hat", "tilde", "bar", "vec", "dot", "widehat", "overline"):
                inner, position = _group(tokens, position)
                out.append(inner)
            elif value in _DROPPED:
                continue
            else:
                out.append(_SYMBOLS.get(value, value))
        elif kind == "sym":
            out.append(_SPACES.get(value, value))
        elif kind in ("{", "}"):
            if kind == "{":
                inner, position = _group(tokens, position - 1)
                out.append(inner)
        elif kind == "char" and value in "^_":
            argument, position = _group(tokens, position)
            if value == "^" and argument and set(argument) <= _SUPERSCRIPT_CHARS:
                out.append(argument.translate(_SUPERSCRIPTS))
            elif value == "^" and argument == "ᵀ":
                out.append("ᵀ")
            else:
                out.append(value + (argument if len(argument) <= 1 or argument.isalnum() else f"({argument})"))
        else:
            out.append(value)
    return "".join(out)


def tex_to_text(tex: str) -> str:
    """One formula (TeX, without its dollar signs) as readable plain text: ``\\frac{QK^\\top}{\\sqrt{d_k}}`` →
    ``(QKᵀ)/√d_k``, ``\\mathrm{softmax}(s)_j`` → ``softmax(s)_j``. No backslash command or brace is left."""
    text = _tex_text(_tex_tokens(tex))
    return " ".join(text.replace("{", "").replace("}", "").split())


def plain_text_math(text: str) -> str:
    """Plain text (entities already decoded) with each ``$...$`` / ``$$...$$`` formula as readable text."""

    def replace(match: re.Match) -> str:
        return tex_to_text(match.group("display") if match.group("display") is not None else match.group("inline"))

    return _MATH.sub(replace, text)
