"""Reading nodebench result files (schema ``nodebench.result``, version 1) into the in-memory view
the commands work on: a :class:`Run` per file, several runs of one node merged into a
:class:`ReportData`.

Every problem is a :class:`ReportError` naming the file and the field (the structural check is
:mod:`.schema_check`; the format's shared conventions, such as case identity and a record's figure
of merit, are :mod:`.conventions`, both re-exported here). Nothing here names a family.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import stat
import zlib
from dataclasses import dataclass, field
from typing import Any, Iterable

from .conventions import (REASON_KINDS, higher_is_better, is_number, key_label, measurement_settings,  # noqa: F401
                          metric_value, primary_metric, reason_kind, record_higher_is_better, record_key,
                          record_mode)
from .errors import ReportError
from .metrics import undeclared
from .schema_check import RECORD_STATUSES, RUN_STATUSES, check_document  # noqa: F401


MAX_BYTES = 256 * 1024 * 1024   # the most any reader takes (a full suite is about 7.5 MB), after decompression
_GZIP_MAGIC = b"\x1f\x8b"


def _max_bytes() -> int:
    text = os.environ.get("NODEBENCH_REPORT_MAX_BYTES", "")
    try:
        return int(text) if text and int(text) > 0 else MAX_BYTES
    except ValueError:
        return MAX_BYTES


def _read_capped(path: str, cap: int) -> bytes:
    """At most `cap` bytes of `path` (ReportError past that); a FIFO is opened without waiting for a
    writer (none: it reads as empty), so nothing here blocks on an unconnected pipe or reads a device forever."""
    try:
        st = os.stat(path)
        if stat.S_ISFIFO(st.st_mode):
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            os.set_blocking(fd, True)
            fh = os.fdopen(fd, "rb")
        else:
            fh = open(path, "rb")
        with fh:
            raw = fh.read(cap + 1)
    except OSError as exc:
        raise ReportError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > cap:
        raise ReportError(f"{path}: larger than {cap >> 20} MiB, not a result file this reader takes "
                          f"(NODEBENCH_REPORT_MAX_BYTES raises the limit)")
    if raw[:2] == _GZIP_MAGIC:
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as gz:
                raw = gz.read(cap + 1)
        except (OSError, EOFError, zlib.error) as exc:
            raise ReportError(f"{path}: a damaged gzip file ({exc})") from None
        if len(raw) > cap:
            raise ReportError(f"{path}: larger than {cap >> 20} MiB once decompressed, not a result file this "
                              f"reader takes (NODEBENCH_REPORT_MAX_BYTES raises the limit)")
    return raw


def read_json(path: str) -> Any:
    """Read a JSON file (plain or gzip-compressed, e.g. .json.gz), at most MAX_BYTES, turning every
    I/O and syntax problem into a ReportError."""
    if not os.path.exists(path):
        raise ReportError(f"{path}: no such file")
    if os.path.isdir(path):
        raise ReportError(f"{path}: is a directory, expected a result file (.json or .json.gz)")
    raw = _read_capped(path, _max_bytes())
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
    if type(doc.get("schema_version")) is not int or doc.get("schema_version") != 1:
        raise ReportError(f"{path}: advise schema_version {doc.get('schema_version')!r}, this reader knows 1")
    rows = doc.get("rows")
    if not isinstance(rows, list):
        raise ReportError(f"{path}: rows: expected a list")
    for i, r in enumerate(rows):
        for key in ("gpus", "batch", "accumulation", "images_per_s", "efficiency"):
            if not isinstance(r, dict) or not is_number(r.get(key)):
                raise ReportError(f"{path}: rows[{i}].{key}: expected a number")
    return doc


_FRAMEWORK_SEVERITIES = ("ok", "info", "warn", "fail", "skipped")


def read_frameworks(path: str) -> dict:
    """A `nodebench frameworks --out` report (schema nodebench.frameworks, version 1): its judged
    ``checks`` (the first screen's verdict and fixes) and, when written with --bench, its bench
    ``records`` (the frameworks section; docs/FRAMEWORKS.md); ReportError naming the file otherwise."""
    doc = read_json(path)
    if not isinstance(doc, dict) or doc.get("schema") != "nodebench.frameworks":
        raise ReportError(f"{path}: not a nodebench frameworks report (schema 'nodebench.frameworks')")
    if type(doc.get("schema_version")) is not int or doc.get("schema_version") != 1:
        raise ReportError(f"{path}: frameworks schema_version {doc.get('schema_version')!r}, this reader knows 1")
    checks = doc.get("checks")
    if not isinstance(checks, list) or not all(isinstance(c, dict) and isinstance(c.get("id"), str)
                                               and c.get("severity") in _FRAMEWORK_SEVERITIES for c in checks):
        raise ReportError(f"{path}: checks: expected a list of checks with an id and a severity "
                          "(ok, info, warn, fail, skipped); write it with nodebench frameworks --out FILE")
    records = doc.get("records", [])
    if not isinstance(records, list):
        raise ReportError(f"{path}: records: expected a list (a report written with --bench)")
    for i, r in enumerate(records):
        if not isinstance(r, dict) or not isinstance(r.get("params"), dict) or not isinstance(r.get("status"), str):
            raise ReportError(f"{path}: records[{i}]: expected an object with params (an object) and status")
        for key in ("gpus", "batch"):
            if not is_number(r["params"].get(key)):
                raise ReportError(f"{path}: records[{i}].params.{key}: expected a number")
        metrics = r.get("metrics", {})
        if not isinstance(metrics, dict):
            raise ReportError(f"{path}: records[{i}].metrics: expected an object")
        for name, value in metrics.items():   # the check's own figures (docs/SCHEMA.md, framework reports)
            if value is not None and not is_number(value):
                raise ReportError(f"{path}: records[{i}].metrics.{name}: expected a number")
    return doc


# ----------------------------------------------------------------------------------------------
# The in-memory view of a run


@dataclass
class Run:
    """One loaded, checked result file."""

    path: str
    doc: dict = field(repr=False)
    # "family/metric" for each metric a record carries that its family does not declare (metrics.py),
    # found once where the file is read
    undeclared_metrics: list = field(default_factory=list, repr=False)

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
    run = Run(path=path, doc=doc)
    run.undeclared_metrics = undeclared(doc["records"])
    return run


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
    frameworks: dict | None = None  # a `nodebench frameworks --out` report (read_frameworks), when given
    inter_node_gbps: float | None = None  # the network between nodes (html --inter-node-gbps), when given

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
