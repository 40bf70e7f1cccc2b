"""The frameworks section of the report: `nodebench frameworks --bench` records (html --frameworks) beside
nodebench's train step of the same precision, layout and batch, and beside advise's data-parallel bound."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import nbgen
import pytest

from nodebench_reports.assemble import build_checklist
from nodebench_reports.checklist import NOT_MEASURED, PASS, WARN
from nodebench_reports.errors import ReportError
from nodebench_reports.families import frameworks
from nodebench_reports.load import Run, check_document, merge_runs, read_frameworks


def bench_record(mode, gpus, batch, precision, layout, ips, fw="torch", status="ok"):
    rec = {"id": f"frameworks/{fw}/{mode}/g{gpus}/b{batch}", "python": "/venv/bin/python", "framework": fw,
           "framework_version": "2.9.0", "mode": mode, "status": status,
           "params": {"framework": fw, "mode": mode, "gpus": gpus, "batch": batch, "precision": precision,
                      "layout": layout, "compiled": mode == "fast"},
           "metrics": {"images_per_s": ips} if status == "ok" else {}, "primary_metric": "images_per_s"}
    if status != "ok":
        rec["reason"] = "did not finish within 300 s (--bench-timeout); ended with its processes"
    return rec


def fw_doc(records):
    return {"schema": "nodebench.frameworks", "schema_version": 1, "node": {"gpus": []}, "environments": [],
            "checks": [], "records": records}


def data_with(records, advice=None):
    doc = nbgen.make_result(families=("train",), n_gpus=1)
    check_document(doc, "test.json")
    data = merge_runs([Run("test.json", doc)])
    data.frameworks = fw_doc(records)
    data.advice = advice
    return data, doc


def step_of(doc, precision, layout, batch):
    """nodebench's step images/s from the generated records, found here independently of the module."""
    return max(r["metrics"]["images_per_s"] for r in doc["records"] if r["family"] == "train" and r["status"] == "ok"
               and r["params"] == {"precision": precision, "layout": layout, "batch": batch})


def item(data):
    return {i.key: i for i in build_checklist(data)}["frameworks"]


def test_each_mode_beside_nodebench_step_of_the_same_precision_layout_and_batch():
    data, doc = data_with([bench_record("default", 1, 64, "tf32", "nchw", 700.0),
                           bench_record("fast", 1, 64, "fp16", "nhwc", 1500.0),
                           bench_record("amp", 1, 64, "fp16", "nchw", 900.0)])
    tf32, fp16 = step_of(doc, "tf32", "nchw", 64), step_of(doc, "fp16", "nhwc", 64)
    rows = {r.mode: r for r in frameworks.rows(data)}
    assert rows["default"].step_ratio() == pytest.approx(700.0 / tf32)
    assert rows["fast"].step_ratio() == pytest.approx(1500.0 / fp16)
    assert rows["amp"].step_ratio() is None  # nodebench measured no fp16/nchw step: nothing to compare with
    it = item(data)
    assert it.status == PASS
    assert f"default settings reach {700.0 / tf32:.2f}x nodebench's step" in it.summary
    assert f"fast settings reach {1500.0 / fp16:.2f}x nodebench's step" in it.summary
    assert any("no nodebench step of fp16/nchw at batch 64" in e for e in it.evidence)
    plot = frameworks.plot_frameworks(data)
    assert plot.png and plot.png[:4] == b"\x89PNG"


def test_a_batch_nodebench_did_not_run_is_not_compared_with_another():
    data, doc = data_with([bench_record("default", 1, 48, "tf32", "nchw", 700.0)])
    (row,) = frameworks.rows(data)
    assert row.step_ratio() is None and row.step_images_per_s is None
    assert "no nodebench step of the same precision" in item(data).summary


def test_data_parallel_mode_beside_advise_bound_per_gpu_step():
    advice = {"schema": "nodebench.advise", "schema_version": 1, "label": "predicted",
              "rows": [{"precision": "fp16", "layout": "nhwc", "batch": 64, "accumulation": 1, "gpus": 4,
                        "images_per_s": 5000.0, "efficiency": 0.9},
                       {"precision": "fp16", "layout": "nhwc", "batch": 64, "accumulation": 2, "gpus": 4,
                        "images_per_s": 5400.0, "efficiency": 0.95}]}
    data, doc = data_with([bench_record("fast", 4, 64, "fp16", "nhwc", 4000.0)], advice)
    (row,) = frameworks.rows(data)
    assert row.bound_images_per_s == 5000.0 and row.bound_ratio() == pytest.approx(0.8)
    assert row.step_ratio() == pytest.approx(4000.0 / 4 / step_of(doc, "fp16", "nhwc", 64))
    assert any("0.80x advise (predicted)'s bound of 5,000 images/s" in e for e in item(data).evidence)


def test_a_failed_mode_is_named_and_warns():
    data, _ = data_with([bench_record("default", 1, 64, "tf32", "nchw", 700.0),
                         bench_record("fast", 1, 64, "fp16", "nhwc", None, status="failed")])
    it = item(data)
    assert it.status == WARN and "1 mode(s) gave no rate" in it.summary
    assert any("no rate (did not finish within 300 s" in e for e in it.evidence)


def test_no_frameworks_report_no_section():
    doc = nbgen.make_result(families=("train",), n_gpus=1)
    data = merge_runs([Run("test.json", doc)])
    assert frameworks.figures(data) == [] and frameworks.checklist_items(data) == []
    data.frameworks = fw_doc([])
    assert item(data).status == NOT_MEASURED
    assert frameworks.plot_frameworks(data).missing == "no framework bench records"


def test_read_frameworks_rejects_other_documents(tmp_path):
    p = tmp_path / "f.json"
    for doc, text in (({"schema": "nodebench.advise", "schema_version": 1}, "not a nodebench frameworks report"),
                      ({"schema": "nodebench.frameworks", "schema_version": 2, "records": []}, "schema_version 2"),
                      ({"schema": "nodebench.frameworks", "schema_version": 1}, "checks: expected a list of checks"),
                      ({"schema": "nodebench.frameworks", "schema_version": 1, "checks": [{"id": "x"}]},
                       "checks: expected a list of checks"),
                      ({"schema": "nodebench.frameworks", "schema_version": 1, "checks": [], "records": {}},
                       "a report written with --bench"),
                      (fw_doc([{"params": {"gpus": 1, "batch": 64}, "status": "ok", "metrics": {"images_per_s": "x"}}]),
                       "records[0].metrics.images_per_s")):
        p.write_text(json.dumps(doc))
        with pytest.raises(ReportError, match=re.escape(text)):
            read_frameworks(str(p))
    p.write_text(json.dumps(fw_doc([bench_record("default", 1, 64, "tf32", "nchw", 700.0)])))
    assert read_frameworks(str(p))["records"][0]["metrics"]["images_per_s"] == 700.0


def test_html_with_frameworks_shows_the_section_and_bad_input_exits_2(tmp_path):
    res = tmp_path / "r.json"
    doc = nbgen.make_result(families=("train",), n_gpus=1)
    res.write_text(json.dumps(doc))
    fw = tmp_path / "fw.json"
    fw.write_text(json.dumps(fw_doc([bench_record("default", 1, 64, "tf32", "nchw", 700.0)])))
    out = tmp_path / "o"
    proc = subprocess.run([sys.executable, "-m", "nodebench_reports", "html", str(res), "-o", str(out),
                           "--frameworks", str(fw)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    html = (out / "report.html").read_text()
    assert 'id="plot-frameworks"' in html and 'id="check-frameworks"' in html
    want = f"{700.0 / step_of(doc, 'tf32', 'nchw', 64):.2f}x nodebench"
    assert want in html
    fw.write_text("{}")
    proc = subprocess.run([sys.executable, "-m", "nodebench_reports", "html", str(res), "-o", str(out),
                           "--frameworks", str(fw)], capture_output=True, text=True)
    assert proc.returncode == 2 and "not a nodebench frameworks report" in proc.stderr
