"""Every interactive figure on the built site, in a browser, as a reader uses it.

The figures are found in the built pages (``<figure class="gp-interactive">``), so a new one is
tested without a line here. For each: the keyboard moves the slider, which changes the drawing,
the value shown and the description (the chart's accessible name); nothing is requested from
another host; no console error; axe finds nothing serious or critical in the figure; it fits a
375 px phone in the dark palette; it works after Material's instant navigation. Every wait is on
an event or a condition, never a sleep.

``GP_SITE=/path/to/site`` tests an existing build instead of building (``built_site``);
``GP_INTERACTIVE_PAGES=a,b`` limits the pages to those whose URL contains ``a`` or ``b``.
"""

import os
import re
from pathlib import Path
from urllib.parse import urlsplit

import browser_checks as checks
import pytest

ROOT = Path(__file__).resolve().parents[1]
VIEWPORT = {"width": 1280, "height": 900}
FIGURE = re.compile(r'<figure\b[^>]*\bclass="gp-interactive"[^>]*>')
IDENT = re.compile(r'\bid="([^"]+)"')


@pytest.fixture(scope="module")
def site(request):
    given = os.environ.get("GP_SITE")
    if given:
        if not (Path(given) / "index.html").is_file():
            pytest.fail(f"GP_SITE={given}: no built site there", pytrace=False)
        return Path(given)
    return request.getfixturevalue("built_site")


@pytest.fixture(scope="module")
def server(site):
    with checks.serve(site, checks.site_url(ROOT / "mkdocs.yml")) as base:
        yield base


@pytest.fixture(scope="module")
def figures(site, server) -> dict[str, list[str]]:
    """``{page url: [figure id, ...]}`` of every built page with an interactive figure."""
    wanted = [w for w in os.environ.get("GP_INTERACTIVE_PAGES", "").split(",") if w.strip()]
    found = {}
    for path in sorted(site.rglob("*.html")):
        ids = [IDENT.search(tag).group(1) for tag in FIGURE.findall(path.read_text(encoding="utf-8"))]
        relative = path.relative_to(site).as_posix()
        url = server + (relative.removesuffix("index.html") if relative.endswith("index.html") else relative)
        if ids and (not wanted or any(w.strip() in url for w in wanted)):
            found[url] = ids
    if not found:
        pytest.skip("no interactive figure on the built site" + (" (GP_INTERACTIVE_PAGES)" if wanted else ""))
    return found


def origin(base: str) -> str:
    parts = urlsplit(base)
    return f"{parts.scheme}://{parts.netloc}/"


STATE_JS = """id => {
  const f = document.getElementById(id), svg = f.querySelector('.gp-interactive__chart svg');
  const input = f.querySelector('input[type=range]'), chart = f.querySelector('.gp-interactive__chart');
  const label = document.getElementById(chart.getAttribute('aria-labelledby'));
  return {svg: svg ? svg.innerHTML : '', paths: f.querySelectorAll('.gp-series path').length,
          value: input.value, max: input.max, valuetext: input.getAttribute('aria-valuetext'),
          output: f.querySelector('output').textContent,
          description: f.querySelector('.gp-interactive__desc').textContent,
          name: label ? label.textContent : '', live: f.querySelector('[aria-live]') !== null,
          labelled: !!(input.labels && input.labels.length && input.labels[0].textContent.trim()),
          command: f.querySelector('.gp-interactive__command code').textContent,
          hidden: f.querySelector('.gp-interactive__controls').hidden,
          width: f.getBoundingClientRect().width, svgWidth: svg ? svg.getBoundingClientRect().width : 0};
}"""


def ready(page, ident: str) -> None:
    """Scroll the figure near the screen (it loads lazily) and wait until it is drawn."""
    page.locator(f"#{ident}").scroll_into_view_if_needed()
    page.wait_for_function(
        "id => document.getElementById(id).dataset.ready === 'true'"
        " && document.querySelector('#' + id + ' .gp-interactive__chart svg') !== null",
        arg=ident,
        timeout=30_000,  # a safety limit, not a pause: the wait ends when the figure is drawn
    )


def move(page, ident: str) -> list[str]:
    """Press an arrow key on the slider; the problems if the figure did not follow."""
    before = page.evaluate(STATE_JS, ident)
    problems = []
    if before["hidden"]:
        problems.append("the slider is still hidden after the figure was drawn")
    if not before["labelled"]:
        problems.append("the slider has no label")
    if before["name"] != before["description"] or not before["description"].strip():
        problems.append("the chart's accessible name is not the frame's description")
    if before["paths"] == 0:
        problems.append("the chart draws no series")
    key = "ArrowLeft" if before["value"] == before["max"] else "ArrowRight"
    page.locator(f"#{ident} input[type=range]").focus()
    page.keyboard.press(key)
    page.wait_for_function(
        "([id, value]) => document.querySelector('#' + id + ' input[type=range]').value !== value"
        " && document.getElementById(id).dataset.frame === document.querySelector('#' + id + ' input').value",
        arg=[ident, before["value"]],
        timeout=15_000,
    )
    after = page.evaluate(STATE_JS, ident)
    for field in ("svg", "output", "valuetext", "description"):
        if after[field] == before[field]:
            problems.append(f"{key} did not change the {field} ({before[field][:80]!r})")
    if not after["command"].startswith("python "):  # one command may compute every frame
        problems.append(f"no command reproduces the frame ({after['command'][:80]!r})")
    if after["name"] != after["description"]:
        problems.append("after moving, the chart's accessible name is not the new description")
    if after["svgWidth"] > after["width"] + 1:
        problems.append(
            f"the chart ({after['svgWidth']:.0f} px) is wider than its figure ({after['width']:.0f} px)"
        )
    return problems


def check_pages(browser, server, figures, color_scheme, viewport) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    context = browser.new_context(color_scheme=color_scheme, viewport=viewport)
    page = context.new_page()
    recorder = checks.Recorder(page, origin(server))
    axe, problems = Axe(), []
    try:
        for url, ids in figures.items():
            recorder.reset()
            page.goto(url, wait_until="load")
            for ident in ids:
                ready(page, ident)
                problems += [f"{url}#{ident}: {p}" for p in move(page, ident)]
                found = checks.axe_violations(page, axe, f"#{ident}")
                problems += [f"{url}#{ident}: axe: {p}" for p in found]
            if viewport["width"] <= checks.PHONE["width"]:
                problems += [
                    f"{url}: wider than the phone: {p}" for p in page.evaluate(checks.WIDER_THAN_VIEWPORT_JS)
                ]
            problems += [f"{url}: {e}" for e in recorder.errors]
            problems += [f"{url}: failed request {f}" for f in recorder.failed]
            problems += [f"{url}: request to another host: {f}" for f in recorder.foreign]
    finally:
        context.close()
    return problems


def test_every_interactive_figure_moves_with_the_keyboard(browser, server, figures):
    problems = check_pages(browser, server, figures, "light", VIEWPORT)
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems)


def test_on_a_phone_in_the_dark_palette(browser, server, figures):
    problems = check_pages(browser, server, figures, "dark", checks.PHONE)
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems)


CONTRAST_JS = """id => {
  const lum = c => {
    const v = (c.match(/[\\d.]+/g) || []).slice(0, 3).map(Number).map(x => {
      x /= 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2];
  };
  const clear = c => c === 'rgba(0, 0, 0, 0)' || c === 'transparent';
  let node = document.getElementById(id), bg = 'rgba(0, 0, 0, 0)';
  while (node && clear(bg)) { bg = getComputedStyle(node).backgroundColor; node = node.parentElement; }
  if (clear(bg)) bg = 'rgb(255, 255, 255)';
  const ratio = (a, b) => {
    const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const sel = ['.gp-series path', '.gp-axis', 'svg text'].map(s => '#' + id + ' ' + s).join(', ');
  return [...document.querySelectorAll(sel)].map(m => {
    const style = getComputedStyle(m);
    const color = m.tagName === 'text' ? style.fill : style.stroke;
    const name = m.tagName + '.' + (m.parentNode.getAttribute('class') || m.getAttribute('class') || '');
    return {mark: name, color, bg, ratio: ratio(color, bg)};
  });
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_lines_and_text_stand_out_in_both_palettes(browser, server, figures, scheme):
    """Series, axes and labels have at least 3:1 contrast against the page behind the figure."""
    context = browser.new_context(color_scheme=scheme, viewport=VIEWPORT)
    page = context.new_page()
    problems = []
    try:
        for url, ids in figures.items():
            page.goto(url, wait_until="load")
            slate = page.evaluate("() => document.body.getAttribute('data-md-color-scheme')") == "slate"
            if slate != (scheme == "dark"):
                problems.append(f"{url}: the {scheme} palette did not apply")
            for ident in ids:
                ready(page, ident)
                for mark in page.evaluate(CONTRAST_JS, ident):
                    if mark["ratio"] < checks.MIN_FIGURE_CONTRAST:
                        shown = f"{mark['mark']} {mark['color']} on {mark['bg']}"
                        problems.append(f"{url}#{ident}: {shown}: {mark['ratio']:.2f}:1")
    finally:
        context.close()
    assert not problems, "\n".join(sorted(set(problems)))


def test_after_instant_navigation(browser, server, figures):
    """Arrive at each page by Material's instant navigation (no page load): the figure loads and
    moves, and no error is logged."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    recorder = checks.Recorder(page, origin(server))
    problems = []
    try:
        for url, ids in figures.items():
            recorder.reset()
            page.goto(server, wait_until="load")  # the start page
            page.evaluate("() => { window.__sameDocument = true; }")  # gone if the page reloads
            folder = urlsplit(url).path.rstrip("/").split("/")[-1]
            page.locator(f"nav a.md-nav__link[href$='{folder}/']").first.click()
            page.wait_for_url(url)
            if not page.evaluate("() => window.__sameDocument === true"):
                problems.append(f"{url}: the navigation link reloaded the page (no instant navigation)")
            for ident in ids:
                ready(page, ident)
                problems += [f"{url}#{ident}: {p}" for p in move(page, ident)]
            problems += [f"{url}: {e}" for e in recorder.errors + recorder.failed]
            problems += [f"{url}: request to another host: {f}" for f in recorder.foreign]
    finally:
        context.close()
    assert not problems, "after instant navigation:\n" + "\n".join(problems)
