"""Small fixes to what Jupyter Book 1's theme stack puts in every page.

* sphinx-thebe 0.3.1 adds its inline configuration script (``const THEBE_JS_URL = ...``) once per
  ``env-before-read-docs``, which Jupyter Book fires twice, so every page declared the constant
  twice and threw "Identifier 'THEBE_JS_URL' has already been declared" (sphinx-togglebutton's
  inline setting is doubled the same way). Each page's scripts are listed once here, in their
  first position.
* sphinx-book-theme 1.3 keeps pydata-sphinx-theme's site header: a second bar above the book's
  own article header, with a second search field. ``_static/theme.css`` hides it (the article
  header holds the sidebar toggles; the element stays, as the theme's scripts measure it).
"""

from __future__ import annotations


def _unique_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for script in scripts:  # the copies differ in priority, and in file name None or ""
        key = (getattr(script, "filename", None) or "",
               tuple(sorted((k, str(v)) for k, v in getattr(script, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def setup(app):
    app.connect("html-page-context", _unique_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
