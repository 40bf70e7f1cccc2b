#!/usr/bin/env python3
"""A family's figures and step times in two result files (a method change against run-to-run
noise, issue 24): per case the primary figure of each, their ratio (after / before) and each
step's wall time (from the previous step's end to its own, as the estimate counts); then the
median ratio, the middle 80% and the range over the cases ok in both.

usage: scripts/dev/costs/family_change.py FAMILY BEFORE.json[.gz] AFTER.json[.gz] [--label-before T] [--label-after T]
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import resultfile  # noqa: E402


def steps(doc, family):
    """{id: (record, step seconds)} of the family's records, in file order."""
    out, last = {}, 0.0
    for r in doc.get("records", []):
        p = r.get("progress") or {}
        now = p.get("elapsed_s", last)
        took, last = now - last, now
        if r.get("family") == family:
            out[r["id"]] = (r, took)
    return out


def figure(r):
    pm = r.get("primary_metric")
    v = (r.get("metrics") or {}).get(pm) if pm else None
    return v if isinstance(v, (int, float)) and v > 0 else None


def compare(family, before, after):
    """(lines, ratios): the table's lines and the sorted after/before ratios."""
    A, B = steps(before, family), steps(after, family)
    lines = [f"wall time of its steps: {sum(t for _, t in A.values()):.1f} s -> {sum(t for _, t in B.values()):.1f} s",
             f"{'case':46s} {'before':>9s} {'after':>9s} {'ratio':>6s} {'before s':>8s} {'after s':>7s}"]
    ratios = []
    for i, (ra, ta) in A.items():
        if i not in B:
            continue
        rb, tb = B[i]
        fa, fb = figure(ra), figure(rb)
        if ra.get("status") != "ok" or rb.get("status") != "ok" or fa is None or fb is None:
            continue
        ratios.append(fb / fa)
        lines.append(f"{i:46s} {fa:9.2f} {fb:9.2f} {fb / fa:6.3f} {ta:8.2f} {tb:7.2f}")
    ratios.sort()
    if ratios:
        n = len(ratios)
        lines.append(f"{n} cases: ratio median {statistics.median(ratios):.3f}, middle 80% "
                     f"{ratios[n // 10]:.3f}-{ratios[min(n - 1, n * 9 // 10)]:.3f}, all {ratios[0]:.3f}-{ratios[-1]:.3f}")
    else:
        lines.append("no case ok in both")
    return lines, ratios


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("family")
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--label-before", default="")
    ap.add_argument("--label-after", default="")
    a = ap.parse_args()
    try:
        before, after = resultfile.load(a.before), resultfile.load(a.after)
    except (OSError, ValueError, EOFError) as e:
        print(f"family_change: cannot read a result file: {e}", file=sys.stderr)
        return 2
    lb = f" ({a.label_before})" if a.label_before else ""
    la = f" ({a.label_after})" if a.label_after else ""
    print(f"{a.family} family, {a.before}{lb} against {a.after}{la}")
    lines, _ = compare(a.family, before, after)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
