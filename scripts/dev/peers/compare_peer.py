#!/usr/bin/env python3
"""Ratio of nodebench to a peer (PyTorch) measured in the same call: nodebench / peer.

Each peer row is matched with nodebench records:
  conv2d (precision, batch)  conv/layer/l1_3x3_64_64/<precision>/nchw/fwd/b<batch>
  matmul (precision, size)  gemm square records of that precision and size; the API PyTorch
                            itself uses (cuBLAS for FP32/TF32, cuBLASLt for FP16/BF16) and the best
  copy_d2d                  memory/copy and memory/memcpy_d2d at 4 GiB (bytes read + written)
  h2d_pinned, d2h_pinned,   hostlink/<dir>/<memory>/ce/1GiB
  h2d_pageable, d2h_pageable
  all_reduce (dtype, bytes, n)  nccl/all_reduce/<dtype>/{in_place,out_of_place}/eager/<size> on n
                            GPUs, bus bandwidth (the peer, scripts/dev/peers/peer_torch_nccl.py, is in place)
Runs taken alternately (peer, nodebench, peer, nodebench, peer) average out the GPU's drift
between power states; each side's median over its runs is compared.

usage: compare_peer.py --result RESULT.json [--result ...] --peer PEER.json [--peer ...]
                       [--out FILE] [--min-ratio R]
Exit 0, or 1 when --min-ratio is given and a best ratio is below it.
"""
import argparse
import json
import statistics
import sys

TORCH_API = {"fp32": "cublas", "tf32": "cublas", "fp16": "cublaslt", "bf16": "cublaslt"}


def peer_key(r):
    if r["op"] == "matmul":
        return ("matmul", r["precision"], r["m"])
    if r["op"] == "conv2d":
        return ("conv2d", r["precision"], r["batch"])
    if r["op"] == "all_reduce":
        return ("all_reduce", r["dtype"], r["bytes"], r["ngpus"])
    return (r["op"],)


def ours_for(key, record):
    """(label, value) when the record answers the peer row `key`, else None."""
    if record["status"] != "ok":
        return None
    p, m = record["params"], record["metrics"]
    if key[0] == "matmul":
        if (record["family"] == "gemm" and p.get("shape") == "square" and p["precision"] == key[1]
                and p["m"] == key[2]):
            return p["api"], m["tflops"]
        return None
    if key[0] == "conv2d":
        if (record["family"] == "conv" and p.get("layer") == "l1_3x3_64_64" and p.get("pass") == "fwd"
                and p.get("layout") == "nchw" and p["precision"] == key[1] and p["batch"] == key[2]):
            return "cudnn", m["tflops"]
        return None
    if key[0] == "all_reduce":
        if (record["family"] == "nccl" and p.get("collective") == "all_reduce" and not p.get("sweep")
                and p.get("dtype") == key[1] and p.get("bytes") == key[2] and p.get("ngpus") == key[3]
                and not p.get("graph")):
            return ("nccl in place" if p.get("in_place") else "nccl out of place"), m["busbw_gbps"]
        return None
    if key[0] == "copy_d2d":
        if record["family"] == "memory" and p.get("kernel") in ("copy", "memcpy_d2d") and p.get("bytes") == 4 << 30:
            return p["kernel"], m["gbps"]
        return None
    direction, memory = key[0].split("_")
    if (record["family"] == "hostlink" and p.get("direction") == direction and p.get("memory") == memory
            and p.get("engine") == "ce" and p.get("bytes") == 1 << 30):
        return "ce", m["gbps"]
    return None


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
    keys = []
    for p in peers:
        for r in p["results"]:
            if peer_key(r) not in keys:
                keys.append(peer_key(r))
    rows = []
    for key in keys:
        unit = ("tflops" if key[0] in ("matmul", "conv2d") else "busbw_gbps" if key[0] == "all_reduce"
                else "gbps")
        peer_runs = [r[unit] for p in peers for r in p["results"] if peer_key(r) == key]
        per_label = {}
        for res in results:
            for rec in res["records"]:
                hit = ours_for(key, rec)
                if hit:
                    per_label.setdefault(hit[0], []).append(hit[1])
        if not per_label:
            continue
        ours = {k: statistics.median(v) for k, v in per_label.items()}
        peer = statistics.median(peer_runs)
        same = ours.get(TORCH_API.get(key[1])) if key[0] == "matmul" else None
        best_label = max(ours, key=ours.get)
        rows.append({"case": " ".join(str(k) for k in key), "unit": unit, "peer": peer, "peer_runs": peer_runs,
                     "nodebench": ours, "nodebench_runs": per_label, "best": best_label,
                     "ratio_best": ours[best_label] / peer,
                     "ratio_same_api": same / peer if same else None})
    print(f"{'case':30s}{'unit':>11s}{'PyTorch':>10s}{'nodebench':>11s}{'ratio':>8s}  best of")
    for r in rows:
        print(f"{r['case']:30s}{r['unit']:>11s}{r['peer']:10.1f}{r['nodebench'][r['best']]:11.1f}"
              f"{r['ratio_best']:8.3f}  {r['best']}"
              + (f" (same API as PyTorch: {r['ratio_same_api']:.3f})" if r["ratio_same_api"] else ""))
    doc = {"result_files": a.result, "peer_files": a.peer, "run_ids": [r["run_id"] for r in results],
           "device": peers[0].get("device"), "torch_version": peers[0].get("torch_version"), "rows": rows}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1)
    if a.min_ratio is not None and any(r["ratio_best"] < a.min_ratio for r in rows):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
