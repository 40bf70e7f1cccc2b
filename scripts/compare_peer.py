#!/usr/bin/env python3
"""Ratio of nodebench to a peer (PyTorch) measured in the same call.

For GEMM: each peer matmul row is matched with the nodebench record of the same precision and
size through the API PyTorch itself uses (cuBLAS for FP32/TF32, cuBLASLt for FP16/BF16) and
with the best of both APIs; ratio = nodebench TFLOPS / PyTorch TFLOPS. When several peer files
are given (taken before and after nodebench), the peer's median over them is used.

usage: compare_peer.py --result RESULT.json [--result ...] --peer PEER.json [--peer ...] [--out FILE] [--min-ratio R]
Runs taken alternately (peer, nodebench, peer, nodebench, peer) average out the GPU's drift
between power states; each side's median over its runs is compared.
Exit 0, or 1 when --min-ratio is given and a ratio is below it.
"""
import argparse
import json
import statistics
import sys

TORCH_API = {"fp32": "cublas", "tf32": "cublas", "fp16": "cublaslt", "bf16": "cublaslt"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--result", action="append", required=True,
                    help="nodebench result file; repeat for interleaved runs (median taken)")
    ap.add_argument("--peer", action="append", required=True)
    ap.add_argument("--out")
    ap.add_argument("--min-ratio", type=float)
    a = ap.parse_args()
    results = [json.load(open(f)) for f in a.result]
    peers = [json.load(open(p)) for p in a.peer]
    rows = []
    for pr in peers[0]["results"]:
        if pr["op"] != "matmul":
            continue
        key = (pr["precision"], pr["m"], pr["n"], pr["k"])
        peer_tflops = statistics.median(
            r["tflops"] for p in peers for r in p["results"]
            if r["op"] == "matmul" and (r["precision"], r["m"], r["n"], r["k"]) == key)
        per_api = {}
        for res in results:
            for r in res["records"]:
                pa = r["params"]
                if (r["family"] == "gemm" and r["status"] == "ok" and pa.get("shape") == "square"
                        and (pa["precision"], pa["m"], pa["n"], pa["k"]) == key):
                    per_api.setdefault(pa["api"], []).append(r["metrics"]["tflops"])
        ours = {api: statistics.median(v) for api, v in per_api.items()}
        if not ours:
            continue
        same_api = ours.get(TORCH_API[pr["precision"]])
        best = max(ours.values())
        rows.append({"precision": pr["precision"], "size": pr["m"], "peer_tflops": peer_tflops,
                     "nodebench_tflops_same_api": same_api, "nodebench_tflops_best": best,
                     "nodebench_by_api": ours, "nodebench_runs_by_api": per_api,
                     "peer_runs": [r["tflops"] for p in peers for r in p["results"]
                                   if r["op"] == "matmul" and (r["precision"], r["m"], r["n"], r["k"]) == key],
                     "ratio_same_api": same_api / peer_tflops if same_api else None,
                     "ratio_best": best / peer_tflops})
    print(f"{'precision':10s}{'size':>7s}{'PyTorch':>10s}{'ours(api)':>11s}{'ours(best)':>11s}{'ratio':>8s}{'best':>8s}")
    for r in rows:
        sa = r["nodebench_tflops_same_api"]
        print(f"{r['precision']:10s}{r['size']:7d}{r['peer_tflops']:10.1f}{(sa or float('nan')):11.1f}"
              f"{r['nodebench_tflops_best']:11.1f}{(r['ratio_same_api'] or float('nan')):8.3f}{r['ratio_best']:8.3f}")
    doc = {"result_files": a.result, "peer_files": a.peer, "run_ids": [r["run_id"] for r in results],
           "device": peers[0].get("device"), "rows": rows}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1)
    if a.min_ratio is not None and any(r["ratio_best"] < a.min_ratio for r in rows):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
