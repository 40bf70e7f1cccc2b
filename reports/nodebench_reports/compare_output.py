"""The outputs of ``nodebench-report compare`` (:mod:`.compare`): the text table, the JSON document and
the JUnit XML report of a :class:`~.compare.Comparison`."""

from __future__ import annotations

import datetime as _dt
import json
import xml.etree.ElementTree as ET
from dataclasses import asdict

from . import __version__
from .compare import (FASTER_NS, IMPROVEMENT, REGRESSION, SLOWER_NS, STATUS_FIXED, STATUS_OTHER, STATUS_REGRESSION,
                      STILL_NOT_OK, UNCHANGED, UNSTABLE, UNTESTED, CaseResult, Comparison)
from .compare_clock import SLOWER_CLOCK, machines_json
from .formats import register
from .load import Run
from .util import fmt_p, fmt_pct, fmt_time, text_table


def _run_info(run: Run) -> dict:
    return {"path": run.path, "run_id": run.run_id, "hostname": run.hostname, "started_at": run.started_at,
            "run_status": run.run_status, "gpus": run.gpu_names,
            "git_commit": run.doc["nodebench"].get("git_commit")}


def summary_counts(result: Comparison) -> dict:
    return {
        "compared": len(result.cases),
        "regressions": len(result.regressions),
        "slowdowns": result.count(REGRESSION),
        "clock_slowdowns": result.count(SLOWER_CLOCK),
        "status_regressions": result.count(STATUS_REGRESSION),
        "improvements": result.count(IMPROVEMENT),
        "unchanged": result.count(UNCHANGED),
        "not_significant": result.count(SLOWER_NS) + result.count(FASTER_NS),
        "not_testable": result.count(UNTESTED),
        "unstable": result.count(UNSTABLE),
        "status_fixed": result.count(STATUS_FIXED),
        "other_status": result.count(STATUS_OTHER) + result.count(STILL_NOT_OK),
        "skipped_on_both": result.skipped_on_both,
        "only_in_base": len(result.only_in_base),
        "only_in_new": len(result.only_in_new),
        "missing": len(result.missing),
        "needs_gpus": len(result.needs_gpus),
    }


@register("compare-json", "compare", "also write the comparison as JSON", option="--json")
def to_json_text(result: Comparison) -> str:
    return json.dumps(to_json(result), indent=2) + "\n"


def to_json(result: Comparison) -> dict:
    return {
        "tool": "nodebench-report compare",
        "version": __version__,
        "format_version": 1,
        "base": _run_info(result.base),
        "bases": [_run_info(b) for b in result.bases],
        "new": _run_info(result.new),
        "settings": {"threshold": result.threshold, "alpha": result.alpha, "test": result.test,
                     "noise_floor": result.noise_floor, "history": result.history, "noise_prior": result.prior,
                     "ratio": "slowdown factor of the case's figure of merit (metric): new/base for times, "
                              "base/new for rates (> 1 is worse)"},
        "summary": summary_counts(result),
        "exit_code": result.exit_code,
        "fail_on": list(result.fail_on),
        "machines": machines_json(result.bases, result.new),
        "warnings": result.warnings,
        "cases": [asdict(c) for c in result.cases],
        "only_in_base": result.only_in_base,
        "only_in_new": result.only_in_new,
        "missing": result.missing,
        "needs_gpus": result.needs_gpus,
    }


@register("compare-text", "compare", "the comparison table on standard output")
def format_table(result: Comparison) -> str:
    s = summary_counts(result)
    lines = [f"base: {b.path}  (run {b.run_id}, {b.hostname}, {b.started_at})" for b in result.bases]
    lines += [
        f"new:  {result.new.path}  (run {result.new.run_id}, {result.new.hostname}, {result.new.started_at})",
        f"test: {result.test}; regression = slower, significant (p < {result.alpha:g}) against the larger of the "
        f"within-run and the between-run noise, and possibly by {result.threshold * 100:g}% or more; "
        f"between-run noise where not measured: "
        + (f"the noise prior ({result.prior}), else " if result.prior else "")
        + f"{result.noise_floor * 100:g}% (floor)",
    ]
    for w in result.warnings:
        lines.append(f"warning: {w}")
    lines.append("")
    rows = []
    for c in result.cases:
        status = "ok" if c.base_status == c.new_status == "ok" else f"{c.base_status}->{c.new_status}"
        rows.append([
            ("!! " if result.fails(c) else "   ") + c.label, status, fmt_time(c.base_median_s),
            fmt_time(c.new_median_s), "-" if c.ratio is None else f"{c.ratio:.3f}",
            "-" if c.change_pct is None else f"{c.change_pct:+.1f}%", fmt_p(c.p_value), _noise_text(c), c.verdict,
            c.note,
        ])
    if rows:
        lines.append(text_table(["case", "status", "base median", "new median", "ratio", "change", "p",
                                 "noise (source)", "verdict", "note"], rows))
    else:
        lines.append("no case present on both sides")
    if result.missing:
        lines += ["", f"missing: measured in base, absent from new ({len(result.missing)}; each fails):"] + [
            f"!! {k}" for k in result.missing]
    if result.needs_gpus:
        lines += ["", f"on GPUs the new run does not have ({len(result.needs_gpus)}; not compared):"] + [
            f"  {k}" for k in result.needs_gpus]
    if result.only_in_base:
        lines += ["", f"only in base ({len(result.only_in_base)}):"] + [f"  {k}" for k in result.only_in_base]
    if result.only_in_new:
        lines += ["", f"only in new ({len(result.only_in_new)}):"] + [f"  {k}" for k in result.only_in_new]
    lines += [
        "",
        f"{s['compared']} cases compared: {s['regressions']} regression(s) "
        f"({s['slowdowns']} slowdown(s), {s['status_regressions']} status regression(s)), "
        f"{s['clock_slowdowns']} slower: clock (unchanged at the same clock), "
        f"{s['improvements']} improvement(s), {s['unchanged']} unchanged, {s['not_significant']} not significant, "
        f"{s['not_testable']} not testable, {s['unstable']} unstable, not judged; {s['missing']} missing, {s['only_in_base']} only in base, "
        f"{s['needs_gpus']} on GPUs new lacks, {s['only_in_new']} only in new, "
        f"{s['skipped_on_both']} skipped on both",
        _result_line(result),
    ]
    return "\n".join(lines)


def _result_line(result: Comparison) -> str:
    if not result.exit_code:
        clock = f" ({len(result.clock_slowdowns)} slower: clock, not failing: --fail-on " \
                f"{','.join(result.fail_on)})" if result.clock_slowdowns else ""
        return "result: no regression (exit 0)" + clock
    if any(result.fails(c) for c in result.regressions):
        return "result: REGRESSION (exit 1)"
    if any(result.fails(c) for c in result.clock_slowdowns):
        return "result: SLOWER: CLOCK (exit 1; --fail-on regression lets clock-only slowdowns pass)"
    return "result: MISSING CASES (exit 1)"


def _noise_text(c: CaseResult) -> str:
    if c.noise_used is None:
        return "-"
    src = c.noise_source if c.noise_between is not None and c.noise_between >= (c.noise_within or 0) \
        else "samples"
    return f"{c.noise_used * 100:.1f}% ({src})"


@register("compare-junit", "compare", "also write JUnit XML (one testcase per case)", option="--junit")
def to_junit(result: Comparison) -> str:
    s = summary_counts(result)
    skipped = s["only_in_base"] + s["only_in_new"] + s["needs_gpus"]
    failures = sum(1 for c in result.cases if result.fails(c)) + s["missing"]
    total = len(result.cases) + skipped + s["missing"]
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    suites = ET.Element("testsuites", name="nodebench-report compare", tests=str(total),
                        failures=str(failures), errors="0", skipped=str(skipped))
    suite = ET.SubElement(suites, "testsuite", name="nodebench.compare", tests=str(total),
                          failures=str(failures), errors="0", skipped=str(skipped), timestamp=now,
                          hostname=result.new.hostname)
    props = ET.SubElement(suite, "properties")
    for name, value in (("base", result.base.path), ("base_run_id", result.base.run_id), ("new", result.new.path),
                        ("new_run_id", result.new.run_id), ("threshold", str(result.threshold)),
                        ("noise_floor", str(result.noise_floor)),
                        ("alpha", str(result.alpha)), ("test", result.test)):
        ET.SubElement(props, "property", name=name, value=value)
    for c in result.cases:
        tc = ET.SubElement(suite, "testcase", classname=f"nodebench.{c.family}", name=c.label,
                           time=f"{c.new_median_s or 0:.9f}")
        detail = (f"base median {fmt_time(c.base_median_s)}, new median {fmt_time(c.new_median_s)}, "
                  f"ratio {'-' if c.ratio is None else f'{c.ratio:.4f}'}, p {fmt_p(c.p_value)}, "
                  f"status {c.base_status} -> {c.new_status}; {c.note}".rstrip("; "))
        if result.fails(c):
            if c.verdict in (REGRESSION, SLOWER_CLOCK):
                msg = f"slower by {fmt_pct(c.ratio - 1)} (p={fmt_p(c.p_value)})" + (
                    ", unchanged at the same clock" if c.clock_slowdown else "")
            else:
                msg = f"{c.base_status} in base, {c.new_status} in new"
            failure = ET.SubElement(tc, "failure", message=msg, type=c.verdict)
            failure.text = detail
        else:
            out = ET.SubElement(tc, "system-out")
            out.text = f"{c.verdict}: {detail}"
    for label in result.missing:
        tc = ET.SubElement(suite, "testcase", classname="nodebench.missing", name=label, time="0")
        ET.SubElement(tc, "failure", message="measured in the base run, absent from the new run", type="missing")
    for label in result.needs_gpus:
        tc = ET.SubElement(suite, "testcase", classname="nodebench.needs_gpus", name=label, time="0")
        ET.SubElement(tc, "skipped", message="on GPUs the new run does not have")
    for label in result.only_in_base:
        tc = ET.SubElement(suite, "testcase", classname="nodebench.only_in_base", name=label, time="0")
        ET.SubElement(tc, "skipped", message="present in the base run only")
    for label in result.only_in_new:
        tc = ET.SubElement(suite, "testcase", classname="nodebench.only_in_new", name=label, time="0")
        ET.SubElement(tc, "skipped", message="present in the new run only")
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
