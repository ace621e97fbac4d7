"""The book as students run it: Binder's configuration, a real Jupyter server, a real browser.

1. ``binder/`` (repo2docker's conventions) lists the runtime dependencies, kept equal to
   pyproject.toml's; a launch is simulated by a fresh virtual environment built only from that
   configuration (``binder/requirements.txt``, then ``binder/postBuild``), in which every
   chapter executes without error.
2. From that environment a real JupyterLab server starts on 127.0.0.1; Debian's Chromium
   (Playwright) opens a chapter, runs all cells, finds no error output, moves an explorer's
   control and waits for the new figure, within :data:`REDRAW_LIMIT` seconds. The roofline
   chapter runs by default; every chapter's explorers run in the ``slow`` test
   (``pytest -m slow``, which ``.ci/run`` also runs). Nothing is requested from another host.
   The server is stopped at the end, whatever happens.

The environment is kept in ``_build/binder-env`` and rebuilt when ``binder/`` changes (a fresh
clone builds it once, about a minute).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import tomllib
from contextlib import contextmanager
from pathlib import Path
from urllib.request import urlopen

import pytest

from conftest import RAW_MYST, _is_local

ROOT = Path(__file__).resolve().parents[1]
BINDER = ROOT / "binder"
ENV = ROOT / "_build" / "binder-env"
SCREENSHOTS = ROOT / "_build" / "screenshots"
CHAPTERS = sorted(p.stem for p in (ROOT / "book").glob("*.ipynb"))
REDRAW_LIMIT = 3.0
"""Seconds from moving a control to the new figure in the page, through the live kernel (a
redraw's own compute and render take under 0.1 s; see benchmarks/). Generous for a loaded CI
machine; the measured time is printed."""


def _requirements() -> dict[str, str]:
    lines = (BINDER / "requirements.txt").read_text(encoding="utf-8").splitlines()
    reqs = [l.strip() for l in lines if l.strip() and not l.startswith("#")]
    return {re.split(r"[<>=!~ \[]", r, maxsplit=1)[0].lower(): r for r in reqs}


def test_binder_requirements_match_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = project["dependencies"] + [d for d in project["optional-dependencies"]["notebooks"]]
    binder = _requirements()
    for dep in runtime:
        name = re.split(r"[<>=!~ \[]", dep, maxsplit=1)[0].lower()
        assert binder.get(name) == dep, f"binder/requirements.txt must pin {dep!r} as pyproject.toml does"
    assert {"jupyterlab", "jupytext"} <= set(binder)
    assert (BINDER / "runtime.txt").read_text(encoding="utf-8").strip() == "python-3.11"
    assert os.access(BINDER / "postBuild", os.X_OK)
    assert (BINDER / "postBuild").read_text(encoding="utf-8").startswith("#!/usr/bin/env bash\n")


def _stamp() -> str:
    digest = hashlib.sha256()
    for name in ("requirements.txt", "postBuild", "runtime.txt"):
        digest.update((BINDER / name).read_bytes())
    digest.update(sys.version.encode())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def binder_env() -> Path:
    """A virtual environment built only from binder/ (as repo2docker would), reused while valid."""
    stamp = ENV / ".binder-stamp"
    if not (stamp.is_file() and stamp.read_text() == _stamp()):
        shutil.rmtree(ENV, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(ENV)], check=True)
        pip = [str(ENV / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run(pip + ["-r", str(BINDER / "requirements.txt")], check=True, cwd=ROOT)
        env = dict(os.environ, PATH=f"{ENV / 'bin'}{os.pathsep}{os.environ['PATH']}")
        env.pop("VIRTUAL_ENV", None)
        subprocess.run(["bash", str(BINDER / "postBuild")], check=True, cwd=ROOT, env=env)
        stamp.write_text(_stamp())
    return ENV


def _isolated_jupyter_env(home: Path) -> dict[str, str]:
    """Jupyter's config, data and runtime folders inside ``home``: no user settings or kernels leak in."""
    env = dict(os.environ, PATH=f"{ENV / 'bin'}{os.pathsep}{os.environ['PATH']}",
               JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_DATA_DIR=str(home / "data"),
               JUPYTER_RUNTIME_DIR=str(home / "runtime"), IPYTHONDIR=str(home / "ipython"),
               MPLCONFIGDIR=str(home / "mpl"))
    env.pop("VIRTUAL_ENV", None)
    env.pop("JUPYTER_PATH", None)
    return env


def test_every_chapter_executes_in_the_binder_environment(binder_env, tmp_path):
    book = tmp_path / "book"
    shutil.copytree(ROOT / "book", book)
    env = _isolated_jupyter_env(tmp_path)
    for name in CHAPTERS:
        proc = subprocess.run([str(binder_env / "bin" / "jupyter"), "execute", "--timeout=300", f"{name}.ipynb"],
                              cwd=book, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, f"{name} fails in the Binder environment:\n{proc.stderr[-3000:]}"


# --------------------------------------------------------------------------- JupyterLab


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def _lab_server(binder_env: Path, home: Path, *, myst: bool):
    """A JupyterLab server of the Binder environment on 127.0.0.1, over a copy of book/ and of the
    Jupyter edition (jupyter/, what the launch buttons open); ``myst=False`` disables
    jupyterlab-myst, as in Colab (which runs no extension)."""
    for folder in ("book", "jupyter"):
        shutil.copytree(ROOT / folder, home / folder)
    subprocess.run([sys.executable, str(ROOT / "tools" / "student-edition"), str(home / "student")],
                   check=True, capture_output=True)
    settings = home / "settings"
    # Render every cell (no virtual scrolling), start the notebook's kernel without asking, no news prompt.
    (settings / "@jupyterlab" / "notebook-extension").mkdir(parents=True)
    (settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
        '{"windowingMode": "none", "autoStartDefaultKernel": true}')
    (settings / "@jupyterlab" / "apputils-extension").mkdir(parents=True)
    (settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}')
    if not myst:
        (home / "config" / "labconfig").mkdir(parents=True)
        (home / "config" / "labconfig" / "page_config.json").write_text(
            json.dumps({"disabledExtensions": {"jupyterlab-myst": True}}))
    port = _free_port()
    log = open(home / "lab.log", "w")
    server = subprocess.Popen(
        [str(binder_env / "bin" / "jupyter"), "lab", "--no-browser", "--allow-root", "--ip=127.0.0.1",
         f"--port={port}", "--ServerApp.token=", "--ServerApp.password=", f"--ServerApp.root_dir={home}",
         f"--LabApp.user_settings_dir={settings}", "--LabApp.news_url=None",
         "--LabApp.extension_manager=readonly", "--LabApp.expose_app_in_browser=True"],
        env=_isolated_jupyter_env(home), stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urlopen(f"{url}/api/status", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not start:\n{(home / 'lab.log').read_text()[-3000:]}",
                                pytrace=False)
                time.sleep(0.3)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


@pytest.fixture(scope="module")
def lab(binder_env, tmp_path_factory):
    """JupyterLab as Binder runs it: with jupyterlab-myst."""
    with _lab_server(binder_env, tmp_path_factory.mktemp("lab"), myst=True) as url:
        yield url


@pytest.fixture(scope="module")
def plain_lab(binder_env, tmp_path_factory):
    """JupyterLab without jupyterlab-myst: the Jupyter edition must read as well without it."""
    with _lab_server(binder_env, tmp_path_factory.mktemp("plain-lab"), myst=False) as url:
        yield url


JS_STATE = """() => ({
  running: Array.from(document.querySelectorAll('.jp-InputPrompt')).filter(e => e.textContent.includes('*')).length,
  errors: Array.from(document.querySelectorAll(
      '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"], .jp-RenderedText[data-mime-type="application/vnd.jupyter.error"]'))
      .map(e => e.textContent.slice(0, 300)),
  explorers: document.querySelectorAll('.widget-image').length,
})"""


OPENED_CLEAN = """async (path) => {
  // Opening a notebook must not mark it modified (a student closing it would be asked to save):
  // wait for its kernel (JupyterLab then writes the kernel's name and language into the metadata).
  const app = window.jupyterapp;
  const panel = Array.from(app.shell.widgets('main')).find(w => w.context && w.context.path === path);
  await panel.sessionContext.ready;
  await panel.sessionContext.session.kernel.info;
  await new Promise(done => setTimeout(done, 1500));
  return {dirty: panel.context.model.dirty, kernelspec: panel.context.model.getMetadata('kernelspec')};
}"""

SOLUTIONS_STATE = """(path) => {
  // Every solution of the Jupyter edition: its heading cell collapsed and showing only its title,
  // every other cell of it hidden, no check() verdict visible anywhere.
  const panel = Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.context && w.context.path === path);
  const shown = cell => !cell.isHidden && cell.node.getClientRects().length > 0;
  const state = {headings: [], leaks: [], verdictsShown: 0};
  for (const cell of panel.content.widgets) {
    const tags = cell.model.getMetadata('tags') || [];
    if (!tags.includes('solution')) { continue; }
    if (cell.model.getMetadata('jp-MarkdownHeadingCollapsed') !== undefined) {
      state.headings.push({collapsed: cell.headingCollapsed, shown: shown(cell), rendered: cell.rendered,
                           text: (cell.node.querySelector('.jp-RenderedMarkdown, .jp-RenderedHTMLCommon, .myst') || cell.node).innerText.trim().split(String.fromCharCode(10))[0]});
    } else if (shown(cell)) {
      state.leaks.push(cell.model.sharedModel.getSource().slice(0, 80));
    }
  }
  state.verdictsShown = Array.from(document.querySelectorAll('.jp-Notebook .jp-OutputArea-output'))
    .filter(e => e.getClientRects().length > 0 && /✓ Correct/.test(e.textContent)).length;
  return state;
}"""

RUN_ALL = """async (path) => {
  const app = window.jupyterapp;
  const panel = Array.from(app.shell.widgets('main')).find(w => w.context && w.context.path === path);
  if (!panel) { return 'no notebook panel for ' + path; }
  app.shell.activateById(panel.id);
  await panel.sessionContext.ready;
  const ran = await app.commands.execute('notebook:run-all-cells');
  return ran === false ? 'the command refused' : 'ok';
}"""


def _run_chapter(browser, url: str, chapter: str, *, explorers: bool = True, folder: str = "jupyter"):
    """Open a chapter's Jupyter edition (or the student edition: ``folder="student"``) in JupyterLab,
    run all cells, wait for the kernel; returns (context, page, remote)."""
    remote: list[str] = []
    context = browser.new_context(viewport={"width": 1400, "height": 1000})

    def route(r):
        if _is_local(r.request.url):
            r.continue_()
        else:
            remote.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.goto(f"{url}/lab/tree/{folder}/{chapter}.ipynb?reset")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    page.wait_for_function("() => window.jupyterapp", timeout=60_000)
    opened = page.evaluate(OPENED_CLEAN, f"{folder}/{chapter}.ipynb")
    assert not opened["dirty"], f"{chapter}: the notebook is marked modified as it opens ({opened})"
    # What Run > Run All Cells does, on this chapter's notebook made the current one, once its kernel
    # is ready (the server exposes the app to the page for this).
    outcome = page.evaluate(RUN_ALL, f"{folder}/{chapter}.ipynb")
    assert outcome == "ok", f"{chapter}: could not run all cells ({outcome})"
    # Stored outputs hold no widget views, so a live explorer means the run has started (and every
    # cell is queued, showing [*]); then wait for the queue to empty.
    try:
        if explorers:
            page.wait_for_selector(".widget-image", state="attached", timeout=120_000)
        page.wait_for_function(f"() => ({JS_STATE})().running === 0", timeout=120_000)
    except Exception:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"lab-{chapter}.png"))
        context.close()
        raise
    return context, page, remote


def _move(page, explorer_index: int) -> float:
    """Move the first slider (else drop-down) of an explorer; return seconds until its figure changed."""
    image = page.locator(".widget-image").nth(explorer_index)
    box = image.locator("xpath=..")  # the explorer's VBox: controls, message, image, caption
    image.scroll_into_view_if_needed()
    before = image.get_attribute("src")
    handles = box.locator(".noUi-handle")
    start = time.monotonic()
    if handles.count():
        handles.first.focus()
        start = time.monotonic()
        handles.first.press("ArrowRight")
    else:
        select = box.locator("select").first
        options = select.locator("option").all_text_contents()
        current = select.evaluate("s => s.options[s.selectedIndex].text")
        target = next(o for o in options if o != current)
        start = time.monotonic()
        select.select_option(label=target)
    page.wait_for_function("([i, old]) => document.querySelectorAll('.widget-image')[i].src !== old",
                           arg=[explorer_index, before], timeout=REDRAW_LIMIT * 1000)
    return time.monotonic() - start


SHOW_EVERY_CELL = """async (path) => {
  const panel = Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.context && w.context.path === path);
  window.jupyterapp.shell.activateById(panel.id);
  await window.jupyterapp.commands.execute('notebook:expand-all-headings');   // the solutions' sections
  for (const cell of panel.content.widgets) {   // unfold what the edition folds, so it is read too
    cell.inputHidden = false;
    if (cell.model.type === 'markdown') { cell.rendered = true; }
  }
  return panel.content.widgets.filter(c => c.model.type === 'markdown').length;
}"""

READ_PAGE = """() => {
  // A Markdown cell's rendering, whichever renderer made it (JupyterLab's or jupyterlab-myst's):
  // its input area without the editor that holds the source.
  const read = (e, markdown) => {
    const copy = e.cloneNode(true);   // typeset math and the Markdown's code blocks are not prose
    copy.querySelectorAll('.jp-InputArea-editor, .jp-InputPrompt, .cm-editor, mjx-container, .MathJax, mjx-assistive-mml, .katex-mathml, annotation, script, style')
      .forEach(m => m.remove());
    if (markdown) { copy.querySelectorAll('pre').forEach(m => m.remove()); }
    return copy.textContent;
  };
  const cells = Array.from(document.querySelectorAll('.jp-Notebook .jp-MarkdownCell .jp-InputArea'));
  const rendered = cells.map(e => read(e, true));
  const outputs = Array.from(document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')).map(e => read(e, false));
  const images = cells.flatMap(e => Array.from(e.querySelectorAll('img'))).filter(i => !i.closest('.jp-InputArea-editor'));
  return {
    text: rendered.concat(outputs).join('\\n'),
    markdown: rendered.filter(t => t.trim()).length,
    images: images.length,
    broken: images.filter(i => !i.complete || i.naturalWidth === 0).length,
  };
}"""


def _raw_myst_in_page(page, chapter: str, path: Path | None = None, folder: str = "jupyter") -> None:
    """Scan the rendered notebook, as a reader sees it, for MyST or LaTeX left as text; every
    Markdown cell rendered (the folded solutions unfolded first), every glued figure shown."""
    path = path or ROOT / "jupyter" / f"{chapter}.ipynb"
    nb = json.loads(path.read_text(encoding="utf-8"))
    markdown = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
    rendered = page.evaluate(SHOW_EVERY_CELL, f"{folder}/{chapter}.ipynb")
    assert rendered == len(markdown), f"{chapter}: {rendered} Markdown cells in the page, {len(markdown)} in the file"
    pattern = "|".join(f"({p})" for p in RAW_MYST.values())
    try:  # MathJax typesets asynchronously: give it time to replace the $...$ source
        page.wait_for_function(
            f"() => {{ const r = ({READ_PAGE})(); return r.markdown >= {len(markdown)} && !new RegExp({json.dumps(pattern)}).test(r.text); }}",
            timeout=30_000)
    except Exception:
        pass
    state = page.evaluate(READ_PAGE)
    from conftest import raw_myst

    found = raw_myst(state["text"])
    assert not found, f"{chapter}: raw MyST or LaTeX shown as text in JupyterLab: {found[:5]}"
    assert state["markdown"] == len(markdown), f"{chapter}: only {state['markdown']} of {len(markdown)} Markdown cells rendered"
    figures = sum(m.count("](data:image/png;base64,") for m in markdown)
    assert state["images"] >= figures and state["broken"] == 0, f"{chapter}: glued figures not shown: {state}"
    print(f"{chapter}: {state['markdown']} Markdown cells read (folded ones unfolded), {state['images']} figures, "
          "no raw MyST")


def _solutions_stay_hidden(page, chapter: str) -> None:
    """After Run All (and opening), every solution is still folded under its collapsed heading."""
    nb = json.loads((ROOT / "jupyter" / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    expected = ["".join(c["source"]).lstrip("# ") for c in nb["cells"]
                if "jp-MarkdownHeadingCollapsed" in c["metadata"]]
    state = page.evaluate(SOLUTIONS_STATE, f"jupyter/{chapter}.ipynb")
    # What the collapsed heading shows: its title only, rendered (a permalink sign may follow it).
    assert [h["text"].rstrip("¶# ").strip() for h in state["headings"]] == expected, \
        f"{chapter}: solution headings {state['headings'][:3]}"
    assert all(h["collapsed"] and h["shown"] for h in state["headings"]), \
        f"{chapter}: a solution's heading is not collapsed after Run All: {state['headings']}"
    assert not state["leaks"], f"{chapter}: solution cells shown after Run All: {state['leaks'][:3]}"
    assert state["verdictsShown"] == 0, f"{chapter}: {state['verdictsShown']} check() verdicts shown after Run All"
    print(f"{chapter}: {len(expected)} solutions stay folded after Run All")


def _check_chapter(browser, lab, chapter, *, every_explorer: bool, explorers: bool = True):
    context, page, remote = _run_chapter(browser, lab, chapter, explorers=explorers)
    try:
        _solutions_stay_hidden(page, chapter)
        state = page.evaluate(JS_STATE)
        assert not state["errors"], f"{chapter}: error output after Run All: {state['errors'][:3]}"
        assert state["explorers"] >= 1 or not explorers, f"{chapter}: no live explorer rendered"
        for i in range(state["explorers"] if every_explorer else min(1, state["explorers"])):
            seconds = _move(page, i)
            print(f"{chapter} explorer {i + 1}: new figure {seconds * 1000:.0f} ms after the control moved")
            assert page.evaluate(JS_STATE)["errors"] == []
        _raw_myst_in_page(page, chapter)
        assert not remote, f"{chapter}: requests to other hosts: {remote[:5]}"
    finally:
        page.evaluate("() => jupyterapp.serviceManager.sessions.shutdownAll()")  # one kernel at a time
        context.close()


VISIBLE_CODE = """(path) => {
  // The code a student sees: every code cell whose input is not folded.
  const panel = Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.context && w.context.path === path);
  return panel.content.widgets.filter(c => c.model.type === 'code' && !c.inputHidden && !c.isHidden)
    .map(c => c.model.sharedModel.getSource());
}"""


def test_the_student_edition_reads_and_runs_in_jupyterlab(browser, plain_lab, tmp_path):
    """A chapter of the student edition (the one with the glue cell that calls library internals) in
    JupyterLab: it opens unmodified, runs, shows no solution, no raw MyST, no unresolved citation,
    the book's exercise numbers, and no visible cell that calls a private name."""
    chapter = "parallelism"
    subprocess.run([sys.executable, str(ROOT / "tools" / "student-edition"), str(tmp_path)], check=True,
                   capture_output=True)
    context, page, remote = _run_chapter(browser, plain_lab, chapter, explorers=False, folder="student")
    try:
        state = page.evaluate(JS_STATE)
        assert not state["errors"], f"{chapter}: error output after Run All: {state['errors'][:3]}"
        code = page.evaluate(VISIBLE_CODE, f"student/{chapter}.ipynb")
        private = [m for text in code for m in re.findall(r"\b\w+\._[a-z]\w*\(", text)]
        assert code and not private, f"{chapter}: visible cells call private names: {private}"
        text = page.evaluate("() => document.querySelector('.jp-Notebook').innerText")
        assert "⚠" not in text and "Solution to Exercise" not in text
        book = json.loads((ROOT / "jupyter" / f"{chapter}.ipynb").read_text(encoding="utf-8"))
        numbers = [m for c in book["cells"] if c["cell_type"] == "markdown"
                   for m in re.findall(r"^#### (Exercise \d+)$", "".join(c["source"]), re.M)]
        assert re.findall(r"^(Exercise \d+)¶?$", text, re.M) == numbers, f"{chapter}: exercise numbers differ"
        _raw_myst_in_page(page, chapter, tmp_path / f"{chapter}.ipynb", folder="student")
        assert not remote, f"{chapter}: requests to other hosts: {remote[:5]}"
    finally:
        page.evaluate("() => jupyterapp.serviceManager.sessions.shutdownAll()")
        context.close()


def test_a_chapter_runs_live_and_reads_without_raw_myst(browser, plain_lab):
    """The roofline chapter's Jupyter edition in JupyterLab without jupyterlab-myst (as Colab, which
    runs no extension): it runs, its slider moves the figure, and its page shows no raw MyST."""
    _check_chapter(browser, plain_lab, "roofline", every_explorer=False)


WITH_EXPLORERS = [c for c in CHAPTERS if "_explorer(" in (ROOT / "book" / f"{c}.md").read_text(encoding="utf-8")]


@pytest.mark.slow
def test_the_chapters_with_explorers_are_known():
    assert {"roofline", "memory", "collectives", "reliability", "hardware-catalog"} <= set(WITH_EXPLORERS)


@pytest.mark.slow
@pytest.mark.parametrize("chapter", WITH_EXPLORERS)
def test_every_explorer_of_every_chapter_responds(browser, lab, chapter):
    _check_chapter(browser, lab, chapter, every_explorer=True)


@pytest.mark.slow
@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if c not in WITH_EXPLORERS])
def test_every_other_chapter_runs_and_reads_without_raw_myst(browser, lab, chapter):
    """Chapters without an explorer, in Binder's JupyterLab (with jupyterlab-myst): they run and
    show no raw MyST (those with explorers are scanned by the test above)."""
    _check_chapter(browser, lab, chapter, every_explorer=False, explorers=False)
