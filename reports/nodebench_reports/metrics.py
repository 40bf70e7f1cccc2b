"""Typed metrics: a metric's name, unit, direction and label, declared once by the family that writes it
(``families/<family>.py``: ``METRICS = metrics.declare(...)``) and read here by every reader (compare,
history, the reporters); the core names no family's metric.

The unit is in the name (the schema's naming rule: ``tflops``, ``*_gbps``, ``*_us``, ``*_bytes``, ...):
:data:`SUFFIXES` turns it into the unit's text and the direction a declaration takes unless it states
its own (an error count: lower is better). What the harness writes on every record (``time_us``,
``of_theoretical_pct``) and the samples' median (``median_s``) are :data:`COMMON`; a clock-normalised
companion ``<rate>_per_ghz`` (README "Clock-normalised rates") is the declared rate's. A name nobody
declares (a file of a newer nodebench) is typed by its suffix alone, and :func:`undeclared` names it at
the edge, where a file is read (:func:`load.load_run`).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

HIGHER, LOWER = "higher", "lower"

# (suffix, unit text, direction): the first that the name ends with; a name equal to a bare unit
# (tflops, gbps, ...) matches its own entry.
SUFFIXES = (
    ("_per_ghz", "per GHz of SM clock", HIGHER), ("per_s", "/s", HIGHER), ("tflops", "TFLOP/s", HIGHER),
    ("tops", "TOP/s", HIGHER), ("gbps", "GB/s", HIGHER), ("_us", "us", LOWER), ("_ms", "ms", LOWER),
    ("_s", "s", LOWER), ("_bytes", "bytes", LOWER), ("_mib", "MiB", LOWER), ("_gib", "GiB", LOWER),
    ("_pct", "%", HIGHER), ("_w", "W", LOWER), ("_c", "deg C", LOWER), ("_mhz", "MHz", HIGHER),
    ("_x", "x", HIGHER), ("_share", "share", HIGHER), ("_ratio", "ratio", HIGHER), ("_count", "count", HIGHER),
)
_BARE_LOWER = ("us", "ms", "bytes")


def _by_suffix(name: str) -> tuple[str, str]:
    """(unit text, direction) from the name's suffix; ("", higher) for a name without a known one."""
    if name in _BARE_LOWER:
        return name, LOWER
    for suffix, unit, better in SUFFIXES:
        if name.endswith(suffix):
            return unit, better
    return "", HIGHER


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    better: str                 # HIGHER or LOWER
    label: str = ""             # an axis/table label; empty: the name and its unit
    declared: bool = True       # False: typed by its name's suffix alone (nobody declares it)

    @property
    def higher_is_better(self) -> bool:
        return self.better == HIGHER

    @property
    def axis_label(self) -> str:
        if self.label:
            return self.label
        if self.name.endswith("_per_ghz"):
            return f"{self.name} (per GHz of SM clock)"
        return f"{self.name} ({self.unit})" if self.unit and self.unit != self.name else self.name


def metric(name: str, label: str = "", better: str | None = None) -> Metric:
    """A metric declaration: the unit from the name's suffix, the direction from it unless given."""
    unit, default = _by_suffix(name)
    if better not in (None, HIGHER, LOWER):
        raise ValueError(f"metric {name}: better must be {HIGHER!r} or {LOWER!r}, not {better!r}")
    return Metric(name, unit, better or default, label)


def declare(*specs) -> dict[str, Metric]:
    """A family's ``METRICS``: each spec a name, or a :class:`Metric` (from :func:`metric`)."""
    out: dict[str, Metric] = {}
    for spec in specs:
        m = spec if isinstance(spec, Metric) else metric(spec)
        if m.name in out:
            raise ValueError(f"metric {m.name} declared twice")
        out[m.name] = m
    return out


COMMON = declare(metric("median_s", "median time (s)"), metric("time_us", "time (us)"), "of_theoretical_pct",
                 "workspace_bytes",  # the algorithm choice's workspace (harness/bench/algo_choice.hpp)
                 metric("sm_clock_mhz", "SM clock (MHz)"))  # the clock a case ran at (harness/bench/metric.hpp)
_COMPANION = "_per_ghz"


def _lookup(table: dict[str, Metric], name: str) -> Metric | None:
    """``name`` in a family's table: by name, as the companion of a declared rate, or by a declared
    pattern (``gpu*_gbps``: one metric per GPU)."""
    if name in table:
        return table[name]
    if name.endswith(_COMPANION) and name[:-len(_COMPANION)] in table:
        return metric(name)
    for key, m in table.items():
        if "*" in key and fnmatch.fnmatchcase(name, key):
            return Metric(name, m.unit, m.better, m.label)
    return None


def _family_tables() -> list[tuple[str, dict[str, Metric]]]:
    from . import families  # here: the family modules import this one
    return [(m.FAMILY, getattr(m, "METRICS", {})) for m in families.modules()]


def declared(family: str | None, name: str) -> Metric | None:
    """The declaration of ``name`` for a record of ``family`` (its own, a companion of its own, or
    common); None when that family does not declare it."""
    if name in COMMON:
        return COMMON[name]
    table = next((t for f, t in _family_tables() if f == family), {})
    return _lookup(table, name)


def by_name(name: str) -> Metric:
    """A metric by its name alone (trend and fleet pick metrics by name across families): the
    declaration of the first family that declares it (families agree: a test checks it), else the
    name's suffix."""
    if name in COMMON:
        return COMMON[name]
    for _family, table in _family_tables():
        found = _lookup(table, name)
        if found is not None:
            return found
    unit, better = _by_suffix(name)
    return Metric(name, unit, better, declared=False)


def of_record(rec: dict, name: str) -> Metric:
    """The metric ``name`` of this record: its family's declaration, else by name."""
    return declared(rec.get("family"), name) or by_name(name)


def all_declared() -> dict[str, dict[str, Metric]]:
    """Every family's declarations, by family (for the tests and the probe)."""
    return {f: dict(t) for f, t in _family_tables()}


def undeclared(records) -> list[str]:
    """"family/metric" for each metric name a record carries that its family does not declare
    (each once); a family the report does not know is not judged."""
    known = {f for f, _t in _family_tables()}
    out: list[str] = []
    for rec in records:
        fam = rec.get("family")
        if fam not in known:
            continue
        for name in rec.get("metrics") or {}:
            if declared(fam, name) is None and f"{fam}/{name}" not in out:
                out.append(f"{fam}/{name}")
    return out
