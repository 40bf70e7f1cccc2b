"""The history on both backends (SQLite file, PostgreSQL through a throw-away server): the
derived tables kept at ingest equal a full recompute, many writers at once, a run lands whole or
not at all, migrations of older histories, and the PostgreSQL URL's rules (no password, the
database unreachable, psycopg missing)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest

import nbgen
from conftest import REPO

CASE = "gemm/fp16/cublaslt/square_8192"
DERIVED = {"case_noise": "machine, record_id, gpus, rank, runs, cv, max_over_min",
           "case_latest": "machine, record_id, gpus, rank, gpu_model, name, primary_only, run_id, started_at, node, "
                          "value"}
STORED = {"runs": "run_id, node, started_at, finished_at, run_status, gpu_models, machine",
          "records": "run_id, record_id, gpus, rank, node, family, case_name, status, gpu_model, median_s, cv, "
                     "n_samples, params, flags, reason, primary_metric, machine, run_to_run_cv",
          "metrics": "run_id, record_id, gpus, rank, name, value"}


def gemm_doc(node, day, seed, **kw):
    return nbgen.make_result(families=("gemm",), n_gpus=1, hostname=node, seed=seed,
                             started_at=f"2025-06-{day:02d}T02:00:00Z", n_samples=6, **kw)


@pytest.fixture(scope="module")
def fleet_files(tmp_path_factory):
    """16 runs: 4 nodes x 4 nights, medians moving 3% from night to night."""
    folder = tmp_path_factory.mktemp("fleetfiles")
    files = []
    for i in range(4):
        for d in range(4):
            doc = gemm_doc(f"n{i}", d + 1, 1000 + 10 * i + d, run_noise_cv=0.03)
            files.append(nbgen.write(doc, folder / f"n{i}-{d}.json"))
    return files


def table(target, name, columns):
    from nodebench_reports.history import open_db

    with open_db(str(target), create=False) as h:
        return sorted(h.query(f"SELECT {columns} FROM {name}"))


def snapshot(target, tables=None):
    tables = tables or {**STORED, **DERIVED}
    return {name: table(target, name, cols) for name, cols in tables.items()}


def full_recompute(target):
    from nodebench_reports.history import open_db, recompute_derived

    with open_db(str(target), create=False) as h:
        h.run_transaction(recompute_derived)


# ----------------------------------------------------------------------------------------------


def test_incremental_derived_tables_equal_a_full_recompute(cli, fleet_files, history_target, tmp_path):
    db = history_target
    assert cli("ingest", *fleet_files[:6], "--db", db).rc == 0
    assert cli("ingest", *fleet_files[6:12], "--db", db).rc == 0
    # the same run again, now stored under another node (another machine): the old machine's
    # rows of that run must leave its noise and latest value
    moved = fleet_files[3]
    r = cli("ingest", moved, "--db", db, "--node", "elsewhere")
    assert r.rc == 0 and "1 run(s) were already there and were replaced" in r.out, r
    assert cli("ingest", *fleet_files[12:], "--db", db).rc == 0
    # a later run of n1 whose one case failed: its latest ok value stays the earlier one
    doc = gemm_doc("n1", 9, 77)
    rec = next(r for r in doc["records"] if r["id"] == CASE)
    rec.update(status="failed", reason="synthetic failure", metrics={}, stats=None, samples_s=[])
    assert cli("ingest", nbgen.write(doc, tmp_path / "late.json"), "--db", db).rc == 0
    kept = snapshot(db, DERIVED)
    assert len(kept["case_noise"]) > 100 and len(kept["case_latest"]) > 200
    machines = {r[0].split("#")[0] for r in kept["case_latest"]}
    assert "elsewhere" in machines and {"n0", "n1", "n2", "n3"} <= machines
    full_recompute(db)
    assert snapshot(db, DERIVED) == kept
    # and independently: n0's spread of CASE is the sd of log medians over n0's three remaining runs
    import math
    import statistics
    meds = [next(r for r in json.load(open(f))["records"] if r["id"] == CASE)["stats"]["median"]
            for f in fleet_files[:4] if f != moved]
    row = next(r for r in kept["case_noise"] if r[0].startswith("n0#") and r[1] == CASE)
    assert row[4] == 3 and row[5] == pytest.approx(statistics.stdev(math.log(m) for m in meds))
    latest = next(r for r in kept["case_latest"] if r[0].startswith("n1#") and r[1] == CASE and r[5] == "tflops" and r[6] == 0)
    assert latest[8] == "2025-06-04T02:00:00Z"      # not the failed night


def test_eight_writers_at_once(fleet_files, history_target, tmp_path):
    """8 processes ingest overlapping sets of the 16 runs into one new database at the same time:
    every run stored once and whole, the derived tables those of a full recompute, and the same
    as one writer's."""
    n = len(fleet_files)
    env = dict(os.environ, PYTHONPATH=str(REPO / "reports") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = []
    for k in range(8):
        mine = [fleet_files[(2 * k + j) % n] for j in range(6)]     # each run is in 3 processes' sets
        procs.append(subprocess.Popen([sys.executable, "-m", "nodebench_reports", "ingest", *mine, "--db",
                                       history_target], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      env=env))
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, outs
    got = snapshot(history_target)
    assert len(got["runs"]) == n and len({r[0] for r in got["runs"]}) == n
    reference = str(tmp_path / "one-writer.sqlite")
    from nodebench_reports.cli import main
    assert main(["ingest", *fleet_files, "--db", reference]) == 0
    assert got == snapshot(reference)
    full_recompute(history_target)
    assert snapshot(history_target, DERIVED) == got_derived(got)


def got_derived(snap):
    return {k: snap[k] for k in DERIVED}


def test_a_run_lands_whole_or_not_at_all(fleet_files, history_target, monkeypatch):
    from nodebench_reports import historydb
    from nodebench_reports.errors import ReportError
    from nodebench_reports.history import ingest, open_db
    from nodebench_reports.load import load_run

    first, second = load_run(fleet_files[0]), load_run(fleet_files[1])
    with open_db(history_target, create=True) as h:
        ingest(h, [first])
    before = snapshot(history_target)
    real = historydb.HistoryDB.executemany

    def failing(self, query, rows):
        if query.startswith("INSERT INTO metrics"):
            raise ReportError("disk full (simulated)")
        return real(self, query, rows)

    monkeypatch.setattr(historydb.HistoryDB, "executemany", failing)
    with open_db(history_target, create=False) as h:
        with pytest.raises(ReportError, match="simulated"):
            ingest(h, [second])            # a new run: nothing of it stays
        with pytest.raises(ReportError, match="simulated"):
            ingest(h, [first])             # a replacement: the stored copy stays as it was
    monkeypatch.setattr(historydb.HistoryDB, "executemany", real)
    assert snapshot(history_target) == before
    with open_db(history_target, create=False) as h:
        assert ingest(h, [second]).runs == 1
    assert len(table(history_target, "runs", "run_id")) == 2


# ----------------------------------------------------------------------------------------------
# migrations

# What version 2 of nodebench-report created (its _SCHEMA, verbatim): the history on SQLite
# that users have today.
V2_SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, node TEXT NOT NULL, started_at TEXT NOT NULL, finished_at TEXT,
    run_status TEXT NOT NULL, gpu_models TEXT NOT NULL, nodebench_version TEXT, git_commit TEXT,
    schema_version INTEGER NOT NULL, source TEXT, ingested_at TEXT NOT NULL, machine TEXT);
CREATE TABLE IF NOT EXISTS records (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, record_id TEXT NOT NULL,
    gpus TEXT NOT NULL, rank INTEGER NOT NULL, node TEXT NOT NULL, family TEXT NOT NULL, case_name TEXT NOT NULL,
    status TEXT NOT NULL, gpu_model TEXT NOT NULL, median_s REAL, cv REAL, n_samples INTEGER, params TEXT,
    flags TEXT, reason TEXT, primary_metric TEXT, machine TEXT, run_to_run_cv REAL,
    PRIMARY KEY (run_id, record_id, gpus, rank));
CREATE TABLE IF NOT EXISTS metrics (
    run_id TEXT NOT NULL, record_id TEXT NOT NULL, gpus TEXT NOT NULL, rank INTEGER NOT NULL, name TEXT NOT NULL,
    value REAL NOT NULL, PRIMARY KEY (run_id, record_id, gpus, rank, name));
CREATE INDEX IF NOT EXISTS metrics_by_name ON metrics(record_id, name);
CREATE TABLE IF NOT EXISTS case_noise (
    machine TEXT NOT NULL, record_id TEXT NOT NULL, gpus TEXT NOT NULL, rank INTEGER NOT NULL, runs INTEGER NOT NULL,
    cv REAL NOT NULL, max_over_min REAL, PRIMARY KEY (machine, record_id, gpus, rank));
CREATE INDEX IF NOT EXISTS runs_by_node ON runs(node, started_at);
INSERT INTO meta(key, value) VALUES ('db_version', '2');
"""


def _v2_rows(files):
    from nodebench_reports.history import noise_rows, run_rows
    from nodebench_reports.load import load_run

    runs, records, metrics = [], [], []
    for f in files:
        a, b, c = run_rows(load_run(f), None, "2025-07-01T00:00:00Z")
        runs.append(a)
        records += b
        metrics += c
    noise = noise_rows([(r[16], r[1], r[2], r[3], r[9], r[17]) for r in records
                        if r[7] == "ok" and r[9] is not None and r[9] > 0])
    return runs, records, metrics, noise


def make_old_history(target, files, version=2):
    """A history of version 2 (or 1) holding `files`: on SQLite with version 2's own schema; on
    PostgreSQL, which no earlier version supported, with the migration steps up to `version`."""
    from nodebench_reports import history as H

    runs, records, metrics, noise = _v2_rows(files)
    if not str(target).startswith("postgresql"):
        conn = sqlite3.connect(target)
        conn.executescript(V2_SQLITE_SCHEMA)
        with conn:   # version 2's own INSERT statements: every column, in table order
            conn.executemany("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", runs)
            conn.executemany(f"INSERT INTO records VALUES ({','.join('?' * 18)})", records)
            conn.executemany("INSERT INTO metrics VALUES (?,?,?,?,?,?)", metrics)
            conn.executemany("INSERT INTO case_noise VALUES (?,?,?,?,?,?,?)", noise)
        conn.close()
        return
    import psycopg
    with psycopg.connect(target, autocommit=False) as conn:
        for step in range(1, version + 1):
            for statement in H._STEPS[step]:
                conn.execute(statement)
        conn.execute("INSERT INTO meta(key, value) VALUES ('db_version', %s)", (str(version),))
        with conn.cursor() as cur:
            cur.executemany(f"INSERT INTO runs ({H._RUN_COLUMNS}) VALUES ({','.join(['%s'] * 12)})", runs)
            cur.executemany(f"INSERT INTO records ({H._RECORD_COLUMNS}) VALUES ({','.join(['%s'] * 18)})", records)
            cur.executemany(f"INSERT INTO metrics ({H._METRIC_COLUMNS}) VALUES ({','.join(['%s'] * 6)})", metrics)


def test_a_version_2_history_is_migrated(cli, fleet_files, history_target, tmp_path):
    from nodebench_reports.history import DB_VERSION

    old = history_target
    make_old_history(old, fleet_files)
    fresh = str(tmp_path / "fresh.sqlite")
    assert cli("ingest", *fleet_files, "--db", fresh).rc == 0
    # the first command that opens it migrates it; what it shows equals a history made today
    for db, name in ((old, "old"), (fresh, "fresh")):
        r = cli("fleet", "--db", db, "--all", "--json", tmp_path / f"{name}.json", "--min-nodes", "2")
        assert r.rc in (0, 1), r
        r = cli("trend", "--db", db, "--case", "gemm/fp16/*", "-o", tmp_path / f"{name}.png")
        assert r.rc == 0, r
        (tmp_path / f"{name}.trend.txt").write_text(r.out.replace(f"{name}.png", "PLOT"))
    assert json.loads((tmp_path / "old.json").read_text()) == json.loads((tmp_path / "fresh.json").read_text())
    assert (tmp_path / "old.trend.txt").read_text() == (tmp_path / "fresh.trend.txt").read_text()
    assert table(old, "meta", "key, value") == [("db_version", str(DB_VERSION))]
    assert snapshot(old, DERIVED) == snapshot(fresh, DERIVED)
    # and it is written to as any other
    assert cli("ingest", fleet_files[0], "--db", old).rc == 0
    assert snapshot(old, DERIVED) == snapshot(fresh, DERIVED)


def test_a_newer_history_is_refused(cli, fleet_files, history_target):
    assert cli("ingest", fleet_files[0], "--db", history_target).rc == 0
    from nodebench_reports.history import open_db

    with open_db(history_target, create=False) as h:
        h.execute("UPDATE meta SET value='99' WHERE key='db_version'")
    r = cli("fleet", "--db", history_target)
    assert r.rc == 2 and "history database version 99" in r.err, r


def test_foreign_or_empty_postgresql_database(cli, pg_server, fleet_files):
    import psycopg

    empty = pg_server.new_database("empty")
    r = cli("trend", "--db", empty, "--case", CASE)
    assert r.rc == 2 and "empty database (nothing ingested yet)" in r.err, r
    other = pg_server.new_database("other")
    with psycopg.connect(other, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (x int)")
    r = cli("ingest", fleet_files[0], "--db", other)
    assert r.rc == 2 and "a PostgreSQL database, but not a nodebench history" in r.err, r


# ----------------------------------------------------------------------------------------------
# the URL


@pytest.mark.parametrize("url", ["postgresql://bench:s3cr3t-pw@db.example/nodebench",
                                 "postgres://bench:s3cr3t-pw@/nodebench?host=/tmp",
                                 "postgresql:///nodebench?user=bench&password=s3cr3t-pw"])
def test_a_url_with_a_password_is_refused_and_never_printed(cli, fleet_files, tmp_path, url):
    for args in (("ingest", fleet_files[0], "--db", url), ("fleet", "--db", url),
                 ("trend", "--db", url, "--case", CASE),
                 ("compare", fleet_files[0], fleet_files[1], "--history", url)):
        r = cli(*args)
        assert r.rc == 2 and "embeds a password" in r.err and "PGPASSWORD" in r.err, r
        assert "s3cr3t" not in r.out + r.err


def test_unreachable_postgresql_exits_3(cli, fleet_files, tmp_path):
    pytest.importorskip("psycopg")
    url = f"postgresql:///nodebench?host={tmp_path / 'no-server-here'}&port=5999&connect_timeout=2"
    r = cli("ingest", fleet_files[0], "--db", url)
    assert r.rc == 3 and "cannot reach the PostgreSQL history" in r.err, r
    r = cli("fleet", "--db", url)
    assert r.rc == 3, r


def test_without_psycopg_a_url_is_a_clear_error(cli, fleet_files, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "psycopg", None)       # import psycopg raises ImportError
    r = cli("ingest", fleet_files[0], "--db", "postgresql:///nodebench?service=nodebench")
    assert r.rc == 2 and "needs psycopg 3" in r.err and "nodebench-reports[postgres]" in r.err, r
    # an SQLite history does not need it
    assert cli("ingest", fleet_files[0], "--db", tmp_path / "h.sqlite").rc == 0


def test_the_extra_names_psycopg():
    import tomllib
    data = tomllib.loads((REPO / "reports" / "pyproject.toml").read_text())
    extra = data["project"]["optional-dependencies"]["postgres"]
    assert any(d.startswith("psycopg[binary]") for d in extra), extra
    assert not any(d.startswith("psycopg") for d in data["project"]["dependencies"])   # optional


def test_compare_reads_the_spread_from_either_backend(cli, history_target, tmp_path):
    runs = [nbgen.write(gemm_doc("n9", d + 1, 500 + d, run_noise_cv=0.04, noise_cv=0.01), tmp_path / f"r{d}.json")
            for d in range(4)]
    assert cli("ingest", *runs, "--db", history_target).rc == 0
    r = cli("compare", runs[0], runs[1], "--history", history_target, "--no-noise-prior", "--json",
            tmp_path / "c.json")
    assert r.rc in (0, 1), r
    cases = json.loads((tmp_path / "c.json").read_text())["cases"]
    assert {c["noise_source"] for c in cases} == {"history (4 runs)"}
    row = table(history_target, "case_noise", "record_id, cv")
    assert next(c for c in cases if c["id"] == CASE)["noise_between"] == pytest.approx(dict(row)[CASE])


def test_sqlite_locked_by_another_writer_exits_3(cli, fleet_files, tmp_path, monkeypatch):
    from nodebench_reports import historydb

    db = tmp_path / "h.sqlite"
    assert cli("ingest", fleet_files[0], "--db", db).rc == 0
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")               # another writer, in the middle of its run
    monkeypatch.setattr(historydb, "SQLITE_BUSY_TIMEOUT_S", 0.2)
    try:
        r = cli("ingest", fleet_files[1], "--db", db)
        assert r.rc == 3 and "locked by another writer" in r.err, r
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert table(db, "runs", "count(*)") == [(1,)]
    assert cli("ingest", fleet_files[1], "--db", db).rc == 0    # once it is free
