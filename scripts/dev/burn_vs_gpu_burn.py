#!/usr/bin/env python3
"""nodebench's burn against gpu-burn (the public tool, built by the user from its source in a scratch
folder, never part of the project), alternated on the same GPUs at the same GEMM precision, with the
same power sampling for both (`nodebench monitor --format jsonl`, one sample a second).

usage: burn_vs_gpu_burn.py --nodebench build/nodebench --gpu-burn DIR [--duration 300] [--precision fp32]
                           [--rounds 2] [--tools nodebench,gpu_burn] --out OUT_DIR

DIR holds gpu-burn's built `gpu_burn` and its `compare.ptx` (gpu-burn loads it from its working folder).
Precision: fp32 (gpu-burn's default SGEMM), tf32 (gpu-burn -tc), fp64 (gpu-burn -d).
Each round runs `nodebench burn` then `gpu_burn` (--tools: these, in this order) for --duration seconds
each. Every run is appended to OUT_DIR/runs.jsonl, and OUT_DIR/summary.json is computed from all the runs
there, so that one tool per call can be alternated across calls (a call per tool and round keeps each
call under ten minutes). summary.json holds:
per run and GPU the GEMM rate over the second half of the run (nodebench: the record's
sustained_gemm_tflops, the mean over the last min(300 s, D/2); gpu-burn: the mean of its per-GPU Gflop/s
readings in the second half) and the mean power over the second half (from the monitor), faulty elements
/ errors; and over the rounds `ratio_to_gpu_burn` (nodebench's rate over gpu-burn's, per GPU and the
mean) and `power_ratio_to_gpu_burn`. The commands and every output file are kept in OUT_DIR.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from statistics import mean

GPU_BURN_FLAGS = {"fp32": [], "tf32": ["-tc"], "fp64": ["-d"]}


def monitored(cmd, cwd, out: Path, tag: str, nodebench: str, duration: float):
    """Runs cmd with `nodebench monitor` beside it; returns (exit code, stdout text, monitor samples, t0)."""
    mon_file = out / f"{tag}.monitor.jsonl"
    mon = subprocess.Popen([nodebench, "monitor", "--format", "jsonl", "--interval", "1", "--out", str(mon_file)])
    t0 = time.time()
    with open(out / f"{tag}.log", "w") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
        log.write(p.stdout)
    mon.terminate()
    mon.wait(timeout=30)
    samples = [json.loads(x) for x in mon_file.read_text().splitlines() if x.strip()]
    return p.returncode, p.stdout, samples, t0


def mean_power_second_half(samples, t0, duration):
    """Mean power per GPU over [t0 + duration/2, t0 + duration] (the monitor's unix_time)."""
    by = {}
    for s in samples:
        if s.get("power_w") is not None and t0 + duration / 2 <= s["unix_time"] <= t0 + duration:
            by.setdefault(s["gpu"], []).append(s["power_w"])
    return {g: mean(v) for g, v in sorted(by.items())}


def gpu_burn_rates(text: str, duration: float):
    """Per GPU, the mean of gpu-burn's Gflop/s readings printed in the second half of its run (its progress
    lines: '\\r42.0%  proc'd: 123 (45678 Gflop/s) - 120 (45000 Gflop/s)   errors: 0 - 0 ...')."""
    per = {}
    for chunk in re.split(r"[\r\n]+", text):
        m = re.match(r"\s*([\d.]+)%\s+proc'd:(.*?)errors:", chunk)
        if not m or float(m.group(1)) < 50.0:
            continue
        for g, rate in enumerate(re.findall(r"\(([\d.]+) Gflop/s\)", m.group(2))):
            if float(rate) > 0:
                per.setdefault(g, []).append(float(rate) / 1000.0)
    return {g: mean(v) for g, v in per.items()}


def gpu_burn_errors(text: str):
    m = re.findall(r"GPU (\d+): (OK|FAULTY)", text)
    return {int(g): (0 if s == "OK" else 1) for g, s in m}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodebench", required=True)
    ap.add_argument("--gpu-burn", required=True, help="folder with the built gpu_burn and compare.ptx")
    ap.add_argument("--duration", type=int, default=300)
    ap.add_argument("--precision", choices=sorted(GPU_BURN_FLAGS), default="fp32")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--tools", default="nodebench,gpu_burn", help="which tools each round runs, in order")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    tools = [t for t in a.tools.split(",") if t]
    if not tools or any(t not in ("nodebench", "gpu_burn") for t in tools):
        print(f"burn_vs_gpu_burn: --tools: '{a.tools}' (expected nodebench and/or gpu_burn)", file=sys.stderr)
        return 2
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    nb = str(Path(a.nodebench).resolve())
    gb_dir = Path(a.gpu_burn).resolve()
    if "gpu_burn" in tools and not (gb_dir / "gpu_burn").is_file():
        print(f"burn_vs_gpu_burn: no gpu_burn in {gb_dir}", file=sys.stderr)
        return 2
    log = out / "runs.jsonl"
    done = [json.loads(x) for x in log.read_text().splitlines() if x.strip()] if log.is_file() else []
    first_round = 1 + max((x["round"] for x in done), default=-1)
    for r in range(first_round, first_round + a.rounds):
        for tool in tools:
            if tool == "nodebench":
                tag = f"round{r}_nodebench"
                res = out / f"{tag}.json"
                code, text, samples, t0 = monitored([nb, "burn", "--duration", f"{a.duration}s", "--precision", a.precision,
                                                     "--out-file", str(res)], None, out, tag, nb, a.duration)
                doc = json.loads(res.read_text())
                recs = [x for x in doc["records"] if x["family"] == "burn"]
                # The burn's own clock starts after its setup (reference, memory test): its second half by t_s.
                power = {}
                for x in recs:
                    tl = x["details"]["timeline"]
                    half = [p["power_w"] for p in tl if p.get("power_w") is not None and p["t_s"] >= a.duration / 2]
                    power[x["gpus"][0]] = mean(half) if half else None
                run = {"tool": "nodebench", "round": r, "exit": code, "result": res.name, "precision": a.precision,
                       "gemm_tflops": {x["gpus"][0]: x["metrics"]["sustained_gemm_tflops"] for x in recs},
                       "mean_power_w": power,
                       "faulty": {x["gpus"][0]: x["details"]["faulty_elements"] + x["details"]["memory_test"]["errors"]
                                  for x in recs}}
            else:
                tag = f"round{r}_gpu_burn"
                code, text, samples, t0 = monitored([str(gb_dir / "gpu_burn")] + GPU_BURN_FLAGS[a.precision] +
                                                    [str(a.duration)], gb_dir, out, tag, nb, a.duration)
                run = {"tool": "gpu_burn", "round": r, "exit": code, "precision": a.precision,
                       "gemm_tflops": gpu_burn_rates(text, a.duration),
                       "mean_power_w": mean_power_second_half(samples, t0, a.duration), "faulty": gpu_burn_errors(text)}
            with open(log, "a") as f:
                f.write(json.dumps(run) + "\n")
            done.append(json.loads(json.dumps(run)))
            print(json.dumps(run, indent=1))
    runs = [x for x in done if x.get("precision", a.precision) == a.precision]
    gpus = sorted({g for x in runs for g in x["gemm_tflops"]})

    def avg(tool, key, g):
        v = [float(x[key][g]) for x in runs if x["tool"] == tool and x[key].get(g) is not None]
        return mean(v) if v else None

    per = {}
    for g in gpus:
        nb_r, gb_r = avg("nodebench", "gemm_tflops", g), avg("gpu_burn", "gemm_tflops", g)
        nb_p, gb_p = avg("nodebench", "mean_power_w", g), avg("gpu_burn", "mean_power_w", g)
        per[g] = {"nodebench_tflops": nb_r, "gpu_burn_tflops": gb_r,
                  "ratio_to_gpu_burn": nb_r / gb_r if nb_r and gb_r else None,
                  "nodebench_mean_power_w": nb_p, "gpu_burn_mean_power_w": gb_p,
                  "power_ratio_to_gpu_burn": nb_p / gb_p if nb_p and gb_p else None}
    ratios = [v["ratio_to_gpu_burn"] for v in per.values() if v["ratio_to_gpu_burn"]]
    pratios = [v["power_ratio_to_gpu_burn"] for v in per.values() if v["power_ratio_to_gpu_burn"]]
    summary = {"precision": a.precision, "duration_s": a.duration, "runs": runs,
               "per_gpu": per, "ratio_to_gpu_burn": mean(ratios) if ratios else None,
               "power_ratio_to_gpu_burn": mean(pratios) if pratios else None,
               "faulty_total": {"nodebench": sum(sum(x["faulty"].values()) for x in runs if x["tool"] == "nodebench"),
                                "gpu_burn": sum(sum(x["faulty"].values()) for x in runs if x["tool"] == "gpu_burn")}}
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    print(f"ratio_to_gpu_burn {summary['ratio_to_gpu_burn']}, power ratio {summary['power_ratio_to_gpu_burn']}, "
          f"faulty {summary['faulty_total']}; {out / 'summary.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
