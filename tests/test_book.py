"""The HTML book: it builds with no warning, and every page works in a real browser, offline.

1. ``tools/build-book`` builds the book once for this module (``-W``: a warning fails the build).
2. ``_build/html`` is served from a thread on 127.0.0.1 (free port).
3. Every page of ``_toc.yml`` is opened in Debian's Chromium through Playwright, and we assert:
   no broken image; no error output or traceback; math typeset by the local MathJax where the page
   has math (and no MathJax error); each explorer shown as its static figure with the visible note
   that it is live when the chapter is run, and no widget JavaScript or widget state (nothing on a
   static page could render or move a widget); Binder and Colab launch links on notebook pages;
   no failed request for a local file; and no request at all to another host (the book must not
   depend on a CDN). ``test_offline_guard_catches_remote_requests`` shows that last check can fail.
   A screenshot of each page goes to ``_build/screenshots/`` for humans (not asserted).

The browser part is skipped (with a message) only when /usr/bin/chromium is missing and the
environment variable CI is unset; under CI a missing browser is a failure.
"""

from __future__ import annotations

import fcntl
import functools
import http.server
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from conftest import _is_local, raw_myst

from atscale.widgets import LIVE_NOTE

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
# Any error in the browser's console, or uncaught, fails the page: the theme's own scripts included
# (_ext/theme_fixes.py removes the doubled sphinx-thebe script; _config.yml sets a default theme mode).
# Pages that must contain typeset math whatever their content (the others: if they have math).
MUST_HAVE_MATH = {"book/notation"}


def _load_yaml(name: str) -> dict:
    return yaml.safe_load((ROOT / name).read_text(encoding="utf-8"))


def _toc_pages() -> list[str]:
    """Every document of _toc.yml (root first), without suffix, e.g. 'book/intro'."""
    toc = _load_yaml("_toc.yml")
    pages = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                pages.append(node["file"])
            for key in ("parts", "chapters", "sections"):
                for child in node.get(key, []) or []:
                    walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(toc)
    return [re.sub(r"\.(md|ipynb)$", "", p) for p in dict.fromkeys(pages)]


PAGES = _toc_pages()


# --------------------------------------------------------------------------- the build


@pytest.fixture(scope="module")
def built_book() -> Path:
    """Build the book once (per module, so once per pytest run: xdist --dist loadfile keeps
    this module on one worker). An exclusive file lock keeps concurrent runs from racing."""
    (ROOT / "_build").mkdir(exist_ok=True)
    env = dict(os.environ)
    # The build's notebook kernels must be this interpreter's environment.
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    with open(ROOT / "_build" / ".build-book.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        start = time.monotonic()
        proc = subprocess.run(
            ["bash", str(ROOT / "tools" / "build-book")],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        elapsed = time.monotonic() - start
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-60:])
        pytest.fail(
            f"tools/build-book failed (exit {proc.returncode}, {elapsed:.0f} s); "
            f"log in _build/build-book.log. Last lines:\n{tail}",
            pytrace=False,
        )
    print(f"tools/build-book: {elapsed:.1f} s")
    return HTML


def test_build_has_no_warnings(built_book):
    log = (ROOT / "_build" / "build-book.log").read_text(encoding="utf-8", errors="replace")
    log = re.sub(r"\x1b\[[0-9;]*m", "", log)
    warnings = [l for l in log.splitlines() if re.search(r"(^|[: ])(WARNING|ERROR|CRITICAL):", l)]
    assert not warnings, "build warnings:\n" + "\n".join(warnings)
    for page in PAGES:
        assert (built_book / f"{page}.html").is_file(), f"{page}.html was not built"


def test_no_cdn_references_in_script_tags(built_book):
    """Script/link tags of every page point at local files (launch links are plain <a>s)."""
    bad = {}
    for page in PAGES:
        text = (built_book / f"{page}.html").read_text(encoding="utf-8")
        urls = re.findall(r"<(?:script|link)\b[^>]*\b(?:src|href)=\"(https?:)?//([^\"]+)\"", text)
        if urls:
            bad[page] = ["//" + u for _, u in urls]
    assert not bad, f"pages reference remote scripts/stylesheets: {bad}"


# --------------------------------------------------------------------------- raw MyST


def visible_text(html: str) -> str:
    """What a reader reads on a built page: the text of its body, without scripts, styles, code
    blocks (which show Python source), and math (MathJax typesets it; the browser test checks that)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    for tag in soup(["script", "style", "pre", "noscript", "template"]):
        tag.decompose()
    for tag in soup.select(".math, .highlight"):
        tag.decompose()
    body = soup.body or soup
    return body.get_text(" ")


def test_raw_myst_scan_finds_what_it_guards():
    """The scan below catches what the reader of a broken page would see."""
    glued_formula = '<p>The bubble is <span class="pasted-text">$\\frac{p - 1}{m}$</span>.</p>'
    assert raw_myst(visible_text(glued_formula))
    for raw in ["{glue:text}`x`", "{cite:p}`a2020`", "{numref}`fig-a`", "```{exercise-start}", "\\emph X"]:
        assert raw_myst(visible_text(f"<p>{raw}</p>")), raw
    typeset = '<p><span class="math notranslate nohighlight">\\(\\frac{p}{m}\\)</span></p><pre>f"{x}"</pre>'
    assert raw_myst(visible_text(typeset)) == []


def test_no_raw_myst_on_any_built_page(built_book):
    """No page of the HTML book shows unresolved MyST or LaTeX as text."""
    found = {}
    for path in sorted(built_book.rglob("*.html")):
        if "_static" in path.parts or path.name in ("genindex.html", "search.html"):
            continue
        problems = raw_myst(visible_text(path.read_text(encoding="utf-8")))
        if problems:
            found[path.relative_to(built_book).as_posix()] = problems[:3]
    assert not found, f"raw MyST or LaTeX shown as text: {found}"


# --------------------------------------------------------------------------- Python reprs (issue 35, item 6)

_REPR_TEXT = re.compile(r"\b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\("  # a CamelCase class called: MoeSummary(
                        r"|\b[A-Z][A-Za-z0-9]*\([a-z_]+="  # a dataclass's fields: StageLayers(first=
                        r"|\{'[^']{1,40}': |\{\d+: |\['[^']{1,40}', '")  # a dict or a list of strings
"""Text a reader should never see: a Python repr of a result, a dict or a list of strings."""


def repr_text(text: str) -> list[str]:
    return [text[max(0, m.start() - 30):m.end() + 30] for m in _REPR_TEXT.finditer(text)]


def test_repr_scan_finds_what_it_guards():
    for raw in ["MoeSummary(DeepSeek-V3: 671B)", "StageLayers(first=7, middle=8)", "{'compute': '13.7 s'}",
                "{16: 0.02296, 32: 0.007}", "['1: 550 GB', '2: 293 GB']"]:
        assert repr_text(visible_text(f"<div class='output'><pre>{raw}</pre><p>{raw}</p></div>")), raw
    for prose in ["Llama 3 (Meta) uses TP=8 (within a node).", "DeepSeek-V3 (671B)", "ZeRO-3 (Rajbhandari)"]:
        assert not repr_text(visible_text(f"<p>{prose}</p>")), prose


def _reader_text(html: str) -> str:
    """The prose and the cell outputs of a page (code inputs, math and scripts removed)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    for tag in soup(["script", "style", "noscript", "template"]):
        tag.decompose()
    for tag in soup.select(".cell_input, .math, div.highlight-ipython3, div.highlight-python"):
        tag.decompose()
    return (soup.body or soup).get_text(" ")


def test_no_python_repr_on_any_built_page(built_book):
    """No page shows a result as a Python repr (ClassName(...), a dict, a list): prose and outputs alike."""
    found = {}
    for path in sorted(built_book.rglob("*.html")):
        if "_static" in path.parts or path.name in ("genindex.html", "search.html"):
            continue
        problems = repr_text(_reader_text(path.read_text(encoding="utf-8")))
        if problems:
            found[path.relative_to(built_book).as_posix()] = problems[:3]
    assert not found, f"Python reprs shown to readers: {found}"


def _edition_tool():
    import importlib.machinery
    import importlib.util

    loader = importlib.machinery.SourceFileLoader("jupyter_edition", str(ROOT / "tools" / "jupyter-edition"))
    spec = importlib.util.spec_from_loader("jupyter_edition", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _html_texts(html: str, selector: str) -> list[str]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    # Sphinx's SmartQuotes prints ' and " as typographic quotes; the Jupyter edition keeps them straight.
    straight = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"'})
    return [re.sub(r"\s+", " ", e.get_text()).strip().translate(straight) for e in soup.select(selector)]


@pytest.mark.parametrize("chapter", sorted(p.stem for p in (ROOT / "book").glob("*.ipynb")))
def test_jupyter_edition_reads_as_the_html(built_book, chapter):
    """The Jupyter edition prints what the HTML page prints, in the same order: each glued value,
    each figure and exercise number, each citation (the HTML brackets it, the edition uses
    parentheses), figure captions and the solutions' exercise numbers."""
    import nbformat

    tool = _edition_tool()
    conv = tool.Chapter(chapter, nbformat.read(ROOT / "book" / f"{chapter}.ipynb", as_version=4),
                        numbers=tool.book_numbers(), references=tool.References(), titles=tool.chapter_titles())
    nb = conv.convert()
    html = (built_book / "book" / f"{chapter}.html").read_text(encoding="utf-8")

    def plain(text: str) -> str:
        return re.sub(r"\\(.)", r"\1", text).replace("*", "")

    got = {k: [plain(t) for kind, t in conv.rendered if kind in kinds]
           for k, kinds in {"glue": ("glue:text",), "numref": ("numref", "ref"), "cite": ("cite", "cite:p", "cite:t")}.items()}
    assert got["glue"] == _html_texts(html, "span.pasted-text"), f"{chapter}: glued values differ"
    assert got["numref"] == _html_texts(html, "span.std-numref, span.std-ref"), \
        f"{chapter}: cross-reference numbers differ"
    assert got["cite"] == ["(" + t[1:-1] + ")" for t in _html_texts(html, "span.bibtex-citation")], \
        f"{chapter}: citations differ"
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    captions = [t.split(" ", 2)[:2] for t in _html_texts(html, "figcaption span.caption-number")]
    assert re.findall(r"^\*\*(Fig\.) (\d+)\.\*\*", text, re.M) == [(a, b) for a, b in captions]
    exercises = _html_texts(html, "div.exercise p.admonition-title span.caption-number")
    assert re.findall(r"^#### (Exercise \d+)$", text, re.M) == exercises
    solutions = [t.replace("Solution to ", "") for t in _html_texts(html, "div.solution p.admonition-title")]
    assert re.findall(r"^#### Solution to (Exercise \d+)$", text, re.M) == solutions


# --------------------------------------------------------------------------- the server


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - signature from the stdlib
        pass


@pytest.fixture(scope="module")
def server(built_book):
    handler = functools.partial(_QuietHandler, directory=str(built_book))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


# --------------------------------------------------------------------------- the browser


class PageLog:
    def __init__(self):
        self.remote: list[str] = []
        self.failed: list[str] = []
        self.console_errors: list[str] = []
        self.page_errors: list[str] = []


def _open(browser, url: str) -> tuple[object, object, PageLog]:
    log = PageLog()
    context = browser.new_context(viewport={"width": 1280, "height": 900})

    def route(r):
        if _is_local(r.request.url):
            r.continue_()
        else:  # record and refuse: nothing may come from another host
            log.remote.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    def counts(url: str) -> bool:
        # Chromium asks for /favicon.ico by itself when a page declares no icon: not the page's.
        return _is_local(url) and urlsplit(url).path != "/favicon.ico"

    page.on(
        "requestfailed",
        lambda req: counts(req.url) and log.failed.append(f"{req.url} ({req.failure})"),
    )
    page.on(
        "response",
        lambda resp: resp.status >= 400 and counts(resp.url)
        and log.failed.append(f"{resp.url} (HTTP {resp.status})"),
    )
    def on_console(msg):
        # A failed request is reported with its URL (log.failed); Chromium's own favicon request is not the page's.
        if msg.type == "error" and not (msg.text.startswith("Failed to load resource")
                                        and not counts(msg.location.get("url", ""))):
            log.console_errors.append(f"{msg.text} ({msg.location.get('url', '')})")

    page.on("console", on_console)
    page.on("pageerror", lambda exc: log.page_errors.append(f"{exc.name}: {exc.message}"))
    page.goto(url, wait_until="load")
    return context, page, log


def _launch_urls() -> tuple[str, str, str, str]:
    config = _load_yaml("_config.yml")
    repo = config["repository"]["url"].rstrip("/")
    org_repo = urlsplit(repo).path.strip("/")
    branch = config["repository"].get("branch", "main")
    buttons = config.get("launch_buttons", {})
    return (
        buttons["binderhub_url"].rstrip("/"),
        buttons["colab_url"].rstrip("/"),
        org_repo,
        branch,
    )


JS_MATH_STATE = """() => ({
  math: document.querySelectorAll('.math').length,
  typeset: document.querySelectorAll('mjx-container').length,
  errors: Array.from(document.querySelectorAll('mjx-merror')).map(e => e.textContent),
  raw: Array.from(document.querySelectorAll('.math'))
         .filter(e => !e.querySelector('mjx-container')).map(e => e.textContent.slice(0, 80)),
})"""

JS_PROBLEMS = """() => ({
  brokenImages: Array.from(document.images)
      .filter(img => !img.complete || img.naturalWidth === 0)
      .map(img => img.getAttribute('src')),
  errorOutputs: Array.from(document.querySelectorAll(
      '.output.error, .output.traceback, .output.stderr pre, div.cell_output .ansi-red-fg'))
      .map(e => e.className + ': ' + e.textContent.slice(0, 200)),
  traceback: document.body.innerText.includes('Traceback (most recent call last)'),
})"""



JS_EXPLORERS = r"""() => ({
  figures: Array.from(document.querySelectorAll('figure.atscale-explorer')).map(f => {
    const note = f.querySelector('.atscale-live-note');
    return {
      image: !!f.querySelector('img'),
      message: !!f.querySelector('.atscale-error'),
      note: note ? note.textContent : '',
      noteVisible: !!note && note.getBoundingClientRect().height > 0,
    };
  }),
  widgetScripts: Array.from(document.scripts).map(s => s.src)
      .filter(src => /require(\.min)?\.js|embed-amd|html-manager|jupyter-widgets/.test(src)),
  widgetState: !!document.querySelector('script[type="application/vnd.jupyter.widget-state+json"]'),
  widgetViews: document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length,
})"""


def test_offline_guard_catches_remote_requests(server, browser):
    """The page checks below can fail: a page that asks another host for an image is caught."""
    context, page, log = _open(browser, f"{server}/book/intro.html")
    try:
        page.evaluate("""() => new Promise(done => {
            const img = new Image(); img.onload = img.onerror = done;
            img.src = 'https://cdn.example.org/pixel.png'; })""")
        assert log.remote == ["https://cdn.example.org/pixel.png"]
    finally:
        context.close()


def test_explorers_have_static_figures(built_book):
    """Every chapter with an explorer publishes its static figure (the browser test reads them)."""
    pages = {p: (built_book / f"{p}.html").read_text(encoding="utf-8") for p in PAGES}
    with_explorers = {p for p, text in pages.items() if 'class="atscale-explorer"' in text}
    assert {"book/roofline", "book/memory", "book/reliability", "book/hardware-catalog"} <= with_explorers


@pytest.mark.parametrize("page_name", PAGES)
def test_page_in_browser(page_name, server, browser):
    source = next((ROOT / page_name).parent.glob(Path(page_name).name + ".*"), None)
    is_notebook = source is not None and source.suffix == ".ipynb"
    url = f"{server}/{page_name}.html"
    start = time.monotonic()
    context, page, log = _open(browser, url)
    try:
        problems = []

        # Math: wait for MathJax (local) to finish typesetting, if the page loads it.
        has_mathjax = page.evaluate("() => !!document.querySelector('script[src*=\"mathjax/\"]')")
        if has_mathjax:
            page.wait_for_function(
                "() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=10_000
            )
            page.evaluate("() => MathJax.startup.promise")
        math = page.evaluate(JS_MATH_STATE)
        if page_name in MUST_HAVE_MATH and math["math"] == 0:
            problems.append("no math found on a page that must have math")
        if math["math"]:
            if not has_mathjax:
                problems.append("page has math but does not load MathJax")
            if math["typeset"] == 0 or math["raw"]:
                problems.append(f"math not typeset: {math['raw'][:5]}")
            if math["errors"]:
                problems.append(f"MathJax errors: {math['errors'][:5]}")

        # Explorers: a static figure with its "live when run" note; no widget machinery.
        explorers = page.evaluate(JS_EXPLORERS)
        for i, ex in enumerate(explorers["figures"]):
            if not ex["image"] and not ex["message"]:
                problems.append(f"explorer {i + 1} shows neither a figure nor a message")
            if LIVE_NOTE not in ex["note"] or not ex["noteVisible"]:
                problems.append(f"explorer {i + 1} lacks a visible live-note: {ex['note'][:80]!r}")
        if explorers["widgetScripts"]:
            problems.append(f"widget JavaScript loaded on a static page: {explorers['widgetScripts']}")
        if explorers["widgetState"]:
            problems.append("widget state embedded in a static page")
        if explorers["widgetViews"]:
            problems.append(f"{explorers['widgetViews']} widget views no page can render")

        # Launch buttons (Binder, Colab) on notebook pages.
        if is_notebook:
            binder, colab, org_repo, branch = _launch_urls()
            hrefs = page.eval_on_selector_all(
                ".dropdown-launch-buttons a[href]", "els => els.map(e => e.href)"
            )
            # Both open the chapter's Jupyter edition (jupyter/NAME.ipynb), which must exist.
            nb_path = f"jupyter/{source.stem}.ipynb"
            if not (ROOT / nb_path).is_file():
                problems.append(f"{nb_path} is missing (run: python tools/jupyter-edition)")
            want = {
                "Binder": f"{binder}/v2/gh/{org_repo}/{branch}?urlpath=lab/tree/{nb_path}",
                "Colab": f"{colab}/github/{org_repo}/blob/{branch}/{nb_path}",
            }
            for name, prefix in want.items():
                if not any(h == prefix for h in hrefs):
                    problems.append(f"no {name} launch link starting with {prefix} in the launch menu")
            # The download button serves the same Jupyter edition, published beside the pages.
            downloads = page.eval_on_selector_all(".dropdown-download-buttons a[href]", "els => els.map(e => e.href)")
            notebooks = [h for h in downloads if h.endswith(".ipynb")]
            if notebooks != [f"{server}/{nb_path}"] or not (HTML / nb_path).is_file():
                problems.append(f"the download button does not serve {nb_path}: {notebooks}")

        # One top bar, one search field (sphinx-book-theme 1.3 adds the theme's site header above its own).
        bars = page.evaluate("""() => ({
          header: Array.from(document.querySelectorAll('#pst-header')).filter(e => e.getClientRects().length).length,
          search: Array.from(document.querySelectorAll('.search-button-field')).filter(e => e.getClientRects().length).length})""")
        if bars["header"] or bars["search"] != 1:
            problems.append(f"a second top bar or search field: {bars}")

        page.wait_for_load_state("networkidle", timeout=10_000)
        found = page.evaluate(JS_PROBLEMS)
        if found["brokenImages"]:
            problems.append(f"broken images: {found['brokenImages']}")
        if found["errorOutputs"]:
            problems.append(f"error outputs: {found['errorOutputs'][:3]}")
        if found["traceback"]:
            problems.append("a traceback is shown in the page")
        if log.failed:
            problems.append(f"failed local requests: {log.failed}")
        if log.remote:
            problems.append(f"requests to other hosts (the page must not need a CDN): {log.remote}")
        if log.page_errors:
            problems.append(f"uncaught JavaScript errors: {log.page_errors}")
        if log.console_errors:
            problems.append(f"console errors: {log.console_errors}")

        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / (page_name.replace("/", "__") + ".png")), full_page=True)
        elapsed = time.monotonic() - start
        print(f"{page_name}: {elapsed:.1f} s, math {math['typeset']}/{math['math']}, "
              f"explorers {len(explorers['figures'])}")
        assert not problems, f"{page_name}.html:\n  - " + "\n  - ".join(problems)
    finally:
        context.close()


# --------------------------------------------------------------------------- the PDF

PDF_NAME = "training-at-scale.pdf"


def _notdef_glyphs(path) -> int:
    """Glyphs drawn as the font's .notdef box (glyph id 0) in a PDF printed by Chromium: Skia
    embeds fonts as Type0 with two-byte glyph ids, and falls back to glyph 0 where no installed
    font has the character."""
    import pypdf
    from pypdf.generic import ContentStream

    reader = pypdf.PdfReader(str(path))
    count = 0
    for page in reader.pages:
        fonts = {k: v.get_object() for k, v in page["/Resources"].get("/Font", {}).items()}
        font = None
        for operands, operator in ContentStream(page.get_contents(), reader).operations:
            if operator == b"Tf":
                font = fonts.get(operands[0])
            elif operator in (b"Tj", b"TJ") and font is not None and font.get("/Subtype") == "/Type0":
                for item in (operands[0] if operator == b"TJ" else operands):
                    data = getattr(item, "original_bytes", None)
                    if data:
                        count += sum(data[i] == 0 and data[i + 1] == 0 for i in range(0, len(data) - 1, 2))
    return count


def _pdf_images(reader) -> list[tuple[float, float]]:
    """Every image the PDF draws, as its size on the page in points (width, height): each image
    XObject painted by ``Do``, in the page's content or inside a form XObject, with the
    transformation in force (``cm``, saved and restored by ``q``/``Q``)."""
    from pypdf.generic import ContentStream

    def multiply(m, n):
        a, b, c, d, e, f = m
        a2, b2, c2, d2, e2, f2 = n
        return (a * a2 + b * c2, a * b2 + b * d2, c * a2 + d * c2, c * b2 + d * d2,
                e * a2 + f * c2 + e2, e * b2 + f * d2 + f2)

    drawn = []

    def walk(content, resources, ctm):
        xobjects = resources.get("/XObject", {}) if resources else {}
        xobjects = xobjects.get_object() if hasattr(xobjects, "get_object") else xobjects
        stack = []
        for operands, operator in ContentStream(content, reader).operations:
            if operator == b"q":
                stack.append(ctm)
            elif operator == b"Q" and stack:
                ctm = stack.pop()
            elif operator == b"cm":
                ctm = multiply(tuple(float(x) for x in operands), ctm)
            elif operator == b"Do":
                xobject = xobjects[operands[0]].get_object()
                if xobject.get("/Subtype") == "/Image":
                    a, b, c, d = ctm[:4]
                    drawn.append(((a * a + b * b) ** 0.5, (c * c + d * d) ** 0.5))
                elif xobject.get("/Subtype") == "/Form":
                    matrix = tuple(float(x) for x in xobject.get("/Matrix", [1, 0, 0, 1, 0, 0]))
                    walk(xobject, xobject.get("/Resources"), multiply(matrix, ctm))

    for page in reader.pages:
        walk(page.get_contents(), page.get("/Resources"), (1, 0, 0, 1, 0, 0))
    return drawn


def _single_page_figures() -> int:
    """The figures of the single-page HTML the PDF is printed from (every image of the book's text)."""
    from bs4 import BeautifulSoup

    html = (ROOT / "_build" / "singlehtml" / "book" / "intro.html").read_text(encoding="utf-8")
    return len(BeautifulSoup(html, "html.parser").select(".bd-article img"))


def test_pdf_of_the_whole_book(built_book):
    """One PDF, linked from the introduction, with every figure of the book drawn (a broken image
    draws nothing), a bookmark for every page of the table of contents titled as its heading (no
    title doubled, no maths dropped), and no character drawn as a missing-glyph box."""
    import pypdf

    pdf = built_book / PDF_NAME
    assert pdf.is_file(), f"{PDF_NAME} was not built (tools/build-pdf)"
    assert f'href="../{PDF_NAME}"' in (built_book / "book" / "intro.html").read_text(encoding="utf-8")
    reader = pypdf.PdfReader(str(pdf))
    assert len(reader.pages) > 50

    figures = _single_page_figures()
    drawn = _pdf_images(reader)
    assert figures >= 54, f"only {figures} figures in the single-page HTML"
    assert len(drawn) >= figures, f"the PDF draws {len(drawn)} images for the book's {figures} figures"
    small = [size for size in drawn if min(size) < 20]
    assert not small, f"images drawn smaller than 20 pt: {small[:5]}"

    bookmarks = []

    def walk(items):
        for item in items:
            walk(item) if isinstance(item, list) else bookmarks.append(item.title)

    walk(reader.outline)
    doubled = [b for b in bookmarks if len(b) > 2 and len(b) % 2 == 0 and b[:len(b) // 2] == b[len(b) // 2:]]
    assert not doubled, f"bookmarks with a doubled title: {doubled}"
    assert all(b == b.strip() and "  " not in b for b in bookmarks)
    for page in PAGES:
        html = (built_book / f"{page}.html").read_text(encoding="utf-8")
        title = re.sub(r"<[^>]+>|#", "", re.search(r"<h1[^>]*>(.*?)</h1>", html, re.S).group(1)).strip()
        assert title in bookmarks, f"no PDF bookmark titled {title!r} ({page})"
    # Headings with maths keep it: "From one layer to 6N: ..." (its TeX, simplified).
    assert any(b.startswith("From one layer to 6N:") for b in bookmarks), [b for b in bookmarks if "one layer" in b]
    assert "The alpha term that grows with n" in bookmarks
    assert _notdef_glyphs(pdf) == 0, "characters printed as missing-glyph boxes"


def test_pdf_image_count_sees_what_a_page_draws(tmp_path, browser):
    """The image count above counts drawn images, at their size on the page."""
    import base64

    import pypdf

    png = base64.b64encode(bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cf00000301010018dd8db00000000049454e44ae426082")).decode()
    page = browser.new_page()
    try:
        page.set_content(f'<img src="data:image/png;base64,{png}" style="width:200px;height:100px">'
                         '<img src="missing.png" style="width:200px;height:100px">')
        page.pdf(path=str(tmp_path / "images.pdf"))
    finally:
        page.close()
    drawn = _pdf_images(pypdf.PdfReader(str(tmp_path / "images.pdf")))
    assert len(drawn) == 1 and min(drawn[0]) > 50, drawn


def test_citations_match_their_bibliography_labels(built_book):
    """Author-year in the text and the same label in the bibliography: each citation's link leads
    to an entry labelled "[<the citation's text>]" (no alphabetic labels such as [CND+22])."""
    from bs4 import BeautifulSoup

    pages, mismatched, count = {}, [], 0
    for page in PAGES:
        html = (built_book / f"{page}.html").read_text(encoding="utf-8")
        soup = BeautifulSoup(html, "html.parser")
        for link in soup.select("span.bibtex-citation a[href]"):
            target_page, _, anchor = link["href"].partition("#")
            path = (built_book / page).parent / target_page if target_page else built_book / f"{page}.html"
            key = path.resolve()
            if key not in pages:
                pages[key] = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
            entry = pages[key].find(id=anchor)
            label = entry.select_one("span.label") if entry else None
            text = re.sub(r"\s+", " ", link.get_text()).strip()
            count += 1
            if label is None or label.get_text().strip() != f"[{text}]":
                mismatched.append((page, text, label.get_text() if label else None))
    assert count > 50
    assert not mismatched, f"citations whose bibliography label differs: {mismatched[:5]}"


def test_exercises_appendix_lists_every_exercise_in_book_order(built_book):
    """The Exercises appendix lists the exercises as the book numbers them (1, 2, 3, ... in the
    order of the chapters), each number a link to that exercise, and every answer id once."""
    from bs4 import BeautifulSoup

    from atscale.check import exercise_table

    soup = BeautifulSoup((built_book / "book" / "exercises.html").read_text(encoding="utf-8"), "html.parser")
    rows = [tr.select("td") for tr in soup.select(".atscale-exercise-index tbody tr")]
    numbered = [(cells[0].get_text(strip=True), cells[0].select_one("a")["href"]) for cells in rows
                if cells[0].get_text(strip=True)]
    assert [n for n, _ in numbered] == [f"Exercise {i}" for i in range(1, len(numbered) + 1)]
    pages = {}
    for number, href in numbered:
        page, _, anchor = href.partition("#")
        if page not in pages:
            pages[page] = BeautifulSoup((built_book / "book" / page).read_text(encoding="utf-8"), "html.parser")
        target = pages[page].find(id=anchor)
        title = target.select_one("p.admonition-title span.caption-number") if target else None
        assert title is not None and title.get_text(strip=True) == number, f"{number} links to {href}"
    ids = [cells[2].get_text(strip=True) for cells in rows]
    assert sorted(i for i in ids if i in {r[1] for r in exercise_table().rows}) == sorted(r[1] for r in exercise_table().rows)


def test_on_this_page_follows_the_scroll(server, browser):
    """The "on this page" highlight moves with the reader, also after a jump (it used to stay put)."""
    context, page, log = _open(browser, f"{server}/book/roofline.html")
    try:
        active = []
        for fraction in (0.3, 0.6, 1.0, 0.0):
            page.evaluate(f"window.scrollTo(0, document.documentElement.scrollHeight * {fraction})")
            page.wait_for_timeout(400)
            active.append(page.evaluate(
                "() => Array.from(document.querySelectorAll('#pst-page-toc-nav a.active')).map(a => a.textContent.trim())"))
        assert all(len(a) == 1 for a in active[:3]), active
        assert len({a[0] for a in active[:3]}) == 3, f"the highlight did not follow the scroll: {active}"
        last = page.evaluate("() => Array.from(document.querySelectorAll('#pst-page-toc-nav a')).pop().textContent.trim()")
        assert active[2] == [last], active
    finally:
        context.close()


def test_missing_glyph_check_can_fail(browser, tmp_path):
    """The detector above finds the boxes Chromium prints for characters no installed font has."""
    page = browser.new_page()
    try:
        page.set_content("<p>Covered: x → ≈ ×. Not covered: &#x10900; &#xA840;</p>")
        page.pdf(path=str(tmp_path / "tofu.pdf"))
    finally:
        page.close()
    assert _notdef_glyphs(tmp_path / "tofu.pdf") == 2



_CONTRAST_JS = """() => {
  const rgb = s => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = c => { c /= 255; return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = el => {  // the first opaque background at or above el
    for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  return Array.from(document.querySelectorAll('table.atscale-table td, .atscale-result')).map(el => {
    const a = lum(rgb(getComputedStyle(el).color).slice(0, 3)), b = lum(background(el));
    return [el.textContent.trim().slice(0, 30), (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)];
  });
}"""


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_library_tables_read_in_both_themes(server, browser, theme):
    """Every cell of the library's tables keeps a readable contrast (WCAG's 4.5:1) in the light and the dark theme
    (in the dark theme its stripes were once dark on the theme's light output paper)."""
    context, page, log = _open(browser, "about:blank")
    try:
        page.add_init_script(f"localStorage.setItem('mode', '{theme}'); localStorage.setItem('theme', '{theme}');")
        page.goto(f"{server}/book/experts.html", wait_until="networkidle")
        assert page.evaluate("document.documentElement.dataset.theme") == theme
        cells = page.evaluate(_CONTRAST_JS)
        assert cells, "no library table on the page"
        poor = [(text, round(ratio, 2)) for text, ratio in cells if ratio < 4.5]
        assert not poor, f"{len(poor)} of {len(cells)} table cells below 4.5:1 in the {theme} theme: {poor[:5]}"
    finally:
        context.close()


_WIDE_JS = """(selector) => Array.from(document.querySelectorAll(selector)).filter(
  t => t.parentElement.scrollWidth > t.parentElement.clientWidth + 2).map(t => t.innerText.slice(0, 80))"""


def _wide_tables(browser, url: str, selector: str) -> list:
    """The start of each table matching ``selector`` on the page at ``url`` (opened at 1,280 px) whose scrolling
    container is wider than it shows."""
    context, page, log = _open(browser, url)
    try:
        assert page.evaluate(f"document.querySelectorAll({selector!r}).length") > 0, f"no {selector} on the page"
        return page.evaluate(_WIDE_JS, selector)
    finally:
        context.close()


@pytest.mark.parametrize("page_name", ["case-1000-gpus", "parallelism", "experts", "hardware-catalog", "accuracy"])
def test_library_tables_fit_the_page(page_name, server, browser):
    """At a laptop's width (1,280 px, the page's contents column beside both sidebars) the library tables of these
    pages show every column without scrolling sideways: long row names and headers wrap between words (they once
    stayed on one line and pushed the last columns out of view)."""
    wide = _wide_tables(browser, f"{server}/book/{page_name}.html", "table.atscale-table")
    assert not wide, f"tables wider than the page on {page_name}: {wide}"


@pytest.mark.parametrize("page_name", ["notation", "exercises"])
def test_markdown_tables_fit_the_page(page_name, server, browser):
    """The appendices' own tables fit the page at 1,280 px: a long library name in a cell breaks inside itself
    (the notation appendix's tables once scrolled sideways over names such as ``roofline.critical_tokens``)."""
    wide = _wide_tables(browser, f"{server}/book/{page_name}.html", ".bd-article table:not(.atscale-table)")
    assert not wide, f"tables wider than the page on {page_name}: {wide}"
