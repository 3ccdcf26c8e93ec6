"""Browser checks for the built site: the server, the browser and what is checked on a page.

Kept apart from ``test_browser.py`` so that ``benchmarks/page_weight.py`` and the checker unit
tests use exactly the same server and the same checks as the suite over the real site.

* :func:`serve` serves a built site on 127.0.0.1 under the path of ``site_url`` (as GitHub Pages
  does, so Material's 404 page, whose links are absolute, works) and gzips text like the host.
* :func:`launch` starts headless Chromium, the system's or Playwright's, kept from calling home.
* :func:`visit` loads one page and returns every problem found on it, plus the bytes it cost.
"""

import gzip
import io
import json
import mimetypes
import os
import re
import shutil
import statistics
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

from playwright.sync_api import TimeoutError as PlaywrightTimeout

# Chromium's headless shell first: the same Blink without the browser's interface (what
# Playwright itself runs headless); it took 162 core-s for test_browser.py where the full
# browser took 187
SYSTEM_CHROMIUM = ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium", "/usr/bin/chromium-browser")
NO_BROWSER = (
    "No Chromium for the browser tests. Install Debian's package (apt-get install "
    "chromium-headless-shell, which gives /usr/bin/chromium-headless-shell) or Playwright's own "
    "browser (.venv/bin/playwright install chromium); set CHROMIUM=/path/to/chromium to use another."
)
# Headless, and nothing that calls home: no sync, no component or safe-browsing updates, no
# QUIC. Every host name but 127.0.0.1 resolves to nothing, so a request to another host fails
# fast instead of leaving the machine (and is reported by the checks). Playwright launches
# every browser with a fresh temporary profile (its own --user-data-dir) and rejects the flag.
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]
DEFAULT_ALT = "No description has been provided for this image"
# Contrast a figure's darkest/lightest marks need against what is behind them (WCAG 1.4.11,
# non-text contrast, asks 3:1 for the parts of a graphic needed to understand it).
MIN_FIGURE_CONTRAST = 3.0
# Math is MathML written at build time (pipeline/mathml.py): no page loads a TeX engine, and a page
# with math fetches one font of about 45 kB. The targets: median first visit <= 300 kB, none over
# 500 kB (benchmarks/page_weight.py prints every page).
PAGE_LIMIT_BYTES = 500_000
MEDIAN_LIMIT_BYTES = 300_000
MATH_FONT = "Gradient Pitfalls Math"  # docs/assets/math.css
AXE_IMPACTS = ("serious", "critical")


# ----- the server -----------------------------------------------------------------------------

COMPRESSIBLE = re.compile(r"^(text/|application/(javascript|json|xml)|image/svg\+xml)")


def site_url(config_file: Path) -> str:
    """The ``site_url`` of ``mkdocs.yml``, where the site is hosted."""
    match = re.search(r"^site_url:\s*(\S+)", Path(config_file).read_text(encoding="utf-8"), re.M)
    return match.group(1) if match else "/"


def site_path(url: str) -> str:
    """The path of ``site_url`` (``/gradient-pitfalls/``): where GitHub Pages serves the site."""
    path = urlsplit(url).path.strip("/")
    return f"/{path}/" if path else "/"


class _Handler(BaseHTTPRequestHandler):
    root: Path
    prefix: str
    host: str  # the origin of site_url, "https://gradient-pitfalls.github.io"
    origin: str  # this server's, "http://127.0.0.1:PORT"
    gzipped: dict  # path -> compressed bytes, shared by the threads (a benign race at worst)

    def log_message(self, *args):  # quiet
        pass

    def _file(self) -> tuple[int, Path | None, str | None]:
        path = unquote(urlsplit(self.path).path)
        if path + "/" == self.prefix:
            return 301, None, self.prefix
        if not path.startswith(self.prefix):
            return 404, self.root / "404.html", None
        target = (self.root / path[len(self.prefix) :]).resolve()
        if not target.is_relative_to(self.root):
            return 404, self.root / "404.html", None
        if target.is_dir():
            if not path.endswith("/"):
                return 301, None, path + "/"
            target = target / "index.html"
        if target.is_file():
            return 200, target, None
        return 404, self.root / "404.html", None

    def do_HEAD(self):
        self.do_GET(body=False)

    def do_GET(self, body=True):
        status, target, location = self._file()
        if location:
            self.send_response(status)
            self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = target.read_bytes() if target and target.is_file() else b"not found"
        kind = mimetypes.guess_type(target.name)[0] if target else None
        kind = kind or "application/octet-stream"
        if target and target.name == "sitemap.xml" and self.host:
            # On the host the sitemap's addresses are the pages' own. Material's instant
            # navigation only follows links listed there (it swaps in the page's protocol and
            # host name, not its port), so here they must name this server.
            data = data.replace(self.host.encode(), self.origin.encode())
        self.send_response(status)
        self.send_header("Content-Type", kind + ("; charset=utf-8" if kind.startswith("text/") else ""))
        # GitHub Pages, where the site is hosted, gzips text responses (HTML, CSS, JS, JSON,
        # SVG) for browsers that accept it; this server does the same, so the bytes measured
        # here are what a reader's browser transfers. Fonts (woff) are compressed already.
        if COMPRESSIBLE.match(kind) and "gzip" in self.headers.get("Accept-Encoding", ""):
            key = str(target)
            if key not in self.gzipped:
                self.gzipped[key] = gzip.compress(data, compresslevel=6, mtime=0)
            data = self.gzipped[key]
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Vary", "Accept-Encoding")
        self.send_header("Cache-Control", "max-age=600")  # what GitHub Pages sends
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)


@contextmanager
def serve(site: Path, url: str = "/"):
    """Serve ``site`` on 127.0.0.1 on a free port, under the path of its ``site_url``
    (``url``); yields the site's base URL there."""
    mimetypes.add_type("text/javascript", ".js")
    mimetypes.add_type("font/woff", ".woff")
    mimetypes.add_type("font/woff2", ".woff2")
    parts, prefix = urlsplit(url), site_path(url)
    host = f"{parts.scheme}://{parts.netloc}" if parts.netloc else ""
    attributes = {"root": Path(site).resolve(), "prefix": prefix, "host": host, "gzipped": {}}
    handler = type("Handler", (_Handler,), attributes)
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    handler.origin = f"http://127.0.0.1:{server.server_port}"
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}{prefix}"
    finally:
        server.shutdown()
        server.server_close()


# ----- the browser ----------------------------------------------------------------------------


def chromium_executable() -> str | None:
    """The system's Chromium, or None to use Playwright's own; raises when there is neither."""
    for candidate in filter(None, (os.environ.get("CHROMIUM"), *SYSTEM_CHROMIUM)):
        if Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("chromium")
    if found:
        return found
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        if Path(playwright.chromium.executable_path).is_file():
            return None
    raise RuntimeError(NO_BROWSER)


def launch(playwright, executable: str | None):
    return playwright.chromium.launch(executable_path=executable, headless=True, args=LAUNCH_ARGS)


# ----- what a page should be ------------------------------------------------------------------


@dataclass
class Expectation:
    """What the page's source says the browser must show."""

    math: bool = False  # the source has math: the page must show it as MathML
    notebook: bool = False  # a notebook page: it must show its executed outputs
    figures: int = 0  # output figures of a notebook page


MATH_IN_MARKDOWN = re.compile(r"\$[^$\s][^$]*\$|\\\(|\\\[")


def expectation(html_file: Path) -> Expectation:
    """Read the built page (and, for a notebook page, its .ipynb) for what it must show."""
    html = html_file.read_text(encoding="utf-8")
    expected = Expectation(math="<math" in html)
    notebooks = list(html_file.parent.glob("*.ipynb"))
    if "jupyter-wrapper" in html and notebooks:
        notebook = json.loads(notebooks[0].read_text(encoding="utf-8"))
        expected.notebook = True
        for cell in notebook["cells"]:
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            if cell["cell_type"] == "markdown" and MATH_IN_MARKDOWN.search(source):
                expected.math = True
            for output in cell.get("outputs", []):
                if {"image/png", "image/svg+xml", "image/jpeg"} & set(output.get("data", {})):
                    expected.figures += 1
    return expected


# ----- visiting a page ------------------------------------------------------------------------


@dataclass
class Visit:
    url: str
    problems: dict = field(default_factory=dict)  # check name -> [problem, ...]
    bytes: int = 0  # transferred over the network on a first visit: headers, (gzipped) bodies
    seconds: float = 0.0  # to load and check the page
    requests: int = 0
    math: int = 0  # formulas laid out (<math> elements with a box)

    def add(self, check: str, problem: str) -> None:
        self.problems.setdefault(check, []).append(problem)


class Recorder:
    """Watches one page: console errors, failed and foreign requests, bytes transferred."""

    def __init__(self, page, origin: str):
        self.page, self.origin = page, origin
        self.reset()
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(f"uncaught {error}"))
        page.on("request", self._request)
        page.on("requestfailed", self._failed)
        page.on("response", self._response)
        page.on("requestfinished", lambda request: self.finished.add(request.url))
        self.cdp = page.context.new_cdp_session(page)
        self.cdp.send("Network.enable")
        self.cdp.on("Network.loadingFinished", self._loaded)
        self.cdp.on("Network.requestWillBeSent", self._sent)

    def reset(self):
        self.errors, self.failed, self.foreign = [], [], []
        self.sent, self.done, self.finished = {}, set(), set()
        self.bytes, self.requests = 0, 0
        self.made = set()  # requests made since the reset: this visit's

    def cache(self, enabled: bool) -> None:
        self.cdp.send("Network.setCacheDisabled", {"cacheDisabled": not enabled})

    def _console(self, message):
        if message.type == "error":
            self.errors.append(f"console error: {message.text[:300]}")

    def _request(self, request):
        self.made.add(request)
        if not request.url.startswith(self.origin) and not request.url.startswith(("data:", "blob:")):
            self.foreign.append(request.url)

    def _failed(self, request):
        # a request the page before made (the search worker, say) is cancelled when the visit
        # leaves that page: net::ERR_ABORTED arrives after the reset, and is not this page's
        if request in self.made:
            self.failed.append(f"{request.url}: {request.failure}")

    def _response(self, response):
        if response.status >= 400:
            self.failed.append(f"{response.url}: HTTP {response.status}")

    def _loaded(self, event):
        self.bytes += int(event.get("encodedDataLength", 0))
        self.requests += 1
        self.done.add(self.sent.get(event["requestId"], ""))

    def _sent(self, event):
        self.sent[event["requestId"]] = event["request"]["url"]

    def settle(self, timeout_ms: int = 30_000) -> bool:
        """Wait until the page has fetched what it fetches after its load event: the math font
        and, on a Material page, the search index. Quicker than waiting for the network to be
        idle for half a second. False when the search index did not arrive within the limit
        (a safety limit: a page that loads it ends the wait as soon as it has)."""
        self.page.evaluate("() => document.fonts.ready.then(() => true)")
        if self.page.locator("[data-md-component=search]").count() == 0:
            return True
        if any(url.endswith("search_index.json") for url in self.finished):
            return True
        try:  # an event, not a poll: Playwright dispatches pending events while it waits
            self.page.wait_for_event(
                "requestfinished",
                lambda request: request.url.endswith("search_index.json"),
                timeout=timeout_ms,
            )
        except PlaywrightTimeout:
            return False
        return True


def wait_for_math(page) -> int:
    """Wait until the fonts the page uses are loaded (an event: document.fonts.ready); returns
    the number of formulas laid out, <math> elements with a box."""
    page.evaluate("() => document.fonts.ready.then(() => true)")
    return page.evaluate(
        "() => [...document.querySelectorAll('article math')]"
        ".filter(math => math.getBoundingClientRect().height > 0).length"
    )


# The article's visible prose: code, typeset math and scripts removed.
PROSE_JS = """() => {
  const article = document.querySelector('article') || document.body;
  const copy = article.cloneNode(true);
  copy.querySelectorAll('pre, code, script, style, math, .jp-InputArea, textarea')
      .forEach(node => node.remove());
  return copy.textContent;
}"""
IMAGES_JS = """() => [...document.querySelectorAll('img')].map(img => ({
  src: img.currentSrc || img.src, alt: img.getAttribute('alt'), complete: img.complete,
  width: img.naturalWidth, visible: img.offsetParent !== null,
  output: !!img.closest('.jp-OutputArea-output')}))"""
RAW_MATH = re.compile(r"\$\$|\\\(|\\\)|\\\[|\\\]")


def short(url: str) -> str:
    return url if not url.startswith("data:") else url[:40] + "..."


# Figures load lazily; the other palette's copy (display: none) never would. Scrolling through
# the page loads what a reader sees; EAGER_JS then loads the rest, so every image is checked.
SCROLL_JS = """async () => {
  // only lazy images and interactive figures (their frames) load as a reader scrolls to them
  if (!document.querySelector('img[loading="lazy"], figure.gp-interactive[data-src]')) return;
  for (let y = 0; y < document.body.scrollHeight; y += window.innerHeight) {
    window.scrollTo(0, y);
    await new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  }
  window.scrollTo(0, 0);
}"""
EAGER_JS = """async () => {
  const lazy = [...document.querySelectorAll('img[loading="lazy"]')];
  lazy.forEach(img => { img.loading = 'eager'; });
  await Promise.all(lazy.map(img => img.complete ? null
    : new Promise(resolve => { img.onload = img.onerror = resolve; })));
}"""


def check_images(page, visit: Visit, expected: Expectation) -> None:
    page.evaluate(EAGER_JS)
    images = page.evaluate(IMAGES_JS)
    for image in images:
        where = f"<img src={short(image['src'])!r}>"
        if not image["complete"] or image["width"] == 0:
            visit.add("images", f"{where} did not load (natural width 0)")
        alt = (image["alt"] or "").strip()
        if not alt or alt == DEFAULT_ALT:
            visit.add("images", f"{where} has no alt text ({image['alt']!r})")
    if expected.notebook:
        outputs = page.locator(".jp-OutputArea-output").count()
        if outputs == 0:
            visit.add("notebook", "the notebook page shows no outputs")
        shown = sum(1 for image in images if image["output"] and image["visible"] and image["width"] > 0)
        if shown != expected.figures:
            visit.add("notebook", f"shows {shown} output figures, the notebook has {expected.figures}")


def check_math(page, visit: Visit, expected: Expectation) -> None:
    visit.math = wait_for_math(page)
    if expected.math and visit.math == 0:
        visit.add("math", "the source has math but the page shows no typeset math (MathML)")
    raw = sorted(set(RAW_MATH.findall(page.evaluate(PROSE_JS))))
    if raw:
        visit.add("math", f"untypeset math delimiters in the visible text: {' '.join(raw)}")
    if visit.math and not page.evaluate(f"() => document.fonts.check('1em \"{MATH_FONT}\"')"):
        visit.add("math", f"the math is not shown in its font ({MATH_FONT} did not load)")


AXE_OPTIONS = {"resultTypes": ["violations"]}  # every rule runs; only violations list every node


def axe_violations(page, axe, context=None) -> list[str]:
    """Serious and critical axe-core violations, one line per rule and element. axe-core runs
    every rule it runs by default; ``resultTypes`` only spares it listing each passing node
    (on a notebook page, ~4,000 elements: 3.5 s -> 1.4 s)."""
    results = axe.run(page, context=context, options=AXE_OPTIONS)
    found = []
    for violation in results.response["violations"]:
        if violation.get("impact") not in AXE_IMPACTS:
            continue
        for node in violation["nodes"]:
            target = " ".join(str(t) for t in node.get("target", []))
            found.append(
                f"{violation['id']} ({violation['impact']}): {target} :: {node.get('html', '')[:160]}"
                f" -- {violation['help']}"
            )
    return found


PHONE = {"width": 375, "height": 800}  # the narrowest common phone viewport, in CSS pixels
WIDER_THAN_VIEWPORT_JS = """() => {
  const width = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth <= width) return [];
  const scrolls = (el) => getComputedStyle(el).overflowX !== 'visible';
  const offenders = [];
  for (const el of document.body.querySelectorAll('*')) {
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.right <= width + 1) continue;
    let ancestor = el.parentElement, inside = false;
    while (ancestor && ancestor !== document.body) {
      if (scrolls(ancestor)) { inside = true; break; }
      ancestor = ancestor.parentElement;
    }
    const parent = el.parentElement.getBoundingClientRect();
    if (!inside && parent.right <= width + 1) {
      const text = (el.textContent || '').replace(/\\s+/g, ' ').trim().slice(0, 60);
      offenders.push(`<${el.tagName.toLowerCase()}> ends at ${Math.round(box.right)} px: ${text}`);
    }
  }
  return offenders.length ? offenders : [`the page is ${document.documentElement.scrollWidth} px wide`];
}"""


def check_phone_width(page, visit: Visit) -> None:
    """At a phone's width the page must not scroll sideways (wide tables, code and display math
    scroll inside their own box); the elements that stick out are named."""
    size = page.viewport_size
    page.set_viewport_size(PHONE)
    try:
        page.wait_for_function(f"() => window.innerWidth === {PHONE['width']}")  # the resize applied
        for problem in page.evaluate(WIDER_THAN_VIEWPORT_JS)[:5]:
            visit.add("phone", f"wider than {PHONE['width']} px: {problem}")
    finally:
        if size:
            page.set_viewport_size(size)


def visit(page, recorder: Recorder, url: str, expected: Expectation, axe=None) -> Visit:
    """Load ``url`` and check it; every problem is collected, none raised."""
    result = Visit(url)
    recorder.reset()
    start = time.perf_counter()
    try:
        response = page.goto(url, wait_until="load")
        if response is None or response.status >= 400:
            result.add("requests", f"the page itself answered {response.status if response else None}")
    except Exception as error:
        result.add("requests", f"the page did not load: {error}")
        return result
    check_math(page, result, expected)
    if axe is not None:  # before scrolling: the header's title fades while the page moves
        for problem in axe_violations(page, axe):
            result.add("accessibility", problem)
    page.evaluate(SCROLL_JS)  # a reader scrolls through: the figures they see load
    if not recorder.settle():  # the search index and the math font count too
        result.add("requests", "the search index (search/search_index.json) did not arrive within 30 s")
    result.bytes, result.requests = recorder.bytes, recorder.requests
    check_images(page, result, expected)
    check_phone_width(page, result)
    for error in recorder.errors:
        result.add("console", error)
    for failure in recorder.failed:
        result.add("requests", failure)
    for url_ in recorder.foreign:
        result.add("foreign", f"request to another host: {url_}")
    result.seconds = time.perf_counter() - start
    return result


def warm_up(page, pages: dict[str, Expectation]) -> None:
    """Fill the browser's cache with the files pages share: visit the first page, the first page
    with math (the math font) and the first notebook page (the notebook stylesheet). They
    are visited with a query string, so their own HTML is not cached; their figures are."""
    urls = list(pages)[:1]
    urls += [next((url for url, e in pages.items() if e.math), urls[0])]
    urls += [next((url for url, e in pages.items() if e.notebook), urls[0])]
    for url in dict.fromkeys(urls):
        page.goto(f"{url}?warm-up", wait_until="networkidle")
        wait_for_math(page)


def next_visit_bytes(page, recorder: Recorder, url: str, expected: Expectation) -> int:
    """Bytes a page costs when the browser has the site's shared files cached already (they are
    served with max-age, as the host does): a reader who arrives from another page."""
    recorder.reset()
    page.goto(url, wait_until="load")
    wait_for_math(page)
    page.evaluate(SCROLL_JS)
    if not recorder.settle():
        raise AssertionError(f"{url}: the search index did not arrive within 30 s")
    return recorder.bytes


def report(visits: list[Visit], check: str) -> str:
    """Every problem of one check on every page, one line each."""
    lines = [f"{v.url}: {problem}" for v in visits for problem in v.problems.get(check, [])]
    return f"{len(lines)} problem(s) ({check}):\n" + "\n".join(lines)


# ----- dark palette ---------------------------------------------------------------------------


def switch_to_dark(page) -> bool:
    """Click Material's palette toggle until the dark (slate) scheme shows; True when it did."""
    for _ in range(4):
        if page.evaluate("() => document.body.getAttribute('data-md-color-scheme')") == "slate":
            return True
        # each palette (auto, light, dark) has its own media query: wait until the next one applies
        before = page.evaluate("() => document.body.getAttribute('data-md-color-media')")
        page.locator("form[data-md-component=palette] label:visible").first.click()
        page.wait_for_function(
            "before => document.body.getAttribute('data-md-color-media') !== before",
            arg=before,
            timeout=15_000,
        )
    return page.evaluate("() => document.body.getAttribute('data-md-color-scheme')") == "slate"


def _luminance(rgb):
    import numpy as np

    channel = rgb / 255.0
    linear = np.where(channel <= 0.03928, channel / 12.92, ((channel + 0.055) / 1.055) ** 2.4)
    return linear @ np.array([0.2126, 0.7152, 0.0722])


def figure_contrast(png: bytes) -> float:
    """Contrast ratio between a figure's background (its most common luminance) and its marks.

    The marks are the 1% of pixels that differ most from the background: text, axes, lines.
    Dark text on a dark page ("black on black") gives a ratio near 1.
    """
    import numpy as np
    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=float).reshape(-1, 3)
    luminance = _luminance(pixels)
    counts, edges = np.histogram(luminance, bins=64, range=(0, 1))
    background = luminance[
        (luminance >= edges[counts.argmax()]) & (luminance <= edges[counts.argmax() + 1])
    ].mean()
    ratio = (np.maximum(luminance, background) + 0.05) / (np.minimum(luminance, background) + 0.05)
    return float(np.percentile(ratio, 99))


FIGURE_BOXES_JS = """() => [...document.querySelectorAll('article img')]
  .filter(img => img.offsetParent !== null && img.naturalWidth > 0)
  .map(img => { const r = img.getBoundingClientRect(), src = img.getAttribute('src');
    return {src, x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height}; })"""


def check_figures_readable(page, visit: Visit) -> None:
    """Every visible figure in the article has marks that stand out from the page behind it,
    as drawn on screen (a screenshot of the page where the figure is)."""
    for box in page.evaluate(FIGURE_BOXES_JS):
        if box["width"] < 8 or box["height"] < 8:
            continue
        clip = {key: box[key] for key in ("x", "y", "width", "height")}
        contrast = figure_contrast(page.screenshot(clip=clip, full_page=True))
        if contrast < MIN_FIGURE_CONTRAST:
            src = short(box["src"] or "")
            visit.add("dark", f"<img src={src!r}> is unreadable: contrast {contrast:.2f}:1 < 3:1")


# ----- page weight ----------------------------------------------------------------------------


def weight_table(rows: list[tuple], warm: bool = False) -> str:
    """Aligned table of ``(page, requests, first-visit bytes[, bytes with the shared files
    cached])`` with the median and the largest first visit."""
    width = max([len(row[0]) for row in rows] + [24])
    header = f"{'page':<{width}} {'requests':>8} {'first visit':>12}"
    lines = [header + (f" {'next visit':>11}" if warm else "")]
    for name, requests, cold, *cached in rows:
        line = f"{name:<{width}} {requests:>8} {cold / 1000:>9.1f} kB"
        lines.append(line + (f" {cached[0] / 1000:>8.1f} kB" if warm else ""))
    for label, pick in (("median", statistics.median), ("largest", max)):
        line = f"{label:<{width}} {'':>8} {pick([row[2] for row in rows]) / 1000:>9.1f} kB"
        lines.append(line + (f" {pick([row[3] for row in rows]) / 1000:>8.1f} kB" if warm else ""))
    lines.append(
        f"targets: no first visit over {PAGE_LIMIT_BYTES / 1000:.0f} kB; "
        f"median first visit under {MEDIAN_LIMIT_BYTES / 1000:.0f} kB"
    )
    return "\n".join(lines)
