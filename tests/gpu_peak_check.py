#!/usr/bin/env python3
"""GPU test: the tensor-core peak cases (peak/mma_*) on this GPU take the path its compute capability
calls for (issue 25). Runs them briefly and checks each record:
  * 9.0 (Hopper): ok, measured by wgmma.mma_async (details.instruction), the all-ones check passed
    (details.verification.ok), held against the dense peak (details.dense_tensor_peak true) and,
    where the GPU's profile has the figure, a percent_of_peak at most 103;
  * 7.x-8.x: mma.sync, dense, from each unit's compute capability (FP16 7.0, INT8 7.2, BF16 and
    TF32 8.0, FP8 8.9);
  * 10.0 and newer: mma.sync, not dense: no percent_of_peak, no theoretical rate, a note; FP8
    skipped on 10.x and 11.x.
A 9.0 GPU whose build has no sm_90a code must skip them with reason_kind not_built.

usage: gpu_peak_check.py NODEBENCH OUTFILE
"""
import json
import subprocess
import sys

MIN_CC = {"mma_fp16": 70, "mma_int8": 72, "mma_bf16": 80, "mma_tf32": 80, "mma_fp8": 89}  # from the datasheets


def expect(rec, cc):
    """The problems of one record at compute capability cc (major*10+minor)."""
    unit = rec["params"]["unit"]
    det, met = rec.get("details") or {}, rec.get("metrics") or {}
    st = rec["status"]
    if cc < MIN_CC[unit] or (unit == "mma_fp8" and 100 <= cc < 120):
        return [] if st == "skipped" and rec.get("reason") else [f"expected skipped with a reason, got {st}"]
    if cc == 90 and st == "skipped":
        return [] if rec.get("reason_kind") == "not_built" else [f"skipped on 9.0 but not as not_built: {rec.get('reason')}"]
    if st != "ok":
        return [f"{st}: {rec.get('reason')}"]
    instr = det.get("instruction", "")
    problems = []
    if cc == 90:
        if not instr.startswith("wgmma.mma_async"):
            problems.append(f"instruction {instr!r}, expected wgmma")
        if (det.get("verification") or {}).get("ok") is not True:
            problems.append(f"all-ones check: {det.get('verification')}")
    elif not instr.startswith("mma.sync"):
        problems.append(f"instruction {instr!r}, expected mma.sync")
    dense = cc < 100
    if det.get("dense_tensor_peak") is not dense:
        problems.append(f"dense_tensor_peak {det.get('dense_tensor_peak')}, expected {dense}")
    pop = rec.get("percent_of_peak")
    if not dense:
        if pop is not None or any(k.startswith("theoretical_") for k in met) or not det.get("note"):
            problems.append("off the dense path but held against a peak, or without a note")
    elif pop is not None and pop.get("percent", 0) > 103:
        problems.append(f"{pop.get('percent')}% of peak")
    return problems


def main() -> int:
    exe, out = sys.argv[1], sys.argv[2]
    cmd = [exe, "run", "--suite", "quick", "--gpus", "0", "--family", "peak", "--filter", "^peak/mma_",
           "--max-time", "0.2", "--quiet", "--out-file", out]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    print(p.stdout[-4000:], p.stderr[-2000:])
    if p.returncode != 0:
        print(f"FAIL: exit {p.returncode}")
        return 1
    with open(out) as f:
        doc = json.load(f)
    gpu = doc["environment"]["gpus"][0]
    major, minor = (int(x) for x in gpu["compute_capability"].split("."))
    cc = major * 10 + minor
    recs = [r for r in doc["records"] if r["family"] == "peak"]
    bad = [] if len(recs) == 5 else [f"{len(recs)} tensor peak records, expected 5"]
    for r in recs:
        bad += [f"{r['id']}: {x}" for x in expect(r, cc)]
        print(f"  {r['id']:16s} {r['status']:8s} {(r.get('details') or {}).get('instruction', r.get('reason'))}")
    for b in bad:
        print("FAIL:", b)
    print(f"compute capability {major}.{minor}: {len(recs)} records, {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
