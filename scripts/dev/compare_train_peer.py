#!/usr/bin/env python3
"""The ResNet-50 training step of nodebench (family train) beside PyTorch's (peer_torch_train.py).

For each (precision, layout, batch) measured by both: step time (ms), images/s and peak memory of
each side; the step-time ratio nodebench / PyTorch (PyTorch's median over its runs, taken before
and after nodebench's; nodebench's step is its CUDA graph, its eager loop beside it); the memory ratio nodebench peak_memory_bytes / PyTorch
max_memory_allocated. Judged as issue 15 asks: step time within 15% of PyTorch's or faster, but
not more than 1.3x faster (that would mean a part of the step is missing); memory within 25%.
Where the peer file has gpu_busy_ms (peer_torch_train.py --gpu-busy: the GPU's own working time per
PyTorch step), the table also gives nodebench / PyTorch-GPU-busy; a step more than 1.3x faster than
PyTorch's whose time is within 15% of PyTorch's GPU-busy time is judged HOST: PyTorch's step waits
for its host, the GPU work is the same, no part of the step is missing (it passes).

usage: compare_train_peer.py NODEBENCH.json... --peer TORCH.json... [--out FILE]
Exit status: 0 every pair within its bounds; 1 a pair outside them; 2 nothing to compare.
"""
import argparse
import json
import statistics
import sys

STEP_SLOWER_MAX = 1.15   # nodebench may take at most 15% longer than PyTorch
STEP_FASTER_MAX = 1.30   # more than 1.3x faster means a missing part
MEMORY_BOUND = 0.25


def load_nodebench(paths):
    rows = {}
    for p in paths:
        with open(p) as f:
            doc = json.load(f)
        for r in doc.get("records", []):
            if r.get("family") != "train" or r.get("status") != "ok":
                continue
            prm, m = r.get("params", {}), r.get("metrics", {})
            if "batch" not in prm or "step_time_ms" not in m:
                continue
            key = (prm.get("precision"), prm.get("layout"), int(prm["batch"]))
            rows[key] = {"step_time_ms": m["step_time_ms"], "images_per_s": m.get("images_per_s"),
                         "eager_step_ms": m.get("eager_step_ms"),
                         "peak_memory_bytes": m.get("peak_memory_bytes"), "file": p, "id": r.get("id")}
    return rows


def load_peer(paths):
    rows = {}
    for p in paths:
        with open(p) as f:
            doc = json.load(f)
        prec, layout = doc["mode"].split("/")
        for r in doc.get("results", []):
            if "step_time_ms" not in r:
                continue
            key = (prec, layout, int(r["batch"]))
            rows.setdefault(key, []).append(r)
    return rows


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("nodebench", nargs="+")
    ap.add_argument("--peer", nargs="+", required=True)
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    nb = load_nodebench(a.nodebench)
    peer = load_peer(a.peer)
    table, ok = [], True
    for key in sorted(set(nb) & set(peer), key=lambda k: (k[0] or "", k[1] or "", k[2])):
        n, ps = nb[key], peer[key]
        p_step = statistics.median(x["step_time_ms"] for x in ps)
        p_mem = max(x.get("max_memory_allocated_bytes", 0) for x in ps)
        step_ratio = n["step_time_ms"] / p_step
        mem_ratio = (n["peak_memory_bytes"] / p_mem) if n.get("peak_memory_bytes") and p_mem else None
        step_ok = 1 / STEP_FASTER_MAX <= step_ratio <= STEP_SLOWER_MAX
        busy = [x["gpu_busy_ms"] for x in ps if isinstance(x.get("gpu_busy_ms"), (int, float)) and x["gpu_busy_ms"] > 0]
        busy_ms = statistics.median(busy) if busy else None
        busy_ratio = n["step_time_ms"] / busy_ms if busy_ms else None
        # Faster than PyTorch by more than 1.3x, yet as fast as PyTorch's GPU itself: host-bound peer.
        host_bound = (step_ratio < 1 / STEP_FASTER_MAX and busy_ratio is not None
                      and 1 / STEP_SLOWER_MAX <= busy_ratio <= STEP_SLOWER_MAX)
        mem_ok = mem_ratio is not None and abs(mem_ratio - 1) <= MEMORY_BOUND
        ok = ok and (step_ok or host_bound) and mem_ok
        table.append({"precision": key[0], "layout": key[1], "batch": key[2],
                      "nodebench_step_ms": n["step_time_ms"], "pytorch_step_ms": p_step,
                      "nodebench_eager_step_ms": n.get("eager_step_ms"),
                      "pytorch_step_ms_runs": [x["step_time_ms"] for x in ps],
                      "step_time_ratio": step_ratio, "step_ok": step_ok,
                      "pytorch_gpu_busy_ms": busy_ms, "gpu_busy_ratio": busy_ratio,
                      "pytorch_host_bound": host_bound,
                      "nodebench_images_per_s": n.get("images_per_s"),
                      "pytorch_images_per_s": key[2] / (p_step / 1e3),
                      "nodebench_peak_memory_bytes": n.get("peak_memory_bytes"),
                      "pytorch_max_memory_allocated_bytes": p_mem,
                      "memory_ratio": mem_ratio, "memory_ok": mem_ok})
    if not table:
        print("compare_train_peer: no (precision, layout, batch) measured by both sides", file=sys.stderr)
        return 2
    print(f"{'case':18s} {'nodebench ms':>12s} {'nb eager':>8s} {'pytorch ms':>11s} {'ratio':>6s} {'pt busy':>8s} {'/busy':>6s}"
          f" {'nb img/s':>9s} {'pt img/s':>9s} {'nb GiB':>7s} {'pt GiB':>7s} {'mem':>5s}  verdict")
    for t in table:
        case = f"{t['precision']}/{t['layout']}/b{t['batch']}"
        mem = f"{t['memory_ratio']:.2f}" if t["memory_ratio"] is not None else "-"
        gib = lambda b: f"{b / 2**30:.1f}" if b else "-"  # noqa: E731
        verdict = ("MEMORY" if not t["memory_ok"] else "ok" if t["step_ok"] else
                   "HOST" if t["pytorch_host_bound"] else "STEP")
        busy = f"{t['pytorch_gpu_busy_ms']:8.2f}" if t["pytorch_gpu_busy_ms"] else f"{'-':>8s}"
        bratio = f"{t['gpu_busy_ratio']:6.3f}" if t["gpu_busy_ratio"] else f"{'-':>6s}"
        eager = f"{t['nodebench_eager_step_ms']:8.2f}" if t["nodebench_eager_step_ms"] else f"{'-':>8s}"
        print(f"{case:18s} {t['nodebench_step_ms']:12.2f} {eager} {t['pytorch_step_ms']:11.2f} {t['step_time_ratio']:6.3f}"
              f" {busy} {bratio}"
              f" {t['nodebench_images_per_s'] or 0:9.0f} {t['pytorch_images_per_s']:9.0f}"
              f" {gib(t['nodebench_peak_memory_bytes']):>7s} {gib(t['pytorch_max_memory_allocated_bytes']):>7s}"
              f" {mem:>5s}  {verdict}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"bounds": {"step_slower_max": STEP_SLOWER_MAX, "step_faster_max": STEP_FASTER_MAX,
                                  "memory": MEMORY_BOUND}, "pairs": table}, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
