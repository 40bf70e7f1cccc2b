#!/usr/bin/env python3
"""GPU test: a run stopped by `timeout` (SIGTERM to the child and then to its process group, so
twice at once) keeps its measured cases and ends with run_status "interrupted".

usage: gpu_interrupt_check.py NODEBENCH OUT_DIR
"""
import json
import shutil
import subprocess
import sys
from pathlib import Path


def main():
    exe, out = sys.argv[1], Path(sys.argv[2])
    if not shutil.which("timeout"):
        print("SKIP: no timeout command")
        return 0
    out.mkdir(parents=True, exist_ok=True)
    f = out / "interrupted.json"
    f.unlink(missing_ok=True)
    # The full memory family at 1 s a case runs far longer than 6 s.
    p = subprocess.run(["timeout", "-s", "TERM", "6", exe, "run", "--suite", "full", "--family", "memory,hostlink",
                        "--gpus", "0", "--max-time", "1", "--out-file", str(f)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(p.stdout[-3000:])
    if not f.is_file():
        print(f"FAIL: no result file after the interruption (exit {p.returncode})")
        return 1
    d = json.loads(f.read_text())
    status, n = d.get("run_status"), len(d.get("records", []))
    print(f"exit {p.returncode}, run_status {status}, {n} records")
    if status != "interrupted":
        print("FAIL: run_status should be 'interrupted' (a process killed by the second SIGTERM leaves 'running')")
        return 1
    if n < 1 or any(r["status"] not in ("ok", "skipped") for r in d["records"]):
        print("FAIL: the cases measured before the interruption should be kept, ok or skipped")
        return 1
    if "interrupted" not in p.stdout:
        print("FAIL: nodebench should say it was interrupted and where the cases are")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
