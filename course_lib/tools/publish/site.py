"""The course as a static website that works offline: ``make site`` (``python -m course_lib site``).

Every lesson (with its stored outputs), every exercise (the learner version, generated afresh from the solutions,
so no solution is ever published) and every guide (README, docs/, INSTRUCTORS.md, benchmarks/README.md) becomes one
page in ``site/``. Each page has the course's contents down the side, previous/next links in reading order
(lesson 01, its exercise, lesson 02, ...), and, on notebooks, links that run it on Colab or Binder.

What a page shows, and why:

- Formulas are typeset when the site is built, as MathML the browser draws itself (``typeset``): no script, no
  CDN, so the site reads on a train and a page shows its formulas the moment it opens.
- Figures carry their stored alt text (``course_lib.lab.plots.show_figure``) as ``<img alt>``.
- Quizzes and the per-topic summary show their stored static form (question, options, the answer and explanation
  folded in ``<details>``); a widget shows its stored ``text/html`` form when it has one (a static, precomputed
  view), else its text fallback (the widget views need a kernel).
- Code and printed outputs keep whole lines and scroll inside their block; the page takes the screen's width.
  Below 900 px (a phone) the contents fold away behind "Contents" so that the text comes first.
- Under its own entry in the contents, each page lists its ``h2``/``h3`` headings (``page_contents``).
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

import html
import os
import posixpath
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from course_lib._errors import CommandError
from course_lib.tools.publish import colab, site_search, typeset
from course_lib.tools.publish.prepare import prepare_notebook

ROOT = Path(__file__).resolve().parents[3]
ASSETS = Path(__file__).resolve().parent / "site_assets"
TEMPLATE_NAME = "course_site"
MARKER = ".course-site"
STATIC_FILES = ("site.css", "search.js")
GUIDES = (
    "docs/exercises.md",
    "docs/quizzes.md",
    "docs/evidence.md",
    "docs/learning-record.md",
    "INSTRUCTORS.md",
    "CONTRIBUTING.md",
    "CHANGELOG.md",
    "benchmarks/README.md",
)
SECTIONS = (("start", "Start"), ("notebooks", "Notebooks"), ("exercises", "Exercises"), ("guides", "Guides"))
FOLDER_SECTIONS = {"notebooks": "notebooks", "exercises": "exercises", "docs": "guides"}


class SiteError(CommandError):
    """A problem the user can fix; the command line prints it without a traceback."""


@dataclass
class Page:
    source: str  # repository-relative path of what the page shows, e.g. notebooks/01_why_rnns_struggle.ipynb
    out: str  # site-relative path of the page, e.g. notebooks/01_why_rnns_struggle.html
    section: str  # one of SECTIONS' ids
    notebook: object = None  # the nbformat node rendered (a guide becomes a one-cell notebook)
    title: str = ""
    run: dict | None = None  # {"colab": url, "binder": url} for notebooks and exercises


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
    from course_lib.checks.registry import EXERCISES
    from course_lib.tools.exercises import build as exercise_build

    exercises_dir = root / "exercises"
    if (exercises_dir / "solutions").is_dir():
        return [(name, exercise_build.generate_text(exercises_dir, name)) for name in EXERCISES]
    return [
        (path.stem, path.read_text(encoding="utf-8")) for path in sorted(exercises_dir.glob("ex[0-9][0-9]_*.ipynb"))
    ]


def collect_pages(root: Path = ROOT) -> list[Page]:
    """Every page of the site, in reading order: home, each lesson followed by its exercise, then the guides."""
    import nbformat

    root = Path(root)
    readme = root / "README.md"
    if not readme.is_file():
        raise SiteError(f"{readme} is missing: run the command from the course repository.")
    pages = [_guide(root, "README.md", "index.html", "start")]
    exercises = {name[:4]: (name, text) for name, text in _learner_exercises(root)}
    for path in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        source = f"notebooks/{path.name}"
        try:
            notebook = nbformat.read(path, as_version=4)
        except Exception as exc:  # nbformat raises several kinds for a broken file
            raise SiteError(f"Could not read {path} as a notebook: {exc}") from None
        prepare_notebook(notebook, "site")
        pages.append(Page(source, f"notebooks/{path.stem}.html", "notebooks", notebook, run=run_links(source)))
        exercise = exercises.pop(f"ex{path.name[:2]}", None)
        if exercise:
            pages.append(_exercise_page(*exercise))
    for name, text in sorted(exercises.values()):  # exercises without a lesson of their number
        pages.append(_exercise_page(name, text))
    for guide in GUIDES:
        if (root / guide).is_file():
            pages.append(_guide(root, guide, guide[: -len(".md")] + ".html", "guides"))
    for page in pages:
        page.title = page.title or _first_heading(page.notebook) or Path(page.source).stem
        page.notebook.metadata["title"] = page.title
    return pages


def run_links(source: str) -> dict:
    """The "Open in Colab" and "Launch on Binder" addresses of a notebook; empty while the repository address is
    unset (the page then says: run it locally)."""
    if not colab.repository():
        return {}
    return {"colab": colab.colab_url(source), "binder": colab.binder_url(source)}


def _exercise_page(name: str, text: str) -> Page:
    import nbformat

    source = f"exercises/{name}.ipynb"
    notebook = nbformat.reads(text, as_version=4)
    prepare_notebook(notebook, "site")
    return Page(source, f"exercises/{name}.html", "exercises", notebook, run=run_links(source))


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
    place in the contents, or at the file on GitHub; record links that lead nowhere in ``broken``."""

    outputs = set(page_map.values())

    def replace(match: re.Match) -> str:
        href = html.unescape(match.group(2))
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
        if target in page_map:
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
PAGE_CONTENTS = "<!-- course-site: page contents -->"  # where the template wants the list


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
    """``body`` with its in-page contents (a link to each ``h2``/``h3``) where the template left the marker."""
    items = "".join(
        f'<li class="page-toc-h{level}"><a href="#{anchor}">{html.escape(text)}</a></li>'
        for level, anchor, text in page_headings(body)
    )
    listing = f'<ul class="page-toc" aria-label="On this page">{items}</ul>' if items else ""
    return body.replace(PAGE_CONTENTS, listing, 1)


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
    sections = []
    for section_id, title in SECTIONS:
        members = [p for p in pages if p.section == section_id]
        if members:
            sections.append(
                {
                    "id": section_id,
                    "title": title,
                    "pages": [
                        {"title": p.title, "href": _relative(p.out, current), "current": p is current} for p in members
                    ],
                }
            )
    return sections


def build_site(out: Path | str | None = None, root: Path | str = ROOT, echo=print) -> Site:
    """Write the website into ``out`` (default ``site/``). Returns what was written."""
    start = time.perf_counter()
    root = Path(root).resolve()
    out = _check_out_dir(Path(out) if out else default_out_dir(), root)
    pages = collect_pages(root)
    page_map = {page.source: page.out for page in pages}
    course_title = pages[0].title
    pages[0].title = "Home: " + course_title.split(":")[0]  # the contents column names the start page briefly
    exporter = _exporter()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    site = Site(out)
    documents: list[dict] = []
    try:
        _copy_static(staging / "_static")
        for index, page in enumerate(pages):
            resources = {
                "metadata": {"name": Path(page.out).stem},
                "site": {
                    "root": _relative("index.html", page).replace("index.html", ""),
                    "course_title": course_title,
                    "toc": _toc(pages, page),
                    "prev": {"title": pages[index - 1].title, "href": _relative(pages[index - 1].out, page)}
                    if index
                    else None,
                    "next": {"title": pages[index + 1].title, "href": _relative(pages[index + 1].out, page)}
                    if index + 1 < len(pages)
                    else None,
                    "run": page.run,
                    "page_contents_marker": PAGE_CONTENTS,
                    "kind": "exercise" if page.section == "exercises" else "notebook",
                    "footer": f"Built from {page.source} with python -m course_lib site. "
                    "Code under the MIT licence; text and figures under CC BY 4.0.",
                },
            }
            body, _ = exporter.from_notebook_node(page.notebook, resources=resources)
            body = add_github_anchors(rewrite_links(body, page, page_map, root, site.broken_links))
            body = page_contents(replace_status_marks(body))
            documents.extend(site_search.page_documents(page.out, page.title, body))
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
