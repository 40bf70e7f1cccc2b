#!/usr/bin/env python3
"""The training step with its convolutions chosen by the seeded search against the same step with
the choices of cuDNN's whole search (issue 24): the step times of a full run (seeded: the
records' algorithms[].fwd_source is "search" or "memo") against those of the peer calls' nodebench
runs, which load the whole search's choices from an algorithm cache (fwd_source "file"), packed in
the peer steps' raw tarballs (scripts/dev/device/gpu_full_session.sh peer-*). Prints one row per record
of the tarballs whose case ran ok in the full run too, on the same path (as many fused layers): the
two step times and their ratio.

usage: scripts/dev/facts/seeded_vs_cache.py FULL.json PEER_RAW.tar.gz ...
"""
import json
import sys
import tarfile


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    try:
        with open(argv[0]) as f:
            full = json.load(f)
    except (OSError, ValueError) as e:
        print(f"seeded_vs_cache: {argv[0]}: cannot read a result file: {e}", file=sys.stderr)
        return 2
    def fused(r):
        return (r.get("details", {}).get("fusion") or {}).get("fused_layers")

    seeded = {r["id"]: (r["metrics"]["step_time_ms"], fused(r)) for r in full.get("records", [])
              if r.get("family") == "train" and r.get("status") == "ok"}
    print(f"{'peer file':58s} {'case':32s} {'cache ms':>9s} {'seeded ms':>9s} {'ratio':>7s}")
    ratios = []
    for path in argv[1:]:
        try:
            tar = tarfile.open(path)
        except (OSError, tarfile.TarError) as e:
            print(f"seeded_vs_cache: {path}: cannot read a tarball: {e}", file=sys.stderr)
            return 2
        for m in sorted(tar.getmembers(), key=lambda m: m.name):
            name = m.name.split("/")[-1]
            if not (name.startswith("tf_nb_") and name.endswith(".json")):
                continue
            doc = json.load(tar.extractfile(m))
            for r in doc.get("records", []):
                if r.get("status") != "ok" or r["id"] not in seeded or fused(r) != seeded[r["id"]][1]:
                    continue  # not in the full run, or another path (the unfused step)
                sources = {a.get("fwd_source") for a in r.get("details", {}).get("algorithms", [])}
                if sources != {"file"}:
                    continue
                ratio = r["metrics"]["step_time_ms"] / seeded[r["id"]][0]
                ratios.append(ratio)
                print(f"{name[:58]:58s} {r['id'][:32]:32s} {r['metrics']['step_time_ms']:9.2f} {seeded[r['id']][0]:9.2f} {ratio:7.4f}")
    if ratios:
        print(f"{len(ratios)} records: cache / seeded from {min(ratios):.4f} to {max(ratios):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
