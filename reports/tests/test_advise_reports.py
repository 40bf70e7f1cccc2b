"""Data-parallel training in the reports: train_dp records and `nodebench advise --json` documents in the
scaling plot and the checklist's strategy item (judged from training efficiency, never bus bandwidth alone)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

import nbgen
from nodebench_reports.checklist import FAIL, NOT_MEASURED, PASS, WARN
from nodebench_reports.assemble import build_checklist
from nodebench_reports.errors import ReportError
from nodebench_reports.families import train_dp
from nodebench_reports.load import Run, check_document, merge_runs, read_advice
from nodebench_reports.families.train_dp import plot_scaling


def data_of(doc, advice=None):
    check_document(doc, "test.json")
    data = merge_runs([Run("test.json", doc)])
    data.advice = advice
    return data


def distribution(data):
    return {i.key: i for i in build_checklist(data)}["distribution"]


def with_dp(doc, points, batch=256):
    """Add train_dp records: points = [(gpus, images_per_s, efficiency or None)]."""
    doc = copy.deepcopy(doc)
    template = next(r for r in doc["records"] if r["family"] == "nccl")
    for n, ips, eff in points:
        r = copy.deepcopy(template)
        r["family"] = "train_dp"
        r["case"] = f"resnet50/fp16/nhwc/b{batch}/g{n}"
        r["id"] = "train_dp/" + r["case"]
        r["gpus"] = list(range(n))
        r["params"] = {"precision": "fp16", "layout": "nhwc", "batch": batch, "gpus": n, "accumulation": 1}
        r["metrics"] = {"images_per_s": ips, "step_time_ms": n * batch / ips * 1e3}
        if eff is not None:
            r["metrics"]["scaling_efficiency_ratio"] = eff
        doc["records"].append(r)
    return doc


def advice_doc(points, label="predicted from measured results"):
    return {"schema": "nodebench.advise", "schema_version": 1, "label": label,
            "rows": [{"precision": "fp16", "layout": "nhwc", "batch": 256, "accumulation": 1, "gpus": n,
                      "images_per_s": ips, "efficiency": eff} for n, ips, eff in points]}


def test_two_gpu_node_is_no_longer_100_percent_by_construction():
    # Two GPUs scaled at 60% in a real training run: the item fails, whatever the bus bandwidth says.
    doc = with_dp(nbgen.make_result(families=("nccl",), n_gpus=2), [(1, 1000.0, None), (2, 1200.0, None)])
    item = distribution(data_of(doc))
    assert item.status == FAIL and "measured data-parallel training efficiency 60.0% at 2 GPUs" in item.summary


def test_measured_efficiency_wins_over_prediction_and_shows_the_error():
    doc = with_dp(nbgen.make_result(families=("nccl",), n_gpus=2), [(1, 1000.0, None), (2, 1900.0, 0.95)])
    item = distribution(data_of(doc, advice_doc([(1, 1000.0, 1.0), (2, 1800.0, 0.9)])))
    assert item.status == PASS and "measured" in item.summary and "95.0%" in item.summary
    assert any("-5.3%" in e for e in item.evidence)   # (1800 - 1900) / 1900


def test_percent_efficiency_is_read_as_a_fraction():
    doc = with_dp(nbgen.make_result(families=("nccl",), n_gpus=2), [(2, 1600.0, 80.0)])
    item = distribution(data_of(doc))
    assert item.status == WARN and "80.0%" in item.summary


def test_predicted_efficiency_from_advise_where_not_measured():
    doc = nbgen.make_result(families=("nccl",), n_gpus=4)
    item = distribution(data_of(doc, advice_doc([(1, 1000.0, 1.0), (4, 2400.0, 0.6)],
                                                 "predicted from profile, not measured")))
    assert item.status == FAIL and "predicted" in item.summary and "60.0% at 4 GPUs" in item.summary
    assert "not measured" in item.summary


def test_advise_statements_are_evidence():
    adv = advice_doc([(1, 1000.0, 1.0), (2, 1950.0, 0.975)])
    adv["recommendation"] = [{"topic": "strategy", "text": "Synchronous all-reduce data parallel ... 97.5%"}]
    item = distribution(data_of(nbgen.make_result(families=("nccl",), n_gpus=2), adv))
    assert item.status == PASS
    assert "advise (strategy): Synchronous all-reduce data parallel ... 97.5%" in item.evidence


def test_slow_all_reduce_fails_through_the_training_estimate():
    # Judged from training efficiency: dividing the all-reduce by 30 leaves this synthetic node's ResNet-50
    # step (hundreds of ms) almost unaffected, so it still passes, honestly; dividing it by 1000 makes the
    # gradient all-reduce longer than the step and the item no longer passes.
    doc = nbgen.make_result(n_gpus=2)
    assert distribution(data_of(doc)).status == PASS
    def slowed(factor):
        d = copy.deepcopy(doc)
        for r in d["records"]:
            if r["family"] == "nccl":
                for k in ("busbw_gbps", "algbw_gbps"):
                    if k in r["metrics"]:
                        r["metrics"][k] /= factor
        return distribution(data_of(d))

    assert slowed(30).status == PASS
    item = slowed(1000)
    assert item.status in (WARN, FAIL) and "training efficiency" in item.summary, item.summary


def test_scaling_plot_shows_measured_predicted_and_ideal():
    doc = with_dp(nbgen.make_result(families=("nccl",), n_gpus=2), [(1, 1000.0, None), (2, 1900.0, None)])
    data = data_of(doc, advice_doc([(1, 1000.0, 1.0), (2, 1950.0, 0.975), (4, 3800.0, 0.95)]))
    series = train_dp.dp_series(data)
    assert len(series) == 1
    s = series[0]
    assert [q.gpus for q in s.measured] == [1, 2] and [q.gpus for q in s.predicted] == [1, 2, 4]
    assert s.one_gpu_ips == 1000.0 and s.measured[1].efficiency == pytest.approx(0.95)
    plot = plot_scaling(data)
    assert plot.png and "measured" in plot.caption and "ideal" in plot.caption


def test_read_advice_rejects_other_documents(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": "nodebench.result"}))
    with pytest.raises(ReportError, match="not a nodebench advise document"):
        read_advice(str(bad))
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps({"schema": "nodebench.advise", "schema_version": 1, "rows": [{"gpus": "two"}]}))
    with pytest.raises(ReportError, match=r"rows\[0\].gpus"):
        read_advice(str(rows))
    good = tmp_path / "good.json"
    good.write_text(json.dumps(advice_doc([(2, 1.0, 0.5)])))
    assert read_advice(str(good))["rows"][0]["gpus"] == 2


def test_html_with_bad_advise_exits_2(tmp_path):
    res = tmp_path / "r.json"
    res.write_text(json.dumps(nbgen.make_result(families=("nccl",), n_gpus=2)))
    adv = tmp_path / "a.json"
    adv.write_text("{}")
    proc = subprocess.run([sys.executable, "-m", "nodebench_reports", "html", str(res), "-o", str(tmp_path / "o"),
                           "--advise", str(adv)], capture_output=True, text=True)
    assert proc.returncode == 2 and "not a nodebench advise document" in proc.stderr
