#!/usr/bin/env python3
"""A result file another run is writing is refused: while this script holds the lock of
`--out-file X` (the file .X.lock beside it, locked with flock and holding the holder's pid, as a
run under way holds it), `nodebench run --out-file X` exits 2 naming that pid, before it probes
any GPU (so on a machine without one too), and leaves X alone. Once the lock is let go, the same
command is no longer refused for it (it goes on to the GPU probe).

usage: output_lock_check.py NODEBENCH OUT_DIR
"""
import fcntl
import os
import subprocess
import sys
from pathlib import Path


def run(exe, out_file):
    # GPU 99 exists nowhere: a run that gets past the lock stops at once (no GPU: exit 3; with
    # GPUs: no such index, exit 2), so that the check costs nothing on a GPU machine either.
    return subprocess.run([exe, "run", "--family", "memory", "--gpus", "99", "--out-file", str(out_file)],
                          capture_output=True, text=True, timeout=120)


def main():
    exe, out = sys.argv[1], Path(sys.argv[2]) / "output_lock"
    out.mkdir(parents=True, exist_ok=True)
    target = out / "shared.json"
    target.write_text("kept\n")
    lock = out / ".shared.json.lock"
    holder = os.getpid()
    with open(lock, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        f.write(f"{holder}\n")
        f.flush()
        p = run(exe, target)
        text = p.stdout + p.stderr
        print(text[-2000:])
        if p.returncode != 2:
            print(f"FAIL: exit {p.returncode} while another run holds the file, expected 2")
            return 1
        if f"pid {holder}" not in text or "another run" not in text:
            print(f"FAIL: the message should name the other run and its pid {holder}")
            return 1
        if target.read_text() != "kept\n":
            print("FAIL: the refused run touched the other run's file")
            return 1
    # The lock let go (the holder ended): no refusal for the lock any more.
    p = run(exe, target)
    text = p.stdout + p.stderr
    if "another run" in text:
        print(f"FAIL: refused after the lock was let go:\n{text[-2000:]}")
        return 1
    print(f"ok: refused with exit 2 naming pid {holder} while held; exit {p.returncode} once let go")
    return 0


if __name__ == "__main__":
    sys.exit(main())
