"""The website's offline search: each page cut into sections, and a MiniSearch index of them written as a script.

The index is built here, in Python, in MiniSearch's own serialised form (``MiniSearch.loadJS`` reads it), and
shipped as ``_static/search-index.js``, a script that assigns a global: a page opened from disk (``file://``) may
not ``fetch`` a file next to it, but it may load a script. The search box (``site_assets/search.js``) loads that
script on first use, so a page that is only read costs nothing.

What is searched: one document per section of every page (the text under an ``h1``/``h2``/``h3`` up to the next
one), with the page's title, the section's heading and its text (prose, code and printed outputs). A hit links to
the section; text before a page's first heading is not a document of its own (a hit always names its section).
Each document stores its page's kind (``lesson``, ``exercise``, ``guide``): the search box boosts lessons above
exercises and guides, so that the section that teaches a word comes before the pages that use it.

Formulas are indexed and shown as readable text (``softmax(s)_j = (e^(s_j))/(Σ_k e^(s_k))``, from
``typeset.tex_to_text``), never as TeX source; an excerpt is the section's prose (its code and outputs only when
it has no prose).

MiniSearch's defaults are reproduced exactly (``tests/test_site.py`` compares with MiniSearch itself when Node is
installed): a field is split on runs of white space, line breaks and Unicode punctuation; a term is lower-cased; a
field's length is its number of distinct tokens.
"""

from __future__ import annotations

import functools
import html
import json
import re
import sys
import unicodedata
from html.parser import HTMLParser

from course_lib.tools.publish.typeset import plain_text_math

FIELDS = ("title", "heading", "text")
STORE_FIELDS = ("title", "heading", "url", "excerpt", "kind")
KINDS = ("lesson", "exercise", "guide")
EXCERPT_CHARS = 180
GLOBAL_NAME = "COURSE_SEARCH_INDEX"


@functools.lru_cache(maxsize=1)
def _separator() -> re.Pattern:
    """MiniSearch's ``/[\\n\\r\\p{Z}\\p{P}]+/u`` for Python's ``re``, which has no ``\\p{...}``."""
    ranges: list[list[int]] = []
    for code in range(sys.maxunicode + 1):
        if unicodedata.category(chr(code))[0] in "ZP" or code in (10, 13):
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
    parts = "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)
    return re.compile(f"[{parts}]+")


def tokenize(text: str) -> list[str]:
    """MiniSearch's default tokenizer: ``text.split(SPACE_OR_PUNCTUATION)`` (empty ends kept, as JavaScript does)."""
    return _separator().split(text)


def minisearch_index(documents: list[dict]) -> dict:
    """The plain object ``MiniSearch.toJSON()`` would give after ``addAll(documents)`` with
    ``{fields: FIELDS, storeFields: STORE_FIELDS}`` and MiniSearch's defaults (``idField: "id"``)."""
    field_ids = {name: number for number, name in enumerate(FIELDS)}
    index: dict[str, dict[int, dict[int, int]]] = {}
    field_length: dict[str, list[int]] = {}
    average = [0.0] * len(FIELDS)
    for short_id, document in enumerate(documents):
        lengths = []
        for field_id, name in enumerate(FIELDS):
            tokens = tokenize(str(document[name]))
            length = len(set(tokens))
            lengths.append(length)
            average[field_id] = (average[field_id] * short_id + length) / (short_id + 1)
            for token in tokens:
                term = token.lower()
                if term:
                    freqs = index.setdefault(term, {}).setdefault(field_id, {})
                    freqs[short_id] = freqs.get(short_id, 0) + 1
        field_length[str(short_id)] = lengths
    return {
        "documentCount": len(documents),
        "nextId": len(documents),
        "documentIds": {str(i): document["id"] for i, document in enumerate(documents)},
        "fieldIds": field_ids,
        "fieldLength": field_length,
        "averageFieldLength": average,
        "storedFields": {
            str(i): {name: document[name] for name in STORE_FIELDS if name in document}
            for i, document in enumerate(documents)
        },
        "dirtCount": 0,
        "index": [
            [term, {str(field): {str(doc): n for doc, n in freqs.items()} for field, freqs in fields.items()}]
            for term, fields in index.items()
        ],
        "serializationVersion": 2,
    }


def index_script(documents: list[dict]) -> str:
    """The text of ``search-index.js``: the index assigned to ``window.COURSE_SEARCH_INDEX``."""
    data = json.dumps(minisearch_index(documents), ensure_ascii=False, separators=(",", ":"))
    # inside a script, "</script" would end it and U+2028/9 end a line in older engines: escape them
    data = data.replace("</", "<\\/").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return f"window.{GLOBAL_NAME} = {data};\n"


class _Sections(HTMLParser):
    """The text of ``<main>`` cut at each ``h1``-``h3``; navigation, scripts, styles and heading anchors left out."""

    SKIPPED = {"script", "style", "nav", "footer", "template", "button"}
    HEADINGS = {"h1", "h2", "h3"}
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.sections: list[dict] = [{"id": "", "heading": "", "text": [], "code": []}]
        self.code_depth = 0  # inside a pre: a code block or a printed output, not prose
        self.skip_depth = 0
        self.stack: list[tuple[str, bool]] = []  # (tag, opened a skipped region)
        self.heading: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        attributes = dict(attrs)
        classes = (attributes.get("class") or "").split()
        skipped = tag in self.SKIPPED or "anchor-link" in classes or "visually-hidden" in classes
        self.stack.append((tag, skipped))
        if skipped:
            self.skip_depth += 1
        elif tag in self.HEADINGS and not self.skip_depth and attributes.get("id"):
            self.sections.append({"id": attributes["id"], "heading": "", "text": [], "code": []})
            self.heading = []
        elif tag in ("p", "div", "pre", "li", "tr", "td", "th", "br") and self.heading is None:
            self.sections[-1]["text"].append(" ")
            self.sections[-1]["code"].append(" ")
        if tag == "pre" and not skipped:
            self.code_depth += 1

    def handle_endtag(self, tag):
        if all(open_tag != tag for open_tag, _ in self.stack):
            return  # a stray end tag
        while self.stack:
            open_tag, skipped = self.stack.pop()
            if open_tag == "pre" and not skipped:
                self.code_depth -= 1
            if skipped:
                self.skip_depth -= 1
            if open_tag in self.HEADINGS and self.heading is not None and not self.skip_depth:
                self.sections[-1]["heading"] = " ".join("".join(self.heading).split())
                self.heading = None
            if open_tag == tag:
                break

    def handle_data(self, data):
        if self.skip_depth:
            return
        if self.heading is not None:
            self.heading.append(data)
        elif self.code_depth:
            self.sections[-1]["code"].append(data)
        else:
            self.sections[-1]["text"].append(data)


def page_sections(body: str) -> list[dict]:
    """``[{"id", "heading", "text", "code"}]`` for each section of a rendered page's ``<main>`` (the part before the
    first heading has id ``""``): ``text`` is its prose with formulas as readable text, ``code`` its code and
    printed outputs."""
    start, end = body.find("<main"), body.rfind("</main>")
    parser = _Sections()
    parser.feed(body[start:end] if start >= 0 and end > start else body)
    parser.close()
    sections = []
    for section in parser.sections:
        text = " ".join(plain_text_math(html.unescape("".join(section["text"]))).split())
        code = " ".join(html.unescape("".join(section["code"])).split())
        heading = " ".join(plain_text_math(section["heading"]).split())
        if heading or text or code:
            sections.append({"id": section["id"], "heading": heading, "text": text, "code": code})
    return sections


def _excerpt(text: str) -> str:
    if len(text) <= EXCERPT_CHARS:
        return text
    return text[:EXCERPT_CHARS].rsplit(" ", 1)[0] + " …"


def page_documents(out: str, title: str, body: str, kind: str = "guide") -> list[dict]:
    """The search documents of one page (``out`` is its site-relative path, e.g. ``notebooks/02_attention_qkv.html``;
    ``kind`` one of ``KINDS``): one per section with a heading."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    documents, seen = [], set()
    for section in page_sections(body):
        if not (section["id"] and section["heading"]):
            continue  # no heading to name the hit, no anchor to open it at
        url = f"{out}#{section['id']}"
        key, number = url, 1
        while key in seen:  # two headings with one id: MiniSearch needs distinct document ids
            number += 1
            key = f"{url}~{number}"
        seen.add(key)
        documents.append(
            {
                "id": key,
                "title": title,
                "heading": section["heading"],
                "text": " ".join(filter(None, (section["text"], section["code"]))),
                "url": url,
                "excerpt": _excerpt(section["text"] or section["code"]),
                "kind": kind,
            }
        )
    return documents
