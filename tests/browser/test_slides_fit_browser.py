"""Every slide of the exported decks fits the slide (issue 15), measured in headless Chromium.

Exports every notebook of the course as it is, opens each deck from file:// in a viewport the size of the deck's slide
(1150 x 820 plus reveal.js's margin, so the scale is 1), shows every slide in turn (reveal.js lays out only the
slides near the current one, and the deck fits each slide when it is shown), waits for MathJax, and counts the
slides whose content is taller or wider than the slide: ``scrollHeight > clientHeight`` of the slide's <section>
(which has ``max-height`` the deck's height and would scroll), or any element inside reaching past the slide's
bottom or right edge (the speaker notes and the content of folded ``<details>`` take no room and are not counted).
The number must be 0. It also prints how many slides the deck had to zoom down to fit, and the smallest zoom.
Overflowing slides are listed with their first words, and a screenshot of each goes to test-output/slides-fit/.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from course_lib.tools.publish import slides

pytestmark = pytest.mark.browser
NOTEBOOKS = slides.course_notebooks()
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-output" / "slides-fit"  # gitignored
WIDTH, HEIGHT = 1150, 820  # the deck's size (slides._exporter)
MEASURE = """() => {
    const section = Reveal.getCurrentSlide();
    const box = section.getBoundingClientRect();
    const scale = Reveal.getScale();
    let lowest = 0, rightmost = 0;
    for (const el of section.querySelectorAll('*')) {
        if (el.closest('aside.notes')) continue;  // the speaker view's, not the slide's
        const folded = el.closest('details:not([open])');  // a folded answer takes no room until opened
        if (folded && !el.closest('summary')) continue;
        const r = el.getBoundingClientRect();
        if (r.width === 0 || r.height === 0) continue;
        lowest = Math.max(lowest, (r.bottom - box.top) / scale);
        rightmost = Math.max(rightmost, (r.right - box.left) / scale);
    }
    return {
        scrollHeight: section.scrollHeight, clientHeight: section.clientHeight,
        scrollWidth: section.scrollWidth, clientWidth: section.clientWidth,
        lowest: lowest, rightmost: rightmost,
        words: section.innerText.trim().split(/\\s+/).slice(0, 8).join(' '),
        zoom: parseFloat(section.dataset.fitZoom || '1'),
    };
}"""


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    out = tmp_path_factory.mktemp("fit-decks")
    return {deck.notebook.name: deck for deck in slides.export_decks(NOTEBOOKS, out, echo=None)}


def overflowing_slides(page) -> tuple[int, list[dict]]:
    """(slides in the deck, the ones that overflow) for the deck open in ``page``."""
    total = page.evaluate("Reveal.getSlides().length")
    bad, zooms = [], []
    for index in range(total):
        page.evaluate(f"Reveal.slide(...Object.values(Reveal.getIndices(Reveal.getSlides()[{index}])))")
        page.wait_for_function(
            "!window.MathJax || (MathJax.Hub.queue.pending === 0 && !MathJax.Hub.queue.running)", timeout=30_000
        )
        page.wait_for_function("window.courseFitDone === true || !('courseFitDone' in window)", timeout=30_000)
        page.wait_for_timeout(50)
        m = page.evaluate(MEASURE)
        zooms.append(m["zoom"])
        over = (
            m["scrollHeight"] > m["clientHeight"] + 2
            or m["scrollWidth"] > m["clientWidth"] + 2
            or m["lowest"] > HEIGHT + 2
            or m["rightmost"] > WIDTH + 2
        )
        if over:
            bad.append({"slide": index + 1, **m})
    zoomed = [z for z in zooms if z < 1]
    print(f"  zoomed to fit: {len(zoomed)} of {total} slides, smallest zoom {min(zooms, default=1):.2f}")
    return total, bad


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_no_slide_overflows(notebook, decks, browser):
    deck = decks[notebook.name]
    context = browser.new_context(viewport={"width": round(WIDTH * 1.04) + 2, "height": round(HEIGHT * 1.04) + 2})
    context.set_default_timeout(30_000)
    page = context.new_page()
    try:
        page.goto(deck.path.as_uri(), wait_until="load")
        page.wait_for_function("window.Reveal && Reveal.isReady()")
        total, bad = overflowing_slides(page)
        for item in bad:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.evaluate(f"Reveal.slide(...Object.values(Reveal.getIndices(Reveal.getSlides()[{item['slide'] - 1}])))")
            page.wait_for_timeout(100)
            page.screenshot(path=str(SCREENSHOTS / f"{notebook.stem}-slide{item['slide']}.png"))
        report = "\n".join(
            f"  slide {b['slide']}: content {b['scrollHeight']} x {b['scrollWidth']} px "
            f"(lowest {b['lowest']:.0f}, rightmost {b['rightmost']:.0f}) in {b['clientHeight']} x {b['clientWidth']}: "
            f"{b['words']!r}"
            for b in bad
        )
        print(f"{notebook.stem}: {len(bad)} of {total} slides overflow")
        assert total >= 5 and bad == [], f"{len(bad)} of {total} slides overflow:\n{report}"
    finally:
        context.close()
