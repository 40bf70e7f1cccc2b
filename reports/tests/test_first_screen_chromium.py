"""The report's first screen in headless Chromium at 1400x900, on the committed H200 run
(results/h200/2026-12-03-estimate/full-97ed15d-a.json.gz) and the P40 fixture
(tests/data/p40_result.json): the verdicts and the capacity table lie inside the first viewport,
every plot image loads with a size, no legend covers a plot area (the boxes the page carries from
matplotlib, data-boxes, checked against the image's real size), and the page fetches nothing.

Chromium is started once per page for the whole module (`--dump-dom` on a copy of the page with a
probe script that writes what it measured into the DOM). Skipped only without Chromium."""

from __future__ import annotations

import html as html_lib
import json
import re

import pytest

from conftest import REPO
from nodebench_reports.cli import main
from nodebench_reports.figure_boxes import figure_boxes
from test_chromium import CHROMIUM, chromium

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed "
                                                         "(apt-get install -y chromium, or set CHROMIUM=/path)")

WIDTH, HEIGHT = 1400, 900
PAGES = {"h200": REPO / "results" / "h200" / "2026-12-03-estimate" / "full-97ed15d-a.json.gz",
         "p40": REPO / "tests" / "data" / "p40_result.json"}

PROBE = """<script>
window.addEventListener("load", function () {
  function box(el) { if (!el) return null; var r = el.getBoundingClientRect();
    return {left: r.left, top: r.top, right: r.right, bottom: r.bottom, width: r.width, height: r.height}; }
  var state = {
    viewport: {width: window.innerWidth, height: window.innerHeight, scrollY: window.scrollY},
    verdicts: Array.prototype.map.call(document.querySelectorAll("#verdicts .verdict"),
                                       function (v) { return {key: v.dataset.key, box: box(v)}; }),
    capacity: box(document.getElementById("capacity")),
    scaling: box(document.getElementById("scaling")),
    images: Array.prototype.map.call(document.images, function (img) {
      var fig = img.closest("figure");
      return {figure: fig ? fig.id : null, complete: img.complete, width: img.naturalWidth,
              height: img.naturalHeight, shown: box(img), boxes: img.dataset.boxes || null};
    }),
    resources: performance.getEntriesByType("resource").map(function (e) { return e.name; }),
    links: Array.prototype.map.call(document.querySelectorAll("[src],[href]"), function (e) {
      return e.getAttribute("src") || e.getAttribute("href"); })
  };
  var pre = document.createElement("pre");
  pre.id = "nb-probe";
  pre.textContent = JSON.stringify(state);
  document.body.appendChild(pre);
});
</script>"""


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    out = {}
    for name, result in PAGES.items():
        folder = tmp_path_factory.mktemp(f"first-screen-{name}")
        assert main(["html", str(result), "-o", str(folder)]) == 0
        page = (folder / "report.html").read_text(encoding="utf-8")
        probe = folder / "probed.html"
        probe.write_text(page.replace("</body>", PROBE + "</body>"), encoding="utf-8")
        proc = chromium(f"--window-size={WIDTH},{HEIGHT}", "--virtual-time-budget=10000", "--dump-dom", probe.as_uri())
        m = re.search(r'<pre id="nb-probe">(.*?)</pre>', proc.stdout, re.S)
        assert m, f"{name}: no probe state in the DOM (chromium exit {proc.returncode}): {proc.stderr[-2000:]}"
        out[name] = (json.loads(html_lib.unescape(m.group(1))), page)
    return out


@pytest.mark.parametrize("name", PAGES)
def test_verdicts_and_capacity_in_the_first_viewport(probed, name):
    state, _ = probed[name]
    vp = state["viewport"]
    assert vp["width"] == WIDTH and vp["height"] <= HEIGHT and vp["scrollY"] == 0, vp
    assert state["verdicts"], "no verdict line"
    for v in state["verdicts"]:
        b = v["box"]
        assert b["height"] > 0 and b["bottom"] <= vp["height"] and b["right"] <= vp["width"], v
    cap = state["capacity"]
    assert cap and cap["height"] > 0 and cap["bottom"] <= vp["height"] and cap["right"] <= vp["width"], cap
    sc = state["scaling"]
    assert sc and sc["top"] < vp["height"], sc   # the scaling table starts on the first screen too


@pytest.mark.parametrize("name", PAGES)
def test_every_plot_image_loads(probed, name):
    state, page = probed[name]
    figures = re.findall(r'<figure id="(plot-[^"]+)">', page)
    assert figures and [i["figure"] for i in state["images"]] == figures
    for img in state["images"]:
        assert img["complete"] and img["width"] > 100 and img["height"] > 100, img
        assert img["shown"]["width"] > 100 and img["shown"]["height"] > 50, img


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@pytest.mark.parametrize("name", PAGES)
def test_no_legend_covers_a_plot_area(probed, name):
    state, _ = probed[name]
    legends = 0
    for img in state["images"]:
        assert img["boxes"], f"{img['figure']}: no data-boxes"
        boxes = json.loads(img["boxes"])
        # the boxes are in the image's own pixels: its real size says they are placed right
        assert abs(boxes["width"] - img["width"]) <= 2 and abs(boxes["height"] - img["height"]) <= 2, (img["figure"], boxes)
        for lg in boxes["legends"]:
            legends += 1
            assert -1 <= lg[0] and lg[2] <= img["width"] + 1 and -1 <= lg[1] and lg[3] <= img["height"] + 1, \
                (img["figure"], "legend outside the image", lg)
            for ax in boxes["axes"]:
                assert not _overlap(lg, ax), (img["figure"], "legend over a plot area", lg, ax)
    assert legends > 0   # the check ran on real legends


@pytest.mark.parametrize("name", PAGES)
def test_page_fetches_nothing(probed, name):
    state, _ = probed[name]
    assert state["resources"] == [], state["resources"]
    external = [u for u in state["links"] if not (u.startswith("data:") or u.startswith("#"))]
    assert external == []


def test_the_overlap_check_sees_a_legend_inside_the_axes():
    # figure_boxes on a legend drawn over the data (matplotlib's default place) reports the overlap
    # the browser test looks for; one placed outside (plots._legend) reports none.
    from nodebench_reports import plots
    for inside in (True, False):
        fig, ax = plots.plt.subplots(figsize=(6, 4))
        ax.plot([0, 1], [0, 1], label="a series")
        if inside:
            ax.legend(loc="upper left")
        else:
            plots._legend(ax)
        b = figure_boxes(fig, plots.DPI)
        plots.plt.close(fig)
        assert len(b["legends"]) == 1 and len(b["axes"]) == 1
        assert _overlap(b["legends"][0], b["axes"][0]) == inside
