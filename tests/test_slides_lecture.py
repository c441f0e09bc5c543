"""Lecture decks (course_lib/tools/publish/lecture.py) without a browser: sizes, sources, offline, notes.

The browser measurements (font sizes, overflow) are in tests/browser/test_lecture_browser.py.
"""

from __future__ import annotations

import re

import nbformat
import pytest

from course_lib._errors import CommandError
from course_lib._syllabus import COURSE, KNOWLEDGE_CHECKS
from course_lib.tools.cli import main
from course_lib.tools.publish import lecture, slides

NOTEBOOKS = {path.name[:2]: path for path in slides.course_notebooks()}


@pytest.mark.parametrize("number", sorted(NOTEBOOKS))
def test_each_deck_is_a_lecture_with_one_note_per_section(number):
    notebook = nbformat.read(NOTEBOOKS[number], as_version=4)
    built = lecture.build_slides(notebook, number)
    _title, _intro, sections = lecture.sections(notebook)
    low = 10 if number in KNOWLEDGE_CHECKS else 12
    assert low <= len(built) <= 25, f"{number}: {len(built)} slides"
    section_slides = [s for s in built if s.kind == "section"]
    assert len(section_slides) == len(sections) and all(s.note.strip() for s in section_slides)
    notes = [s.note for s in built if s.note]
    assert len(notes) == len(sections), "one speaker note per section, no more"


def test_notes_come_from_the_notebook_then_the_guide():
    notebook = nbformat.read(NOTEBOOKS["02"], as_version=4)
    _t, _i, sections = lecture.sections(notebook)
    built = [s for s in lecture.build_slides(notebook, "02") if s.kind == "section"]
    live, prompts = lecture.guide_notes("02")
    assert live and prompts, "the guide's Run live and Discussion prompts of notebook 02 are read"
    for section, slide in zip(sections, built):
        if section.notes:
            assert slide.note == lecture._note_text(section.notes[0])
        elif section.number in live:
            assert slide.note == live[section.number]
        else:
            assert slide.note.startswith("Ask the room: ") and slide.note[len("Ask the room: ") :] in prompts


def test_the_deck_is_offline_and_has_figures_and_code(tmp_path):
    ((path, count),) = lecture.write_lecture_decks(["02"], tmp_path, echo=None)
    page = path.read_text(encoding="utf-8")
    assert not re.search(r"""(?:src|href)=["']https?:""", page), "nothing is loaded from the network"
    assert page.count('src="data:image/png;base64,') >= 3 and page.count('class="lecture-code"') >= 3
    assert (tmp_path / "_static" / "reveal.js" / "dist" / "reveal.js").is_file()
    assert "font-size: 32px" in page and "font-size: 24px" in page
    assert "<math" in page and "$" not in re.sub(r"<(script|pre|code)\b.*?</\1>", "", page, flags=re.S)
    assert page.count('<section class="lecture-') == count


def test_font_size_option(tmp_path, capsys):
    ((path, _),) = lecture.write_lecture_decks(["04"], tmp_path / "a", font=40, echo=None)
    page = path.read_text(encoding="utf-8")
    assert "font-size: 40px" in page and "font-size: 30px" in page  # code three quarters of the text
    with pytest.raises(CommandError, match="28 to 40"):
        lecture.write_lecture_decks(["04"], tmp_path / "b", font=48, echo=None)
    assert main(["slides", "lecture", "02", "--out", str(tmp_path / "c"), "--font-size", "12"]) == 2
    assert "--font-size" in capsys.readouterr().err
    assert {row.number for row in COURSE} == set(NOTEBOOKS)


@pytest.mark.parametrize("number", sorted(NOTEBOOKS))
def test_no_claim_announces_what_the_slide_does_not_show(number):
    """A claim ending in a colon ("In attention's vocabulary:") shows what it announces (the formula, list, table or
    line after it in the notebook), or else ends at the sentence before; it never leads into the subsection outline."""
    notebook = nbformat.read(NOTEBOOKS[number], as_version=4)
    for slide in lecture.build_slides(notebook, number):
        claim = re.search(r'<div class="claim">(.*?)</div>', slide.html, re.S)
        if slide.kind != "section" or not claim:
            continue
        blocks = re.findall(r"<(p|ul|ol|table)\b", claim.group(1))
        text = re.sub(r"<[^>]+>", "", claim.group(1)).strip()
        assert not text.endswith(":"), f"{number}: the claim ends in a colon with nothing after it: {text[-80:]!r}"
        if re.search(r":</p>\s*$", claim.group(1)) or (blocks and blocks[-1] != "p"):
            assert 'class="outline"' not in slide.html, f"{number}: the outline would read as what the colon announces"


def test_a_claim_shows_the_table_it_announces():
    notebook = nbformat.read(NOTEBOOKS["02"], as_version=4)
    first = next(s for s in lecture.build_slides(notebook, "02") if s.kind == "section")
    assert (
        "In attention's vocabulary:" in first.html
        and "<table>" in first.html
        and "<strong>query</strong>" in first.html
    )
