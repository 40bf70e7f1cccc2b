"""Real result files committed under results/ (e.g. results/h200/quick-*.json), when there are any.

Every results/**/*.json or .json.gz (the committed run files are gzip-compressed; the readers take
both) whose top-level "schema" is "nodebench.result" must validate against the
schema, render to HTML, and compare with itself with exit status 0. Nothing to check (one skip)
while no such file exists.
"""

from __future__ import annotations

import gzip
import json

import pytest

from conftest import REPO


def _read(path):
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def real_result_files():
    root = REPO / "results"
    found = []
    if root.is_dir():
        for path in sorted([*root.rglob("*.json"), *root.rglob("*.json.gz")]):
            try:
                doc = _read(path)
            except (OSError, ValueError):
                continue
            if isinstance(doc, dict) and doc.get("schema") == "nodebench.result":
                found.append(path)
    return found


FILES = real_result_files()
PARAMS = [pytest.param(p, id=str(p.relative_to(REPO))) for p in FILES] or [
    pytest.param(None, marks=pytest.mark.skip(reason="no real result files under results/ yet"))]


@pytest.mark.parametrize("path", PARAMS)
def test_real_result_validates(path, validate):
    validate(_read(path))


@pytest.mark.parametrize("path", PARAMS)
def test_real_result_renders(path, cli, tmp_path):
    r = cli("html", path, "-o", tmp_path)
    assert r.rc == 0, r
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "<h2 id=\"checklist\">" in html and (tmp_path / "summary.md").exists()


@pytest.mark.parametrize("path", PARAMS)
def test_real_result_compares_with_itself(path, cli, tmp_path):
    r = cli("compare", path, path, "--json", tmp_path / "c.json")
    assert r.rc == 0, r
    assert json.loads((tmp_path / "c.json").read_text())["summary"]["regressions"] == 0
