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
        return b"\x89PNG fake"
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
