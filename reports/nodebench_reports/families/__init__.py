"""What the report knows of each family: one module per family, ``families/<family>.py``, found by
its file name (pkgutil), so adding a family touches only its own module.

A module names its family and may hold any of the rest (README.md, "Families in the report"):

``FAMILY = "gemm"``
    the records' ``family``; a module without it is not a family module.
``METRICS = metrics.declare(metric("tflops", "TFLOPS"), ...)``
    its metrics: name, unit (from the name's suffix), direction and label, the one source every reader
    (compare, history, the figures) takes them from (``metrics.py``).
``PRIMARY = ("tflops", "tops")``
    the figure of merit of files written before records carried ``primary_metric``: the first of
    these that a record has (``conventions.primary_metric``); newer records name their own.
``FEEDS = ("fp16_vs_fp32",)``
    the ``analysis`` keys the harness computes from this family's records; a file that has such
    records but not the analysis is reported as "not in this file" (``derive.missing_analysis``),
    never judged a second time here.
``group_key(rec) -> tuple | None``
    the series a record belongs to: the records of one key are one line (or panel, or matrix) of the
    family's figure and are judged together by its checklist items; None for a record it does not group.
``figures(data) -> list[plots.Plot]``
    its figures; each Plot's ``order`` places it on the page.
``checklist_items(data) -> list[checklist.Item]``
    its checklist items, placed with ``checklist.placed(item, order, precedence)``; where two families
    judge one item (the memory item: train over conv) the higher precedence speaks.
Cross-family facts, asked with :func:`ask` (the first module that answers, in name order):
    ``training_images_per_s(data, gpu) -> (images/s, label) | None`` (what a GPU's training consumes,
    for the host link's headroom) and ``training_step(data) -> (seconds, label) | None`` (one GPU's
    training step, for the all-reduce's share of it).
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

_modules: list[ModuleType] | None = None


def modules() -> list[ModuleType]:
    """Every family module, in the order of their names (imported once)."""
    global _modules
    if _modules is None:
        found = []
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
            mod = importlib.import_module(f"{__name__}.{info.name}")
            if isinstance(getattr(mod, "FAMILY", None), str):
                found.append(mod)
        _modules = found
    return _modules


def module(family) -> ModuleType | None:
    """The module of that family, or None (a family the report knows nothing of)."""
    return next((m for m in modules() if m.FAMILY == family), None)


def primary_fallback(family) -> tuple[str, ...]:
    mod = module(family)
    return tuple(getattr(mod, "PRIMARY", ())) if mod else ()


def feeders(analysis_key: str) -> list[str]:
    """The families whose records the harness computes ``analysis.<analysis_key>`` from."""
    return [m.FAMILY for m in modules() if analysis_key in getattr(m, "FEEDS", ())]


def group_key(rec: dict):
    mod = module(rec.get("family"))
    fn = getattr(mod, "group_key", None)
    return fn(rec) if fn else None


def figures(data) -> list:
    """Every family's figures (plots.Plot), in module order; the page sorts them by ``order``."""
    return [p for m in modules() if hasattr(m, "figures") for p in m.figures(data)]


def checklist_items(data) -> list:
    """Every family's checklist items, in module order; the checklist places them by ``order``."""
    return [i for m in modules() if hasattr(m, "checklist_items") for i in m.checklist_items(data)]


def ask(hook: str, *args):
    """The first answer (not None) of the modules that provide ``hook``; None when none answers."""
    for m in modules():
        fn = getattr(m, hook, None)
        if fn is not None:
            answer = fn(*args)
            if answer is not None:
                return answer
    return None
