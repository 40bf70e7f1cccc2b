#!/usr/bin/env python3
"""The table of scripts/dev/peers/burn_peer.sh: nodebench burn's sustained GEMM rate and mean board power
against gpu-burn's, per GPU, with ratio_to_gpu_burn.

usage: burn_peer_summary.py OUTDIR [-o OUTDIR/burn_peer.json]   (the burn files may be gzip-compressed)

gpu-burn prints, at each report, the elapsed percentage and every GPU's Gflop/s over the last
interval. Its sustained rate here is the mean of the reports from the second half of its run (the
same share of the run as nodebench's own sustained window of min(300 s, D/2) at the end of a
burn of D seconds, after the board has reached its power cap); its power is the mean of
nvidia-smi's once-a-second samples over the second half of its loaded stretch (the longest run of
samples drawing at least half the board's power limit: gpu-burn allocates before and frees after
its timed burn, tens of seconds at idle power that are not the burn). nodebench's figures are its record's
`sustained_gemm_tflops` and `mean_power_w`. The ratio is nodebench over the mean of the gpu-burn
runs that surround it.
"""
import argparse
import csv
import glob
import gzip
import json
import os
import re
import statistics
import sys

REPORT = re.compile(r"(\d+(?:\.\d+)?)%\s+proc'd:\s*((?:-?\d+ \(\d+(?:\.\d+)? Gflop/s\)\s*-?\s*)+)")
GPU_RATE = re.compile(r"-?\d+ \((\d+(?:\.\d+)?) Gflop/s\)")
ERRORS = re.compile(r"errors:\s*((?:\d+\s*(?:\(WARNING!\)|\(DIED!\))?\s*-?\s*)+)")
VERDICT = re.compile(r"GPU (\d+): (OK|FAULTY)")


def parse_peer_log(path):
    """Per GPU: the second half's mean TFLOPS, the reports' error counts summed, the final verdict."""
    text = open(path, errors="replace").read().replace("\r", "\n")
    reports = []
    for line in text.splitlines():
        m = REPORT.search(line)
        if not m:
            continue
        rates = [float(x) / 1000.0 for x in GPU_RATE.findall(m.group(2))]
        e = ERRORS.search(line)
        errs = [int(x) for x in re.findall(r"(\d+)\s*(?:\(WARNING!\)|\(DIED!\))?", e.group(1))] if e else []
        reports.append((float(m.group(1)), rates, errs))
    if not reports:
        raise SystemExit(f"burn_peer_summary: no progress reports in {path}")
    ngpu = max(len(r[1]) for r in reports)
    out = {}
    for g in range(ngpu):
        late = [r[1][g] for r in reports if r[0] >= 50.0 and len(r[1]) > g and r[1][g] > 0]
        out[g] = {
            "sustained_tflops": statistics.fmean(late) if late else None,
            "reports_in_window": len(late),
            "max_errors_in_a_report": max((r[2][g] for r in reports if len(r[2]) > g), default=None),
        }
    for g, verdict in VERDICT.findall(text):
        out.setdefault(int(g), {})["verdict"] = verdict
    return out


def parse_power(path):
    """Per GPU: mean power.draw over the second half of the samples, and the power limit."""
    rows = {}
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if len(row) < 4:
                continue
            try:
                g, p, lim = int(row[1]), float(row[2]), float(row[3])
            except ValueError:
                continue
            rows.setdefault(g, []).append((p, lim))
    out = {}
    for g, s in rows.items():
        best, start = (0, 0), None
        for i, (p, lim) in enumerate(s + [(0.0, 1.0)]):  # a sentinel ends the last stretch
            if p >= 0.5 * lim:
                start = i if start is None else start
            elif start is not None:
                best = max(best, (i - start, start), key=lambda x: x[0])
                start = None
        n, first = best
        if n == 0:
            continue
        loaded = s[first:first + n]
        half = loaded[len(loaded) // 2:]
        out[g] = {"mean_power_w": statistics.fmean(p for p, _ in half), "power_limit_w": half[-1][1],
                  "loaded_samples": n, "samples_in_window": len(half)}
    return out


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return json.load(f)


def parse_burn(path):
    d = load(path)
    out = {}
    for r in d.get("records", []):
        if not r.get("id", "").startswith("burn/"):
            continue
        g = (r.get("gpus") or [None])[0]
        m = r.get("metrics", {})
        out[g] = {
            "status": r.get("status"),
            "sustained_tflops": m.get("sustained_gemm_tflops"),
            "first_minute_tflops": m.get("first_minute_gemm_tflops"),
            "mean_power_w": m.get("mean_power_w"),
            "faulty_elements": m.get("faulty_elements_count"),
            "memory_errors": m.get("memory_errors_count"),
            "precision": r.get("details", {}).get("precision"),
            "cut_short": r.get("details", {}).get("cut_short"),
        }
    return out, d.get("run_status")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("-o", "--out")
    a = ap.parse_args()
    steps = []
    for path in sorted(glob.glob(os.path.join(a.outdir, "*-peer.log")) + glob.glob(os.path.join(a.outdir, "*-burn.json"))
                       + glob.glob(os.path.join(a.outdir, "*-burn.json.gz")),
                       key=lambda p: int(os.path.basename(p).split("-")[0])):
        n = int(os.path.basename(path).split("-")[0])
        if path.endswith("-peer.log"):
            power_path = os.path.join(a.outdir, f"{n}-peer-power.csv")
            power = parse_power(power_path) if os.path.exists(power_path) else {}
            steps.append({"step": n, "tool": "gpu-burn", "gpus": {
                str(g): {**v, **power.get(g, {})} for g, v in parse_peer_log(path).items()}})
        else:
            recs, status = parse_burn(path)
            steps.append({"step": n, "tool": "nodebench", "run_status": status,
                          "gpus": {str(g): v for g, v in recs.items()}})
    table = []
    for i, s in enumerate(steps):
        if s["tool"] != "nodebench":
            continue
        peers = [p for p in steps if p["tool"] == "gpu-burn"]
        around = [p for p in peers if abs(p["step"] - s["step"]) == 1] or peers
        for g, v in s["gpus"].items():
            pr = [p["gpus"][g]["sustained_tflops"] for p in around if p["gpus"].get(g, {}).get("sustained_tflops")]
            pw = [p["gpus"][g]["mean_power_w"] for p in around if p["gpus"].get(g, {}).get("mean_power_w")]
            row = {"gpu": g, "nodebench_step": s["step"], "peer_steps": [p["step"] for p in around],
                   "nodebench_tflops": v["sustained_tflops"], "gpu_burn_tflops": statistics.fmean(pr) if pr else None,
                   "nodebench_mean_power_w": v["mean_power_w"], "gpu_burn_mean_power_w": statistics.fmean(pw) if pw else None,
                   "nodebench_faulty_elements": v["faulty_elements"], "nodebench_memory_errors": v["memory_errors"],
                   "gpu_burn_verdicts": [p["gpus"].get(g, {}).get("verdict") for p in around]}
            row["ratio_to_gpu_burn"] = (row["nodebench_tflops"] / row["gpu_burn_tflops"]
                                        if row["nodebench_tflops"] and row["gpu_burn_tflops"] else None)
            row["power_ratio_to_gpu_burn"] = (row["nodebench_mean_power_w"] / row["gpu_burn_mean_power_w"]
                                              if row["nodebench_mean_power_w"] and row["gpu_burn_mean_power_w"] else None)
            table.append(row)
    result = {"steps": steps, "table": table}
    out = a.out or os.path.join(a.outdir, "burn_peer.json")
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    print("gpu  nodebench TFLOPS  gpu-burn TFLOPS  ratio_to_gpu_burn  nodebench W  gpu-burn W  faulty/mem  gpu-burn")
    for r in table:
        def f(x, n=1):
            return "-" if x is None else f"{x:.{n}f}"
        print(f"{r['gpu']:>3}  {f(r['nodebench_tflops']):>17}  {f(r['gpu_burn_tflops']):>15}  {f(r['ratio_to_gpu_burn'], 3):>17}"
              f"  {f(r['nodebench_mean_power_w'], 0):>11}  {f(r['gpu_burn_mean_power_w'], 0):>10}"
              f"  {r['nodebench_faulty_elements']}/{r['nodebench_memory_errors']}  {','.join(str(v) for v in r['gpu_burn_verdicts'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
