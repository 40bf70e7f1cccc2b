"""The between-run noise prior shipped with the package: how it is built, when compare uses it, the
'unstable, not judged' verdict, and the docs' noise table generated from it."""

from __future__ import annotations

import copy
import importlib.util
import json
import math

import numpy as np
import pytest
from scipy import stats as st

import nbgen
from conftest import REPO

RID = "gemm/fp16/cublaslt/square_4096"


def _run(seed, day, **kw):
    from nodebench_reports.load import Run
    doc = nbgen.make_result(families=("gemm",), n_gpus=1, seed=seed, started_at=f"2025-06-{day:02d}T02:00:00Z", **kw)
    return Run(path=f"r{seed}.json", doc=doc)


def _figure(rec):
    pm = rec.get("primary_metric")
    return rec["metrics"][pm] if pm else rec["stats"]["median"]


def test_build_measures_the_spread_of_the_figure_compare_judges():
    from nodebench_reports import noise_prior
    runs = [_run(300 + i, 1 + i, run_noise_cv=0.03, noise_cv=0.01) for i in range(4)]
    doc = noise_prior.build({"NVIDIA H200": runs})
    entry = doc["models"]["NVIDIA H200"]
    assert entry["runs"] == 4
    values = [_figure(next(r for r in run.records if r["id"] == RID)) for run in runs]
    case = entry["cases"][RID]
    assert case["runs"] == 4
    assert case["spread"] == pytest.approx(float(np.std(np.log(values), ddof=1)), rel=1e-12)
    assert case["max_over_min"] == pytest.approx(max(values) / min(values))
    kind = entry["kinds"]["gemm/fp16/cublaslt/*"]
    members = [v["spread"] for k, v in entry["cases"].items() if k.startswith("gemm/fp16/cublaslt/")]
    assert kind["spread"] == pytest.approx(max(members)) and kind["cases"] == len(members)
    family = entry["families"]["gemm/**"]
    assert family["spread"] == pytest.approx(max(v["spread"] for v in entry["cases"].values()))
    assert family["cases"] == len(entry["cases"])


def _prior(spread, runs=10, name=RID, model="NVIDIA H200"):
    from nodebench_reports.noise_prior import NoisePrior
    doc = {"schema": "nodebench.noise_prior", "schema_version": 1,
           "models": {model: {"runs": runs, "cases": {name: {"spread": spread, "runs": runs, "max_over_min": 1.0}},
                              "kinds": {}}}}
    return NoisePrior(doc, "test-prior")


def _pair(slowdown=None, seed=400):
    base = nbgen.make_result(families=("gemm",), n_gpus=1, seed=seed, noise_cv=0.002)
    new = copy.deepcopy(base)
    new["run_id"] = "other"
    new["started_at"] = "2025-06-09T02:00:00Z"
    if slowdown:
        import compare_rates_plant as plant
        rec = next(r for r in new["records"] if r["id"] == RID)
        plant.scale_record(rec, slowdown)
    from nodebench_reports.load import Run
    return Run(path="base.json", doc=base), Run(path="new.json", doc=new)


@pytest.fixture(autouse=True)
def _plant_module(monkeypatch):
    spec = importlib.util.spec_from_file_location("compare_rates_plant", REPO / "scripts" / "dev" / "facts" / "compare_rates.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setitem(__import__("sys").modules, "compare_rates_plant", mod)


def _case(result):
    return next(c for c in result.cases if c.id == RID)


def test_compare_judges_against_the_prior_without_history():
    from nodebench_reports.compare import compare_runs
    base, new = _pair(1.06)
    floor = _case(compare_runs(base, new))
    assert floor.noise_source == "floor" and not floor.regression   # 2% floor: 6% is not significant
    with_prior = _case(compare_runs(base, new, prior=_prior(0.004)))
    assert with_prior.noise_source == "prior (10 runs, NVIDIA H200)" and with_prior.noise_between == 0.004
    assert with_prior.regression and with_prior.verdict == "regression"
    # the p-value against the prior: the t-test of the log ratio, 9 degrees of freedom, computed here
    lr = math.log(with_prior.ratio)
    assert with_prior.p_between == pytest.approx(float(st.t.sf(lr / (0.004 * math.sqrt(2)), 9)), rel=1e-9)


def test_the_history_replaces_the_prior_once_it_has_as_many_runs():
    from nodebench_reports.compare import compare_case
    from nodebench_reports.noise_prior import PriorEntry
    base, new = _pair(1.03)
    b, n = (next(r for r in run.records if r["id"] == RID) for run in (base, new))
    prior = PriorEntry(0.02, 10, "prior (10 runs, NVIDIA H200)")
    short = compare_case(b, n, history=(9, 0.001), prior=prior)
    assert short.noise_source == "prior (10 runs, NVIDIA H200)"      # 9 nights: the larger, the prior
    long = compare_case(b, n, history=(10, 0.001), prior=prior)
    assert long.noise_source == "history (10 runs)" and long.noise_between == 0.001
    noisy = compare_case(b, n, history=(4, 0.05), prior=prior)
    assert noisy.noise_source == "history (4 runs)"                 # a noisier node than the prior shows


def test_a_case_too_noisy_for_the_threshold_is_unstable_not_judged():
    from nodebench_reports.compare import REGRESSION, UNSTABLE, compare_runs
    spread = 0.10
    # independently: the smallest slowdown a t-test with 9 degrees of freedom can call at alpha 0.01
    limit = math.exp(float(st.t.isf(0.01, 9)) * spread * math.sqrt(2))
    assert limit > 1.05
    base, new = _pair(1.0 + (limit - 1.0) * 0.8)
    c = _case(compare_runs(base, new, prior=_prior(spread)))
    assert c.verdict == UNSTABLE and c.unstable and not c.regression
    assert "between-run spread 10.0%" in c.note
    # a slowdown beyond its own spread is still a regression
    base, new = _pair(limit * 1.1)
    c = _case(compare_runs(base, new, prior=_prior(spread)))
    assert c.verdict == REGRESSION and c.unstable and c.regression
    # a case the prior calls stable keeps its verdicts
    base, new = _pair(1.01)
    c = _case(compare_runs(base, new, prior=_prior(0.002)))
    assert not c.unstable and c.verdict != UNSTABLE


def test_kind_and_other_model_fallbacks():
    from nodebench_reports.noise_prior import NoisePrior
    doc = {"schema": "nodebench.noise_prior", "schema_version": 1, "models": {
        "NVIDIA H200": {"runs": 10, "cases": {RID: {"spread": 0.01, "runs": 10, "max_over_min": 1.0}},
                        "kinds": {"gemm/fp16/cublaslt/*": {"spread": 0.03, "runs": 10, "cases": 1}}}}}
    prior = NoisePrior(doc, "p")
    rec = {"id": RID, "gpus": [0]}
    assert prior.lookup("NVIDIA H200", rec).spread == 0.01
    other = prior.lookup("NVIDIA H200", {"id": "gemm/fp16/cublaslt/square_2048", "gpus": [0]})
    assert other.spread == 0.03 and other.source.startswith("prior of kind gemm/fp16/cublaslt/*")
    assert prior.lookup("NVIDIA H200", {"id": "memory/copy/8xL2", "family": "memory", "gpus": [0]}) is None
    doc["models"]["NVIDIA H200"]["families"] = {"gemm/**": {"spread": 0.05, "runs": 10, "cases": 3}}
    family = prior.lookup("NVIDIA H200", {"id": "gemm/fp64/cublas/square_4096", "family": "gemm", "gpus": [0]})
    assert family.spread == 0.05 and family.source.startswith("prior of family gemm/**")
    elsewhere = prior.lookup("Tesla P40", rec)
    assert elsewhere.spread == 0.01 and "measured on NVIDIA H200" in elsewhere.source
    # the same case on two GPUs is another case
    assert prior.lookup("NVIDIA H200", {"id": RID, "gpus": [0, 1]}) is None


def test_the_packaged_prior_loads_and_compare_uses_it(cli, tmp_path):
    from nodebench_reports import noise_prior
    prior = noise_prior.load()
    assert prior is not None and prior.models
    a = REPO / "results" / "h200" / "2026-12-02-quick-split" / "quick.json.gz"
    b = REPO / "results" / "h200" / "2026-12-02-quick-split" / "quick2.json.gz"
    if not (a.exists() and b.exists()):
        pytest.skip("committed files not present")
    cli("compare", a, b, "--json", tmp_path / "c.json")
    cases = json.loads((tmp_path / "c.json").read_text())["cases"]
    assert any(c["noise_source"].startswith("prior") for c in cases)
    cli("compare", a, b, "--no-noise-prior", "--json", tmp_path / "d.json")
    cases = json.loads((tmp_path / "d.json").read_text())["cases"]
    assert not any(c["noise_source"].startswith("prior") for c in cases)


def test_a_planted_5pct_slowdown_is_caught_on_every_stable_case_of_a_real_file(tmp_path):
    """A committed H200 quick run against a copy of itself with every ok case 5% slower: each case the
    packaged prior calls stable (computed here with scipy's t quantile) is a regression when its
    samples separate too (scipy's Mann-Whitney); no other case is."""
    from nodebench_reports import noise_prior
    from nodebench_reports.compare import compare_runs
    from nodebench_reports.load import Run, load_run
    import compare_rates_plant as plant

    path = REPO / "results" / "h200" / "2026-12-02-quick-split" / "quick.json.gz"
    if not path.exists():
        pytest.skip("committed file not present")
    prior = noise_prior.load()
    base = load_run(str(path))
    doc = copy.deepcopy(base.doc)
    doc["run_id"] += "-planted"
    for rec in doc["records"]:
        if rec["status"] == "ok":
            plant.scale_record(rec, 1.05)
    res = compare_runs(base, Run(path="planted", doc=doc), prior=prior)
    brecs = {(r["id"], tuple(r["gpus"])): r for r in base.records}
    checked = 0
    for c in res.cases:
        if c.base_status != "ok" or not c.noise_source.startswith("prior ("):
            continue
        entry = prior.models["NVIDIA H200"]["cases"][c.id]
        stable = math.exp(float(st.t.isf(0.01, entry["runs"] - 1)) * entry["spread"] * math.sqrt(2)) < 1.05
        samples = np.asarray(brecs[(c.id, tuple(c.gpus))]["samples_s"])
        separate = float(st.mannwhitneyu(samples * 1.05, samples, alternative="greater").pvalue) < 0.01
        assert res.fails(c) == (stable and separate), (c.label, c.verdict, entry)
        checked += stable
    assert checked >= 10


def test_the_docs_noise_table_is_the_one_generated_from_the_packaged_prior():
    spec = importlib.util.spec_from_file_location("noise_prior_script", REPO / "scripts" / "dev" / "facts" / "noise_prior.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    from nodebench_reports import noise_prior
    table = mod.table(noise_prior.load().doc)
    text = (REPO / "reports" / "README.md").read_text()
    inside = text.split(mod.BEGIN, 1)[1].split(mod.END, 1)[0]
    assert inside.strip() == table.strip()


def test_a_bad_prior_file_is_refused(cli, tmp_path):
    bad = tmp_path / "prior.json"
    bad.write_text(json.dumps({"schema": "nodebench.noise_prior", "schema_version": 1,
                               "models": {"X": {"cases": {"a": {"spread": -1, "runs": 3}}, "kinds": {}}}}))
    a = nbgen.write(nbgen.make_result(families=("gemm",), n_gpus=1, seed=1), tmp_path / "a.json")
    r = cli("compare", a, a, "--noise-prior", bad)
    assert r.rc == 2 and "prior.json: models.X.cases.a" in r.err, r
