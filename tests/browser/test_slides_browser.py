"""The exported slide decks open and render offline, in headless Chromium.

Exports every notebook with ``course_lib.tools.publish.slides.export_decks`` into a temporary folder, opens each deck from
``file://`` with every request that would leave the machine blocked and recorded, and checks that reveal.js
initialised, that the deck has several slides, that no request left the machine, and that MathJax (a local copy)
typeset the formulas without an error; then shows the first slide with a formula and checks that the formula has a
size there (waiting for MathJax's queue and the deck's own ``courseFitDone`` signal, not for a fixed time). Saves a screenshot of the first slide of each deck, and of the first slide
with a formula, in test-output/slides/ (gitignored).
"""

import time
from pathlib import Path

import pytest

from course_lib.tools.publish import slides

pytestmark = pytest.mark.browser
NOTEBOOKS = slides.course_notebooks()
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-output" / "slides"  # gitignored
LOCAL_SCHEMES = ("file:", "data:", "about:", "blob:")
EXPORT_SECONDS = 60


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    out = tmp_path_factory.mktemp("decks")
    start = time.perf_counter()
    exported = slides.export_decks(None, out, echo=None)
    seconds = time.perf_counter() - start
    assert seconds < EXPORT_SECONDS, f"exporting every deck took {seconds:.0f} s"
    return {deck.notebook.name: deck for deck in exported}


@pytest.fixture(scope="module")
def offline_context(browser):
    """A browser context in which every request that is not a local file is recorded and refused."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(30_000)
    context.left_the_machine = []

    def guard(route):
        url = route.request.url
        if url.startswith(LOCAL_SCHEMES):
            route.continue_()
        else:
            context.left_the_machine.append(url)
            route.abort()

    context.route("**/*", guard)
    yield context
    context.close()


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_deck_renders_offline(notebook, decks, offline_context):
    deck = decks[notebook.name]
    page = offline_context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on(
        "console",
        lambda message: (
            message.type == "error"
            and "about:blank" not in message.text
            and "ERR_FAILED" not in message.text
            and errors.append(message.text)
        ),
    )
    try:
        page.goto(deck.path.as_uri(), wait_until="load")
        page.wait_for_function("window.Reveal && Reveal.isReady()")
        # MathJax 2 typesets the whole deck once at load; wait until its queue is empty
        page.wait_for_function(
            "window.MathJax && MathJax.isReady && MathJax.Hub.queue.pending === 0 && !MathJax.Hub.queue.running"
        )
        state = page.evaluate("""() => ({
            slides: Reveal.getTotalSlides(),
            math: document.querySelectorAll('.MathJax, .MathJax_Display').length,
            mathErrors: document.querySelectorAll('.MathJax_Error, merror').length,
            rawDollars: Array.from(document.querySelectorAll('.jp-RenderedMarkdown'))
                .filter(el => /\\$[^$\\s][^$]*\\$/.test(el.textContent)).length,
            themed: getComputedStyle(document.querySelector('.reveal')).fontFamily,
            notes: document.querySelectorAll('aside.notes').length,
        })""")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"{notebook.stem}.png"))

        assert offline_context.left_the_machine == [], f"requests left the machine: {offline_context.left_the_machine}"
        assert state["slides"] >= 5, f"only {state['slides']} slides"
        assert state["math"] > 0, "no formula was typeset"
        assert state["mathErrors"] == 0 and state["rawDollars"] == 0, state
        assert "Source Sans Pro" in state["themed"], "the reveal.js theme did not load"
        assert errors == [], errors

        # the first slide with a displayed formula (else any formula), after reveal.js has shown it
        index = page.evaluate("""() => {
            const slides = Reveal.getSlides();
            const shown = slides.findIndex(s => s.querySelector('.MathJax_Display'));
            return shown >= 0 ? shown : slides.findIndex(s => s.querySelector('.MathJax'));
        }""")
        if index >= 0:
            page.evaluate(f"Reveal.slide(...Object.values(Reveal.getIndices(Reveal.getSlides()[{index}])))")
            # the deck typesets the slide again when it is shown, then fits it (courseFitDone, in the template)
            page.wait_for_function(
                "window.courseFitDone === true && MathJax.Hub.queue.pending === 0 && !MathJax.Hub.queue.running"
            )
            visible = page.evaluate("""() => Array.from(Reveal.getCurrentSlide().querySelectorAll('.MathJax, .MathJax_Display'))
                .filter(el => el.getBoundingClientRect().width > 0).length""")
            assert visible > 0, "the formula on the current slide has no size: it was not typeset"
            page.screenshot(path=str(SCREENSHOTS / f"{notebook.stem}-formula.png"))
    finally:
        page.close()


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
