#!/usr/bin/env python3
"""PyTorch peer measurements, taken in the same call as nodebench's so that the two can be
compared (ratio = nodebench / PyTorch). Times with CUDA events around each operation after a
warm-up and reports the median.

usage: peer_torch.py --out FILE [--gemm] [--copies] [--conv] [--gemm-size N] [--seconds S]
"""
import argparse
import json
import platform
import statistics
import sys
import time


def timed(fn, seconds, warmup=10, max_reps=2000):
    """Per-operation times over `seconds` of sustained work (the regime nodebench measures in:
    same time cap, same 2000-sample ceiling), each bracketed by CUDA events."""
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end and len(times) < max_reps:
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    return times


def gemm(n, seconds):
    import torch
    out = []
    for name, dtype, tf32 in [("fp32", torch.float32, False), ("tf32", torch.float32, True),
                              ("fp16", torch.float16, False), ("bf16", torch.bfloat16, False)]:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        g = torch.Generator(device="cuda").manual_seed(1)
        a = (torch.rand(n, n, device="cuda", generator=g) * 2 - 1).to(dtype)
        b = (torch.rand(n, n, device="cuda", generator=g) * 2 - 1).to(dtype)
        times = timed(lambda: a @ b, seconds)
        med = statistics.median(times)
        out.append({"op": "matmul", "precision": name, "m": n, "n": n, "k": n,
                    "allow_tf32": tf32, "median_s": med, "samples_s": times,
                    "tflops": 2 * n ** 3 / med / 1e12})
        print(f"torch matmul {name:5s} {n}^3: {2 * n ** 3 / med / 1e12:8.1f} TFLOPS", flush=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    return out


def copies(seconds):
    """Device copy y.copy_(x) on 4 GiB (bytes read plus written), and host<->device copy_ of
    1 GiB from pinned (non_blocking) and pageable host memory."""
    import torch
    out = []
    n = (4 << 30) // 4
    x = torch.rand(n, device="cuda")
    y = torch.empty_like(x)
    times = timed(lambda: y.copy_(x), seconds)
    med = statistics.median(times)
    out.append({"op": "copy_d2d", "bytes": 4 << 30, "median_s": med, "samples_s": times,
                "gbps": 2 * (4 << 30) / med / 1e9})
    del x, y
    nb = 1 << 30
    dev = torch.empty(nb // 4, device="cuda")
    for mem in ("pinned", "pageable"):
        host = torch.rand(nb // 4, pin_memory=(mem == "pinned"))
        nbk = mem == "pinned"
        for op, fn in (("h2d", lambda: dev.copy_(host, non_blocking=nbk)),
                       ("d2h", lambda: host.copy_(dev, non_blocking=nbk))):
            times = timed(fn, seconds, warmup=3)
            med = statistics.median(times)
            out.append({"op": f"{op}_{mem}", "bytes": nb, "median_s": med, "samples_s": times,
                        "gbps": nb / med / 1e9})
    for r in out:
        print(f"torch {r['op']:14s} {r['gbps']:9.1f} GB/s", flush=True)
    return out


def conv(seconds, batches=(32, 64, 128, 256)):
    """3x3 convolution, 64 -> 64 channels, 56x56, NCHW, with cudnn.benchmark on; FP16, and
    FP32 with TF32 allowed (PyTorch's default for convolution)."""
    import torch
    import torch.nn.functional as F
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = True
    out = []
    for name, dtype in (("fp16", torch.float16), ("tf32", torch.float32)):
        for n in batches:
            x = (torch.rand(n, 64, 56, 56, device="cuda") * 2 - 1).to(dtype)
            w = (torch.rand(64, 64, 3, 3, device="cuda") * 2 - 1).to(dtype)
            times = timed(lambda: F.conv2d(x, w, padding=1), seconds)
            med = statistics.median(times)
            flops = 2 * n * 64 * 56 * 56 * 64 * 9
            out.append({"op": "conv2d", "precision": name, "batch": n, "layer": "l1_3x3_64_64", "layout": "nchw",
                        "median_s": med, "samples_s": times, "tflops": flops / med / 1e12,
                        "images_per_s": n / med})
            print(f"torch conv2d {name} b{n:4d}: {flops / med / 1e12:7.1f} TFLOPS", flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--gemm", action="store_true")
    ap.add_argument("--copies", action="store_true", help="device copy and host<->device copies")
    ap.add_argument("--conv", action="store_true", help="3x3 64->64 56x56 NCHW convolution, batch 32..256")
    ap.add_argument("--gemm-size", type=int, default=8192)
    ap.add_argument("--seconds", type=float, default=1.0,
                    help="sustained time per case, as nodebench's --max-time with --target-cv 0")
    a = ap.parse_args()
    import torch
    if not torch.cuda.is_available():
        print("peer_torch.py: PyTorch sees no GPU", file=sys.stderr)
        return 3
    doc = {"peer": "pytorch", "torch_version": torch.__version__, "cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version(), "device": torch.cuda.get_device_name(0),
           "host": platform.node(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "command_line": sys.argv, "results": []}
    if a.gemm:
        doc["results"] += gemm(a.gemm_size, a.seconds)
    if a.copies:
        doc["results"] += copies(a.seconds)
    if a.conv:
        doc["results"] += conv(a.seconds)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
