"""The course website (``make site``) in headless Chromium: every page, offline.

Builds the site from the repository into a temporary folder (it must take under a minute), serves it on 127.0.0.1,
and opens every page with every request that would leave the machine refused and recorded. Each page must load with
no failed request and no console error, MathJax (the local copy) must typeset every formula (no error, no ``$...$``
left as text), and every image must load. Then the navigation: following "next" from the home page walks through
every page in reading order, and the contents column of every page links to every page. At 1,400 px and 390 px
(a phone): no page scrolls sideways (code and outputs scroll inside their blocks, never wrapped), the contents fold
away on the phone only, and each page's own contents list links to its headings. The search finds "softmax" and
"KV cache" on the served site and on the site opened from disk (file://). Screenshots of the home page, lesson 02 and
exercise 02 at both widths go to test-output/site/ (gitignored): look at them after a layout change.
"""

from __future__ import annotations

import functools
import http.server
import threading
import time
from pathlib import Path

import pytest

from course_lib.tools.publish import site as site_module

pytestmark = pytest.mark.browser
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-output" / "site"
BUILD_SECONDS = 60
MATH_DONE = "document.documentElement.getAttribute('data-math') === 'done'"  # set by the template after MathJax
UNTYPESET_MATH = r"""() => {
    // text nodes outside code that still hold TeX delimiters: math MathJax did not typeset
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {
        acceptNode: node => node.parentElement.closest('pre, code, script, style, textarea, .MathJax_Preview')
            ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT });
    const left = [];
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const text = node.textContent;
        if (/\$[^$\s][^$]*\$|\\\(|\\\[|\$\$/.test(text)) left.push(text.trim().slice(0, 80));
    }
    return left;
}"""


@pytest.fixture(scope="module")
def built_site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site") / "site"
    start = time.perf_counter()
    site = site_module.build_site(out, echo=None)
    seconds = time.perf_counter() - start
    assert seconds < BUILD_SECONDS, f"building the site took {seconds:.0f} s"
    assert not site.broken_links, site.broken_links
    return site


@pytest.fixture(scope="module")
def served(built_site):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(built_site.path))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def context(browser, served):
    """A browser context in which every request that does not go to the local server is recorded and refused."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    context.left_the_machine = []

    def guard(route):
        url = route.request.url
        if url.startswith((served, "data:", "about:", "blob:")):
            route.continue_()
        else:
            context.left_the_machine.append(url)
            route.abort()

    context.route("**/*", guard)
    yield context
    context.close()


def open_page(context, url: str):
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda message: message.type == "error" and problems.append(f"console: {message.text}"))
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("requestfailed", lambda request: problems.append(f"failed request: {request.url} ({request.failure})"))
    page.on(
        "response",
        lambda response: response.status >= 400 and problems.append(f"HTTP {response.status}: {response.url}"),
    )
    page.goto(url, wait_until="load")
    page.wait_for_function(MATH_DONE, timeout=30_000)
    return page, problems


def page_ids(site):
    return [page.out for page in site.pages]


@pytest.mark.parametrize(
    "index", range(len(site_module.collect_pages())), ids=lambda i: site_module.collect_pages()[i].out
)
def test_every_page_renders_offline(index, built_site, served, context):
    page_info = built_site.pages[index]
    page, problems = open_page(context, served + page_info.out)
    try:
        assert problems == [], problems
        assert context.left_the_machine == [], f"requests that would leave the machine: {context.left_the_machine}"
        assert page.locator(".MathJax_Error, .merror, mjx-merror").count() == 0, "MathJax reported an error"
        left = page.evaluate(UNTYPESET_MATH)
        assert left == [], f"formulas left as TeX: {left[:5]}"
        images = page.evaluate("() => Array.from(document.images).map(i => [i.complete && i.naturalWidth > 0, i.alt])")
        assert all(loaded for loaded, _ in images), (
            f"{sum(not ok for ok, _ in images)} of {len(images)} images did not load"
        )
        if page_info.section == "notebooks":
            from course_lib.tools.publish import colab

            expected = 1 if colab.repository() else 0  # no published address yet: no Colab or Binder link at all
            assert page.locator(".run-links a", has_text="Open in Colab").count() == expected
            assert page.locator(".run-links a", has_text="Launch on Binder").count() == expected
        assert page.locator("nav.site-toc a[aria-current='page']").count() == 1
        if page_info.out == "notebooks/02_attention_qkv.html":
            assert page.locator(".MathJax, .MathJax_Display").count() > 10, "notebook 02 is full of formulas"
            assert page.locator(".course-quiz-static details").count() >= 5, "the quiz in static form"
            assert page.locator("#content details[open]").count() == 0, "answers stay folded"
            assert page.get_by_text("Speaker notes").count() == 0, "speaker notes are left out"
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "02_attention_qkv.png"))
    finally:
        page.close()


def test_next_links_walk_through_every_page_in_reading_order(built_site, served, context):
    page, problems = open_page(context, served + "index.html")
    visited = [page.url[len(served) :]]
    try:
        for _ in range(len(built_site.pages) + 2):
            following = page.locator("nav.page-nav a.next").first
            if following.count() == 0:
                break
            following.click()
            page.wait_for_load_state("load")
            page.wait_for_function(MATH_DONE, timeout=30_000)  # leaving a page mid-typesetting aborts its font loads
            visited.append(page.url[len(served) :])
        assert visited == page_ids(built_site), "the 'next' links should visit every page once, in reading order"
        page.locator("nav.page-nav a.prev").first.click()
        page.wait_for_load_state("load")
        assert page.url == served + page_ids(built_site)[-2]
        assert problems == [], problems
    finally:
        page.close()


def test_the_contents_link_every_page_from_every_page(built_site, served, context):
    expected = {served + out for out in page_ids(built_site)}
    page = context.new_page()
    try:
        for out in page_ids(built_site):
            page.goto(served + out, wait_until="domcontentloaded")
            links = set(page.eval_on_selector_all("nav.site-toc > ul > li > a", "links => links.map(a => a.href)"))
            assert links == expected, f"{out}: the contents miss {sorted(expected - links)[:3]}"
    finally:
        page.close()


def test_links_between_notebooks_and_to_exercises_lead_to_pages(built_site, served, context):
    """Every link inside the content that stays on the site opens a page of the site (no 404), anchors included."""
    page = context.new_page()
    checked = 0
    try:
        for out in page_ids(built_site):
            page.goto(served + out, wait_until="domcontentloaded")
            hrefs = page.eval_on_selector_all("#content a[href]", "links => links.map(a => a.href)")
            for href in {h for h in hrefs if h.startswith(served)}:
                path, _, fragment = href[len(served) :].partition("#")
                target = built_site.path / (path or out)
                assert target.is_file(), f"{out} links to {href}, which is not on the site"
                if fragment and path.endswith(".html"):
                    assert f'id="{fragment}"' in target.read_text(encoding="utf-8"), f"{out}: no #{fragment} in {path}"
                checked += 1
    finally:
        page.close()
    assert checked > 50, "lessons link to their exercises and the README to every notebook"


# -- layout at desktop and phone widths, the in-page contents, the search ------------------------------------------
WIDTHS = {"desktop": (1400, 900), "phone": (390, 844)}
SCREENSHOT_PAGES = ("index.html", "notebooks/02_attention_qkv.html", "exercises/ex02_attention.html")
OVERFLOW = r"""() => {
    // the page itself must not scroll sideways; a code block or table may, inside itself
    const page = document.documentElement.scrollWidth - document.documentElement.clientWidth;
    const cut = [];
    for (const pre of document.querySelectorAll('#content pre')) {
        const style = getComputedStyle(pre);
        const box = pre.getBoundingClientRect();
        if (box.width === 0) continue;  // inside a folded <details>
        const scrolls = style.overflowX === 'auto' || style.overflowX === 'scroll';
        if (pre.scrollWidth > pre.clientWidth + 1 && !scrolls) cut.push(pre.textContent.slice(0, 60));
        if (style.whiteSpace !== 'pre') cut.push('wraps: ' + pre.textContent.slice(0, 60));
    }
    return {page, cut};
}"""
CONTENTS_TARGETS = r"""() => Array.from(document.querySelectorAll('.page-toc a')).map(a => {
    const id = a.getAttribute('href').slice(1);
    let target = document.getElementById(id);
    if (!target) { try { target = document.getElementById(decodeURIComponent(id)); } catch (e) {} }
    return [id, !!target && /^H[23]$/.test(target.tagName)];
})"""


@pytest.fixture(scope="module", params=list(WIDTHS), ids=list(WIDTHS))
def sized_context(request, browser, served):
    width, height = WIDTHS[request.param]
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(30_000)
    context.left_the_machine = []

    def guard(route):
        url = route.request.url
        if url.startswith((served, "data:", "about:", "blob:")):
            route.continue_()
        else:
            context.left_the_machine.append(url)
            route.abort()

    context.route("**/*", guard)
    context.width_name = request.param
    yield context
    context.close()


def test_no_page_overflows_and_every_contents_link_lands(built_site, served, sized_context):
    """At 1,400 px and 390 px: no page scrolls sideways, code and outputs scroll inside their blocks (never cut,
    never wrapped), each page's own contents list links to its h2/h3 headings, and nothing fails to load."""
    for info in built_site.pages:
        page, problems = open_page(sized_context, served + info.out)
        try:
            measured = page.evaluate(OVERFLOW)
            assert measured["page"] <= 0, f"{info.out} at {sized_context.width_name}: {measured['page']} px too wide"
            assert measured["cut"] == [], f"{info.out} at {sized_context.width_name}: {measured['cut'][:3]}"
            targets = page.evaluate(CONTENTS_TARGETS)
            headings = page.locator("#content h2[id], #content h3[id]").count()
            assert len(targets) == headings > 0, f"{info.out}: {len(targets)} contents links, {headings} headings"
            assert all(ok for _, ok in targets), f"{info.out}: contents links without a heading {targets[:3]}"
            assert problems == [] and sized_context.left_the_machine == [], problems
            fold_open = page.evaluate("document.getElementById('site-toc-fold').open")
            assert fold_open == (sized_context.width_name == "desktop"), "the contents fold away on a phone only"
            if sized_context.width_name == "phone":
                first_text = page.locator("#content").bounding_box()["y"]
                assert first_text < 400, f"{info.out}: the text starts {first_text:.0f} px down on a phone"
            else:
                content = page.locator("#content").bounding_box()
                assert content["width"] >= 0.7 * WIDTHS["desktop"][0] - 10, "the page uses the screen's width"
            if info.out in SCREENSHOT_PAGES:
                SCREENSHOTS.mkdir(parents=True, exist_ok=True)
                name = info.out.replace("/", "_").replace(".html", "")
                page.screenshot(path=str(SCREENSHOTS / f"{name}_{sized_context.width_name}.png"))
        finally:
            page.close()


def search_for(page, query: str) -> list[str]:
    page.fill("#site-search-input", query)
    page.wait_for_selector("#site-search-results:not([hidden]) .search-count")
    return page.eval_on_selector_all("#site-search-results a.search-hit", "links => links.map(a => a.href)")


@pytest.mark.parametrize("how", ["served", "file"])
def test_search_finds_softmax_and_the_kv_cache(how, built_site, served, context, browser):
    """The search works on a served site and on one opened from disk (file://), with no failed request."""
    if how == "served":
        page, problems = open_page(context, served + "notebooks/02_attention_qkv.html")
        base = served
    else:
        local = browser.new_context(viewport={"width": 1400, "height": 900})
        page = local.new_page()
        problems = []
        page.on("console", lambda message: message.type == "error" and problems.append(f"console: {message.text}"))
        page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
        page.on("requestfailed", lambda request: problems.append(f"failed request: {request.url}"))
        base = (built_site.path / "index.html").as_uri().rsplit("/", 1)[0] + "/"
        page.goto(base + "index.html", wait_until="load")
    try:
        softmax = search_for(page, "softmax")
        assert len(softmax) >= 5 and any("02_attention_qkv.html#" in href for href in softmax), softmax
        kv = search_for(page, "KV cache")
        assert kv and any("08_language_model.html" in href for href in kv), kv
        assert all(href.startswith(base) for href in softmax + kv), "results link inside the site"
        assert search_for(page, "qwertyuiop") == []
        page.fill("#site-search-input", "softmax")
        page.wait_for_selector("#site-search-results a.search-hit")
        page.press("#site-search-input", "Enter")
        page.wait_for_load_state("load")
        assert page.url.split("#")[0] == softmax[0].split("#")[0], "Enter opens the first result"
        assert problems == [], problems
    finally:
        page.close()
        if how == "file":
            local.close()


LONGEST_LINE = 95  # characters: prose keeps a readable measure (68ch of "0" holds about 75-80 letters of text)


def test_prose_keeps_a_readable_measure_on_a_wide_screen(built_site, served, browser):
    """At 1,400 px the page uses the width for code and figures, but a paragraph's lines stay readable."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        page = context.new_page()
        page.goto(served + "notebooks/02_attention_qkv.html", wait_until="load")
        lines = page.evaluate(
            """() => [...document.querySelectorAll('.jp-MarkdownCell .jp-RenderedHTMLCommon > p')]
                .filter(p => p.textContent.length > 400)
                .map(p => {  // the paragraph's width in its own text's average character width
                    const context = document.createElement('canvas').getContext('2d');
                    context.font = getComputedStyle(p).font;
                    const average = context.measureText(p.textContent).width / p.textContent.length;
                    return Math.round(p.getBoundingClientRect().width / average);
                })"""
        )
    finally:
        context.close()
    assert lines, "02 has long paragraphs to measure"
    assert max(lines) <= LONGEST_LINE, f"characters per line of 02's long paragraphs: {lines}"


# -- the attention explorer's precomputed version (issue 28) ---------------------------------------------------------
EXPLORER_PAGES = ("notebooks/03_multi_head_attention.html", "notebooks/08_language_model.html")


@pytest.mark.parametrize("out", EXPLORER_PAGES)
def test_the_precomputed_explorer_switches_among_stored_frames(out, built_site, served, context):
    """Where no kernel runs, the attention explorer shows its stored frames: choosing another input (a click) and
    another query token (Enter on a focused button, then the arrow keys) redraws every head's row from the stored
    numbers, with no failed request and no error."""
    from playwright.sync_api import expect

    page, problems = open_page(context, served + out)
    try:
        explorer = page.locator(".attention-explorer").first
        expect(explorer).to_be_visible()
        status, grid = explorer.locator(".attx-status"), explorer.locator(".attx-grid")
        heads = grid.locator("table").count()
        assert heads >= 2, "every head's row is shown"
        first = grid.inner_text()

        inputs = explorer.locator(".attx-inputs button")
        assert inputs.count() >= 3, "several stored inputs"
        inputs.nth(1).click()
        expect(status).to_contain_text("input 2,")
        expect(inputs.nth(1)).to_have_attribute("aria-pressed", "true")
        second = grid.inner_text()
        assert second != first, "another input, other rows"

        tokens = explorer.locator(".attx-strip button")
        tokens.first.focus()
        page.keyboard.press("Enter")
        expect(status).to_contain_text("at position 0")
        expect(grid.locator("caption").first).to_contain_text("(position 0)")
        page.keyboard.press("ArrowRight")
        expect(status).to_contain_text("at position 1")
        expect(tokens.nth(1)).to_have_attribute("aria-pressed", "true")
        assert grid.inner_text() not in (first, second), "another query, other rows"
        assert grid.locator("table").count() == heads
        assert problems == [], problems
        assert context.left_the_machine == [], f"requests that would leave the machine: {context.left_the_machine}"
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        explorer.screenshot(path=str(SCREENSHOTS / f"explorer_{out.split('/')[1][:2]}.png"))
    finally:
        page.close()
