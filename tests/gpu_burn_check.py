#!/usr/bin/env python3
"""GPU tests of `nodebench burn` (issue 37).

usage: gpu_burn_check.py NODEBENCH OUT_DIR MODE
  clean      a 20 s burn on every GPU: exit 0, one ok record per GPU with zero faulty elements and
             memory errors, the sustained rate and mean power under their names, a timeline of
             about one line a second per GPU beside the result file
  gemm       NODEBENCH_BURN_TEST_FAULT=gemm:0:3:5 (test only): exit 1, GPU 0's record wrong,
             naming the GPU, iteration 3 and 5 faulty elements; the other GPUs clean
  mem        NODEBENCH_BURN_TEST_FAULT=mem:0:1000:7 (test only): exit 1, GPU 0's record wrong,
             naming word 1000 and bit 7
  interrupt  SIGINT once the timeline has its first lines: the burn stops within seconds (not its
             120 s), exit 1, run_status interrupted, the record kept and cut_short
  validate   validate --level 4 with NODEBENCH_BURN_DURATION=20: every burn.* check of each GPU is
             judged (burn.correct passing) and in the JUnit file
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def run(exe, out, name, args, env_extra=None):
    f = out / f"{name}.json"
    f.unlink(missing_ok=True)
    env = dict(os.environ)
    env.update(env_extra or {})
    p = subprocess.run([exe, "burn", "--out-file", str(f)] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, env=env)
    print(p.stdout[-4000:])
    if not f.is_file():
        raise SystemExit(f"FAIL: no result file {f} (exit {p.returncode})")
    return p, json.loads(f.read_text()), f


def burn_records(d):
    return [r for r in d.get("records", []) if r.get("family") == "burn"]


def fail(msg):
    print("FAIL: " + msg)
    return 1


def main():
    exe, out, mode = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    out.mkdir(parents=True, exist_ok=True)
    if mode == "clean":
        p, d, f = run(exe, out, "clean", ["--duration", "20s"])
        if p.returncode != 0:
            return fail(f"a clean burn should exit 0, got {p.returncode}")
        recs = burn_records(d)
        gpus = len(d["environment"]["gpus"])
        if len(recs) != gpus:
            return fail(f"{len(recs)} burn records for {gpus} GPUs")
        for r in recs:
            det, m = r["details"], r["metrics"]
            if r["status"] != "ok" or det["faulty_elements"] != 0 or det["memory_test"]["errors"] != 0:
                return fail(f"record {r['gpus']}: {r['status']} {r.get('reason')}")
            for k in ("sustained_gemm_tflops", "mean_power_w", "first_minute_gemm_tflops"):
                if not (isinstance(m.get(k), (int, float)) and m[k] > 0):
                    return fail(f"metric {k} missing or not positive: {m.get(k)}")
            if det["gemm_iterations"] < 10 or len(det["timeline"]) < 15:
                return fail(f"too little work: {det['gemm_iterations']} GEMMs, {len(det['timeline'])} samples")
            if det["memory_test"]["bytes"] < 0.5 * d["environment"]["gpus"][r["gpus"][0]]["memory_bytes"]:
                return fail(f"the memory test covered only {det['memory_test']['bytes']} bytes")
        tl = Path(str(f)[:-5] + ".timeline.jsonl")
        lines = [json.loads(x) for x in tl.read_text().splitlines() if x.strip()]
        for g in range(gpus):
            mine = [x for x in lines if x["gpu"] == g]
            if len(mine) < 15 or not all("gemm_tflops" in x and "throttle_mask" in x for x in mine):
                return fail(f"timeline: {len(mine)} lines for GPU {g}")
        print(f"PASS: {gpus} GPU(s), sustained " +
              ", ".join(f"{r['metrics']['sustained_gemm_tflops']:.1f} TFLOPS at {r['metrics']['mean_power_w']:.0f} W" for r in recs))
        return 0
    if mode in ("gemm", "mem"):
        fault = "gemm:0:3:5" if mode == "gemm" else "mem:0:1000:7"
        p, d, _ = run(exe, out, mode, ["--duration", "8s"], {"NODEBENCH_BURN_TEST_FAULT": fault})
        if p.returncode != 1:
            return fail(f"a planted fault should make the burn exit 1, got {p.returncode}")
        recs = {r["gpus"][0]: r for r in burn_records(d)}
        r0 = recs.get(0)
        if not r0 or r0["status"] != "wrong":
            return fail(f"GPU 0's record should be wrong: {r0 and r0['status']}")
        reason = r0.get("reason") or ""
        want = ["GPU 0", "iteration 3", "5 faulty element"] if mode == "gemm" else ["GPU 0", "word 1000", "bit 7"]
        for w in want:
            if w not in reason:
                return fail(f"the reason should name '{w}': {reason}")
        if "planted_fault" not in r0.get("flags", []):
            return fail("the record should carry the planted_fault flag")
        for g, r in recs.items():
            if g != 0 and r["status"] != "ok":
                return fail(f"GPU {g} had no planted fault but is {r['status']}: {r.get('reason')}")
        print(f"PASS: {reason}")
        return 0
    if mode == "interrupt":
        f = out / "interrupt.json"
        f.unlink(missing_ok=True)
        tl = Path(str(f)[:-5] + ".timeline.jsonl")
        tl.unlink(missing_ok=True)
        p = subprocess.Popen([exe, "burn", "--duration", "120s", "--gpus", "0", "--out-file", str(f)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        t0 = time.time()
        while time.time() - t0 < 100 and not (tl.is_file() and len(tl.read_text().splitlines()) >= 2):
            if p.poll() is not None:
                break
            time.sleep(0.2)
        t_sig = time.time()
        p.send_signal(signal.SIGINT)
        text, _ = p.communicate(timeout=60)
        took = time.time() - t_sig
        print(text[-3000:])
        print(f"stopped {took:.1f} s after SIGINT, exit {p.returncode}")
        if took > 15:
            return fail(f"the burn took {took:.1f} s to stop after SIGINT")
        if p.returncode != 1:
            return fail(f"an interrupted burn exits 1, got {p.returncode}")
        d = json.loads(f.read_text())
        recs = burn_records(d)
        if d.get("run_status") != "interrupted" or not recs or not recs[0]["details"].get("cut_short"):
            return fail(f"run_status {d.get('run_status')}, records {len(recs)}: the record should be kept, cut_short")
        if "cut short" not in text:
            return fail("the burn should say it was cut short")
        print("PASS")
        return 0
    if mode == "validate":
        junit = out / "validate4.xml"
        env = dict(os.environ, NODEBENCH_BURN_DURATION="20")
        p = subprocess.run([exe, "validate", "--level", "4", "--out", str(out / "validate4"), "--junit", str(junit)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        print(p.stdout[-6000:])
        if p.returncode not in (0, 1) or not junit.is_file():
            return fail(f"validate --level 4 exited {p.returncode}, JUnit file {junit.is_file()}")
        files = sorted((out / "validate4").glob("nodebench-validate-*.json"))
        d = json.loads(files[-1].read_text())
        checks = d["analysis"]["validation"]["benchmarks"]
        gpus = len(d["environment"]["gpus"])
        for cid in ("burn.correct", "burn.sustained", "burn.slowdown", "burn.temperature", "burn.ecc", "burn.xid",
                    "burn.pcie_replay", "burn.link"):
            mine = [c for c in checks if c["id"] == cid]
            if len(mine) != gpus:
                return fail(f"{cid}: {len(mine)} checks for {gpus} GPUs")
            if cid not in junit.read_text():
                return fail(f"{cid} missing from the JUnit file")
        bad = [c for c in checks if c["id"] == "burn.correct" and c["severity"] != "ok"]
        if bad:
            return fail(f"burn.correct should pass on a healthy GPU: {bad}")
        print("PASS: " + "; ".join(f"{c['id']} GPU {c.get('gpu')}: {c['summary']}" for c in checks if c["id"].startswith("burn.")))
        return 0
    return fail(f"unknown mode {mode}")


if __name__ == "__main__":
    sys.exit(main())
