"""The report's first screen (families/first_screen.py, families/capacity_scaling.py): the verdicts, the capacity table with images
per joule, the predicted scaling (checked against `nodebench advise --json` on the P40 fixture,
committed under results/cpu/2026-12-07-report-first-screen/) and what to fix, in order."""

from __future__ import annotations

import copy
import gzip
import json
import re
from html import unescape
from pathlib import Path

import pytest

from conftest import REPO
from nodebench_reports.families import capacity_scaling as scaling, first_screen as summary
from nodebench_reports.assemble import build_checklist
from nodebench_reports.checklist import FAIL, WARN
from nodebench_reports.cli import main
from nodebench_reports.htmlpage import render_html
from nodebench_reports.load import Run, check_document, merge_runs

P40 = REPO / "tests" / "data" / "p40_result.json"
H200 = REPO / "results" / "h200" / "2026-12-03-estimate" / "full-97ed15d-a.json.gz"
VALIDATE = REPO / "results" / "h200" / "2026-11-29-validate-l2" / "validate.json.gz"
ADVISE = REPO / "results" / "cpu" / "2026-12-07-report-first-screen"
BOTTLENECK = {"compute": scaling.COMPUTE, "gradient all-reduce": scaling.ALLREDUCE,
              "host input pipeline": scaling.PCIE}


def doc_of(path: Path) -> dict:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def data_of(doc: dict):
    check_document(doc, "test.json")
    return merge_runs([Run("test.json", doc)])


def page(data) -> str:
    return render_html(data, build_checklist(data), [])


@pytest.mark.parametrize("advice", sorted(p.name for p in ADVISE.glob("advise_p40_fixture*.json")))
def test_scaling_model_matches_advise_on_the_p40_fixture(advice):
    doc = json.loads((ADVISE / advice).read_text())
    inp = scaling.gather(doc_of(P40)["records"])
    assert doc["rows"]
    for r in doc["rows"]:
        p = scaling.predict(inp, r["precision"], r["layout"], r["batch"], r["gpus_per_node"], r["nodes"],
                            doc["inputs"]["inter_node_gbps"])
        assert not p.missing, (r, p)
        assert p.images_per_s == pytest.approx(r["images_per_s"], rel=1e-9), (r, p)
        assert p.efficiency == pytest.approx(r["efficiency"], rel=1e-9), (r, p)
        assert p.exposed_ms == pytest.approx(r["exposed_comm_ms"], rel=1e-9, abs=1e-12), (r, p)
        assert p.limit == BOTTLENECK[r["bottleneck"]], (r, p)


def test_the_committed_references_cover_both_limits():
    seen = {r["bottleneck"] for p in ADVISE.glob("advise_p40_fixture*.json") for r in json.loads(p.read_text())["rows"]}
    assert {"compute", "gradient all-reduce"} <= seen
    nodes = {r["nodes"] for p in ADVISE.glob("advise_p40_fixture*.json") for r in json.loads(p.read_text())["rows"]}
    assert nodes == {1, 2, 4, 8}


def test_one_gpu_run_says_why_it_cannot_predict_more_gpus():
    data = data_of(doc_of(H200))
    rows = summary.capacity(data)
    use = next(c for c in rows if c.use)
    preds, _ = summary.scaling_rows(data, use)
    assert [(p.gpus, p.nodes) for p in preds][:4] == [(1, 1), (2, 1), (4, 1), (8, 1)]
    assert preds[0].images_per_s == pytest.approx(use.images_per_s)
    assert all(p.images_per_s is None and "all-reduce over two or more GPUs" in p.missing for p in preds[1:])
    html = page(data)
    assert "not predicted: no measured all-reduce over two or more GPUs" in unescape(html)


def test_host_decode_limits_the_h200_step():
    # The H200 run's input family: 16 CPUs, the nhwc/fp16 decode curve; one core drives the GPU.
    doc = doc_of(H200)
    data = data_of(doc)
    use = next(c for c in summary.capacity(data) if c.use)
    curve = next(c for c in doc["analysis"]["input_pipeline"]["curves"] if c["series"] == f"{use.layout}/fp16")
    top = max(curve["points"], key=lambda q: q["cores"])
    can = (curve["host_cpus"] - 1) * top["per_core_images_per_s"]
    p = summary.scaling_rows(data, use)[0][0]
    assert p.decode_images_per_s == pytest.approx(can)
    assert p.limit == (scaling.DECODE if use.images_per_s > can else scaling.COMPUTE)


def test_capacity_table_from_train_recommendation():
    doc = doc_of(H200)
    data = data_of(doc)
    rows = summary.capacity(data)
    recs = doc["analysis"]["train_recommendation"]
    assert [c.precision for c in rows] == sorted({e["precision"] for e in recs}, key=lambda p: ["fp16", "tf32", "fp32"].index(p))
    for c in rows:
        best = max((e for e in recs if e["precision"] == c.precision), key=lambda e: e["images_per_s"])
        assert (c.layout, c.batch) == (best["layout"], best["batch"])
        assert c.images_per_s == pytest.approx(best["images_per_s"])
        rec = next(r for r in doc["records"] if r["id"] == f"train/resnet50/{c.precision}/{c.layout}/b{c.batch}")
        assert c.peak_memory_bytes == rec["metrics"]["peak_memory_bytes"]
    assert [c.use for c in rows].count(True) == 1
    assert max(rows, key=lambda c: c.images_per_s).use
    html = page(data)
    table = re.search(r'<table id="capacity".*?</table>', html, re.S).group(0)
    assert f"{rows[0].images_per_s:,.0f}" in table and "use this" in table


def test_capacity_per_node_is_the_prediction_at_the_node_gpu_count():
    data = data_of(doc_of(P40))
    ref = json.loads((ADVISE / "advise_p40_fixture.json").read_text())
    (c,) = summary.capacity(data)
    want = next(r for r in ref["rows"] if r["batch"] == c.batch and r["gpus"] == 4)
    assert c.node_images_per_s == pytest.approx(want["images_per_s"], rel=1e-9)
    assert "predicted at 4 GPUs" in c.node_how


def with_power(doc: dict, watts: float) -> dict:
    doc = copy.deepcopy(doc)
    for r in doc["records"]:
        if r["family"] == "train" and r["status"] == "ok":
            r["metrics"]["board_power_w"] = watts
            r.setdefault("details", {})["energy"] = {"method": "sampled_power", "energy_j": watts * 2.0, "seconds": 2.0, "samples": 100}
    return doc


def test_images_per_joule_beside_images_per_second():
    doc = with_power(doc_of(P40), 200.0)
    data = data_of(doc)
    (c,) = summary.capacity(data)
    rec = next(r for r in doc["records"] if r["id"] == c.source)
    assert c.images_per_j == pytest.approx(rec["metrics"]["images_per_s"] / 200.0)
    row = re.search(r'<tr data-precision="fp32".*?</tr>', page(data), re.S).group(0)
    assert f'<td class="num ipj">{rec["metrics"]["images_per_s"] / 200.0:.2f}</td>' in row and "200 W" in row


def test_images_per_joule_absent_without_board_power():
    data = data_of(doc_of(P40))
    (c,) = summary.capacity(data)
    assert c.board_power_w is None and c.images_per_j is None
    assert summary.images_per_joule(100.0, 0.0) is None and summary.images_per_joule(None, 50.0) is None
    row = re.search(r'<tr data-precision="fp32".*?</tr>', page(data), re.S).group(0)
    assert '<td class="num ipj">-</td>' in row and "not measured" in row


def with_checks(doc: dict) -> dict:
    doc = copy.deepcopy(doc)
    v = doc["analysis"]["validation"]
    v["benchmarks"] += [
        {"id": "burn.sustained", "gpu": 0, "severity": "ok", "summary": "sustained 95% of the first minute", "fix": None},
        {"id": "burn.slowdown", "gpu": 0, "severity": "warn", "summary": "12 s in thermal slowdown", "fix": "check the airflow"},
    ]
    v["doctor"][0] = dict(v["doctor"][0], severity="fail", summary="planted failure", fix="reseat the GPU")
    v["verdict"] = "fail"
    return doc


def test_verdicts_from_validate_and_burn_with_their_evidence():
    doc = with_checks(doc_of(VALIDATE))
    data = data_of(doc)
    vs = {v.key: v for v in summary.verdicts(data, build_checklist(data))}
    assert vs["validate"].status == FAIL and vs["validate"].line.startswith("fail")
    assert vs["burn"].status == WARN and "burn.slowdown" in vs["burn"].line
    html = page(data)
    ev = re.search(r'<details id="ev-validate".*?</details>', html, re.S).group(0)
    v = doc["analysis"]["validation"]
    for c in v["doctor"] + v["benchmarks"]:
        assert (c["id"] in ev) != c["id"].startswith("burn."), c["id"]   # every check, burn's apart
    assert "burn.slowdown" in re.search(r'<details id="ev-burn".*?</details>', html, re.S).group(0)


def test_fixes_in_order_failures_first():
    doc = with_checks(doc_of(VALIDATE))
    data = data_of(doc)
    checklist = build_checklist(data)
    fx = summary.fixes(data, checklist)
    assert fx[0].status == FAIL and fx[0].text == "reseat the GPU"
    assert fx[1].title == "burn.slowdown" and fx[1].text == "check the airflow"
    ranks = [{FAIL: 0, WARN: 1}[f.status] for f in fx[2:]]
    assert ranks == sorted(ranks)
    items = [i for i in checklist if i.status in (FAIL, WARN)]
    assert len(fx) == 2 + len(items)


def test_checklist_evidence_folds_and_nothing_is_dropped():
    data = data_of(doc_of(H200))
    html = page(data)
    for item in build_checklist(data):
        row = re.search(rf'<tr id="check-{re.escape(item.key)}".*?</tr>', html, re.S).group(0)
        if item.evidence:
            fold = re.search(r"<details>.*?</details>", row, re.S).group(0)
            assert all(f"<li>{e}</li>" in unescape(fold) for e in item.evidence), item.key
    assert "PASS" not in html.split('<section id="summary"')[0]   # the summary opens the page
    assert html.index('id="summary"') < html.index('id="checklist"') < html.index('id="plots"')


def test_checklist_verdict_always_there():
    data = data_of(doc_of(P40))
    vs = summary.verdicts(data, build_checklist(data))
    assert vs[0].key == "checklist" and vs[0].href == "#checklist"
    assert [v.key for v in vs] == ["checklist"]   # the fixture has no validation and no burn


def test_inter_node_gbps_is_checked(cli, capsys, tmp_path):
    for bad in ("-1", "0", "fast", "inf"):
        with pytest.raises(SystemExit) as exc:
            main(["html", str(P40), "-o", str(tmp_path / "o"), "--inter-node-gbps", bad])
        assert exc.value.code == 2 and "--inter-node-gbps" in capsys.readouterr().err
    assert cli("html", str(P40), "-o", str(tmp_path / "o"), "--inter-node-gbps", "12.5").rc == 0
    html = (tmp_path / "o" / "report.html").read_text()
    ref = json.loads((ADVISE / "advise_p40_fixture_8nodes_12.5gbps.json").read_text())
    want = next(r for r in ref["rows"] if r["batch"] == 64)
    scale = re.search(r'<table id="scaling".*?</table>', html, re.S).group(0)
    assert "8 nodes (32)" in scale and f"{want['images_per_s']:,.0f}" in scale


def frameworks_doc() -> dict:
    """A `nodebench frameworks --out` document as the binary writes it (its checks: Check::to_json)."""
    return {"schema": "nodebench.frameworks", "schema_version": 1, "verdict": "fail", "environments": [],
            "checks": [
                {"id": "framework.python", "gpu": None, "severity": "info", "evidence": "found by --python",
                 "fix": None, "summary": "/usr/bin/python3, Python 3.11.2"},
                {"id": "framework.torch.arch", "gpu": 0, "severity": "fail", "evidence": "sm_61 not in the wheel",
                 "fix": "pip install torch==2.5.1 (the last wheel with sm_61)", "summary": "torch 2.9 has no code for cc 6.1"},
            ]}


def test_framework_check_verdict_evidence_and_fix(cli, tmp_path):
    fw = tmp_path / "frameworks.json"
    fw.write_text(json.dumps(frameworks_doc()))
    assert cli("html", str(P40), "-o", str(tmp_path / "o"), "--frameworks", str(fw)).rc == 0
    html = unescape((tmp_path / "o" / "report.html").read_text())
    line = re.search(r'<div class="verdict" data-key="frameworks" data-status="fail">.*?</div>', html, re.S).group(0)
    assert "Framework check" in line and "framework.torch.arch GPU 0: fail" in line
    ev = re.search(r'<details id="ev-frameworks".*?</details>', html, re.S).group(0)
    assert "framework.python" in ev and "framework.torch.arch" in ev
    fixes = re.search(r'<ol id="fixes".*?</ol>', html, re.S).group(0)
    first = re.search(r"<li .*?</li>", fixes, re.S).group(0)
    assert "framework.torch.arch" in first and "pip install torch==2.5.1" in first


@pytest.mark.parametrize("change", [{"schema": "nodebench.result"}, {"schema_version": 2},
                                    {"checks": [{"id": "x", "severity": "bad"}]}, {"checks": None}])
def test_framework_document_is_checked(cli, tmp_path, change):
    fw = tmp_path / "frameworks.json"
    fw.write_text(json.dumps(dict(frameworks_doc(), **change)))
    r = cli("html", str(P40), "-o", str(tmp_path / "o"), "--frameworks", str(fw))
    assert r.rc == 2 and str(fw) in r.err, r


def test_markdown_summary_has_the_capacity_table(tmp_path, cli):
    doc = with_power(doc_of(P40), 200.0)
    f = tmp_path / "p40.json"
    f.write_text(json.dumps(doc))
    assert cli("html", str(f), "-o", str(tmp_path / "o")).rc == 0
    md = (tmp_path / "o" / "summary.md").read_text()
    (c,) = summary.capacity(data_of(doc))
    row = next(line for line in md.splitlines() if line.startswith("| fp32 |"))
    assert f"| {c.images_per_s:,.0f} |" in row and f"| {c.images_per_s / 200.0:.2f} |" in row and "use this" in row
