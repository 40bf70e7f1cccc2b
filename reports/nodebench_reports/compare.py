"""``nodebench-report compare BASE... NEW``: per-case comparison of runs.

Case identity is the record ``id`` plus its ``gpus`` (plus the MPI ``rank``) and its ``mode``.
For cases ``ok`` on both sides the slowdown factor (> 1 worse: from the record's
``primary_metric``/``primary_better`` when present, else the ratio of median times new/base) is
judged against the larger of the within-run noise (the samples, see :mod:`.stats`) and the
between-run noise (one definition everywhere, :func:`.stats.between_run_spread`: the sample standard
deviation of the log of the runs' medians), taken from, in this order of preference and the largest
where several exist:

* several BASE files: the spread of the case's median across them (and the base figure is their
  geometric mean);
* the record's ``run_to_run`` (files of ``nodebench run --runs N``): its ``cv``;
* the history database (``--history DB``): the spread of the case's median across the machine's
  ingested runs;
* else the floor ``noise_floor`` (default 2%), named as such in the output.

A *regression* is a slowdown that is significant against both noises (p < ``alpha``) and whose
upper bound (1-alpha, with the larger noise) reaches ``threshold``. A speed-up is never a
regression. Status changes are judged on their own (ok -> failed/wrong/skipped, skipped ->
failed/wrong). A case of BASE that NEW lacks *fails* as ``missing`` unless it was skipped in BASE
or needs GPUs that NEW does not have (a 1-GPU and a 2-GPU file compare their common cases).
Measurement settings (L2 mode, target CV, fixed repetitions, mode) that differ between BASE and
NEW are refused unless ``ignore_settings``.

The comparison's outputs (text table, JSON, JUnit XML) are :mod:`.compare_output`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


from .compare_clock import SLOWER_CLOCK, clock_explains, machine_differences
from .errors import ReportError
from .load import (Run, is_number, key_label, measurement_settings, reason_kind, record_higher_is_better,
                   record_key, record_mode)
from .stats import TESTS, _quantile, assess_change, between_run_spread, geometric_mean

DEFAULT_THRESHOLD = 0.05
DEFAULT_ALPHA = 0.01
DEFAULT_NOISE_FLOOR = 0.02   # between-run spread assumed when nothing measured it (H200 quick suite: 1-3%)

# verdicts
REGRESSION = "regression"
IMPROVEMENT = "improvement"
UNCHANGED = "unchanged"
SLOWER_NS = "slower, not significant"
FASTER_NS = "faster, not significant"
UNTESTED = "not testable"
UNSTABLE = "unstable, not judged"
STATUS_REGRESSION = "status regression"
STATUS_FIXED = "status fixed"
STATUS_OTHER = "status change"
STILL_NOT_OK = "not ok on both"

_ORDER = [REGRESSION, STATUS_REGRESSION, SLOWER_CLOCK, STATUS_OTHER, STILL_NOT_OK, SLOWER_NS, UNTESTED, UNSTABLE, IMPROVEMENT,
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
    mode: str = "alone"
    metric: str = "median_s"            # what the ratio was taken of
    better: str = "lower"               # direction of that metric
    base_runs: int = 1
    p_within: float | None = None
    p_between: float | None = None
    noise_within: float | None = None   # relative standard error of the median from the samples
    noise_between: float | None = None  # relative between-run spread of the median
    noise_source: str = ""              # where noise_between came from: bases, run_to_run, history, prior, floor
    unstable: bool = False              # between-run spread too large for a --threshold slowdown to be significant
    noise_used: float | None = None     # the larger of the two
    clock_normalised: dict = field(default_factory=dict)  # {metric_per_ghz: change %}
    clock_slowdown: bool = False        # a slowdown its per-GHz figure does not show (SLOWER_CLOCK)

    @property
    def label(self) -> str:
        text = key_label((self.id, tuple(self.gpus), self.rank))
        return text if self.mode == "alone" else f"{text} ({self.mode})"


@dataclass
class Comparison:
    base: Run
    new: Run
    threshold: float
    alpha: float
    test: str
    cases: list[CaseResult] = field(default_factory=list)
    only_in_base: list[str] = field(default_factory=list)   # skipped in base: nothing measured was lost
    only_in_new: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)        # measured in base, absent from new: fails
    needs_gpus: list[str] = field(default_factory=list)     # on GPUs that new does not have
    skipped_on_both: int = 0
    warnings: list[str] = field(default_factory=list)
    bases: list[Run] = field(default_factory=list)
    noise_floor: float = DEFAULT_NOISE_FLOOR
    history: str | None = None
    prior: str | None = None                    # the noise prior file used, None: none
    fail_on: tuple = ("regression", "clock")   # as before 'slower: clock' existed: every slowdown fails

    @property
    def regressions(self) -> list[CaseResult]:
        return [c for c in self.cases if c.regression]

    @property
    def clock_slowdowns(self) -> list[CaseResult]:
        return [c for c in self.cases if c.clock_slowdown]

    def fails(self, c: CaseResult) -> bool:
        return (c.regression and "regression" in self.fail_on) or (c.clock_slowdown and "clock" in self.fail_on)

    @property
    def exit_code(self) -> int:
        return 1 if any(self.fails(c) for c in self.cases) or self.missing else 0

    def count(self, verdict: str) -> int:
        return sum(1 for c in self.cases if c.verdict == verdict)


def check_comparable(base: Run, new: Run, allow_mismatch: bool) -> list[str]:
    """Refuse runs of different GPU models unless allowed; return warnings.

    Runs with different numbers of GPUs of the same model are comparable: their common cases are."""
    warnings = []
    b, n = sorted(set(base.gpu_names)), sorted(set(new.gpu_names))
    if b != n:
        msg = (f"GPU models differ: {base.path} (field '{base.gpu_names_field}') has {b or 'no GPUs'}, "
               f"{new.path} (field '{new.gpu_names_field}') has {n or 'no GPUs'}")
        if not allow_mismatch:
            raise ReportError(msg + "; pass --allow-mismatch to compare anyway")
        warnings.append(msg + " (compared anyway: --allow-mismatch)")
    elif len(base.gpu_names) != len(new.gpu_names):
        warnings.append(f"{len(base.gpu_names)} GPU(s) in {base.path}, {len(new.gpu_names)} in {new.path}: "
                        f"the cases on GPUs both have are compared")
    if base.run_id == new.run_id and base.path != new.path:
        warnings.append(f"both files hold the same run ({base.run_id})")
    for run, side in ((base, "base"), (new, "new")):
        if run.run_status != "complete":
            warnings.append(f"the {side} run's status is {run.run_status!r} ({run.path}); "
                            f"cases it did not reach are listed as missing")
    return warnings


def _same_skip(brec: dict, nrec: dict) -> bool:
    bk, nk = reason_kind(brec), reason_kind(nrec)
    if brec.get("reason_kind") and nrec.get("reason_kind"):
        return bk == nk
    return (brec.get("reason") or "") == (nrec.get("reason") or "") or (bk is not None and bk == nk)


def _status_verdict(brec: dict, nrec: dict) -> tuple[str, bool] | None:
    bs, ns = brec["status"], nrec["status"]
    if bs == "ok" and ns == "ok":
        return None
    if bs == "skipped" and ns == "skipped":
        return ("", False) if _same_skip(brec, nrec) else (STATUS_OTHER, False)
    if bs == "ok":
        return STATUS_REGRESSION, True
    if ns == "ok":
        return STATUS_FIXED, False
    if bs == "skipped" and ns in ("failed", "wrong"):
        return STATUS_REGRESSION, True
    if bs == ns:
        return STILL_NOT_OK, False
    return STATUS_OTHER, False


def _settings_diff(brec: dict, base: Run, nrec: dict, new: Run) -> list[str]:
    bs, ns = measurement_settings(brec, base.doc.get("options")), measurement_settings(nrec, new.doc.get("options"))
    out = []
    for key in ("l2", "target_cv", "repetitions", "mode"):
        b, n = bs[key], ns[key]
        if b is None or n is None:
            continue
        same = math.isclose(b, n, rel_tol=1e-9) if is_number(b) and is_number(n) else b == n
        if not same:
            out.append(f"{key} {b!r} -> {n!r}")
    return out


def _history_lookup(history, run: Run, rec: dict):
    if history is None:
        return None
    from .history import case_noise
    return case_noise(history, run, rec)


def _prior_lookup(prior, run: Run, rec: dict):
    if prior is None:
        return None
    from .noise_prior import record_model
    return prior.lookup(record_model(run, rec), rec)


def compare_runs(base, new: Run, *, threshold: float = DEFAULT_THRESHOLD, alpha: float = DEFAULT_ALPHA,
                 test: str = "mannwhitney", allow_mismatch: bool = False,
                 noise_floor: float = DEFAULT_NOISE_FLOOR, history=None, history_path: str | None = None,
                 ignore_settings: bool = False, fail_on: tuple = ("regression", "clock"),
                 prior=None) -> Comparison:
    """Compare NEW with one BASE run or several (a list: repeated runs of the baseline).

    `history` is an open history database (sqlite3 connection) or None; `prior` a
    :class:`.noise_prior.NoisePrior` (the between-run spread per case measured by the project) or None."""
    bases = list(base) if isinstance(base, (list, tuple)) else [base]
    if not bases:
        raise ReportError("no base run given")
    if test not in TESTS:
        raise ReportError(f"unknown test {test!r}; choose one of {', '.join(TESTS)}")
    if not threshold >= 0:
        raise ReportError(f"the threshold must be >= 0, got {threshold}")
    if not 0 < alpha < 1:
        raise ReportError(f"alpha must be between 0 and 1, got {alpha}")
    if not 0 <= noise_floor < 1:
        raise ReportError(f"the noise floor must be between 0 and 1, got {noise_floor}")
    for b in bases:
        if not b.records:   # else every case of NEW would be 'only in new' and the verdict 'no regression'
            raise ReportError(f"{b.path}: the baseline holds no case (records: [], run status {b.run_status!r}); "
                              f"there is nothing to compare against")
    bases = sorted(bases, key=lambda r: r.started_at)
    latest = bases[-1]
    result = Comparison(base=latest, new=new, threshold=threshold, alpha=alpha, test=test, bases=bases,
                        noise_floor=noise_floor, history=history_path, fail_on=tuple(fail_on),
                        prior=prior.path if prior is not None else None)
    result.warnings += machine_differences(bases, new)
    for b in bases:
        for w in check_comparable(b, new, allow_mismatch):
            if w not in result.warnings:
                result.warnings.append(w)
    if len(bases) > 1:
        for b in bases[:-1]:
            if sorted(set(b.gpu_names)) != sorted(set(latest.gpu_names)) and not allow_mismatch:
                raise ReportError(f"the base files are of different GPU models: {b.path} and {latest.path}")

    def key_of(rec):
        return record_key(rec) if ignore_settings else record_key(rec) + (record_mode(rec),)

    # every base's records per key; the latest base's record is the one whose status counts
    base_recs: dict[tuple, list[tuple[Run, dict]]] = {}
    for b in bases:
        for rec in b.records:
            base_recs.setdefault(key_of(rec), []).append((b, rec))
    new_by_key = {key_of(r): r for r in new.records}
    new_modes: dict[tuple, set] = {}
    for r in new.records:
        new_modes.setdefault(record_key(r), set()).add(record_mode(r))
    new_gpus = {g["index"] for g in new.gpus}
    new_ranks = {r.get("rank") for r in new.ranks}

    mismatched = []
    pairs = []
    for key, recs in base_recs.items():
        run, brec = recs[-1]
        nrec = new_by_key.get(key)
        if nrec is None:
            modes = new_modes.get(record_key(brec), set())
            if modes and not ignore_settings:
                mismatched.append(f"{key_label(key)}: mode {record_mode(brec)!r} -> {sorted(modes)[0]!r}")
                continue
            label = _one_side_label(key, brec)
            rank = key[2]
            if brec["status"] == "skipped":
                result.only_in_base.append(label)
            elif any(g not in new_gpus for g in key[1]) or (rank is not None and new_ranks
                                                           and rank not in new_ranks):
                result.needs_gpus.append(label)
            else:
                result.missing.append(label)
            continue
        diff = _settings_diff(brec, run, nrec, new)
        if diff:
            if not ignore_settings:
                mismatched.append(f"{key_label(key)}: {', '.join(diff)}")
                continue
        pairs.append((key, recs, nrec, diff))
    if mismatched:
        raise ReportError(
            f"measurement settings differ between base and new for {len(mismatched)} case(s), e.g. "
            f"{'; '.join(mismatched[:3])}; such figures are not comparable (pass --ignore-settings to compare "
            f"anyway)")
    for key, recs, nrec, diff in pairs:
        case = compare_case(recs[-1][1], nrec, threshold, alpha, test, noise_floor=noise_floor,
                            base_history=[r for _, r in recs],
                            history=_history_lookup(history, recs[-1][0], recs[-1][1]),
                            prior=_prior_lookup(prior, recs[-1][0], recs[-1][1]))
        if case is None:
            result.skipped_on_both += 1
            continue
        if diff:
            case.note = (case.note + "; " if case.note else "") + "settings differ (ignored): " + ", ".join(diff)
        result.cases.append(case)
    if ignore_settings and any(d for *_, d in pairs):
        result.warnings.append("measurement settings differ for some cases; compared anyway (--ignore-settings)")
    for key, nrec in new_by_key.items():
        if key not in base_recs:
            result.only_in_new.append(_one_side_label(key, nrec))
    result.cases.sort(key=lambda c: (_ORDER.index(c.verdict), c.id, c.gpus, -1 if c.rank is None else c.rank))
    return result


def _one_side_label(key: tuple, rec: dict) -> str:
    label = key_label(key)
    if record_mode(rec) != "alone":
        label += f" ({record_mode(rec)})"
    return label + ("" if rec["status"] == "ok" else f" ({rec['status']})")


def _metric_of(brec: dict, nrec: dict) -> str | None:
    """The record's declared figure of merit when both sides state it and have a value for it."""
    pm = brec.get("primary_metric")
    if not isinstance(pm, str) or pm != nrec.get("primary_metric"):
        return None
    bm, nm = brec.get("metrics") or {}, nrec.get("metrics") or {}
    if is_number(bm.get(pm)) and is_number(nm.get(pm)) and brec["metrics"][pm] > 0 \
            and nrec["metrics"][pm] > 0:
        return pm
    return None


def _between_noise(ok_bases: list[dict], brec: dict, nrec: dict, history, noise_floor: float, prior=None):
    """(spread, source, degrees of freedom) of the between-run noise of one run's median; the largest measured one."""
    found = []
    medians = [r["stats"]["median"] for r in ok_bases if r.get("stats") and r["stats"].get("median", 0) > 0]
    if len(medians) >= 2:
        found.append((between_run_spread(medians), f"{len(medians)} base runs", len(medians) - 1))
    for side, rec in (("base", brec), ("new", nrec)):
        rtr = rec.get("run_to_run")
        if isinstance(rtr, dict) and is_number(rtr.get("cv")) and (rtr.get("runs") or 0) >= 2:
            found.append((float(rtr["cv"]), f"run_to_run of {side} ({rtr['runs']} runs)", int(rtr["runs"]) - 1))
    if history is not None:
        n_runs, cv = history
        found.append((float(cv), f"history ({n_runs} runs)", max(1, n_runs - 1)))
    # The shipped prior stands in (the larger spread wins) until this machine's own measured spread
    # (base runs, run_to_run, history) rests on as many runs as the prior was measured on.
    own_runs = max([df + 1 for _s, _src, df in found], default=0)
    if prior is not None and own_runs < prior.runs:
        found.append((prior.spread, prior.source, max(1, prior.runs - 1)))
    if not found:
        return noise_floor, "floor", None
    return max(found, key=lambda x: x[0])


def compare_case(brec: dict, nrec: dict, threshold: float = DEFAULT_THRESHOLD, alpha: float = DEFAULT_ALPHA,
                 test: str = "mannwhitney", *, noise_floor: float | None = DEFAULT_NOISE_FLOOR,
                 base_history: list[dict] | None = None, history=None, prior=None) -> CaseResult | None:
    """Judge one case of two runs; None when it was skipped on both sides for the same reason.

    `base_history`: the case's records in every base run (brec among them); `history`: (runs, cv)
    from the history database or None; `prior`: the case's entry of the noise prior (a
    :class:`.noise_prior.PriorEntry`) or None; `noise_floor`: the between-run noise assumed when
    nothing measured it (None: judge on the within-run noise alone)."""
    bs, ns = brec["status"], nrec["status"]
    case = CaseResult(id=brec["id"], gpus=list(brec["gpus"]), family=brec["family"], base_status=bs,
                      new_status=ns, verdict=UNCHANGED, regression=False,
                      n_base=len(brec["samples_s"]), n_new=len(nrec["samples_s"]), rank=record_key(brec)[2],
                      mode=record_mode(brec))
    if brec.get("stats"):
        case.base_median_s = brec["stats"]["median"]
    if nrec.get("stats"):
        case.new_median_s = nrec["stats"]["median"]
    status = _status_verdict(brec, nrec)
    if status is not None:
        verdict, regression = status
        if not verdict:
            return None
        case.verdict, case.regression = verdict, regression
        reason = nrec.get("reason") if ns != "ok" else brec.get("reason")
        case.note = f"{bs} in base, {ns} in new" + (f": {reason}" if reason else "")
        if bs == ns == "skipped":
            case.note = f"skipped on both for different reasons: {brec.get('reason')} -> {nrec.get('reason')}"
        return case

    ok_bases = [r for r in (base_history or [brec]) if r["status"] == "ok" and r.get("stats")]
    if brec not in ok_bases:
        ok_bases.append(brec)
    case.base_runs = len(ok_bases)
    base_samples = [s for r in ok_bases for s in r["samples_s"]]
    case.n_base = len(base_samples)
    base_median = geometric_mean([r["stats"]["median"] for r in ok_bases]) if all(
        r["stats"]["median"] > 0 for r in ok_bases) else case.base_median_s
    case.base_median_s = base_median

    metric = _metric_of(brec, nrec)
    ratio = None
    if metric:
        hib = record_higher_is_better(nrec, metric)
        bval = geometric_mean([r["metrics"][metric] for r in ok_bases if is_number(r["metrics"].get(metric))
                       and r["metrics"][metric] > 0] or [brec["metrics"][metric]])
        nval = nrec["metrics"][metric]
        ratio = bval / nval if hib else nval / bval
        case.metric, case.better = metric, "higher" if hib else "lower"

    if noise_floor is None and not (len(ok_bases) > 1 or history is not None or prior is not None
                                    or isinstance(brec.get("run_to_run"), dict)
                                    or isinstance(nrec.get("run_to_run"), dict)):
        between, source, df = None, "within-run only", None
    else:
        between, source, df = _between_noise(ok_bases, brec, nrec, history, noise_floor or 0.0, prior)
    t = assess_change(base_samples, nrec["samples_s"], base_median, case.new_median_s,
                      test=test, alpha=alpha, label=case.label, ratio=ratio, between=between,
                      base_runs=len(ok_bases), between_df=df)
    case.ratio, case.p_value, case.ci_low, case.ci_high = t.ratio, t.p_value, t.ci_low, t.ci_high
    case.p_within, case.p_between = t.p_within, t.p_between
    case.noise_within, case.noise_between, case.noise_source = t.noise_within, t.noise_between, source
    if t.noise_within is not None or t.noise_between is not None:
        case.noise_used = max(x for x in (t.noise_within, t.noise_between) if x is not None)
    case.change_pct = (t.ratio - 1.0) * 100.0
    notes = [t.note] if t.note else []
    bm, nm = brec.get("metrics") or {}, nrec.get("metrics") or {}
    for name in sorted(k for k in nm if k.endswith("_per_ghz")):
        if metric and name != f"{metric}_per_ghz":
            continue
        b, n = bm.get(name), nm.get(name)
        if is_number(b) and is_number(n) and b > 0:
            case.clock_normalised[name] = (n / b - 1.0) * 100.0
            notes.append(f"{name} {case.clock_normalised[name]:+.1f}%")
    case.note = "; ".join(notes)
    significant = t.p_value is not None and t.p_value < alpha
    if t.p_value is None:
        case.verdict = UNTESTED if abs(t.ratio - 1.0) > threshold else UNCHANGED
    elif t.ratio > 1.0:
        if significant and t.ci_high >= 1.0 + threshold:
            case.verdict = REGRESSION
        elif t.ratio > 1.0 + threshold:
            case.verdict = SLOWER_NS
        else:
            case.verdict = UNCHANGED
    elif t.ratio < 1.0:
        if significant and t.ci_low <= 1.0 - threshold:
            case.verdict = IMPROVEMENT
        elif t.ratio < 1.0 - threshold:
            case.verdict = FASTER_NS
        else:
            case.verdict = UNCHANGED
    else:
        case.verdict = UNCHANGED
    # A measured between-run spread so large that a --threshold slowdown could not be significant:
    # the case cannot be judged at this threshold ("unstable, not judged", its spread shown); only a
    # slowdown significant against that spread itself is still a regression.
    if between is not None and df is not None and t.p_value is not None:
        limit = math.exp(_quantile(alpha, df) * between * math.sqrt(1.0 + 1.0 / max(1, len(ok_bases))))
        if limit > 1.0 + threshold:
            case.unstable = True
            if case.verdict in (SLOWER_NS, UNCHANGED, FASTER_NS) and t.ratio != 1.0:   # identical: unchanged
                case.verdict = UNSTABLE
                notes.insert(0, f"between-run spread {between * 100:.1f}% ({source}): a slowdown below "
                                f"{(limit - 1) * 100:.0f}% cannot be told from noise")
                case.note = "; ".join(n for n in notes if n)
    # a speed-up (ratio < 1 of the figure of merit) is never a regression
    case.regression = case.verdict == REGRESSION and t.ratio > 1.0
    if case.regression and clock_explains(case, alpha, threshold):  # unchanged at the same clock
        case.verdict, case.regression, case.clock_slowdown = SLOWER_CLOCK, False, True
    return case
