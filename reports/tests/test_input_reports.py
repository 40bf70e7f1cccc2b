"""The input family in the reports: the checklist item "the input pipeline keeps up" (cores needed to
feed 1, 2, 4, 8 GPUs at the training step's rate, from the measured decode curve) against values
computed by hand, and the decode figure."""

import copy

import nbgen
import pytest

from nodebench_reports.checklist import NOT_MEASURED, PASS, WARN
from nodebench_reports.assemble import build_checklist
from nodebench_reports.families import input as fam
from nodebench_reports.load import Run, check_document, merge_runs


def data_of(*docs):
    for d in docs:
        check_document(d, "test.json")
    return merge_runs([Run(f"test{i}.json", d) for i, d in enumerate(docs)])


def item(*docs):
    return {i.key: i for i in build_checklist(data_of(*docs))}["input_pipeline"]


def input_doc(points, cpus=8, series=("nchw", "fp32"), **kw):
    """A CPU-only run of the input family: `points` is {workers: images/s}."""
    doc = nbgen.make_result(families=(), n_gpus=0, **kw)
    for n, ips in points.items():
        rec = {"id": f"input/cpu/{series[0]}/{series[1]}/c{n}", "family": "input", "case": f"cpu/c{n}",
               "params": {"layout": series[0], "dtype": series[1], "placement": "spread", "cores": n}, "gpus": [],
               "status": "ok", "reason": None, "samples_s": [1 / ips] * 5, "stats": nbgen.stats_of([1 / ips] * 5),
               "metrics": {"images_per_s": ips}, "percent_of_peak": None, "flags": [],
               "details": {"cpus_available": cpus}}
        doc["records"].append(rec)
    doc["summary"].update(ok=len(doc["records"]), total=len(doc["records"]))
    return doc


def train_doc(rates, n_gpus=1):
    """Train records: {(precision, layout, batch): images/s}."""
    doc = nbgen.make_result(families=("train",), n_gpus=n_gpus, seed=3, analysis=False)
    doc["records"] = [r for r in doc["records"] if r["status"] == "ok"][:len(rates)]
    for r, ((prec, layout, b), ips) in zip(doc["records"], rates.items()):
        r["id"] = f"train/resnet50/{prec}/{layout}/b{b}"
        r["params"] = {"precision": prec, "layout": layout, "batch": b}
        r["metrics"] = dict(r["metrics"], images_per_s=ips)
    doc["summary"].update(ok=len(doc["records"]), total=len(doc["records"]), skipped=0)
    return doc


CURVE = {1: 100.0, 2: 190.0, 4: 300.0}


def test_workers_on_and_beyond_the_curve():
    c = fam.Curve("nchw/fp32", 8, sorted(CURVE.items()))
    assert fam.workers_for(c, 50) == (pytest.approx(0.5), False)
    assert fam.workers_for(c, 150) == (pytest.approx(1 + 50 / 90), False)
    assert fam.workers_for(c, 450) == (pytest.approx(4 + 150 / 75), True)
    dip = fam.Curve("nchw/fp32", 4, [(1, 100.0), (2, 90.0)])  # the running maximum
    assert fam.workers_for(dip, 150) == (pytest.approx(1.5), True)


def test_feed_rows_by_hand():
    c = fam.Curve("nchw/fp32", 8, sorted(CURVE.items()))
    one = fam.feed(c, 209, 1)  # 2 + 19/110 x 2 = 2.35 workers: 3 cores + 1 driving = 4 of 8
    assert (one["decode_cores"], one["cores_needed"], one["status"]) == (3, 4, "pass")
    four = fam.feed(c, 209, 4, fam.GpuDecode("input/gpu/x", "nchw/fp32", 2000.0, 0.5))
    assert (four["decode_cores"], four["cores_needed"], four["cores_short"], four["status"]) == (12, 16, 8, "warn")
    assert four["gpu_decode"]["gpu_time_share"] == pytest.approx(0.1045)
    assert four["gpu_decode"]["closes_gap"]  # keeps up, 2 x 4 cores fit in 8


def test_item_pass_warn_and_not_measured():
    assert item(train_doc({("fp32", "nchw", 64): 209.0})).status == NOT_MEASURED
    lone = item(input_doc(CURVE))
    assert lone.status == NOT_MEASURED and "no training step" in lone.summary
    # A GPU node with one GPU at 209 images/s: 4 cores of 8 (pass).
    ok = item(input_doc(CURVE), train_doc({("fp32", "nchw", 64): 209.0, ("fp32", "nchw", 128): 150.0}, n_gpus=1))
    assert ok.status == PASS, ok
    assert "fp32/nchw at 1 GPU(s): keeps up (4 cores needed of 8)" in ok.summary
    assert any("batch 64" in e for e in ok.evidence) and not any("batch 128" in e for e in ok.evidence)
    # Four GPUs on the node: judged at 4, 16 cores of 8.
    short = item(input_doc(CURVE), train_doc({("fp32", "nchw", 64): 209.0}, n_gpus=4))
    assert short.status == WARN
    assert "8 cores short (16 cores needed of 8)" in short.summary
    # Three GPUs are judged at two: 418 images/s, 4 + 118 / 75 = 5.6 workers, 6 + 2 = 8 of 8.
    assert "at 2 GPU(s): keeps up (8 cores needed of 8)" in item(
        input_doc(CURVE), train_doc({("fp32", "nchw", 64): 209.0}, n_gpus=3)).summary


def test_fp16_step_uses_its_curve_or_says_which():
    both = data_of(input_doc(CURVE), input_doc({1: 80.0}, series=("nhwc", "fp16"), seed=2))
    c, note = fam.curve_for(fam.curves(both), "fp16", "nhwc")
    assert c.series == "nhwc/fp16" and not note
    c, note = fam.curve_for(fam.curves(data_of(input_doc(CURVE))), "fp16", "nhwc")
    assert c.series == "nchw/fp32" and "no nhwc/fp16" in note


def test_plot_draws_curves_demand_and_host(tmp_path, monkeypatch):
    from nodebench_reports import plots
    figs = []
    monkeypatch.setattr(plots, "_png", lambda fig: figs.append(fig) or b"\x89PNG fake")
    p = fam.plot_input(data_of(input_doc(CURVE), train_doc({("fp32", "nchw", 64): 209.0})))
    assert p.png and not p.missing
    ax = figs[0].axes[0]
    labels = [ln.get_label() for ln in ax.get_lines()]
    assert "decode nchw/fp32" in labels and "this host: 8 CPUs" in labels
    # 1, 2, 4, 8 GPUs' demand drawn as horizontal lines at 209 x n.
    ys = sorted({round(ln.get_ydata()[0], 6) for ln in ax.get_lines() if len(set(ln.get_ydata())) == 1
                 and ln.get_label() != "this host: 8 CPUs"})
    assert [209.0 * n for n in (1, 2, 4, 8)] == pytest.approx([y for y in ys if y > 200])
    empty = fam.plot_input(data_of(train_doc({("fp32", "nchw", 64): 209.0})))
    assert empty.png is None and "not measured" in empty.missing


def test_committed_cpu_result_loads(tmp_path):
    """The generated full node (nbgen) passes: 4 GPUs at its fastest step against 112 CPUs."""
    doc = nbgen.make_result()
    it = item(copy.deepcopy(doc))
    assert it.status == PASS, (it.summary, it.evidence)
