"""The course as a static website that works offline: ``make site`` (``python -m course_lib site``).

Every lesson (with its stored outputs), every exercise (the learner version, generated afresh from the solutions,
so no solution is ever published) and every guide (docs/, INSTRUCTORS.md, CONTRIBUTING.md, benchmarks/README.md)
becomes one page in ``site/``. The front page is written from the syllabus (``course_lib/_syllabus.py``): the
course's title (CITATION.cff), what a learner will be able to do (``site_assets/home.md``), the two parts with every
lesson, its exercise and the minutes each notebook's header states, and how to run it locally. README.md's
installing, testing and contributing sections become pages of their own in the navigation's "For instructors and
contributors" group (``README_PAGES``), so the learner's front page holds none of them.

Each page has a header that stays in view (the title, the search box, on a phone the "Contents" button), the
course's contents down the side, on a wide screen an "On this page" rail that marks the section being read, and
previous/next links in reading order (lesson 01, its exercise, lesson 02, ...) at its end. A lesson or exercise page
offers its notebook to download (the ``.ipynb`` next to the page) and, only when ``[project.urls] Repository`` is
set in pyproject.toml, links that open it on Colab or Binder; without an address it says how to run it locally.
Every code block has a copy button (``site_assets/site.js``).

What a page shows, and why:

- Formulas are typeset when the site is built, as MathML the browser draws itself (``typeset``): no script, no
  CDN, so the site reads on a train and a page shows its formulas the moment it opens.
- Figures carry their stored alt text (``course_lib.lab.plots.show_figure``) as ``<img alt>``.
- Quizzes and the per-topic summary show their stored static form (question, options, the answer and explanation
  folded in ``<details>``); a widget shows its stored ``text/html`` form when it has one (a static, precomputed
  view, such as the attention explorer's stored frames), else its placeholder as a caption that says what the
  widget does and how to use it (download the notebook and run it).
- A prediction ("Predict first", ``course_lib.interactive.predict``) keeps its measurement folded: the outputs of the experiment
  between ``predict("ID")`` and ``reveal("ID")`` and the reveal itself sit behind "Show what was measured" until
  the reader opens it (one opens them all).
- Code and printed outputs keep whole lines and scroll inside their block (a fade at the edge says that a block
  scrolls); the page takes the screen's width. Below 900 px (a phone) the contents open from the header's
  "Contents" button, and a figure wider than the screen opens full size on a tap.
- Each page lists its ``h2``/``h3`` headings (``page_contents``): in the right-hand rail on a wide screen, under
  its own entry in the contents otherwise.
- A search box searches every page offline, served or opened from disk: see ``site_search``.
- Status emoji (✅ ❌ ⏳ ⌛ 🔧) become symbols DejaVu draws (``STATUS_MARKS``): with no emoji font installed, Chromium
  draws emoji as empty boxes.
- Speaker notes (markdown cells starting ``**Speaker notes.**``) and the Colab setup cell are left out.
- Links between pages (``../exercises/ex02_attention.ipynb``, ``docs/quizzes.md#...``) point at the pages; a link
  to another file of the repository points at it on GitHub.

Why nbconvert with a template of our own rather than Jupyter Book or Sphinx: nbconvert is already installed (the
slides use it), renders stored outputs exactly as JupyterLab does, and builds with no network and no new
dependency, in seconds; Jupyter Book 2 needs the network (Node and a download of its theme) to build, and Sphinx
with myst-nb would add a dozen packages for a 20-page site. The template is
``course_lib/tools/publish/site_assets/templates/course_site``.

``site/`` is written afresh on every build; a folder that this command did not write (no ``.course-site`` file
in it) is never touched.
"""

from __future__ import annotations

import copy
import html
import os
import posixpath
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from course_lib import _syllabus as syllabus
from course_lib._errors import CommandError
from course_lib.tools.publish import colab, reading_time, site_search, typeset
from course_lib.tools.publish.prepare import WIDGET_MIMES, prepare_notebook

ROOT = Path(__file__).resolve().parents[3]
ASSETS = Path(__file__).resolve().parent / "site_assets"
TEMPLATE_NAME = "course_site"
MARKER = ".course-site"
STATIC_FILES = ("site.css", "search.js", "site.js")
HOME = ASSETS / "home.md"
LEARNING_PATH = "<!-- course-site: learning path -->"  # where home.md wants the parts and their lessons
# README.md's sections for instructors and contributors, each a page of its own: (page, title, the README's "##"
# headings it holds, in order; a heading matches by its start). A link to README.md opens the first.
README_PAGES = (
    ("install.html", "Installing the course", ("Two commands", "Installing", "Getting help")),
    ("tests.html", "Testing the course", ("Running the tests",)),
    ("code.html", "The code and how it is checked", ("Repository layout", "For contributors")),
)
LEARNER_GUIDES = ("docs/learning-record.md", "docs/evidence.md")
CONTRIBUTOR_GUIDES = (
    "INSTRUCTORS.md",
    "docs/exercises.md",
    "docs/quizzes.md",
    "CONTRIBUTING.md",
    "CHANGELOG.md",
    "benchmarks/README.md",
)
GUIDES = LEARNER_GUIDES + CONTRIBUTOR_GUIDES
CONTRIBUTORS = "contributors"  # the navigation group "For instructors and contributors"
FOLDER_SECTIONS = {"notebooks": "part1", "exercises": "part1", "docs": "guides"}


class SiteError(CommandError):
    """A problem the user can fix; the command line prints it without a traceback."""


def sections() -> tuple[tuple[str, str], ...]:
    """(id, title) of each group of the navigation, in order: the start, one per part of the course, the learners'
    guides, and the pages for instructors and contributors."""
    parts = tuple((f"part{part.number}", f"Part {part.number} · {part.title}") for part in syllabus.PARTS)
    return (("start", "Start"), *parts, ("guides", "Guides"), (CONTRIBUTORS, "For instructors and contributors"))


@dataclass
class Page:
    source: str  # repository-relative path of what the page shows, e.g. notebooks/01_why_rnns_struggle.ipynb
    out: str  # site-relative path of the page, e.g. notebooks/01_why_rnns_struggle.html
    section: str  # one of sections()' ids
    notebook: object = None  # the nbformat node rendered (a guide becomes a one-cell notebook)
    title: str = ""
    run: dict | None = None  # {"colab": url, "binder": url} for notebooks and exercises
    kind: str = "guide"  # "home", "lesson", "exercise" or "guide"
    download: str | None = None  # site-relative path of the notebook offered for download
    notebook_text: str | None = None  # the downloaded notebook's text, when it is not the file at ``source``
    minutes: tuple[int, int] | None = None  # as the notebook's header states them
    aliases: tuple[str, ...] = ()  # other sources a link may name for this page (README.md#a-section it holds)


@dataclass
class Site:
    path: Path
    pages: list[Page] = field(default_factory=list)
    seconds: float = 0.0
    broken_links: list[tuple[str, str]] = field(default_factory=list)  # (page, href) that lead nowhere


# --------------------------------------------------------------------------- collecting the pages


def _first_heading(notebook) -> str:
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            match = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if match:
                return re.sub(r"[*_`]", "", match.group(1)).strip()
    return ""


def _learner_exercises(root: Path) -> list[tuple[str, str]]:
    """(name, notebook JSON text) of every learner exercise, generated from the solutions as the bundle does."""
    from course_lib.checks import EXERCISES
    from course_lib.tools.exercises import build as exercise_build

    exercises_dir = root / "exercises"
    if (exercises_dir / "solutions").is_dir():
        return [(name, exercise_build.generate_text(exercises_dir, name)) for name in EXERCISES]
    return [
        (path.stem, path.read_text(encoding="utf-8")) for path in sorted(exercises_dir.glob("ex[0-9][0-9]_*.ipynb"))
    ]


# A widget's text fallback when it has no static view: "[video search: run this notebook in Jupyter to use it]"
_PLACEHOLDER = re.compile(
    r"^\[(?P<what>[^\]]+?):\s*run this notebook in Jupyter(?:\s+(?:to|and))?\s*(?P<how>[^\]]*)\][ \t]*\n?"
)
_PREDICT = re.compile(r"\bpredict\(\s*[\"']([\w-]+)[\"']")
_REVEAL = re.compile(r"\breveal\(\s*[\"']([\w-]+)[\"']")
_REVEAL_SUMMARY = re.compile(
    r"<summary><strong>Prediction checkpoint</strong>\s*·\s*(.*?)\s*\(the measured answer\)</summary>", re.S
)
_PREDICT_NOTE = re.compile(r"<p><em>Run the notebook to lock in a prediction[^<]*</em></p>")
MEASURED = "course_site_measured"  # cell metadata: the prediction whose measurement this cell's outputs show
SHOW_MEASURED = "Show what was measured"


def widget_caption(text: str, download: str | None) -> str | None:
    """The HTML caption that stands in for a widget whose only stored form is its placeholder text, or None when
    ``text`` is not such a placeholder. What the placeholder printed after its first line is kept below it."""
    match = _PLACEHOLDER.match(text)
    if not match:
        return None
    what, how = match.group("what").strip(), match.group("how").strip() or "use it"
    what = re.sub(r"^interactive\s+", "", what, flags=re.I)  # the caption says "Interactive" already
    where = f'<a download href="{html.escape(download)}">download the notebook</a>' if download else "open the notebook"
    caption = (
        f'<p class="widget-standin"><strong>Interactive in Jupyter: {html.escape(what)}.</strong> '
        f"A web page cannot run it: {where} and run it in JupyterLab to {html.escape(how)}.</p>"
    )
    rest = text[match.end() :].rstrip()
    return caption + (f"<pre>{html.escape(rest)}</pre>" if rest.strip() else "")


def fold_measurements(notebook) -> None:
    """Mark the code cells that show a prediction's measurement (after ``predict("ID")`` up to ``reveal("ID")``)
    so that the page folds their outputs behind "Show what was measured", and word the prediction's own outputs for
    a page that cannot run."""
    open_prediction = None
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        revealed, predicted = _REVEAL.search(cell.source), _PREDICT.search(cell.source)
        if predicted and not revealed:
            open_prediction = predicted.group(1)
            for output in cell.get("outputs", []):
                data = output.get("data", {})
                if "text/html" in data:
                    data["text/html"] = _PREDICT_NOTE.sub(
                        f"<p><em>Choose your answer before you read on: what the experiment measured stays folded "
                        f"below until you open “{SHOW_MEASURED}”.</em></p>",
                        "".join(data["text/html"]),
                    )
            continue
        if open_prediction is None:
            continue
        if revealed:  # its output is folded already: its summary says what it holds, and it opens with the rest
            summary = rf"<summary><strong>{SHOW_MEASURED}</strong> · \1</summary>"
            for output in cell.get("outputs", []):
                data = output.get("data", {})
                if "text/html" in data:
                    text = _REVEAL_SUMMARY.sub(summary, "".join(data["text/html"]))
                    data["text/html"] = text.replace(
                        '<details class="course-checkpoint">',
                        f'<details class="course-checkpoint" data-prediction="{html.escape(open_prediction)}">',
                    )
            open_prediction = None
        elif cell.get("outputs"):
            cell.metadata[MEASURED] = open_prediction


def site_notebook(notebook, download: str | None = None):
    """A copy of ``notebook`` as the site shows it: ``prepare_notebook(copy, "site")`` (no speaker notes, no Colab
    cell, widgets as their static view), a caption for a widget whose only static form is its placeholder text, and
    predictions' measurements marked for folding. ``download``: the notebook's file, relative to its page (for the
    captions' link)."""
    notebook = copy.deepcopy(notebook)
    for cell in notebook.cells:  # before the widget outputs lose their widget data, which tells them apart
        for output in cell.get("outputs", []) if cell.cell_type == "code" else ():
            data = output.get("data")
            if not data or "text/html" in data:
                continue
            widget = any(mime in data for mime in WIDGET_MIMES)
            if widget or set(data) == {"text/plain"}:
                caption = widget_caption("".join(data.get("text/plain", "")), download)
                if caption:
                    data["text/html"] = caption
    prepare_notebook(notebook, "site")
    fold_measurements(notebook)
    return notebook


def collect_pages(root: Path = ROOT) -> list[Page]:
    """Every page of the site, in reading order: the front page, each part's lessons each followed by its
    exercise, the learners' guides, then the pages for instructors and contributors."""
    import nbformat

    root = Path(root)
    readme = root / "README.md"
    if not readme.is_file():
        raise SiteError(f"{readme} is missing: run the command from the course repository.")
    exercises = {name: text for name, text in _learner_exercises(root)}
    part_of = {number: f"part{part.number}" for part in syllabus.PARTS for number in part.notebooks}
    lessons: list[Page] = []
    for row in syllabus.COURSE:
        path = root / "notebooks" / row.file
        source = f"notebooks/{row.file}"
        try:
            notebook = nbformat.read(path, as_version=4)
        except FileNotFoundError:
            raise SiteError(f"{path} is missing: the syllabus (course_lib/_syllabus.py) lists it.") from None
        except Exception as exc:  # nbformat raises several kinds for a broken file
            raise SiteError(f"Could not read {path} as a notebook: {exc}") from None
        section = part_of.get(row.number, f"part{syllabus.PARTS[-1].number}")
        lessons.append(
            Page(
                source,
                f"notebooks/{path.stem}.html",
                section,
                site_notebook(notebook, download=path.name),
                run=run_links(source),
                kind="lesson",
                download=source,
                minutes=stated_minutes(notebook),
            )
        )
        if row.exercise and row.exercise in exercises:
            lessons.append(_exercise_page(row.exercise, exercises.pop(row.exercise), section))
    for name, text in sorted(exercises.items()):  # exercises the syllabus does not name
        lessons.append(_exercise_page(name, text, f"part{syllabus.PARTS[-1].number}"))
    pages = [home_page(root, lessons), *lessons]
    for guide in LEARNER_GUIDES:
        if (root / guide).is_file():
            pages.append(_guide(root, guide, guide[: -len(".md")] + ".html", "guides"))
    pages.extend(readme_pages(root))
    for guide in CONTRIBUTOR_GUIDES:
        if (root / guide).is_file():
            pages.append(_guide(root, guide, guide[: -len(".md")] + ".html", CONTRIBUTORS))
    for page in pages:
        page.title = page.title or _first_heading(page.notebook) or Path(page.source).stem
        page.notebook.metadata["title"] = page.title
    return pages


_RANGE = re.compile(r"^(\d+)\s*(?:–|-|to)\s*(\d+)\s*min")


def stated_minutes(notebook) -> tuple[int, int] | None:
    """The minutes a notebook's header states (``**Estimated time:** 30–75 minutes``), as (low, high)."""
    if not notebook.cells:
        return None
    match = reading_time.STATED.search(notebook.cells[0].source)
    found = _RANGE.match(match.group(1).strip()) if match else None
    return (int(found.group(1)), int(found.group(2))) if found else None


def course_title(root: Path) -> str:
    """The course's title, as CITATION.cff states it (README.md's first heading if there is no CITATION.cff)."""
    citation = root / "CITATION.cff"
    if citation.is_file():
        match = re.search(r"^title:\s*[\"']?(.+?)[\"']?\s*$", citation.read_text(encoding="utf-8"), re.M)
        if match:
            return match.group(1)
    match = re.search(r"^#\s+(.+)$", (root / "README.md").read_text(encoding="utf-8"), re.M)
    return match.group(1).strip() if match else "The course"


def _minutes(minutes: tuple[int, int] | None) -> str:
    return f"{minutes[0]}–{minutes[1]} min" if minutes else ""


def learning_path(lessons: list[Page]) -> str:
    """The two parts as HTML lists: every lesson (linked), its minutes, its exercise (linked) and the exercise's.
    Links are written from the repository's top folder (the page rewrites them to the site's pages)."""
    titles = {row.file: row.title for row in syllabus.COURSE}
    exercise_of = {}
    for lesson, following in zip(lessons, lessons[1:]):
        if lesson.kind == "lesson" and following.kind == "exercise":
            exercise_of[lesson.source] = following
    blocks = []
    for part in syllabus.PARTS:
        items = []
        for page in (p for p in lessons if p.kind == "lesson" and p.section == f"part{part.number}"):
            number = Path(page.source).name[:2]
            start = '<span class="start-here">Start here</span> ' if not blocks and not items else ""
            meta = [f'<span class="minutes">{_minutes(page.minutes)}</span>'] if page.minutes else []
            exercise = exercise_of.get(page.source)
            if exercise:
                meta.append(
                    f'<a class="home-exercise" href="{html.escape(exercise.source)}">Exercise</a>'
                    + (f' <span class="minutes">{_minutes(exercise.minutes)}</span>' if exercise.minutes else "")
                )
            items.append(
                f'<li><a class="home-lesson" href="{html.escape(page.source)}"><span class="home-number">{number}</span>'
                f" {html.escape(titles.get(Path(page.source).name, page.title))}</a>"
                f'<span class="home-meta">{start}{" · ".join(meta)}</span></li>'
            )
        blocks.append(
            f'<h2 id="part-{part.number}">Part {part.number} · {html.escape(part.title)}</h2>\n'
            f'<ol class="home-path">{"".join(items)}</ol>'
        )
    return "\n\n".join(blocks)


def home_page(root: Path, lessons: list[Page]) -> Page:
    """The front page: the course's title, ``site_assets/home.md`` with the learning path where its marker is."""
    import nbformat

    text = HOME.read_text(encoding="utf-8")
    if LEARNING_PATH not in text:
        raise SiteError(f"{HOME} has lost its marker {LEARNING_PATH}: put it back where the lessons go.")
    text = re.sub(r"\A\s*<!--.*?-->\s*", "", text, flags=re.S)  # the note for whoever edits the file
    text = f"# {course_title(root)}\n\n" + text.replace(LEARNING_PATH, learning_path(lessons))
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)])
    return Page("index.md", "index.html", "start", notebook, title="Home", kind="home")


def readme_sections(text: str) -> list[tuple[str, str]]:
    """(heading, text with its heading line) of each ``##`` section of a Markdown file (code blocks respected)."""
    sections: list[tuple[str, list[str]]] = []
    fenced = False
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            sections.append((line[3:].strip(), []))
        if sections:
            sections[-1][1].append(line)
    return [(heading, "".join(lines)) for heading, lines in sections]


def readme_pages(root: Path) -> list[Page]:
    """README.md's sections for instructors and contributors as pages of their own (``README_PAGES``)."""
    return readme_pages_from_text((root / "README.md").read_text(encoding="utf-8"))


def readme_pages_from_text(readme: str) -> list[Page]:
    """The pages of ``README_PAGES`` cut from the text of a README."""
    import nbformat

    sections = readme_sections(readme)
    pages = []
    for number, (out, title, headings) in enumerate(README_PAGES):
        chosen, aliases = [], []
        for wanted in headings:
            found = [text for heading, text in sections if heading.startswith(wanted)]
            if not found:
                raise SiteError(
                    f'README.md has no "## {wanted}" section for the page {out}: rename it back, or change '
                    "README_PAGES in course_lib/tools/publish/site.py."
                )
            headings_held = re.findall(r"^#{2,4}\s+(.+?)\s*$", found[0], re.M)  # the section's and its subsections'
            aliases += [f"README.md#{_github_slug(heading)}" for heading in headings_held]
            chosen.append(found[0])
        text = f"# {title}\n\n" + "\n".join(chosen)
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)])
        # the first is what a link to README.md opens; a link to README.md#a-section opens the page that holds it
        source = "README.md" if number == 0 else aliases[0]
        pages.append(Page(source, out, CONTRIBUTORS, notebook, title=title, aliases=tuple(aliases)))
    return pages


def run_links(source: str) -> dict:
    """The "Open in Colab" and "Launch on Binder" addresses of a notebook; empty while the repository address is
    unset (the page then says: run it locally)."""
    if not colab.repository():
        return {}
    return {"colab": colab.colab_url(source), "binder": colab.binder_url(source)}


def _exercise_page(name: str, text: str, section: str) -> Page:
    import nbformat

    source = f"exercises/{name}.ipynb"
    notebook = nbformat.reads(text, as_version=4)
    return Page(
        source,
        f"exercises/{name}.html",
        section,
        site_notebook(notebook, download=f"{name}.ipynb"),
        run=run_links(source),
        kind="exercise",
        download=source,
        notebook_text=text,
        minutes=stated_minutes(notebook),
    )


def _guide(root: Path, source: str, out: str, section: str) -> Page:
    import nbformat

    text = (root / source).read_text(encoding="utf-8")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)])
    return Page(source, out, section, notebook)


# --------------------------------------------------------------------------- links


def _relative(target: str, page: Page) -> str:
    return posixpath.relpath(target, posixpath.dirname(page.out) or ".")


_HREF = re.compile(r'(<a\b[^>]*?\bhref=")([^"]*)(")')


def rewrite_links(body: str, page: Page, page_map: dict[str, str], root: Path, broken: list) -> str:
    """Point every relative link of ``body`` (rendered from ``page.source``) at a page of the site, at a folder's
    place in the contents, or at the file on GitHub; record links that lead nowhere in ``broken``. Links to the
    site's own files (its pages, ``_static/``) and download links (``<a download href=...>``, the notebook next
    to its page) stay as they are."""

    outputs = set(page_map.values())

    def replace(match: re.Match) -> str:
        href = html.unescape(match.group(2))
        if re.search(r"\sdownload\b", match.group(1)):  # the page's own notebook, offered for download
            return match.group(0)
        if (
            not href
            or href.startswith(("#", "mailto:", "data:", "javascript:"))
            or re.match(r"^[a-z][a-z0-9+.-]*://", href)
        ):
            return match.group(0)
        path, _, fragment = href.partition("#")
        path = path.split("?", 1)[0]
        in_site = posixpath.normpath(posixpath.join(posixpath.dirname(page.out), path))
        if in_site in outputs or in_site.startswith("_static/"):  # the site's own navigation
            return match.group(0)
        target = posixpath.normpath(posixpath.join(posixpath.dirname(page.source), path)) if path else page.source
        anchor = f"#{fragment}" if fragment else ""
        if f"{target}{anchor}" in page_map:  # a section of README.md that is a page of its own
            new = _relative(page_map[f"{target}{anchor}"], page) + anchor
        elif target in page_map:
            new = _relative(page_map[target], page) + anchor
        elif target.strip("/") in FOLDER_SECTIONS and (root / target).is_dir():
            new = _relative("index.html", page) + f"#toc-{FOLDER_SECTIONS[target.strip('/')]}"
        elif not target.startswith("..") and (root / target).exists():
            if not colab.repository():  # no published address: name the file in the course folder, link nowhere
                opening = match.group(1)[: -len('href="')]
                named = html.escape(target, quote=True)
                return (
                    f'{opening}class="repo-file" title="{named} in the course folder" data-file="{named}'
                    + match.group(3)
                )
            kind = "tree" if (root / target).is_dir() else "blob"
            new = f"{colab.repository_url()}/{kind}/{colab.BRANCH}/{target}{anchor}"
        else:
            broken.append((page.out, href))
            return match.group(0)
        return match.group(1) + html.escape(new, quote=True) + match.group(3)

    return _HREF.sub(replace, body)


_HEADING = re.compile(r'<h([1-6]) id="([^"]+)">(.*?)</h\1>', re.S)


def _github_slug(text: str) -> str:
    text = re.sub(r"<[^>]+>", "", html.unescape(text)).replace("¶", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def add_github_anchors(body: str) -> str:
    """Give each heading GitHub's anchor too (``#presenting`` for "## Presenting"), so links written for GitHub work."""

    def replace(match: re.Match) -> str:
        slug = _github_slug(match.group(3))
        if not slug or slug == match.group(2):
            return match.group(0)
        return f'<span id="{html.escape(slug)}" class="anchor-alias"></span>' + match.group(0)

    return _HEADING.sub(replace, body)


# --------------------------------------------------------------------------- status marks, page contents

# Emoji the pages print (check results, progress) and what the site shows instead: a symbol that DejaVu, the font
# every Linux desktop has, draws, in a colour, with the meaning for screen readers. Without an emoji font Chromium
# draws ✅ ❌ ⏳ as empty boxes.
STATUS_MARKS = {
    "\u2705": ("\u2714", "ok", "passed"),  # ✅ -> ✔
    "\u274c": ("\u2718", "bad", "failed"),  # ❌ -> ✘
    "\u23f3": ("\u25cb", "todo", "not done yet"),  # ⏳ -> ○
    "\u231b": ("\u25f7", "late", "timed out"),  # ⌛ -> ◷
    "\U0001f527": ("\u25d0", "doing", "in progress"),  # 🔧 -> ◐
}
_MARK = re.compile("(" + "|".join(map(re.escape, STATUS_MARKS)) + ")\ufe0f?")
_TAG_OR_RAW = re.compile(r"(<script\b.*?</script>|<style\b.*?</style>|<[^>]*>)", re.S | re.I)


def replace_status_marks(body: str) -> str:
    """Each emoji of ``STATUS_MARKS`` in the text of ``body`` (not in tags, scripts or styles) as its mark."""

    def mark(match: re.Match) -> str:
        symbol, kind, label = STATUS_MARKS[match.group(1)]
        return f'<span class="status-mark status-{kind}" role="img" aria-label="{label}">{symbol}</span>'

    parts = _TAG_OR_RAW.split(body)
    return "".join(part if index % 2 else _MARK.sub(mark, part) for index, part in enumerate(parts))


_CONTENT = re.compile(r"<main\b[^>]*\bid=\"content\"[^>]*>.*?</main>", re.S)
_SECTION_HEADING = re.compile(r'<h([23]) id="([^"]+)"[^>]*>(.*?)</h\1>', re.S)
PAGE_CONTENTS = "<!-- course-site: page contents -->"  # where the template wants the list (each place it stands)


def page_headings(body: str) -> list[tuple[int, str, str]]:
    """(level, id, text) of every ``h2``/``h3`` with an id in the page's content, in order."""
    content = _CONTENT.search(body)
    headings = []
    for level, anchor, inner in _SECTION_HEADING.findall(content.group(0) if content else body):
        text = " ".join(html.unescape(re.sub(r"<[^>]+>", "", inner)).replace("\u00b6", "").split())
        if text:
            headings.append((int(level), anchor, text))
    return headings


def page_contents(body: str) -> str:
    """``body`` with its in-page contents (a link to each ``h2``/``h3``) wherever the template left the marker: in
    the right-hand rail (wide screens) and under the page's entry in the contents (narrower ones)."""
    items = "".join(
        f'<li class="page-toc-h{level}"><a href="#{anchor}">{html.escape(text)}</a></li>'
        for level, anchor, text in page_headings(body)
    )
    listing = f'<ul class="page-toc">{items}</ul>' if items else ""
    return body.replace(PAGE_CONTENTS, listing)


# --------------------------------------------------------------------------- build


def default_out_dir() -> Path:
    return ROOT / "site"


def _check_out_dir(out: Path, root: Path) -> Path:
    out = Path(out).expanduser().resolve()
    if out.exists() and not out.is_dir():
        raise SiteError(f"--out {out} is a file. Pass a folder for the website, e.g. --out site.")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise SiteError(
            f"--out {out} is not empty and was not written by this command (no {MARKER} in it), "
            "so nothing was changed. Pass a new folder, or empty this one yourself."
        )
    if out == Path(root).resolve() or out in Path(root).resolve().parents:
        raise SiteError(f"--out {out} contains the course itself. Pass a new folder, e.g. --out site.")
    return out


def _exporter():
    from nbconvert import HTMLExporter

    return HTMLExporter(
        extra_template_basedirs=[str(ASSETS / "templates")],
        template_name=TEMPLATE_NAME,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )


def _copy_static(static: Path) -> None:
    static.mkdir(parents=True, exist_ok=True)
    for name in STATIC_FILES:
        shutil.copy2(ASSETS / name, static / name)
    shutil.copytree(ASSETS / "minisearch", static / "minisearch")


def _typeset(body: str, page: Page) -> str:
    try:
        return typeset.typeset_page(body)
    except typeset.TypesetError as error:
        raise SiteError(f"{page.source}: {error}") from None


def _toc(pages: list[Page], current: Page) -> list[dict]:
    groups = []
    for section_id, title in sections():
        members = [p for p in pages if p.section == section_id]
        if members:
            groups.append(
                {
                    "id": section_id,
                    "title": title,
                    "pages": [
                        {"title": p.title, "href": _relative(p.out, current), "current": p is current} for p in members
                    ],
                }
            )
    return groups


def build_site(out: Path | str | None = None, root: Path | str = ROOT, echo=print) -> Site:
    """Write the website into ``out`` (default ``site/``). Returns what was written."""
    start = time.perf_counter()
    root = Path(root).resolve()
    out = _check_out_dir(Path(out) if out else default_out_dir(), root)
    pages = collect_pages(root)
    page_map = {page.source: page.out for page in pages}
    page_map.update({alias: page.out for page in pages for alias in page.aliases})
    title = course_title(root)
    install = next((page for page in pages if page.out == README_PAGES[0][0]), None)
    exporter = _exporter()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    site = Site(out)
    documents: list[dict] = []
    try:
        _copy_static(staging / "_static")
        for page in pages:
            if page.download:  # the notebook, next to its page
                target = staging / page.download
                target.parent.mkdir(parents=True, exist_ok=True)
                if page.notebook_text is not None:
                    target.write_text(page.notebook_text, encoding="utf-8")
                else:
                    shutil.copy2(root / page.source, target)
        for index, page in enumerate(pages):
            resources = {
                "metadata": {"name": Path(page.out).stem},
                "site": {
                    "root": _relative("index.html", page).replace("index.html", ""),
                    "course_title": title,
                    "short_title": title.split(":")[0],
                    "page_title": title if page.kind == "home" else f"{page.title} · {title.split(':')[0]}",
                    "toc": _toc(pages, page),
                    "prev": {"title": pages[index - 1].title, "href": _relative(pages[index - 1].out, page)}
                    if index
                    else None,
                    "next": {"title": pages[index + 1].title, "href": _relative(pages[index + 1].out, page)}
                    if index + 1 < len(pages)
                    else None,
                    "run": page.run if page.kind in ("lesson", "exercise") else None,
                    "download": _relative(page.download, page) if page.download else None,
                    "download_name": Path(page.download).name if page.download else None,
                    "install": _relative(install.out, page) if install else None,
                    "page_contents_marker": PAGE_CONTENTS,
                    "kind": page.kind,
                    "noun": "exercise" if page.kind == "exercise" else "notebook",
                    "footer": f"Built from {'the syllabus' if page.kind == 'home' else page.source} with "
                    "python -m course_lib site. Code under the MIT licence; text and figures under CC BY 4.0.",
                },
            }
            page.notebook.metadata["title"] = resources["site"]["page_title"]  # the browser tab's
            body, _ = exporter.from_notebook_node(page.notebook, resources=resources)
            body = add_github_anchors(rewrite_links(body, page, page_map, root, site.broken_links))
            body = page_contents(replace_status_marks(body))
            if page.kind != "home":  # the front page only lists the lessons: a search finds the lessons themselves
                documents.extend(site_search.page_documents(page.out, page.title, body, page.kind))
            body = _typeset(body, page)
            target = staging / page.out
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(body, encoding="utf-8")
        (staging / "_static" / "search-index.js").write_text(site_search.index_script(documents), encoding="utf-8")
        (staging / MARKER).write_text("written by python -m course_lib site; rebuilt from scratch on every run\n")
        if out.exists():
            shutil.rmtree(out)
        os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    site.pages = pages
    site.seconds = time.perf_counter() - start
    if echo:
        echo(f"Wrote {len(pages)} pages to {out} in {site.seconds:.1f} s: open {out / 'index.html'}")
        for page, href in site.broken_links:
            echo(f"  broken link in {page}: {href}")
    return site


# --------------------------------------------------------------------------- command line


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "site", help="the course as an offline website in site/ (make site)", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--out", type=Path, default=None, help="folder to write (default: site/ in the course)")
    parser.set_defaults(handler=_run)


def _run(args) -> int:
    site = build_site(args.out)
    return 1 if site.broken_links else 0


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m course_lib.tools.publish.site")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["site", *(argv if argv is not None else sys.argv[1:])])
    try:
        return _run(args)
    except CommandError as exc:
        print(exc, file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
