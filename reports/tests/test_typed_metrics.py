"""Typed metrics (nodebench_reports/metrics.py): the families' METRICS declarations are the one source
of a metric's unit, direction and label; they cover what the C++ families write and what the committed
results carry; families that share a name agree on it; readers take the direction from them; a record
read from a file is checked against them where it is read."""

from __future__ import annotations

import gzip
import json

import pytest
from conftest import REPO
from test_metric_names import written_names

from nodebench_reports import metrics
from nodebench_reports.conventions import higher_is_better, record_higher_is_better


def test_every_family_declares_its_metrics():
    tables = metrics.all_declared()
    assert tables and all(tables.values()), {f: len(t) for f, t in tables.items()}


def test_the_cpp_families_write_only_declared_metrics():
    """What benchmarks/<family>/ writes (the C++ typed metrics and assignments, found in the source) is
    declared by that family's reports module (harness/ writes the common ones)."""
    missing = {}
    for name, where in written_names().items():
        top, fam = where.split("/")[:2]
        if top == "benchmarks" and fam in metrics.all_declared():
            if metrics.declared(fam, name) is None:
                missing[f"{fam}/{name}"] = where
        elif top == "harness" and "frameworks" in where:   # the frameworks report's bench records
            assert metrics.declared("frameworks", name) is not None, (name, where)
        elif top == "harness":
            # the core's own (time_us, ...), or one the core declares for the families that write it
            # (latency_us: bench/metric.hpp's kLatencyMetric, declared by the latency and p2p modules)
            assert name in metrics.COMMON or metrics.by_name(name).declared, (name, where)
    assert not missing, missing


def _committed_records():
    for path in sorted(REPO.glob("results/**/*.json*")):
        try:
            raw = gzip.open(path).read() if path.suffix == ".gz" else path.read_bytes()
            doc = json.loads(raw)
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and doc.get("schema") == "nodebench.result":
            yield from (r for r in doc.get("records") or [] if isinstance(r, dict))


def test_committed_results_carry_only_declared_metrics():
    recs = list(_committed_records())
    assert len(recs) > 100
    assert metrics.undeclared(recs) == []


def test_families_that_share_a_name_agree():
    seen = {}
    for fam, table in metrics.all_declared().items():
        for name, m in table.items():
            if name in seen:
                assert (m.unit, m.better, m.label) == seen[name][1], (name, fam, seen[name][0])
            seen[name] = (fam, (m.unit, m.better, m.label))


def test_units_and_directions_come_from_the_declaration():
    assert metrics.by_name("busbw_gbps").axis_label == "bus bandwidth (GB/s)"
    assert metrics.by_name("p90_latency_us").unit == "us" and not higher_is_better("p90_latency_us")
    assert higher_is_better("images_per_s") and higher_is_better("tflops_per_ghz")
    # a count of errors: declared lower-is-better, where the suffix alone would say higher
    assert not higher_is_better("wrong_count") and higher_is_better("bucket_count")
    assert not record_higher_is_better({"family": "burn"}, "memory_errors_count")
    # the record's own primary_better wins for its primary metric
    assert record_higher_is_better({"family": "nccl", "primary_metric": "wrong_count", "primary_better": "higher"},
                                   "wrong_count")
    assert metrics.of_record({"family": "hostlink"}, "gpu3_gbps").declared
    assert metrics.declared("memory", "tflops") is None


def test_a_metric_nobody_declares_is_named_where_the_file_is_read(tmp_path):
    import nbgen
    from nodebench_reports.load import load_run
    doc = nbgen.make_result(families=("gemm",), n_gpus=1)
    assert load_run(str(nbgen.write(doc, tmp_path / "a.json"))).undeclared_metrics == []
    doc["records"][0]["metrics"]["novel_gbps"] = 1.0
    run = load_run(str(nbgen.write(doc, tmp_path / "b.json")))
    assert run.undeclared_metrics == ["gemm/novel_gbps"]
    m = metrics.by_name("novel_gbps")
    assert not m.declared and m.unit == "GB/s" and m.higher_is_better


def test_declarations_refuse_a_wrong_direction_and_a_twice_declared_name():
    with pytest.raises(ValueError):
        metrics.metric("x_gbps", better="up")
    with pytest.raises(ValueError):
        metrics.declare("a_gbps", "a_gbps")
