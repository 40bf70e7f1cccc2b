#!/usr/bin/env python3
"""PyTorch's NCCL all-reduce as a peer for nodebench's nccl family, in the same call: one
process per GPU (torch.multiprocessing), torch.distributed with the NCCL backend, all-reduce
(sum, in place, as torch.distributed.all_reduce always is) of float32 tensors.

Each size: 5 warm-up all-reduces, then samples of `--batch` back-to-back all-reduces bracketed
by CUDA events on rank 0, for `--seconds`; the time per all-reduce is the median sample divided
by the batch. Bus bandwidth uses the all-reduce factor 2(n-1)/n (as nccl-tests and nodebench do).
Writes the peer file that scripts/dev/peers/compare_peer.py reads (op "all_reduce").

usage: peer_torch_nccl.py --out FILE [--gpus N] [--sizes-mib 256,1024] [--seconds S] [--batch B]
Needs NCCL_NVLS_ENABLE=0 on the H200 machines (set here when absent).
"""
import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time


def worker(rank, world, sizes, seconds, batch, init_file, queue):
    import torch
    import torch.distributed as dist
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"file://{init_file}", rank=rank, world_size=world,
                            device_id=torch.device("cuda", rank))
    rows = []
    for nbytes in sizes:
        x = torch.ones(nbytes // 4, dtype=torch.float32, device="cuda")
        for _ in range(5):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        times = []
        t_end = time.monotonic() + seconds
        while True:
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(batch):
                dist.all_reduce(x)
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) / 1e3 / batch)
            # every rank must run the same number of all-reduces: rank 0 decides when to stop
            flag = torch.tensor([1 if time.monotonic() < t_end and len(times) < 500 else 0], device="cuda")
            dist.broadcast(flag, 0)
            if not int(flag.item()):
                break
        # correctness: ones summed over the ranks, repeatedly, overflow; check on fresh data
        y = torch.full((nbytes // 4,), float(rank + 1), dtype=torch.float32, device="cuda")
        dist.all_reduce(y)
        want = world * (world + 1) / 2
        wrong = int((y != want).sum().item())
        med = statistics.median(times)
        algbw = nbytes / med / 1e9
        rows.append({"op": "all_reduce", "dtype": "float", "bytes": nbytes, "ngpus": world, "in_place": True,
                     "time_us": med * 1e6, "algbw_gbps": algbw, "busbw_gbps": algbw * 2 * (world - 1) / world,
                     "samples": len(times), "batch": batch, "wrong": wrong})
        del x, y
        torch.cuda.empty_cache()
    if rank == 0:
        queue.put(rows)
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--gpus", type=int, default=0, help="GPUs (default: every visible GPU)")
    ap.add_argument("--sizes-mib", default="256,1024")
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--batch", type=int, default=5)
    a = ap.parse_args()
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    import torch
    import torch.multiprocessing as mp
    world = a.gpus or torch.cuda.device_count()
    if world < 1:
        print("peer_torch_nccl: no GPU", file=sys.stderr)
        return 3
    sizes = [int(s) << 20 for s in a.sizes_mib.split(",") if s]
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    with tempfile.TemporaryDirectory() as d:
        mp.spawn(worker, args=(world, sizes, a.seconds, a.batch, os.path.join(d, "init"), queue), nprocs=world)
        rows = queue.get()
    for r in rows:
        print(f"torch all_reduce float {r['bytes'] >> 20:6d} MiB x{world}: {r['busbw_gbps']:7.1f} GB/s bus "
              f"({r['time_us']:.1f} us, {r['wrong']} wrong)", flush=True)
    doc = {"tool": "torch.distributed (NCCL backend)", "torch_version": torch.__version__,
           "nccl_version": ".".join(str(v) for v in torch.cuda.nccl.version()),
           "device": torch.cuda.get_device_name(0), "host": platform.node(), "ngpus": world,
           "env": {"NCCL_NVLS_ENABLE": os.environ.get("NCCL_NVLS_ENABLE")}, "results": rows}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
