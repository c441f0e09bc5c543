"""Lecture decks readable from the back row (course_lib/tools/publish/lecture.py), measured in headless Chromium.

Writes the lecture decks of a lesson and a knowledge check into a temporary folder and opens each from ``file://`` in
a 1,280×720 page (the deck's own size, so reveal.js's scale is 1), refusing every request that would leave the
machine. On every slide, in turn: the computed font size of every text element (paragraphs, list items, table
cells, formulas, the claim) is at least 28 px and of every code element at least 22 px, multiplied by reveal.js's scale; nothing reaches past
the slide's bottom or right edge; each section slide carries a speaker note. Notebook 02's deck has 15-25 slides.
Screenshots of a section slide, a figure slide and a code slide go to test-output/lecture/ (gitignored).
LECTURE_DECKS="01 02 ... 11" measures other decks (default: 02 and the knowledge check 07), LECTURE_FONT=40 at
another --font-size; all eleven passed at 32 and at 40.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from course_lib.tools.publish import lecture

pytestmark = pytest.mark.browser
OUTPUT = Path(__file__).resolve().parents[2] / "test-output" / "lecture"
DECKS = __import__("os").environ.get("LECTURE_DECKS", "02 07").split()
FONT = int(__import__("os").environ.get("LECTURE_FONT", lecture.DEFAULT_FONT))
LOCAL = ("file:", "data:", "about:", "blob:")

MEASURE = """
async () => {
    const out = [];
    const slides = Reveal.getSlides();
    for (let i = 0; i < slides.length; i++) {
        Reveal.slide(i);
        await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
        const slide = slides[i];
        await Promise.all([...slide.querySelectorAll('img')].map(img => img.complete ? null : img.decode().catch(() => null)));
        const scale = Reveal.getScale();
        const box = slide.getBoundingClientRect();
        const small = [], over = [];
        for (const el of slide.querySelectorAll('p, li, td, th, .claim, pre code, h1, h2, h3, img, math')) {
            if (el.closest('aside.notes')) continue;
            const r = el.getBoundingClientRect();
            if (r.bottom > box.top + 720 * scale + 1 || r.right > box.left + 1280 * scale + 1) {
                over.push(el.tagName + ': ' + (el.textContent || el.alt || '').slice(0, 50));
            }
            if (el.tagName === 'IMG') continue;
            const size = parseFloat(getComputedStyle(el).fontSize) * scale;
            const isCode = el.matches('pre code');
            const minimum = isCode ? 22 : 28;
            if (el.textContent.trim() && size < minimum - 0.01) small.push(`${el.tagName} ${size.toFixed(1)}px`);
        }
        out.push({index: i, kind: slide.className, small, over, note: !!slide.querySelector('aside.notes'),
                  scale, words: slide.textContent.trim().slice(0, 40)});
    }
    return out;
}
"""


@pytest.fixture(scope="module")
def lecture_facts(browser, tmp_path_factory):
    out = tmp_path_factory.mktemp("lecture")
    written = lecture.write_lecture_decks(DECKS, out, font=FONT, echo=None)
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    facts = {}
    OUTPUT.mkdir(parents=True, exist_ok=True)
    try:
        for path, _count in written:
            page = context.new_page()
            left, errors = [], []
            page.on("pageerror", lambda error, errors=errors: errors.append(str(error)))

            def guard(route, left=left):
                if route.request.url.startswith(LOCAL):
                    route.continue_()
                else:
                    left.append(route.request.url)
                    route.abort()

            page.route("**/*", guard)
            page.goto(path.as_uri(), wait_until="load")
            page.wait_for_function("window.Reveal && Reveal.isReady()", timeout=30_000)
            measured = page.evaluate(MEASURE)
            for kind in ("lecture-section", "lecture-figure", "lecture-code"):
                index = next((m["index"] for m in measured if kind in m["kind"]), None)
                if index is not None:
                    page.evaluate(f"Reveal.slide({index})")
                    page.wait_for_timeout(100)
                    page.screenshot(path=str(OUTPUT / f"{path.name[:2]}-{kind}.png"))
            facts[path.name[:2]] = {"slides": measured, "left": left, "errors": errors}
            page.close()
    finally:
        context.close()
    return facts


@pytest.mark.parametrize("deck", DECKS)
def test_lecture_text_is_large_and_nothing_overflows(lecture_facts, deck):
    facts = lecture_facts[deck]
    assert not facts["left"], f"requests left the machine: {facts['left']}"
    assert not facts["errors"], f"page errors: {facts['errors']}"
    slides = facts["slides"]
    assert all(abs(s["scale"] - 1) < 0.01 for s in slides), "the page is the deck's size: reveal.js's scale is 1"
    small = {s["index"] + 1: s["small"] for s in slides if s["small"]}
    assert not small, f"text under 28 px or code under 22 px at 1280x720 (slide: elements): {small}"
    over = {s["index"] + 1: s["over"] for s in slides if s["over"]}
    assert not over, f"content past the slide's edge (slide: elements): {over}"
    sections = [s for s in slides if "lecture-section" in s["kind"]]
    assert sections and all(s["note"] for s in sections), "every section slide has one speaker note"


def test_lesson_02_is_a_lecture_not_the_notebook(lecture_facts):
    count = len(lecture_facts["02"]["slides"])
    assert 15 <= count <= 25, f"02's lecture deck has {count} slides (a 20-30 minute lecture: 15-25)"
    kinds = [s["kind"] for s in lecture_facts["02"]["slides"]]
    assert any("figure" in k for k in kinds) and any("code" in k for k in kinds), kinds
