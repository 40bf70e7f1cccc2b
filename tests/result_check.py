"""Schema checks of the GPU tests' result files, with or without jsonschema.

A fresh GPU node has only what `scripts/setup.sh --for build` installs: no jsonschema. There the
reports package's structural checks (reports/nodebench_reports/load.py, no package needed, taken
from this checkout whether or not it is installed) run instead of the JSON Schema, and the test
says so in its output; the test is never skipped for it.
"""
import json
import pathlib
import shutil
import subprocess
import sys

_REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_REPO / "reports"))

from nodebench_reports.validate import result_problems  # noqa: E402


def check_result(doc, schema_path, label="result"):
    """Raises AssertionError listing the problems of `doc`; prints what checked it."""
    schema = json.loads(pathlib.Path(schema_path).read_text())
    problems, checked_by = result_problems(doc, label, schema)
    print(f"{label}: checked with {checked_by}")
    if problems:
        raise AssertionError(f"{label}: {len(problems)} problem(s):\n  " + "\n  ".join(problems[:20]))


def run_one_file(exe, schema_path, outdir, run_args, timeout):
    """Runs `nodebench run --out OUTDIR RUN_ARGS...` into a fresh OUTDIR (its output's tails
    printed) and returns the one result file it wrote, checked against the schema; None, with a
    FAIL line, when it exits non-zero or writes other than one file."""
    outdir = pathlib.Path(outdir)
    shutil.rmtree(outdir, ignore_errors=True)
    p = subprocess.run([exe, "run", "--out", str(outdir), *run_args], capture_output=True, text=True, timeout=timeout)
    print(p.stdout[-6000:], p.stderr[-3000:])
    if p.returncode != 0:
        print(f"FAIL: exit {p.returncode}")
        return None
    files = list(outdir.glob("*.json"))
    if len(files) != 1:
        print(f"FAIL: expected one result file in {outdir}, found {files}")
        return None
    doc = json.loads(files[0].read_text())
    check_result(doc, schema_path, str(files[0]))
    return doc


def verdict(bad, doc):
    """A GPU check's end: each problem as a FAIL line, the count, and its exit status (1 on any)."""
    for b in bad:
        print("FAIL:", b)
    print(f"{len(doc['records'])} records checked, {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":  # `result_check.py SCHEMA RESULT.json`: the check alone (its CPU tests)
    try:
        check_result(json.loads(pathlib.Path(sys.argv[2]).read_text()), sys.argv[1], sys.argv[2])
    except AssertionError as e:
        print(f"FAIL: {e}")
        sys.exit(1)
    print("ok")
