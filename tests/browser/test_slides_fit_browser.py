"""Every slide of the exported decks fits the slide (issue 15), measured in headless Chromium.

Exports every notebook of the course as it is (once for the module), opens each deck from file:// in one shared page
whose viewport is the size of the deck's slide (1150 x 820 plus reveal.js's margin, so the scale is 1), and shows
every slide in turn (reveal.js lays out only the slides near the current one, and the deck fits each slide when it is
shown). The walk through a deck runs inside the page, in one ``page.evaluate``: for each slide it calls
``Reveal.slide``, waits until reveal.js shows the slide, the deck has fitted it (``window.courseFitDone``, set after
MathJax has typeset the slide again), MathJax's queue is empty and the slide's images are loaded, and measures. A slide
overflows when its content is taller or wider than the slide: ``scrollHeight > clientHeight`` (or the widths) of the
slide's <section> (which has ``max-height`` the deck's height and would scroll), or any element inside reaching past
the slide's bottom or right edge (the speaker notes and the content of folded ``<details>`` take no room and are not
counted). The number must be 0, and a deck must have at least 5 slides. It also prints how many slides the deck had to
zoom down to fit, and the smallest zoom. Overflowing slides are listed with their first words, and a screenshot of each
goes to test-output/slides-fit/. One test per deck. MathJax's pauses between its phases are switched off in the test
(see ``NO_MATHJAX_PAUSES``): the same slides, measured the same, in a third of the time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from course_lib.tools.publish import slides

pytestmark = pytest.mark.browser
NOTEBOOKS = slides.course_notebooks()
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-output" / "slides-fit"  # gitignored
WIDTH, HEIGHT = 1150, 820  # the deck's size (slides._exporter)
SLIDE_TIMEOUT_MS = 30_000  # for one slide to be shown, typeset and fitted
# MathJax 2 pauses 50 ms between the phases of every typesetting (``processSectionDelay``) so that a browser can
# repaint in between; the deck typesets a slide again each time it is shown, so those pauses were most of the walk's
# time (about 200 ms a slide). The test sets the pause to 0 before MathJax starts: the slides come out the same (every
# measurement of all 608 slides was identical with and without the pauses when this was written), and the deck's
# typesetting and fitting then finish within ``Reveal.slide``.
NO_MATHJAX_PAUSES = "window.MathJax = {AuthorInit: () => { MathJax.Hub.processSectionDelay = 0; }};"
# Shows slide ``index`` and resolves once the deck has fitted it and MathJax is idle (the same helper is used to go
# back to an overflowing slide for its screenshot).
SHOW = """
window.courseShowSlide = async (index, timeoutMs) => {
    const frame = () => new Promise(resolve => requestAnimationFrame(() => resolve()));
    const until = async (condition, what) => {
        const deadline = performance.now() + timeoutMs;
        while (!condition()) {
            if (performance.now() > deadline) throw new Error(`slide ${index + 1}: ${what} after ${timeoutMs} ms`);
            await frame();
        }
    };
    const target = Reveal.getSlides()[index];
    const fits = 'courseFitDone' in window;  // the deck's own fit (the template); a deck without it is measured as is
    if (fits && Reveal.getCurrentSlide() !== target) window.courseFitDone = false;  // set again by the deck's fit
    Reveal.slide(...Object.values(Reveal.getIndices(target)));
    await until(() => Reveal.getCurrentSlide() === target, 'reveal.js did not show the slide');
    await until(() => !fits || window.courseFitDone === true, 'the deck did not fit the slide');
    await until(() => !(window.MathJax && MathJax.Hub) || (MathJax.Hub.queue.pending === 0 && !MathJax.Hub.queue.running),
                'MathJax is still busy');
    await until(() => Array.from(target.querySelectorAll('img')).every(img => img.complete), 'an image is still loading');
};
"""
# Walks through the whole deck in the page and returns one measurement per slide.
MEASURE_DECK = """async (timeoutMs) => {
    const results = [];
    const slides = Reveal.getSlides();
    for (let index = 0; index < slides.length; index++) {
        await window.courseShowSlide(index, timeoutMs);
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
        results.push({
            slide: index + 1,
            scrollHeight: section.scrollHeight, clientHeight: section.clientHeight,
            scrollWidth: section.scrollWidth, clientWidth: section.clientWidth,
            lowest: lowest, rightmost: rightmost,
            words: section.innerText.trim().split(/\\s+/).slice(0, 8).join(' '),
            zoom: parseFloat(section.dataset.fitZoom || '1'),
        });
    }
    return results;
}"""


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    out = tmp_path_factory.mktemp("fit-decks")
    return {deck.notebook.name: deck for deck in slides.export_decks(NOTEBOOKS, out, echo=None)}


@pytest.fixture(scope="module")
def deck_page(browser):
    """One page, the size of a slide, in which every deck is opened in turn."""
    context = browser.new_context(viewport={"width": round(WIDTH * 1.04) + 2, "height": round(HEIGHT * 1.04) + 2})
    context.set_default_timeout(30_000)
    context.add_init_script(NO_MATHJAX_PAUSES)
    context.add_init_script(SHOW)
    yield context.new_page()
    context.close()


def overflows(m: dict) -> bool:
    return (
        m["scrollHeight"] > m["clientHeight"] + 2
        or m["scrollWidth"] > m["clientWidth"] + 2
        or m["lowest"] > HEIGHT + 2
        or m["rightmost"] > WIDTH + 2
    )


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_no_slide_overflows(notebook, decks, deck_page):
    page = deck_page
    page.goto(decks[notebook.name].path.as_uri(), wait_until="load")
    page.wait_for_function("window.Reveal && Reveal.isReady()")
    measured = page.evaluate(MEASURE_DECK, SLIDE_TIMEOUT_MS)
    total = len(measured)
    bad = [m for m in measured if overflows(m)]
    zooms = [m["zoom"] for m in measured]
    print(
        f"{notebook.stem}: {len(bad)} of {total} slides overflow; zoomed to fit: "
        f"{sum(z < 1 for z in zooms)} of {total} slides, smallest zoom {min(zooms, default=1):.2f}"
    )
    for item in bad:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.evaluate(
            "([index, timeoutMs]) => window.courseShowSlide(index, timeoutMs)", [item["slide"] - 1, SLIDE_TIMEOUT_MS]
        )
        page.screenshot(path=str(SCREENSHOTS / f"{notebook.stem}-slide{item['slide']}.png"))
    report = "\n".join(
        f"  slide {b['slide']}: content {b['scrollHeight']} x {b['scrollWidth']} px "
        f"(lowest {b['lowest']:.0f}, rightmost {b['rightmost']:.0f}) in {b['clientHeight']} x {b['clientWidth']}: "
        f"{b['words']!r}"
        for b in bad
    )
    assert total >= 5, f"only {total} slides"
    assert bad == [], f"{len(bad)} of {total} slides overflow:\n{report}"
