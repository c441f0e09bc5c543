"""``make site``: the course as an offline website (the browser checks are in tests/browser/test_site_browser.py).

Builds the site once from the repository and checks what a reader must (or must never) find in it: every notebook of
the syllabus, every exercise and guide; no solution; no speaker notes; no widget that needs a kernel; nothing loaded
from the network; every figure with its stored alt text as ``<img alt>``; links that land. A folder the command did
not write is refused.

``test_every_figure_on_the_site_has_its_alt_text`` needs notebooks prepared with
``python -m course_lib notebook prepare`` and re-executed (see tests/test_accessibility.py).
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from course_lib._syllabus import COURSE
from course_lib.tools.publish import bundle, colab, site_search
from course_lib.tools.publish import site as site_module

ROOT = Path(__file__).resolve().parents[1]
BUILD_SECONDS = 60


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("site") / "site"
    start = time.perf_counter()
    site = site_module.build_site(out, echo=None)
    site.measured = time.perf_counter() - start
    return site


def page_html(site, out: str) -> str:
    return (site.path / out).read_text(encoding="utf-8")


def main_of(text: str) -> str:
    """The page's own content (``<main id="content">``), without the navigation around it."""
    return re.search(r'<main\b[^>]*\bid="content"[^>]*>.*?</main>', text, re.S).group(0)


def tags_of(text: str) -> list[tuple[str, dict]]:
    parser = _Attributes()
    parser.feed(text)
    return parser.tags


def test_the_site_builds_offline_in_under_a_minute_with_every_page(built):
    assert built.measured < BUILD_SECONDS, f"{built.measured:.0f} s"
    outs = {page.out for page in built.pages}
    for row in COURSE:
        assert f"notebooks/{Path(row.file).stem}.html" in outs, row.file
        if row.exercise:
            assert f"exercises/{row.exercise}.html" in outs, row.exercise
    assert {"index.html", "INSTRUCTORS.html", "docs/exercises.html", "docs/quizzes.html"} <= outs
    assert built.broken_links == [], built.broken_links
    assert not (built.path / "_static" / "mathjax").exists(), "formulas are typeset at build time: no script"
    assert (built.path / site_module.MARKER).is_file()


def test_exercise_pages_show_the_learner_version_and_no_solution(built):
    blocks = bundle.solution_blocks(ROOT / "exercises")
    for page in built.pages:
        if page.kind != "exercise":
            continue
        code = "\n".join(
            bundle.code_only(line)
            for cell in page.notebook.cells
            if cell.cell_type == "code"
            for line in cell.source.splitlines()
            if bundle.code_only(line)
        )
        assert "raise NotImplementedError" in code, page.out
        for block in blocks:
            body = "\n".join(bundle.code_only(line) for line in block.lines)
            assert body not in code, f"{page.out} shows the solution of {block.function}"


def test_no_speaker_notes_no_live_widgets_nothing_from_the_network(built):
    for page in built.pages:
        text = page_html(built, page.out)
        if page.source.endswith(".ipynb"):
            assert "<strong>Speaker notes.</strong>" not in text, page.out
        assert "widget-view+json" not in text and "widget-state+json" not in text, page.out
        loads = re.findall(r'<(?:script|img|link|iframe)\b[^>]*?\b(?:src|href)="([^"]+)"', text)
        remote = [url for url in loads if re.match(r"^(https?:)?//", url)]
        assert remote == [], f"{page.out} loads {remote[:3]}"
        assert colab.COLAB_MARKER not in text, f"{page.out} shows the Colab setup cell"


def test_quizzes_show_in_static_form_with_folded_answers(built):
    text = page_html(built, "notebooks/07_knowledge_check.html")
    assert text.count('class="course-quiz-static"') >= 5, (
        "four quiz parts (Part 1: notebooks 01-06) and the summary table"
    )
    assert text.count("<summary>Show the answer</summary>") >= 10
    assert "<details open" not in text
    assert 'href="01_why_rnns_struggle.html"' in text, "the summary's links to the lessons point at their pages"


def test_code_folded_in_a_notebook_stays_folded_on_the_site(built):
    """A code cell with its source hidden (tag ``fold``: a check, plumbing) opens only on request; its output shows."""
    import re

    import nbformat

    notebook = nbformat.read(ROOT / "notebooks" / "05_residuals_and_layernorm.ipynb", as_version=4)
    folded = [cell for cell in notebook.cells if cell.metadata.get("jupyter", {}).get("source_hidden")]
    text = page_html(built, "notebooks/05_residuals_and_layernorm.html")
    assert folded and text.count('<details class="course-code-fold">') == len(folded)
    for block in re.findall(r'<details class="course-code-fold">(.*?)</details>', text, flags=re.S):
        assert "jp-InputArea" in block and "jp-OutputArea" not in block, "the code folds, its output does not"


def test_run_links_on_every_notebook_and_exercise(built):
    kinds = {page.kind for page in built.pages}
    assert {"home", "lesson", "exercise", "guide"} <= kinds
    for page in built.pages:
        text = page_html(built, page.out)
        bar = re.search(r'<p class="run-links notebook-bar">(.*?)</p>', text, re.S)
        if page.kind in ("lesson", "exercise") and colab.repository():
            assert (
                html.escape(colab.colab_url(page.source)) in text and html.escape(colab.binder_url(page.source)) in text
            ), page.out
        elif page.kind in ("lesson", "exercise"):  # no published address: how to run it locally, no link
            assert bar and "make lab" in bar.group(1) and 'href="../install.html"' in bar.group(1), page.out
            assert "colab.research" not in text and "mybinder" not in text, page.out
        else:
            assert bar is None, page.out


def test_colab_and_binder_links_appear_only_with_a_repository_address(monkeypatch):
    """With ``[project.urls] Repository`` set, a notebook's page links Colab and Binder; unset, it names none."""
    monkeypatch.setattr(colab, "repository", lambda *args: None)
    assert site_module.run_links("notebooks/02_attention_qkv.ipynb") == {}
    monkeypatch.setattr(colab, "repository", lambda *args: "someone/course")
    links = site_module.run_links("notebooks/02_attention_qkv.ipynb")
    assert set(links) == {"colab", "binder"} and all("someone/course" in url for url in links.values()), links


def test_every_lesson_and_exercise_page_offers_its_notebook(built):
    """A lesson's page links its .ipynb, copied next to it; an exercise's is the learner version (no solution)."""
    from course_lib.tools.exercises import build as exercise_build

    offered = [page for page in built.pages if page.kind in ("lesson", "exercise")]
    assert len(offered) == len(COURSE) + sum(1 for row in COURSE if row.exercise)
    for page in offered:
        text = page_html(built, page.out)
        name = Path(page.source).name
        links = [a for tag, a in tags_of(text) if tag == "a" and "download-notebook" in (a.get("class") or "")]
        assert [(a["href"], "download" in a) for a in links] == [(name, True)], page.out
        copied = built.path / page.download
        assert copied.is_file(), page.out
        if page.kind == "lesson":
            assert copied.read_bytes() == (ROOT / page.source).read_bytes(), page.out
        else:
            learner = exercise_build.generate_text(ROOT / "exercises", Path(name).stem)
            assert copied.read_text(encoding="utf-8") == learner, page.out
    assert not list((built.path / "exercises").glob("solutions*")), "no solution is published"


def stored_alts(notebook) -> list[str]:
    return [
        str(output.get("metadata", {}).get("image/png", {}).get("alt", ""))
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if "image/png" in output.get("data", {})
    ]


def alt_of(tag: str) -> str:
    match = re.search(r"""\balt=(?:"([^"]*)"|'([^']*)')""", tag)
    return (match.group(1) if match.group(1) is not None else match.group(2)) if match else ""


def test_every_figure_on_the_site_has_its_alt_text(built):
    for page in built.pages:
        images = [
            tag for tag in re.findall(r"<img\b[^>]*>", page_html(built, page.out)) if 'src="data:image/png' in tag
        ]
        alts = [html.unescape(alt_of(tag)) for tag in images]
        assert alts == stored_alts(page.notebook), f"{page.out}: the pictures' alt texts differ from the stored ones"
        assert all(alts), f"{page.out}: {alts.count('')} of {len(alts)} figures have no alt text"


def test_a_folder_the_command_did_not_write_is_refused(tmp_path):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("my notes")
    with pytest.raises(site_module.SiteError, match="not written by this command"):
        site_module.build_site(foreign, echo=None)
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]
    result = subprocess.run(
        [sys.executable, "-m", "course_lib", "site", "--out", str(foreign)], capture_output=True, text=True, timeout=120
    )
    assert (
        result.returncode == 2 and "Traceback" not in result.stderr and "not written by this command" in result.stderr
    )
    (tmp_path / "file").write_text("x")
    with pytest.raises(site_module.SiteError, match="is a file"):
        site_module.build_site(tmp_path / "file", echo=None)


def test_links_written_for_github_work_on_the_site(built):
    page = next(p for p in built.pages if p.source == "README.md")
    assert page.out == "install.html", "a link to README.md opens the installing page"
    content = main_of(page_html(built, "code.html"))
    assert 'href="INSTRUCTORS.html"' in content and 'href="benchmarks/README.html"' in content
    home = main_of(page_html(built, "index.html"))
    assert 'href="notebooks/01_why_rnns_struggle.html"' in home and 'href="install.html"' in home
    assert 'href="exercises/ex02_attention.html"' in home
    anchors = re.findall(r'href="INSTRUCTORS\.html#([^"]+)"', "".join(page_html(built, p.out) for p in built.pages))
    instructors = page_html(built, "INSTRUCTORS.html")
    for anchor in anchors:
        assert f'id="{anchor}"' in instructors, anchor
    assert json.dumps(sorted(p.out for p in built.pages))  # a stable, listable set of pages


class _Attributes(HTMLParser):
    """Every start tag's attributes, as the browser's parser reads them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_no_attribute_swallows_the_text_after_it(built):
    """An attribute left open (``data-file="`` with no closing quote) hides everything up to the next quote: in the
    page's source every attribute value escapes its ``<`` (so an unescaped one is markup swallowed by an open
    attribute). With no published address, a link to a repository file names the file, and the prose after it stays."""
    for page in built.pages:
        text = page_html(built, page.out)
        markup = re.sub(r"<(script|style)\b.*?</\1>", "", text, flags=re.S | re.I)
        for value in re.findall(r'\s[\w:-]+="([^"]*)"', markup):
            assert "<" not in value, (page.out, value[:120])
        if not colab.repository():
            parser = _Attributes()
            parser.feed(text)
            named = [attrs for _, attrs in parser.tags if "repo-file" in (attrs.get("class") or "").split()]
            for attrs in named:
                assert (ROOT / attrs["data-file"]).exists(), (page.out, attrs)


# Emoji drawn from an emoji font only (Unicode's Emoji_Presentation in the BMP, and everything from U+1F000): without
# such a font Chromium shows an empty box.
EMOJI = re.compile(
    "[\u231a\u231b\u23e9-\u23ec\u23f0\u23f3\u25fd\u25fe\u2614\u2615\u2648-\u2653\u267f\u2693\u26a1\u26aa\u26ab"
    "\u26bd\u26be\u26c4\u26c5\u26ce\u26d4\u26ea\u26f2\u26f3\u26f5\u26fa\u26fd\u2705\u270a\u270b\u2728\u274c\u274e"
    "\u2753-\u2755\u2757\u2795-\u2797\u27b0\u27bf\u2b1b\u2b1c\u2b50\u2b55\U0001f000-\U0001faff]"
)


def visible_text(body: str) -> str:
    body = re.sub(r"<(script|style)\b.*?</\1>", "", body, flags=re.S | re.I)
    return html.unescape(re.sub(r"<[^>]+>", "", body))


def test_status_icons_render_without_an_emoji_font(built):
    found = {}
    for page in built.pages:
        text = visible_text(page_html(built, page.out))
        if EMOJI.search(text):
            found[page.out] = sorted(set(EMOJI.findall(text)))
    assert found == {}, found
    text = page_html(built, "exercises/ex02_attention.html")
    assert 'class="status-mark status-ok" role="img" aria-label="passed">\u2714</span>' in text
    assert site_module.replace_status_marks('<img alt="\u2705"><p>\u2705\ufe0f ok</p>') == (
        '<img alt="\u2705"><p><span class="status-mark status-ok" role="img" aria-label="passed">\u2714</span> ok</p>'
    )


def test_every_page_lists_its_headings_in_its_own_contents(built):
    for page in built.pages:
        text = page_html(built, page.out)
        headings = site_module.page_headings(text)
        assert headings, f"{page.out} has no h2/h3 headings"
        listing = re.search(r'<ul class="page-toc"[^>]*>(.*?)</ul>', text, re.S)
        assert listing, f"{page.out} has no in-page contents"
        hrefs = re.findall(r'href="#([^"]+)"', listing.group(1))
        assert hrefs == [anchor for _, anchor, _ in headings], page.out
        for anchor in hrefs:
            assert re.search(rf'<h[23] id="{re.escape(anchor)}"', text), f"{page.out}: no heading #{anchor}"
        assert site_module.PAGE_CONTENTS not in text


def test_the_search_index_covers_every_page_and_loads_as_a_script(built):
    script = (built.path / "_static" / "search-index.js").read_text(encoding="utf-8")
    prefix = f"window.{site_search.GLOBAL_NAME} = "
    assert script.startswith(prefix) and script.rstrip().endswith(";")
    index = json.loads(script[len(prefix) : script.rstrip().rindex(";")])
    stored = list(index["storedFields"].values())
    urls = {doc["url"].split("#")[0] for doc in stored}
    assert urls == {page.out for page in built.pages if page.kind != "home"}, "the front page only lists the lessons"
    kinds = {page.out: page.kind for page in built.pages}
    for doc in stored:
        assert doc["heading"].strip() and "#" in doc["url"], f"a hit without its section: {doc['url']}"
        assert doc["kind"] == kinds[doc["url"].split("#")[0]], doc["url"]
        assert "$" not in doc["excerpt"] and not re.search(r"\\[A-Za-z]+", doc["excerpt"]), doc["excerpt"]
        assert not re.search(r"\\[A-Za-z]+|\$", doc["heading"]), doc["heading"]
    softmax = [doc for doc in stored if doc["url"].startswith("exercises/ex02_attention.html#Task-1")]
    assert softmax and "softmax(s)_j = (e^(s_j))/(Σ_k e^(s_k))" in softmax[0]["excerpt"], "a formula reads as text"
    terms = {term for term, _ in index["index"]}
    assert {"softmax", "kv", "cache", "attention", "residual"} <= terms
    assert (built.path / "_static" / "minisearch" / "minisearch.js").is_file()
    assert (built.path / "_static" / "minisearch" / "LICENSE.txt").is_file()


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node to run MiniSearch itself")
def test_the_index_built_in_python_is_the_one_minisearch_builds(built, tmp_path):
    """Our Python port of MiniSearch's indexing gives exactly what MiniSearch.addAll + toJSON gives."""
    documents = []
    for page in built.pages[:6]:
        documents += site_search.page_documents(page.out, page.title, page_html(built, page.out))
    documents.append(
        {"id": "x", "title": "Ünïcode — «quotes»", "heading": "a\u2003b\u2028c", "text": "x.y,z!  KV-cache", "url": "x"}
    )
    (tmp_path / "docs.json").write_text(json.dumps(documents), encoding="utf-8")
    library = site_module.ASSETS / "minisearch" / "minisearch.js"
    script = (
        f"const MiniSearch = require({json.dumps(str(library))});"
        f"const docs = require({json.dumps(str(tmp_path / 'docs.json'))});"
        f"const m = new MiniSearch({{fields: {json.dumps(site_search.FIELDS)}, "
        f"storeFields: {json.dumps(site_search.STORE_FIELDS)}}});"
        "m.addAll(docs); console.log(JSON.stringify(m.toJSON()));"
    )
    result = subprocess.run(["node", "-e", script], capture_output=True, text=True, timeout=120, check=True)
    theirs = json.loads(result.stdout)
    ours = json.loads(json.dumps(site_search.minisearch_index(documents)))
    assert ours["averageFieldLength"] == pytest.approx(theirs.pop("averageFieldLength"))
    ours.pop("averageFieldLength")
    assert dict(ours["index"]) == dict(theirs.pop("index"))
    ours.pop("index")
    assert ours == theirs


def test_a_widget_output_with_an_html_form_shows_the_html(tmp_path):
    """A widget output that also stores text/html (a static, precomputed view) shows that HTML, not the text."""
    import nbformat

    output = nbformat.v4.new_output(
        "display_data",
        data={
            "application/vnd.jupyter.widget-view+json": {"model_id": "abc", "version_major": 2, "version_minor": 0},
            "text/html": '<div class="static-explorer"><table><tr><td>0.91</td></tr></table></div>',
            "text/plain": "TEXT FALLBACK",
        },
    )
    plain = nbformat.v4.new_output(
        "display_data",
        data={"application/vnd.jupyter.widget-view+json": {"model_id": "d"}, "text/plain": "ONLY TEXT"},
    )
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("explorer", outputs=[output, plain])])
    site_module.prepare_notebook(notebook, "site")
    body, _ = site_module._exporter().from_notebook_node(
        notebook,
        resources={
            "site": {
                "root": "",
                "course_title": "t",
                "toc": [],
                "prev": None,
                "next": None,
                "run": None,
                "kind": "notebook",
                "footer": "",
                "page_contents_marker": "",
            }
        },
    )
    assert '<div class="static-explorer">' in body and "TEXT FALLBACK" not in body
    assert "ONLY TEXT" in body and "widget-view+json" not in body


# -- the learner's front page, the pages for instructors and contributors ---------------------------------------------
def test_the_front_page_is_the_syllabus_with_every_lesson_its_exercise_and_its_minutes(built):
    """The home page is built from the syllabus: the course's title, every lesson linked with the minutes its
    notebook's header states, its exercise with the exercise's minutes, "Start here" on the first lesson, a link to
    the installing page; nothing from README's install, test or contributor sections."""
    import nbformat

    content = main_of(page_html(built, "index.html"))
    assert "Transformers, hands-on" in re.search(r"<h1[^>]*>(.*?)</h1>", content, re.S).group(1)
    rows = re.findall(r"<li><a class=\"home-lesson\" href=\"([^\"]+)\">(.*?)</li>", content, re.S)
    assert [href for href, _ in rows] == [f"notebooks/{Path(row.file).stem}.html" for row in COURSE]
    for (_, row_html), row in zip(rows, COURSE):
        notebook = nbformat.read(ROOT / "notebooks" / row.file, as_version=4)
        low, high = reading_time_stated(notebook)
        assert html.escape(row.title, quote=False) in row_html and f"{low}–{high} min" in row_html, row.file
        if row.exercise:
            assert f'href="exercises/{row.exercise}.html"' in row_html, row.file
            exercise = nbformat.read(ROOT / "exercises" / f"{row.exercise}.ipynb", as_version=4)
            assert site_module.stated_minutes(exercise) is not None, row.exercise
            assert "{}–{} min".format(*site_module.stated_minutes(exercise)) in row_html, row.exercise
    assert content.count('class="start-here"') == 1 and 'class="start-here"' in rows[0][1]
    assert 'href="install.html"' in content
    for left_out in ("make test", "Which torch gets installed", "Running the tests", "For contributors", "pytest"):
        assert left_out not in content, f"the front page shows {left_out!r}"


def reading_time_stated(notebook) -> tuple[int, int]:
    from course_lib.tools.publish import reading_time

    stated = reading_time.stated(notebook)
    assert stated, "every lesson states its minutes in its header"
    return stated


def test_install_tests_and_contributing_are_pages_in_their_own_group(built):
    """README's installing, testing and contributing sections are pages of the group "For instructors and
    contributors", with README's text (so they never drift from it); learners' pages come first in reading order."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    group = [page for page in built.pages if page.section == site_module.CONTRIBUTORS]
    outs = [page.out for page in group]
    assert outs[:3] == ["install.html", "tests.html", "code.html"]
    assert {"CONTRIBUTING.html", "INSTRUCTORS.html"} <= set(outs)
    assert built.pages.index(group[0]) > max(i for i, p in enumerate(built.pages) if p.kind in ("lesson", "exercise"))
    install = page_html(built, "install.html")
    assert "Which torch gets installed" in install and "Without make" in install and "make lab" in install
    assert "python -m course_lib doctor" in install
    assert "make test-fast" in page_html(built, "tests.html")
    assert "mutation tests" in page_html(built, "code.html")
    nav = re.search(
        r'<h2 id="toc-contributors">For instructors and contributors</h2>\s*<ul>(.*?)</ul>',
        page_html(built, "index.html"),
        re.S,
    )
    assert nav and all(f'href="{out}"' in nav.group(1) for out in outs), "the navigation's group lists them"
    assert "## Installing" in readme, "the page is cut from README.md"
    with pytest.raises(site_module.SiteError, match='no "## Running the tests" section'):
        site_module.readme_pages_from_text("## Two commands\n\n## Installing\n\n## Getting help\n")


# -- formulas as text, for the search ----------------------------------------------------------------------------------
def test_formulas_read_as_plain_text():
    from course_lib.tools.publish.typeset import plain_text_math, tex_to_text

    assert (
        tex_to_text(r"\mathrm{softmax}(s)_j = \frac{e^{s_j}}{\sum_k e^{s_k}}")
        == "softmax(s)_j = (e^(s_j))/(Σ_k e^(s_k))"
    )
    assert tex_to_text(r"\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V") == "softmax(QKᵀ/√d_k)V"
    assert tex_to_text(r"\sqrt{256} = 16") == "√256 = 16"
    assert tex_to_text(r"W^{-1} x^2, \alpha \cdot \beta") == "W⁻¹ x², α · β"
    assert plain_text_math("divide by $\\sqrt{d_k}$, then $$a \\le b$$.") == "divide by √d_k, then a ≤ b."


def test_every_formula_of_the_course_reads_as_text_without_tex():
    """Every formula in every lesson and exercise turns into text with no backslash command, brace or dollar."""
    import nbformat

    from course_lib.tools.publish.typeset import _MATH, tex_to_text

    count = 0
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) + sorted(
        (ROOT / "exercises").glob("ex*.ipynb")
    ):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "markdown":
                continue
            for match in _MATH.finditer(cell.source):
                tex = match.group("display") if match.group("display") is not None else match.group("inline")
                text = tex_to_text(tex)
                assert not re.search(r"\\[A-Za-z]|[{}$]", text), (path.name, tex, text)
                count += 1
    assert count > 100, count


# -- honest stand-ins ----------------------------------------------------------------------------------------------------
def test_a_predictions_measurement_is_folded_until_asked(built):
    """In every lesson, the outputs between ``predict("ID")`` and ``reveal("ID")`` are inside "Show what was measured"
    folds, the reveal's own fold says so too, and no "Measured:" stands outside a fold."""
    predictions = 0
    for page in built.pages:
        if page.kind != "lesson":
            continue
        text = page_html(built, page.out)
        ids = set(re.findall(r'>predict</span><span class="p">\(</span><span class="s2">"([\w-]+)"', text))
        predictions += len(ids)
        for prediction in ids:
            folds = re.findall(rf'<details class="course-measured" data-prediction="{prediction}">', text)
            assert folds, f"{page.out}: the experiment of {prediction} shows its outputs unfolded"
            reveal = re.search(
                rf'<details class="course-checkpoint" data-prediction="{prediction}"><summary>'
                rf"<strong>{site_module.SHOW_MEASURED}</strong>",
                text,
            )
            assert reveal, f"{page.out}: the reveal of {prediction}"
        unfolded = re.sub(r"<details\b.*?</details>", "", text, flags=re.S)
        assert "Measured:" not in unfolded, page.out
        assert "Run the notebook to lock in a prediction" not in text, page.out
    assert predictions >= 8, predictions


def test_a_widget_placeholder_becomes_a_caption_that_says_how_to_use_it(built):
    text = page_html(built, "notebooks/02_attention_qkv.html")
    assert "[interactive video search: run this notebook in Jupyter to use it]" not in text
    assert (
        '<p class="widget-standin"><strong>Interactive in Jupyter: video search.</strong> A web page '
        'cannot run it: <a download="" href="02_attention_qkv.ipynb">download the notebook</a>'
    ) in text
    caption = site_module.widget_caption(
        "[sampling lab: run this notebook in Jupyter to move the sliders]\n a 1\n", "x.ipynb"
    )
    assert "to move the sliders.</p>" in caption and "<pre> a 1</pre>" in caption
    assert site_module.widget_caption("a plain output", "x.ipynb") is None


def test_the_loss_ladder_samples_are_visible_on_the_page_of_11(built):
    """Notebook 11's loss ladder: every model's sample, with its bits per byte, shows on the page, outside any fold."""
    import nbformat

    notebook = nbformat.read(ROOT / "notebooks" / "11_text_to_tokens.ipynb", as_version=4)
    printed = "".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code" and "corpus.sample_ids" in cell.source
        for output in cell.outputs
    )
    rungs = re.findall(r"^── (.+): ([0-9.]+) bits per byte\n(.+)$", printed, flags=re.M)
    assert {name for name, _, _ in rungs} >= {"unigram", "bigram", "decoder, step 0", "decoder, step 800"}, rungs
    page = main_of(page_html(built, "notebooks/11_text_to_tokens.html"))
    unfolded = html.unescape(re.sub(r"<details\b.*?</details>", "", page, flags=re.S))
    for name, level, sample in rungs:
        assert f"── {name}: {level} bits per byte" in unfolded, f"the ladder's rung {name} is not visible"
        assert sample.strip()[:60] in unfolded, f"the sample of {name} is not visible"
