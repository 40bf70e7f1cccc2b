"""The output-format registry (nodebench_reports/formats.py): every writer the reports produce registers
itself, the commands iterate the registry, and a new format is one registration in one file."""

from __future__ import annotations

import json

import nbgen
from nodebench_reports import cli as cli_module
from nodebench_reports import formats

EXPECTED = {  # name: (command, file name or option)
    "html": ("html", "report.html"), "markdown": ("html", "summary.md"),
    "compare-text": ("compare", None), "compare-json": ("compare", "--json"), "compare-junit": ("compare", "--junit"),
    "fleet-text": ("fleet", None), "fleet-json": ("fleet", "--json"),
}


def test_the_registry_lists_every_format():
    got = {f.name: (f.command, f.file_name or f.option) for f in formats.formats()}
    assert got == EXPECTED
    assert all(callable(f.render) and f.description for f in formats.formats())


def test_the_page_is_written_from_the_registry(cli, tmp_path):
    r = cli("html", nbgen.write(nbgen.make_result(families=("gemm",), n_gpus=1), tmp_path / "a.json"),
            "-o", tmp_path / "out")
    assert r.rc == 0, r
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(
        f.file_name for f in formats.formats("html"))


def test_a_new_format_is_one_registration(cli, tmp_path, monkeypatch):
    """A format registered for compare with an option: the command offers the option and writes it."""
    monkeypatch.setattr(formats, "_registry", dict(formats._registry))
    formats.register("compare-count", "compare", "also write the number of cases", option="--count")(
        lambda result: json.dumps({"cases": len(result.cases)}))
    doc = nbgen.write(nbgen.make_result(families=("gemm",), n_gpus=1), tmp_path / "a.json")
    assert "--count" in _compare_help()
    r = cli("compare", doc, doc, "--count", tmp_path / "n.json", "--quiet")
    assert r.rc == 0, r
    assert json.loads((tmp_path / "n.json").read_text())["cases"] > 0


def _compare_help() -> str:
    parser = cli_module.build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices["compare"].format_help()
