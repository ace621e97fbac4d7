import pytest

pytest.importorskip("ipywidgets")

from atscale import hardware, plots, widgets  # noqa: E402
from atscale.widgets.catalog import catalog_view  # noqa: E402


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
    assert bundle["text/plain"].startswith("Explorer(CatalogExplorerFigure")


def test_explorer_rejects_unknown_control():
    e = widgets.catalog_explorer()
    with pytest.raises(ValueError, match="unknown control 'colour'"):
        e.update(colour="red")


def test_catalog_view_selects_the_accelerators_with_the_dtype():
    dtype, have, lacking = catalog_view("fp8")
    assert dtype == "fp8" and all("fp8" in a.peak_flops for a in have)
    assert {a.name for a in have} | set(lacking) == set(hardware.ACCELERATORS)
    assert set(lacking) == {"A100 SXM 40GB", "A100 SXM 80GB"}
    with pytest.raises(ValueError, match="dtype='int8'"):
        catalog_view("int8")


def _drawn(fig):
    """(name -> (x, y) of each visible label, corner note, title) of a CatalogExplorerFigure after png()."""
    labels = {name: tuple(a.xy) for name, a in fig.labels.items() if a.get_visible()}
    return labels, fig.lacking.get_text() if fig.lacking.get_visible() else "", fig.title.get_text()


def test_explorer_figure_keeps_its_frame_and_colours_and_moves_the_points():
    fig = plots.CatalogExplorerFigure()
    frames, colours = set(), {}
    for dtype in hardware.DTYPES:
        png = fig.png(catalog_view(dtype))
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        frames.add((fig.ax.get_xlim(), fig.ax.get_ylim()))
        labels, note, title = _drawn(fig)
        _, have, lacking = catalog_view(dtype)
        assert set(labels) == {a.name for a in have} and dtype.upper() in title
        assert (note == f"No {dtype.upper()}: {', '.join(lacking)}") if lacking else note == ""
        # Each point at (bandwidth TB/s, peak TFLOP/s), inside the fixed frame.
        for acc in have:
            x, y = labels[acc.name]
            assert x == pytest.approx(acc.hbm_bandwidth / 1e12) and y == pytest.approx(acc.peak(dtype) / 1e12)
            (x0, x1), (y0, y1) = fig.ax.get_xlim(), fig.ax.get_ylim()
            assert x0 < x < x1 and y0 < y < y1
        for acc, c in zip(have, fig.points.get_facecolor()):
            assert colours.setdefault(acc.name, tuple(c)) == tuple(c), f"{acc.name} changed colour"
    assert len(frames) == 1, "the frame must not change with the data type"
    # One picture kept per data type; a second visit draws nothing new.
    assert len(fig._backgrounds) == len(hardware.DTYPES)
    again = fig.png(catalog_view("bf16"))
    assert len(fig._backgrounds) == len(hardware.DTYPES) and again == plots.CatalogExplorerFigure().png(
        catalog_view("bf16"))
    assert "TB/s" in fig.ax.get_xlabel() and "TFLOP/s" in fig.ax.get_ylabel()


def test_explorer_figure_refuses_a_bad_view():
    fig = plots.CatalogExplorerFigure(accelerators=["H100 SXM", "B200"])
    with pytest.raises(ValueError, match="dtype='int8'"):
        fig.png(("int8", (hardware.accelerator("H100 SXM"),), ()))
    with pytest.raises(ValueError, match="not one of the figure's accelerators"):
        fig.png(catalog_view("bf16"))
    with pytest.raises(ValueError, match="A100 SXM 80GB has no fp8 peak"):
        fig2 = plots.CatalogExplorerFigure()
        fig2.png(("fp8", (hardware.accelerator("A100 SXM 80GB"),), ()))
    with pytest.raises(ValueError, match="no accelerator has a fp8 peak"):
        fig.png(("fp8", (), ("H100 SXM",)))
    with pytest.raises(ValueError, match="view must be"):
        fig.png("bf16")
