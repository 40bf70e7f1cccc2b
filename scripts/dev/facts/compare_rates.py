#!/usr/bin/env python3
"""How often `nodebench-report compare` is wrong, measured on repeated runs of one machine.

    scripts/dev/facts/compare_rates.py FILE1 FILE2 ... [--out OUT.json] [--seed 1]

FILE1..N are result files of the same suite run N times on one machine with nothing changed.
Every figure below comes from the package's own compare code (nodebench_reports.compare):

* false positives: over all pairs (i < j; base i, new j), the share of cases ok on both sides that
  compare calls a regression;
* planted slowdowns: a copy of file j with a 5% slowdown planted in half of its ok cases (chosen with
  a fixed seed; samples, statistics, the time metrics and the primary metric scaled) and a 5%
  speed-up in the other half, compared with file i: the share of planted slowdowns flagged, overall
  and among cases whose between-run spread (max/min - 1 of the case's medians over the N files) is
  at most 2%; and the number of planted speed-ups flagged (must be 0). The same for 25%.

The between-run noise compare uses is the machine's measured spread, as a nightly job has it from its
history: `--noise history` (default) ingests all N files into an in-memory history database (the
planted copies are never in it); `--noise leave-one-out` leaves the new file's run out of it (stricter:
the spread of N-1 runs, and none of the new run's own offset); `--noise floor` judges with the floor
alone (no history), as a compare of two files does.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import math
import os
import sys

import numpy as np

# the package of this checkout, not whichever copy is installed: the rates are of this code
_CHECKOUT_REPORTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "reports")
if os.path.isdir(os.path.join(_CHECKOUT_REPORTS, "nodebench_reports")):
    sys.path.insert(0, os.path.abspath(_CHECKOUT_REPORTS))

from nodebench_reports.compare import (DEFAULT_ALPHA, DEFAULT_NOISE_FLOOR, DEFAULT_THRESHOLD,  # noqa: E402
                                       compare_runs)
from nodebench_reports.errors import ReportError  # noqa: E402
from nodebench_reports.history import ingest, open_db  # noqa: E402
from nodebench_reports.load import Run, key_label, load_run, primary_metric, record_key  # noqa: E402

LOW_SPREAD = 0.02
_TIME_SUFFIXES = ("_us", "_ms", "_s")


def label_of(rec: dict) -> str:
    return key_label(record_key(rec))


def scale_record(rec: dict, factor: float) -> None:
    """Make a record `factor` times slower (factor < 1: faster): times scale up, rates down."""
    rec["samples_s"] = [s * factor for s in rec["samples_s"]]
    stats = rec.get("stats") or {}
    for key in ("median", "min", "max", "mean", "p10", "p90", "stddev"):
        if isinstance(stats.get(key), (int, float)):
            stats[key] *= factor
    ci = stats.get("ci_median")
    if isinstance(ci, dict):
        for key in ("low", "high"):
            if isinstance(ci.get(key), (int, float)):
                ci[key] *= factor
    metrics = rec.get("metrics") or {}
    pm = primary_metric(rec)
    better = rec.get("primary_better")
    for name, value in list(metrics.items()):
        if not isinstance(value, (int, float)):
            continue
        if name in (pm, f"{pm}_per_ghz"):
            lower = better == "lower" if better in ("higher", "lower") else name.endswith(_TIME_SUFFIXES)
            metrics[name] = value * factor if lower else value / factor
        elif name.endswith(_TIME_SUFFIXES):
            metrics[name] = value * factor
    rtr = rec.get("run_to_run")
    if isinstance(rtr, dict) and isinstance(rtr.get("medians_s"), list):
        rtr["medians_s"] = [m * factor for m in rtr["medians_s"]]


def planted_copy(run: Run, factor: float, rng: np.random.Generator) -> tuple[Run, set, set]:
    """A copy of `run` with half its ok cases slowed by `factor` and the other half sped up."""
    doc = copy.deepcopy(run.doc)
    ok = [r for r in doc["records"] if r["status"] == "ok"]
    order = rng.permutation(len(ok))
    slow_idx = set(order[: len(ok) // 2].tolist())
    slowed, sped = set(), set()
    for i, rec in enumerate(ok):
        if i in slow_idx:
            scale_record(rec, factor)
            slowed.add(label_of(rec))
        else:
            scale_record(rec, 1.0 / factor)
            sped.add(label_of(rec))
    return Run(path=f"{run.path} (planted {factor - 1:+.0%})", doc=doc), slowed, sped


def case_spreads(runs: list[Run]) -> dict[str, float]:
    """max/min - 1 of each case's median over all runs (cases ok in every run)."""
    medians: dict[str, list[float]] = {}
    for run in runs:
        for rec in run.records:
            if rec["status"] == "ok" and rec.get("stats"):
                medians.setdefault(label_of(rec), []).append(rec["stats"]["median"])
    return {k: max(v) / min(v) - 1.0 for k, v in medians.items() if len(v) == len(runs) and min(v) > 0}


def _rate(num: int, den: int) -> float | None:
    return num / den if den else None


def compute(paths: list[str], *, seed: int = 1, threshold: float = DEFAULT_THRESHOLD, alpha: float = DEFAULT_ALPHA,
            noise_floor: float = DEFAULT_NOISE_FLOOR, noise: str = "history", plants=(1.05, 1.25),
            test: str = "mannwhitney") -> dict:
    if len(paths) < 2:
        raise ReportError("give at least two result files of repeated runs")
    runs = [load_run(p) for p in paths]
    spreads = case_spreads(runs)
    histories = {}
    if noise == "history":
        conn = open_db(":memory:", create=True)
        ingest(conn, runs)
        histories = {j: conn for j in range(len(runs))}
    elif noise == "leave-one-out":
        for j in range(len(runs)):
            conn = open_db(":memory:", create=True)
            ingest(conn, [r for k, r in enumerate(runs) if k != j])
            histories[j] = conn

    def judge(i, j, new_run):
        return compare_runs(runs[i], new_run, threshold=threshold, alpha=alpha, test=test, noise_floor=noise_floor,
                            history=histories.get(j), history_path=":memory:" if histories else None)

    pairs = list(itertools.combinations(range(len(runs)), 2))
    rng = np.random.default_rng(seed)
    fp_flagged = fp_compared = 0
    per_case: dict[str, dict] = {k: {"spread": s, "false_positives": 0, "planted": {}} for k, s in spreads.items()}
    for i, j in pairs:
        res = judge(i, j, runs[j])
        ok = [c for c in res.cases if c.base_status == c.new_status == "ok"]
        fp_compared += len(ok)
        for c in ok:
            if c.regression:
                fp_flagged += 1
                per_case.setdefault(c.label, {"spread": None, "false_positives": 0, "planted": {}})
                per_case[c.label]["false_positives"] += 1
    planted_out = {}
    for factor in plants:
        name = f"{(factor - 1) * 100:g}%"
        n_slow = n_slow_flag = n_low = n_low_flag = n_fast = n_fast_flag = 0
        for i, j in pairs:
            new_run, slowed, sped = planted_copy(runs[j], factor, rng)
            res = judge(i, j, new_run)
            verdicts = {c.label: c for c in res.cases if c.base_status == c.new_status == "ok"}
            for label in slowed:
                c = verdicts.get(label)
                if c is None:
                    continue
                n_slow += 1
                n_slow_flag += c.regression
                low = spreads.get(label) is not None and spreads[label] <= LOW_SPREAD
                n_low += low
                n_low_flag += low and c.regression
                entry = per_case.setdefault(label, {"spread": spreads.get(label), "false_positives": 0,
                                                    "planted": {}})
                got = entry["planted"].setdefault(name, {"planted": 0, "flagged": 0})
                got["planted"] += 1
                got["flagged"] += int(c.regression)
            for label in sped:
                c = verdicts.get(label)
                if c is None:
                    continue
                n_fast += 1
                n_fast_flag += c.regression
        planted_out[name] = {
            "factor": factor, "planted": n_slow, "flagged": n_slow_flag, "rate": _rate(n_slow_flag, n_slow),
            "low_spread": {"max_spread": LOW_SPREAD, "planted": n_low, "flagged": n_low_flag,
                           "rate": _rate(n_low_flag, n_low)},
            "speedups_planted": n_fast, "speedups_flagged": n_fast_flag,
        }
    for conn in {id(c): c for c in histories.values()}.values():
        conn.close()
    return {
        "tool": "scripts/dev/facts/compare_rates.py",
        "files": [os.path.relpath(p) for p in paths],
        "settings": {"threshold": threshold, "alpha": alpha, "noise_floor": noise_floor, "noise": noise,
                     "test": test, "seed": seed, "pairs": "all i < j, base i, new j",
                     "low_spread": "max/min - 1 of the case's medians over all files"},
        "pairs": len(pairs),
        "false_positive": {"compared": fp_compared, "flagged": fp_flagged, "rate": _rate(fp_flagged, fp_compared)},
        "planted": planted_out,
        "cases": dict(sorted(per_case.items())),
    }


def _pct(x) -> str:
    return "-" if x is None else f"{x * 100:.1f}%"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="See the module docstring for what is computed.")
    ap.add_argument("files", nargs="+", metavar="FILE",
                    help="result files of repeated runs of one suite on one machine")
    ap.add_argument("--out", metavar="OUT.json", help="write the rates (and per-case detail) as JSON")
    ap.add_argument("--seed", type=int, default=1, help="seed of the choice of planted cases (default 1)")
    ap.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD)
    ap.add_argument("--alpha", type=float, default=DEFAULT_ALPHA)
    ap.add_argument("--noise-floor", type=float, default=DEFAULT_NOISE_FLOOR)
    ap.add_argument("--noise", choices=("history", "leave-one-out", "floor"), default="history",
                    help="between-run noise from the history of all N runs (default), of the N-1 runs other "
                         "than the new one, or the floor alone")
    ap.add_argument("--test", choices=("mannwhitney", "bootstrap"), default="mannwhitney")
    args = ap.parse_args(argv)
    try:
        out = compute(args.files, seed=args.seed, threshold=args.threshold, alpha=args.alpha,
                      noise_floor=args.noise_floor, noise=args.noise, test=args.test)
    except ReportError as exc:
        print(f"compare_rates: error: {exc}", file=sys.stderr)
        return 2
    fp = out["false_positive"]
    print(f"{len(out['files'])} files, {out['pairs']} pairs; between-run noise: {args.noise}")
    print(f"false positives: {fp['flagged']} of {fp['compared']} case comparisons ({_pct(fp['rate'])})")
    for name, p in out["planted"].items():
        low = p["low_spread"]
        print(f"planted {name} slowdown: {p['flagged']} of {p['planted']} flagged ({_pct(p['rate'])}); "
              f"cases with spread <= {low['max_spread'] * 100:g}%: {low['flagged']} of {low['planted']} "
              f"({_pct(low['rate'])}); planted speed-ups flagged: {p['speedups_flagged']} of {p['speedups_planted']}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)
            fh.write("\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
