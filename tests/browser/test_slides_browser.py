"""The exported slide decks open and render offline, and every slide fits the slide (issue 15), in headless Chromium.

Exports every notebook with ``course_lib.tools.publish.slides.export_decks`` into a temporary folder, once for the
module (it must take under a minute), and opens each deck once, from ``file://``, in a page whose viewport is the size
of the deck's slide (1150 x 820 plus reveal.js's margin, so the scale is 1), with every request that would leave the
machine refused and recorded. Everything the checks need is read from that one load (the ``deck_facts`` fixture), and
two tests per deck assert on it:

``test_deck_renders_offline``: reveal.js initialised, the deck has at least 5 slides, no request left the machine
(during the whole visit, the walk included), the reveal.js theme loaded, and the formulas are there as MathML (typeset
when the deck was written) with no error element and no ``$...$`` left as text; then the first slide with a displayed
formula (else any formula) is shown and the formula must have a size there (waiting for the deck's own
``courseFitDone`` signal, not for a fixed time). No page error or console error may be logged while the deck loads
(nor later, while the fit test shows its slides). These facts are about loading, typesetting and a formula having a
size, so the slide-sized viewport serves them as well as the 1280 x 800 window they were once read at. A screenshot of
the first slide of each deck, and of the first slide with a formula, goes to test-output/slides/ (gitignored), at the
slide's size.

``test_no_slide_overflows``: every slide is shown in turn (reveal.js lays out only the slides near the current one,
and the deck fits each slide when it is shown). The walk through a deck runs inside the page, in one
``page.evaluate``: for each slide it calls ``Reveal.slide``, waits until reveal.js shows the slide, the deck has fitted
it (``window.courseFitDone``) and the slide's images are loaded, and measures. A slide overflows when its content is taller or wider than the slide:
``scrollHeight > clientHeight`` (or the widths) of the slide's <section> (which has ``max-height`` the deck's height and
would scroll), or any element inside reaching past the slide's bottom or right edge (the speaker notes and the content
of folded ``<details>`` take no room and are not counted). The number must be 0, and a deck must have at least 5
slides. It also prints how many slides the deck had to zoom down to fit, and the smallest zoom. Overflowing slides are
listed with their first words, and a screenshot of each goes to test-output/slides-fit/.

A deck that does not load (reveal.js not initialised, a slide that cannot be shown) fails its tests with the stage and Playwright's message, without being opened again.

``test_rise_presents_a_notebook_live_in_jupyterlab``: jupyterlab-rise presents a notebook from the local JupyterLab.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from course_lib.tools.publish import slides

pytestmark = pytest.mark.browser
NOTEBOOKS = slides.course_notebooks()
OUTPUT = Path(__file__).resolve().parents[2] / "test-output"  # gitignored
SCREENSHOTS = OUTPUT / "slides"
FIT_SCREENSHOTS = OUTPUT / "slides-fit"
LOCAL_SCHEMES = ("file:", "data:", "about:", "blob:")
EXPORT_SECONDS = 60
WIDTH, HEIGHT = 1150, 820  # the deck's size (slides._exporter)
SLIDE_TIMEOUT_MS = 30_000  # for one slide to be shown and fitted
# Shows slide ``index`` and resolves once the deck has fitted it and its images are loaded (used for the first slide with a
# formula, for every slide of the walk, and to go back to an overflowing slide for its screenshot).
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
    await until(() => Array.from(target.querySelectorAll('img')).every(img => img.complete), 'an image is still loading');
};
"""
REVEAL_READY = "window.Reveal && Reveal.isReady()"
RENDER_STATE = """() => ({
    slides: Reveal.getTotalSlides(),
    math: document.querySelectorAll('math.course-math').length,
    mathErrors: document.querySelectorAll('merror').length,
    rawDollars: Array.from(document.querySelectorAll('.jp-RenderedMarkdown'))
        .filter(el => /\\$[^$\\s][^$]*\\$/.test(el.textContent)).length,
    themed: getComputedStyle(document.querySelector('.reveal')).fontFamily,
    notes: document.querySelectorAll('aside.notes').length,
})"""
# the first slide with a displayed formula, else with any formula (-1: none)
FIRST_FORMULA_SLIDE = """() => {
    const slides = Reveal.getSlides();
    const shown = slides.findIndex(s => s.querySelector('math.course-math[display="block"]'));
    return shown >= 0 ? shown : slides.findIndex(s => s.querySelector('math.course-math'));
}"""
VISIBLE_FORMULAS = """() => Array.from(Reveal.getCurrentSlide().querySelectorAll('math.course-math'))
    .filter(el => el.getBoundingClientRect().width > 0).length"""
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
    out = tmp_path_factory.mktemp("decks")
    start = time.perf_counter()
    exported = slides.export_decks(NOTEBOOKS, out, echo=None)
    seconds = time.perf_counter() - start
    assert seconds < EXPORT_SECONDS, f"exporting every deck took {seconds:.0f} s"
    return {deck.notebook.name: deck for deck in exported}


@pytest.fixture(scope="module")
def deck_context(browser):
    """A browser context the size of a slide, with ``courseShowSlide`` in every page."""
    context = browser.new_context(viewport={"width": round(WIDTH * 1.04) + 2, "height": round(HEIGHT * 1.04) + 2})
    context.set_default_timeout(30_000)
    context.add_init_script(SHOW)
    yield context
    context.close()


def overflows(m: dict) -> bool:
    return (
        m["scrollHeight"] > m["clientHeight"] + 2
        or m["scrollWidth"] > m["clientWidth"] + 2
        or m["lowest"] > HEIGHT + 2
        or m["rightmost"] > WIDTH + 2
    )


def _read_deck(page, stem: str, facts: dict) -> None:
    """Fills ``facts`` from the deck open in ``page``; ``facts["stage"]`` names what is being done (on an exception
    it is the stage that failed)."""
    facts["stage"] = "reveal.js initialising"
    page.wait_for_function(REVEAL_READY)
    facts["render"] = page.evaluate(RENDER_STATE)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{stem}.png"))
    # errors from here on come from showing slides (printed by the fit test, not failed)
    facts["load_errors"] = list(facts["errors"])

    facts["stage"] = "showing the first slide with a formula"
    index = page.evaluate(FIRST_FORMULA_SLIDE)
    facts["formula_slide"] = index + 1 if index >= 0 else None
    if index >= 0:
        # the deck fits the slide when it is shown (courseFitDone, in the template)
        page.evaluate("([index, timeoutMs]) => window.courseShowSlide(index, timeoutMs)", [index, SLIDE_TIMEOUT_MS])
        facts["visible_formulas"] = page.evaluate(VISIBLE_FORMULAS)
        page.screenshot(path=str(SCREENSHOTS / f"{stem}-formula.png"))

    facts["stage"] = "walking through every slide"
    measured = page.evaluate(MEASURE_DECK, SLIDE_TIMEOUT_MS)
    facts["measured"] = measured
    for item in filter(overflows, measured):
        facts["stage"] = f"showing overflowing slide {item['slide']} for its screenshot"
        FIT_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.evaluate(
            "([index, timeoutMs]) => window.courseShowSlide(index, timeoutMs)", [item["slide"] - 1, SLIDE_TIMEOUT_MS]
        )
        page.screenshot(path=str(FIT_SCREENSHOTS / f"{stem}-slide{item['slide']}.png"))
    facts["stage"] = None


@pytest.fixture(scope="module")
def deck_facts(decks, deck_context):
    """``deck_facts(notebook)``: what the render and fit checks need from the notebook's deck, read from one load of
    it (the first call opens the deck; later calls, from the other test, get the same facts). ``facts["failed"]`` is
    ``None``, or the stage at which the deck stopped loading and Playwright's message."""
    seen: dict[str, dict] = {}

    def visitor(notebook: Path) -> dict:
        if notebook.name in seen:
            return seen[notebook.name]
        facts = {"left_the_machine": [], "errors": [], "failed": None, "render": None, "measured": None}
        page = deck_context.new_page()

        def guard(route):
            url = route.request.url
            if url.startswith(LOCAL_SCHEMES):
                route.continue_()
            else:
                facts["left_the_machine"].append(url)
                route.abort()

        page.route("**/*", guard)
        page.on("pageerror", lambda error: facts["errors"].append(str(error)))
        page.on(
            "console",
            lambda message: (
                message.type == "error"
                and "about:blank" not in message.text
                and "ERR_FAILED" not in message.text  # a refused request, recorded in left_the_machine
                and facts["errors"].append(message.text)
            ),
        )
        try:
            facts["stage"] = "loading the deck"
            page.goto(decks[notebook.name].path.as_uri(), wait_until="load")
            _read_deck(page, notebook.stem, facts)
        except Exception as error:  # Playwright's TimeoutError or a script's error: the tests say where it stopped
            facts["failed"] = f"{facts['stage']}: {str(error).strip().splitlines()[0]}"
        finally:
            page.close()
        seen[notebook.name] = facts
        return facts

    return visitor


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_deck_renders_offline(notebook, deck_facts):
    facts = deck_facts(notebook)
    state = facts["render"]
    assert facts["left_the_machine"] == [], f"requests left the machine: {facts['left_the_machine']}"
    assert state is not None, f"the deck did not load: {facts['failed']} (errors logged: {facts['errors']})"
    assert state["slides"] >= 5, f"only {state['slides']} slides"
    assert state["math"] > 0, "no formula was typeset"
    assert state["mathErrors"] == 0 and state["rawDollars"] == 0, state
    assert "Source Sans Pro" in state["themed"], "the reveal.js theme did not load"
    errors = facts.get("load_errors", facts["errors"])
    assert errors == [], f"errors while the deck loaded: {errors}"
    assert "formula_slide" in facts, f"the first slide with a formula was not looked for: {facts['failed']}"
    if facts["formula_slide"] is not None:
        assert "visible_formulas" in facts, f"the first slide with a formula was not shown: {facts['failed']}"
        assert facts["visible_formulas"] > 0, (
            f"the formula on slide {facts['formula_slide']} has no size when shown: it was not typeset"
        )


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_no_slide_overflows(notebook, deck_facts):
    facts = deck_facts(notebook)
    measured = facts["measured"]
    assert measured is not None, (
        f"the deck's slides were not measured: {facts['failed']} (errors logged: {facts['errors']})"
    )
    total = len(measured)
    bad = [m for m in measured if overflows(m)]
    zooms = [m["zoom"] for m in measured]
    print(
        f"{notebook.stem}: {len(bad)} of {total} slides overflow; zoomed to fit: "
        f"{sum(z < 1 for z in zooms)} of {total} slides, smallest zoom {min(zooms, default=1):.2f}"
    )
    report = "\n".join(
        f"  slide {b['slide']}: content {b['scrollHeight']} x {b['scrollWidth']} px "
        f"(lowest {b['lowest']:.0f}, rightmost {b['rightmost']:.0f}) in {b['clientHeight']} x {b['clientWidth']}: "
        f"{b['words']!r}"
        for b in bad
    )
    later_errors = facts["errors"][len(facts.get("load_errors", [])) :]
    assert total >= 5, f"only {total} slides"
    screenshots = f"\n(screenshots failed: {facts['failed']})" if facts["failed"] else ""
    assert bad == [], f"{len(bad)} of {total} slides overflow:\n{report}{screenshots}"
    assert later_errors == [], f"errors while the slides were shown: {sorted(set(later_errors))}"


def test_rise_presents_a_notebook_live_in_jupyterlab(browser, lab_server):
    """jupyterlab-rise opens a notebook as a reveal.js slideshow from the local server, with a kernel."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(45_000)
    left = []

    def guard(route):
        url = route.request.url
        if url.startswith(LOCAL_SCHEMES) or url.startswith(lab_server.base_url):
            route.continue_()
        else:
            left.append(url)
            route.abort()

    context.route("**/*", guard)
    page = context.new_page()
    try:
        page.goto(f"{lab_server.base_url}/rise/notebooks/02_attention_qkv.ipynb?token={lab_server.token}")
        page.locator(".reveal .slides section").first.wait_for()
        page.wait_for_timeout(2000)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "rise-02_attention_qkv.png"))
        count = page.locator(".reveal .slides section").count()
        assert count >= 5, f"RISE shows {count} slides"
        assert left == [], f"requests left the machine: {left}"
    finally:
        context.close()
        lab_server.shutdown_kernels()
