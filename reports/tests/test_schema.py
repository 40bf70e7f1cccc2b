"""The generated fixtures are valid result files, and `validate` checks files against the schema."""

from __future__ import annotations

import copy
import json

import pytest

import nbgen
from conftest import HARNESS_SCHEMA

VARIANTS = {
    "full": dict(),
    "gemm_only_1gpu": dict(families=("gemm",), n_gpus=1),
    "no_nvml": dict(families=("gemm", "hostlink"), nvml=False),
    "throttled": dict(families=("gemm",), throttle=True),
    "power_capped": dict(families=("gemm",), power_capped=True),
    "one_gpu_all_families": dict(n_gpus=1),
    "running": dict(families=("gemm",), run_status="running"),
    "no_analysis": dict(families=("conv",), analysis=False),
    "empty": dict(families=()),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_generated_files_are_schema_valid(name, validate):
    doc = nbgen.make_result(**VARIANTS[name])
    validate(doc)
    assert doc["summary"]["total"] == len(doc["records"])


def test_non_ok_records_are_schema_valid(validate, full_doc):
    doc = nbgen.set_status(full_doc, "gemm/fp16/cublas/square_1024", "failed", "CUDA error: illegal address")
    doc = nbgen.set_status(doc, "gemm/fp32/cublas/square_1024", "wrong", "max_error_ratio 3.2 > 1")
    validate(doc)
    assert doc["summary"]["failed"] == 1 and doc["summary"]["wrong"] == 1


def test_packaged_schema_matches_harness_schema():
    if not HARNESS_SCHEMA.exists():
        pytest.skip(f"{HARNESS_SCHEMA} not present (package tested outside the repository)")
    from nodebench_reports.validate import packaged_schema
    assert packaged_schema() == json.loads(HARNESS_SCHEMA.read_text(encoding="utf-8")), \
        "reports/nodebench_reports/schema/result-v1.schema.json is out of date: copy harness/schema/ over it"


def test_validate_accepts_valid_file(cli, full_file):
    pytest.importorskip("jsonschema")
    r = cli("validate", full_file)
    assert r.rc == 0, r
    assert "valid" in r.out


def test_validate_rejects_schema_violation_with_field(cli, tmp_path, full_doc):
    pytest.importorskip("jsonschema")
    doc = copy.deepcopy(full_doc)
    doc["records"][3]["metrics"]["speed"] = 1.0          # metric name without a unit suffix
    doc["records"][5]["flags"] = ["sleepy"]              # unknown flag
    path = nbgen.write(doc, tmp_path / "bad.json")
    r = cli("validate", path)
    assert r.rc == 2, r
    assert "records[3].metrics" in r.err and "speed" in r.err
    assert "records[5].flags[0]" in r.err
    assert "bad.json" in r.err


def test_validate_rejects_other_version(cli, tmp_path, full_doc):
    pytest.importorskip("jsonschema")
    doc = dict(full_doc, schema_version=2)
    r = cli("validate", nbgen.write(doc, tmp_path / "v2.json"))
    assert r.rc == 2 and "schema_version" in r.err, r


MALFORMED = HARNESS_SCHEMA.parents[2] / "tests" / "data" / "malformed_result.json"


def test_the_schema_checks_the_structure_and_the_hand_only_uniqueness(full_doc):
    """validate's check is jsonschema's on the schema itself (the metric-name rule the loader's hand
    checks once missed), plus what a schema cannot say: a case appears once per GPUs/rank/mode."""
    pytest.importorskip("jsonschema")
    from nodebench_reports.validate import FULL_SCHEMA, result_problems
    doc = json.loads(MALFORMED.read_text())
    problems, by = result_problems(doc, "m.json")
    assert by == FULL_SCHEMA and any("records[0].metrics" in p and "speed" in p for p in problems), problems
    dup = copy.deepcopy(full_doc)
    dup["records"].append(copy.deepcopy(dup["records"][0]))
    dup["summary"]["total"] += 1
    dup["summary"][dup["records"][0]["status"]] += 1
    problems, _ = result_problems(dup, "d.json")
    assert len(problems) == 1 and "appears twice" in problems[0], problems
    assert result_problems(full_doc, "ok.json")[0] == []


def test_the_loader_catches_the_metric_name_rule(tmp_path):
    from nodebench_reports.errors import ReportError
    from nodebench_reports.load import load_run
    doc = json.loads(MALFORMED.read_text())
    doc["records"][0]["reason"] = "a reason"       # the file's other fault, so that the name is what fails
    with pytest.raises(ReportError, match=r"records\[0\]\.metrics.*'speed'"):
        load_run(str(nbgen.write(doc, tmp_path / "m.json")))


def test_without_jsonschema_validate_says_so_and_falls_back(cli, tmp_path, full_file, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "jsonschema", None)   # import jsonschema raises ImportError
    r = cli("validate", full_file)
    assert r.rc == 0 and "python3-jsonschema" in r.err and r.err.count("\n") == 1, r
    r = cli("validate", MALFORMED)
    assert r.rc == 2 and "python3-jsonschema" in r.err and "malformed_result.json" in r.err, r
