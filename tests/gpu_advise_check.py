#!/usr/bin/env python3
"""GPU test: a fresh run of the families `advise` reads (all-reduce, host link, the conv family's
ResNet-50 training case), then `nodebench advise` on it: exit 0, a row per GPU count with a
positive throughput and efficiency in (0, 1], the conv fallback said, the JSON written.

usage: gpu_advise_check.py NODEBENCH OUTDIR
"""
import json
import pathlib
import shutil
import subprocess
import sys


def main() -> int:
    exe, outdir = sys.argv[1], pathlib.Path(sys.argv[2])
    shutil.rmtree(outdir, ignore_errors=True)
    run = [exe, "run", "--out", str(outdir), "--family", "nccl,hostlink,conv", "--quiet",
           "--filter", r"nccl/all_reduce/float/out_of_place/eager/|hostlink/h2d/(pinned|pageable)/ce/1GiB|conv/resnet50/fp16/"]
    p = subprocess.run(run, capture_output=True, text=True, timeout=400)
    print(p.stdout[-3000:], p.stderr[-2000:])
    files = list(outdir.glob("*.json"))
    if p.returncode != 0 or len(files) != 1:
        print(f"FAIL: run exit {p.returncode}, files {files}")
        return 1
    adv = outdir / "advice.json"
    a = subprocess.run([exe, "advise", str(files[0]), "--json", str(adv)], capture_output=True, text=True, timeout=60)
    print(a.stdout[-6000:], a.stderr[-2000:])
    if a.returncode != 0:
        print(f"FAIL: advise exit {a.returncode}")
        return 1
    doc = json.loads(adv.read_text())
    bad = []
    if not doc["rows"]:
        bad.append("no rows")
    for r in doc["rows"]:
        if not (r["images_per_s"] > 0 and 0 < r["efficiency"] <= 1.0 + 1e-9):
            bad.append(f"row {r}: throughput or efficiency out of range")
    if "conv family's network case" not in a.stdout:
        bad.append("the conv fallback is not said")
    if not any(s["topic"] == "strategy" for s in doc["recommendation"]):
        bad.append("no strategy statement")
    for b in bad:
        print("FAIL:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
