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
