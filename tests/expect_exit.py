#!/usr/bin/env python3
"""Runs a command and checks its exit code and that its output contains a pattern (regex).

usage: expect_exit.py CODE PATTERN -- COMMAND...
"""
import re
import subprocess
import sys


def main() -> int:
    if "--" not in sys.argv or sys.argv.index("--") != 3:
        print(__doc__, file=sys.stderr)
        return 2
    code, pattern = int(sys.argv[1]), sys.argv[2]
    cmd = sys.argv[4:]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    out = p.stdout + p.stderr
    ok = True
    if p.returncode != code:
        print(f"FAIL: exit code {p.returncode}, expected {code}")
        ok = False
    if not re.search(pattern, out):
        print(f"FAIL: output does not match {pattern!r}")
        ok = False
    if not ok:
        print("--- command:", " ".join(cmd))
        print(out[-4000:])
        return 1
    print(f"ok: exit {code}, output matches {pattern!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
