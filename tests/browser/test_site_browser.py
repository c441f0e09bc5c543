"""The course website (``make site``) in headless Chromium: every page, offline.

Builds the site from the repository into a temporary folder (it must take under a minute), serves it on 127.0.0.1,
and opens every page with every request that would leave the machine refused and recorded. Each page must load with
no failed request and no console error, MathJax (the local copy) must typeset every formula (no error, no ``$...$``
left as text), and every image must load. Then the navigation: following "next" from the home page walks through
every page in reading order, and the contents column of every page links to every page. A screenshot of a lesson
goes to test-output/site/ (gitignored).
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
            assert page.locator(".run-links a", has_text="Open in Colab").count() == 1
            assert page.locator(".run-links a", has_text="Launch on Binder").count() == 1
        assert page.locator("nav.site-toc a[aria-current='page']").count() == 1
        if page_info.out == "notebooks/02_attention_qkv.html":
            assert page.locator(".MathJax, .MathJax_Display").count() > 10, "notebook 02 is full of formulas"
            assert page.locator(".course-quiz-static details").count() >= 5, "the quiz in static form"
            assert page.locator("details[open]").count() == 0, "answers stay folded"
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
            links = set(page.eval_on_selector_all("nav.site-toc a", "links => links.map(a => a.href)"))
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
