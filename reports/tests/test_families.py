"""The report's family modules (nodebench_reports/families/): discovery, the interface, a family added
as one module, the loader without a per-family table, verdicts read from the file and never derived
again."""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path

import pytest

import nbgen
from conftest import PLOT_KEYS
from nodebench_reports import derive, families
from nodebench_reports.checklist import NOT_MEASURED, PASS, WARN, Item
from nodebench_reports.assemble import build_checklist
from nodebench_reports.conventions import primary_metric
from nodebench_reports.load import Run, check_document, merge_runs
from nodebench_reports.assemble import render_all

PACKAGE = Path(families.__file__).resolve().parents[1]
KNOWN = ("conv", "gemm", "hostlink", "latency", "memory", "nccl", "p2p", "peak", "train", "train_dp")


def data_of(doc):
    check_document(doc, "test.json")
    return merge_runs([Run("test.json", doc)])


def test_every_family_has_its_module_named_after_it():
    mods = families.modules()
    names = [m.FAMILY for m in mods]
    assert set(KNOWN) <= set(names) and names == sorted(names) and len(set(names)) == len(names)
    for m in mods:
        assert Path(m.__file__).stem == m.FAMILY
        assert families.module(m.FAMILY) is m
    assert families.module("no_such_family") is None and families.module(None) is None


def test_the_loader_names_no_family():
    # load.py, its structural check and the format's conventions hold no family name (no per-family
    # table): a family is known only through its module.
    for name in ("load.py", "schema_check.py", "conventions.py"):
        text = (PACKAGE / name).read_text(encoding="utf-8").replace('(pop, "peak"', "")  # the field percent_of_peak.peak
        found = [f for f in KNOWN if re.search(rf"['\"]{f}['\"]", text)]
        assert not found, f"{name} names {found}"
    assert "_PRIMARY" not in (PACKAGE / "load.py").read_text(encoding="utf-8")


@pytest.mark.parametrize("family, metrics, named, want", [
    ("nccl", {"time_us": 12.0, "busbw_gbps": 300.0}, "time_us", "time_us"),       # the file's choice wins
    ("conv", {"tflops": 80.0, "train_images_per_s": 3000.0}, "tflops", "tflops"),
    ("nccl", {"time_us": 12.0, "algbw_gbps": 150.0, "busbw_gbps": 300.0}, None, "busbw_gbps"),  # old file
    ("nccl", {"time_us": 12.0, "algbw_gbps": 150.0}, None, "algbw_gbps"),          # PRIMARY in order
    ("gemm", {"tflops": 50.0}, "gbps", "tflops"),                                  # named but absent
    ("latency", {"latency_us": 2.0}, None, "latency_us"),
    ("unknown_family", {"gbps": 3.0}, None, "median_s"),                          # no module: no fallback
    ("memory", {}, None, "median_s"),
    ("nccl", {"busbw_gbps": 300.0}, "null", "median_s"),                          # the record states none
])
def test_primary_metric_from_the_record_else_the_family_module(family, metrics, named, want):
    rec = {"family": family, "metrics": metrics, "stats": {"median": 1.0}}
    if named:
        rec["primary_metric"] = None if named == "null" else named
    assert primary_metric(rec) == want


def test_primary_fallback_is_each_modules_primary():
    for m in families.modules():
        assert families.primary_fallback(m.FAMILY) == tuple(getattr(m, "PRIMARY", ()))
    assert families.primary_fallback("gemm") == ("tflops", "tops")


def test_feeders_name_the_families_an_analysis_is_computed_from():
    assert families.feeders("fp16_vs_fp32") == ["conv", "gemm", "peak"]
    assert families.feeders("batch_recommendation") == ["conv"]
    assert families.feeders("train_recommendation") == ["train"]
    assert families.feeders("no_such_analysis") == []


# ----------------------------------------------------------------------------------------------
# verdicts from the file


def test_missing_analysis_says_so_and_what_to_run():
    with_it = nbgen.make_result(families=("gemm",), n_gpus=1)
    assert derive.missing_analysis(data_of(with_it), "fp16_vs_fp32") is None
    old = nbgen.make_result(families=("gemm",), n_gpus=1, analysis=False)
    text = derive.missing_analysis(data_of(old), "fp16_vs_fp32")
    assert text.startswith("not in this file: analysis.fp16_vs_fp32") and "`nodebench run --family gemm`" in text
    # no record it is computed from: nothing is missing
    assert derive.missing_analysis(data_of(nbgen.make_result(families=("hostlink",), n_gpus=1)), "fp16_vs_fp32") is None


def test_fp16_verdict_is_not_derived_again_without_the_analysis():
    doc = nbgen.make_result(families=("gemm",), n_gpus=1, analysis=False)
    data = data_of(doc)
    assert derive.fp16_speedups(data)[:2] == ([], [])
    item = {i.key: i for i in build_checklist(data)}["mixed_precision"]
    assert item.status == NOT_MEASURED and item.summary.startswith("not in this file: analysis.fp16_vs_fp32")
    speedup = next(p for p in render_all(data) if p.key == "fp16_speedup")
    assert speedup.png is None and speedup.missing.startswith("not in this file")


def test_the_files_fp16_verdict_stands_against_its_records():
    # The records show FP16 GEMM 13x FP32; the file's verdict says it does not pay: the report says what
    # the file says (a report that judged the records again would pass).
    doc = nbgen.make_result(families=("gemm",), n_gpus=1)
    entry = doc["analysis"]["fp16_vs_fp32"][0]
    entry.update(verdict="does_not_pay", reason="the harness says so", recommendation="train in FP32")
    item = {i.key: i for i in build_checklist(data_of(doc))}["mixed_precision"]
    assert item.status == WARN and "train in FP32" in item.summary


def test_the_files_batch_recommendation_is_the_one_shown():
    doc = nbgen.make_result(families=("conv",), n_gpus=1)
    rec = next(r for r in doc["analysis"]["batch_recommendation"] if r["precision"] == "fp16")
    best = rec["batch"]
    rec.update(batch=256, memory_fraction=0.4, train_images_per_s=1234.0)  # not the fastest batch measured
    item = {i.key: i for i in build_checklist(data_of(doc))}["memory"]
    line = next(e for e in item.evidence if e.startswith("GPU 0 fp16"))
    assert "batch 256, 1,234 images/s, 40% of GPU memory" in line and f"batch {best}," not in line
    assert item.status == PASS


# ----------------------------------------------------------------------------------------------
# checklist and page order, precedence


def test_train_judgment_of_memory_supersedes_the_conv_sweeps():
    both = {i.key: i for i in build_checklist(data_of(nbgen.make_result(families=("conv", "train"), n_gpus=1)))}
    assert "source: analysis.train_recommendation (measured ResNet-50 training step)" in both["memory"].evidence
    conv_only = {i.key: i for i in build_checklist(data_of(nbgen.make_result(families=("conv",), n_gpus=1)))}
    assert "source: analysis.batch_recommendation" in conv_only["memory"].evidence
    # one item per key, whoever judged it
    keys = [i.key for i in build_checklist(data_of(nbgen.make_result(n_gpus=1)))]
    assert len(keys) == len(set(keys))


def test_items_and_plots_follow_their_order():
    data = data_of(nbgen.make_result(n_gpus=2))
    items = build_checklist(data)
    assert [i.order for i in items] == sorted(i.order for i in items)
    plots = render_all(data)
    assert [p.order for p in plots] == sorted(p.order for p in plots)
    assert [p.key for p in plots] == PLOT_KEYS


WIDGET = '''
from nodebench_reports import plots
from nodebench_reports.checklist import PASS, Item, placed

FAMILY = "widget"
PRIMARY = ("widgets_per_s",)


def group_key(rec):
    return (rec["params"].get("size"),)


def figures(data):
    plot = plots.Plot("widget", "Widgets", "widgets against size", order=45)
    plot.missing = plots._absent(data, FAMILY, "this plot")
    return [plot]


def checklist_items(data):
    n = len(data.family(FAMILY))
    return [placed(Item("widget", "Widgets made", PASS, f"{n} widget record(s)"), 35)]
'''


@pytest.fixture
def widget_family(tmp_path, monkeypatch):
    """A family added as one module in a folder on the families package's path, nothing else touched (named
    widget, a name no real family module has)."""
    folder = tmp_path / "more_families"
    folder.mkdir()
    (folder / "widget.py").write_text(WIDGET, encoding="utf-8")
    monkeypatch.setattr(families, "__path__", [*families.__path__, str(folder)])
    monkeypatch.setattr(families, "_modules", None)
    yield
    sys.modules.pop("nodebench_reports.families.widget", None)


def test_a_family_is_added_as_one_module(widget_family):
    doc = nbgen.make_result(families=("hostlink",), n_gpus=1)
    rec = copy.deepcopy(doc["records"][0])
    rec.update(id="widget/w1", family="widget", case="w1", params={"size": 1}, metrics={"widgets_per_s": 7.0})
    doc["records"].append(rec)
    doc["summary"].update(ok=doc["summary"]["ok"] + 1, total=doc["summary"]["total"] + 1)
    data = data_of(doc)
    assert families.module("widget").FAMILY == "widget"
    assert primary_metric(rec) == "widgets_per_s" and families.group_key(rec) == (1,)
    items = build_checklist(data)
    keys = [i.key for i in items]
    # placed by its order (35): right after pinned_pageable (31), before distribution (50); what lies between
    # (another family's item, e.g. input's at 40) has a larger order
    assert keys.index("widget") == keys.index("pinned_pageable") + 1 < keys.index("distribution")
    assert all(i.order > 35 for i in items[keys.index("widget") + 1:keys.index("distribution")])
    assert next(i for i in items if i.key == "widget").summary == "1 widget record(s)"
    plots = [p.key for p in render_all(data)]
    assert plots.index("widget") == plots.index("hostlink") + 1


# ----------------------------------------------------------------------------------------------
# group keys: the figure's series


def _figures(monkeypatch):
    from nodebench_reports import plots
    captured = []
    monkeypatch.setattr(plots, "_png", lambda fig: captured.append(fig) or b"png")
    return captured


def test_gemm_lines_are_its_group_keys(monkeypatch):
    figs = _figures(monkeypatch)
    doc = nbgen.make_result(families=("gemm",), n_gpus=1)
    families.module("gemm").plot_gemm(data_of(doc))
    # the square shape's precisions, over its small multiples (at most six lines a panel)
    squares = [a for a in figs[0].axes if a.get_visible() and a.get_title().endswith(", square")]
    drawn = sorted(ln.get_label() for a in squares for ln in a.get_lines() if ln.get_marker() == "o")
    keys = {families.group_key(r) for r in doc["records"]}
    assert drawn == sorted(k[2] for k in keys if k[1] == "square")


def test_hostlink_curves_are_its_group_keys():
    doc = nbgen.make_result(families=("hostlink",), n_gpus=2)
    curves = families.module("hostlink").hostlink_curves(data_of(doc))
    keys = {families.group_key(r) for r in doc["records"] if r["status"] == "ok"}
    assert {(w, d, m) for w, series in curves.items() for d, m in series} == keys


def test_nccl_group_key_is_collective_dtype_and_gpu_count():
    doc = nbgen.make_result(families=("nccl",), n_gpus=4)
    keys = {families.group_key(r) for r in doc["records"]}
    assert keys == {("all_reduce", "float", 2), ("all_reduce", "float", 4)}
    assert sorted(families.module("nccl").allreduce_curves(data_of(doc))) == [2, 4]


def test_a_record_of_no_known_family_has_no_group():
    assert families.group_key({"family": "nope", "params": {}, "gpus": [0]}) is None


def test_item_type_defaults_place_an_unplaced_item_before_the_run_item():
    assert Item("k", "t", PASS, "s").order < 1000


# ----------------------------------------------------------------------------------------------
# the example family's module (families/example.py; tests/example_family/README.md)

EXAMPLE_FILLS = {0: [(1 << 20, 20.0), (64 << 20, 200.0), (1 << 30, 180.0)], 1: [(1 << 20, 10.0)]}


def _example_doc(analysis=True):
    """A result file with hostlink records and the example's: the fills above, one failed fill on GPU 1."""
    doc = nbgen.make_result(families=("hostlink",), n_gpus=2)
    base = doc["records"][0]
    added = []
    for gpu, pts in EXAMPLE_FILLS.items():
        for size, gbps in pts:
            rec = copy.deepcopy(base)
            name = f"fill/{size >> 20}MiB"
            rec.update(id=f"example/{name}", family="example", case=name, gpus=[gpu], primary_metric="gbps",
                       params={"kernel": "fill", "bytes": size}, metrics={"gbps": gbps})
            added.append(rec)
    failed = copy.deepcopy(added[-1])
    failed.update(id="example/fill/64MiB", case="fill/64MiB", params={"kernel": "fill", "bytes": 64 << 20},
                  status="failed", reason="boom", reason_kind="error", metrics={"gbps": 999.0}, stats=None)
    added.append(failed)
    doc["records"] += added
    doc["summary"].update(ok=doc["summary"]["ok"] + len(added) - 1, failed=doc["summary"].get("failed", 0) + 1,
                          total=doc["summary"]["total"] + len(added))
    if analysis:
        doc.setdefault("analysis", {})["example_fill"] = [
            {"gpu": 0, "best_gbps": 200.0, "best_id": "example/fill/64MiB", "smallest_id": "example/fill/1MiB",
             "smallest_share": 0.1},
            {"gpu": 1, "best_gbps": 10.0, "best_id": "example/fill/1MiB", "smallest_id": "example/fill/1MiB",
             "smallest_share": 1.0}]
    return doc


def test_example_figure_draws_each_gpus_fills(monkeypatch):
    figs = _figures(monkeypatch)
    data = data_of(_example_doc())
    (plot,) = families.module("example").figures(data)
    assert plot.key == "example" and plot.png == b"png" and plot.missing is None
    (ax,) = [a for a in figs[0].axes if a.get_visible()]
    drawn = {ln.get_label(): list(zip(ln.get_xdata(), ln.get_ydata())) for ln in ax.get_lines()}
    # the failed fill is not drawn; each GPU's points by size
    assert drawn == {f"GPU {g} fill": sorted((float(b), v) for b, v in pts) for g, pts in EXAMPLE_FILLS.items()}
    keys = [p.key for p in render_all(data)]
    assert keys[-1] == "example" and keys[:-1] == [k for k in keys if k != "example"]


def test_example_item_is_the_files_analysis():
    doc = _example_doc()
    doc["analysis"]["example_fill"][1]["best_gbps"] = 321.0  # not what the records say: the file's word stands
    item = {i.key: i for i in build_checklist(data_of(doc))}["example_fill"]
    assert item.status == PASS and item.summary == "fastest fill 321.0 GB/s on GPU 1"
    assert item.evidence[0] == ("GPU 0: 200.0 GB/s at best (example/fill/64MiB); its smallest fill "
                                "(example/fill/1MiB) reaches 10% of that")
    old = {i.key: i for i in build_checklist(data_of(_example_doc(analysis=False)))}["example_fill"]
    assert old.status == NOT_MEASURED and old.summary.startswith("not in this file: analysis.example_fill")
    assert families.feeders("example_fill") == ["example"]


def test_reports_without_example_records_show_nothing_of_it():
    data = data_of(nbgen.make_result(n_gpus=2))
    assert families.module("example").figures(data) == [] and families.module("example").checklist_items(data) == []
    assert "example" not in [p.key for p in render_all(data)]
    assert "example_fill" not in [i.key for i in build_checklist(data)]
