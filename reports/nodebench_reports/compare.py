"""``nodebench-report compare BASE NEW``: per-case comparison of two runs.

Case identity is the record ``id`` plus its ``gpus``. For cases that are ``ok`` on both sides the
ratio of the median times (new/base) is tested on the per-sample times (see :mod:`.stats`);
a *regression* is a slowdown beyond ``threshold`` that is also significant (p < ``alpha``).
Status changes are judged on their own: a case that was ``ok`` (or ``skipped``) in the base and
``failed``/``wrong`` in the new run, or ``ok`` in the base and ``skipped`` in the new run, is a
regression too. Cases present on one side only are listed but are not regressions.
"""

from __future__ import annotations

import datetime as _dt
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field

from . import __version__
from .errors import ReportError
from .load import Run, key_label, record_key
from .stats import TESTS, assess_change
from .util import fmt_p, fmt_pct, fmt_time, text_table

DEFAULT_THRESHOLD = 0.05
DEFAULT_ALPHA = 0.01

# verdicts
REGRESSION = "regression"
IMPROVEMENT = "improvement"
UNCHANGED = "unchanged"
SLOWER_NS = "slower, not significant"
FASTER_NS = "faster, not significant"
UNTESTED = "not testable"
STATUS_REGRESSION = "status regression"
STATUS_FIXED = "status fixed"
STATUS_OTHER = "status change"
STILL_NOT_OK = "not ok on both"

_ORDER = [REGRESSION, STATUS_REGRESSION, STATUS_OTHER, STILL_NOT_OK, SLOWER_NS, UNTESTED, IMPROVEMENT,
          STATUS_FIXED, FASTER_NS, UNCHANGED]


@dataclass
class CaseResult:
    id: str
    gpus: list[int]
    family: str
    base_status: str
    new_status: str
    verdict: str
    regression: bool
    base_median_s: float | None = None
    new_median_s: float | None = None
    ratio: float | None = None
    change_pct: float | None = None
    p_value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n_base: int = 0
    n_new: int = 0
    note: str = ""
    rank: int | None = None

    @property
    def label(self) -> str:
        return key_label((self.id, tuple(self.gpus), self.rank))


@dataclass
class Comparison:
    base: Run
    new: Run
    threshold: float
    alpha: float
    test: str
    cases: list[CaseResult] = field(default_factory=list)
    only_in_base: list[str] = field(default_factory=list)
    only_in_new: list[str] = field(default_factory=list)
    skipped_on_both: int = 0
    warnings: list[str] = field(default_factory=list)

    @property
    def regressions(self) -> list[CaseResult]:
        return [c for c in self.cases if c.regression]

    @property
    def exit_code(self) -> int:
        return 1 if self.regressions else 0

    def count(self, verdict: str) -> int:
        return sum(1 for c in self.cases if c.verdict == verdict)


def check_comparable(base: Run, new: Run, allow_mismatch: bool) -> list[str]:
    """Refuse runs of different GPU models unless allowed; return warnings."""
    warnings = []
    b, n = sorted(base.gpu_names), sorted(new.gpu_names)
    if b != n:
        msg = (f"GPU models differ: {base.path} (field '{base.gpu_names_field}') has {b or 'no GPUs'}, "
               f"{new.path} (field '{new.gpu_names_field}') has {n or 'no GPUs'}")
        if not allow_mismatch:
            raise ReportError(msg + "; pass --allow-mismatch to compare anyway")
        warnings.append(msg + " (compared anyway: --allow-mismatch)")
    if base.run_id == new.run_id and base.path != new.path:
        warnings.append(f"both files hold the same run ({base.run_id})")
    for run, side in ((base, "base"), (new, "new")):
        if run.run_status != "complete":
            warnings.append(f"the {side} run's status is {run.run_status!r} ({run.path}); "
                            f"cases it did not reach are listed as present on one side only")
    return warnings


def _status_verdict(bs: str, ns: str) -> tuple[str, bool] | None:
    if bs == "ok" and ns == "ok":
        return None
    if bs == "skipped" and ns == "skipped":
        return "", False
    if bs == "ok":
        return STATUS_REGRESSION, True
    if ns == "ok":
        return STATUS_FIXED, False
    if bs == "skipped" and ns in ("failed", "wrong"):
        return STATUS_REGRESSION, True
    if bs == ns:
        return STILL_NOT_OK, False
    return STATUS_OTHER, False


def compare_runs(base: Run, new: Run, *, threshold: float = DEFAULT_THRESHOLD, alpha: float = DEFAULT_ALPHA,
                 test: str = "mannwhitney", allow_mismatch: bool = False) -> Comparison:
    if test not in TESTS:
        raise ReportError(f"unknown test {test!r}; choose one of {', '.join(TESTS)}")
    if not threshold >= 0:
        raise ReportError(f"the threshold must be >= 0, got {threshold}")
    if not 0 < alpha < 1:
        raise ReportError(f"alpha must be between 0 and 1, got {alpha}")
    result = Comparison(base=base, new=new, threshold=threshold, alpha=alpha, test=test)
    result.warnings = check_comparable(base, new, allow_mismatch)

    base_by_key = {record_key(r): r for r in base.records}
    new_by_key = {record_key(r): r for r in new.records}
    for key, brec in base_by_key.items():
        nrec = new_by_key.get(key)
        if nrec is None:
            result.only_in_base.append(_one_side_label(key, brec))
            continue
        case = compare_case(brec, nrec, threshold, alpha, test)
        if case is None:
            result.skipped_on_both += 1
        else:
            result.cases.append(case)
    for key, nrec in new_by_key.items():
        if key not in base_by_key:
            result.only_in_new.append(_one_side_label(key, nrec))
    result.cases.sort(key=lambda c: (_ORDER.index(c.verdict), c.id, c.gpus, -1 if c.rank is None else c.rank))
    return result


def _one_side_label(key: tuple, rec: dict) -> str:
    return key_label(key) + ("" if rec["status"] == "ok" else f" ({rec['status']})")


def compare_case(brec: dict, nrec: dict, threshold: float = DEFAULT_THRESHOLD, alpha: float = DEFAULT_ALPHA,
                 test: str = "mannwhitney") -> CaseResult | None:
    """Judge one case (same id and GPUs) of two runs; None when it was skipped on both sides."""
    bs, ns = brec["status"], nrec["status"]
    case = CaseResult(id=brec["id"], gpus=list(brec["gpus"]), family=brec["family"], base_status=bs,
                      new_status=ns, verdict=UNCHANGED, regression=False,
                      n_base=len(brec["samples_s"]), n_new=len(nrec["samples_s"]), rank=record_key(brec)[2])
    if brec.get("stats"):
        case.base_median_s = brec["stats"]["median"]
    if nrec.get("stats"):
        case.new_median_s = nrec["stats"]["median"]
    status = _status_verdict(bs, ns)
    if status is not None:
        verdict, regression = status
        if not verdict:
            return None
        case.verdict, case.regression = verdict, regression
        reason = nrec.get("reason") if ns != "ok" else brec.get("reason")
        case.note = f"{bs} in base, {ns} in new" + (f": {reason}" if reason else "")
        return case

    t = assess_change(brec["samples_s"], nrec["samples_s"], case.base_median_s, case.new_median_s,
                      test=test, alpha=alpha, label=case.label)
    case.ratio, case.p_value, case.ci_low, case.ci_high = t.ratio, t.p_value, t.ci_low, t.ci_high
    case.change_pct = (t.ratio - 1.0) * 100.0
    case.note = t.note
    slower_beyond = t.ratio > 1.0 + threshold
    faster_beyond = t.ratio < 1.0 - threshold
    significant = t.p_value is not None and t.p_value < alpha
    if t.p_value is None:
        case.verdict = UNTESTED if (slower_beyond or faster_beyond) else UNCHANGED
    elif slower_beyond:
        case.verdict = REGRESSION if significant else SLOWER_NS
    elif faster_beyond:
        case.verdict = IMPROVEMENT if significant else FASTER_NS
    else:
        case.verdict = UNCHANGED
    case.regression = case.verdict == REGRESSION
    return case


# ----------------------------------------------------------------------------------------------
# Outputs


def _run_info(run: Run) -> dict:
    return {"path": run.path, "run_id": run.run_id, "hostname": run.hostname, "started_at": run.started_at,
            "run_status": run.run_status, "gpus": run.gpu_names,
            "git_commit": run.doc["nodebench"].get("git_commit")}


def summary_counts(result: Comparison) -> dict:
    return {
        "compared": len(result.cases),
        "regressions": len(result.regressions),
        "slowdowns": result.count(REGRESSION),
        "status_regressions": result.count(STATUS_REGRESSION),
        "improvements": result.count(IMPROVEMENT),
        "unchanged": result.count(UNCHANGED),
        "not_significant": result.count(SLOWER_NS) + result.count(FASTER_NS),
        "not_testable": result.count(UNTESTED),
        "status_fixed": result.count(STATUS_FIXED),
        "other_status": result.count(STATUS_OTHER) + result.count(STILL_NOT_OK),
        "skipped_on_both": result.skipped_on_both,
        "only_in_base": len(result.only_in_base),
        "only_in_new": len(result.only_in_new),
    }


def to_json(result: Comparison) -> dict:
    return {
        "tool": "nodebench-report compare",
        "version": __version__,
        "format_version": 1,
        "base": _run_info(result.base),
        "new": _run_info(result.new),
        "settings": {"threshold": result.threshold, "alpha": result.alpha, "test": result.test,
                     "ratio": "new median time / base median time (> 1 is slower)"},
        "summary": summary_counts(result),
        "exit_code": result.exit_code,
        "warnings": result.warnings,
        "cases": [asdict(c) for c in result.cases],
        "only_in_base": result.only_in_base,
        "only_in_new": result.only_in_new,
    }


def format_table(result: Comparison) -> str:
    s = summary_counts(result)
    lines = [
        f"base: {result.base.path}  (run {result.base.run_id}, {result.base.hostname}, {result.base.started_at})",
        f"new:  {result.new.path}  (run {result.new.run_id}, {result.new.hostname}, {result.new.started_at})",
        f"test: {result.test}; regression = slower by more than {result.threshold * 100:g}% "
        f"with p < {result.alpha:g}",
    ]
    for w in result.warnings:
        lines.append(f"warning: {w}")
    lines.append("")
    rows = []
    for c in result.cases:
        status = "ok" if c.base_status == c.new_status == "ok" else f"{c.base_status}->{c.new_status}"
        rows.append([
            ("!! " if c.regression else "   ") + c.label, status, fmt_time(c.base_median_s),
            fmt_time(c.new_median_s), "-" if c.ratio is None else f"{c.ratio:.3f}",
            "-" if c.change_pct is None else f"{c.change_pct:+.1f}%", fmt_p(c.p_value), c.verdict, c.note,
        ])
    if rows:
        lines.append(text_table(["case", "status", "base median", "new median", "ratio", "change", "p",
                                 "verdict", "note"], rows))
    else:
        lines.append("no case present on both sides")
    if result.only_in_base:
        lines += ["", f"only in base ({len(result.only_in_base)}):"] + [f"  {k}" for k in result.only_in_base]
    if result.only_in_new:
        lines += ["", f"only in new ({len(result.only_in_new)}):"] + [f"  {k}" for k in result.only_in_new]
    lines += [
        "",
        f"{s['compared']} cases compared: {s['regressions']} regression(s) "
        f"({s['slowdowns']} slowdown(s), {s['status_regressions']} status regression(s)), "
        f"{s['improvements']} improvement(s), {s['unchanged']} unchanged, {s['not_significant']} not significant, "
        f"{s['not_testable']} not testable; {s['only_in_base']} only in base, {s['only_in_new']} only in new, "
        f"{s['skipped_on_both']} skipped on both",
        "result: REGRESSION (exit 1)" if result.exit_code else "result: no regression (exit 0)",
    ]
    return "\n".join(lines)


def to_junit(result: Comparison) -> str:
    s = summary_counts(result)
    skipped = s["only_in_base"] + s["only_in_new"]
    total = len(result.cases) + skipped
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    suites = ET.Element("testsuites", name="nodebench-report compare", tests=str(total),
                        failures=str(s["regressions"]), errors="0", skipped=str(skipped))
    suite = ET.SubElement(suites, "testsuite", name="nodebench.compare", tests=str(total),
                          failures=str(s["regressions"]), errors="0", skipped=str(skipped), timestamp=now,
                          hostname=result.new.hostname)
    props = ET.SubElement(suite, "properties")
    for name, value in (("base", result.base.path), ("base_run_id", result.base.run_id), ("new", result.new.path),
                        ("new_run_id", result.new.run_id), ("threshold", str(result.threshold)),
                        ("alpha", str(result.alpha)), ("test", result.test)):
        ET.SubElement(props, "property", name=name, value=value)
    for c in result.cases:
        tc = ET.SubElement(suite, "testcase", classname=f"nodebench.{c.family}", name=c.label,
                           time=f"{c.new_median_s or 0:.9f}")
        detail = (f"base median {fmt_time(c.base_median_s)}, new median {fmt_time(c.new_median_s)}, "
                  f"ratio {'-' if c.ratio is None else f'{c.ratio:.4f}'}, p {fmt_p(c.p_value)}, "
                  f"status {c.base_status} -> {c.new_status}; {c.note}".rstrip("; "))
        if c.regression:
            if c.verdict == REGRESSION:
                msg = f"slower by {fmt_pct(c.ratio - 1)} (p={fmt_p(c.p_value)})"
            else:
                msg = f"{c.base_status} in base, {c.new_status} in new"
            failure = ET.SubElement(tc, "failure", message=msg, type=c.verdict)
            failure.text = detail
        else:
            out = ET.SubElement(tc, "system-out")
            out.text = f"{c.verdict}: {detail}"
    for label in result.only_in_base:
        tc = ET.SubElement(suite, "testcase", classname="nodebench.only_in_base", name=label, time="0")
        ET.SubElement(tc, "skipped", message="present in the base run only")
    for label in result.only_in_new:
        tc = ET.SubElement(suite, "testcase", classname="nodebench.only_in_new", name=label, time="0")
        ET.SubElement(tc, "skipped", message="present in the new run only")
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
