#!/usr/bin/env python3
"""The short tables of scripts/dev/device/train_fp32_session.sh (issue 40): nodebench's FP32/TF32
ResNet-50 step against every PyTorch mode, its batch norm's bandwidth per pass against the copy
bandwidth, and the convolution algorithms it chose.

Reads compare_train_peer.py's --out file (pairs: nodebench against each PyTorch mode per
precision, layout and batch), nodebench's result files of the same runs (per record: status, the
per-kind profile time_bn_ms / time_conv_ms and whether it added up to the step, the batch
norm's bandwidth at time_bn_ms (details.bn_traffic), the chosen algorithms, the layout its
convolutions ran in: details.conv_layout, the `conv` column) and nodebench_bn_bandwidth's --out
file. Prints three tables; --out writes them as JSON. --compare may be given once per group of
points the session ran apart (the points with their conv layout forced to the images' layout).

usage: train_fp32_summary.py [--compare RATIO.json ...] [--nodebench NB.json ...] [--bn BN.json] [--out FILE]
Exit status 0; 2 when an input cannot be read.
"""
import argparse
import collections
import json
import sys

# cuDNN's algorithm enums (cudnn_cnn.h: cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t).
FWD_ALGOS = ["implicit_gemm", "implicit_precomp_gemm", "gemm", "direct", "fft", "fft_tiling", "winograd",
             "winograd_nonfused"]
BWD_DATA_ALGOS = ["algo_0", "algo_1", "fft", "fft_tiling", "winograd", "winograd_nonfused"]
BWD_FILTER_ALGOS = ["algo_0", "algo_1", "fft", "algo_3", "winograd", "winograd_nonfused", "fft_tiling"]
PASSES = ("fwd_stats", "fwd_apply", "bwd_reduce", "bwd_apply")


def algo_name(names, algo):
    return names[algo] if isinstance(algo, int) and 0 <= algo < len(names) else f"algo {algo}"


def conv_layout(rec):
    """The layout the step's convolutions ran in (details.conv_layout; before it: the case's layout)."""
    return (rec.get("details") or {}).get("conv_layout") or rec.get("params", {}).get("layout")


def records_by_case(paths):
    """{(precision, layout, batch, conv_layout): [train record, ...]} of nodebench's result files."""
    out = collections.defaultdict(list)
    for p in paths:
        with open(p) as f:
            doc = json.load(f)
        for r in doc.get("records", []):
            prm = r.get("params", {})
            if r.get("family") == "train" and "batch" in prm:
                out[(prm.get("precision"), prm.get("layout"), int(prm["batch"]), conv_layout(r))].append(r)
    return out


def median(vals):
    vals = sorted(v for v in vals if isinstance(v, (int, float)))
    if not vals:
        return None
    n = len(vals)
    return vals[n // 2] if n % 2 else (vals[n // 2 - 1] + vals[n // 2]) / 2


def profile_of(records):
    """Median bn and conv time over the records, how many were ok, and any profile warning."""
    ok = [r for r in records if r.get("status") == "ok"]
    warn = [r["details"]["profile_warning"] for r in ok if (r.get("details") or {}).get("profile_warning")]
    return {"records": len(records), "ok": len(ok),
            "statuses": sorted({r.get("status", "?") for r in records}),
            "time_bn_ms": median(r["metrics"].get("time_bn_ms") for r in ok),
            "time_conv_ms": median(r["metrics"].get("time_conv_ms") for r in ok),
            "profile_sum_ms": median((r.get("details") or {}).get("profile_sum_ms") for r in ok),
            "bn_gbps": median(((r.get("details") or {}).get("bn_traffic") or {}).get("gbps_at_time_bn") for r in ok),
            "profile_warnings": warn}


def algorithm_counts(records):
    """Per pass, how many layers chose each cuDNN algorithm (the first ok record's choice)."""
    ok = [r for r in records if r.get("status") == "ok" and (r.get("details") or {}).get("algorithms")]
    if not ok:
        return {}
    out = {"fwd": collections.Counter(), "bwd_data": collections.Counter(), "bwd_filter": collections.Counter()}
    for layer in ok[0]["details"]["algorithms"]:
        out["fwd"][algo_name(FWD_ALGOS, layer.get("fwd_algo"))] += 1
        out["bwd_filter"][algo_name(BWD_FILTER_ALGOS, layer.get("bwd_filter_algo"))] += 1
        if "bwd_data_algo" in layer:
            out["bwd_data"][algo_name(BWD_DATA_ALGOS, layer.get("bwd_data_algo"))] += 1
    return {k: dict(sorted(v.items(), key=lambda kv: -kv[1])) for k, v in out.items()}


def step_rows(compare, by_case):
    """One row per pair of the compare file(s): a dict, or a list of them (one per conv layout the
    session forced); the row's conv layout is the pair's, its profile that of the records run so."""
    rows = []
    for c in compare if isinstance(compare, list) else [compare]:
        for p in c.get("pairs", []):
            rows.append(step_row(p, by_case))
    return rows


def step_row(p, by_case):
    conv = p.get("nodebench_conv_layout") or p["layout"]
    key = (p["precision"], p["layout"], p["batch"], conv)
    modes = {m: f["step_time_ms"] for m, f in p.get("pytorch_modes", {}).items()}
    return {"case": f"{key[0]}/{key[1]}/b{key[2]}", "conv_layout": conv, "nodebench_ms": p["nodebench_step_ms"],
            "nodebench_runs_ms": p.get("nodebench_step_ms_runs"), "pytorch_ms": modes,
            "fastest_mode": p["pytorch_fastest_mode"], "ratio_to_fastest": p["ratio_to_fastest"],
            "memory_ratio_to_smallest": p.get("memory_ratio_to_smallest"),
            "profile": profile_of(by_case.get(key, [])), "algorithms": algorithm_counts(by_case.get(key, []))}


def fmt(v, w, d=2):
    return f"{v:{w}.{d}f}" if isinstance(v, (int, float)) else f"{'-':>{w}s}"


def print_tables(rows, bn):
    print("ResNet-50 step: nodebench against every PyTorch mode (ratio = fastest PyTorch / nodebench; >= 1: as fast or faster)")
    print(f"{'case':16s} {'conv':>4s} {'nb ms':>8s} {'eager':>8s} {'compile':>8s} {'r-o':>8s} {'fastest':>15s} {'ratio':>6s}"
          f" {'mem/min':>7s} {'bn ms':>7s} {'bn GB/s':>7s} {'conv ms':>7s} {'ok':>5s}")
    for r in rows:
        m, pr = r["pytorch_ms"], r["profile"]
        print(f"{r['case']:16s} {r.get('conv_layout') or '-':>4s} {fmt(r['nodebench_ms'], 8)} {fmt(m.get('eager'), 8)} {fmt(m.get('compile'), 8)}"
              f" {fmt(m.get('reduce-overhead'), 8)} {r['fastest_mode']:>15s} {fmt(r['ratio_to_fastest'], 6, 3)}"
              f" {fmt(r['memory_ratio_to_smallest'], 7)} {fmt(pr['time_bn_ms'], 7)} {fmt(pr['bn_gbps'], 7, 0)}"
              f" {fmt(pr['time_conv_ms'], 7)}"
              f" {str(pr['ok']) + '/' + str(pr['records']):>5s}")
        for w in pr["profile_warnings"][:1]:
            print(f"  profile: {w}")
    for r in rows:
        if r["algorithms"] and r["case"].startswith("fp32/nchw"):
            a = r["algorithms"]
            print(f"{r['case']} ({r.get('conv_layout')} convolutions) algorithms: fwd {a['fwd']}; bwd_data {a['bwd_data']}; bwd_filter {a['bwd_filter']}")
    if bn:
        print(f"batch norm passes (FP32) against {bn.get('reference_gbps', 0):.0f} GB/s ({bn.get('reference', '?')}):"
              " step-weighted ratio / worst layer shape")
        print(f"{'layout/batch':12s} " + " ".join(f"{p:>22s}" for p in PASSES) + f" {'all':>7s}")
        for s in bn.get("step", []):
            cells = []
            for p in PASSES:
                c = s.get(p, {})
                cells.append(f"{fmt(c.get('ratio'), 5, 3)} / {fmt(c.get('worst_ratio'), 5, 3)} {c.get('worst_shape', ''):>7s}")
            print(f"{s['layout'] + '/b' + str(s['batch']):12s} " + " ".join(f"{x:>22s}" for x in cells)
                  + f" {fmt(s.get('all', {}).get('ratio'), 7, 3)}")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compare", action="append", default=[],
                    help="compare_train_peer.py --out file, once per conv-layout group of the session"
                         " (absent: the batch-norm table alone)")
    ap.add_argument("--nodebench", nargs="*", default=[])
    ap.add_argument("--bn")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    try:
        compare = []
        for path in a.compare:
            with open(path) as f:
                compare.append(json.load(f))
        by_case = records_by_case(a.nodebench)
        bn = None
        if a.bn:
            with open(a.bn) as f:
                bn = json.load(f)
    except (OSError, ValueError) as e:
        print(f"train_fp32_summary: {e}", file=sys.stderr)
        return 2
    rows = step_rows(compare, by_case)
    print_tables(rows, bn)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"steps": rows, "bn_step": (bn or {}).get("step")}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
