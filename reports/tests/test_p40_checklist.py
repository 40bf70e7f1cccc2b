"""The report's checklist for a P40 node, from the P40 result fixture (tests/data/p40_result.json,
written by tests/data/make_p40_fixtures.py: four Tesla P40, compute capability 6.1, PCIe Gen3 x16,
two sockets; synthetic figures from public sources, docs/P40.md).

What a healthy P40 node must show: an sm_61 build that runs natively, PCIe links that read Gen1 at
idle (a warning that says to check under load, not a failure), the published bandwidthTest
host-to-device rate passing, FP16 that does not pay with INT8 recommended, power-capped but not
throttled clocks, and an all-reduce over PCIe called PCIe-class (judged against the maximum link,
not the idle one).
"""

from __future__ import annotations

import copy
import json

import pytest

from conftest import REPO

from nodebench_reports.checklist import FAIL, NOT_MEASURED, PASS, WARN
from nodebench_reports.assemble import build_checklist
from nodebench_reports.load import Run, check_document, merge_runs

FIXTURE = REPO / "tests" / "data" / "p40_result.json"
GEN3_X16 = 8.0 * 16 * 128 / 130 / 8  # GB/s one direction


@pytest.fixture(scope="module")
def p40_doc() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def checklist(doc: dict) -> dict:
    check_document(doc, "p40_result.json")
    return {i.key: i for i in build_checklist(merge_runs([Run("p40_result.json", doc)]))}


def test_fixture_is_a_valid_p40_result(p40_doc, validate):
    validate(p40_doc)
    assert "SYNTHETIC" in p40_doc["note"]
    gpus = p40_doc["environment"]["gpus"]
    assert [g["compute_capability"] for g in gpus] == ["6.1"] * 4
    assert {g["name"] for g in gpus} == {"Tesla P40"}


def test_build_verdict_is_the_recorded_one(p40_doc):
    """The file predates environment.gpus[].build_support: the item says so rather than judging
    61-real again; with the verdicts the binary records for it (sm_61 SASS on cc 6.1; nothing a P40
    runs in a build for the CUDA 13 architectures: tests/data/arch_rule.json), it shows them."""
    item = checklist(p40_doc)["compute_capability"]
    assert item.status == NOT_MEASURED and "build_support" in item.summary
    doc = copy.deepcopy(p40_doc)
    for g in doc["environment"]["gpus"]:
        g["build_support"] = {"status": "sass", "arch": "sm_61", "reason": "native code (sm_61)"}
    item = checklist(doc)["compute_capability"]
    assert item.status == PASS
    assert sum("native code (sm_61)" in e for e in item.evidence) == 4
    doc["nodebench"]["cuda_architectures"] = "75-real;80-real;90-real;90"
    for g in doc["environment"]["gpus"]:
        g["build_support"] = {"status": "none", "arch": None, "reason": "no code for this GPU in the build"}
    assert checklist(doc)["compute_capability"].status == FAIL


def test_idle_links_warn_but_do_not_fail(p40_doc):
    item = checklist(p40_doc)["pcie"]
    assert item.status == WARN
    assert all("Gen1 x16 of Gen3 x16" in e and "under load" in e for e in item.evidence)
    doc = copy.deepcopy(p40_doc)
    doc["environment"]["gpus"][2]["pcie"]["width_current"] = 8
    assert checklist(doc)["pcie"].status == FAIL  # a lost lane is a fault even at idle


def test_published_host_to_device_rate_passes(p40_doc):
    item = checklist(p40_doc)["h2d"]
    # bandwidthTest on a P40: 11.84 GB/s = 75.2% of Gen3 x16, at the checklist's 75% mark.
    assert 11.84 / GEN3_X16 * 100 >= 75.0
    assert item.status == PASS, item.evidence
    assert len(item.evidence) == 4


def test_fp16_does_not_pay_and_int8_is_recommended(p40_doc):
    item = checklist(p40_doc)["mixed_precision"]
    assert item.status == WARN
    assert "FP16 does not pay on 1 of 1 GPU(s)" in item.summary
    assert "train in FP32; for inference use INT8 (DP4A)" in item.summary
    assert any("compute capability 6.1: FP16 arithmetic at 1/64 of FP32" in e for e in item.evidence)


def test_power_capped_is_normal_not_throttled(p40_doc):
    item = checklist(p40_doc)["clocks"]
    assert item.status == PASS
    assert "at the power limit" in item.summary


def test_all_reduce_over_pcie_is_called_pcie_class(p40_doc):
    item = checklist(p40_doc)["distribution"]
    # 5.4 GB/s against one direction of Gen3 x16 (15.75), not the Gen1 link (4.0) read at idle.
    line = next(e for e in item.evidence if e.startswith("bus bandwidth"))
    assert "PCIe/host-class" in line, line
    assert f"PCIe {GEN3_X16:.0f} GB/s" in line, line


def test_skipped_cases_are_not_failures(p40_doc):
    items = checklist(p40_doc)
    run = items["run"]
    skipped = [r for r in p40_doc["records"] if r["status"] == "skipped"]
    assert skipped and all(r["reason_kind"] == "unsupported" for r in skipped)
    assert run.status == PASS
    assert run.summary == f"{len(p40_doc['records']) - len(skipped)} ok, {len(skipped)} skipped"
    assert items["memory"].status == NOT_MEASURED  # no network convolution in this run
