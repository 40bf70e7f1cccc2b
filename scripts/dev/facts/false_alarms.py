#!/usr/bin/env python3
"""False alarms of `nodebench-report compare` on unchanged nodes, before and after the noise prior.

    scripts/dev/facts/false_alarms.py --prior-runs NEW1.json ... NEWn.json [--results results]
                                [--out results/h200/DATE-noise-prior/false_alarms]

Pairs: every two result files committed in one folder under --results that hold runs of the same
code on the same GPUs with the same options (same `nodebench.git_commit`, not "unknown"; same GPU
models; same `options` but for output paths; neither file a `--runs N` aggregate (records with
`run_to_run`); both `complete`), base = the earlier run. The --prior-runs files are left out of those
pairs (held out: the prior is built from them alone) and give pairs of their own, each judged with a
prior built from the other n-2 runs (leave-pair-out).

For every pair, each case ok on both sides is a comparison; flagged = compare calls it a regression;
failing = compare fails on it (exit 1: a regression, or 'slower: clock', which fails too under the
default --fail-on).
BEFORE: compare as it was without a prior (one BASE, no history: the --noise-floor, 2%). AFTER: compare
with the prior. Planted: a copy of NEW with every *stable* case (one whose prior spread lets a
--threshold slowdown be called: nodebench_reports.compare's `unstable` rule) made 5% slower
(scripts/dev/facts/compare_rates.py's scale_record), judged before and after: the share caught (failing).
Writes OUT.json (figures, per group, every flagged case) and OUT.md.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import itertools
import json
import os
import shlex
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_CHECKOUT_REPORTS = os.path.join(_HERE, "..", "..", "..", "reports")
if os.path.isdir(os.path.join(_CHECKOUT_REPORTS, "nodebench_reports")):
    sys.path.insert(0, os.path.abspath(_CHECKOUT_REPORTS))
sys.path.insert(0, _HERE)

from compare_rates import scale_record  # noqa: E402
from nodebench_reports import noise_prior  # noqa: E402
from nodebench_reports.compare import DEFAULT_THRESHOLD, compare_runs  # noqa: E402
from nodebench_reports.errors import ReportError  # noqa: E402
from nodebench_reports.load import Run, load_run  # noqa: E402

_PATHS = ("out_file", "gbench_out", "profiles_file", "algo_cache_file")
PLANT = 1.05
BEGIN, END = "<!-- false-alarms begin -->", "<!-- false-alarms end -->"


def _peek(path: str):
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
        if path.endswith(".gz"):
            raw = gzip.decompress(raw)
        doc = json.loads(raw)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("schema") == "nodebench.result" else None


def group_key(path: str, doc: dict):
    commit = (doc.get("nodebench") or {}).get("git_commit")
    if not commit or commit == "unknown" or doc.get("run_status") != "complete":
        return None
    if any(isinstance(r, dict) and "run_to_run" in r for r in doc.get("records") or []):
        return None
    opts = {k: v for k, v in sorted((doc.get("options") or {}).items()) if k not in _PATHS}
    gpus = tuple(sorted(g.get("name", "") for g in doc["environment"]["gpus"]))
    return os.path.dirname(path), commit, gpus, json.dumps(opts, sort_keys=True)


def committed_groups(root: str, exclude: set[str]) -> list[list[str]]:
    groups: dict[tuple, list[str]] = {}
    for folder, _dirs, files in sorted(os.walk(root)):
        for f in sorted(files):
            if not (f.endswith(".json") or f.endswith(".json.gz")):
                continue
            path = os.path.join(folder, f)
            if os.path.abspath(path) in exclude:
                continue
            doc = _peek(path)
            key = group_key(path, doc) if doc else None
            if key:
                groups.setdefault(key, []).append(path)
    return [sorted(v) for _k, v in sorted(groups.items()) if len(v) >= 2]


def prior_of(runs: list[Run]) -> noise_prior.NoisePrior:
    by_model: dict[str, list] = {}
    for run in runs:
        for model in sorted(set(run.gpu_names)):
            by_model.setdefault(model, []).append(run)
    return noise_prior.NoisePrior(noise_prior.build(by_model, files=[r.path for r in runs]), "prior")


class Tally:
    """flagged: verdict 'regression' (the issue's measure); failing: exit 1 by the default --fail-on
    (a regression or 'slower: clock')."""

    def __init__(self):
        self.compared = self.flagged = self.failing = 0
        self.flags: list[dict] = []

    def json(self) -> dict:
        n = self.compared
        return {"compared": n, "flagged": self.flagged, "rate": self.flagged / n if n else None,
                "failing": self.failing, "failing_rate": self.failing / n if n else None}


def judge(base: Run, new: Run, prior, tally: Tally, pair: str, verdicts: dict | None = None) -> dict:
    res = compare_runs(base, new, prior=prior)
    out = {}
    for c in res.cases:
        if c.base_status == c.new_status == "ok":
            tally.compared += 1
            out[c.label] = c
            tally.flagged += c.regression
            if res.fails(c):   # a regression, or 'slower: clock' (fails too by default)
                tally.failing += 1
                tally.flags.append({"pair": pair, "case": c.label, "change_pct": round(c.change_pct, 2),
                                    "p": c.p_value, "verdict": c.verdict, "noise": c.noise_source})
            if verdicts is not None:
                verdicts[c.verdict] = verdicts.get(c.verdict, 0) + 1
    return out


def planted(base: Run, new: Run, prior, stable: set[str], tally: Tally, pair: str) -> None:
    doc = copy.deepcopy(new.doc)
    from nodebench_reports.load import key_label, record_key
    hit = set()
    for rec in doc["records"]:
        label = key_label(record_key(rec))
        if rec["status"] == "ok" and label in stable:
            scale_record(rec, PLANT)
            hit.add(label)
    res = compare_runs(base, Run(path=new.path + " (planted)", doc=doc), prior=prior)
    for c in res.cases:
        if c.label in hit and c.base_status == c.new_status == "ok":
            tally.compared += 1
            tally.flagged += c.regression
            tally.failing += res.fails(c)
            if not res.fails(c):
                tally.flags.append({"pair": pair, "case": c.label, "change_pct": round(c.change_pct, 2),
                                    "verdict": c.verdict, "noise": c.noise_source})


def evaluate(pairs: list[tuple[Run, Run, object, str]]) -> dict:
    before, after, p_before, p_after = Tally(), Tally(), Tally(), Tally()
    verdicts: dict[str, int] = {}
    refused = []
    for base, new, prior, name in pairs:
        try:
            judge(base, new, None, before, name)
        except ReportError as exc:   # e.g. measurement settings differ: compare refuses the pair
            refused.append({"pair": name, "why": str(exc)})
            continue
        cases = judge(base, new, prior, after, name, verdicts)
        stable = {label for label, c in cases.items() if c.noise_source.startswith("prior") and not c.unstable}
        planted(base, new, None, stable, p_before, name)
        planted(base, new, prior, stable, p_after, name)
    return {"pairs": len(pairs) - len(refused), "refused": refused, "before": before.json(), "after": after.json(),
            "after_verdicts": dict(sorted(verdicts.items())),
            "planted_5pct_on_stable": {"before": p_before.json(), "after": p_after.json()},
            "failing_before": before.flags, "failing_after": after.flags,
            "planted_missed_after": p_after.flags}


def _pct(t: dict, what: str = "flagged") -> str:
    n = t["compared"]
    return "-" if not n else f"{t[what]} of {n} ({t[what] / n * 100:.2f}%)"


def markdown(out: dict) -> str:
    lines = [f"# compare's false alarms before and after the noise prior", "",
             f"Command: `{out['command']}`", "",
             f"Prior built from {len(out['prior_runs'])} runs: {', '.join(f'`{p}`' for p in out['prior_runs'])}.", "",
             "Case comparisons (cases ok on both sides) called `regression`, and failing by the default "
             "`--fail-on` (a regression or `slower: clock`: slower, unchanged per GHz of measured clock); "
             "planted 5% slowdowns on the cases the prior calls stable, caught (failing), before and after:", "",
             "| pairs | what | regressions before (no prior, 2% floor) | after (prior) | failing before | "
             "failing after | planted caught before | planted caught after |",
             "|---|---|---|---|---|---|---|---|"]
    for name in ("committed", "leave_pair_out", "all"):
        e = out[name]
        pl = e["planted_5pct_on_stable"]
        lines.append(f"| {e['pairs']} | {name.replace('_', ' ')} | {_pct(e['before'])} | {_pct(e['after'])} | "
                     f"{_pct(e['before'], 'failing')} | {_pct(e['after'], 'failing')} | "
                     f"{_pct(pl['before'], 'failing')} | {_pct(pl['after'], 'failing')} |")
    lines += ["", "Groups of committed pairs (same folder, commit, GPUs and options):", ""]
    lines += [f"- {len(g)} files: {', '.join(f'`{p}`' for p in g)}" for g in out["groups"]]
    lines += ["", "Failing after (all pairs):", ""]
    lines += [f"- {f['pair']}: `{f['case']}` {f['change_pct']:+.1f}% {f['verdict']} ({f['noise']})"
              for f in out["all"]["failing_after"]] or ["- none"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prior-runs", nargs="+", required=True, metavar="RUN")
    ap.add_argument("--results", default="results", help="folder of committed results (default results)")
    ap.add_argument("--out", required=True, help="output path without extension (.json and .md written)")
    ap.add_argument("--docs", metavar="FILE", help="regenerate the summary between the <!-- false-alarms begin/end --> "
                                                   "markers of FILE")
    args = ap.parse_args(argv)
    prior_paths = sorted(args.prior_runs)
    prior_runs = [load_run(p) for p in prior_paths]
    full_prior = prior_of(prior_runs)
    groups = committed_groups(args.results, {os.path.abspath(p) for p in prior_paths})
    committed = []
    for g in groups:
        runs = sorted((load_run(p) for p in g), key=lambda r: r.started_at)
        for b, n in itertools.combinations(runs, 2):
            committed.append((b, n, full_prior, f"{b.path} -> {os.path.basename(n.path)}"))
    loo = []
    ordered = sorted(range(len(prior_runs)), key=lambda i: prior_runs[i].started_at)
    for i, j in itertools.combinations(ordered, 2):
        rest = [r for k, r in enumerate(prior_runs) if k not in (i, j)]
        loo.append((prior_runs[i], prior_runs[j], prior_of(rest) if len(rest) >= 2 else None,
                    f"{prior_runs[i].path} -> {os.path.basename(prior_runs[j].path)}"))
    out = {"tool": "scripts/dev/facts/false_alarms.py",
           "command": "scripts/dev/facts/false_alarms.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:])),
           "threshold": DEFAULT_THRESHOLD, "plant": PLANT, "prior_runs": prior_paths, "groups": groups,
           "committed": evaluate(committed), "leave_pair_out": evaluate(loo)}
    out["all"] = evaluate(committed + loo)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out + ".json", "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=1, default=str)
        fh.write("\n")
    text = markdown(out)
    with open(args.out + ".md", "w", encoding="utf-8") as fh:
        fh.write(text)
    summary = text.split("\n\nGroups")[0].split("\n", 2)[2].strip() + "\n"
    if args.docs:
        with open(args.docs, encoding="utf-8") as fh:
            old = fh.read()
        head, rest = old.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        with open(args.docs, "w", encoding="utf-8") as fh:
            fh.write(head + BEGIN + "\n" + summary + f"\n(`{args.out}.json`, `{args.out}.md`)\n" + END + tail)
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
