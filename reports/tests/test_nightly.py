"""scripts/nightly.sh with a stand-in for the nodebench binary (no GPU needed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import nbgen
from conftest import REPO

SCRIPT = REPO / "scripts" / "nightly.sh"
pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="scripts/nightly.sh not present")

FAKE = textwrap.dedent("""\
    #!{python}
    # stand-in for build/nodebench: `run --suite S --out DIR` copies $FAKE_RESULT into DIR
    import os, shutil, sys
    args = sys.argv[1:]
    with open(os.environ["FAKE_ARGS"], "w") as fh:
        fh.write(" ".join(args))
    out = args[args.index("--out") + 1]
    src = os.environ.get("FAKE_RESULT")
    if src:
        shutil.copy(src, os.path.join(out, "quick-20250604T020000Z.json"))
    sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
    """)


@pytest.fixture(scope="module")
def nightly_env(tmp_path_factory):
    folder = tmp_path_factory.mktemp("nightly")
    fake = folder / "nodebench"
    fake.write_text(FAKE.format(python=sys.executable))
    fake.chmod(0o755)
    base = nbgen.write(nbgen.make_result(families=("gemm",), n_gpus=1, seed=1), folder / "baseline.json")
    same = nbgen.write(nbgen.make_result(families=("gemm",), n_gpus=1, seed=2, started_at="2025-06-04T02:00:00Z"),
                       folder / "same.json")
    slow = nbgen.write(nbgen.make_result(families=("gemm",), n_gpus=1, seed=3, started_at="2025-06-04T02:00:00Z",
                                         slowdown={"gemm/fp16/cublaslt/square_8192": 1.15}), folder / "slow.json")
    env = dict(os.environ, NODEBENCH_BIN=str(fake), FAKE_ARGS=str(folder / "args.txt"),
               NODEBENCH_REPORT=f"{sys.executable} -m nodebench_reports")
    return {"folder": folder, "env": env, "base": base, "same": same, "slow": slow}


def nightly(env, *args, **extra_env):
    return subprocess.run(["bash", str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=300,
                          env=dict(env, **extra_env))


def test_help():
    proc = subprocess.run(["bash", str(SCRIPT), "--help"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0
    for text in ("Usage:", "BASELINE", "NODEBENCH_BIN", "--suite", "Exit status", "regression"):
        assert text in proc.stdout


def test_missing_baseline_argument_or_file(nightly_env):
    proc = nightly(nightly_env["env"])
    assert proc.returncode == 2 and "missing BASELINE" in proc.stderr
    proc = nightly(nightly_env["env"], nightly_env["folder"] / "nope.json")
    assert proc.returncode == 2 and "is not a file" in proc.stderr


def test_missing_binary(nightly_env):
    proc = nightly(nightly_env["env"], nightly_env["base"], NODEBENCH_BIN="/nonexistent/nodebench")
    assert proc.returncode == 2 and "NODEBENCH_BIN" in proc.stderr


def test_no_regression_night(nightly_env, tmp_path):
    out, db = tmp_path / "out", tmp_path / "h.sqlite"
    proc = nightly(nightly_env["env"], nightly_env["base"], "--out", out, "--db", db, FAKE_RESULT=nightly_env["same"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (nightly_env["folder"] / "args.txt").read_text() == f"run --suite quick --out {out}"
    assert json.loads((out / "compare.json").read_text())["exit_code"] == 0
    assert (out / "compare.junit.xml").exists() and "no regression" in (out / "compare.txt").read_text()
    assert (out / "report" / "report.html").exists() and (out / "report" / "summary.md").exists()
    import sqlite3
    assert sqlite3.connect(db).execute("SELECT count(*) FROM runs").fetchone()[0] == 1


def test_regression_night_exits_1(nightly_env, tmp_path):
    out = tmp_path / "out"
    proc = nightly(nightly_env["env"], nightly_env["base"], "--out", out, "--db", tmp_path / "h.sqlite",
                   "--suite", "full", FAKE_RESULT=nightly_env["slow"])
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "REGRESSION" in proc.stdout
    assert (nightly_env["folder"] / "args.txt").read_text().startswith("run --suite full ")
    data = json.loads((out / "compare.json").read_text())
    assert [c["id"] for c in data["cases"] if c["regression"]] == ["gemm/fp16/cublaslt/square_8192"]
    assert (out / "report" / "report.html").exists()       # the report is still written


def test_run_without_result_file_exits_2(nightly_env, tmp_path):
    env = dict(nightly_env["env"])
    env.pop("FAKE_RESULT", None)
    proc = nightly(env, nightly_env["base"], "--out", tmp_path / "out", "--db", tmp_path / "h.sqlite", FAKE_EXIT="3")
    assert proc.returncode == 2 and "wrote no result file" in proc.stderr


# ----------------------------------------------------------------------------------------------
# a fleet's PostgreSQL history


def _runs_in(target):
    from nodebench_reports.history import open_db

    with open_db(str(target), create=True) as h:
        return [r[0] for r in h.query("SELECT run_id FROM runs")]


def test_night_into_postgresql(nightly_env, pg_server, tmp_path):
    url = pg_server.new_database("nightly")
    out = tmp_path / "out"
    proc = nightly(nightly_env["env"], nightly_env["base"], "--out", out, "--db", url, FAKE_RESULT=nightly_env["same"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert _runs_in(url) == [json.loads(open(nightly_env["same"]).read())["run_id"]]
    assert not (out / "not-stored.txt").exists()


def test_database_unreachable_keeps_the_run_and_exits_3(nightly_env, pg_server, tmp_path):
    """The server's socket is not where the URL points: exit 3, the result file and the report
    kept, and the printed command stores the run once the database is back."""
    url = pg_server.new_database("later")
    dbname = url.split("///", 1)[1].split("?", 1)[0]
    sock = tmp_path / "sock"                     # nothing there yet
    down = f"postgresql:///{dbname}?host={sock}&port={url.split('port=')[1].split('&')[0]}&user=nodebench"
    out = tmp_path / "out"
    proc = nightly(nightly_env["env"], nightly_env["base"], "--out", out, "--db", down, FAKE_RESULT=nightly_env["same"])
    assert proc.returncode == 3, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "NOT stored" in proc.stderr and "Store it later with:" in proc.stderr
    assert (out / "report" / "report.html").exists() and (out / "compare.json").exists()
    results = [p for p in out.glob("*.json") if p.name.startswith("quick-")]
    assert len(results) == 1
    later = (out / "not-stored.txt").read_text().splitlines()[-1]
    assert later in proc.stderr and str(results[0]) in later.replace("\\", "")
    assert _runs_in(url) == []
    os.symlink(pg_server.base, sock)             # the database is back
    again = subprocess.run(["bash", "-c", later], capture_output=True, text=True, timeout=120,
                           env=nightly_env["env"])
    assert again.returncode == 0, again.stderr
    assert _runs_in(url) == [json.loads(open(nightly_env["same"]).read())["run_id"]]


def test_regression_and_unreachable_database_exits_1_and_says_not_stored(nightly_env, tmp_path):
    pytest.importorskip("psycopg")
    down = f"postgresql:///nodebench?host={tmp_path / 'nowhere'}&port=5999&connect_timeout=2"
    proc = nightly(nightly_env["env"], nightly_env["base"], "--out", tmp_path / "out", "--db", down,
                   FAKE_RESULT=nightly_env["slow"])
    assert proc.returncode == 1 and "REGRESSION" in proc.stdout, proc.stderr[-3000:]
    assert "NOT stored" in proc.stderr and (tmp_path / "out" / "not-stored.txt").exists()


def test_url_with_password_is_refused_before_the_run(nightly_env, tmp_path):
    args_file = nightly_env["folder"] / "args.txt"
    if args_file.exists():
        args_file.unlink()
    proc = nightly(nightly_env["env"], nightly_env["base"], "--out", tmp_path / "out",
                   "--db", "postgresql://bench:hunter2-secret@db.example/nodebench", FAKE_RESULT=nightly_env["same"])
    assert proc.returncode == 2 and "embeds a password" in proc.stderr, proc.stderr
    assert "hunter2" not in proc.stdout + proc.stderr
    assert not args_file.exists()                 # nothing was run


def test_help_documents_postgresql_and_exit_3():
    proc = subprocess.run(["bash", str(SCRIPT), "--help"], capture_output=True, text=True, timeout=30)
    for text in ("postgresql://", "PGPASSWORD", "service=", "  3  ", "not-stored.txt"):
        assert text in proc.stdout, text


def test_saved_store_later_command_has_an_absolute_db(nightly_env, tmp_path):
    # a relative --db: the saved command must store into this history from any folder
    work = tmp_path / "work"
    (work / "rel").mkdir(parents=True)
    (work / "rel" / "h.sqlite").write_text("not an SQLite database")   # ingest fails (exit 2)
    proc = subprocess.run(["bash", str(SCRIPT), str(nightly_env["base"]), "--out", str(tmp_path / "out"),
                           "--db", "rel/h.sqlite"], capture_output=True, text=True, timeout=300, cwd=work,
                          env=dict(nightly_env["env"], FAKE_RESULT=str(nightly_env["same"])))
    assert proc.returncode == 2, proc.stderr[-3000:]
    later = (tmp_path / "out" / "not-stored.txt").read_text().splitlines()[-1]
    assert f"--db {work / 'rel' / 'h.sqlite'}" in later.replace("\\", ""), later


def test_check_db_is_the_one_password_check(cli):
    """nightly.sh asks `nodebench-report check-db` (historydb.check_url): the rule is written once."""
    r = cli("check-db", "postgresql://bench:hunter2-secret@db.example/nodebench")
    assert r.rc == 2 and "embeds a password" in r.err and "hunter2" not in r.out + r.err, r
    assert cli("check-db", "postgresql://h/db?sslmode=require&PASSWORD=x").rc == 2
    assert cli("check-db", "postgresql://bench@db.example/nodebench").rc == 0
    assert cli("check-db", "history.sqlite").rc == 0
    assert "check-db" in SCRIPT.read_text() and "Pp][Aa][Ss][Ss]" not in SCRIPT.read_text()
