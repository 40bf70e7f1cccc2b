"""`nodebench-report compare` end to end on generated result files."""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET

import pytest

import nbgen

PLANTED = ["gemm/fp16/cublaslt/square_4096", "gemm/bf16/cublas/square_8192", "hostlink/h2d_pinned_ce_67108864",
           "nccl/all_reduce_float_4gpu_268435456", "conv/resnet50_total_fp16_b256"]


@pytest.fixture(scope="module")
def slow_file(tmp_path_factory):
    """Another night on the same node with five planted 10% slowdowns (hostlink on every GPU)."""
    doc = nbgen.make_result(seed=5, started_at="2025-06-03T02:00:00Z", slowdown={k: 1.10 for k in PLANTED})
    return nbgen.write(doc, tmp_path_factory.mktemp("slow") / "slow.json")


def planted_keys():
    keys = set()
    for rid in PLANTED:
        if rid.startswith("hostlink/"):
            keys |= {(rid, (g,)) for g in range(4)}
        elif rid.startswith("nccl/"):
            keys.add((rid, (0, 1, 2, 3)))
        else:
            keys.add((rid, (0,)))
    return keys


def test_compare_with_itself_is_clean(cli, full_file, tmp_path):
    r = cli("compare", full_file, full_file, "--json", tmp_path / "c.json")
    assert r.rc == 0, r
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["summary"]["regressions"] == 0
    assert data["summary"]["compared"] == data["summary"]["unchanged"] > 100
    assert all(c["ratio"] == 1.0 for c in data["cases"])


def test_noise_only_night_has_no_regression(cli, full_file, full_file_again, tmp_path):
    r = cli("compare", full_file, full_file_again, "--json", tmp_path / "c.json")
    assert r.rc == 0, r
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["summary"]["regressions"] == 0 and data["summary"]["compared"] > 250
    assert "no regression (exit 0)" in r.out


def test_planted_regressions_are_found_exactly(cli, full_file, slow_file, tmp_path):
    # the synthetic files' noise is their generator's, not an H200's: judged without the shipped prior
    r = cli("compare", full_file, slow_file, "--json", tmp_path / "c.json", "--junit", tmp_path / "c.xml", "--no-noise-prior")
    assert r.rc == 1, r
    data = json.loads((tmp_path / "c.json").read_text())
    found = {(c["id"], tuple(c["gpus"])) for c in data["cases"] if c["regression"]}
    assert found == planted_keys()
    for c in data["cases"]:
        if c["regression"]:
            assert c["verdict"] == "regression" and 1.05 < c["ratio"] < 1.16 and c["p_value"] < 0.01
    assert data["exit_code"] == 1 and data["summary"]["regressions"] == len(planted_keys())
    assert "REGRESSION (exit 1)" in r.out and "!! gemm/fp16/cublaslt/square_4096 [gpu 0]" in r.out

    root = ET.parse(tmp_path / "c.xml").getroot()
    assert root.tag == "testsuites" and int(root.get("failures")) == len(planted_keys())
    failed = {tc.get("name") for tc in root.iter("testcase") if tc.find("failure") is not None}
    assert "gemm/fp16/cublaslt/square_4096 [gpu 0]" in failed and len(failed) == len(planted_keys())
    assert int(root.find("testsuite").get("tests")) == data["summary"]["compared"]


def test_bootstrap_finds_the_same_regressions(cli, full_file, slow_file, tmp_path):
    r = cli("compare", full_file, slow_file, "--test", "bootstrap", "--json", tmp_path / "c.json", "--no-noise-prior")
    assert r.rc == 1, r
    data = json.loads((tmp_path / "c.json").read_text())
    assert {(c["id"], tuple(c["gpus"])) for c in data["cases"] if c["regression"]} == planted_keys()
    assert data["settings"]["test"] == "bootstrap"
    assert all(c["ci_low"] is not None for c in data["cases"])


def test_threshold_is_settable(cli, full_file, slow_file):
    assert cli("compare", full_file, slow_file, "--threshold", "20%", "--no-noise-prior").rc == 0
    assert cli("compare", full_file, slow_file, "--threshold", "0.2", "-q", "--no-noise-prior").rc == 0


def test_alpha_is_settable(cli, full_file, slow_file):
    # 20 + 20 samples cannot reach p < 1e-15: nothing is significant
    r = cli("compare", full_file, slow_file, "--alpha", "1e-15", "--no-noise-prior")
    assert r.rc == 0, r
    assert "slower, not significant" in r.out


def test_status_regression_and_one_sided_cases(cli, full_doc, tmp_path):
    base = copy.deepcopy(full_doc)
    new = nbgen.set_status(full_doc, "gemm/int8/cublaslt/square_2048", "failed", "cuBLAS error 13")
    new = nbgen.set_status(new, "gemm/fp64/cublas/square_1024", "wrong", "max_error_ratio 4.1 exceeds 1")
    base = nbgen.set_status(base, "gemm/tf32/cublas/square_1024", "failed", "timeout")   # fixed in new
    dropped = new["records"].pop(7)                                                       # only in base
    extra = copy.deepcopy(next(r for r in new["records"] if r["id"] == "gemm/fp16/cublaslt/square_8192"))
    extra.update(id="gemm/fp16/cublaslt/square_16384", case="fp16/cublaslt/square_16384")
    new["records"].append(extra)                                                          # only in new
    b, n = nbgen.write(base, tmp_path / "b.json"), nbgen.write(new, tmp_path / "n.json")
    r = cli("compare", b, n, "--json", tmp_path / "c.json")
    assert r.rc == 1, r
    data = json.loads((tmp_path / "c.json").read_text())
    verdicts = {c["id"]: c for c in data["cases"]}
    assert verdicts["gemm/int8/cublaslt/square_2048"]["verdict"] == "status regression"
    assert "cuBLAS error 13" in verdicts["gemm/int8/cublaslt/square_2048"]["note"]
    assert verdicts["gemm/fp64/cublas/square_1024"]["regression"]
    assert verdicts["gemm/tf32/cublas/square_1024"]["verdict"] == "status fixed"
    assert not verdicts["gemm/tf32/cublas/square_1024"]["regression"]
    assert data["summary"]["status_regressions"] == 2 and data["summary"]["slowdowns"] == 0
    # measured in base, absent from new: missing (it fails; it was "only in base" and passed)
    assert data["missing"] == [f"{dropped['id']} [gpu 0]"] and data["only_in_base"] == []
    assert data["only_in_new"] == ["gemm/fp16/cublaslt/square_16384 [gpu 0]"]
    assert "missing: measured in base, absent from new (1; each fails):" in r.out and "only in new (1):" in r.out
    # the OOM record skipped on both sides is not listed
    assert "conv/resnet50_total_fp32_b2048" not in verdicts


def test_cases_missing_from_new_fail(cli, full_doc, tmp_path):
    # was: one-sided cases alone did not fail, so a night that lost the whole p2p family passed
    new = copy.deepcopy(full_doc)
    new["records"] = [r for r in new["records"] if r["family"] != "p2p"]
    r = cli("compare", nbgen.write(full_doc, tmp_path / "b.json"), nbgen.write(new, tmp_path / "n.json"),
            "--junit", tmp_path / "c.xml")
    assert r.rc == 1, r
    n_p2p = sum(1 for rec in full_doc["records"] if rec["family"] == "p2p")
    assert f"missing: measured in base, absent from new ({n_p2p}; each fails):" in r.out
    assert "result: MISSING CASES (exit 1)" in r.out
    root = ET.parse(tmp_path / "c.xml").getroot()
    assert int(root.get("failures")) == n_p2p


def test_cases_only_in_new_or_skipped_in_base_do_not_fail(cli, full_doc, tmp_path):
    base = copy.deepcopy(full_doc)
    base["records"] = [r for r in base["records"] if r["family"] != "p2p"]
    rid = next(r["id"] for r in base["records"] if r["family"] == "gemm")
    base = nbgen.set_status(base, rid, "skipped", "not supported on this GPU")
    new = copy.deepcopy(full_doc)
    new["records"] = [r for r in new["records"] if r["id"] != rid]
    r = cli("compare", nbgen.write(base, tmp_path / "b.json"), nbgen.write(new, tmp_path / "n.json"))
    assert r.rc == 0, r
    assert "only in new (24):" in r.out and "only in base (1):" in r.out


def test_interrupted_run_is_warned_about(cli, full_doc, tmp_path):
    new = copy.deepcopy(full_doc)
    new["run_status"] = "interrupted"
    r = cli("compare", nbgen.write(full_doc, tmp_path / "b.json"), nbgen.write(new, tmp_path / "n.json"))
    assert r.rc == 0 and "warning: the new run's status is 'interrupted'" in r.out, r


def test_output_files_to_unwritable_place_exit_2(cli, full_file, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = cli("compare", full_file, full_file, "--json", blocker / "sub" / "c.json")
    assert r.rc == 2 and "cannot write" in r.err, r
