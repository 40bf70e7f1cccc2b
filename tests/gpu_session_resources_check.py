#!/usr/bin/env python3
"""GPU test: what the families keep in the Session (library handles, the cuDNN choice memo, the
algorithm cache), through two runs of a GEMM, a convolution layer and the ResNet-50 network
convolutions on GPU 0 with one --algo-cache file.

Run 1 (the file does not exist yet): every record ok; the GEMM's and the layer's algorithm
searched (`source` "search"); the network's entry of the same layer and pass reused the layer
case's choice within the run (`bwd_data_algo_source` "process", the same algorithm); the file
written with entries; the analyses of both families there. Run 2 (a fresh process): every choice
from the file (`source` "file"), the cache summary counting hits. Both runs exit 0: the session's
handles and teams are released without a crash.

usage: gpu_session_resources_check.py NODEBENCH OUTDIR
"""
import json
import pathlib
import shutil
import subprocess
import sys

FILTER = ("^gemm/fp32/cublaslt/square_1024$|^conv/layer/l1_3x3_64_64/fp16/nchw/bwd_data/b32$"
          "|^conv/resnet50/fp16/nchw/b32$")
LAYER = "l1_3x3_64_64"


def run(exe, outdir, cache, n):
    out = outdir / f"run{n}.json"
    cmd = [exe, "run", "--suite", "quick", "--gpus", "0", "--filter", FILTER, "--algo-cache", str(cache),
           "--max-time", "0.5", "--out-file", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=400)
    print(f"run {n}: exit {p.returncode}\n", p.stdout[-3000:], p.stderr[-2000:])
    if p.returncode != 0 or not out.exists():
        return None
    return json.loads(out.read_text())


def by_id(doc):
    return {r["id"]: r for r in doc["records"]}


def check_first(doc, cache, bad):
    recs = by_id(doc)
    gemm = recs.get("gemm/fp32/cublaslt/square_1024")
    layer = recs.get(f"conv/layer/{LAYER}/fp16/nchw/bwd_data/b32")
    net = recs.get("conv/resnet50/fp16/nchw/b32")
    if not (gemm and layer and net):
        bad.append(f"run 1: missing records: {sorted(recs)}")
        return None
    for r in (gemm, layer, net):
        if r["status"] != "ok":
            bad.append(f"run 1: {r['id']} {r['status']}: {r['reason']}")
    if gemm["details"]["algorithm"].get("source") != "search":
        bad.append(f"run 1: gemm algorithm source {gemm['details']['algorithm'].get('source')}, expected search")
    if layer["details"]["algorithm"].get("source") != "search":
        bad.append(f"run 1: layer algorithm source {layer['details']['algorithm'].get('source')}, expected search")
    entry = next((l for l in net["details"].get("layers", []) if l.get("layer") == LAYER), None)
    if not entry:
        bad.append(f"run 1: no {LAYER} in the network's layers")
    else:
        if entry.get("bwd_data_algo_source") != "process":
            bad.append(f"run 1: the network's {LAYER} bwd_data source {entry.get('bwd_data_algo_source')}, "
                       "expected process (the layer case's choice, kept by the session)")
        if entry.get("bwd_data_algo") != layer["details"]["algorithm"].get("algo"):
            bad.append(f"run 1: the network chose another algorithm than the layer case for {LAYER} bwd_data")
    for key in ("fp16_vs_fp32", "batch_recommendation"):
        if key not in doc.get("analysis", {}):
            bad.append(f"run 1: no analysis.{key}")
    if not cache.exists() or not json.loads(cache.read_text()).get("entries"):
        bad.append("run 1: the algorithm cache file was not written, or holds no entry")
    return entry


def check_second(doc, bad):
    recs = by_id(doc)
    for rid, r in recs.items():
        if r["status"] != "ok":
            bad.append(f"run 2: {rid} {r['status']}: {r['reason']}")
        elif "algorithm" in r["details"] and r["details"]["algorithm"].get("source") != "file":
            bad.append(f"run 2: {rid} algorithm source {r['details']['algorithm'].get('source')}, expected file")
        for l in r["details"].get("layers", []):
            for p in ("fwd", "bwd_data", "bwd_filter"):
                if l.get(f"{p}_algo_source") != "file":
                    bad.append(f"run 2: {rid} {l.get('layer')} {p}: source {l.get(f'{p}_algo_source')}, expected file")
    if doc.get("algo_cache", {}).get("hits", 0) <= 0:
        bad.append(f"run 2: algo_cache {doc.get('algo_cache')}: no hits")


def main() -> int:
    exe, outdir = sys.argv[1], pathlib.Path(sys.argv[2])
    shutil.rmtree(outdir, ignore_errors=True)
    outdir.mkdir(parents=True)
    cache = outdir / "algo_cache.json"
    bad = []
    first = run(exe, outdir, cache, 1)
    if first is None:
        print("FAIL: run 1 failed")
        return 1
    check_first(first, cache, bad)
    second = run(exe, outdir, cache, 2)
    if second is None:
        bad.append("run 2 failed")
    else:
        check_second(second, bad)
    for b in bad:
        print("FAIL:", b)
    print(f"{len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
