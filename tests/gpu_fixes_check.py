#!/usr/bin/env python3
"""GPU test of issue 14's rules on real records: runs `nodebench run` (p2p on one GPU through the
loopback hook, host link both ways, the peak kernels, GEMM fp16) and checks, record by record:

- no record is above its peak (above 103% it would be `wrong` with flag `above_peak`);
- `time_capped` only where the time budget stopped sampling, `sample_capped` only at the ceiling;
- peer latency timed one copy per sample (measurement.batch == 1);
- both-ways figures: p2p `sum_gbps` = `fwd_gbps` + `rev_gbps` and `gbps` within 3% of it (each
  sample is the two directions' own events); host link `sum_gbps` = `h2d_gbps` + `d2h_gbps`;
- `peak/int8_dp4a` judged against `int8_dp4a_tops`, `gemm/fp16` against the tensor peak (7.0 and
  newer) or `fp32_tflops` (below), and `percent_at_clock` present where the SM clock is known.

usage: gpu_fixes_check.py NODEBENCH OUTDIR
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys

from result_check import verdict  # each problem a FAIL line, the count, the exit status


def main() -> int:
    exe, outdir = sys.argv[1], pathlib.Path(sys.argv[2])
    shutil.rmtree(outdir, ignore_errors=True)
    env = dict(os.environ, NODEBENCH_P2P_LOOPBACK="1")
    cmd = [exe, "run", "--out", str(outdir), "--suite", "quick", "--gpus", "0", "--max-time", "0.3",
           "--filter", r"^p2p/|^hostlink/bidir/|^peak/|^gemm/fp16/cublaslt/square_1024$"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=280, env=env)
    print(p.stdout[-4000:], p.stderr[-2000:])
    files = list(outdir.glob("*.json"))
    if len(files) != 1:
        print(f"FAIL: exit {p.returncode}, expected one result file, found {files}")
        return 1
    doc = json.loads(files[0].read_text())
    cc = doc["environment"]["gpus"][0]["compute_capability"]
    major, minor = (int(x) for x in cc.split("."))
    bad = []
    seen = set()
    for r in doc["records"]:
        rid, m, flags = r["id"], r["metrics"], r["flags"]
        pct = r.get("percent_of_peak")
        if "above_peak" in flags or (pct and pct["percent"] > 103):
            bad.append(f"{rid}: above its peak: {pct}")
        if r["status"] not in ("ok", "skipped"):
            bad.append(f"{rid}: {r['status']}: {r['reason']}")
        if r["status"] != "ok":
            continue
        stop = r["measurement"].get("stop")
        if "time_capped" in flags and stop != "time_cap":
            bad.append(f"{rid}: time_capped but stop {stop}")
        if "sample_capped" in flags and stop != "max_samples":
            bad.append(f"{rid}: sample_capped but stop {stop}")
        if rid.startswith("p2p/latency/"):
            seen.add("p2p latency")
            if r["measurement"].get("batch") != 1:
                bad.append(f"{rid}: latency batch {r['measurement'].get('batch')}, expected one copy per sample")
        if rid.startswith("p2p/") and "fwd_gbps" in m:
            seen.add("p2p bidir")
            if abs(m["sum_gbps"] - (m["fwd_gbps"] + m["rev_gbps"])) > 1e-6 * m["sum_gbps"]:
                bad.append(f"{rid}: sum_gbps {m['sum_gbps']} != fwd + rev")
            if abs(m["gbps"] / m["sum_gbps"] - 1) > 0.03:
                bad.append(f"{rid}: gbps {m['gbps']} not within 3% of sum_gbps {m['sum_gbps']}")
        if rid.startswith("hostlink/bidir/"):
            seen.add("hostlink bidir")
            if abs(m["sum_gbps"] - (m["h2d_gbps"] + m["d2h_gbps"])) > 1e-6 * m["sum_gbps"]:
                bad.append(f"{rid}: sum_gbps != h2d + d2h")
        if rid.startswith("peak/int8_dp4a"):
            seen.add("dp4a")
            if not pct or pct["peak_key"] != "int8_dp4a_tops":
                bad.append(f"{rid}: percent_of_peak {pct}, expected against int8_dp4a_tops")
        if rid.startswith("gemm/fp16/"):
            seen.add("gemm fp16")
            want = "fp16_tensor_tflops" if major >= 7 else "fp32_tflops"
            if not pct or pct["peak_key"] != want:
                bad.append(f"{rid}: percent_of_peak {pct}, expected against {want}")
            elif r["clocks"].get("sm_mhz_during") and "percent_at_clock" not in pct:
                bad.append(f"{rid}: SM clock known but no percent_at_clock")
    for what in ("p2p latency", "p2p bidir", "hostlink bidir", "dp4a", "gemm fp16"):
        if what not in seen:
            bad.append(f"no ok record for {what}")
    return verdict(bad, doc)


if __name__ == "__main__":
    sys.exit(main())
