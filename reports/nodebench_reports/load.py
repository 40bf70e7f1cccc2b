"""Reading nodebench result files (schema ``nodebench.result``, version 1).

Every check here produces a :class:`ReportError` whose message names the file and the field,
so that the command line can print it and exit with status 2 instead of a traceback.
The checks cover what this package relies on; ``nodebench-report validate`` additionally runs
the full JSON Schema (when ``jsonschema`` is installed).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from . import SCHEMA_NAME, SCHEMA_VERSION
from .errors import ReportError

RUN_STATUSES = ("running", "complete", "interrupted", "aborted")
RECORD_STATUSES = ("ok", "skipped", "failed", "wrong")
_TIMESTAMP = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$")
_CC = re.compile(r"^[0-9]+\.[0-9]+$")


def is_number(value: Any) -> bool:
    """A JSON number (bool excluded), finite."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


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


def check_document(doc: Any, path: str) -> None:
    """Check the identity (schema, version) and the structure this package relies on."""
    c = _Checker(path)
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
    if doc["schema_version"] != SCHEMA_VERSION or isinstance(doc["schema_version"], bool):
        raise ReportError(f"{path}: field 'schema_version': is {_describe(doc['schema_version'])}; this "
                          f"nodebench-report reads schema version {SCHEMA_VERSION} only")

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
            c.obj(gpu["pcie"], name + ".pcie")
            for key, value in gpu["pcie"].items():
                c.number(value, f"{name}.pcie.{key}", nullable=True)
        for key in ("sm_count", "clock_sm_mhz", "clock_mem_mhz", "clock_sm_max_mhz", "clock_mem_max_mhz",
                    "power_limit_w", "temperature_c", "l2_bytes"):
            if key in gpu:
                c.number(gpu[key], f"{name}.{key}", nullable=True)
        if gpu.get("throttle_reasons") is not None:
            for j, reason in enumerate(c.array(gpu["throttle_reasons"], name + ".throttle_reasons")):
                c.string(reason, f"{name}.throttle_reasons[{j}]")

    seen: dict[tuple, int] = {}
    for i, rec in enumerate(c.array(doc["records"], "records")):
        name = f"records[{i}]"
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
        pop = rec["percent_of_peak"]
        if pop is not None:
            c.obj(pop, name + ".percent_of_peak")
            c.number(c.require(pop, "peak", name + ".percent_of_peak."), name + ".percent_of_peak.peak")
            c.string(c.require(pop, "metric", name + ".percent_of_peak."), name + ".percent_of_peak.metric")
            if "percent" in pop:
                c.number(pop["percent"], name + ".percent_of_peak.percent", nullable=True)
        for key in ("clocks", "measurement", "details"):
            if key in rec and rec[key] is not None:
                c.obj(rec[key], f"{name}.{key}")
        clocks = rec.get("clocks") or {}
        for when in ("before", "after"):
            if clocks.get(when) is None:
                continue
            snap = c.obj(clocks[when], f"{name}.clocks.{when}")
            for key in ("sm_mhz", "mem_mhz", "temperature_c", "power_w"):
                if key in snap:
                    c.number(snap[key], f"{name}.clocks.{when}.{key}", nullable=True)
            if snap.get("throttle_reasons") is not None:
                for j, reason in enumerate(c.array(snap["throttle_reasons"], f"{name}.clocks.{when}.throttle_reasons")):
                    c.string(reason, f"{name}.clocks.{when}.throttle_reasons[{j}]")
        if "sm_mhz_during" in clocks:
            c.number(clocks["sm_mhz_during"], f"{name}.clocks.sm_mhz_during", nullable=True)
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
            for j, m in enumerate(c.array(rtr.get("medians_s", []), name + ".run_to_run.medians_s")):
                c.number(m, f"{name}.run_to_run.medians_s[{j}]", minimum=0)
            for k in ("cv", "max_over_min"):
                if k in rtr:
                    c.number(rtr[k], f"{name}.run_to_run.{k}", nullable=True, minimum=0)
        key = record_key(rec) + (record_mode(rec),)
        if key in seen:
            where = f"on GPUs {list(key[1])}" + (f" of rank {key[2]}" if key[2] is not None else "")
            c.fail(name + ".id", f"{rec['id']!r} {where} appears twice (also records[{seen[key]}]); "
                                 f"a case is unique in a run together with its GPUs (and rank)")
        seen[key] = i
    ranks = env.get("ranks")
    if ranks is not None:
        for i, r in enumerate(c.array(ranks, "environment.ranks")):
            c.obj(r, f"environment.ranks[{i}]")
            if r.get("rank") is not None:
                c.integer(r["rank"], f"environment.ranks[{i}].rank", minimum=0)
            for key in ("gpu_name", "host"):
                if r.get(key) is not None:
                    c.string(r[key], f"environment.ranks[{i}].{key}")


def read_json(path: str) -> Any:
    """Read a JSON file, turning every I/O and syntax problem into a ReportError."""
    if not os.path.exists(path):
        raise ReportError(f"{path}: no such file")
    if os.path.isdir(path):
        raise ReportError(f"{path}: is a directory, expected a result file (.json)")
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise ReportError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not raw.strip():
        raise ReportError(f"{path}: the file is empty, expected a JSON result file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReportError(f"{path}: not UTF-8 text (byte {exc.start}); not a JSON result file") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise ReportError(f"{path}: malformed JSON: nested too deeply") from None


def read_advice(path: str) -> dict:
    """A `nodebench advise --json` document (schema nodebench.advise, version 1); ReportError otherwise."""
    doc = read_json(path)
    if not isinstance(doc, dict) or doc.get("schema") != "nodebench.advise":
        raise ReportError(f"{path}: not a nodebench advise document (schema 'nodebench.advise')")
    if doc.get("schema_version") != 1:
        raise ReportError(f"{path}: advise schema_version {doc.get('schema_version')!r}, this reader knows 1")
    rows = doc.get("rows")
    if not isinstance(rows, list):
        raise ReportError(f"{path}: rows: expected a list")
    for i, r in enumerate(rows):
        for key in ("gpus", "batch", "accumulation", "images_per_s", "efficiency"):
            if not isinstance(r, dict) or not is_number(r.get(key)):
                raise ReportError(f"{path}: rows[{i}].{key}: expected a number")
    return doc


# ----------------------------------------------------------------------------------------------
# The in-memory view of a run


def record_key(rec: dict) -> tuple[str, tuple[int, ...], int | None]:
    """Case identity across runs: the record id plus the GPUs it ran on (plus the MPI rank that
    ran it, for runs of one process per GPU, where every rank has its own GPU 0)."""
    rank = rec.get("rank")
    return rec["id"], tuple(rec["gpus"]), rank if isinstance(rank, int) and not isinstance(rank, bool) else None


def key_label(key: tuple) -> str:
    rid, gpus = key[0], key[1]
    rank = key[2] if len(key) > 2 else None
    where = f"gpu {','.join(str(g) for g in gpus)}" if gpus else "host"
    if rank is not None:
        where += f", rank {rank}"
    return f"{rid} [{where}]"


@dataclass
class Run:
    """One loaded, checked result file."""

    path: str
    doc: dict = field(repr=False)

    @property
    def run_id(self) -> str:
        return self.doc["run_id"]

    @property
    def started_at(self) -> str:
        return self.doc["started_at"]

    @property
    def run_status(self) -> str:
        return self.doc["run_status"]

    @property
    def environment(self) -> dict:
        return self.doc["environment"]

    @property
    def hostname(self) -> str:
        return self.environment["host"]["hostname"]

    @property
    def gpus(self) -> list[dict]:
        return self.environment["gpus"]

    @property
    def ranks(self) -> list[dict]:
        """environment.ranks of a run under MPI (one process per GPU); empty otherwise."""
        ranks = self.environment.get("ranks")
        return [r for r in ranks if isinstance(r, dict)] if isinstance(ranks, list) else []

    @property
    def gpu_names(self) -> list[str]:
        """The GPU models of the run: every rank's GPU under MPI, else environment.gpus."""
        if self.ranks and all(isinstance(r.get("gpu_name"), str) for r in self.ranks):
            return [r["gpu_name"] for r in self.ranks]
        return [g["name"] for g in self.gpus]

    @property
    def gpu_names_field(self) -> str:
        if self.ranks and all(isinstance(r.get("gpu_name"), str) for r in self.ranks):
            return "environment.ranks[*].gpu_name"
        return "environment.gpus[*].name"

    @property
    def records(self) -> list[dict]:
        return self.doc["records"]

    @property
    def analysis(self) -> dict:
        return self.doc.get("analysis") or {}

    @property
    def cuda_architectures(self) -> str | None:
        return self.doc["nodebench"].get("cuda_architectures")

    def gpu(self, index: int) -> dict | None:
        for g in self.gpus:
            if g["index"] == index:
                return g
        return None

    def gpu_model(self, gpus: Iterable[int], rank: int | None = None) -> str:
        """The model name(s) of the given GPU indices, e.g. "NVIDIA H200" or "NVIDIA H200 x2"."""
        gpus = list(gpus)
        if rank is not None:
            for r in self.ranks:
                if r.get("rank") == rank and isinstance(r.get("gpu_name"), str):
                    return r["gpu_name"] if len(gpus) <= 1 else f"{r['gpu_name']} x{len(gpus)}"
        names = []
        for i in gpus:
            g = self.gpu(i)
            names.append(g["name"] if g else f"GPU {i}")
        if not names:
            names = self.gpu_names
        if not names:
            return "no GPU"
        uniq = sorted(set(names))
        if len(uniq) == 1:
            return uniq[0] if len(names) == 1 else f"{uniq[0]} x{len(names)}"
        return " + ".join(uniq)


def load_run(path: str) -> Run:
    """Load one file and check it; raises ReportError naming the file and field."""
    doc = read_json(path)
    check_document(doc, path)
    return Run(path=path, doc=doc)


def load_runs(paths: Iterable[str]) -> list[Run]:
    paths = list(paths)
    if not paths:
        raise ReportError("no result files given")
    return [load_run(p) for p in paths]


def check_same_node(runs: list[Run]) -> None:
    """Refuse to merge files of different nodes or GPU models into one page."""
    first = runs[0]
    for run in runs[1:]:
        if run.hostname != first.hostname:
            raise ReportError(
                f"{run.path}: field 'environment.host.hostname' is {run.hostname!r} but {first.path} has "
                f"{first.hostname!r}; one report covers one node (pass --allow-mismatch to merge anyway)")
        if sorted(run.gpu_names) != sorted(first.gpu_names):
            raise ReportError(
                f"{run.path}: field '{run.gpu_names_field}' is {sorted(run.gpu_names)} but {first.path} has "
                f"{sorted(first.gpu_names)} (pass --allow-mismatch to merge anyway)")


@dataclass
class ReportData:
    """Several runs of one node merged into one view: the latest record of each case wins."""

    runs: list[Run]
    records: list[dict]
    superseded: int
    latest: Run
    advice: dict | None = None  # a `nodebench advise --json` document (read_advice), when given

    @property
    def environment(self) -> dict:
        return self.latest.environment

    @property
    def gpus(self) -> list[dict]:
        return self.latest.gpus

    @property
    def analysis(self) -> dict:
        """Every file's analyses: lists of entries are united by their key (GPU, precision, layout,
        ...: every field that is not a result), the latest run's entry winning per key; other values
        are taken from the latest run that has them. So verdicts do not depend on file order."""
        merged: dict = {}
        for run in sorted(self.runs, key=lambda r: r.started_at):
            for kind, value in run.analysis.items():
                prev = merged.get(kind)
                if isinstance(value, list) and isinstance(prev, list):
                    merged[kind] = _union_entries(prev, value)
                elif (isinstance(value, dict) and isinstance(prev, dict)
                      and all(isinstance(v, dict) for v in (*value.values(), *prev.values()))):
                    merged[kind] = {**prev, **value}  # keyed entries (e.g. nccl_scaling per case)
                else:
                    merged[kind] = value
        return merged

    def gpu(self, index: int) -> dict | None:
        return self.latest.gpu(index)

    def family(self, name: str, status: str | None = "ok") -> list[dict]:
        return [r for r in self.records if r["family"] == name and (status is None or r["status"] == status)]

    def has_family(self, name: str) -> bool:
        return any(r["family"] == name for r in self.records)


_ENTRY_KEYS = ("gpu", "gpus", "rank", "host", "precision", "layout", "dtype", "collective", "ngpus", "kind", "src",
               "dst", "mode", "api", "shape", "family", "name", "id")


def _entry_key(entry) -> tuple:
    if not isinstance(entry, dict):
        return ("value", json.dumps(entry, sort_keys=True))
    return tuple((k, json.dumps(entry.get(k), sort_keys=True)) for k in _ENTRY_KEYS if k in entry)


def _union_entries(old: list, new: list) -> list:
    out = {_entry_key(e): e for e in old}
    for e in new:
        out[_entry_key(e)] = e
    return list(out.values())


def merge_runs(runs: list[Run]) -> ReportData:
    ordered = sorted(runs, key=lambda r: r.started_at)
    by_key: dict[tuple, dict] = {}
    superseded = 0
    for run in ordered:
        for rec in run.records:
            key = record_key(rec) + (record_mode(rec),)
            if key in by_key:
                superseded += 1
            by_key[key] = rec
    return ReportData(runs=ordered, records=list(by_key.values()), superseded=superseded, latest=ordered[-1])


# ----------------------------------------------------------------------------------------------
# Metric conventions

_PRIMARY = {
    "gemm": ("tflops", "tops"),
    "peak": ("tflops", "tops"),
    "memory": ("gbps",),
    "hostlink": ("gbps",),
    "p2p": ("gbps",),
    "nccl": ("busbw_gbps", "algbw_gbps"),
    "latency": ("latency_us",),
    "conv": ("train_images_per_s", "images_per_s", "tflops"),
}


def primary_metric(rec: dict) -> str:
    """The metric that best summarises a record (used by trend and fleet when none is given):
    the record's own ``primary_metric`` when it names a metric it has, else decided by family."""
    metrics = rec.get("metrics") or {}
    named = rec.get("primary_metric")
    if isinstance(named, str) and is_number(metrics.get(named)):
        return named
    for name in _PRIMARY.get(rec["family"], ()):
        if metrics.get(name) is not None:
            return name
    return "median_s"


def higher_is_better(metric: str) -> bool:
    """Throughput-like metrics are better when higher; times, latencies, bytes when lower."""
    if metric.endswith("per_s") or metric.endswith("_x") or metric.endswith("_pct"):
        return True
    lower_suffixes = ("_s", "_us", "_ms", "_bytes", "_mib", "_gib", "_w", "_c")
    if metric in ("us", "ms", "bytes", "median_s") or metric.endswith(lower_suffixes):
        return False
    return True


def record_higher_is_better(rec: dict, metric: str) -> bool:
    """Direction of `metric` for this record: ``primary_better`` when the record states it for its
    primary metric, else the naming convention."""
    better = rec.get("primary_better")
    if metric == rec.get("primary_metric") and better in ("higher", "lower"):
        return better == "higher"
    return higher_is_better(metric)


# Structured skip/failure kinds (record ``reason_kind``); older files only have the text.
REASON_KINDS = ("oom", "smaller_oom", "unsupported", "needs_gpus", "timeout", "error", "wrong_result", "above_peak", "shared_gpu",
                "not_built", "interrupted", "unusable_gpu", "peer_rank")


def reason_kind(rec: dict) -> str | None:
    """The record's ``reason_kind``; for older files guessed from the reason text where it is
    unambiguous (out of memory), else None."""
    kind = rec.get("reason_kind")
    if isinstance(kind, str) and kind:
        return kind
    if rec.get("status") != "ok" and str(rec.get("reason") or "").lower().startswith("out of memory"):
        return "oom"
    return None


def record_mode(rec: dict) -> str:
    """"alone" (GPUs measured one at a time; also when absent) or "concurrent"."""
    mode = rec.get("mode")
    return mode if isinstance(mode, str) and mode else "alone"


def measurement_settings(rec: dict, options: dict) -> dict:
    """The settings that change what a case measures: L2 mode, target CV, fixed repetitions, mode.
    The record's ``measurement`` wins over the run's ``options``; unknown settings are None."""
    meas = rec.get("measurement") if isinstance(rec.get("measurement"), dict) else {}
    opts = options if isinstance(options, dict) else {}

    def pick(*pairs):
        for src, key in pairs:
            value = src.get(key)
            if value is not None and value != "family default":
                return value
        return None

    reps = pick((meas, "fixed_samples"), (meas, "repetitions"), (opts, "repetitions"))
    return {"l2": pick((meas, "l2"), (opts, "l2")), "target_cv": pick((meas, "target_cv"), (opts, "target_cv")),
            "repetitions": reps if reps else None,  # 0: not fixed (run until target_cv)
            "mode": record_mode(rec)}


def metric_value(rec: dict, metric: str) -> float | None:
    if metric == "median_s":
        stats = rec.get("stats")
        return stats["median"] if stats else None
    value = (rec.get("metrics") or {}).get(metric)
    return value if is_number(value) else None
