"""Plot readability (issue 17): what each figure draws, inspected on the matplotlib figure itself."""

from __future__ import annotations

import matplotlib.colors as mcolors
import pytest

import nbgen


@pytest.fixture
def figures(monkeypatch):
    from nodebench_reports import plots
    captured = []

    def keep(fig):
        captured.append(fig)
        return b"\x89PNG fake #%d" % (len(captured) - 1)
    monkeypatch.setattr(plots, "_png", keep)
    return captured


def _data(tmp_path, doc):
    from nodebench_reports.load import load_run, merge_runs
    return merge_runs([load_run(nbgen.write(doc, tmp_path / "r.json"))])


def test_hostlink_single_points_and_totals_are_apart(tmp_path, figures):
    from nodebench_reports.families.hostlink import plot_hostlink

    doc = nbgen.make_result(families=("hostlink",), n_gpus=2, seed=1)
    extra = []
    for rec in doc["records"]:
        p = rec["params"]
        if p["direction"] == "h2d" and p["memory"] == "pinned" and p["bytes"] == nbgen.HOSTLINK_SIZES[-1]:
            for kind, engine in (("write_combined", "ce"), ("pinned", "sm")):
                r = dict(rec, id=f"{rec['id']}_{kind}_{engine}", case=f"{rec['case']}_{kind}_{engine}",
                         params=dict(p, memory=kind, engine=engine))
                extra.append(r)
            extra.append(dict(rec, id=f"hostlink/bidir_total_{rec['gpus'][0]}", case="bidir_total",
                              params=dict(p, direction="bidir"),
                              metrics=dict(rec["metrics"], gbps=rec["metrics"]["gbps"] * 1.6)))
            if rec["gpus"] == [0]:
                extra.append(dict(rec, id="hostlink/h2d_all_gpus", case="h2d_all_gpus", gpus=[0, 1],
                                  params=dict(p, direction="h2d_all_gpus"),
                                  metrics=dict(rec["metrics"], gbps=rec["metrics"]["gbps"] * 1.9)))
    doc["records"] += extra
    doc["summary"]["ok"] += len(extra)
    doc["summary"]["total"] += len(extra)
    plot = plot_hostlink(_data(tmp_path, doc))
    assert plot.png and len(figures) == 1
    axes = [a for a in figures[0].axes if a.get_visible()]
    per_gpu = [a for a in axes if a.get_title().startswith("GPU")]
    totals = [a for a in axes if a.get_title().startswith("totals")]
    assert len(per_gpu) == 2 and len(totals) == 1
    for ax in per_gpu:
        assert ax.get_ylabel().endswith("(GB/s)") and "bytes" in ax.get_xlabel()
        lines = {ln.get_label(): ln for ln in ax.get_lines()}
        # the totals are not drawn in a per-GPU panel
        assert not any(k.startswith("bidir ") or "all_gpus" in k for k in lines)
        curve_colors = {mcolors.to_hex(ln.get_color()) for k, ln in lines.items()
                        if ln.get_linestyle() not in ("None", "none", "") and not k.startswith("link")}
        points = [ln for k, ln in lines.items() if "only)" in k]
        assert len(points) >= 2          # write-combined, SM copy: single sizes
        for ln in points:
            assert ln.get_linestyle() in ("None", "none")   # markers, no line
            assert mcolors.to_hex(ln.get_markeredgecolor()) not in curve_colors
        assert len({ln.get_marker() for ln in points}) == len(points)
    labels = [t.get_text() for t in totals[0].get_yticklabels()]
    assert any("both ways" in t for t in labels) and any("all GPUs" in t for t in labels)
    assert "GB/s" in totals[0].get_xlabel()


def test_allreduce_on_log_axes(tmp_path, figures):
    from nodebench_reports.families.nccl import plot_allreduce

    plot_allreduce(_data(tmp_path, nbgen.make_result(families=("nccl",), seed=1)))
    ax = figures[0].axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "GB/s" in ax.get_ylabel() and "bytes" in ax.get_xlabel()


def test_out_of_memory_marker_is_not_red(tmp_path, figures):
    from nodebench_reports.families.conv import plot_conv

    plot_conv(_data(tmp_path, nbgen.make_result(families=("conv",), n_gpus=1, seed=1)))
    ax = figures[0].axes[0]
    oom = [c for c in ax.collections if c.get_label() == "out of memory"]
    assert oom
    red = mcolors.to_rgba("red")
    for c in oom:
        for fc in c.get_facecolors():
            assert tuple(fc) != red
    assert ax.get_ylabel() == "images/s" and ax.get_xlabel() == "batch size"


def test_trend_wildcard_splits_units_and_keeps_colours_apart(cli, tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    files = [nbgen.write(nbgen.make_result(families=("gemm",), n_gpus=1, seed=i,
                                           started_at=f"2025-06-0{i + 1}T02:00:00Z"), tmp_path / f"r{i}.json")
             for i in range(3)]
    db = tmp_path / "h.sqlite"
    assert cli("ingest", *files, "--db", db).rc == 0
    saved = []
    monkeypatch.setattr(plt.Figure, "savefig", lambda self, *a, **k: saved.append(self))
    r = cli("trend", "--db", db, "--case", "gemm/*/cublaslt/square_*", "-o", tmp_path / "t.png", "-q")
    assert r.rc == 0, r
    fig = saved[0]
    axes = [a for a in fig.axes if a.get_visible()]
    ylabels = sorted(a.get_ylabel() for a in axes)
    assert ylabels == ["TFLOPS", "TOPS"]          # TFLOPS and TOPS on their own axes
    for ax in axes:
        lines = ax.get_lines()
        styles = {(mcolors.to_hex(ln.get_color()), ln.get_marker()) for ln in lines}
        assert len(styles) == len(lines)          # no two lines look alike
        leg = ax.get_legend()
        assert leg is not None
        # legend anchored outside the plot area (to the right)
        assert leg.get_bbox_to_anchor().x0 >= ax.get_window_extent().x1 - 1


def _figure_of(plot, figures):
    """The figure a plot was drawn from (the fixture's PNG bytes end with the figure's index)."""
    return figures[int(plot.png.rsplit(b"#", 1)[1])]


MAX_SERIES = 6   # "at most about six series per panel" (issue 46)
_MARKS = ("out of memory", "ideal", "link ", "peak")   # reference marks, not series


def _series_per_panel(fig) -> list[int]:
    out = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        labels = {ln.get_label() for ln in ax.get_lines()} | {c.get_label() for c in ax.collections}
        out.append(len([lb for lb in labels if not lb.startswith("_") and not lb.startswith(_MARKS)
                        and "% of memory" not in lb and not lb.startswith("recommended")]))
    return out


@pytest.mark.parametrize("layouts", [("nhwc",), ("nchw", "nhwc")])
def test_no_panel_holds_more_than_six_series(tmp_path, figures, layouts):
    """Every figure of a full run (four precisions of conv, both layouts) splits its series into small
    multiples: none of its panels draws more than six."""
    from nodebench_reports.assemble import render_all
    doc = nbgen.make_result(n_gpus=2)
    conv = [r for r in doc["records"] if r["family"] == "conv" and r["params"].get("layer") == "resnet50_total"]
    extra = []
    for rec in conv:    # more precisions and layouts than the generator's: bf16 and fp8 beside them
        for prec in ("bf16", "tf32"):
            for layout in layouts:
                extra.append(dict(rec, id=f"{rec['id']}_{prec}_{layout}", case=f"{rec['case']}_{prec}_{layout}",
                                  params=dict(rec["params"], precision=prec, layout=layout)))
    doc["records"] += extra
    doc["summary"]["total"] += len(extra)
    for status in ("ok", "skipped", "failed", "wrong"):
        doc["summary"][status] = sum(r["status"] == status for r in doc["records"])
    plots = render_all(_data(tmp_path, doc))
    assert figures, "no figure drawn"
    crowded = {}
    for plot in plots:
        if not plot.png:
            continue
        counts = _series_per_panel(_figure_of(plot, figures))
        if counts and max(counts) > MAX_SERIES:
            crowded[plot.key] = counts
    assert not crowded, crowded


def test_a_one_gpu_run_draws_no_empty_scaling_panel(tmp_path, figures):
    """Data-parallel training measured on one GPU only: no frame with one point, but the sentence that
    says so and how to get the predicted curve."""
    from nodebench_reports.families.train_dp import plot_scaling
    doc = nbgen.make_result(families=("gemm",), n_gpus=1)
    rec = dict(doc["records"][0], id="train_dp/resnet50/fp16/nhwc/b64/g1", family="train_dp", case="resnet50/fp16/nhwc/b64/g1",
               params={"gpus": 1, "batch": 64, "precision": "fp16", "layout": "nhwc", "accumulation": 1},
               metrics={"images_per_s": 1500.0, "step_time_ms": 42.0}, primary_metric="images_per_s",
               primary_better="higher", percent_of_peak=None)
    doc["records"].append(rec)
    doc["summary"]["ok"] += 1
    doc["summary"]["total"] += 1
    plot = plot_scaling(_data(tmp_path, doc))
    assert plot.png is None and not figures
    assert "one GPU" in plot.missing and "advise" in plot.missing
