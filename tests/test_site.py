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
import subprocess
import sys
import time
from pathlib import Path

import pytest

from course_lib.syllabus import COURSE
from course_lib.tools.publish import bundle, colab
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


def test_the_site_builds_offline_in_under_a_minute_with_every_page(built):
    assert built.measured < BUILD_SECONDS, f"{built.measured:.0f} s"
    outs = {page.out for page in built.pages}
    for row in COURSE:
        assert f"notebooks/{Path(row.file).stem}.html" in outs, row.file
        if row.exercise:
            assert f"exercises/{row.exercise}.html" in outs, row.exercise
    assert {"index.html", "INSTRUCTORS.html", "docs/exercises.html", "docs/quizzes.html"} <= outs
    assert built.broken_links == [], built.broken_links
    assert (built.path / "_static" / "mathjax" / "MathJax.js").is_file()
    assert (built.path / site_module.MARKER).is_file()


def test_exercise_pages_show_the_learner_version_and_no_solution(built):
    blocks = bundle.solution_blocks(ROOT / "exercises")
    for page in built.pages:
        if page.section != "exercises":
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


def test_run_links_on_every_notebook_and_exercise(built):
    for page in built.pages:
        text = page_html(built, page.out)
        if page.section in ("notebooks", "exercises") and colab.repository():
            assert (
                html.escape(colab.colab_url(page.source)) in text and html.escape(colab.binder_url(page.source)) in text
            ), page.out
        elif page.section in ("notebooks", "exercises"):  # no published address: how to run it locally, no link
            assert "make lab" in text and "colab.research" not in text and "mybinder" not in text, page.out
        else:
            assert 'class="run-links"' not in text, page.out


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
    text = page_html(built, page.out)
    assert 'href="INSTRUCTORS.html"' in text and 'href="notebooks/01_why_rnns_struggle.html"' in text
    assert 'href="exercises/ex02_attention.html"' in text
    anchors = re.findall(r'href="INSTRUCTORS\.html#([^"]+)"', "".join(page_html(built, p.out) for p in built.pages))
    instructors = page_html(built, "INSTRUCTORS.html")
    for anchor in anchors:
        assert f'id="{anchor}"' in instructors, anchor
    assert json.dumps(sorted(p.out for p in built.pages))  # a stable, listable set of pages
