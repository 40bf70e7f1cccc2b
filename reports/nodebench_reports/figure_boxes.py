"""Where a figure's plot areas and legends land in its PNG, for the page to carry beside the image
(``data-boxes`` on the ``<img>``) and the browser test to check that no legend covers a plot area:
:func:`png_with_boxes` saves the figure as :func:`plots._png` does and returns the bytes with the
boxes attached (``.boxes``), in image pixels from the top left."""

from __future__ import annotations

import io

import matplotlib


class PngBytes(bytes):
    """PNG bytes that also carry ``boxes``: {"width", "height", "axes": [[x0, y0, x1, y1]...], "legends": [...]}."""

    boxes: dict | None = None


def figure_boxes(fig, dpi: float) -> dict:
    """The visible axes' plot areas and every legend (the axes' and the figure's), in the pixels of
    the image ``fig.savefig(dpi=dpi, bbox_inches="tight")`` writes."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    pad = matplotlib.rcParams["savefig.pad_inches"]
    tight = fig.get_tightbbox(renderer)           # inches
    x0, y1 = tight.x0 - pad, tight.y1 + pad

    def px(bb):
        return [round((bb.x0 / fig.dpi - x0) * dpi, 1), round((y1 - bb.y1 / fig.dpi) * dpi, 1),
                round((bb.x1 / fig.dpi - x0) * dpi, 1), round((y1 - bb.y0 / fig.dpi) * dpi, 1)]

    axes = [ax for ax in fig.axes if ax.get_visible()]
    legends = [ax.get_legend() for ax in axes if ax.get_legend() is not None] + list(fig.legends)
    return {"width": round((tight.width + 2 * pad) * dpi), "height": round((tight.height + 2 * pad) * dpi),
            "axes": [px(ax.get_window_extent(renderer)) for ax in axes],
            "legends": [px(lg.get_window_extent(renderer)) for lg in legends if lg.get_visible()]}


def png_with_boxes(fig, dpi: float) -> PngBytes:
    boxes = figure_boxes(fig, dpi)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    out = PngBytes(buf.getvalue())
    out.boxes = boxes
    return out
