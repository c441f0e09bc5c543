"""The course website (``make site``) in headless Chromium: every page, offline.

Builds the site from the repository into a temporary folder (it must take under a minute), serves it on 127.0.0.1,
and opens every page once at 1,400 px (desktop) and once at 390 px (a phone), with every request that would leave the
machine refused and recorded; all the per-page checks read what they need from that one load (the ``visit``
fixture), one test per page and width. Each page must load with no failed request and no console error, every
formula must be MathML the browser draws (typeset when the site was built: no error, no ``$...$`` left as text, a
fraction taller than a line of text), and every image must load. The
navigation: following "next" from the home page walks through every page in reading order and "previous" leads back
one page (the links' targets, resolved by the browser, are read from the loaded pages: each must be a page of the site
that loaded without a problem, and the link must be where a click lands), and the contents column of every page links
to every page. At both widths: no page scrolls sideways (code and outputs scroll inside their blocks, never wrapped),
the contents fold away on the phone only, and each page's own contents list links to its headings. The search finds
"softmax" and "KV cache" on the served site and on the site opened from disk (file://). Screenshots of the home page,
lesson 02 and exercise 02 at both widths go to test-output/site/ (gitignored): look at them after a layout change.
"""

from __future__ import annotations

import functools
import http.server
import re
import threading
import time
from pathlib import Path

import pytest

from course_lib.tools.publish import site as site_module

pytestmark = pytest.mark.browser
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-output" / "site"
BUILD_SECONDS = 60
UNTYPESET_MATH = r"""() => {
    // text nodes outside code that still hold TeX delimiters: math the build did not typeset
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {
        acceptNode: node => node.parentElement.closest('pre, code, script, style, textarea')
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
    """A 1,280 px wide context (see ``guarded_context``) for the search and the explorer."""
    context = guarded_context(browser, served, 1280, 900)
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
    return page, problems


def page_ids(site):
    return [page.out for page in site.pages]


# -- every page, opened once at each width ----------------------------------------------------------------------------
WIDTHS = {"desktop": (1400, 900), "phone": (390, 844)}
SCREENSHOT_PAGES = ("index.html", "notebooks/02_attention_qkv.html", "exercises/ex02_attention.html")
PAGES = [page.out for page in site_module.collect_pages()]
PAGE_FACTS = r"""() => {
    const hrefs = selector => Array.from(document.querySelectorAll(selector)).map(a => a.href);
    const count = selector => document.querySelectorAll(selector).length;
    const box = document.getElementById('content').getBoundingClientRect();
    return {
        mathErrors: count('merror'),
        images: Array.from(document.images).map(i => [i.complete && i.naturalWidth > 0, i.alt]),
        runLinks: Array.from(document.querySelectorAll('.run-links a')).map(a => a.textContent),
        current: count("nav.site-toc a[aria-current='page']"),
        toc: hrefs('nav.site-toc > ul > li > a'),
        next: hrefs('nav.page-nav a.next'),
        prev: hrefs('nav.page-nav a.prev'),
        contentLinks: hrefs('#content a[href]'),
        headings: count('#content h2[id], #content h3[id]'),
        tocShown: document.getElementById('site-toc-panel').getClientRects().length > 0,
        downloads: hrefs('#content a.download-notebook[download]'),
        // a prediction's measurement: shown only once the reader opens "Show what was measured"
        measuredShown: Array.from(document.querySelectorAll('#content *')).filter(e => e.children.length === 0
            && /Measured:/.test(e.textContent) && e.checkVisibility({visibilityProperty: true})).length,
        measuredFolds: count('#content details.course-measured, #content details.course-checkpoint[data-prediction]'),
        openMeasured: count('#content details.course-measured[open], #content details[data-prediction][open]'),
        // one font for the text: every summary, paragraph, list item, heading, button and input uses the body's
        fonts: Array.from(new Set(Array.from(document.querySelectorAll(
            'summary, p, li, h1, h2, h3, button, input, td, th')).filter(e => !e.closest('pre, code, math'))
            .map(e => getComputedStyle(e).fontFamily))),
        bodyFont: getComputedStyle(document.body).fontFamily,
        // a code block or output that scrolls sideways shows it (a fade on its side)
        unshadedScrollers: Array.from(document.querySelectorAll('#content pre')).filter(pre =>
            pre.getClientRects().length > 0 && pre.scrollWidth > pre.clientWidth + 1
            && !pre.parentElement.classList.contains('scrolls-x')).map(pre => pre.textContent.slice(0, 40)),
        copyButtons: count('#content button.copy-code'),
        codeBlocks: count('#content .jp-InputArea-editor pre, #content .jp-MarkdownCell pre'),
        content: {y: box.y, width: box.width},
        formulas: count('math.course-math'),
        // drawn as mathematics, not as a line of text: a displayed fraction stands about two letters tall
        fractionRatio: (() => { const f = document.querySelector('#content math[display="block"] mfrac');
            return f ? f.getBoundingClientRect().height / parseFloat(getComputedStyle(f.parentElement).fontSize)
                     : null; })(),
        quizDetails: count('.course-quiz-static details'),
        openDetails: count('#content details[open]'),
    };
}"""
# Whether a click on the first "next" link would land on the link: scrolled into view, the element at its middle is
# the link or inside it (what Playwright checks before it clicks). Run last: it scrolls the page.
NEXT_CLICKABLE = r"""() => {
    const link = document.querySelector('nav.page-nav a.next');
    if (!link) return null;
    link.scrollIntoView({block: 'center'});
    const r = link.getBoundingClientRect();
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return r.width > 0 && r.height > 0 && !!hit && (hit === link || link.contains(hit));
}"""
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
CONTENTS_TARGETS = r"""() => Array.from(document.querySelectorAll('.page-rail .page-toc a')).map(a => {
    const id = a.getAttribute('href').slice(1);
    let target = document.getElementById(id);
    if (!target) { try { target = document.getElementById(decodeURIComponent(id)); } catch (e) {} }
    return [id, !!target && /^H[23]$/.test(target.tagName)];
})"""
PROSE_LINES = r"""() => [...document.querySelectorAll('.jp-MarkdownCell .jp-RenderedHTMLCommon > p')]
    .filter(p => p.textContent.length > 400)
    .map(p => {  // the paragraph's width in its own text's average character width
        const context = document.createElement('canvas').getContext('2d');
        context.font = getComputedStyle(p).font;
        const average = context.measureText(p.textContent).width / p.textContent.length;
        return Math.round(p.getBoundingClientRect().width / average);
    })"""


def guarded_context(browser, served: str, width: int, height: int):
    """A browser context in which every request that does not go to the local server is recorded and refused."""
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
    return context


@pytest.fixture(scope="module")
def visit(browser, served):
    """``visit(width, out)``: what the checks need from page ``out`` at ``width``, read from one load of it (the
    first call opens the page; later calls, from other tests, get the same facts)."""
    contexts, seen = {}, {}

    def visitor(width: str, out: str) -> dict:
        if (width, out) not in seen:
            if width not in contexts:
                contexts[width] = guarded_context(browser, served, *WIDTHS[width])
            context = contexts[width]
            left_before = len(context.left_the_machine)
            page, problems = open_page(context, served + out)
            try:
                facts = page.evaluate(PAGE_FACTS)
                facts["untypeset"] = page.evaluate(UNTYPESET_MATH)
                facts["overflow"] = page.evaluate(OVERFLOW)
                facts["contents"] = page.evaluate(CONTENTS_TARGETS)
                if out == "notebooks/02_attention_qkv.html":
                    facts["speaker_notes"] = page.get_by_text("Speaker notes").count()
                    facts["prose_lines"] = page.evaluate(PROSE_LINES)
                if out == "index.html":
                    facts["first_screen"] = page.evaluate(FIRST_SCREEN)
                if out in SCREENSHOT_PAGES:
                    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
                    name = out.replace("/", "_").replace(".html", "")
                    page.screenshot(path=str(SCREENSHOTS / f"{name}_{width}.png"))
                    if out != "index.html":  # halfway down, where the header must still be
                        page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight / 2)")
                        page.wait_for_timeout(100)
                        page.screenshot(path=str(SCREENSHOTS / f"{name}_{width}_halfway.png"))
                facts["next_clickable"] = page.evaluate(NEXT_CLICKABLE)
                facts["url"] = page.url
            finally:
                page.close()
            facts["problems"] = problems
            facts["left_the_machine"] = context.left_the_machine[left_before:]
            seen[width, out] = facts
        return seen[width, out]

    yield visitor
    for context in contexts.values():
        context.close()


def every_page(visit, width: str) -> dict[str, dict]:
    return {out: visit(width, out) for out in PAGES}


@pytest.mark.parametrize("out", PAGES)
@pytest.mark.parametrize("width", list(WIDTHS))
def test_every_page_renders_offline(width, out, built_site, served, visit):
    """The page loads with no failed request, no console error and nothing leaving the machine; every formula is
    MathML (no error, no TeX left as text); every image loaded; the Colab and Binder links; the page is marked in
    the contents; lesson 02 is full of formulas, its quiz is static and folded, and its speaker notes are left out."""
    page_info = built_site.pages[PAGES.index(out)]
    facts = visit(width, out)
    assert facts["problems"] == [], facts["problems"]
    assert facts["left_the_machine"] == [], f"requests that would leave the machine: {facts['left_the_machine']}"
    assert facts["mathErrors"] == 0, "a formula was typeset as an error"
    assert facts["untypeset"] == [], f"formulas left as TeX: {facts['untypeset'][:5]}"
    images = facts["images"]
    assert all(loaded for loaded, _ in images), (
        f"{sum(not ok for ok, _ in images)} of {len(images)} images did not load"
    )
    if page_info.kind in ("lesson", "exercise"):  # its notebook, next to it, to download
        notebook = served + page_info.download
        assert facts["downloads"] == [notebook], f"{out} links {facts['downloads']}, not its notebook {notebook}"
    else:
        assert facts["downloads"] == []
    # a prediction's measurement stays folded until the reader asks (a guide may quote one: it predicts nothing)
    if page_info.kind == "lesson":
        assert facts["measuredShown"] == 0 and facts["openMeasured"] == 0, f"{out} shows a measurement unasked"
    if page_info.kind == "lesson":
        from course_lib.tools.publish import colab

        expected = 1 if colab.repository() else 0  # no published address yet: no Colab or Binder link at all
        assert sum("Open in Colab" in text for text in facts["runLinks"]) == expected
        assert sum("Launch on Binder" in text for text in facts["runLinks"]) == expected
    assert facts["current"] == 1
    if out == "notebooks/02_attention_qkv.html":
        assert facts["formulas"] > 10, "notebook 02 is full of formulas"
        assert facts["fractionRatio"] > 1.8, f"a displayed fraction is {facts['fractionRatio']} em tall: not drawn"
        assert facts["quizDetails"] >= 5, "the quiz in static form"
        assert facts["openDetails"] == 0, "answers stay folded"
        assert facts["speaker_notes"] == 0, "speaker notes are left out"


@pytest.mark.parametrize("width", list(WIDTHS))
def test_next_links_walk_through_every_page_in_reading_order(width, built_site, served, visit):
    """Following "next" from the home page visits every page once, in reading order, and stops at the last; "previous"
    leads back one page. The links are read from each page as loaded (``a.href``, resolved by the browser); each one
    leads to a page of the site that loaded without a problem, and a click on it would land on the link."""
    pages = every_page(visit, width)
    expected = page_ids(built_site)
    visited, here = [], "index.html"
    for _ in range(len(expected) + 2):
        visited.append(here)
        facts = pages.get(here)
        assert facts is not None, f"after {visited[:-1]}, 'next' leads to {here}, which is not a page of the site"
        assert facts["url"] == served + here and facts["problems"] == [], (here, facts["problems"])
        if not facts["next"]:
            break
        assert len(set(facts["next"])) == 1, f"{here}: its 'next' links disagree: {facts['next']}"
        assert facts["next_clickable"], f"{here}: its 'next' link cannot be clicked"
        following = facts["next"][0]
        assert following.startswith(served), f"{here}: 'next' leads off the site: {following}"
        here = following[len(served) :]
        assert (built_site.path / here).is_file(), f"{visited[-1]}: 'next' leads to {here}, which is not on the site"
    assert visited == expected, "the 'next' links should visit every page once, in reading order"
    for before, out in zip(expected, expected[1:]):
        assert set(pages[out]["prev"]) == {served + before}, f"{out}: 'previous' leads to {pages[out]['prev']}"
    assert pages[expected[0]]["prev"] == [], "the home page has no 'previous'"


@pytest.mark.parametrize("width", list(WIDTHS))
def test_the_contents_link_every_page_from_every_page(width, built_site, served, visit):
    expected = {served + out for out in page_ids(built_site)}
    for out, facts in every_page(visit, width).items():
        links = set(facts["toc"])
        assert links == expected, f"{out}: the contents miss {sorted(expected - links)[:3]}"


def test_links_between_notebooks_and_to_exercises_lead_to_pages(built_site, served, visit):
    """Every link inside the content that stays on the site opens a page of the site (no 404), anchors included."""
    checked = 0
    for out, facts in every_page(visit, "desktop").items():
        for href in {h for h in facts["contentLinks"] if h.startswith(served)}:
            path, _, fragment = href[len(served) :].partition("#")
            target = built_site.path / (path or out)
            assert target.is_file(), f"{out} links to {href}, which is not on the site"
            if fragment and path.endswith(".html"):
                assert f'id="{fragment}"' in target.read_text(encoding="utf-8"), f"{out}: no #{fragment} in {path}"
            checked += 1
    assert checked > 50, "lessons link to their exercises and the README to every notebook"


@pytest.mark.parametrize("out", PAGES)
@pytest.mark.parametrize("width", list(WIDTHS))
def test_no_page_overflows_and_every_contents_link_lands(width, out, visit):
    """At 1,400 px and 390 px: the page does not scroll sideways, code and outputs scroll inside their blocks (never
    cut, never wrapped), the page's own contents list links to its h2/h3 headings, the contents fold away on a phone
    only, the text starts near the top on a phone and the page uses the width on a desktop."""
    facts = visit(width, out)
    measured = facts["overflow"]
    assert measured["page"] <= 0, f"{out} at {width}: {measured['page']} px too wide"
    assert measured["cut"] == [], f"{out} at {width}: {measured['cut'][:3]}"
    targets = facts["contents"]
    assert len(targets) == facts["headings"] > 0, f"{out}: {len(targets)} contents links, {facts['headings']} headings"
    assert all(ok for _, ok in targets), f"{out}: contents links without a heading {targets[:3]}"
    assert facts["problems"] == [] and facts["left_the_machine"] == [], facts["problems"]
    assert facts["tocShown"] == (width == "desktop"), "the contents open from the header's button on a phone only"
    if width == "phone":
        assert facts["content"]["y"] < 120, f"{out}: the text starts {facts['content']['y']:.0f} px down on a phone"
        assert facts["unshadedScrollers"] == [], f"{out}: blocks that scroll with no sign of it"
    else:  # the contents and the "On this page" rail take about a third of 1,400 px
        assert facts["content"]["width"] >= 0.55 * WIDTHS["desktop"][0], "the page uses the screen's width"
    assert facts["fonts"] == [facts["bodyFont"]], f"{out}: more than one font for the text: {facts['fonts']}"
    assert facts["copyButtons"] == facts["codeBlocks"], f"{out}: code blocks without a copy button"


def search_for(page, query: str) -> list[str]:
    page.fill("#site-search-input", query)
    page.wait_for_selector("#site-search-results:not([hidden]) .search-count")
    page.wait_for_function("query => document.getElementById('site-search-input').value === query", arg=query)
    return page.eval_on_selector_all("#site-search-results a.search-hit", "links => links.map(a => a.href)")


HITS = r"""() => Array.from(document.querySelectorAll('#site-search-results li')).map(li => ({
    href: li.querySelector('a.search-hit').href,
    heading: (li.querySelector('.search-heading') || {}).textContent || '',
    excerpt: (li.querySelector('.search-excerpt') || {}).textContent || '',
}))"""
# a heading opened from a link: its top lies below the sticky header, within the screen
OPENED_AT = r"""() => {
    const id = decodeURIComponent(location.hash.slice(1));
    const heading = document.getElementById(id);
    if (!heading) return null;
    const header = document.getElementById('site-header').getBoundingClientRect();
    const box = heading.getBoundingClientRect();
    return {top: box.top, headerBottom: header.bottom, height: innerHeight};
}"""


@pytest.mark.parametrize("width", list(WIDTHS))
def test_search_puts_the_lesson_first_and_opens_it_at_its_section(width, built_site, served, browser):
    """ "softmax" puts a lesson's section first, "KV cache" notebook 08's section; every hit names its section;
    excerpts are plain text (formulas as text: no $ and no backslash command); a hit opens its page at the section,
    below the header that stays."""
    context = guarded_context(browser, served, *WIDTHS[width])
    page, problems = open_page(context, served + "index.html")
    try:
        search_for(page, "softmax")
        softmax = page.evaluate(HITS)
        assert "/notebooks/" in softmax[0]["href"] and "#" in softmax[0]["href"], softmax[0]
        search_for(page, "KV cache")
        kv = page.evaluate(HITS)
        assert "/notebooks/08_language_model.html#" in kv[0]["href"], kv[0]
        for hit in softmax + kv:
            assert hit["heading"].strip(), f"a hit without a heading: {hit}"
            assert "$" not in hit["excerpt"] and not re.search(r"\\[A-Za-z]+", hit["excerpt"]), hit["excerpt"]
        page.click("#site-search-results a.search-hit >> nth=0")
        page.wait_for_load_state("load")
        assert page.url == kv[0]["href"]
        page.wait_for_timeout(100)
        opened = page.evaluate(OPENED_AT)
        assert opened and opened["headerBottom"] - 1 <= opened["top"] < opened["height"] / 2, opened
        assert problems == [] and context.left_the_machine == [], problems
    finally:
        page.close()
        context.close()


# halfway down a lesson: the header's search box (and on a phone its contents button) in view and on top
HEADER_IN_VIEW = r"""() => {
    const onTop = id => { const e = document.getElementById(id); const r = e.getBoundingClientRect();
        if (r.width === 0 || r.bottom <= 0 || r.top >= innerHeight) return false;
        const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
        return !!hit && (hit === e || e.contains(hit)); };
    return {scrollY, height: document.documentElement.scrollHeight, search: onTop('site-search-input'),
            contents: onTop('toc-button'),
            current: Array.from(document.querySelectorAll('.page-rail a.is-current')).map(a => a.getAttribute('href')),
            railShown: document.querySelector('.page-rail').getClientRects().length > 0};
}"""
# the heading of the section being read: the last one whose top has passed under the header
READING = r"""() => {
    const line = document.getElementById('site-header').getBoundingClientRect().bottom + 24;
    let reading = null;
    for (const a of document.querySelectorAll('.page-rail .page-toc a')) {
        const h = document.getElementById(decodeURIComponent(a.getAttribute('href').slice(1)));
        if (h && h.getBoundingClientRect().top <= line) reading = a.getAttribute('href');
    }
    return reading;
}"""


@pytest.mark.parametrize("how", ["served", "file"])
@pytest.mark.parametrize("width", list(WIDTHS))
def test_halfway_down_a_lesson_the_header_stays_and_the_rail_marks_the_section(width, how, built_site, served, browser):
    """Halfway down lesson 02 the search box is in view (and usable); on a phone the contents button too, and it
    opens the contents; on a wide screen the "On this page" rail marks the section being read. Served and file://."""
    if how == "served":
        context = guarded_context(browser, served, *WIDTHS[width])
        page, problems = open_page(context, served + "notebooks/02_attention_qkv.html")
    else:
        context = browser.new_context(viewport=dict(zip(("width", "height"), WIDTHS[width])))
        context.left_the_machine = []
        page, problems = open_page(context, (built_site.path / "notebooks" / "02_attention_qkv.html").as_uri())
    try:
        page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight / 2)")
        page.wait_for_timeout(150)
        state = page.evaluate(HEADER_IN_VIEW)
        assert state["scrollY"] > 5000, f"02 is long: halfway is {state['scrollY']} px down"
        assert state["search"], "halfway down, the search box is not in view"
        if width == "phone":
            assert state["contents"], "halfway down, the contents button is not in view"
            page.click("#toc-button")
            assert page.get_attribute("#toc-button", "aria-expanded") == "true"
            panel = page.locator("#site-toc-panel")
            assert panel.is_visible() and panel.locator("a[aria-current='page']").is_visible()
            page.keyboard.press("Escape")
            assert not panel.is_visible()
        else:
            assert state["railShown"]
            assert state["current"] == [page.evaluate(READING)], state["current"]
            page.evaluate("window.scrollBy(0, 4000)")
            page.wait_for_timeout(150)
            later = page.evaluate(HEADER_IN_VIEW)
            assert later["current"] == [page.evaluate(READING)] and later["search"], later
        search_for(page, "softmax")  # the box works from halfway down
        assert page.locator("#site-search-results a.search-hit").first.is_visible()
        assert problems == [] and context.left_the_machine == [], problems
    finally:
        page.close()
        context.close()


def test_the_home_page_first_screen_lists_every_lesson_and_no_make_test(visit):
    """At 1,400 px and at 390 px, every lesson of the syllabus is linked on the home page's first screen, and the
    front page says nothing of `make test` (that is on the pages for contributors)."""
    from course_lib._syllabus import COURSE

    for width in WIDTHS:
        screen = visit(width, "index.html")["first_screen"]
        expected = [f"notebooks/{Path(row.file).stem}.html" for row in COURSE]
        assert [href.split("/", 3)[-1] for href, _ in screen["lessons"]] == expected, screen["lessons"]
        below = [href for href, shown in screen["lessons"] if not shown]
        assert below == [], f"at {width}, below the first screen: {below}"
        assert "make test" not in screen["text"]


FIRST_SCREEN = r"""() => ({
    lessons: Array.from(document.querySelectorAll('#content a.home-lesson')).map(a => {
        const r = a.getBoundingClientRect();
        const hit = document.elementFromPoint(r.left + Math.min(20, r.width / 2), r.top + r.height / 2);
        return [a.href, r.top >= 0 && r.bottom <= innerHeight && !!hit && a.contains(hit)];
    }),
    text: document.body.innerText,
})"""


def test_show_what_was_measured_opens_a_predictions_folds_together(built_site, served, context):
    """Lesson 02's measurement is folded; "Show what was measured" shows it, and every fold of that prediction
    opens with it (a click, then Enter on the next summary closes them again)."""
    page, problems = open_page(context, served + "notebooks/02_attention_qkv.html")
    try:
        folds = page.locator("details[data-prediction='02-unscaled']")
        assert folds.count() >= 2
        measured = page.get_by_text(re.compile(r"Measured: 0\.\d+")).first
        assert not measured.is_visible()
        folds.first.locator("summary").click()
        assert measured.is_visible()
        assert all(folds.nth(i).evaluate("d => d.open") for i in range(folds.count()))
        folds.last.locator("summary").focus()
        page.keyboard.press("Enter")
        assert not measured.is_visible() and not folds.first.evaluate("d => d.open")
        assert problems == [], problems
    finally:
        page.close()


def test_copy_buttons_work_from_the_keyboard(built_site, served, browser):
    """Every code block has a Copy button; Tab reaches it and Enter copies the block's code."""
    context = guarded_context(browser, served, 1400, 900)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=served.rstrip("/"))
    page, problems = open_page(context, served + "exercises/ex02_attention.html")
    try:
        button = page.locator("#content button.copy-code").first
        code = button.evaluate("b => b.parentElement.querySelector('pre').textContent.replace(/\\n$/, '')")
        page.locator("#content .notebook-bar a").first.focus()
        for _ in range(40):  # Tab from the notebook bar to the first copy button
            page.keyboard.press("Tab")
            if page.evaluate("() => document.activeElement.classList.contains('copy-code')"):
                break
        assert page.evaluate("() => document.activeElement.classList.contains('copy-code')"), "Tab never got there"
        page.keyboard.press("Enter")
        page.wait_for_function("() => document.activeElement.textContent === 'Copied'")
        assert page.evaluate("() => navigator.clipboard.readText()") == code
        assert problems == [], problems
    finally:
        page.close()
        context.close()


def test_on_a_phone_a_wide_figure_opens_full_size(built_site, served, browser):
    """At 390 px lesson 05's two-panel figures are drawn smaller than they are: a tap opens one full size (its own
    width, scrolling inside the screen), Escape closes it and gives the focus back."""
    context = guarded_context(browser, served, *WIDTHS["phone"])
    page, problems = open_page(context, served + "notebooks/05_residuals_and_layernorm.html")
    try:
        figure = page.locator("#content img.zoomable").first
        figure.scroll_into_view_if_needed()
        assert figure.get_attribute("role") == "button" and figure.get_attribute("tabindex") == "0"
        figure.click()
        zoomed = page.locator(".figure-zoom img")
        assert zoomed.is_visible()
        width = zoomed.evaluate("i => [i.getBoundingClientRect().width, i.naturalWidth]")
        assert width[0] == width[1] > WIDTHS["phone"][0], width
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "figure_zoom_phone.png"))
        page.keyboard.press("Escape")
        assert page.locator(".figure-zoom").count() == 0
        assert page.evaluate("() => document.activeElement.classList.contains('zoomable')")
        assert problems == [], problems
    finally:
        page.close()
        context.close()


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


def test_prose_keeps_a_readable_measure_on_a_wide_screen(visit):
    """At 1,400 px the page uses the width for code and figures, but a paragraph's lines stay readable."""
    lines = visit("desktop", "notebooks/02_attention_qkv.html")["prose_lines"]
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
        folded = explorer.evaluate("e => { const d = e.closest('details.course-measured'); return d && !d.open; }")
        if folded:  # part of an experiment's outputs: the reader opens "Show what was measured" first
            page.locator("details.course-measured", has=explorer).locator("summary").first.click()
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
