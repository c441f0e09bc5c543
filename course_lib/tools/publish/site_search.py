"""The website's offline search: each page cut into sections, and a MiniSearch index of them written as a script.

The index is built here, in Python, in MiniSearch's own serialised form (``MiniSearch.loadJS`` reads it), and
shipped as ``_static/search-index.js``, a script that assigns a global: a page opened from disk (``file://``) may
not ``fetch`` a file next to it, but it may load a script. The search box (``site_assets/search.js``) loads that
script on first use, so a page that is only read costs nothing.

What is searched: one document per section of every page (the text under an ``h1``/``h2``/``h3`` up to the next
one), with the page's title, the section's heading and its text (prose, code and printed outputs). A hit links to
the section.

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

FIELDS = ("title", "heading", "text")
STORE_FIELDS = ("title", "heading", "url", "excerpt")
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
        self.sections: list[dict] = [{"id": "", "heading": "", "text": []}]
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
            self.sections.append({"id": attributes["id"], "heading": "", "text": []})
            self.heading = []
        elif tag in ("p", "div", "pre", "li", "tr", "td", "th", "br") and self.heading is None:
            self.sections[-1]["text"].append(" ")

    def handle_endtag(self, tag):
        if all(open_tag != tag for open_tag, _ in self.stack):
            return  # a stray end tag
        while self.stack:
            open_tag, skipped = self.stack.pop()
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
        else:
            self.sections[-1]["text"].append(data)


def page_sections(body: str) -> list[dict]:
    """``[{"id", "heading", "text"}]`` for each section of a rendered page's ``<main>`` (the part before the first
    heading has id ``""``)."""
    start, end = body.find("<main"), body.rfind("</main>")
    parser = _Sections()
    parser.feed(body[start:end] if start >= 0 and end > start else body)
    parser.close()
    sections = []
    for section in parser.sections:
        text = " ".join(html.unescape("".join(section["text"])).split())
        if section["heading"] or text:
            sections.append({"id": section["id"], "heading": section["heading"], "text": text})
    return sections


def page_documents(out: str, title: str, body: str) -> list[dict]:
    """The search documents of one page (``out`` is its site-relative path, e.g. ``notebooks/02_attention_qkv.html``)."""
    documents, seen = [], set()
    for section in page_sections(body):
        url = f"{out}#{section['id']}" if section["id"] else out
        key, number = url, 1
        while key in seen:  # two headings with one id: MiniSearch needs distinct document ids
            number += 1
            key = f"{url}~{number}"
        seen.add(key)
        excerpt = section["text"][:EXCERPT_CHARS].rsplit(" ", 1)[0] if len(section["text"]) > EXCERPT_CHARS else ""
        documents.append(
            {
                "id": key,
                "title": title,
                "heading": section["heading"] or title,
                "text": section["text"],
                "url": url,
                "excerpt": (excerpt + " …") if excerpt else section["text"],
            }
        )
    return documents
