#!/usr/bin/env python3
"""Build the between-run noise prior that ships with nodebench-report (for the project's maintainers).

    scripts/dev/facts/noise_prior.py RUN1.json RUN2.json ... [--out reports/nodebench_reports/data/noise_prior.json]
                               [--docs reports/README.md] [--table TABLE.md]

RUN1..N: result files of the same code (one git commit) and the same options, each from a separate
`nodebench run` process on one machine with nothing changed (e.g. ten `nodebench run --suite quick`
on an H200). Per GPU model and per case, the spread is the sample standard deviation of the log of
the case's figure of merit over the runs (nodebench_reports.noise_prior.build); per case kind the
largest spread of its cases. With --docs, the measured noise table between the markers
`<!-- noise-table begin -->` and `<!-- noise-table end -->` of that file is regenerated from the
prior written; --table writes it to a file of its own. Exit 2 on bad input (files of different
commits or options, fewer than two files).
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import sys

_CHECKOUT_REPORTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "reports")
if os.path.isdir(os.path.join(_CHECKOUT_REPORTS, "nodebench_reports")):
    sys.path.insert(0, os.path.abspath(_CHECKOUT_REPORTS))

from nodebench_reports import noise_prior  # noqa: E402
from nodebench_reports.compare import DEFAULT_ALPHA, DEFAULT_THRESHOLD  # noqa: E402
from nodebench_reports.errors import ReportError  # noqa: E402
from nodebench_reports.load import load_run  # noqa: E402
from nodebench_reports.stats import _quantile  # noqa: E402

BEGIN, END = "<!-- noise-table begin -->", "<!-- noise-table end -->"
_PATHS = ("out_file", "gbench_out", "profiles_file", "algo_cache_file")


def same_code(runs) -> None:
    commits = {r.doc["nodebench"].get("git_commit") for r in runs}
    if len(commits) != 1:
        raise ReportError(f"the files are of different commits ({', '.join(sorted(map(str, commits)))}); "
                          f"the prior is the spread of one code")
    opts = {repr({k: v for k, v in sorted((r.doc.get("options") or {}).items()) if k not in _PATHS}) for r in runs}
    if len(opts) != 1:
        raise ReportError("the files were run with different options; the prior is the spread of one suite")


def detectable(spread: float, runs: int, threshold: float = DEFAULT_THRESHOLD, alpha: float = DEFAULT_ALPHA) -> float:
    """The smallest slowdown compare of one BASE and one NEW can call significant with this prior spread."""
    return math.exp(_quantile(alpha, max(1, runs - 1)) * spread * math.sqrt(2.0)) - 1.0


def table(doc: dict, threshold: float = DEFAULT_THRESHOLD, alpha: float = DEFAULT_ALPHA) -> str:
    lines = []
    for model, entry in doc["models"].items():
        cases = entry["cases"]
        judged = sum(1 for c in cases.values() if detectable(c["spread"], c["runs"], threshold, alpha) <= threshold)
        lines += [f"**{model}**: {entry['runs']} runs, {len(cases)} cases; {judged} judged at "
                  f"`--threshold {threshold:g}`, {len(cases) - judged} `unstable, not judged` "
                  f"(files: {', '.join(f for f in doc['files'])})", "",
                  "| case | spread | max/min | smallest slowdown called (1 BASE) | verdict at 5% |",
                  "|---|---:|---:|---:|---|"]
        for name, c in sorted(cases.items(), key=lambda kv: (-kv[1]["spread"], kv[0])):
            d = detectable(c["spread"], c["runs"], threshold, alpha)
            lines.append(f"| `{name}` | {c['spread'] * 100:.2f}% | {c['max_over_min']:.3f} | {d * 100:.1f}% | "
                         f"{'judged' if d <= threshold else 'unstable, not judged'} |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def splice(path: str, text: str) -> None:
    with open(path, encoding="utf-8") as fh:
        old = fh.read()
    if BEGIN not in old or END not in old:
        raise ReportError(f"{path}: no {BEGIN} ... {END} markers")
    head, rest = old.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(head + BEGIN + "\n" + text + END + tail)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", metavar="RUN")
    ap.add_argument("--out", default=noise_prior.PACKAGED, help="prior file to write (default: the packaged one)")
    ap.add_argument("--docs", metavar="FILE", help="regenerate the noise table between the markers of FILE")
    ap.add_argument("--table", metavar="FILE", help="write the noise table (Markdown) to FILE")
    args = ap.parse_args(argv)
    try:
        if len(args.files) < 2:
            raise ReportError("give at least two result files of repeated runs")
        runs = [load_run(p) for p in args.files]
        same_code(runs)
        by_model: dict[str, list] = {}
        for run in runs:
            for model in sorted(set(run.gpu_names)):
                by_model.setdefault(model, []).append(run)
        rel = [os.path.relpath(p) for p in args.files]
        command = "scripts/dev/facts/noise_prior.py " + " ".join(shlex.quote(p) for p in rel)
        doc = noise_prior.build(by_model, command=command, files=rel)
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(noise_prior.json_text(doc))
        text = table(doc)
        if args.table:
            with open(args.table, "w", encoding="utf-8") as fh:
                fh.write(text)
        if args.docs:
            splice(args.docs, text)
    except (ReportError, OSError) as exc:
        print(f"noise_prior.py: error: {exc}", file=sys.stderr)
        return 2
    for model, entry in doc["models"].items():
        print(f"{model}: {entry['runs']} runs, {len(entry['cases'])} cases, {len(entry['kinds'])} kinds")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
