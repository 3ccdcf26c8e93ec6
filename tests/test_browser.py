"""The built site in a browser: every page, chapter and notebook alike, as a reader meets it.

Headless Chromium (the system's, else Playwright's) visits the site served on 127.0.0.1, built
once per session by the ``built_site`` fixture. Each check group uses one browser context and
visits the pages in one loop that collects every problem; the tests then assert on the
collected problems and list all of them. The helpers are in ``browser_checks.py``; the tests at
the end prove that the checkers fail on a bad page.
"""

import io
import json
import re
import statistics
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import browser_checks as checks
import pytest

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
VIEWPORT = {"width": 1280, "height": 900}


# ----- fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(built_site):
    with checks.serve(built_site, checks.site_url(ROOT / "mkdocs.yml")) as base:
        yield base


def page_files(site: Path, base: str) -> dict[str, Path]:
    """``{url: file}`` of every HTML page of the build, the start page first."""
    files = sorted(site.rglob("*.html"), key=lambda path: (path != site / "index.html", path))
    return {page_url(base, site, path): path for path in files}


@pytest.fixture(scope="module")
def site_pages(built_site, server):
    """``{url: Expectation}`` of every HTML page of the build, the start page first."""
    return {url: checks.expectation(path) for url, path in page_files(built_site, server).items()}


def page_url(base: str, site: Path, path: Path) -> str:
    relative = path.relative_to(site).as_posix()
    return base + (relative.removesuffix("index.html") if relative.endswith("index.html") else relative)


def origin(base: str) -> str:
    parts = urlsplit(base)
    return f"{parts.scheme}://{parts.netloc}/"


def visit_pages(browser, server: str, pages: list) -> list:
    """Visit ``pages`` (``[(url, Expectation)]``) in one context: nothing cached, light palette,
    with axe-core; the problems, in order."""
    from axe_playwright_python.sync_playwright import Axe

    context = browser.new_context(color_scheme="light", viewport=VIEWPORT)
    page = context.new_page()
    recorder = checks.Recorder(page, origin(server))
    recorder.cache(False)  # every page is measured as a first visit: what it costs on its own
    axe = Axe()
    try:
        return [checks.visit(page, recorder, url, expected, axe) for url, expected in pages]
    finally:
        context.close()


@pytest.fixture(scope="module")
def visits(browser, server, site_pages):
    """Every page visited once (see visit_pages), half of them by a second Chromium in a thread
    of its own (Playwright's sync API wants one instance per thread): a visit mostly waits, on
    the page's loading and on axe-core, so two at once take little more than half the time.
    The problems, in page order."""
    import threading

    from playwright.sync_api import sync_playwright

    pages = list(site_pages.items())
    second: dict = {}

    def visit_odd_pages():
        try:
            with sync_playwright() as playwright:
                other = checks.launch(playwright, checks.chromium_executable())
                try:
                    second["visits"] = visit_pages(other, server, pages[1::2])
                finally:
                    other.close()
        except BaseException as error:  # raised again in the test's thread below
            second["error"] = error

    thread = threading.Thread(target=visit_odd_pages, name="second browser")
    thread.start()
    try:
        even = visit_pages(browser, server, pages[0::2])
    finally:
        thread.join()
    if "error" in second:
        raise second["error"]
    ordered = [None] * len(pages)
    ordered[0::2], ordered[1::2] = even, second["visits"]
    return ordered


def name(url: str, base: str) -> str:
    return url.removeprefix(base) or "(start page)"


ARTICLE = re.compile(r"<article\b.*?</article>", re.S)
HREF = re.compile(r"<a\s[^>]*?href=\"([^\"]+)\"")
PREVIOUS = re.compile(r"<a\s[^>]*?href=\"([^\"]+)\"[^>]*md-footer__link--prev")


def is_404(url: str) -> bool:
    return url.endswith("/404.html")  # not "404" anywhere: the server's port may contain it


def bare(url: str) -> str:
    return url.split("#")[0].split("?")[0]


@pytest.fixture(scope="module")
def chapter(site_pages, built_site, server):
    """``(chapter, source, selector)``: the chapter for screenshots and instant navigation,
    chosen from the build (the first, in file order, with math and a figure, else with math,
    else any page but the start page) and a link that leads to it: in another page's text,
    from a page with math if one links to it, else the "Next" link of the page before it."""
    html = {url: path.read_text(encoding="utf-8") for url, path in page_files(built_site, server).items()}

    def route(target):
        # a source page with math first: the math must survive moving from math to math
        for url, text in sorted(html.items(), key=lambda item: not site_pages[item[0]].math):
            article = ARTICLE.search(text)
            for href in HREF.findall(article.group(0) if article else ""):
                if url != target and bare(urljoin(url, href)) == target:
                    # Material makes every link absolute once its script has run
                    return url, f"article a[href='{href}'], article a[href='{urljoin(url, href)}']"
        previous = PREVIOUS.search(html[target])
        return (urljoin(target, previous.group(1)), "a.md-footer__link--next") if previous else None

    chapters = [u for u, e in site_pages.items() if u != server and not e.notebook and not is_404(u)]
    for wanted in (lambda u: site_pages[u].math and "<figure" in html[u], lambda u: site_pages[u].math, bool):
        for url in filter(wanted, chapters):
            found = route(url)
            if found:
                return (url, *found)
    pytest.fail("no chapter that another page links to")


# ----- every page -----------------------------------------------------------------------------


def test_no_console_errors_and_no_failed_requests(visits):
    problems = checks.report(visits, "console") + "\n" + checks.report(visits, "requests")
    assert not any(v.problems.get("console") or v.problems.get("requests") for v in visits), problems


def test_nothing_is_requested_from_another_host(visits):
    assert not any(v.problems.get("foreign") for v in visits), checks.report(visits, "foreign")


def test_every_image_loads_and_has_alt_text(visits):
    assert not any(v.problems.get("images") for v in visits), checks.report(visits, "images")


def test_math_is_typeset(visits, site_pages):
    assert not any(v.problems.get("math") for v in visits), checks.report(visits, "math")
    with_math = [v for v in visits if site_pages[v.url].math]
    assert all(v.math > 0 for v in with_math)


def test_notebook_pages_show_their_outputs_and_figures(visits, site_pages):
    assert any(expected.notebook for expected in site_pages.values()), "no notebook page in the build"
    assert not any(v.problems.get("notebook") for v in visits), checks.report(visits, "notebook")


def test_no_serious_or_critical_accessibility_violations(visits):
    """axe-core on every page. No rule is disabled: what it found was fixed at its source."""
    found = checks.report(visits, "accessibility")
    print(found)
    assert not any(v.problems.get("accessibility") for v in visits), found


def test_no_page_scrolls_sideways_on_a_phone(visits):
    """At 375 CSS pixels every page fits its width; wide content scrolls in its own box."""
    found = checks.report(visits, "phone")
    print(found)
    assert not any(v.problems.get("phone") for v in visits), found


def test_page_weight(visits, server):
    """Bytes the browser transfers for each page (gzip, as the host serves it) on a first visit
    with nothing cached. Sizes, not timings, so they are asserted: no first visit over
    ``PAGE_LIMIT_BYTES`` and the median first visit under ``MEDIAN_LIMIT_BYTES``. The bytes of a
    next visit (the files every page shares already cached) are measured by ``make bench``
    (``benchmarks/page_weight.py``)."""
    rows = [(name(v.url, server), v.requests, v.bytes) for v in visits]
    table = checks.weight_table(rows)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "page-weight.txt").write_text(table + "\n", encoding="utf-8")
    print("\n" + table)
    first = [v.bytes for v in visits]
    too_big = [name(v.url, server) for v in visits if v.bytes > checks.PAGE_LIMIT_BYTES]
    assert all(size > 0 for size in first), "a page transferred nothing: the measurement is broken"
    assert not too_big, f"pages over {checks.PAGE_LIMIT_BYTES / 1000:.0f} kB: {too_big}\n{table}"
    median = statistics.median(first)
    assert median < checks.MEDIAN_LIMIT_BYTES, f"median first visit {median / 1000:.1f} kB\n{table}"


# ----- dark palette ---------------------------------------------------------------------------


def test_dark_palette_keeps_figures_readable(browser, server, site_pages, chapter, built_site):
    """The palette toggle switches to dark; on every page with a figure, each figure (every one:
    the lazy ones are loaded) stands out from the dark background (no black on black). axe-core
    checks the dark palette on one page of each kind (start page, chapter, notebook): colours
    come from the same CSS on every page of a kind, and axe over every page in both palettes
    would double the suite's time. Those pages also show that the palette holds across pages."""
    from axe_playwright_python.sync_playwright import Axe

    notebooks = [url for url, expected in site_pages.items() if expected.notebook]
    representatives = {server, chapter[0], *notebooks[:1]}
    with_figures = {
        url
        for url, path in page_files(built_site, server).items()
        if "<img" in path.read_text(encoding="utf-8")
    }
    context = browser.new_context(color_scheme="light", viewport=VIEWPORT)
    page = context.new_page()
    axe, results = Axe(), []
    try:
        page.goto(server)
        assert checks.switch_to_dark(page), "the palette toggle did not switch to the dark palette"
        for url in [u for u in site_pages if u in representatives | with_figures]:
            result = checks.Visit(url)
            page.goto(url)
            scheme = page.evaluate("() => document.body.getAttribute('data-md-color-scheme')")
            if scheme != "slate":
                result.add("dark", f"the page shows the {scheme!r} palette after switching to dark")
            page.evaluate(checks.EAGER_JS)
            checks.check_figures_readable(page, result)
            if url in representatives:
                for problem in checks.axe_violations(page, axe):
                    result.add("dark", f"axe: {problem}")
            results.append(result)
    finally:
        context.close()
    assert with_figures, "no page with a figure: the check would check nothing"
    assert not any(r.problems for r in results), checks.report(results, "dark")


# ----- search and instant navigation ----------------------------------------------------------

WORD = re.compile(r"[a-z]{6,}")


def distinctive_word(built_site: Path, server: str, target: str) -> str | None:
    """A word from the target page's body that as few other pages as possible contain."""
    index = json.loads((built_site / "search" / "search_index.json").read_text(encoding="utf-8"))
    words: dict[str, set] = {}
    for doc in index["docs"]:
        url = urljoin(server, doc["location"].split("#")[0])
        prose = re.sub(r"<code>.*?</code>|<pre>.*?</pre>", " ", doc.get("text", ""), flags=re.S)
        text = re.sub(r"<[^>]+>", " ", prose).lower()  # a reader searches for words, not code
        text = re.sub(r"\S*[/:.@]\w\S*", " ", text)  # nor for addresses (the index splits them)
        for word in set(WORD.findall(text)):
            words.setdefault(word, set()).add(url)
    title = next((d["title"].lower() for d in index["docs"] if urljoin(server, d["location"]) == target), "")
    mine = [w for w, urls in words.items() if target in urls and w not in title]
    return min(mine, key=lambda w: (len(words[w]), -len(w), w)) if mine else None


def test_search_finds_every_chapter_by_a_word_from_its_body(browser, server, site_pages, built_site):
    chapters = [url for url, expected in site_pages.items() if not expected.notebook and not is_404(url)]
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    problems = []
    try:
        page.goto(server)
        box = page.locator("input.md-search__input")
        box.click()
        for url in chapters:
            word = distinctive_word(built_site, server, url)
            if word is None:
                continue  # a page without body text
            box.fill("")
            box.press_sequentially(word)  # Material searches on key presses
            try:
                page.wait_for_function(
                    """target => [...document.querySelectorAll('.md-search-result a')]
                         .some(a => a.href.split(/[?#]/)[0] === target)""",
                    arg=url,
                    timeout=15_000,  # a safety limit: the wait ends when the result is listed
                )
            except Exception:
                shown = page.eval_on_selector_all(".md-search-result a", "links => links.map(a => a.href)")
                problems.append(f"searching {word!r} does not list {url} (listed: {shown[:5]})")
    finally:
        context.close()
    assert not problems, "\n".join(problems)


def rendered(page, expect_math: bool) -> list[str]:
    """What is wrong with the math and figures the page shows right now."""
    problems = []
    if expect_math and checks.wait_for_math(page) == 0:
        problems.append("no typeset math")
    raw = checks.RAW_MATH.findall(page.evaluate(checks.PROSE_JS))
    if raw:
        problems.append(f"untypeset math {sorted(set(raw))}")
    # Figures load lazily and finish at their own time after a navigation: wait for each one's
    # load or error event (never a fixed delay), then check what arrived.
    page.evaluate(checks.EAGER_JS)
    for image in page.evaluate(checks.IMAGES_JS):
        if image["visible"] and (not image["complete"] or image["width"] == 0):
            problems.append(f"figure not loaded: {checks.short(image['src'])}")
    return problems


def test_instant_navigation_keeps_math_and_figures(browser, server, site_pages, chapter):
    """Follow a link to the chapter, then the navigation link to a notebook page, without a
    page load (Material's instant navigation): math stays typeset, figures stay shown."""
    chapter, source, selector = chapter
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on(
        "console",
        lambda message: (
            errors.append(f"console {message.type}: {message.text[:200]}")
            if message.type in ("error", "warning")
            else None
        ),
    )
    try:
        page.goto(source)
        checks.wait_for_math(page)
        page.evaluate("() => { window.__sameDocument = true; }")  # gone if the page reloads
        link = page.locator(selector).first
        link.scroll_into_view_if_needed()
        link.click()
        page.wait_for_url(chapter)
        assert page.evaluate("() => window.__sameDocument === true"), "the link reloaded the page"
        problems = [f"{chapter}: {p}" for p in rendered(page, site_pages[chapter].math)]

        notebooks = [url for url, expected in site_pages.items() if expected.notebook]
        if notebooks:
            target = notebooks[0]
            folder = urlsplit(target).path.rstrip("/").split("/")[-1]
            page.locator(f"nav a.md-nav__link[href$='{folder}/']").first.click()
            page.wait_for_url(target)
            assert page.evaluate("() => window.__sameDocument === true"), "the nav link reloaded the page"
            page.wait_for_function("() => document.querySelectorAll('.jp-OutputArea-output').length > 0")
            problems += [f"{target}: {p}" for p in rendered(page, site_pages[target].math)]
            styled = page.evaluate(
                "() => getComputedStyle(document.querySelector('.jp-InputPrompt') || document.body)"
                ".textAlign === 'right'"
            )
            if not styled:
                problems.append(f"{target}: the shared notebook stylesheet is not applied")
    finally:
        context.close()
    assert not errors, "errors during instant navigation:\n" + "\n".join(errors[:10])
    assert not problems, f"after instant navigation from {source}:\n" + "\n".join(problems)


# ----- screenshots ----------------------------------------------------------------------------


def test_screenshots_light_and_dark(browser, server, site_pages, chapter):
    """Screenshots of the start page and one chapter, light and dark, for a reviewer."""
    chapter = chapter[0]
    folder = ARTIFACTS / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(color_scheme="light", viewport=VIEWPORT)
    page = context.new_page()
    written = []
    try:
        for scheme in ("light", "dark"):
            if scheme == "dark":
                page.goto(server)
                assert checks.switch_to_dark(page)
            for label, url in (("start", server), ("chapter", chapter)):
                page.goto(url)
                checks.wait_for_math(page)
                page.wait_for_load_state("networkidle")
                path = folder / f"{label}-{scheme}.png"
                page.screenshot(path=path, full_page=True)
                written.append(path)
    finally:
        context.close()
    print(f"\nscreenshots of {server} and {chapter} in {folder}:")
    for path in written:
        print(f"  {path.name}")
    assert all(path.stat().st_size > 0 for path in written)


# ----- the checkers fail on a bad page --------------------------------------------------------

BAD_PAGE = """<!doctype html><html lang="en"><head><title>Bad</title>
<script src="https://cdn.example.com/lib.js"></script></head>
<body><main><article><h1>Bad</h1>
<p>Untypeset: $$x^2$$ and \\(y\\).</p>
<img src="missing.png" alt="a figure that is not there">
<img src="dot.svg">
<p><span style="white-space: nowrap">an unbreakable line that is far wider than a phone's screen,
much wider</span></p>
<script>console.error("boom")</script>
</article></main></body></html>"""
BAD_FONT_PAGE = """<!doctype html><html lang="en"><head><title>Bad font</title><style>
@font-face { font-family: "Gradient Pitfalls Math"; src: url("missing.woff2") format("woff2"); }
math { font-family: "Gradient Pitfalls Math", math; }</style></head>
<body><main><article><h1>Bad font</h1><p>A formula: <math><mi>x</mi><mo>=</mo><mn>1</mn></math>.</p>
</article></main></body></html>"""
DOT = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><circle cx="5" cy="5" r="4"/></svg>'
GOOD_PAGE = """<!doctype html><html lang="en"><head><title>Good</title></head>
<body><main><article><h1>Good</h1><p>Plain text, no math.</p>
<img src="dot.svg" alt="A black dot."></article></main></body></html>"""


@pytest.fixture(scope="module")
def small_site(tmp_path_factory):
    site = tmp_path_factory.mktemp("small-site")
    (site / "bad").mkdir()
    (site / "bad" / "index.html").write_text(BAD_PAGE, encoding="utf-8")
    (site / "bad" / "dot.svg").write_text(DOT, encoding="utf-8")
    (site / "bad-font").mkdir()
    (site / "bad-font" / "index.html").write_text(BAD_FONT_PAGE, encoding="utf-8")
    (site / "index.html").write_text(GOOD_PAGE, encoding="utf-8")
    (site / "dot.svg").write_text(DOT, encoding="utf-8")
    (site / "404.html").write_text("<!doctype html><title>404</title>not found", encoding="utf-8")
    with checks.serve(site, "/") as base:
        yield base


def visit_small(browser, base, url, expected):
    from axe_playwright_python.sync_playwright import Axe

    context = browser.new_context()
    page = context.new_page()
    recorder = checks.Recorder(page, origin(base))
    try:
        return checks.visit(page, recorder, url, expected, Axe())
    finally:
        context.close()


def test_the_checkers_fail_on_a_bad_page(browser, small_site):
    result = visit_small(browser, small_site, small_site + "bad/", checks.Expectation(math=True))
    found = "\n".join(f"{k}: {p}" for k, ps in result.problems.items() for p in ps)
    assert any("cdn.example.com" in p for p in result.problems.get("foreign", [])), found
    assert any("missing.png" in p for p in result.problems.get("requests", [])), found
    assert any("boom" in p for p in result.problems.get("console", [])), found
    images = " ".join(result.problems.get("images", []))
    assert "missing.png" in images and "did not load" in images, found
    assert "dot.svg" in images and "no alt text" in images, found
    math = " ".join(result.problems.get("math", []))
    assert "$$" in math and "no typeset math" in math, found
    assert any(p.startswith("image-alt") for p in result.problems.get("accessibility", [])), found
    assert any("unbreakable line" in p for p in result.problems.get("phone", [])), found


def test_the_math_check_fails_when_the_math_font_does_not_load(browser, small_site):
    result = visit_small(browser, small_site, small_site + "bad-font/", checks.Expectation(math=True))
    assert result.math == 1, result.problems
    assert any("did not load" in p for p in result.problems.get("math", [])), result.problems


def test_the_checkers_pass_a_good_page(browser, small_site):
    result = visit_small(browser, small_site, small_site, checks.Expectation())
    assert not result.problems, result.problems
    assert result.bytes > 0


def test_the_figure_contrast_check_tells_black_on_black():
    from PIL import Image, ImageDraw

    def figure(background, ink):
        image = Image.new("RGB", (120, 60), background)
        ImageDraw.Draw(image).rectangle((10, 20, 110, 40), fill=ink)
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        return buffer.getvalue()

    slate = (30, 33, 41)
    assert checks.figure_contrast(figure(slate, (38, 38, 38))) < checks.MIN_FIGURE_CONTRAST
    assert checks.figure_contrast(figure(slate, (226, 226, 226))) > checks.MIN_FIGURE_CONTRAST
    assert checks.figure_contrast(figure((255, 255, 255), (38, 38, 38))) > checks.MIN_FIGURE_CONTRAST


def test_the_server_gzips_text_like_the_host(small_site):
    from urllib.request import Request, urlopen

    response = urlopen(Request(small_site, headers={"Accept-Encoding": "gzip"}))
    assert response.headers["Content-Encoding"] == "gzip"
    missing = Request(small_site + "nowhere/", headers={"Accept-Encoding": "gzip"})
    with pytest.raises(Exception, match="404"):
        urlopen(missing)
