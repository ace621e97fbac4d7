import pytest

pytest.importorskip("ipywidgets")

from atscale import plots, widgets  # noqa: E402


def test_catalog_scatter_draws_every_accelerator_with_the_dtype():
    fig = plots.catalog_scatter("fp8")
    ax = fig.axes[0]
    labels = {t.get_text() for t in ax.texts}
    assert {"H100 SXM", "B200", "MI300X"} <= labels
    assert "A100 SXM 80GB" not in labels  # no FP8 on Ampere...
    assert any("No FP8: A100" in t for t in labels)  # ...and the figure says so
    assert "TB/s" in ax.get_xlabel() and "TFLOP/s" in ax.get_ylabel()


def test_catalog_scatter_rejects_bad_dtype():
    with pytest.raises(ValueError, match="dtype='int8'"):
        plots.catalog_scatter("int8")


def test_explorer_redraws_and_shows_errors_in_place():
    e = widgets.catalog_explorer()
    first = e.image.value
    assert first[:8] == b"\x89PNG\r\n\x1a\n" and e.error is None
    e.update(dtype="fp64")
    assert e.image.value != first and e.error is None
    # A ValueError from the plot becomes a message, never an exception.
    e.controls["dtype"].options = list(e.controls["dtype"].options) + ["int8"]
    e.update(dtype="int8")
    assert "dtype='int8'" in e.error and "dtype=&#x27;int8&#x27;" in e.message.value
    assert e.image.layout.display == "none"
    e.update(dtype="bf16")
    assert e.error is None and e.message.value == "" and e.image.layout.display is None


def test_explorer_static_form_for_the_book():
    bundle = widgets.catalog_explorer()._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle  # live notebooks get the widget
    html = bundle["text/html"]  # the static book gets a figure and an honest note
    assert html.startswith('<figure class="atscale-explorer"><img src="data:image/png;base64,')
    assert widgets.LIVE_NOTE in html and "Binder or Colab" in widgets.LIVE_NOTE
    assert bundle["text/plain"].startswith("Explorer(catalog_scatter")


def test_explorer_rejects_unknown_control():
    e = widgets.catalog_explorer()
    with pytest.raises(ValueError, match="unknown control 'colour'"):
        e.update(colour="red")
