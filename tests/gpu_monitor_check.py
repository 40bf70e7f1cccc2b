#!/usr/bin/env python3
"""GPU test of `nodebench monitor` and `run --monitor`.

usage: gpu_monitor_check.py NODEBENCH SCHEMA OUTDIR monitor|run|prometheus

monitor:    `monitor --duration 2 --interval 1 --format jsonl`: lines for every GPU NVML sees
            (as many as `nvidia-smi -L` lists, where it is installed), each round with every GPU,
            utilisation, clocks, power and memory known.
prometheus: `monitor --duration 1 --format prometheus --out FILE`: the textfile has a power and a
            memory line per GPU with its uuid, and no temporary file is left beside it.
run:        `run --monitor=0.2 --family memory --suite quick`: the result validates against the
            schema and holds a timeline: every GPU of the run with equal-length series (at most
            600 points), times increasing, values known, and a start and an end mark per record.
"""
import collections
import json
import pathlib
import shutil
import subprocess
import sys

from result_check import check_result  # the JSON Schema, or without jsonschema the loader's checks


def fail(msg: str) -> int:
    print("FAIL:", msg)
    return 1


def nvidia_smi_count():
    try:
        p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if p.returncode != 0:
        return None
    return sum(1 for line in p.stdout.splitlines() if line.startswith("GPU "))


def check_monitor(exe: str) -> int:
    p = subprocess.run([exe, "monitor", "--duration", "2", "--interval", "1", "--format", "jsonl"],
                       capture_output=True, text=True, timeout=60)
    print(p.stdout[-4000:], p.stderr[-2000:])
    if p.returncode != 0:
        return fail(f"exit {p.returncode}")
    rows = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    by_gpu = collections.defaultdict(list)
    for r in rows:
        by_gpu[r["gpu"]].append(r)
    if not by_gpu:
        return fail("no sample")
    gpus = sorted(by_gpu)
    if gpus != list(range(len(gpus))):
        return fail(f"GPUs {gpus} are not every NVML index")
    n = nvidia_smi_count()
    if n is not None and n != len(gpus):
        return fail(f"nvidia-smi lists {n} GPUs, monitor sampled {len(gpus)}")
    for g, samples in by_gpu.items():
        if len(samples) != 3:
            return fail(f"gpu {g}: {len(samples)} samples, expected 3 (t = 0, 1, 2 s)")
        ts = [s["t_s"] for s in samples]
        if not (ts[0] < 0.5 and 1.5 < ts[-1] < 3.0 and ts == sorted(ts)):
            return fail(f"gpu {g}: sample times {ts}")
        for s in samples:
            for k in ("gpu_util_pct", "sm_clock_mhz", "power_w", "mem_total_bytes", "mem_used_bytes", "temperature_c"):
                if s[k] is None:
                    return fail(f"gpu {g}: {k} unknown")
            if not s["uuid"].startswith("GPU-"):
                return fail(f"gpu {g}: uuid {s['uuid']!r}")
            if s["throttle_reasons"] is None:
                return fail(f"gpu {g}: throttle reasons unknown")
            if s["mem_used_bytes"] > s["mem_total_bytes"]:
                return fail(f"gpu {g}: more memory used than there is")
    print(f"ok: {len(gpus)} GPU(s), 3 samples each")
    return 0


def check_prometheus(exe: str, outdir: pathlib.Path) -> int:
    shutil.rmtree(outdir, ignore_errors=True)
    outdir.mkdir(parents=True)
    prom = outdir / "nodebench.prom"
    p = subprocess.run([exe, "monitor", "--duration", "1", "--format", "prometheus", "--out", str(prom)],
                       capture_output=True, text=True, timeout=60)
    print(p.stdout[-2000:], p.stderr[-2000:])
    if p.returncode != 0:
        return fail(f"exit {p.returncode}")
    text = prom.read_text()
    print(text[:3000])
    if [f.name for f in outdir.iterdir()] != ["nodebench.prom"]:
        return fail(f"files left: {list(outdir.iterdir())}")
    for metric in ("nodebench_gpu_power_watts", "nodebench_gpu_memory_used_bytes", "nodebench_gpu_sm_clock_hertz"):
        if f"# TYPE {metric} gauge" not in text:
            return fail(f"no TYPE line for {metric}")
        if f'{metric}{{gpu="0",uuid="GPU-' not in text:
            return fail(f"no {metric} line for gpu 0")
    print("ok: textfile")
    return 0


def check_run(exe: str, schema_path: str, outdir: pathlib.Path) -> int:
    shutil.rmtree(outdir, ignore_errors=True)
    p = subprocess.run([exe, "run", "--monitor=0.2", "--family", "memory", "--suite", "quick", "--quiet",
                        "--out", str(outdir)], capture_output=True, text=True, timeout=280)
    print(p.stdout[-4000:], p.stderr[-2000:])
    if p.returncode != 0:
        return fail(f"exit {p.returncode}")
    files = list(outdir.glob("*.json"))
    if len(files) != 1:
        return fail(f"expected one result file, found {files}")
    doc = json.loads(files[0].read_text())
    check_result(doc, schema_path, str(files[0]))
    t = doc.get("timeline")
    if not isinstance(t, dict):
        return fail(f"no timeline; notes: {doc.get('notes')}")
    if abs(t["interval_s"] - 0.2) > 1e-9:
        return fail(f"interval_s {t['interval_s']}")
    run_gpus = sorted({g for r in doc["records"] for g in r["gpus"]})
    if sorted(g["cuda_index"] for g in t["gpus"]) != run_gpus:
        return fail(f"timeline GPUs {[g['cuda_index'] for g in t['gpus']]} != the run's {run_gpus}")
    wall = doc["summary"]["wall_time_s"]
    for g in t["gpus"]:
        n = len(g["t_s"])
        if not 2 <= n <= 600:
            return fail(f"gpu {g['cuda_index']}: {n} points")
        for k in ("gpu_util", "sm_clock_mhz", "power_w", "mem_used_bytes"):
            if len(g[k]) != n:
                return fail(f"gpu {g['cuda_index']}: {k} has {len(g[k])} values for {n} times")
            if all(v is None for v in g[k]):
                return fail(f"gpu {g['cuda_index']}: {k} never known")
        if g["t_s"] != sorted(g["t_s"]) or g["t_s"][-1] > wall + 5:
            return fail(f"gpu {g['cuda_index']}: times not increasing or past the run")
        if max(v for v in g["gpu_util"] if v is not None) <= 0:
            return fail(f"gpu {g['cuda_index']}: utilisation never above 0 during memory cases")
    marks = t["marks"]
    texts = [m["text"] for m in marks]
    if [m["t_s"] for m in marks] != sorted(m["t_s"] for m in marks):
        return fail("marks not in time order")
    for r in doc["records"]:
        for what in ("start", "end"):
            if f"{what} {r['id']}" not in texts:
                return fail(f"no mark '{what} {r['id']}'")
    print(f"ok: timeline of {len(t['gpus'])} GPU(s), {len(marks)} marks")
    return 0


def main() -> int:
    exe, schema, outdir, what = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3]), sys.argv[4]
    if what == "monitor":
        return check_monitor(exe)
    if what == "prometheus":
        return check_prometheus(exe, outdir)
    if what == "run":
        return check_run(exe, schema, outdir)
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
