"""Readers take the project's own .json.gz files, never read without a size cap (a device, a FIFO,
a decompression bomb), refuse what C++ refuses; history targets that are not databases; nothing
stored is replaced by less without saying so."""

from __future__ import annotations

import copy
import gzip
import json
import os
import sqlite3
import subprocess
import sys

import pytest

import nbgen
from conftest import REPO


@pytest.fixture(scope="module")
def small_doc():
    return nbgen.make_result(families=("gemm",), n_gpus=1, seed=21)


def _gz(doc, path):
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(doc, fh)
    return str(path)


def _readers(path, good, tmp_path):
    return {
        "compare_new": ("compare", good, path),
        "compare_base": ("compare", path, good),
        "html": ("html", path, "-o", tmp_path / "out"),
        "ingest": ("ingest", path, "--db", tmp_path / "h.sqlite"),
        "validate": ("validate", path),
    }


@pytest.mark.parametrize("command", ["compare_new", "compare_base", "html", "ingest", "validate"])
def test_every_reader_takes_json_gz(command, cli, tmp_path, small_doc):
    good = nbgen.write(small_doc, tmp_path / "good.json")
    packed = _gz(small_doc, tmp_path / "good.json.gz")
    r = cli(*_readers(packed, good, tmp_path)[command])
    assert r.rc == 0, r
    if command == "ingest":
        stored = sqlite3.connect(tmp_path / "h.sqlite").execute("SELECT count(*) FROM records").fetchone()[0]
        assert stored == len(small_doc["records"])


def test_compare_of_a_gz_file_equals_compare_of_the_plain_file(cli, tmp_path, small_doc):
    other = nbgen.make_result(families=("gemm",), n_gpus=1, seed=22, started_at="2025-06-02T02:00:00Z")
    base = nbgen.write(small_doc, tmp_path / "base.json")
    plain = nbgen.write(other, tmp_path / "new.json")
    packed = _gz(other, tmp_path / "new.json.gz")
    assert cli("compare", base, plain, "--json", tmp_path / "a.json").rc == cli(
        "compare", base, packed, "--json", tmp_path / "b.json").rc
    a, b = (json.loads((tmp_path / n).read_text())["cases"] for n in ("a.json", "b.json"))
    assert a == b and len(a) > 10


@pytest.mark.parametrize("command", ["compare", "html", "ingest", "validate", "timeline"])
def test_help_says_json_gz_is_read(command, cli, capsys):
    with pytest.raises(SystemExit):
        cli(command, "--help")
    assert ".json.gz" in capsys.readouterr().out


def test_the_committed_gz_result_is_read():
    from nodebench_reports.load import load_run
    path = REPO / "results" / "h200" / "2026-12-02-quick-split" / "quick.json.gz"
    if not path.exists():
        pytest.skip("committed file not present")
    assert len(load_run(str(path)).records) > 50


def _report(*args, env=None, cwd=None):
    """The real entry point in a subprocess with a timeout: a hang fails instead of blocking."""
    return subprocess.run([sys.executable, "-m", "nodebench_reports", *map(str, args)], capture_output=True,
                          text=True, timeout=60, cwd=cwd,
                          env=dict(os.environ, PYTHONPATH=str(REPO / "reports"), **(env or {})))


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_an_endless_device_is_refused_at_the_size_cap(tmp_path):
    proc = _report("ingest", "/dev/zero", "--db", tmp_path / "h.sqlite", env={"NODEBENCH_REPORT_MAX_BYTES": "1048576"})
    assert proc.returncode == 2 and "/dev/zero: larger than 1 MiB" in proc.stderr, proc.stderr
    assert not (tmp_path / "h.sqlite").exists()


def test_a_decompression_bomb_is_refused_at_the_size_cap(tmp_path, small_doc):
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb") as fh:
        fh.write(b" " * (3 << 20))
    proc = _report("compare", bomb, bomb, env={"NODEBENCH_REPORT_MAX_BYTES": "1048576"})
    assert proc.returncode == 2 and "bomb.json.gz: larger than 1 MiB once decompressed" in proc.stderr, proc.stderr


def test_a_damaged_gz_file_is_named(cli, tmp_path, small_doc):
    packed = _gz(small_doc, tmp_path / "cut.json.gz")
    data = open(packed, "rb").read()
    open(packed, "wb").write(data[: len(data) // 2])
    r = cli("compare", packed, packed)
    assert r.rc == 2 and "cut.json.gz: a damaged gzip file" in r.err, r


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_a_fifo_without_a_writer_does_not_block(tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    proc = _report("compare", fifo, fifo)
    assert proc.returncode == 2 and "pipe.json: the file is empty" in proc.stderr, proc.stderr


@pytest.mark.parametrize("command", ["compare_new", "html", "ingest", "validate"])
def test_schema_version_1_0_is_refused_as_cxx_refuses_it(command, cli, tmp_path, small_doc):
    good = nbgen.write(small_doc, tmp_path / "good.json")
    # json.dump writes 1.0 for a float: the file says "schema_version": 1.0
    v10 = nbgen.write(dict(small_doc, schema_version=1.0), tmp_path / "v10.json")
    assert '"schema_version": 1.0' in open(v10).read()
    r = cli(*_readers(v10, good, tmp_path)[command])
    assert r.rc == 2 and "v10.json" in r.err and "schema_version" in r.err, r


def test_an_empty_baseline_is_said_not_passed(cli, tmp_path, small_doc):
    empty = nbgen.write(dict(copy.deepcopy(small_doc), records=[]), tmp_path / "empty.json")
    new = nbgen.write(small_doc, tmp_path / "new.json")
    r = cli("compare", empty, new)
    assert r.rc == 2 and "empty.json: the baseline holds no case" in r.err and "no regression" not in r.out, r


# ----------------------------------------------------------------------------------------------
# history targets


def test_ingest_of_fewer_records_over_a_stored_run_is_refused(cli, tmp_path, small_doc):
    full = nbgen.write(small_doc, tmp_path / "full.json")
    empty = nbgen.write(dict(copy.deepcopy(small_doc), records=[]), tmp_path / "empty.json")
    db = tmp_path / "h.sqlite"
    assert cli("ingest", full, "--db", db).rc == 0
    n = len(small_doc["records"])
    r = cli("ingest", empty, "--db", db)
    assert r.rc == 2 and f"lacks {n} of its stored records" in r.err and "--replace-with-fewer" in r.err, r
    count = sqlite3.connect(db).execute("SELECT count(*) FROM records").fetchone()[0]
    assert count == n
    # the same run again (nothing lost) is replaced as before
    r = cli("ingest", full, "--db", db)
    assert r.rc == 0 and "replaced" in r.out, r
    # and on request the smaller copy replaces it
    assert cli("ingest", empty, "--db", db, "--replace-with-fewer").rc == 0
    assert sqlite3.connect(db).execute("SELECT count(*) FROM records").fetchone()[0] == 0


def test_ingest_into_an_empty_db_name_is_refused(cli, tmp_path, small_doc):
    good = nbgen.write(small_doc, tmp_path / "good.json")
    r = cli("ingest", good, "--db", "")
    assert r.rc == 2 and "--db is empty" in r.err, r


@pytest.mark.parametrize("command", ["ingest", "trend", "fleet"])
def test_a_libpq_keyword_string_is_no_file_name_and_its_password_is_never_shown(command, tmp_path, small_doc):
    good = nbgen.write(small_doc, tmp_path / "good.json")
    secret = "s3cr3tPW"
    target = f"host=db.example password={secret} dbname=nb"
    args = {"ingest": ("ingest", good), "trend": ("trend", "--case", "x"), "fleet": ("fleet",)}[command]
    work = tmp_path / "cwd"
    work.mkdir()
    proc = _report(*args, "--db", target, cwd=work)
    assert proc.returncode == 2 and "libpq keyword=value" in proc.stderr, proc.stderr
    assert secret not in proc.stderr + proc.stdout
    assert os.listdir(work) == []


@pytest.mark.parametrize("command", ["trend", "fleet"])
def test_since_that_is_not_a_date_is_said(command, cli, tmp_path, capsys):
    args = ("trend", "--case", "x") if command == "trend" else ("fleet",)
    with pytest.raises(SystemExit) as exc:
        cli(*args, "--db", tmp_path / "h.sqlite", "--since", "banana")
    assert exc.value.code == 2 and "'banana' is not a date" in capsys.readouterr().err


def test_since_takes_a_date_and_a_date_time(cli, tmp_path, small_doc):
    good = nbgen.write(small_doc, tmp_path / "good.json")
    db = tmp_path / "h.sqlite"
    assert cli("ingest", good, "--db", db).rc == 0
    for since in ("2025-01-31", "2025-01-31T02:00:00Z"):
        r = cli("trend", "--db", db, "--case", "gemm/*", "--since", since, "-o", tmp_path / "t.png", "-q")
        assert r.rc == 0, r


@pytest.mark.parametrize("command", ["ingest", "trend"])
def test_a_db_under_a_file_says_so(command, cli, tmp_path, small_doc):
    good = nbgen.write(small_doc, tmp_path / "good.json")
    blocker = tmp_path / "FILE"
    blocker.write_text("not a folder")
    db = blocker / "h.sqlite"
    args = ("ingest", good, "--db", db) if command == "ingest" else ("trend", "--db", db, "--case", "x")
    r = cli(*args)
    assert r.rc == 2 and f"{blocker} is a file, not a folder" in r.err, r
