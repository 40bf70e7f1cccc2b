#!/usr/bin/env python3
"""GPU test (issue 38): a signal stops a run within a second, even during a case that would last
minutes, and the result file says how it ended; and a second run given the same --out-file while
the first runs is refused (exit 2, naming the first run's pid) without touching its file.

The first run's cases take 1,000,000 samples each (--repetitions), so a case lasts far longer
than the test waits. The order is held by the run's own output, not by sleeps: the second run
and the signal come only once the first run has printed its start (its lock is held and its
handlers are in place).

usage: gpu_signal_check.py NODEBENCH OUT_DIR
"""
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

BOUND_S = 2.0  # the run ends within kInterruptGraceMs (0.5 s) plus writing its file and exiting


def main():
    exe, out = sys.argv[1], Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    f = out / "signalled.json"
    f.unlink(missing_ok=True)
    a = subprocess.Popen([exe, "run", "--family", "memory", "--gpus", "0", "--repetitions", "1000000",
                          "--out-file", str(f)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    for line in a.stdout:
        seen.append(line)
        if line.startswith("predicted duration"):
            break
    else:
        print("".join(seen)[-3000:])
        print(f"FAIL: the run ended before it started (exit {a.wait()})")
        return 1
    # A second run on the same file: refused at once, the first run's file untouched.
    before = f.read_bytes()
    b = subprocess.run([exe, "run", "--family", "memory", "--gpus", "0", "--out-file", str(f)],
                       capture_output=True, text=True, timeout=60)
    btext = b.stdout + b.stderr
    print(btext[-1000:])
    ok = True
    if b.returncode != 2 or f"pid {a.pid}" not in btext:
        print(f"FAIL: the second run should be refused with exit 2 naming pid {a.pid} (exit {b.returncode})")
        ok = False
    if f.read_bytes() != before:
        print("FAIL: the refused run changed the first run's file")
        ok = False
    t0 = time.monotonic()
    a.send_signal(signal.SIGTERM)
    rest = a.stdout.read()
    rc = a.wait()
    took = time.monotonic() - t0
    print(("".join(seen) + rest)[-3000:])
    print(f"SIGTERM to exit: {took:.2f} s, exit {rc}")
    if took > BOUND_S:
        print(f"FAIL: the run took {took:.2f} s to stop, more than {BOUND_S} s")
        ok = False
    if rc != 1:
        print(f"FAIL: exit {rc}, expected 1 (interrupted)")
        ok = False
    d = json.loads(f.read_text())
    notes = " ".join(d.get("notes", []))
    print(f"run_status {d.get('run_status')}, {len(d.get('records', []))} records, notes: {notes}")
    if d.get("run_status") != "interrupted":
        print("FAIL: run_status should be 'interrupted'")
        ok = False
    if "interrupted by SIGTERM" not in notes or "memory/" not in notes:
        print("FAIL: the notes should say the signal ended the run and name the case under way")
        ok = False
    if (out / ".signalled.json.lock").exists():
        print("FAIL: the lock file is left behind")
        ok = False
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
