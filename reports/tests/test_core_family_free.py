"""The probe of the reports' layering: no module of nodebench_reports outside families/ knows a family.
It reads each core module's code (docstrings and comments aside) and fails on a string that picks
records by a family's name (``rec["family"] == "nccl"``, ``data.family("train")``) or id (``"nccl/"``,
``"train/resnet50/..."``), reads one of a family's declared metrics by name (``m.get("busbw_gbps")``),
or imports a family module (``from .families import nccl``). Family names come from the modules'
``FAMILY``, metric names from their ``METRICS`` (metrics.py), never from a list typed here.

A string counts where code uses it to pick or read: compared, subscripted with, passed to a call, a
dictionary key, or a member of a tuple/list/set that is compared or passed. A label in a table
(``("memory", value)``) is no pick.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import REPO

from nodebench_reports import families, metrics

CORE = REPO / "reports" / "nodebench_reports"


def _family_words():
    names = {m.FAMILY for m in families.modules()}
    modules = {m.__name__.rsplit(".", 1)[1] for m in families.modules()}
    declared = {n for t in metrics.all_declared().values() for n in t if "*" not in n} - set(metrics.COMMON)
    return names, modules, declared


def _docstrings(tree) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


_FIELD_READS = ("get", "require", "setdefault", "pop")


def _used_strings(tree):
    """(string, line, picks) of every string constant the code picks or reads with; ``picks``: where a
    family's name would select records (compared, or passed to a call other than a field read), as
    against a key that reads a field (a subscript, ``.get``, a dictionary key), where a family's name
    is another field's ("percent_of_peak.peak")."""
    doc = _docstrings(tree)
    slots = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            slots += [(s, True) for s in (node.left, *node.comparators)]
        elif isinstance(node, ast.Subscript):
            slots.append((node.slice, False))
        elif isinstance(node, ast.Call):
            read = isinstance(node.func, ast.Attribute) and node.func.attr in _FIELD_READS
            slots += [(s, not read) for s in (*node.args, *(k.value for k in node.keywords))]
        elif isinstance(node, ast.Dict):
            slots += [(k, False) for k in node.keys if k is not None]
    for slot, picks in slots:
        for sub in ([slot] + list(slot.elts) if isinstance(slot, (ast.Tuple, ast.List, ast.Set)) else [slot]):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and id(sub) not in doc:
                yield sub.value, sub.lineno, picks


def offences(source: str, where: str = "<module>") -> list[str]:
    names, modules, declared = _family_words()
    tree = ast.parse(source)
    out = []
    for text, line, picks in _used_strings(tree):
        if text in names and picks:
            out.append(f"{where}:{line}: picks by family name {text!r}")
        elif any(text.startswith(f"{n}/") for n in names):
            out.append(f"{where}:{line}: picks by family id {text!r}")
        elif text in declared:
            out.append(f"{where}:{line}: reads family metric {text!r} by name")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if mod.split(".")[-1] in modules and "families" in mod:
                out.append(f"{where}:{node.lineno}: imports family module {mod}")
            elif mod.endswith("families"):
                out += [f"{where}:{node.lineno}: imports family module {a.name}" for a in node.names if a.name in modules]
    return out


def core_modules() -> list[Path]:
    return sorted(p for p in CORE.glob("*.py"))


def test_no_core_module_knows_a_family():
    found = [o for p in core_modules() for o in offences(p.read_text(encoding="utf-8"), p.name)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("code", [
    'def f(rec):\n    return rec.get("family") != "train"\n',
    'def f(rec):\n    return rec["family"] in ("conv", "train")\n',
    'def f(data):\n    return data.family("nccl", status=None)\n',
    'def f(rec):\n    return rec["id"].startswith("hostlink/h2d/")\n',
    'def f(m):\n    return m.get("busbw_gbps")\n',
    'def f(m):\n    return m["step_time_ms"]\n',
    'LABELS = {"algbw_gbps": "algorithm bandwidth"}\n',
    'from .families import nccl, train_dp\n',
    'from .families.nccl import scaling\n',
])
def test_the_probe_catches(code):
    assert offences(code), code


@pytest.mark.parametrize("code", [
    '"""A docstring naming the nccl family and busbw_gbps."""\n',
    'ROWS = [("memory", 1)]\n',          # a label, not a pick
    'def f(pop):\n    return pop.get("peak")\n',   # a field of that name (percent_of_peak.peak)
    'def f(rec):\n    return rec.get("family")\n',
    'def f(m):\n    return m.get("time_us"), m.get("median_s")\n',   # what every record carries
    'from .families import modules\n',
])
def test_the_probe_lets_pass(code):
    assert not offences(code), code
