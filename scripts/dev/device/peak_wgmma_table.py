#!/usr/bin/env python3
"""The tensor-core peak table of the GPU session's peak-wgmma step (issue 25): for FP16, BF16, TF32,
INT8 and FP8, nodebench's peak case (peak/mma_*) against the best of cuBLAS/cuBLASLt's GEMM 8192^3
(gemm/<precision>/<api>/square_8192) and the independent wgmma kernel
(scripts/dev/peers/peak_independent.cu --wgmma, its lines "<unit> <rate> TFLOPS|TOPS (...)"), all taken
in one session: ratio = peak case / max(cuBLAS, independent), held to --min-ratio (default 0.97).

Usage: peak_wgmma_table.py --gemm GEMM.json --peak PEAK.json --independent A.txt [B.txt ...]
                           [--min-ratio R] [--out RATIO.json]
Exit status: 0 every unit at or above the ratio; 1 a unit below it, missing, not ok, or a failed
check; 2 unreadable input.
"""
import argparse
import json
import sys

UNITS = [  # (unit, GEMM precision, peak case, independent unit, metric)
    ("fp16", "fp16", "peak/mma_fp16", "wgmma_fp16", "tflops"),
    ("bf16", "bf16", "peak/mma_bf16", "wgmma_bf16", "tflops"),
    ("tf32", "tf32", "peak/mma_tf32", "wgmma_tf32", "tflops"),
    ("int8", "int8", "peak/mma_int8", "wgmma_int8", "tops"),
    ("fp8", "fp8", "peak/mma_fp8", "wgmma_fp8", "tflops"),
]


def read_independent(paths):
    """{unit: ([rates...], check_failed)} from the independent kernel's output files."""
    out = {}
    for p in paths:
        with open(p) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[2] in ("TFLOPS", "TOPS"):
                    rates, failed = out.get(parts[0], ([], False))
                    rates.append(float(parts[1]))
                    out[parts[0]] = (rates, failed or "check FAILED" in line)
                elif len(parts) >= 2 and parts[1] == "CHECK":
                    rates, _ = out.get(parts[0], ([], False))
                    out[parts[0]] = (rates, True)
    return out


def best_gemm(records, precision, metric):
    """(rate, id) of the best ok square_8192 record of the precision, or (None, None)."""
    best = (None, None)
    for r in records:
        parts = r.get("id", "").split("/")
        if len(parts) != 4 or parts[0] != "gemm" or parts[1] != precision or parts[3] != "square_8192":
            continue
        v = (r.get("metrics") or {}).get(metric)
        if r.get("status") == "ok" and isinstance(v, (int, float)) and (best[0] is None or v > best[0]):
            best = (float(v), r["id"])
    return best


def table(gemm_doc, peak_doc, indep, min_ratio):
    peaks = {r["id"]: r for r in peak_doc.get("records", [])}
    rows = []
    for unit, prec, pid, iid, metric in UNITS:
        g, gid = best_gemm(gemm_doc.get("records", []), prec, metric)
        rates, failed = indep.get(iid, ([], False))
        i = max(rates) if rates else None
        rec = peaks.get(pid) or {}
        det = rec.get("details") or {}
        p = (rec.get("metrics") or {}).get(metric) if rec.get("status") == "ok" else None
        ref = max([x for x in (g, i) if x is not None], default=None)
        ratio = p / ref if p is not None and ref else None
        problems = []
        if rec.get("status") != "ok":
            problems.append(f"peak case {rec.get('status', 'missing')}: {rec.get('reason') or ''}".strip())
        if (det.get("verification") or {}).get("ok") is False:
            problems.append("peak case's all-ones check failed")
        if failed:
            problems.append("independent kernel's check failed")
        if ref is None:
            problems.append("no cuBLAS or independent figure")
        if ratio is not None and ratio < min_ratio:
            problems.append(f"ratio below {min_ratio}")
        rows.append({"unit": unit, "metric": metric, "cublas": g, "cublas_case": gid, "independent": rates,
                     "peak": p, "peak_sm_mhz": (rec.get("metrics") or {}).get("sm_clock_mhz"),
                     "instruction": det.get("instruction"), "ratio": ratio, "ok": not problems, "problems": problems})
    return rows


def fmt(v, width=9, digits=1):
    return f"{v:{width}.{digits}f}" if isinstance(v, (int, float)) else "-".rjust(width)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gemm", required=True)
    ap.add_argument("--peak", required=True)
    ap.add_argument("--independent", nargs="+", required=True)
    ap.add_argument("--min-ratio", type=float, default=0.97)
    ap.add_argument("--out")
    a = ap.parse_args()
    try:
        with open(a.gemm) as f:
            gemm_doc = json.load(f)
        with open(a.peak) as f:
            peak_doc = json.load(f)
        indep = read_independent(a.independent)
    except (OSError, ValueError) as e:
        print(f"peak_wgmma_table: {e}", file=sys.stderr)
        return 2
    rows = table(gemm_doc, peak_doc, indep, a.min_ratio)
    print(f"  {'unit':5s} {'metric':6s} {'cuBLAS':>9s} {'indep.':>9s} {'peak case':>9s} {'MHz':>6s} {'ratio':>6s}  verdict")
    for r in rows:
        ind = max(r["independent"]) if r["independent"] else None
        print(f"  {r['unit']:5s} {r['metric']:6s} {fmt(r['cublas'])} {fmt(ind)} {fmt(r['peak'])} "
              f"{fmt(r['peak_sm_mhz'], 6, 0)} {fmt(r['ratio'], 6, 3)}  {'ok' if r['ok'] else 'FAIL: ' + '; '.join(r['problems'])}")
    print(f"  ratio = peak case / max(cuBLAS best API, independent wgmma kernel best of {len(a.independent)} runs); "
          f"target >= {a.min_ratio}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"min_ratio": a.min_ratio, "rows": rows}, f, indent=1)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
