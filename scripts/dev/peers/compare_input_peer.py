#!/usr/bin/env python3
"""nodebench's input family beside its peers (peer_torch_input.py) on the same files.

CPU: for each worker count both measured, nodebench's images/s (input/cpu/<series>/c<N>, the series of
--series, default nchw/fp32: the peers' output) over the faster peer's (the best of its runs, taken
before and after nodebench's); at one worker that is the per-core ratio. GPU: nodebench's fastest
input/gpu/<backend>/<series>/b* case over tv_gpu. Target (issue 27): at least 0.95 of the faster peer.

usage: compare_input_peer.py NODEBENCH.json... --peer PEER.json... [--series nchw/fp32] [--out FILE]
Exit status: 0 every ratio at least 0.95; 1 one below; 2 nothing to compare.
"""
import argparse
import json
import sys

TARGET = 0.95


def nodebench_rates(paths, series):
    cpu, gpu = {}, {}
    for p in paths:
        with open(p) as f:
            doc = json.load(f)
        for r in doc.get("records", []):
            if r.get("family") != "input" or r.get("status") != "ok":
                continue
            prm, ips = r.get("params", {}), r.get("metrics", {}).get("images_per_s")
            if f"{prm.get('layout')}/{prm.get('dtype')}" != series or not ips:
                continue
            if r["id"].startswith("input/cpu/") and prm.get("placement") == "spread":
                cpu[int(prm["cores"])] = max(cpu.get(int(prm["cores"]), 0), ips)
            elif r["id"].startswith("input/gpu/"):
                gpu[r["id"]] = ips
    return cpu, gpu


def peer_rates(paths):
    cpu, gpu = {}, {}
    for p in paths:
        with open(p) as f:
            doc = json.load(f)
        for r in doc.get("results", []):
            if "images_per_s" not in r:
                continue
            if r["peer"] == "tv_gpu":
                gpu["tv_gpu"] = max(gpu.get("tv_gpu", 0), r["images_per_s"])
            else:
                key = int(r["workers"])
                best = cpu.get(key)
                if best is None or r["images_per_s"] > best[1]:
                    cpu[key] = (r["peer"], r["images_per_s"])
    return cpu, gpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("nodebench", nargs="+")
    ap.add_argument("--peer", action="append", required=True)
    ap.add_argument("--series", default="nchw/fp32")
    ap.add_argument("--out")
    a = ap.parse_args()
    nb_cpu, nb_gpu = nodebench_rates(a.nodebench, a.series)
    p_cpu, p_gpu = peer_rates(a.peer)
    rows = []
    for n in sorted(set(nb_cpu) & set(p_cpu)):
        peer, rate = p_cpu[n]
        rows.append({"what": f"cpu {a.series} {n} worker(s)", "nodebench_images_per_s": nb_cpu[n], "peer": peer,
                     "peer_images_per_s": rate, "ratio": nb_cpu[n] / rate})
    if nb_gpu and "tv_gpu" in p_gpu:
        best = max(nb_gpu, key=nb_gpu.get)
        rows.append({"what": f"gpu {best}", "nodebench_images_per_s": nb_gpu[best], "peer": "tv_gpu",
                     "peer_images_per_s": p_gpu["tv_gpu"], "ratio": nb_gpu[best] / p_gpu["tv_gpu"]})
    if not rows:
        print("compare_input_peer: nothing measured by both", file=sys.stderr)
        return 2
    print(f"{'':34s} {'nodebench':>10s} {'peer':>10s}  {'ratio':>6s}  peer")
    for r in rows:
        r["meets_target"] = r["ratio"] >= TARGET
        print(f"{r['what']:34s} {r['nodebench_images_per_s']:10.0f} {r['peer_images_per_s']:10.0f}  {r['ratio']:6.3f}  "
              f"{r['peer']} {'ok' if r['meets_target'] else 'BELOW ' + str(TARGET)}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"target": TARGET, "series": a.series, "rows": rows}, f, indent=1)
    return 0 if all(r["meets_target"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
