#!/usr/bin/env python3
"""A signal stops a run at once, even during a case that would last hours, and the result file
says how it ended; a second run given the same --out-file meanwhile is refused (exit 2, naming
the first run's pid) and leaves the file alone. No GPU needed: the case is the input family's
CPU decoding case (host-only), made endless by --repetitions 1000000. With --gpu (the GPU test,
label gpu) the case is the memory family's on GPU 0 instead, and the run must also end within
GPU_BOUND_S of the signal.

The order is held by the run's own output, not by sleeps: the second run and the signal come once
the first run has printed its start (its lock is held, its signal handlers are in place). The run
must end within WAIT_S of the signal (it ends within about half a second; before, the first
SIGTERM only asked it to stop after the case, which here never ends).

usage: signal_check.py NODEBENCH OUT_DIR [--gpu]   (exit 77: the input family's CPU cases are not built)
"""
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

WAIT_S = 30
GPU_BOUND_S = 2.0  # the run ends within kInterruptGraceMs (0.5 s) plus writing its file and exiting


def main():
    exe, out, gpu = sys.argv[1], Path(sys.argv[2]) / "signal_check", sys.argv[3:] == ["--gpu"]
    out.mkdir(parents=True, exist_ok=True)
    f = out / "signalled.json"
    f.unlink(missing_ok=True)
    selection = ["--family", "memory", "--gpus", "0"] if gpu else ["--family", "input", "--filter", "^input/cpu/"]
    case_prefix = "memory/" if gpu else "input/cpu/"
    cmd = [exe, "run"] + selection + ["--quiet", "--out-file", str(f)]
    a = subprocess.Popen(cmd + ["--repetitions", "1000000"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    seen = []
    for line in a.stdout:
        seen.append(line)
        if line.startswith("predicted duration"):
            break
    else:
        a.wait()
        text = "".join(seen)
        if "not_built" in text or "not built" in text:
            print("SKIP: the input family's CPU cases are not built (libjpeg-turbo)")
            return 77
        print(text[-3000:])
        print(f"FAIL: the run ended before it started (exit {a.returncode})")
        return 1
    ok = True
    before = f.read_bytes()
    b = subprocess.run(cmd, capture_output=True, text=True, timeout=WAIT_S)
    btext = b.stdout + b.stderr
    print(btext[-1000:])
    if b.returncode != 2 or f"pid {a.pid}" not in btext or "another run" not in btext:
        print(f"FAIL: a second run on the same file should be refused with exit 2 naming pid {a.pid} "
              f"(exit {b.returncode})")
        ok = False
    if f.read_bytes() != before:
        print("FAIL: the refused run changed the first run's file")
        ok = False
    t0 = time.monotonic()
    a.send_signal(signal.SIGTERM)
    try:
        rest, _ = a.communicate(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        a.kill()
        a.communicate()
        print(f"FAIL: the run did not stop within {WAIT_S} s of SIGTERM")
        return 1
    took = time.monotonic() - t0
    print(("".join(seen) + rest)[-3000:])
    print(f"SIGTERM to exit: {took:.2f} s, exit {a.returncode}")
    if gpu and took > GPU_BOUND_S:
        print(f"FAIL: the run took {took:.2f} s to stop, more than {GPU_BOUND_S} s")
        ok = False
    if a.returncode != 1:
        print(f"FAIL: exit {a.returncode}, expected 1 (interrupted)")
        ok = False
    d = json.loads(f.read_text())
    notes = " ".join(d.get("notes", []))
    print(f"run_status {d.get('run_status')}, {len(d.get('records', []))} records, notes: {notes}")
    if d.get("run_status") != "interrupted":
        print("FAIL: run_status should be 'interrupted'")
        ok = False
    if "interrupted by SIGTERM" not in notes or case_prefix not in notes:
        print("FAIL: the notes should say the signal ended the run and name the case under way")
        ok = False
    if "interrupted by SIGTERM" not in rest:
        print("FAIL: nodebench should say on stderr that the signal ended the run")
        ok = False
    if (out / ".signalled.json.lock").exists():
        print("FAIL: the lock file is left behind")
        ok = False
    print("ok" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
