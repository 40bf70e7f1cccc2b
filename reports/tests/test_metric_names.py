"""Every metric name the C++ families write matches the schema's naming rule (a unit suffix), found
in the source, so that a family never run on a GPU cannot write a record that fails validation
(train_dp's first record on a GPU did: `buckets`, `scaling_efficiency`)."""

from __future__ import annotations

import json
import re

from conftest import REPO

SCHEMA = REPO / "harness" / "schema" / "result-v1.schema.json"
# m["name"] = ..., metrics()["name"] = ..., metrics["name"] = ... (not ==), and the metric setters
ASSIGN = re.compile(r'(?<![A-Za-z0-9_])(?:m|metrics|metrics\(\))\["([A-Za-z0-9_]+)"\]\s*=(?!=)')
SETTER = re.compile(r'\b(?:set_primary_metric|set_throughput)\(\s*"([A-Za-z0-9_]+)"')
# typed metrics, ctx.metric("stem", Unit::u, ...) or make_metric("stem", Unit::u, ...): the name is the stem, '_'
# and the unit's suffix (bench/metric.cpp: every suffix is its enum's name), the suffix alone for an empty stem
TYPED = re.compile(r'\b(?:make_)?metric\(\s*"([A-Za-z0-9_]*)"\s*,\s*Unit::([a-z_]+)')
# a family's declared metric, MetricDecl kName{"stem", Unit::u, ...} (bench/metric.hpp): the same name rule
DECL = re.compile(r'\bMetricDecl\s+\w+\s*\{\s*"([A-Za-z0-9_]*)"\s*,\s*Unit::([a-z_]+)')


def metric_pattern():
    def find(node):
        if isinstance(node, dict):
            if "metrics" in node.get("properties", {}):
                return node["properties"]["metrics"]["propertyNames"]["pattern"]
            for v in node.values():
                hit = find(v)
                if hit:
                    return hit
        elif isinstance(node, list):
            for v in node:
                hit = find(v)
                if hit:
                    return hit
        return None
    return re.compile(find(json.loads(SCHEMA.read_text())))


def written_names():
    found = {}
    for path in sorted([*REPO.glob("benchmarks/**/*.cpp"), *REPO.glob("harness/**/*.cpp"),
                        *REPO.glob("benchmarks/**/*.hpp"), *REPO.glob("harness/**/*.hpp")]):
        text = path.read_text(encoding="utf-8")
        for rx in (ASSIGN, SETTER, TYPED, DECL):
            for mt in rx.finditer(text):
                name = mt.group(1) if rx in (ASSIGN, SETTER) else "_".join(x for x in mt.groups() if x)
                found.setdefault(name, f"{path.relative_to(REPO)}:{text.count(chr(10), 0, mt.start()) + 1}")
    return found


def test_scan_finds_the_families_metrics():
    names = written_names()
    # the scan sees the assignments it is meant to police (a regex that finds nothing passes nothing)
    for expected in ("step_time_ms", "exposed_comm_ms", "bucket_count", "scaling_efficiency_ratio", "eager_step_ms",
                     "per_core_images_per_s", "gpu_time_per_image_ms", "worker_cpu_share"):
        assert expected in names, expected
    assert len(names) > 30


def test_every_written_metric_name_matches_the_schema():
    rx = metric_pattern()
    bad = {n: where for n, where in written_names().items() if not rx.search(n)}
    assert not bad, f"metric names outside the schema's rule: {bad}"


def test_pattern_rejects_the_names_that_failed():
    rx = metric_pattern()
    assert not rx.search("buckets") and not rx.search("scaling_efficiency")
    assert rx.search("bucket_count") and rx.search("scaling_efficiency_ratio")
