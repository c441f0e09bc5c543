"""Lecture decks: 12-22 slides a notebook (02: 19), readable from the back row, generated from the same notebooks.

    python -m course_lib slides lecture 02 --out slides          # slides/02_attention_qkv.lecture.html
    python -m course_lib slides lecture --out slides --font-size 36

The notebook decks (``slides export``) show every cell; a lecture deck shows what a 20-30 minute lecture needs, taken
from the notebook (one source, nothing written twice):

- a title slide (the notebook's ``# `` title and its first paragraph);
- for each numbered ``## `` section: a slide with its heading, its **claim** (the section's first sentences; when
  they end in a colon, the formula, list, table or line they announce, else they stop at the sentence before) and
  its subsections as an outline; a slide for each **key figure** (the first figure of each subsection that has one);
  and the section's **run-live cell** (the code that draws its first figure, or else its first short code cell with
  an output) to run in the notebook while the deck shows it;
- one slide each for the summary, the quiz and the exercise.

Each section's slide carries one speaker note (press S): the notebook's own notes for that section, the guide's
"Run live" advice naming that section (INSTRUCTORS.md), or else one of the guide's discussion prompts. Text is set
at ``--font-size`` pixels (default 32) and code at three quarters of it (never below 22) on a 1,280×720 slide; a
figure is at most 480 px tall. Figures are embedded, reveal.js is the vendored copy: the deck works offline.
``tests/browser/test_lecture_browser.py`` measures it in Chromium.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from pathlib import Path

from course_lib._errors import CommandError

WIDTH, HEIGHT = 1280, 720
DEFAULT_FONT = 32
MIN_FONT, MIN_CODE = 28, 22
MAX_FONT = 40  # measured: every deck fits its slides at 32 and 40 px; at 48 some summaries overflow
CODE_LINES = 13  # a run-live cell longer than this shows its first lines and says how many more
CLAIM_WORDS = 55
GUIDE = Path(__file__).resolve().parents[3] / "INSTRUCTORS.md"
NUMBERED = re.compile(r"^(\d+)\.\s")
LIST_MARKER = re.compile(r"^\s*[-*]\s+")


@dataclass
class Section:
    heading: str
    number: int | None
    markdown: list[str] = field(default_factory=list)  # the section's markdown cells (heading cell first)
    subsections: list[str] = field(default_factory=list)
    figures: list[tuple[str, str]] = field(default_factory=list)  # (subsection heading, data URI)
    live: str | None = None  # run-live cell source
    notes: list[str] = field(default_factory=list)


@dataclass
class Slide:
    html: str
    note: str = ""
    kind: str = "content"


def _code_size(font: int) -> int:
    return max(MIN_CODE, round(font * 0.75))


def _strip_heading(source: str) -> str:
    return "\n".join(line for line in source.splitlines() if not re.match(r"^#{1,6} ", line))


def _first_paragraph(source: str) -> str:
    """The first prose paragraph of a markdown cell (no heading, table, list, code or block quote)."""
    return _claim_blocks(source)[0]


def _claim_blocks(source: str) -> tuple[str, str]:
    """The first prose paragraph, and the block right after it when the paragraph ends with a colon (what the colon
    announces: a formula, a list, a table or a line)."""
    blocks = [block.strip() for block in re.split(r"\n\s*\n", _strip_heading(source))]
    for index, text in enumerate(blocks):
        if text and not text.startswith(("|", "-", "*", "```", ">", "<", "$$", "!", "1.")):
            paragraph = " ".join(text.split())
            after = blocks[index + 1] if index + 1 < len(blocks) and paragraph.endswith(":") else ""
            return paragraph, after
    return "", ""


LIST_ITEM = re.compile(r"^(?:[-*]|\d+\.)\s+", re.M)
ANNOUNCED_ITEM_WORDS = 14  # a list item the claim announces, cut to its first words
ANNOUNCED_TABLE_ROWS = 5


def _announced(after: str, claim: str) -> str:
    """Markdown for what a claim ending in a colon announces, short enough for the slide; "" when it is too long
    (the claim then ends at its last sentence before the colon)."""
    words = len(claim.split())
    if after.startswith("$$") and after.endswith("$$"):
        return after if words < 60 else ""
    if LIST_ITEM.match(after):
        items = [" ".join(item.split()) for item in LIST_ITEM.split(after) if item.strip()]
        if words >= 50 or len(items) > 4:
            return ""
        return "\n".join(f"- {_claim(item, ANNOUNCED_ITEM_WORDS)}" for item in items)
    if after.startswith("|"):
        rows = after.splitlines()
        return after if words < 40 and len(rows) <= ANNOUNCED_TABLE_ROWS + 2 else ""
    if after and "\n" not in after and len(after) <= 80 and not after.startswith(("```", "<", "!", ">")):
        return f"`{after}`" if "`" not in after else after
    return ""


def _without_dangling_colon(claim: str) -> str:
    """A claim whose last sentence announces something not shown ends at the sentence before it."""
    sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z$*(])", claim)
    return " ".join(sentences[:-1]) if len(sentences) > 1 else claim[:-1].rstrip() + "."


def _claim(text: str, words: int = CLAIM_WORDS) -> str:
    """The first sentences of ``text``, at most ``words`` words (whole sentences where possible)."""
    sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z$*(])", text)
    out: list[str] = []
    for sentence in sentences:
        if out and len(" ".join(out + [sentence]).split()) > words:
            break
        out.append(sentence)
    claim = " ".join(out)
    if len(claim.split()) > words:
        claim = " ".join(claim.split()[:words]).rstrip(",;:") + " …"
    return claim


def _markdown(text: str) -> str:
    from nbconvert.filters.markdown import markdown2html

    return markdown2html(re.sub(r"^(\d+)\.", r"\1\\.", text))  # "1. A search" is a heading, not a list


def _figure(cell) -> str | None:
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if "image/png" in data:
            return "data:image/png;base64," + "".join(str(data["image/png"]).split())
    return None


def _text_output(cell) -> str:
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream" and output.get("name") == "stdout":
            return str(output.get("text", ""))
        if "text/plain" in output.get("data", {}):
            return str(output["data"]["text/plain"])
    return ""


def _checks_only(source: str) -> bool:
    lines = [line for line in source.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return bool(lines) and all(line.lstrip().startswith(("assert", "check_", "_ =")) for line in lines)


def sections(notebook) -> tuple[str, str, list[Section]]:
    """The notebook's title, its introduction and its ``## `` sections with what a lecture deck takes from each."""
    from course_lib.tools.publish.speaker_notes import NOTES_KEY

    title, intro, found = "", "", []
    current: Section | None = None
    subsection = ""
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# ") and not title:
                    title = line[2:].strip()
                elif line.startswith("## "):
                    heading = line[3:].strip()
                    number = NUMBERED.match(heading)
                    current = Section(heading, int(number.group(1)) if number else None)
                    found.append(current)
                    subsection = heading
                elif line.startswith("### ") and current is not None:
                    subsection = line[4:].strip()
                    current.subsections.append(subsection)
            if current is None:
                if not intro and title:
                    intro = _first_paragraph(cell.source)
            else:
                current.markdown.append(cell.source)
        elif cell.cell_type == "code" and current is not None:
            figure = _figure(cell)
            if figure and not any(sub == subsection for sub, _ in current.figures):
                if not current.figures and not _checks_only(cell.source):
                    current.live = cell.source  # the cell that draws the section's first figure
                current.figures.append((subsection, figure))
            elif (
                current.live is None
                and not current.figures
                and _text_output(cell)
                and len(cell.source.splitlines()) <= CODE_LINES
                and not _checks_only(cell.source)
            ):
                current.live = cell.source
        if current is not None:
            current.notes += [str(note) for note in cell.metadata.get(NOTES_KEY, []) or []]
    return title, intro, found


def guide_notes(number: str, guide: Path = GUIDE) -> tuple[dict[int, str], list[str]]:
    """From INSTRUCTORS.md's block for notebook ``number``: "Run live" advice by section number, and the discussion
    prompts. Empty where the guide is absent (a learner bundle has none)."""
    if not guide.is_file():
        return {}, []
    text = guide.read_text(encoding="utf-8")
    start = re.search(rf"^### {number} · .*$", text, re.M)
    if start is None:
        return {}, []
    end = re.search(r"^#{2,3} ", text[start.end() :], re.M)
    block = text[start.end() : start.end() + end.start()] if end else text[start.end() :]

    def paragraph(label: str) -> str:
        match = re.search(rf"\*\*{label}\.\*\*(.*?)(?:\n\s*\n|\Z)", block, re.S)
        return " ".join(match.group(1).split()) if match else ""

    live: dict[int, str] = {}
    for part in re.split(r"(?=\bSection \d)", paragraph("Run live")):
        found = re.match(r"Section (\d+)", part.strip())
        if found:
            live.setdefault(int(found.group(1)), "Run live: " + part.strip())
    prompts = [p.strip() for p in paragraph("Discussion prompts").split(" · ") if p.strip()]
    return live, prompts


def _note_text(note: str) -> str:
    return re.sub(r"^\*\*Speaker notes[.:]?\*\*\s*", "", note.strip())


def _code_block(source: str, code_size: int = 24) -> str:
    """The cell's first lines, as many as fit the slide once long lines wrap (at 24 px: 14 lines of 78 characters),
    and a comment saying how many more the notebook has."""
    per_line = max(30, int(78 * 24 / code_size))
    budget = max(6, int(min(CODE_LINES, 14) * 24 / code_size))
    lines = source.rstrip().splitlines()
    shown, used = [], 0
    for line in lines:
        rows = max(1, -(-len(line) // per_line))
        if used + rows > budget - (1 if len(shown) < len(lines) - 1 else 0):
            break
        shown.append(line)
        used += rows
    more = len(lines) - len(shown)
    text = "\n".join(shown) + (f"\n# … {more} more line(s) in the notebook" if more > 0 else "")
    return f'<pre class="lecture-code"><code>{html.escape(text)}</code></pre>'


def build_slides(notebook, number: str, guide: Path = GUIDE, font: int = DEFAULT_FONT) -> list[Slide]:
    title, intro, found = sections(notebook)
    live_notes, prompts = guide_notes(number, guide)
    prompts = list(prompts)
    slides = [
        Slide(
            f"<h1>{_inline(title)}</h1>"
            + (f'<div class="claim">{_markdown(_claim(intro, 40))}</div>' if intro else ""),
            kind="title",
        )
    ]
    for section in found:
        heading = section.heading
        lowered = heading.lower()
        note = ""
        if section.notes:
            note = _note_text(section.notes[0])
        elif section.number is not None and section.number in live_notes:
            note = live_notes[section.number]
        elif prompts:
            note = "Ask the room: " + prompts.pop(0)
        else:
            note = "Claim of this section: " + _claim(
                _first_paragraph(section.markdown[0]) if section.markdown else "", 30
            )
        if "summary" in lowered:
            body = "\n".join(section.markdown)
            bullets = [line for line in _strip_heading(body).splitlines() if re.match(r"^\s*[-*] ", line)][:4]
            texts = [LIST_MARKER.sub("", bullet) for bullet in bullets]
            items = "".join(f"<li>{_markdown(_claim(text, 22))}</li>" for text in texts)
            slides.append(Slide(f"<h2>{_inline(heading)}</h2><ul>{items}</ul>", note, "section"))
            continue
        paragraph, after = _claim_blocks(section.markdown[0]) if section.markdown else ("", "")
        claim = _claim(paragraph)
        announced = _announced(after, claim) if claim.endswith(":") else ""
        if announced:
            claim += "\n\n" + announced
        elif claim.endswith(":"):
            claim = _without_dangling_colon(claim)
        outline = "".join(f"<li>{_inline(sub)}</li>" for sub in section.subsections[:4])
        slides.append(
            Slide(
                f"<h2>{_inline(heading)}</h2>"
                + (f'<div class="claim">{_markdown(claim)}</div>' if claim else "")
                + (
                    f'<ul class="outline">{outline}</ul>'
                    if outline and not announced and len(claim.split()) < 35
                    else ""
                ),
                note,
                "section",
            )
        )
        for sub, uri in section.figures:
            slides.append(
                Slide(
                    f'<h3>{_inline(sub)}</h3><img class="figure" alt="{html.escape(_plain_text(sub))}" src="{uri}">',
                    kind="figure",
                )
            )
        if section.live:
            slides.append(
                Slide(
                    f"<h3>Run live: {_inline(heading)}</h3>{_code_block(section.live, _code_size(font))}", kind="code"
                )
            )
    return slides


def _plain_text(text: str) -> str:
    """A heading as plain words for an image's alt text (TeX commands as words, no $ or braces)."""
    text = re.sub(r"\\([A-Za-z]+)", r"\1 ", text)
    return " ".join(re.sub(r"[${}*_`]", " ", text).split())


def _inline(text: str) -> str:
    """Markdown for a heading or list item: no paragraph around it."""
    return re.sub(r"^\s*<p>(.*)</p>\s*$", r"\1", _markdown(text), flags=re.S)


def page(title: str, slides: list[Slide], font: int, static: str = "_static/reveal.js") -> str:
    from course_lib.tools.publish import typeset

    code = _code_size(font)
    sections_html = []
    for slide in slides:
        body = re.sub(r"<(h[123])><p>(.*?)</p>\s*</\1>", r"<\1>\2</\1>", slide.html, flags=re.S)
        body = re.sub(r"<li><p>(.*?)</p>\s*</li>", r"<li>\1</li>", body, flags=re.S)
        note = f'<aside class="notes">{html.escape(slide.note)}</aside>' if slide.note else ""
        sections_html.append(f'<section class="lecture-{slide.kind}">{body}{note}</section>')
    text = f"""<!DOCTYPE html>
<!-- written by: python -m course_lib slides lecture -->
<html lang="en"><head><meta charset="utf-8">
<title>{html.escape(title)} (lecture)</title>
<link rel="stylesheet" href="{static}/dist/reveal.css">
<link rel="stylesheet" href="{static}/dist/theme/white.css">
<style>
.reveal {{ font-size: {font}px; }}
.reveal .slides section {{ text-align: left; height: {HEIGHT}px; box-sizing: border-box; padding: 24px 40px; }}
.reveal h1 {{ font-size: {round(font * 1.6)}px; text-transform: none; }}
.reveal h2 {{ font-size: {round(font * 1.3)}px; text-transform: none; }}
.reveal h3 {{ font-size: {round(font * 1.1)}px; text-transform: none; }}
.reveal p, .reveal li, .reveal .claim {{ font-size: {font}px; line-height: 1.3; }}
.reveal ul {{ display: block; margin-left: 1em; }}
.reveal pre.lecture-code {{ width: 100%; box-shadow: none; margin: 0.3em 0; }}
.reveal pre.lecture-code code {{ font-size: {code}px; line-height: 1.25; max-height: none; white-space: pre-wrap;
    overflow-wrap: anywhere; padding: 8px; background: #f6f8fa; }}
.reveal code {{ font-size: inherit; }}
.reveal li code, .reveal p code, .reveal .claim code, .reveal h2 code, .reveal h3 code {{ font-size: {code}px; }}
.reveal img.figure {{ display: block; margin: 0.2em auto; height: 540px; width: auto; max-width: 100%;
    object-fit: contain; border: 0;
    box-shadow: none; }}
.reveal math.course-math {{ font-family: "STIX Two Math", "Cambria Math", "Latin Modern Math",
    "DejaVu Math TeX Gyre", math; }}
.reveal .slide-number {{ font-size: 18px; }}
</style></head>
<body><div class="reveal"><div class="slides">
{chr(10).join(sections_html)}
</div></div>
<script src="{static}/dist/reveal.js"></script>
<script src="{static}/dist/plugin/notes.js"></script>
<script>
Reveal.initialize({{ width: {WIDTH}, height: {HEIGHT}, margin: 0, minScale: 0.2, maxScale: 2.0, center: false,
    hash: true, transition: "none", slideNumber: "c/t", plugins: [RevealNotes] }});
</script>
</body></html>
"""
    return typeset.typeset_page(text)


def write_lecture_decks(notebooks=None, out_dir=None, font: int = DEFAULT_FONT, echo=print) -> list[tuple[Path, int]]:
    """Write ``<notebook>.lecture.html`` for each notebook into ``out_dir`` (reveal.js copied to ``_static/``)."""
    from course_lib.tools.publish import decks
    from course_lib.tools.publish.typeset import TypesetError

    if not isinstance(font, int) or isinstance(font, bool) or not MIN_FONT <= font <= MAX_FONT:
        raise CommandError(
            f"--font-size must be a whole number of pixels from {MIN_FONT} to {MAX_FONT}, got {font!r} (every deck was measured to fit at 32 and 40)."
        )
    paths = decks.chosen_notebooks(notebooks)
    out_dir = decks.deck_folder(out_dir)
    written = []
    for path in paths:
        notebook = decks.read_notebook(path)
        number = path.name[:2]
        slides = build_slides(notebook, number, font=font)
        title = sections(notebook)[0] or path.stem
        try:
            text = page(title, slides, font)
        except TypesetError as error:
            raise CommandError(f"{path}: {error}") from None
        target = out_dir / f"{path.stem}.lecture.html"
        target.write_text(text, encoding="utf-8")
        written.append((target, len(slides)))
        if echo:
            echo(f"  {target}  ({len(slides)} slides)")
    return written
