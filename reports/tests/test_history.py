"""`ingest`, `trend` and `fleet` on a history of generated runs, on both backends: an SQLite file
and a PostgreSQL database (a throw-away server, see pgserver.py; skipped with the reason when
none can be started)."""

from __future__ import annotations

import json
import sqlite3

import pytest

import nbgen

NODES = ["node01", "node02", "node03", "node04"]
DATES = ["2025-06-01T02:00:00Z", "2025-06-02T02:00:00Z", "2025-06-03T02:00:00Z"]
CASE = "gemm/fp16/cublaslt/square_8192"


@pytest.fixture(scope="module")
def history_files(tmp_path_factory):
    """Four nodes, three nights each; node03 is 20% slower on the last night."""
    folder = tmp_path_factory.mktemp("history")
    files = []
    for i, node in enumerate(NODES):
        for j, date in enumerate(DATES):
            speed = 0.8 if (node == "node03" and j == 2) else 1.0
            doc = nbgen.make_result(families=("gemm",), n_gpus=1, hostname=node, started_at=date, seed=10 * i + j,
                                    speed=speed, n_samples=10)
            files.append(nbgen.write(doc, folder / f"{node}-{j}.json"))
    return files


def rows(target, sql, args=()):
    """Rows of a query on either backend (placeholders: ?)."""
    from nodebench_reports.history import open_db

    with open_db(str(target), create=False) as h:
        return h.query(sql, args)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def db(request, history_files, tmp_path_factory):
    from nodebench_reports.cli import main

    if request.param == "sqlite":
        path = str(tmp_path_factory.mktemp("db") / "history.sqlite")
    else:
        path = request.getfixturevalue("pg_server").new_database("hist")
    assert main(["ingest", *history_files, "--db", path]) == 0
    return path


def test_ingest_stores_runs_records_metrics(db):
    assert rows(db, "SELECT count(*) FROM runs")[0][0] == len(NODES) * len(DATES)
    assert sorted(r[0] for r in rows(db, "SELECT DISTINCT node FROM runs")) == NODES
    n_records = rows(db, "SELECT count(*) FROM records")[0][0]
    assert n_records == len(NODES) * len(DATES) * 59
    value = rows(db, "SELECT value FROM metrics WHERE record_id=? AND name='tflops' LIMIT 1", (CASE,))[0]
    assert 500 < value[0] < 989


def test_reingest_replaces_and_does_not_duplicate(cli, history_files, history_target):
    db = history_target
    assert cli("ingest", history_files[0], "--db", db).rc == 0
    before = rows(db, "SELECT count(*) FROM records")[0][0]
    r = cli("ingest", history_files[0], history_files[1], "--db", db)
    assert r.rc == 0 and "1 run(s) were already there and were replaced" in r.out, r
    assert rows(db, "SELECT count(*) FROM runs")[0][0] == 2
    assert rows(db, "SELECT count(*) FROM records")[0][0] == 2 * before


def test_ingest_node_override(cli, history_files, history_target):
    db = history_target
    assert cli("ingest", history_files[0], "--db", db, "--node", "rack7-slot3").rc == 0
    assert rows(db, "SELECT node FROM runs")[0][0] == "rack7-slot3"


def test_trend_plots_each_node(cli, db, tmp_path):
    out = tmp_path / "trend.png"
    r = cli("trend", "--db", db, "--case", CASE, "-o", out)
    assert r.rc == 0, r
    assert out.read_bytes().startswith(b"\x89PNG") and out.stat().st_size > 10_000
    assert f"{len(NODES) * len(DATES)} point(s), {len(NODES)} node(s)" in r.out
    assert r.out.count("tflops=") == len(NODES) * len(DATES)


def test_trend_with_metric_node_filter_and_svg(cli, db, tmp_path):
    out = tmp_path / "trend.svg"
    r = cli("trend", "--db", db, "--case", "gemm/fp16/*/square_8192", "--metric", "median_s", "--node", "node03", "-o", out)
    assert r.rc == 0, r
    assert out.read_text().lstrip().startswith("<?xml") and "<svg" in out.read_text()[:2000]
    assert "6 point(s), 1 node(s)" in r.out   # two APIs x three nights


def test_trend_unknown_case_is_bad_input(cli, db, tmp_path):
    r = cli("trend", "--db", db, "--case", "gemm/fp16/cublaslt/square_9999", "-o", tmp_path / "t.png")
    assert r.rc == 2 and "no case matches" in r.err and "gemm/fp16/cublaslt/square_" in r.err, r
    r = cli("trend", "--db", db, "--case", CASE, "--metric", "furlongs", "-o", tmp_path / "t.png")
    assert r.rc == 2 and "no metric 'furlongs'" in r.err, r


def test_fleet_flags_the_slow_node(cli, db, tmp_path):
    r = cli("fleet", "--db", db, "--json", tmp_path / "f.json", "-o", tmp_path / "fleet.png")
    assert r.rc == 1, r
    data = json.loads((tmp_path / "f.json").read_text())
    assert list(data["flagged_nodes"]) == ["node03"]
    assert data["flagged_nodes"]["node03"] == data["groups_compared"] == 59
    flagged = [e for e in data["entries"] if e["flagged"]]
    assert all(e["node"] == "node03" and -0.25 < e["deviation"] < -0.15 for e in flagged)
    assert (tmp_path / "fleet.png").read_bytes().startswith(b"\x89PNG")
    assert "1 node(s) flagged: node03 (exit 1)" in r.out


def test_fleet_threshold_and_lower_is_better_metric(cli, db):
    assert cli("fleet", "--db", db, "--threshold", "30%").rc == 0
    r = cli("fleet", "--db", db, "--case", CASE, "--metric", "median_s")   # times: higher is worse
    assert r.rc == 1 and "!! node03" in r.out and "!! node01" not in r.out, r


def test_fleet_uses_latest_run_per_node(cli, history_files, history_target, tmp_path):
    db = history_target
    early = [f for f in history_files if not f.endswith("-2.json")]
    late = [f for f in history_files if f.endswith("-2.json")]
    assert cli("ingest", *early, "--db", db).rc == 0
    r = cli("fleet", "--db", db)
    assert r.rc == 0 and "no node flagged (exit 0)" in r.out, r
    assert cli("ingest", *late, "--db", db).rc == 0
    r = cli("fleet", "--db", db, "--case", CASE, "--all", "--json", tmp_path / "f.json")
    assert r.rc == 1, r
    entries = json.loads((tmp_path / "f.json").read_text())["entries"]
    assert sorted(e["node"] for e in entries) == NODES
    assert {e["started_at"] for e in entries} == {DATES[2]}
    # --since selects runs by start time too
    r = cli("fleet", "--db", db, "--since", "2025-06-03", "--case", CASE, "--json", tmp_path / "g.json")
    assert r.rc == 1 and {e["started_at"] for e in json.loads((tmp_path / "g.json").read_text())["entries"]} == {DATES[2]}


def test_fleet_needs_enough_nodes(cli, db):
    r = cli("fleet", "--db", db, "--min-nodes", "5")
    assert r.rc == 2 and "at least 5 nodes" in r.err, r


def test_missing_or_foreign_database_is_bad_input(cli, tmp_path, history_files):
    r = cli("trend", "--db", tmp_path / "none.sqlite", "--case", CASE)
    assert r.rc == 2 and "no such database" in r.err, r
    notdb = tmp_path / "x.sqlite"
    notdb.write_text("this is not sqlite at all, it is a text file that is long enough" * 10)
    r = cli("ingest", history_files[0], "--db", notdb)
    assert r.rc == 2 and "not a usable SQLite database" in r.err, r
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)")
    r = cli("fleet", "--db", other)
    assert r.rc == 2 and "not a nodebench history" in r.err, r
