"""`nodebench-report html`: page content, plots, checklist items, absent families."""

from __future__ import annotations

import base64
import copy
import re

import pytest

import nbgen
from conftest import PLOT_KEYS, REPO
from nodebench_reports.checklist import FAIL, NOT_MEASURED, PASS, WARN
from nodebench_reports.assemble import build_checklist
from nodebench_reports.load import Run, check_document, merge_runs

CHECK_KEYS = ["compute_capability", "pcie", "h2d", "pinned_pageable", "input_pipeline", "distribution", "mixed_precision", "clocks",
              "memory", "fusion", "host", "run"]


def data_of(doc):
    check_document(doc, "test.json")
    return merge_runs([Run("test.json", doc)])


def checklist_of(doc) -> dict:
    return {item.key: item for item in build_checklist(data_of(doc))}


def images(html: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r'<img [^>]*src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)]


def test_full_report_has_every_plot_and_item(full_report):
    html = (full_report / "report.html").read_text(encoding="utf-8")
    pngs = images(html)
    assert len(pngs) == len(PLOT_KEYS)
    assert all(p.startswith(b"\x89PNG\r\n\x1a\n") and len(p) > 5000 for p in pngs)
    for key in PLOT_KEYS:
        assert f'<figure id="plot-{key}">' in html
    statuses = dict(re.findall(r'<tr id="check-([a-z0-9_]+)" data-status="([a-z ]+)">', html))
    assert list(statuses) == CHECK_KEYS
    assert set(statuses.values()) == {PASS}, statuses   # a healthy generated node passes everything
    # self-contained: nothing is loaded from elsewhere
    assert not re.search(r'(src|href)="(?!data:|#)', html)   # data: URIs and links within the page only
    assert "<script" not in html


def test_full_report_environment_and_markdown(full_report):
    html = (full_report / "report.html").read_text(encoding="utf-8")
    for text in ("node01", "NVIDIA H200", "570.86.15", "80-real;90-real;90", "Gen5 x16", "Intel(R) Xeon(R)"):
        assert text in html
    md = (full_report / "summary.md").read_text(encoding="utf-8")
    assert md.startswith("# nodebench report: node01 (4x NVIDIA H200)")
    assert "| item | status | evidence |" in md
    assert md.count("| pass |") == len(CHECK_KEYS)
    assert "out of memory" in md                       # the OOM record is listed under "Not ok"


def test_absent_families_are_not_measured(cli, gemm_only_file, tmp_path):
    r = cli("html", gemm_only_file, "-o", tmp_path)
    assert r.rc == 0, r
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert len(images(html)) == 2                      # GEMM and the FP16/FP32 bars (its analysis.fp16_vs_fp32)
    for key in ("conv", "hostlink", "p2p", "allreduce", "scaling"):
        m = re.search(rf'<div class="missing" id="plot-{key}" data-status="not measured">.*?</div>', html, re.S)
        assert m and "not measured" in m.group(0), key
    statuses = dict(re.findall(r'<tr id="check-([a-z0-9_]+)" data-status="([a-z ]+)">', html))
    for key in ("h2d", "pinned_pageable", "distribution", "memory"):
        assert statuses[key] == NOT_MEASURED, key
    assert statuses["mixed_precision"] == PASS and statuses["compute_capability"] == PASS
    assert "not measured: no hostlink records" in html


def test_file_without_records_renders(cli, tmp_path):
    path = nbgen.write(nbgen.make_result(families=()), tmp_path / "empty.json")
    r = cli("html", path, "-o", tmp_path / "out")
    assert r.rc == 0, r
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert len(images(html)) == 0 and html.count('data-status="not measured"') >= len(PLOT_KEYS)


def test_several_files_of_one_node_are_merged(cli, tmp_path):
    a = nbgen.write(nbgen.make_result(families=("gemm",), n_gpus=1, seed=1, started_at="2025-06-01T01:00:00Z"),
                    tmp_path / "a.json")
    b = nbgen.write(nbgen.make_result(families=("hostlink", "gemm"), n_gpus=1, seed=2, started_at="2025-06-01T03:00:00Z"),
                    tmp_path / "b.json")
    r = cli("html", a, b, "-o", tmp_path / "out")
    assert r.rc == 0, r
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert '<figure id="plot-gemm">' in html and '<figure id="plot-hostlink">' in html
    assert "measured again in a later file" in html


def test_failed_records_are_shown(cli, tmp_path):
    doc = nbgen.make_result(families=("gemm",), n_gpus=1)
    doc = nbgen.set_status(doc, "gemm/fp8/cublaslt/square_4096", "wrong", "max_error_ratio 7.5 exceeds 1")
    r = cli("html", nbgen.write(doc, tmp_path / "w.json"), "-o", tmp_path / "out")
    assert r.rc == 0
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "max_error_ratio 7.5 exceeds 1" in html
    assert re.search(r'<tr id="check-run" data-status="fail">', html)


def test_text_is_escaped(cli, tmp_path):
    doc = nbgen.make_result(families=("p2p",), n_gpus=2)
    doc["environment"]["host"]["hostname"] = "<b>node&1</b>"
    r = cli("html", nbgen.write(doc, tmp_path / "x.json"), "-o", tmp_path / "out")
    assert r.rc == 0
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "&lt;b&gt;node&amp;1&lt;/b&gt;" in html and "<b>node" not in html


# ----------------------------------------------------------------------------------------------
# checklist items


@pytest.mark.parametrize("status, shown", [("sass", PASS), ("ptx", WARN), ("none", FAIL), ("unknown", WARN)])
def test_the_recorded_build_verdict_is_shown(status, shown):
    """The checklist shows the verdict the binary recorded per GPU (its rule: harness/node/arch_rule.hpp,
    tested against tests/data/arch_rule.json) and does not judge the architectures again: the same
    architectures with another recorded verdict show that one."""
    reason = f"the binary's words for {status}"
    doc = nbgen.make_result(families=(), cuda_architectures="80-real", n_gpus=2, build_support=(status, None, reason))
    item = checklist_of(doc)["compute_capability"]
    assert item.status == shown
    assert all(f"{shown} - {reason}" in e for e in item.evidence if e.startswith("GPU ")), item.evidence
    assert "'80-real'" in item.summary


def test_one_gpu_without_code_fails_the_item():
    doc = nbgen.make_result(families=(), n_gpus=2)
    doc["environment"]["gpus"][1]["build_support"] = {"status": "none", "arch": None,
                                                      "reason": "no code for this GPU in the build"}
    item = checklist_of(doc)["compute_capability"]
    assert item.status == FAIL and "1 pass, 1 fail" in item.summary.lower()


def test_a_file_without_the_verdict_is_not_judged_again():
    """A file from before the field: not measured, naming the field, whatever its architectures say."""
    for archs in ("80-real", "80-real;90-real;90"):
        doc = nbgen.make_result(families=(), cuda_architectures=archs, n_gpus=2, build_support=None)
        item = checklist_of(doc)["compute_capability"]
        assert item.status == NOT_MEASURED
        assert "environment.gpus[].build_support" in item.summary and "not recorded" in item.summary
        assert len(item.evidence) == 2


def test_no_gpu_with_cuda_error_fails():
    doc = nbgen.make_result(families=())
    doc["environment"]["gpus"] = []
    doc["environment"]["cuda_error"] = "cudaErrorNoDevice: no CUDA-capable device is detected"
    item = checklist_of(doc)["compute_capability"]
    assert item.status == FAIL and "no CUDA-capable device" in item.summary


def test_pcie_width_and_generation():
    assert checklist_of(nbgen.make_result(families=(), pcie_width=8))["pcie"].status == FAIL
    item = checklist_of(nbgen.make_result(families=(), pcie_gen=4))["pcie"]
    assert item.status == WARN and "Gen4 x16 of Gen5 x16" in " ".join(item.evidence)
    assert checklist_of(nbgen.make_result(families=(), nvml=False))["pcie"].status == NOT_MEASURED


def test_h2d_against_link():
    doc = nbgen.make_result(families=("hostlink",), n_gpus=1)
    assert checklist_of(doc)["h2d"].status == PASS
    slow = copy.deepcopy(doc)
    for r in slow["records"]:
        if r["params"]["direction"] == "h2d" and r["params"]["memory"] == "pinned":
            r["metrics"]["gbps"] *= 0.5
            r["metrics"]["link_pct"] *= 0.5
    item = checklist_of(slow)["h2d"]
    assert item.status == FAIL and "44% of the link" in " ".join(item.evidence)


def test_pinned_vs_pageable_headroom_uses_training_rate():
    full = checklist_of(nbgen.make_result(n_gpus=1))["pinned_pageable"]
    assert full.status == PASS and "headroom" in " ".join(full.evidence)
    alone = checklist_of(nbgen.make_result(families=("hostlink",), n_gpus=1))["pinned_pageable"]
    assert alone.status == WARN and "41% of pinned" in " ".join(alone.evidence)


def test_distribution_strategy():
    item = checklist_of(nbgen.make_result(n_gpus=4))["distribution"]
    assert item.status == PASS and "data parallel" in item.summary and "4 GPUs" in item.summary
    assert checklist_of(nbgen.make_result(families=("gemm",), n_gpus=1))["distribution"].status == NOT_MEASURED
    doc = nbgen.make_result(families=("nccl",), n_gpus=8)
    for r in doc["records"]:            # make 8 GPUs scale badly: half the bus bandwidth of 2 GPUs
        if r["params"]["ngpus"] == 8:
            for k in ("busbw_gbps", "algbw_gbps"):
                r["metrics"][k] *= 0.5
    item = checklist_of(doc)["distribution"]    # bus bandwidth alone no longer judges a strategy
    assert item.status == NOT_MEASURED and "bus bandwidth alone" in item.summary


def test_mixed_precision_verdicts():
    doc = nbgen.make_result(n_gpus=1)
    assert checklist_of(doc)["mixed_precision"].status == PASS
    doc["analysis"]["fp16_vs_fp32"][0]["verdict"] = "does_not_pay"
    item = checklist_of(doc)["mixed_precision"]
    assert item.status == WARN and "does not pay" in item.summary
    assert checklist_of(nbgen.make_result(families=("hostlink",)))["mixed_precision"].status == NOT_MEASURED


def test_clocks_and_throttling():
    assert checklist_of(nbgen.make_result(families=("gemm",), n_gpus=1))["clocks"].status == PASS
    item = checklist_of(nbgen.make_result(families=("gemm",), n_gpus=1, throttle=True))["clocks"]
    assert item.status == FAIL and "sw_thermal_slowdown" in item.summary and "throttled" in item.summary
    # running at the software power limit is normal under full load: noted, not a failure
    item = checklist_of(nbgen.make_result(families=("gemm",), n_gpus=1, power_capped=True))["clocks"]
    assert item.status == PASS and "at the power limit" in item.summary
    assert "sw_power_cap (power" in " ".join(item.evidence)
    doc = nbgen.make_result(families=("gemm",), n_gpus=1)
    for r in doc["records"]:
        r["clocks"]["sm_mhz_during"] = 1400.0     # 71% of the 1980 MHz maximum
    item = checklist_of(doc)["clocks"]
    assert item.status == WARN and "below 85%" in item.summary
    item = checklist_of(nbgen.make_result(families=("gemm",), n_gpus=1, nvml=False))["clocks"]
    assert item.status == NOT_MEASURED and "NVML not available" in item.summary


def test_memory_at_recommended_batch():
    doc = nbgen.make_result(families=("conv",), n_gpus=1)
    assert checklist_of(doc)["memory"].status == PASS
    doc["analysis"]["batch_recommendation"][0]["memory_fraction"] = 0.97
    assert checklist_of(doc)["memory"].status == FAIL
    # a file without analysis.batch_recommendation (an older nodebench): said so, never recommended again here
    old = checklist_of(nbgen.make_result(families=("conv",), n_gpus=1, analysis=False))["memory"]
    assert old.status == NOT_MEASURED and old.summary.startswith("not in this file: analysis.batch_recommendation")
    assert "nodebench run --family conv" in old.summary and not old.evidence
