"""The HTML page opened in headless Chromium: every plot image loads and has a size.

A copy of the page gets a small script that, once the page has loaded, writes the state of every
<img> (complete, naturalWidth, naturalHeight) into the DOM; `chromium --dump-dom` prints the DOM.
Skipped only when Chromium is not installed (apt-get install -y chromium).
"""

from __future__ import annotations

import html as html_lib
import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import PLOT_KEYS

CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")


def find_chromium():
    env = os.environ.get("CHROMIUM")
    if env:
        return env
    for name in CANDIDATES:
        path = name if os.path.isabs(name) and os.access(name, os.X_OK) else shutil.which(name)
        if path:
            return path
    return None


CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed "
                                                         "(apt-get install -y chromium, or set CHROMIUM=/path)")

PROBE = """<script>
window.addEventListener("load", function () {
  var state = Array.prototype.map.call(document.images, function (img) {
    var fig = img.closest("figure");
    return {figure: fig ? fig.id : null, complete: img.complete,
            width: img.naturalWidth, height: img.naturalHeight, shown: img.getBoundingClientRect().width};
  });
  var pre = document.createElement("pre");
  pre.id = "nb-image-state";
  pre.textContent = JSON.stringify(state);
  document.body.appendChild(pre);
});
</script>"""


def chromium(*args, timeout=90) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--no-first-run", "--hide-scrollbars", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def image_state(report_html, tmp_path) -> list[dict]:
    page = report_html.read_text(encoding="utf-8")
    probed = tmp_path / "probed.html"
    probed.write_text(page.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    proc = chromium("--virtual-time-budget=10000", "--dump-dom", probed.as_uri())
    m = re.search(r'<pre id="nb-image-state">(.*?)</pre>', proc.stdout, re.S)
    assert m, f"no image state in the DOM (chromium exit {proc.returncode}): {proc.stderr[-2000:]}"
    return json.loads(html_lib.unescape(m.group(1)))


def test_every_plot_renders_in_chromium(full_report, tmp_path):
    state = image_state(full_report / "report.html", tmp_path)
    assert [s["figure"] for s in state] == [f"plot-{k}" for k in PLOT_KEYS]
    for s in state:
        assert s["complete"] and s["width"] > 100 and s["height"] > 100, s
        assert s["shown"] > 100, s   # laid out on the page, not hidden


def test_not_measured_page_renders_in_chromium(cli, gemm_only_file, tmp_path):
    assert cli("html", gemm_only_file, "-o", tmp_path / "out").rc == 0
    state = image_state(tmp_path / "out" / "report.html", tmp_path)
    assert [s["figure"] for s in state] == ["plot-gemm", "plot-fp16_speedup"]
    assert all(s["complete"] and s["width"] > 100 for s in state), state


def test_screenshot_is_taken(full_report, tmp_path):
    shot = tmp_path / "report.png"
    proc = chromium("--window-size=1280,4000", f"--screenshot={shot}", (full_report / "report.html").as_uri())
    assert shot.exists(), proc.stderr[-2000:]
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 50_000   # a page with plots, not a blank image
