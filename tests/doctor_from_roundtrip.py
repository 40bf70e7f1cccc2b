#!/usr/bin/env python3
"""On a GPU node: what `doctor --json` captured, `doctor --from` judges the same way.

usage: doctor_from_roundtrip.py NODEBENCH OUTDIR

1. `doctor --json --no-load` on this node -> OUTDIR/doctor.json; `doctor --from OUTDIR/doctor.json
   --json` must give the same checks (id, GPU, severity, summary) and the same exit code.
2. `env --json` -> OUTDIR/env.json; `doctor --from` on it must exit 0 or 1 (never 2), report the
   kind "env --json capture" and one arch.binary check per GPU ("not known", info).
"""
import json
import os
import subprocess
import sys


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def key(c):
    return (c["id"], json.dumps(c.get("gpu")), json.dumps(c.get("peer")), c["severity"], c["summary"])


def main() -> int:
    nb, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    rc, text, err = run([nb, "doctor", "--json", "--no-load"])
    if rc not in (0, 1):
        print(f"FAIL: doctor --json exit {rc}\n{err[-2000:]}")
        return 1
    live = json.loads(text)
    path = os.path.join(out, "doctor.json")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    rc2, text2, err2 = run([nb, "doctor", "--from", path, "--json"])
    again = json.loads(text2) if text2.strip() else {}
    ok = True
    if rc2 != rc:
        print(f"FAIL: doctor exit {rc} on the node, {rc2} from its capture\n{err2[-2000:]}")
        ok = False
    a, b = sorted(map(key, live["checks"])), sorted(map(key, again.get("checks", [])))
    if a != b:
        print("FAIL: the checks differ")
        for k in sorted(set(a) ^ set(b)):
            print("  ", "node " if k in a else "from ", k)
        ok = False
    if again.get("from", {}).get("kind") != "doctor report":
        print(f"FAIL: from.kind {again.get('from')}")
        ok = False
    rc, text, err = run([nb, "env", "--json"])
    env_path = os.path.join(out, "env.json")
    with open(env_path, "w", encoding="utf-8") as fh:
        fh.write(text)
    rc3, text3, err3 = run([nb, "doctor", "--from", env_path, "--json"])
    if rc3 not in (0, 1):
        print(f"FAIL: doctor --from env.json exit {rc3}\n{err3[-2000:]}")
        return 1
    rep = json.loads(text3)
    ngpus = len(json.loads(text)["gpus"])
    arch = [c for c in rep["checks"] if c["id"] == "arch.binary"]
    if rep.get("from", {}).get("kind") != "env --json capture" or len(arch) != ngpus or \
            any(c["severity"] != "info" for c in arch):
        print(f"FAIL: env capture judged as {rep.get('from')}, arch.binary {arch}")
        ok = False
    print("ok: doctor --from reproduces doctor's checks" if ok else "")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
