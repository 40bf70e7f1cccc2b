"""The structural check of a result file (schema ``nodebench.result``, version 1).

Every check here produces a :class:`ReportError` whose message names the file and the field,
so that the command line can print it and exit with status 2 instead of a traceback.
The checks cover what this package's readers rely on (fields they read with ``.get`` and
``is_number`` are left to them); ``nodebench-report validate`` checks the full JSON Schema with
``jsonschema`` itself, and this module's :func:`unique_cases`, what a schema cannot say.
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources
from typing import Any, Iterable

from . import SCHEMA_NAME, SCHEMA_VERSION
from .conventions import is_number, record_key, record_mode
from .errors import ReportError

RUN_STATUSES = ("running", "complete", "interrupted", "aborted")
RECORD_STATUSES = ("ok", "skipped", "failed", "wrong")
_TIMESTAMP = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$")
_CC = re.compile(r"^[0-9]+\.[0-9]+$")


def _describe(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _Checker:
    """Collects the path of the field being checked so that messages can name it."""

    def __init__(self, path: str):
        self.path = path

    def fail(self, field_name: str, message: str) -> None:
        raise ReportError(f"{self.path}: field '{field_name}': {message}")

    def obj(self, value: Any, name: str) -> dict:
        if not isinstance(value, dict):
            self.fail(name, f"expected an object, got {_describe(value)}")
        return value

    def require(self, parent: dict, key: str, prefix: str) -> Any:
        if key not in parent:
            self.fail(f"{prefix}{key}", "missing")
        return parent[key]

    def string(self, value: Any, name: str, nullable: bool = False) -> None:
        if value is None and nullable:
            return
        if not isinstance(value, str):
            self.fail(name, f"expected a string{' or null' if nullable else ''}, got {_describe(value)}")

    def number(self, value: Any, name: str, nullable: bool = False, minimum: float | None = None) -> None:
        if value is None and nullable:
            return
        if not is_number(value):
            self.fail(name, f"expected a number{' or null' if nullable else ''}, got {_describe(value)}")
        if minimum is not None and value < minimum:
            self.fail(name, f"must be >= {minimum}, got {value}")

    def integer(self, value: Any, name: str, minimum: int | None = None) -> None:
        if not isinstance(value, int) or isinstance(value, bool):
            self.fail(name, f"expected an integer, got {_describe(value)}")
        if minimum is not None and value < minimum:
            self.fail(name, f"must be >= {minimum}, got {value}")

    def array(self, value: Any, name: str) -> list:
        if not isinstance(value, list):
            self.fail(name, f"expected an array, got {_describe(value)}")
        return value

    def enum(self, value: Any, name: str, allowed: Iterable[str]) -> None:
        allowed = tuple(allowed)
        if value not in allowed:
            self.fail(name, f"expected one of {', '.join(allowed)}, got {_describe(value)}")

    def timestamp(self, value: Any, name: str, nullable: bool = False) -> None:
        if value is None and nullable:
            return
        if not isinstance(value, str) or not _TIMESTAMP.match(value):
            self.fail(name, f"expected a UTC ISO 8601 time like 2025-01-31T12:00:00Z, got {_describe(value)}")


def check_identity(doc: Any, path: str) -> None:
    """The file is a nodebench result of the schema version this package reads."""
    if not isinstance(doc, dict):
        raise ReportError(f"{path}: not a nodebench result file: the top level is {type(doc).__name__}, "
                          f"expected a JSON object")
    if "schema" not in doc:
        raise ReportError(f"{path}: field 'schema': missing; not a nodebench result file "
                          f"(expected schema \"{SCHEMA_NAME}\")")
    if doc["schema"] != SCHEMA_NAME:
        raise ReportError(f"{path}: field 'schema': is {_describe(doc['schema'])}, expected \"{SCHEMA_NAME}\"")
    if "schema_version" not in doc:
        raise ReportError(f"{path}: field 'schema_version': missing (this nodebench-report reads "
                          f"version {SCHEMA_VERSION})")
    # an integer, as the C++ readers require (1.0 is refused there, so it is here)
    if type(doc["schema_version"]) is not int or doc["schema_version"] != SCHEMA_VERSION:
        raise ReportError(f"{path}: field 'schema_version': is {_describe(doc['schema_version'])}; this "
                          f"nodebench-report reads schema version {SCHEMA_VERSION} only")


def check_document(doc: Any, path: str) -> None:
    """The loader's check, run on every file a command reads (the full JSON Schema is ``validate``'s:
    jsonschema takes about 22 times as long on a full suite's file: results/cpu/2026-12-07-schema-check-cost):
    the identity, the structure this package relies
    on, the schema's own rule for metric names, and a case's uniqueness."""
    check_identity(doc, path)
    c = _Checker(path)
    _check_top(c, doc)
    _check_environment(c, doc)
    _check_records(c, doc["records"])


def _check_top(c: _Checker, doc: dict) -> None:
    for key in ("run_id", "started_at", "finished_at", "run_status", "nodebench", "options",
                "environment", "records", "summary"):
        c.require(doc, key, "")
    c.string(doc["run_id"], "run_id")
    c.timestamp(doc["started_at"], "started_at")
    c.timestamp(doc["finished_at"], "finished_at", nullable=True)
    c.enum(doc["run_status"], "run_status", RUN_STATUSES)
    c.obj(doc["options"], "options")
    nb = c.obj(doc["nodebench"], "nodebench")
    for key in ("version", "git_commit"):
        c.string(c.require(nb, key, "nodebench."), f"nodebench.{key}")
    for j, arg in enumerate(c.array(c.require(nb, "command_line", "nodebench."), "nodebench.command_line")):
        c.string(arg, f"nodebench.command_line[{j}]")
    if "cuda_architectures" in nb:
        c.string(nb["cuda_architectures"], "nodebench.cuda_architectures")
    summary = c.obj(doc["summary"], "summary")
    for key in ("ok", "skipped", "failed", "wrong", "total"):
        c.integer(c.require(summary, key, "summary."), f"summary.{key}", minimum=0)
    if "analysis" in doc:
        c.obj(doc["analysis"], "analysis")


def _check_environment(c: _Checker, doc: dict) -> dict:
    env = c.obj(doc["environment"], "environment")
    for key in ("host", "software", "gpus", "nvml"):
        c.require(env, key, "environment.")
    host = c.obj(env["host"], "environment.host")
    c.string(c.require(host, "hostname", "environment.host."), "environment.host.hostname")
    c.obj(env["software"], "environment.software")
    nvml = c.obj(env["nvml"], "environment.nvml")
    if not isinstance(nvml.get("available"), bool):
        c.fail("environment.nvml.available", f"expected true or false, got {_describe(nvml.get('available'))}")
    for i, gpu in enumerate(c.array(env["gpus"], "environment.gpus")):
        name = f"environment.gpus[{i}]"
        c.obj(gpu, name)
        c.integer(c.require(gpu, "index", name + "."), name + ".index")
        c.string(c.require(gpu, "name", name + "."), name + ".name")
        cc = c.require(gpu, "compute_capability", name + ".")
        if not isinstance(cc, str) or not _CC.match(cc):
            c.fail(name + ".compute_capability", f"expected a string like \"9.0\", got {_describe(cc)}")
        c.integer(c.require(gpu, "memory_bytes", name + "."), name + ".memory_bytes")
        if gpu.get("pcie") is not None:
            c.obj(gpu["pcie"], name + ".pcie")   # its numbers read through is_number
        for key in ("sm_count", "clock_sm_mhz", "clock_mem_mhz", "clock_sm_max_mhz", "clock_mem_max_mhz",
                    "power_limit_w", "temperature_c", "l2_bytes"):
            if key in gpu:
                c.number(gpu[key], f"{name}.{key}", nullable=True)
    return env


def unique_cases(doc: dict, path: str) -> list[str]:
    """What the schema cannot say: a case (id, GPUs, rank, mode) appears once in a run. Records are
    taken as the schema describes them (the loader's checks or jsonschema ran first)."""
    seen: dict[tuple, int] = {}
    for i, rec in enumerate(doc.get("records") or []):
        key = record_key(rec) + (record_mode(rec),)
        if key in seen:
            where = f"on GPUs {list(key[1])}" + (f" of rank {key[2]}" if key[2] is not None else "")
            return [f"{path}: field 'records[{i}].id': {rec['id']!r} {where} appears twice (also "
                    f"records[{seen[key]}]); a case is unique in a run together with its GPUs (and rank)"]
        seen[key] = i
    return []


@functools.lru_cache(maxsize=1)
def metric_name_rule() -> re.Pattern:
    """The schema's rule for a metric's name (its unit suffix), read from the packaged schema."""
    schema = json.loads(resources.files(__package__).joinpath("schema", "result-v1.schema.json").read_text("utf-8"))
    return re.compile(schema["$defs"]["record"]["properties"]["metrics"]["propertyNames"]["pattern"])


def _check_records(c: _Checker, records) -> None:
    for i, rec in enumerate(c.array(records, "records")):
        name = f"records[{i}]"
        _check_record(c, rec, name)
        _check_record_extras(c, rec, name)
        for key in rec["metrics"]:
            if not metric_name_rule().search(key):
                c.fail(f"{name}.metrics", f"{key!r} does not match the schema's metric-name rule (a unit "
                                          f"suffix: {metric_name_rule().pattern})")
    problems = unique_cases({"records": records}, c.path)
    if problems:
        raise ReportError(problems[0])


def _check_record(c: _Checker, rec, name: str) -> None:
    """The fields every record has."""
    c.obj(rec, name)
    for key in ("id", "family", "case", "params", "gpus", "status", "reason", "stats", "metrics",
                "percent_of_peak", "flags", "samples_s"):
        c.require(rec, key, name + ".")
    for key in ("id", "family", "case"):
        c.string(rec[key], f"{name}.{key}")
        if not rec[key]:
            c.fail(f"{name}.{key}", "must not be empty")
    c.obj(rec["params"], name + ".params")
    for j, g in enumerate(c.array(rec["gpus"], name + ".gpus")):
        c.integer(g, f"{name}.gpus[{j}]", minimum=0)
    c.enum(rec["status"], name + ".status", RECORD_STATUSES)
    c.string(rec["reason"], name + ".reason", nullable=True)
    if rec["status"] != "ok" and not rec["reason"]:
        c.fail(name + ".reason", f"a record with status {rec['status']} must say why")
    stats = rec["stats"]
    if stats is None:
        if rec["status"] == "ok":
            c.fail(name + ".stats", "is null but the status is ok")
    else:
        c.obj(stats, name + ".stats")
        c.number(c.require(stats, "median", name + ".stats."), name + ".stats.median", minimum=0)
        if "count" in stats:
            c.integer(stats["count"], name + ".stats.count", minimum=0)
        for key in ("min", "max", "mean", "stddev", "p10", "p90", "cv"):
            if key in stats:
                c.number(stats[key], f"{name}.stats.{key}", nullable=True)
    for j, s in enumerate(c.array(rec["samples_s"], name + ".samples_s")):
        c.number(s, f"{name}.samples_s[{j}]", minimum=0)
    metrics = c.obj(rec["metrics"], name + ".metrics")
    for key, value in metrics.items():
        c.number(value, f"{name}.metrics.{key}", nullable=True)
    for j, flag in enumerate(c.array(rec["flags"], name + ".flags")):
        c.string(flag, f"{name}.flags[{j}]")


def _check_record_extras(c: _Checker, rec: dict, name: str) -> None:
    """Percent of peak, clocks and the optional fields."""
    pop = rec["percent_of_peak"]
    if pop is not None:
        c.obj(pop, name + ".percent_of_peak")   # its numbers read through is_number
    for key in ("clocks", "measurement", "details"):
        if key in rec and rec[key] is not None:
            c.obj(rec[key], f"{name}.{key}")
    clocks = rec.get("clocks") or {}
    for when in ("before", "after"):   # read with .get (their values through is_number)
        if clocks.get(when) is not None:
            c.obj(clocks[when], f"{name}.clocks.{when}")
    if rec.get("rank") is not None:
        c.integer(rec["rank"], name + ".rank", minimum=0)
    if rec.get("host") is not None:
        c.string(rec["host"], name + ".host")
    for key in ("primary_metric", "primary_better", "reason_kind", "mode"):
        if rec.get(key) is not None:
            c.string(rec[key], f"{name}.{key}")
    if rec.get("primary_better") is not None:
        c.enum(rec["primary_better"], name + ".primary_better", ("higher", "lower"))
    if rec.get("mode") is not None:
        c.enum(rec["mode"], name + ".mode", ("alone", "concurrent"))
    rtr = rec.get("run_to_run")
    if rtr is not None:
        c.obj(rtr, name + ".run_to_run")
        if "runs" in rtr:
            c.integer(rtr["runs"], name + ".run_to_run.runs", minimum=1)
        for k in ("cv", "max_over_min"):
            if k in rtr:
                c.number(rtr[k], f"{name}.run_to_run.{k}", nullable=True, minimum=0)
