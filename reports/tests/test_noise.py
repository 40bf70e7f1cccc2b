"""Between-run noise in `compare` and `fleet`, and the optional record fields of the schema."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
from scipy import stats as st

import nbgen

RID = "gemm/fp16/cublaslt/square_4096"


def gemm_run(seed, *, date_day=1, hostname="node01", **kw):
    return nbgen.make_result(families=("gemm",), n_gpus=1, seed=seed, hostname=hostname,
                             started_at=f"2025-06-{date_day:02d}T02:00:00Z", **kw)


def _medians(path):
    """{(id, gpus): median} of the ok records of one result file."""
    return {(r["id"], tuple(r["gpus"])): r["stats"]["median"] for r in json.load(open(path))["records"]
            if r["status"] == "ok"}


def _between_run_regressions(base_paths, new_path, sd_of, df, alpha=0.01, threshold=0.05):
    """The cases whose new median is a regression against the between-run noise alone, computed here
    from the files with scipy by the rule of nodebench_reports.stats' docstring: slower than the
    geometric mean of the k base medians, t = ln(ratio) / (sd sqrt(1 + 1/k)) significant one-sided
    at `alpha` with `df` degrees of freedom, and the upper bound exp(ln ratio + t_alpha sd sqrt(1+1/k))
    reaching 1 + threshold. `sd_of(key)`: the between-run spread of the case's median."""
    bases = [_medians(p) for p in base_paths]
    k = len(bases)
    out = set()
    for key, new in _medians(new_path).items():
        base = math.exp(float(np.mean([math.log(b[key]) for b in bases])))
        scale = sd_of(key) * math.sqrt(1 + 1 / k)
        lr = math.log(new / base)
        if lr > 0 and st.t.sf(lr / scale, df) < alpha and math.exp(lr + st.t.isf(alpha, df) * scale) >= 1 + threshold:
            out.add(key)
    return out


@pytest.fixture(scope="module")
def noisy_runs(tmp_path_factory):
    """Five runs of one machine whose case medians move 4% (lognormal) from run to run, 1% samples."""
    folder = tmp_path_factory.mktemp("noisy")
    return [nbgen.write(gemm_run(100 + i, date_day=1 + i, run_noise_cv=0.04, noise_cv=0.01), folder / f"r{i}.json")
            for i in range(5)]


def test_one_run_against_another_is_not_judged_on_its_samples_alone(cli, noisy_runs, tmp_path):
    # the defect: with the samples alone, run-to-run offsets of 4% look like certain regressions
    r = cli("compare", noisy_runs[0], noisy_runs[1], "--noise-floor", "0", "--no-noise-prior", "--json",
            tmp_path / "a.json")
    alone = json.loads((tmp_path / "a.json").read_text())
    # several bases measure the spread: the same new file is judged against it
    r = cli("compare", *noisy_runs[:4], noisy_runs[4], "--no-noise-prior", "--json", tmp_path / "b.json")
    data = json.loads((tmp_path / "b.json").read_text())
    assert alone["summary"]["regressions"] >= 3, alone["summary"]
    # Against the spread of the four bases (computed here from their medians) the fifth run, drawn
    # from the same distribution, has exactly the false alarms that spread allows at alpha 0.01.
    base_meds = [_medians(p) for p in noisy_runs[:4]]
    expected = _between_run_regressions(
        noisy_runs[:4], noisy_runs[4], lambda key: float(np.std([math.log(m[key]) for m in base_meds], ddof=1)), df=3)
    found = {(c["id"], tuple(c["gpus"])) for c in data["cases"] if c["regression"]}
    assert all(c["noise_between"] > c["noise_within"] for c in data["cases"])  # the spread decides, not the samples
    assert found == expected and len(found) <= 1, (found, expected)
    assert data["summary"]["missing"] == 0
    assert r.rc == (1 if expected else 0), r  # exit 1 exactly when a case regressed
    assert len(data["bases"]) == 4
    for c in data["cases"]:
        assert c["noise_source"] == "4 base runs" and c["base_runs"] == 4
        assert c["noise_between"] > 0.005
    assert "(4 base runs)" in r.out


def test_bases_spread_and_t_test_match_independent_computation(noisy_runs):
    from nodebench_reports.compare import compare_runs
    from nodebench_reports.load import load_run

    bases = [load_run(p) for p in noisy_runs[:3]]
    new = load_run(noisy_runs[3])
    res = compare_runs(bases, new)
    case = next(c for c in res.cases if c.id == RID)
    meds = [next(r for r in json.load(open(p))["records"] if r["id"] == RID)["stats"]["median"]
            for p in noisy_runs[:4]]
    logs = np.log(meds[:3])
    sd = float(np.std(logs, ddof=1))
    assert case.noise_between == pytest.approx(sd)
    base = math.exp(float(np.mean(logs)))
    assert case.base_median_s == pytest.approx(base)
    ratio = meds[3] / base
    assert case.ratio == pytest.approx(ratio)
    # Independently: the between-run test of one new median against k base medians is the pooled
    # two-sample t-test of the log medians ([new] against the k bases: variance from the bases alone,
    # k - 1 degrees of freedom, scale sd * sqrt(1/k + 1)), one-sided in the direction of the change.
    side = "greater" if ratio > 1 else "less"
    p = float(st.ttest_ind([math.log(meds[3])], logs, equal_var=True, alternative=side).pvalue)
    assert case.p_between == pytest.approx(p, rel=1e-9)
    assert case.p_value == pytest.approx(max(p, case.p_within))


def test_planted_slowdown_beyond_the_spread_is_found(cli, tmp_path):
    quiet = [nbgen.write(gemm_run(200 + i, date_day=1 + i, run_noise_cv=0.003, noise_cv=0.01), tmp_path / f"q{i}.json")
             for i in range(4)]
    slow = nbgen.write(gemm_run(210, date_day=9, run_noise_cv=0.003, noise_cv=0.01, slowdown={RID: 1.06}),
                       tmp_path / "slow.json")
    r = cli("compare", "--base", quiet[0], "--base", quiet[1], "--base", quiet[2], "--base", quiet[3], slow,
            "--no-noise-prior", "--json", tmp_path / "c.json")
    assert r.rc == 1, r
    data = json.loads((tmp_path / "c.json").read_text())
    assert [c["id"] for c in data["cases"] if c["regression"]] == [RID]
    # one base, no spread known: the 2% floor makes a 6% change not significant
    r = cli("compare", quiet[0], slow, "--no-noise-prior", "--json", tmp_path / "d.json")
    data = json.loads((tmp_path / "d.json").read_text())
    case = next(c for c in data["cases"] if c["id"] == RID)
    assert case["noise_source"] == "floor" and not case["regression"] and r.rc == 0


def test_run_to_run_field_is_used(tmp_path):
    from nodebench_reports.compare import compare_case

    rng = np.random.default_rng(5)
    base = {"id": "x", "gpus": [0], "family": "gemm", "status": "ok", "reason": None, "metrics": {},
            "samples_s": list(rng.lognormal(0, 0.005, 30)), "stats": None}
    base["stats"] = {"median": float(np.median(base["samples_s"]))}
    new = copy.deepcopy(base)
    new["samples_s"] = [x * 1.04 for x in base["samples_s"]]
    new["stats"] = {"median": base["stats"]["median"] * 1.04}
    assert compare_case(base, new, threshold=0.03, noise_floor=None).regression  # samples alone: certain
    new["run_to_run"] = {"runs": 5, "medians_s": [1, 1, 1, 1, 1], "cv": 0.03, "max_over_min": 1.08}
    case = compare_case(base, new, threshold=0.03)
    assert not case.regression and case.noise_source == "run_to_run of new (5 runs)"
    expect = st.t.sf(math.log(1.04) / (0.03 * math.sqrt(2)), 4)
    assert case.p_between == pytest.approx(expect)


def test_history_keeps_between_run_spread_and_compare_uses_it(cli, noisy_runs, tmp_path):
    import sqlite3
    db = tmp_path / "h.sqlite"
    assert cli("ingest", *noisy_runs, "--db", db).rc == 0
    conn = sqlite3.connect(db)
    runs, cv, mom = conn.execute("SELECT runs, cv, max_over_min FROM case_noise WHERE record_id=?", (RID,)).fetchone()
    meds = [next(r for r in json.load(open(p))["records"] if r["id"] == RID)["stats"]["median"] for p in noisy_runs]
    assert runs == 5 and cv == pytest.approx(float(np.std(np.log(meds), ddof=1)))
    assert mom == pytest.approx(max(meds) / min(meds))
    r = cli("compare", noisy_runs[0], noisy_runs[1], "--history", db, "--json", tmp_path / "c.json")
    data = json.loads((tmp_path / "c.json").read_text())
    case = next(c for c in data["cases"] if c["id"] == RID)
    assert case["noise_source"] == "history (5 runs)" and case["noise_between"] == pytest.approx(cv)


def test_primary_metric_decides_direction_and_speedups_never_regress(tmp_path):
    from nodebench_reports.compare import compare_case

    base = nbgen.add_primary(gemm_run(1))
    rec = next(r for r in base["records"] if r["id"] == RID)
    assert rec["primary_metric"] == "tflops"
    new = copy.deepcopy(rec)
    # times 20% longer but the figure of merit (declared higher-is-better) 20% up: a speed-up
    new["samples_s"] = [x * 1.2 for x in rec["samples_s"]]
    new["stats"] = dict(rec["stats"], median=rec["stats"]["median"] * 1.2)
    new["metrics"] = dict(rec["metrics"], tflops=rec["metrics"]["tflops"] * 1.2)
    case = compare_case(rec, new)
    assert case.metric == "tflops" and case.ratio == pytest.approx(1 / 1.2) and not case.regression
    # declared lower-is-better: the same numbers are a slowdown
    rec2, new2 = dict(rec, primary_better="lower"), dict(new, primary_better="lower")
    case = compare_case(rec2, new2)
    assert case.ratio == pytest.approx(1.2) and case.regression
    # without the field: today's logic (median times)
    plain = {k: v for k, v in rec.items() if k not in ("primary_metric", "primary_better")}
    plain_new = {k: v for k, v in new.items() if k not in ("primary_metric", "primary_better")}
    assert compare_case(plain, plain_new).metric == "median_s"


def test_clock_normalised_metric_is_reported(tmp_path):
    from nodebench_reports.compare import compare_case

    doc = nbgen.add_primary(gemm_run(1))
    rec = next(r for r in doc["records"] if r["id"] == RID)
    rec["metrics"]["tflops_per_ghz"] = 100.0
    new = copy.deepcopy(rec)
    new["metrics"]["tflops_per_ghz"] = 99.0
    case = compare_case(rec, new)
    assert case.clock_normalised == {"tflops_per_ghz": pytest.approx(-1.0)}
    assert "tflops_per_ghz -1.0%" in case.note


def test_settings_mismatch_is_refused(cli, tmp_path):
    a = gemm_run(1)
    b = gemm_run(2, date_day=2)
    for r in b["records"]:
        r["measurement"]["l2"] = "hot"
    fa, fb = nbgen.write(a, tmp_path / "a.json"), nbgen.write(b, tmp_path / "b.json")
    r = cli("compare", fa, fb)
    assert r.rc == 2 and "measurement settings differ" in r.err and "l2 'cold' -> 'hot'" in r.err, r
    r = cli("compare", fa, fb, "--ignore-settings")
    assert r.rc == 0 and "--ignore-settings" in r.out, r
    # mode is part of the key: alone in base, concurrent in new is refused too
    c = gemm_run(3, date_day=3)
    for r_ in c["records"]:
        r_["mode"] = "concurrent"
    r = cli("compare", fa, nbgen.write(c, tmp_path / "c.json"))
    assert r.rc == 2 and "mode 'alone' -> 'concurrent'" in r.err, r


def test_skipped_on_both_same_reason_kind_is_fine_other_is_listed():
    from nodebench_reports.compare import STATUS_OTHER, compare_case

    def skipped(kind, reason):
        return {"id": "x", "gpus": [0], "family": "gemm", "status": "skipped", "reason": reason,
                "reason_kind": kind, "samples_s": [], "stats": None, "metrics": {}}
    assert compare_case(skipped("oom", "out of memory at 3 GiB"), skipped("oom", "out of memory at 4 GiB")) is None
    case = compare_case(skipped("oom", "out of memory"), skipped("unsupported", "no FP8"))
    assert case.verdict == STATUS_OTHER and not case.regression


def test_fleet_keeps_identically_named_hosts_apart_and_uses_spread(cli, tmp_path):
    files = []
    for i in range(5):
        for j in range(3):
            speed = 0.85 if (i == 4 and j == 2) else 1.0
            doc = nbgen.make_result(families=("gemm",), n_gpus=1, hostname="vm", seed=300 + 10 * i + j,
                                    started_at=f"2025-06-0{j + 1}T0{i}:00:00Z", speed=speed, n_samples=10)
            for g in doc["environment"]["gpus"]:
                g["uuid"] = f"GPU-{i:08d}-{g['index']:04d}"
            files.append(nbgen.write(doc, tmp_path / f"vm{i}-{j}.json"))
    db = tmp_path / "f.sqlite"
    assert cli("ingest", *files, "--db", db).rc == 0
    r = cli("fleet", "--db", db, "--json", tmp_path / "f.json", "--all")
    data = json.loads((tmp_path / "f.json").read_text())
    assert len(data["nodes"]) == 5 and all(n.startswith("vm [gpus ") for n in data["nodes"])
    assert r.rc == 1 and len(data["flagged_nodes"]) == 1, r
    slow = next(e["machine"] for e in data["entries"] if e["flagged"])
    assert all(e["machine"] == slow for e in data["entries"] if e["flagged"])
    e = next(e for e in data["entries"] if e["flagged"])
    assert e["z"] == pytest.approx(e["worse_by"] / math.hypot(e["fleet_spread"], e["case_noise"]))


def test_fleet_does_not_flag_within_its_spread(cli, tmp_path):
    """Nodes that differ by 6-8% when the fleet itself spreads ~5% are not flagged."""
    files = []
    speeds = [1.0, 0.95, 1.05, 0.93, 1.02, 0.97]
    for i, sp in enumerate(speeds):
        doc = nbgen.make_result(families=("gemm",), n_gpus=1, hostname=f"n{i}", seed=400 + i, speed=sp,
                                n_samples=10)
        files.append(nbgen.write(doc, tmp_path / f"n{i}.json"))
    db = tmp_path / "f.sqlite"
    assert cli("ingest", *files, "--db", db).rc == 0
    r = cli("fleet", "--db", db)
    assert r.rc == 0, r
    r = cli("fleet", "--db", db, "--z", "0.5")
    assert r.rc == 1 and "n3" in r.out, r


def test_optional_record_fields_validate_and_are_checked(validate, cli, tmp_path):
    doc = nbgen.add_primary(nbgen.make_result(families=("gemm", "conv"), n_gpus=1, seed=9))
    for r in doc["records"]:
        r["mode"] = "alone"
        if r["status"] == "ok":
            r["run_to_run"] = {"runs": 3, "medians_s": [r["stats"]["median"]] * 3, "cv": 0.0, "max_over_min": 1.0}
        else:
            r["reason_kind"] = "oom"
    validate(doc)          # the JSON schema accepts them
    older = nbgen.make_result(families=("gemm",), n_gpus=1, seed=9)
    validate(older)        # and files without them stay valid
    assert cli("validate", nbgen.write(doc, tmp_path / "new.json")).rc == 0
    bad = copy.deepcopy(doc)
    bad["records"][0]["primary_better"] = "up"
    r = cli("compare", nbgen.write(doc, tmp_path / "a.json"), nbgen.write(bad, tmp_path / "b.json"))
    assert r.rc == 2 and "records[0].primary_better" in r.err, r
    assert cli("validate", tmp_path / "b.json").rc == 2


def test_version_1_history_is_upgraded(cli, noisy_runs, tmp_path):
    import sqlite3
    db = tmp_path / "old.sqlite"
    assert cli("ingest", *noisy_runs, "--db", db).rc == 0
    conn = sqlite3.connect(db)
    with conn:   # make it what version 1 wrote: no machine, no run_to_run_cv, no case_noise (nor what
        conn.execute("DROP TABLE case_noise")   # version 3 added: case_latest, records_by_machine)
        conn.execute("DROP TABLE IF EXISTS case_latest")
        conn.execute("DROP INDEX IF EXISTS records_by_machine")
        conn.execute("ALTER TABLE runs DROP COLUMN machine")
        conn.execute("ALTER TABLE records DROP COLUMN machine")
        conn.execute("ALTER TABLE records DROP COLUMN run_to_run_cv")
        conn.execute("UPDATE meta SET value='1' WHERE key='db_version'")
    conn.close()
    r = cli("compare", noisy_runs[0], noisy_runs[1], "--history", db, "--json", tmp_path / "c.json")
    # The upgraded history's spread over the five runs (computed here) judges run 1 against run 0.
    all_meds = [_medians(p) for p in noisy_runs]
    expected = _between_run_regressions(
        noisy_runs[:1], noisy_runs[1], lambda key: float(np.std([math.log(m[key]) for m in all_meds], ddof=1)), df=4)
    assert r.rc == (1 if expected else 0), (r, expected)
    conn = sqlite3.connect(db)
    from nodebench_reports.history import DB_VERSION
    assert conn.execute("SELECT value FROM meta WHERE key='db_version'").fetchone()[0] == str(DB_VERSION)
    assert conn.execute("SELECT COUNT(*) FROM case_noise").fetchone()[0] > 0
    # version 1 had no GPU identity: its runs count under the node name, and compare finds them there
    data = json.loads((tmp_path / "c.json").read_text())
    assert {c["noise_source"] for c in data["cases"]} == {"history (5 runs)"}
    assert {(c["id"], tuple(c["gpus"])) for c in data["cases"] if c["regression"]} == expected
