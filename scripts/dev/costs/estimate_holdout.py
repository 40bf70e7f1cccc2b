#!/usr/bin/env python3
"""The estimate of time left tested on runs its fit did not see (issue 24): for each result file
given, the cost fit is made from the other files (scripts/dev/costs/fit_costs.py --probe), the run is
replayed with that fit (nodebench_cost_probe RESULT --replay OUT --costs FIT: the estimate this
build would have printed, step by step) and judged as scripts/dev/costs/estimate_table.py judges a run
(from 10% to 95% of it, within 25% of the time that actually remained). A replay of a run with a
fit made from that run is no test of the fit; this is the test a new run will give, short of
running one.

usage: scripts/dev/costs/estimate_holdout.py [--probe build/tests/nodebench_cost_probe] [--keep DIR]
       [--json OUT.json] RESULT.json RESULT.json ...
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import estimate_table  # noqa: E402
import resultfile  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--probe", default="build/tests/nodebench_cost_probe")
    ap.add_argument("--keep", default=None, help="keep each held-out fit and replay in this folder")
    ap.add_argument("--json", default=None, help="write the summaries here")
    a = ap.parse_args(argv)
    if len(a.files) < 2:
        print("estimate_holdout: needs at least two result files (one held out, the rest fitted)", file=sys.stderr)
        return 2
    if not (os.path.isfile(a.probe) and os.access(a.probe, os.X_OK)):
        print(f"estimate_holdout: {a.probe}: no such program (build the target nodebench_cost_probe)", file=sys.stderr)
        return 2
    for f in a.files:
        if not os.path.isfile(f):
            print(f"estimate_holdout: {f}: no such file", file=sys.stderr)
            return 2
    work = a.keep or tempfile.mkdtemp(prefix="nb_holdout_")
    os.makedirs(work, exist_ok=True)
    out = []
    print(f"{'held out':48s} {'steps':>5s} {'total s':>8s} {'within 25%':>11s} {'worst':>7s} {'at':>5s}  worst step")
    for held in a.files:
        name = resultfile.stem(held)
        parent = os.path.basename(os.path.dirname(os.path.abspath(held)))
        tag = f"{parent}_{name}"
        fit = os.path.join(work, f"costs_without_{tag}.json")
        replay = os.path.join(work, f"replay_{tag}.json")
        others = [f for f in a.files if f != held]
        r = subprocess.run([sys.executable, os.path.join(HERE, "fit_costs.py"), "--probe", a.probe, "--out", fit, *others],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"estimate_holdout: the fit without {held} failed:\n{r.stderr}", file=sys.stderr)
            return 1
        with resultfile.plain(held) as p:
            r = subprocess.run([a.probe, p, "--replay", replay, "--costs", fit], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"estimate_holdout: the replay of {held} failed:\n{r.stderr}", file=sys.stderr)
            return 1
        with open(replay) as f:
            doc = json.load(f)
        _, s = estimate_table.assess(estimate_table.progress_points(doc))
        s["held_out"] = held
        s["fitted_from"] = others
        out.append(s)
        worst = f"{100 * s['worst_error']:+.0f}%" if s["worst_error"] is not None else "-"
        at = f"{100 * s['worst_at_fraction']:.0f}%" if s["worst_at_fraction"] is not None else "-"
        print(f"{tag[:48]:48s} {s['steps']:5d} {s['total_s']:8.1f} {s['within_25_percent']:5d} of {s['judged_steps']:<3d} "
              f"{worst:>7s} {at:>5s}  {s['worst_id']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
