#!/usr/bin/env python3
"""Fit the cost model per kind (harness/profiles/costs.json, bench/cost.hpp) from result files.

Each step that ran (status ok or wrong) gives a point (every file's points together; with
--newest a kind's points come from the last file given that has it): its model seconds (the record's
progress.model_s, or for files written before records carried it, what build/tests/nodebench_cost_probe
computes for the record's case on the file's GPU) against its wall time (the time between its
progress.elapsed_s and the previous step's, which is what the estimate of time left counts; the
record's duration_s in older files). Per kind the
fit is predicted = fixed_s + scale x setup model + sample_scale x sampling model where the probe
gives the model's two parts (model_sample_s; else one scale for the total), by least squares over
the kind's points (the large cases weigh most, as they do in a run's total), with fixed_s >= 0 and
the scales > 0; a kind with fewer than --min-points points gets one scale = its total time over its
total model seconds. For kinds named
"<family>/<sub>" the family's fit over all its kinds is written too: a kind without a fit of its
own takes it (bench/cost.hpp). And where each batch sweep stopped (or, in a run from before the
plateau rule, would have), in the run that ran most of it and in each run: the estimate's prior for
that sweep (bench/sweep.hpp), a batch weighted by the share of the runs that reached it.

usage: scripts/dev/costs/fit_costs.py [--probe build/tests/nodebench_cost_probe] [--out FILE] [--newest]
       [--renew PREFIX ...] [--fresh RESULT.json ...] RESULT.json ...
"""
import argparse
import json
import math
import os
import subprocess
import sys
from collections import defaultdict

import numpy as np
from scipy.optimize import lsq_linear

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import resultfile  # noqa: E402

PLATEAU_GAIN = 0.03  # bench/sweep.hpp kPlateauGain
MIN_SCALE = 1e-3     # costs.json needs a scale > 0 (a kind whose steps took no measurable time)


def rows_of(path, probe):
    """One dict per record: kind, model_s, duration_s, status, reason_kind, sweep, batch, figure."""
    try:
        doc = resultfile.load(path)
    except (OSError, ValueError, EOFError) as e:
        raise SystemExit(f"fit_costs: {path}: cannot read a result file: {e}") from None
    rows, last = [], 0.0
    for r in doc.get("records", []):
        p = r.get("progress") or {}
        if not isinstance(p.get("model_s"), (int, float)) or not p.get("kind"):
            continue
        # The step's wall time (what the estimate counts): from the previous step's end to its own.
        took = float(p["elapsed_s"]) - last if isinstance(p.get("elapsed_s"), (int, float)) else r.get("duration_s")
        last = float(p.get("elapsed_s", last))
        pm = r.get("primary_metric")
        rows.append({"id": r["id"], "kind": p["kind"], "model_s": float(p["model_s"]),
                     "duration_s": took, "status": r.get("status"), "reason_kind": r.get("reason_kind"),
                     "sweep": p.get("sweep"), "batch": p.get("batch"),
                     "figure": (r.get("metrics") or {}).get(pm) if pm else None})
    if not probe:
        if rows or not doc.get("records"):
            return rows
        raise SystemExit(f"fit_costs: {path} has no progress.model_s: give --probe")
    # With the probe, the kinds and model seconds are this build's (the model may have changed since
    # the run); the wall time is still the step's, where the file has progress.
    took = {q["id"]: q["duration_s"] for q in rows}
    with resultfile.plain(path) as p:
        out = subprocess.run([probe, p], check=True, capture_output=True, text=True).stdout
    lines = [json.loads(line) for line in out.splitlines()]
    for q in lines:
        if q["id"] in took:
            q["duration_s"] = took[q["id"]]
    return lines


def points_of(rows):
    """(kind, model_s, duration_s, model_sample_s or None) of each step that ran."""
    return [(q["kind"], float(q["model_s"]), float(q["duration_s"]),
             float(q["model_sample_s"]) if isinstance(q.get("model_sample_s"), (int, float)) else None)
            for q in rows if q.get("status") in ("ok", "wrong") and isinstance(q.get("duration_s"), (int, float))]


def sweep_stop(rows):
    """Where a sweep stopped, or (for runs before the plateau rule) would have: the last batch that
    ran before a record skipped for the plateau or memory, else the first batch that gained under
    3% over half its size (kPlateauGain, bench/sweep.hpp), else the last that ran."""
    ran = sorted((q["batch"], q["figure"]) for q in rows
                 if q.get("status") in ("ok", "wrong") and isinstance(q.get("figure"), (int, float)))
    # A sweep is three batches or more, each twice the one before (a run of a few chosen batches is none).
    if len(ran) < 3 or any(b != 2 * a for (a, _), (b, _) in zip(ran, ran[1:])):
        return None
    if any(q.get("reason_kind") in ("plateau", "oom", "smaller_oom") for q in rows):
        return ran[-1][0]
    by = dict(ran)
    for b, v in ran:
        half = by.get(b // 2)
        if b % 2 == 0 and half and v / half - 1 < PLATEAU_GAIN:
            return b
    return ran[-1][0]


def bounded_lsq(rows, targets, lower):
    """x >= lower (element-wise) minimising the squared error of rows x - targets: scipy's
    bounded-variable least squares, exact for these few unknowns."""
    r = lsq_linear(np.asarray(rows, dtype=float), np.asarray(targets, dtype=float),
                   bounds=(np.asarray(lower, dtype=float), np.inf), method="bvls")
    return [max(float(v), lo) for v, lo in zip(r.x, lower)]


def fit(points, min_points):
    """(fixed_s, scale) minimising the squared error of fixed + scale * model, fixed >= 0 and
    scale >= MIN_SCALE. Too few points, or model seconds that are all alike (no line to fit): one
    scale, the total time over the total model seconds."""
    n = len(points)
    sm = sum(m for m, _ in points)
    sd = sum(d for _, d in points)
    if n < min_points or sm <= 0:
        return 0.0, max(sd / sm, MIN_SCALE) if sm > 0 else 1.0
    if max(m for m, _ in points) - min(m for m, _ in points) <= 1e-12 * max(m for m, _ in points):
        return 0.0, max(sd / sm, MIN_SCALE)
    fixed, scale = bounded_lsq([(1.0, m) for m, _ in points], [d for _, d in points], (0.0, MIN_SCALE))
    return fixed, scale


def fit_split(points, min_points):
    """(fixed_s, scale, sample_scale) minimising the squared error of fixed + scale x setup model +
    sample_scale x sampling model over points (setup_model, sample_model, duration), with fixed >= 0
    and both scales >= MIN_SCALE. Too few points: fit() on the totals, one scale for both parts."""
    if len(points) < min_points:
        f, k = fit([(u + v, d) for u, v, d in points], min_points)
        return f, k, k
    x = bounded_lsq([(1.0, u, v) for u, v, _ in points], [d for _, _, d in points], (0.0, MIN_SCALE, MIN_SCALE))
    return tuple(x)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--probe", default=None,
                    help="build/tests/nodebench_cost_probe: this build's kinds and model seconds for every file's records "
                         "(needed for files without progress.model_s, and when the model changed since the run)")
    ap.add_argument("--out", default=None, help="write costs.json here (default: print it)")
    ap.add_argument("--min-points", type=int, default=4)
    ap.add_argument("--newest", action="store_true",
                    help="a kind's points from the last file that has it (give files of older code first), "
                         "instead of every file's points together")
    ap.add_argument("--renew", action="append", default=[], metavar="PREFIX",
                    help="the kinds whose name starts with PREFIX (a family whose cases changed since the older "
                         "files: \"hostlink\") take their points from the --fresh files alone, or without --fresh from "
                         "the last file that has them, as --newest does for every kind; the other kinds pool every "
                         "file's points; may be repeated")
    ap.add_argument("--fresh", action="append", default=[], metavar="RESULT.json",
                    help="a result file run with the current code of the --renew kinds (its other kinds' points "
                         "are pooled as any file's); may be repeated")
    a = ap.parse_args(argv)
    by_kind = defaultdict(list)
    by_sweep = defaultdict(list)
    renewed = lambda kind: a.newest or any(kind.startswith(p) for p in a.renew)  # noqa: E731
    fresh_pts = defaultdict(list)
    for path in a.files + a.fresh:
        try:
            rows = rows_of(path, a.probe)
        except SystemExit as e:
            print(e, file=sys.stderr)
            return 2
        for q in rows:
            if q.get("sweep"):
                by_sweep[(path, q["sweep"])].append(q)
        mine = defaultdict(list)
        for kind, m, d, ms in points_of(rows):
            mine[kind].append((m, d, ms))
        for kind, pts in mine.items():
            if a.fresh and renewed(kind) and not a.newest:
                if path in a.fresh:
                    fresh_pts[kind] += pts
            elif renewed(kind):  # this file's points replace the older files' (files of older code first)
                by_kind[kind] = pts
            else:
                by_kind[kind] += pts
    for kind, pts in fresh_pts.items():
        by_kind[kind] = pts
    for kind in [k for k in by_kind if "/" in k]:  # the family's fit too: what a kind without its own takes
        by_kind[kind.split("/")[0]] += by_kind[kind]
    kinds = {}
    print(f"{'kind':26s} {'n':>4s} {'fixed_s':>8s} {'scale':>8s} {'sampling':>8s} {'model s':>9s} {'actual s':>9s} "
          f"{'fitted s':>9s}", file=sys.stderr)
    for kind in sorted(by_kind):
        pts = by_kind[kind]
        if all(ms is not None for _, _, ms in pts):  # setup and sampling apart (the probe's split)
            fixed, scale, sample_scale = fit_split([(m - ms, ms, d) for m, d, ms in pts], a.min_points)
            fitted = sum(fixed + scale * (m - ms) + sample_scale * ms for m, _, ms in pts)
        else:
            fixed, scale = fit([(m, d) for m, d, _ in pts], a.min_points)
            sample_scale = scale
            fitted = sum(fixed + scale * m for m, _, _ in pts)
        kinds[kind] = {"fixed_s": round(fixed, 6), "scale": round(scale, 6), "sample_scale": round(sample_scale, 6),
                       "points": len(pts)}
        print(f"{kind:26s} {len(pts):4d} {fixed:8.3f} {scale:8.3f} {sample_scale:8.3f} {sum(m for m, _, _ in pts):9.2f} "
              f"{sum(d for _, d, _ in pts):9.2f} {fitted:9.2f}", file=sys.stderr)
    sweeps, family = {}, defaultdict(list)
    fullest = {}  # a sweep seen in several files: the file where it ran the most batches
    for (path, name), rows in by_sweep.items():
        if name not in fullest or len(rows) > len(fullest[name]):
            fullest[name] = rows
    each = defaultdict(list)  # where the sweep stopped in each file that ran it, in the files' order
    for (path, name), rows in by_sweep.items():
        stop = sweep_stop(rows)
        if stop:
            each[name].append(stop)
    for name, rows in sorted(fullest.items()):
        last = sweep_stop(rows)
        if last:
            sweeps[name] = {"last_batch": last, "last_batches": sorted(each[name])}
            family[name.split("/")[0]].append(last)
    for fam, lasts in family.items():  # a sweep of the family not seen: the geometric mean, a power of two
        sweeps.setdefault(fam, {"last_batch": 2 ** round(sum(math.log2(x) for x in lasts) / len(lasts))})
    for name, v in sorted(sweeps.items()):
        print(f"sweep {name:24s} last batch {v['last_batch']}, in each run {v.get('last_batches', '-')}", file=sys.stderr)
    doc = {
        "about": "The fit per cost kind that turns a case's model seconds (its cost function, bench/cost.hpp) into "
                 "predicted seconds: predicted = fixed_s + scale x the model's setup seconds + sample_scale x its "
                 "sampling seconds (scale where sample_scale is absent). Written by scripts/dev/costs/fit_costs.py from the "
                 "result files named in source (each record's model seconds against its duration_s); a kind not "
                 "listed takes the fit of its family (the part of its name before '/') where that is listed, else "
                 "is predicted by its model alone (fixed 0, scale 1). sweeps: where each batch sweep stopped in those "
                 "runs (last_batch: in the run that ran most of it; last_batches: in each run, whose share that "
                 "reaches a batch is the estimate's weight for it; its family's: the geometric mean of its sweeps'), "
                 "the estimate's prior for how far it goes.",
        "source": a.files + a.fresh,
        "kinds": kinds,
        "sweeps": sweeps,
    }
    text = json.dumps(doc, indent=2) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
