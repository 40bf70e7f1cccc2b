"""The between-run noise prior: how far a case's figure moves from one run to the next on an
unchanged machine, measured once by the project on repeated runs (separate processes, one GPU)
and shipped with the package (``data/noise_prior.json``), so that ``compare`` judges a new node's
first nights against measured spreads instead of a flat floor.

The file (schema ``nodebench.noise_prior``, version 1) is written by
``scripts/dev/facts/noise_prior.py`` from N result files of the same code on one GPU model::

    {"schema": "nodebench.noise_prior", "schema_version": 1, "command": ..., "files": [...],
     "models": {"NVIDIA H200": {"runs": N,
                                "cases": {"<case>": {"spread": s, "runs": n, "max_over_min": r}},
                                "kinds": {"<kind>": {"spread": s, "runs": n, "cases": k}},
                                "families": {"<family>/**": {"spread": s, "runs": n, "cases": k}}}}}

``spread`` is the sample standard deviation of the log of the case's figure of merit over the runs
(the figure ``compare`` judges: the record's ``primary_metric``, else the median time), the same
measure as the spread of several BASE files or of the history. A case is named by
:func:`case_name` (record id, plus its mode when not ``alone``, plus ``xN`` for N GPUs); its *kind*
(:func:`case_kind`, the id without its last part, e.g. ``nccl/all_reduce/float/out_of_place/eager``)
stands in for a case the prior lacks, with the largest spread among the kind's cases, and else its
*family* (:func:`case_family`, e.g. ``gemm/**``), with the largest spread of the family's cases.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from .conventions import is_number, record_mode
from .errors import ReportError
from .stats import between_run_spread

SCHEMA = "nodebench.noise_prior"
SCHEMA_VERSION = 1
PACKAGED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "noise_prior.json")


def case_name(rec: dict) -> str:
    """The prior's name of a record's case: its id, its mode when not 'alone', its GPU count when > 1
    (GPU indices and MPI ranks are left out: the same case on GPU 1 moves as on GPU 0)."""
    name = rec["id"]
    mode = record_mode(rec)
    if mode != "alone":
        name += f" ({mode})"
    n = len(rec.get("gpus") or [])
    if n > 1:
        name += f" x{n}"
    return name


def case_kind(rec: dict) -> str:
    """The case's kind: its id without the last part (the size or batch), with the suffixes of
    :func:`case_name`."""
    rid = rec["id"]
    kind = rid.rsplit("/", 1)[0] + "/*" if "/" in rid else rid
    return case_name({**rec, "id": kind})


def case_family(rec: dict) -> str:
    """The case's family (its record's ``family``), with the suffixes of :func:`case_name`."""
    return case_name({**rec, "id": str(rec.get("family") or rec["id"].split("/", 1)[0]) + "/**"})


def figure(rec: dict) -> float | None:
    """The figure compare judges for an ok record: its primary metric when it has one, else the
    median time; None when neither is a positive number."""
    if rec.get("status") != "ok":
        return None
    pm = rec.get("primary_metric")
    metrics = rec.get("metrics") or {}
    if isinstance(pm, str) and is_number(metrics.get(pm)) and metrics[pm] > 0:
        return float(metrics[pm])
    med = (rec.get("stats") or {}).get("median")
    return float(med) if is_number(med) and med > 0 else None


def record_model(run, rec: dict) -> str:
    """The GPU model a record ran on (one name, also for several GPUs of one model)."""
    rank = rec.get("rank") if isinstance(rec.get("rank"), int) and not isinstance(rec.get("rank"), bool) else None
    text = run.gpu_model(rec.get("gpus") or [], rank)
    return text.rsplit(" x", 1)[0] if " x" in text else text


def build(runs_by_model: dict[str, list], command: str = "", files: list[str] | None = None) -> dict:
    """The prior document from repeated runs (`Run` objects) per GPU model. A case enters when it
    was ok in at least two runs; its spread is the sample standard deviation of the log figure."""
    models = {}
    for model, runs in sorted(runs_by_model.items()):
        values: dict[str, list[float]] = {}
        kinds: dict[str, str] = {}
        families: dict[str, str] = {}
        for run in runs:
            for rec in run.records:
                if record_model(run, rec) != model:
                    continue
                v = figure(rec)
                if v is None:
                    continue
                name = case_name(rec)
                values.setdefault(name, []).append(v)
                kinds[name] = case_kind(rec)
                families[name] = case_family(rec)
        cases = {}
        for name, vals in sorted(values.items()):
            if len(vals) < 2:
                continue
            cases[name] = {"spread": between_run_spread(vals), "runs": len(vals),
                           "max_over_min": max(vals) / min(vals)}
        by_kind: dict[str, dict] = {}
        by_family: dict[str, dict] = {}
        for name, entry in cases.items():
            for table, key in ((by_kind, kinds[name]), (by_family, families[name])):
                k = table.setdefault(key, {"spread": 0.0, "runs": entry["runs"], "cases": 0})
                k["spread"] = max(k["spread"], entry["spread"])
                k["runs"] = min(k["runs"], entry["runs"])
                k["cases"] += 1
        models[model] = {"runs": len(runs), "cases": cases, "kinds": dict(sorted(by_kind.items())),
                         "families": dict(sorted(by_family.items()))}
    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "command": command, "files": files or [],
            "models": models}


@dataclass
class PriorEntry:
    spread: float
    runs: int
    source: str       # e.g. "prior (10 runs, NVIDIA H200)", "prior of kind gemm/fp16/cublaslt/* (...)"


class NoisePrior:
    def __init__(self, doc: dict, path: str):
        self.doc, self.path = doc, path
        self.models: dict = doc["models"]

    def lookup(self, model: str, rec: dict) -> PriorEntry | None:
        """The prior spread of a record's case on `model`: the case's own, else its kind's; on
        another model (measured elsewhere) only when `model` has no prior at all."""
        order = [model] if model in self.models else sorted(self.models)
        for m in order:
            entry = self.models[m]
            where = m if m == model else f"measured on {m}"
            case = entry["cases"].get(case_name(rec))
            if case:
                return PriorEntry(float(case["spread"]), int(case["runs"]), f"prior ({case['runs']} runs, {where})")
        for part, name in (("kinds", case_kind(rec)), ("families", case_family(rec))):
            for m in order:
                entry = self.models[m]
                where = m if m == model else f"measured on {m}"
                found = (entry.get(part) or {}).get(name)
                if found:
                    what = "kind" if part == "kinds" else "family"
                    return PriorEntry(float(found["spread"]), int(found["runs"]),
                                      f"prior of {what} {name} ({found['runs']} runs, {where})")
        return None


def load(path: str | None = None) -> NoisePrior | None:
    """The prior at `path` (default: the packaged one; None when the package has none)."""
    from .load import read_json
    target = path or PACKAGED
    if path is None and not os.path.exists(target):
        return None
    doc = read_json(target)
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise ReportError(f"{target}: not a noise prior (schema {SCHEMA!r})")
    if type(doc.get("schema_version")) is not int or doc.get("schema_version") != SCHEMA_VERSION:
        raise ReportError(f"{target}: noise prior schema_version {doc.get('schema_version')!r}, this reader knows 1")
    models = doc.get("models")
    if not isinstance(models, dict):
        raise ReportError(f"{target}: models: expected an object")
    for m, entry in models.items():
        for part in ("cases", "kinds", "families"):
            table = entry.get(part, {} if part == "families" else None) if isinstance(entry, dict) else None
            if not isinstance(table, dict):
                raise ReportError(f"{target}: models.{m}.{part}: expected an object")
            for name, e in table.items():
                ok = (isinstance(e, dict) and is_number(e.get("spread")) and e["spread"] >= 0
                      and isinstance(e.get("runs"), int) and e["runs"] >= 2)
                if not ok:
                    raise ReportError(f"{target}: models.{m}.{part}.{name}: expected spread >= 0 and runs >= 2")
    return NoisePrior(doc, target)


def json_text(doc: dict) -> str:
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"
