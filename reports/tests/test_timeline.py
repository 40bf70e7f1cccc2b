"""The GPU timeline (`run --monitor`): schema, spans from marks, the plot, the HTML report and the
`timeline` command, on a synthetic timeline."""

from __future__ import annotations

import copy
import math

import pytest

import nbgen
from nodebench_reports.load import Run, check_document, merge_runs
from nodebench_reports.timeline import case_spans, plot_timeline, timeline_of

CASES = ("gemm/fp32/cublas/square_1024", "gemm/fp16/cublas/square_1024", "gemm/bf16/cublas/square_1024")


def synthetic_timeline(n_gpus=2, n=120, interval=0.5) -> dict:
    """Each case 10 s long with 5 s idle between: busy (util 100, 1980 MHz, 600 W) inside a case,
    idle (0 %, 345 MHz, 80 W) outside."""
    marks, spans = [], []
    t = 5.0
    for c in CASES:
        marks += [{"t_s": t, "text": f"start {c}", "gpus": list(range(n_gpus))}, {"t_s": t + 10, "text": f"end {c}"}]
        spans.append((t, t + 10))
        t += 15
    gpus = []
    for g in range(n_gpus):
        ts = [i * interval for i in range(n)]
        busy = [any(a <= x <= b for a, b in spans) for x in ts]
        gpus.append({"cuda_index": g, "uuid": f"GPU-{g:04d}-aaaa-bbbb",
                     "t_s": ts,
                     "gpu_util": [100.0 if b else 0.0 for b in busy],
                     "sm_clock_mhz": [1980.0 - 10 * g if b else 345.0 for b in busy],
                     "power_w": [600.0 + g if b else None for b in busy],  # unknown while idle: gaps
                     "mem_used_bytes": [float(2 << 30) if b else 0.0 for b in busy]})
    return {"interval_s": interval, "gpus": gpus, "marks": marks}


@pytest.fixture
def doc():
    d = nbgen.make_result(families=("gemm",), n_gpus=2, seed=3)
    d["timeline"] = synthetic_timeline()
    return d


@pytest.fixture
def figures(monkeypatch):
    from nodebench_reports import timeline
    captured = []

    def keep(fig):
        captured.append(fig)
        return b"\x89PNG fake"
    monkeypatch.setattr(timeline, "_png", keep)
    return captured


def test_schema_accepts_timeline_and_bounds_points(doc, validate):
    validate(doc)
    validate({**doc, "notes": ["run --monitor: no timeline: NVML is unavailable (x)"]})
    too_long = copy.deepcopy(doc)
    g = too_long["timeline"]["gpus"][0]
    for k in ("t_s", "gpu_util", "sm_clock_mhz", "power_w", "mem_used_bytes"):
        g[k] = [1.0] * 601
    with pytest.raises(AssertionError):
        validate(too_long)
    no_marks = copy.deepcopy(doc)
    del no_marks["timeline"]["marks"]
    with pytest.raises(AssertionError):
        validate(no_marks)


def test_case_spans_pair_start_and_end():
    marks = [{"t_s": 1.0, "text": "start a/x"}, {"t_s": 2.0, "text": "start b/y"}, {"t_s": 3.0, "text": "end a/x"},
             {"t_s": 4.0, "text": "end b/y"}, {"t_s": 5.0, "text": "start c/z"}]
    assert case_spans(marks) == [(1.0, 3.0, "a/x"), (2.0, 4.0, "b/y"), (5.0, 5.0, "c/z")]


def test_timeline_of_drops_malformed_gpus(doc):
    d = copy.deepcopy(doc)
    d["timeline"]["gpus"][1]["power_w"] = [1.0]  # length differs from t_s
    t = timeline_of(Run("x.json", d))
    assert [g["cuda_index"] for g in t["gpus"]] == [0]
    assert timeline_of(Run("x.json", {**doc, "timeline": {"gpus": []}})) is None
    assert timeline_of(Run("x.json", {k: v for k, v in doc.items() if k != "timeline"})) is None


def test_plot_draws_every_gpu_with_units_and_case_marks(doc, figures):
    plot = plot_timeline(Run("x.json", doc))
    assert plot is not None and plot.png and len(figures) == 1
    axes = [a for a in figures[0].axes if a.get_visible()]
    assert [a.get_ylabel() for a in axes] == ["GPU utilisation (%)", "SM clock (MHz)", "board power (W)"]
    assert axes[-1].get_xlabel().endswith("(s)")
    for ax, key in zip(axes, ("gpu_util", "sm_clock_mhz", "power_w")):
        lines = [ln for ln in ax.get_lines() if ln.get_label().startswith("GPU ")]
        assert len(lines) == 2
        for g, ln in enumerate(lines):
            src = doc["timeline"]["gpus"][g]
            want = [(t, v) for t, v in zip(src["t_s"], src[key]) if v is not None]  # gaps left out, not zeros
            assert list(zip(ln.get_xdata(), ln.get_ydata())) == want
        # one boundary line per case start; spans shaded for alternate cases
        vlines = [ln for ln in ax.get_lines() if not ln.get_label().startswith("GPU ")]
        assert sorted(ln.get_xdata()[0] for ln in vlines) == [5.0, 20.0, 35.0]
    labels = [t.get_text() for t in axes[0].texts]
    assert labels == [c.split("/", 1)[1] for c in CASES]
    legend = axes[0].get_legend()
    assert legend is not None and {t.get_text() for t in legend.get_texts()} == {
        "GPU 0 (GPU-0000-aaa)", "GPU 1 (GPU-0001-aaa)"}
    assert axes[0].get_ylim() == (0, 105)


def test_html_report_has_timeline_only_when_present(doc, tmp_path):
    from nodebench_reports.htmlpage import write_report
    check_document(doc, "t.json")
    html_path, _, _, plots = write_report(merge_runs([Run("t.json", doc)]), str(tmp_path / "with"))
    assert [p.key for p in plots if p.key.startswith("timeline")] == ["timeline"]
    html = open(html_path, encoding="utf-8").read()
    assert '<figure id="plot-timeline">' in html
    plain = {k: v for k, v in doc.items() if k != "timeline"}
    html_path, _, _, plots = write_report(merge_runs([Run("t.json", plain)]), str(tmp_path / "without"))
    assert not any(p.key.startswith("timeline") for p in plots)
    assert "plot-timeline" not in open(html_path, encoding="utf-8").read()


def test_timeline_command_writes_png(doc, tmp_path, cli):
    path = nbgen.write(doc, tmp_path / "r.json")
    out = tmp_path / "t.png"
    r = cli("timeline", path, "--out", out)
    assert r.rc == 0, r
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    plain = nbgen.write({k: v for k, v in doc.items() if k != "timeline"}, tmp_path / "p.json")
    r = cli("timeline", plain, "--out", tmp_path / "x.png")
    assert r.rc == 2 and "no timeline" in r.err and "--monitor" in r.err, r
    assert not (tmp_path / "x.png").exists()


def test_many_cases_drop_the_names(doc, figures):
    d = copy.deepcopy(doc)
    d["timeline"]["marks"] = [m for i in range(40) for m in (
        {"t_s": float(i), "text": f"start f/c{i}"}, {"t_s": i + 0.5, "text": f"end f/c{i}"})]
    plot_timeline(Run("x.json", d))
    axes = [a for a in figures[0].axes if a.get_visible()]
    assert axes[0].texts == [] or len(axes[0].texts) == 0
    assert math.isclose(max(ln.get_xdata()[0] for ln in axes[0].get_lines() if not ln.get_label().startswith("GPU ")),
                        39.0)
