#!/usr/bin/env python3
"""GPU test of the train_dp family: runs `nodebench run --suite full --family train_dp --filter
'^train_dp/resnet50/fp16/nhwc/b32$'` (fp16/nhwc, per-GPU batch 32, 1..N GPUs) twice into fresh folders: with the defaults (25 MiB
buckets, no accumulation) and with NODEBENCH_DP_BUCKET_MIB=4 NODEBENCH_DP_ACCUMULATION=2 (more
buckets, the accumulation path). Each result file validates against the schema; every train_dp
record is ok, verified (the all-reduced gradients equal the mean of the GPUs' own ones and are
identical across GPUs; parameters identical after the update and after the timed steps), and
carries the contract's params and metrics with consistent values. Exits 77 (skipped) with fewer
than two GPUs.

usage: gpu_train_dp_check.py NODEBENCH SCHEMA OUTDIR [run arguments...]
"""
import json
import math
import os
import pathlib
import shutil
import subprocess
import sys

from result_check import check_result  # the JSON Schema, or without jsonschema the loader's checks

SKIP = 77


def check_record(r, k):
    bad = []
    p, m, d = r["params"], r["metrics"], r["details"]
    for key in ("precision", "layout", "batch", "gpus", "accumulation"):
        if key not in p:
            bad.append(f"param {key} missing")
    if p.get("accumulation") != k:
        bad.append(f"accumulation {p.get('accumulation')}, expected {k}")
    for key in ("step_time_ms", "images_per_s", "exposed_comm_ms", "scaling_efficiency_ratio", "bucket_bytes", "bucket_count",
                "compute_step_ms", "one_gpu_step_ms"):
        if not isinstance(m.get(key), (int, float)) or not math.isfinite(m[key]):
            bad.append(f"metric {key} missing or not finite: {m.get(key)}")
    if bad:
        return bad
    n, b = p["gpus"], p["batch"]
    if r["id"] != f"train_dp/resnet50/{p['precision']}/{p['layout']}/b{b}/g{n}":
        bad.append(f"id {r['id']} does not follow the params")
    ips = n * b * k / (m["step_time_ms"] / 1e3)
    if abs(m["images_per_s"] - ips) > 1e-6 * ips:
        bad.append(f"images_per_s {m['images_per_s']} is not gpus x batch x k / step ({ips})")
    one = b * k / (m["one_gpu_step_ms"] / 1e3)
    if abs(m["scaling_efficiency_ratio"] - m["images_per_s"] / (n * one)) > 1e-6:
        bad.append("scaling_efficiency_ratio is not images/s over n x the one-GPU images/s")
    if not 0.2 < m["scaling_efficiency_ratio"] < 1.2:
        bad.append(f"scaling_efficiency_ratio {m['scaling_efficiency_ratio']} implausible")
    if abs(m["exposed_comm_ms"] - (m["step_time_ms"] - m["compute_step_ms"])) > 1e-6 * m["step_time_ms"]:
        bad.append("exposed_comm_ms is not step - compute step")
    if m["exposed_comm_ms"] < -0.1 * m["step_time_ms"]:
        bad.append(f"the step with the all-reduce is much faster than without: {m['exposed_comm_ms']} ms")
    if m["bucket_count"] < 1 or m["bucket_bytes"] <= 0:
        bad.append(f"bucket_count {m['bucket_count']}, bucket_bytes {m['bucket_bytes']}")
    if not d.get("nccl_version") or not isinstance(d.get("nccl_env"), dict):
        bad.append("nccl_version / nccl_env not recorded")
    if n >= 2:
        v = d.get("verification", {})
        grads = v.get("gradients", [])
        if len(grads) < 4 or not all(g.get("ok") is True for g in grads):
            bad.append(f"gradient check: {grads}")
        for key in ("parameters_after_update", "parameters_after_timed_steps"):
            c = v.get(key, {})
            if c.get("differing") != 0 or c.get("values_checked", 0) < 16 * n:
                bad.append(f"{key}: {c}")
        if not v.get("own_vs_mean_rel", 0) > 0:
            bad.append("the GPUs' own gradients equal the mean: their batches are not different")
    return bad


def run(exe, schema, outdir, args, env_extra, k):
    shutil.rmtree(outdir, ignore_errors=True)
    env = dict(os.environ, **env_extra)
    p = subprocess.run([exe, "run", "--out", str(outdir), "--suite", "full", "--family", "train_dp",
                        "--filter", "^train_dp/resnet50/fp16/nhwc/b32$", *args],
                       capture_output=True, text=True, timeout=560, env=env)
    print(p.stdout[-5000:], p.stderr[-3000:])
    if p.returncode != 0:
        return [f"exit {p.returncode}"], 0, False
    files = list(outdir.glob("*.json"))
    if len(files) != 1:
        return [f"expected one result file in {outdir}, found {files}"], 0, False
    doc = json.loads(files[0].read_text())
    check_result(doc, schema, str(files[0]))
    bad, ok, too_few = [], 0, False
    for r in doc["records"]:
        if r["family"] != "train_dp":
            continue
        if r["status"] == "skipped" and "GPU" in r.get("reason", "") and r.get("params", {}).get("gpus", 0) < 2 \
                and "needs 2" in r.get("reason", ""):
            too_few = True
            continue
        if r["status"] != "ok":
            bad.append(f"{r['id']}: {r['status']}: {r.get('reason')}")
            continue
        ok += 1
        bad += [f"{r['id']}: {b}" for b in check_record(r, k)]
    if not ok and not too_few:
        bad.append("no ok train_dp record")
    return bad, ok, too_few


def main() -> int:
    exe, schema, outdir = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
    env = subprocess.run([exe, "env", "--json"], capture_output=True, text=True, timeout=120)
    try:
        gpus = len(json.loads(env.stdout).get("gpus", []))
    except (json.JSONDecodeError, AttributeError):
        gpus = 0
    if gpus < 2:
        print(f"the train_dp test needs two GPUs; {gpus} visible: skipped")
        return SKIP
    bad = []
    for name, extra, k in (("default", {}, 1), ("accum2", {"NODEBENCH_DP_BUCKET_MIB": "4", "NODEBENCH_DP_ACCUMULATION": "2"}, 2)):
        b, ok, _ = run(exe, schema, outdir / name, sys.argv[4:], extra, k)
        bad += [f"{name}: {x}" for x in b]
        print(f"{name}: {ok} ok train_dp records")
    for b in bad:
        print("FAIL:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
