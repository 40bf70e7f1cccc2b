#!/usr/bin/env python3
"""How well a run's estimate of time left held (issue 24): each step's printed estimate (the
record's progress.left_s) against the time that actually remained (the last step's end minus the
step's end). Prints a table at every tenth of the run and the worst relative error from 10% to
95% of the run (--from, --to); in the last 5% a few seconds remain, where a relative error says
little, so there the worst error in seconds is given instead. With --plot FILE, draws both curves.

usage: scripts/dev/costs/estimate_table.py RESULT.json [--plot estimate.png] [--label TEXT] [--json out.json]
"""
import argparse
import json
import sys
import os

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import resultfile  # noqa: E402


def progress_points(doc):
    """(elapsed_s, left_s, id) of every step, in the order they ended."""
    pts = []
    for r in doc.get("records", []):
        p = r.get("progress")
        if isinstance(p, dict) and isinstance(p.get("elapsed_s"), (int, float)) and isinstance(p.get("left_s"), (int, float)):
            pts.append((float(p["elapsed_s"]), float(p["left_s"]), r.get("id", "")))
    pts.sort(key=lambda t: t[0])
    return pts


def assess(pts, start_fraction=0.1, end_fraction=0.95):
    """The rows (fraction of the run, elapsed, estimate, actual, relative error) and a summary."""
    if not pts:
        raise ValueError("no record carries progress (elapsed_s, left_s)")
    total = pts[-1][0]
    rows = []
    for e, left, rid in pts:
        actual = total - e
        err = (left - actual) / actual if actual > 0 else None
        rows.append({"fraction": e / total if total > 0 else 1.0, "elapsed_s": e, "estimate_s": left,
                     "actual_s": actual, "error": err, "id": rid})
    judged = [r for r in rows if start_fraction <= r["fraction"] <= end_fraction and r["error"] is not None
              and r["actual_s"] > 0]
    worst = max(judged, key=lambda r: abs(r["error"])) if judged else None
    within = sum(1 for r in judged if abs(r["error"]) <= 0.25)
    tail = [r for r in rows if r["fraction"] > end_fraction]
    tail_worst = max(tail, key=lambda r: abs(r["estimate_s"] - r["actual_s"])) if tail else None
    summary = {"total_s": total, "steps": len(rows), "judged_steps": len(judged),
               "within_25_percent": within, "worst_error": worst["error"] if worst else None,
               "worst_at_fraction": worst["fraction"] if worst else None, "worst_id": worst["id"] if worst else None,
               "start_fraction": start_fraction, "end_fraction": end_fraction,
               "tail_worst_s": tail_worst["estimate_s"] - tail_worst["actual_s"] if tail_worst else None}
    return rows, summary


def tenths(rows):
    """The first step at or past each tenth of the run."""
    out = []
    for k in range(1, 10):
        for r in rows:
            if r["fraction"] >= k / 10:
                out.append((k / 10, r))
                break
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result")
    ap.add_argument("--plot", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--from", dest="start", type=float, default=0.1, help="judge from this fraction of the run on")
    ap.add_argument("--to", dest="end", type=float, default=0.95, help="and up to this fraction")
    ap.add_argument("--label", default="printed estimate",
                    help="the estimate's name in the plot (e.g. 'replayed estimate' for a replay's file)")
    a = ap.parse_args(argv)
    try:
        doc = resultfile.load(a.result)
    except (OSError, ValueError, EOFError) as e:
        print(f"estimate_table: {a.result}: cannot read a result file: {e}", file=sys.stderr)
        return 2
    try:
        rows, s = assess(progress_points(doc), a.start, a.end)
    except ValueError as e:
        print(f"estimate_table: {a.result}: {e}", file=sys.stderr)
        return 2
    print(f"{a.result}: {s['steps']} steps, {s['total_s']:.1f} s from the start to the last step's end")
    print(f"{'at':>5s} {'elapsed s':>10s} {'estimate s':>11s} {'actual s':>9s} {'error':>7s}  step")
    for frac, r in tenths(rows):
        err = f"{100 * r['error']:+.0f}%" if r["error"] is not None else "-"
        print(f"{100 * frac:4.0f}% {r['elapsed_s']:10.1f} {r['estimate_s']:11.1f} {r['actual_s']:9.1f} {err:>7s}  {r['id']}")
    if s["worst_error"] is not None:
        print(f"from {100 * s['start_fraction']:.0f}% to {100 * s['end_fraction']:.0f}% of the run: "
              f"{s['within_25_percent']} of {s['judged_steps']} estimates within 25%; worst "
              f"{100 * s['worst_error']:+.0f}% at {100 * s['worst_at_fraction']:.0f}% ({s['worst_id']})")
    if s["tail_worst_s"] is not None:
        print(f"after {100 * s['end_fraction']:.0f}%: the estimate was off by {s['tail_worst_s']:+.1f} s at worst")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"summary": s, "rows": rows}, f, indent=1)
    if a.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.plot([r["elapsed_s"] / 60 for r in rows], [r["actual_s"] / 60 for r in rows], label="time that remained", color="black")
        ax.plot([r["elapsed_s"] / 60 for r in rows], [r["estimate_s"] / 60 for r in rows], label=a.label, color="tab:orange")
        lo = [0.75 * r["actual_s"] / 60 for r in rows]
        hi = [1.25 * r["actual_s"] / 60 for r in rows]
        ax.fill_between([r["elapsed_s"] / 60 for r in rows], lo, hi, color="grey", alpha=0.2, label="within 25%")
        ax.axvline(s["start_fraction"] * s["total_s"] / 60, color="grey", linestyle=":", linewidth=1)
        ax.set_xlabel("minutes into the run")
        ax.set_ylabel("minutes left")
        ax.set_title("Estimate of time left against the real end")
        ax.legend()
        fig.tight_layout()
        fig.savefig(a.plot, dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
