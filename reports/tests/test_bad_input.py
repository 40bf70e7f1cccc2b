"""Malformed files, other schema versions and mismatched runs: exit 2 with a message, never a traceback."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import pytest

import nbgen


def _mutate(doc, fn):
    doc = copy.deepcopy(doc)
    fn(doc)
    return doc


def _set(path, value):
    def fn(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return fn


def _delete(path):
    def fn(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
    return fn


def _duplicate_record(doc):
    doc["records"].append(copy.deepcopy(doc["records"][0]))


# name -> (how to make the file, text the message must contain)
CASES = {
    "missing_file": (None, "no such file"),
    "empty_file": (b"", "empty"),
    "truncated_json": (b'{"schema": "nodebench.result", "schema_version": 1, "records": [', "malformed JSON"),
    "not_utf8": (b"\xff\xfe\x00garbage", "not UTF-8"),
    "top_level_array": (b"[1, 2, 3]", "expected a JSON object"),
    "other_schema": (_set(["schema"], "other.result"), "field 'schema'"),
    "no_schema_field": (_delete(["schema"]), "field 'schema': missing"),
    "schema_version_2": (_set(["schema_version"], 2), "field 'schema_version'"),
    "schema_version_string": (_set(["schema_version"], "1"), "field 'schema_version'"),
    "records_missing": (_delete(["records"]), "field 'records': missing"),
    "records_not_list": (_set(["records"], {"a": 1}), "field 'records': expected an array"),
    "median_not_number": (_set(["records", 2, "stats", "median"], "fast"), "records[2].stats.median"),
    "ok_without_stats": (_set(["records", 4, "stats"], None), "records[4].stats"),
    "bad_status": (_set(["records", 1, "status"], "great"), "records[1].status"),
    "negative_sample": (_set(["records", 0, "samples_s", 0], -1.0), "records[0].samples_s[0]"),
    "gpu_without_name": (_delete(["environment", "gpus", 0, "name"]), "environment.gpus[0].name"),
    "bad_timestamp": (_set(["started_at"], "yesterday"), "field 'started_at'"),
    "duplicate_record": (_duplicate_record, "appears twice"),
}


def _make(case, tmp_path, base_doc):
    how, _ = CASES[case]
    path = tmp_path / f"{case}.json"
    if how is None:
        return str(path)  # never created
    if isinstance(how, bytes):
        path.write_bytes(how)
        return str(path)
    return nbgen.write(_mutate(base_doc, how), path)


@pytest.fixture(scope="module")
def small_doc():
    return nbgen.make_result(families=("gemm",), n_gpus=1, seed=11)


@pytest.mark.parametrize("case", sorted(CASES))
def test_compare_rejects_bad_new_file(case, cli, tmp_path, small_doc):
    good = nbgen.write(small_doc, tmp_path / "good.json")
    bad = _make(case, tmp_path, small_doc)
    r = cli("compare", good, bad)
    assert r.rc == 2, r
    assert os.path.basename(bad) in r.err, r
    assert CASES[case][1] in r.err, r
    assert "Traceback" not in r.err


@pytest.mark.parametrize("case", ["truncated_json", "schema_version_2", "other_schema", "median_not_number"])
def test_compare_rejects_bad_base_file(case, cli, tmp_path, small_doc):
    good = nbgen.write(small_doc, tmp_path / "good.json")
    bad = _make(case, tmp_path, small_doc)
    r = cli("compare", bad, good)
    assert r.rc == 2 and CASES[case][1] in r.err and os.path.basename(bad) in r.err, r


@pytest.mark.parametrize("case", ["truncated_json", "schema_version_2", "other_schema", "ok_without_stats",
                                  "missing_file"])
def test_html_rejects_bad_file(case, cli, tmp_path, small_doc):
    good = nbgen.write(small_doc, tmp_path / "good.json")
    bad = _make(case, tmp_path, small_doc)
    r = cli("html", good, bad, "-o", tmp_path / "out")
    assert r.rc == 2 and CASES[case][1] in r.err and os.path.basename(bad) in r.err, r
    assert not (tmp_path / "out" / "report.html").exists()


@pytest.mark.parametrize("case", ["truncated_json", "schema_version_2", "records_missing"])
def test_ingest_rejects_bad_file_and_writes_nothing(case, cli, tmp_path, small_doc):
    import sqlite3

    good = nbgen.write(small_doc, tmp_path / "good.json")
    bad = _make(case, tmp_path, small_doc)
    db = tmp_path / "h.sqlite"
    r = cli("ingest", good, bad, "--db", db)
    assert r.rc == 2 and CASES[case][1] in r.err and os.path.basename(bad) in r.err, r
    if db.exists():
        assert sqlite3.connect(db).execute("SELECT count(*) FROM runs").fetchone()[0] == 0


def test_compare_refuses_different_gpu_models(cli, tmp_path):
    a = nbgen.write(nbgen.make_result(families=("gemm",), n_gpus=1, seed=1), tmp_path / "h200.json")
    b = nbgen.write(nbgen.make_result(families=("gemm",), n_gpus=1, seed=2, gpu_name="NVIDIA H100 80GB HBM3"),
                    tmp_path / "h100.json")
    r = cli("compare", a, b)
    assert r.rc == 2, r
    assert "environment.gpus[*].name" in r.err and "--allow-mismatch" in r.err
    assert "H100" in r.err and "H200" in r.err
    r = cli("compare", a, b, "--allow-mismatch")
    assert r.rc == 0, r
    assert "GPU models differ" in r.out


def test_compare_of_different_gpu_counts_compares_common_cases(cli, tmp_path):
    # was refused; a 1-GPU and a 2-GPU file of one model now compare their common per-GPU cases
    a = nbgen.write(nbgen.make_result(families=("gemm", "hostlink"), n_gpus=1, seed=1), tmp_path / "one.json")
    b = nbgen.write(nbgen.make_result(families=("gemm", "hostlink"), n_gpus=2, seed=2), tmp_path / "two.json")
    n_host = len(nbgen.HOSTLINK_SIZES)
    r = cli("compare", a, b, "--json", tmp_path / "c.json")
    assert r.rc == 0 and "1 GPU(s) in" in r.out, r
    data = json.loads((tmp_path / "c.json").read_text())
    assert all(c["gpus"] != [1] for c in data["cases"]) and data["summary"]["missing"] == 0
    assert data["only_in_new"] and all("[gpu 1]" in k for k in data["only_in_new"])
    # the other way round: GPU 1's cases cannot be run by a 1-GPU node: listed, not missing
    r = cli("compare", b, a, "--json", tmp_path / "d.json")
    assert r.rc == 0, r
    data = json.loads((tmp_path / "d.json").read_text())
    assert data["needs_gpus"] and all("[gpu 1]" in k for k in data["needs_gpus"]) and not data["missing"]
    assert len(data["needs_gpus"]) >= n_host


def test_html_refuses_files_of_different_nodes(cli, tmp_path):
    a = nbgen.write(nbgen.make_result(families=("gemm",), n_gpus=1, hostname="node01"), tmp_path / "a.json")
    b = nbgen.write(nbgen.make_result(families=("gemm",), n_gpus=1, hostname="node02"), tmp_path / "b.json")
    r = cli("html", a, b, "-o", tmp_path / "out")
    assert r.rc == 2 and "environment.host.hostname" in r.err and "b.json" in r.err, r
    r = cli("html", a, b, "-o", tmp_path / "out", "--allow-mismatch")
    assert r.rc == 0, r


def test_html_refuses_mixed_schema_versions(cli, tmp_path, small_doc):
    a = nbgen.write(small_doc, tmp_path / "v1.json")
    b = nbgen.write(dict(small_doc, schema_version=2), tmp_path / "v2.json")
    r = cli("html", a, b, "-o", tmp_path / "out")
    assert r.rc == 2 and "v2.json" in r.err and "schema_version" in r.err, r


@pytest.mark.parametrize("args, text", [
    (["compare", "a.json"], "the following arguments are required"),
    (["compare", "a.json", "b.json", "--threshold", "abc"], "not a number"),
    (["compare", "a.json", "b.json", "--threshold", "5"], "fraction"),
    (["compare", "a.json", "b.json", "--alpha", "2"], "between 0 and 1"),
    (["compare", "a.json", "b.json", "--test", "ttest"], "invalid choice"),
    (["html", "a.json"], "-o/--output"),
    (["fleet"], "--db"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_options_exit_2(args, text, cli, capsys):
    with pytest.raises(SystemExit) as exc:
        cli(*args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert text in err and "usage:" in err and "Traceback" not in err


def test_no_command_exits_2(cli):
    r = cli()
    assert r.rc == 2 and "usage: nodebench-report" in r.err


def test_console_script_prints_message_not_traceback(tmp_path, small_doc):
    """The real entry point (subprocess): exit 2, one clear line on stderr."""
    good = nbgen.write(small_doc, tmp_path / "good.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "nodebench.result", "schema_version": 7}')
    proc = subprocess.run([sys.executable, "-m", "nodebench_reports", "compare", good, str(bad)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("nodebench-report: error:") and "bad.json" in proc.stderr
    assert "schema_version" in proc.stderr


@pytest.mark.parametrize("command", ["html", "compare", "ingest", "trend", "fleet", "validate"])
def test_every_command_has_help(command, cli, capsys):
    with pytest.raises(SystemExit) as exc:
        cli(command, "--help")
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "usage: nodebench-report " + command in out and "exit status" in out


def _file_commands(path, tmp_path, good):
    """Every command that reads a result file, reading `path` (compare as BASE and as NEW)."""
    return {
        "compare_new": ("compare", good, path),
        "compare_base": ("compare", path, good),
        "html": ("html", path, "-o", tmp_path / "out"),
        "ingest": ("ingest", path, "--db", tmp_path / "h.sqlite"),
        "timeline": ("timeline", path, "--out", tmp_path / "t.png"),
        "validate": ("validate", path),
    }


@pytest.mark.parametrize("command", ["compare_new", "compare_base", "html", "ingest", "timeline", "validate"])
def test_every_reader_refuses_an_unknown_schema_version_and_a_folder(command, cli, tmp_path, small_doc):
    good = nbgen.write(small_doc, tmp_path / "good.json")
    v99 = nbgen.write(dict(small_doc, schema_version=99), tmp_path / "v99.json")
    r = cli(*_file_commands(v99, tmp_path, good)[command])
    assert r.rc == 2 and "v99.json" in r.err and "schema_version" in r.err and "99" in r.err, r
    folder = tmp_path / "a_folder"
    folder.mkdir()
    r = cli(*_file_commands(str(folder), tmp_path, good)[command])
    assert r.rc == 2 and "a_folder: is a directory" in r.err, r
    assert "Traceback" not in r.err


def test_html_refuses_an_advise_document_of_an_unknown_version(cli, tmp_path, small_doc):
    good = nbgen.write(small_doc, tmp_path / "good.json")
    advice = tmp_path / "advice.json"
    advice.write_text(json.dumps({"schema": "nodebench.advise", "schema_version": 99, "rows": []}))
    r = cli("html", good, "--advise", advice, "-o", tmp_path / "out")
    assert r.rc == 2 and "advice.json" in r.err and "99" in r.err, r
