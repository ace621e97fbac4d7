"""Point a chapter page's Binder and Colab launch buttons at the chapter's Jupyter edition.

sphinx-book-theme builds the launch links from ``repository.url``, the branch and the page's own
source path (``book/NAME.ipynb``). That notebook is the executed source of the HTML page: opened in
Jupyter, its Markdown shows raw MyST (glue, citations, cross-references, exercise fences). The
reader must get ``jupyter/NAME.ipynb`` instead, written from it by ``tools/jupyter-edition`` and
committed, so that Colab (which opens a notebook by its path on GitHub) and Binder (which clones
the repository) both find it. This extension runs after the theme's ``html-page-context``
handler and rewrites the path in those two links; every other part of the link (the one
``repository.url`` setting, the branch, the interface) stays the theme's.

The download button's ``.ipynb`` entry likewise serves the Jupyter edition (copied into the site
as ``jupyter/NAME.ipynb``), not the executed source whose Markdown is raw MyST.
"""

from __future__ import annotations

import shutil
from pathlib import Path

EDITION = "jupyter"


def _retarget(app, pagename, templatename, context, doctree):
    """Rewrite ``book/NAME.ipynb`` to ``jupyter/NAME.ipynb`` in this page's Binder/Colab links."""
    name = pagename.rsplit("/", 1)[-1]
    source = f"{pagename}.ipynb"
    edition = Path(app.srcdir) / EDITION / f"{name}.ipynb"
    if not edition.is_file():
        return
    for group in context.get("header_buttons", []):
        if group.get("label") == "launch-buttons":
            for button in group.get("buttons", []):
                if button.get("text") in ("Binder", "Colab") and source in button.get("url", ""):
                    button["url"] = button["url"].replace(source, f"{EDITION}/{name}.ipynb")
        elif group.get("label") == "download-buttons":
            for button in group.get("buttons", []):
                if button.get("text") == ".ipynb":
                    button["url"] = context["pathto"](f"{EDITION}/{name}.ipynb", 1)
                    button["tooltip"] = "Download this chapter as a notebook (the Jupyter edition)"


def _copy_edition(app, exception):
    """Publish the Jupyter edition beside the pages, for the download button."""
    if exception is not None or app.builder.format != "html":
        return
    source = Path(app.srcdir) / EDITION
    if source.is_dir():
        target = Path(app.outdir) / EDITION
        target.mkdir(parents=True, exist_ok=True)
        for notebook in source.glob("*.ipynb"):
            shutil.copyfile(notebook, target / notebook.name)


def setup(app):
    # sphinx-book-theme adds the launch buttons at priority 501; run after it.
    app.connect("html-page-context", _retarget, priority=900)
    app.connect("build-finished", _copy_edition)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
