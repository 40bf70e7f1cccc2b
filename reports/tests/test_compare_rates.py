"""scripts/dev/facts/compare_rates.py on synthetic repeated runs (nbgen), against expectations computed here."""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as st

import nbgen

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "dev" / "facts" / "compare_rates.py"
NOISY = ["gemm/fp16/cublaslt/square_1024", "gemm/fp32/cublas/square_1024"]  # 15% between-run noise


def _load_script():
    spec = importlib.util.spec_from_file_location("compare_rates", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def repeated(tmp_path_factory):
    folder = tmp_path_factory.mktemp("repeated")
    files = []
    for i in range(4):
        doc = nbgen.make_result(families=("gemm",), n_gpus=1, seed=70 + i, started_at=f"2025-06-0{i + 1}T02:00:00Z",
                                run_noise_cv=0.002, run_noise={rid: 0.15 for rid in NOISY}, noise_cv=0.01)
        files.append(nbgen.write(doc, folder / f"run{i}.json"))
    return files


def _run(repeated, out, *extra):
    r = subprocess.run([sys.executable, str(SCRIPT), *map(str, repeated), "--out", str(out), *extra],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "false positives:" in r.stdout and "planted 5% slowdown" in r.stdout
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def rates(repeated, tmp_path_factory):
    """Leave-one-out: the spread behind each comparison comes from the 3 runs other than the new one."""
    return _run(repeated, tmp_path_factory.mktemp("rates") / "rates.json", "--noise", "leave-one-out")


@pytest.fixture(scope="module")
def rates_all(repeated, tmp_path_factory):
    """Default: the spread of all 4 runs."""
    return _run(repeated, tmp_path_factory.mktemp("rates") / "rates_all.json")


def test_counts_match_the_files(rates, repeated):
    docs = [json.loads(Path(p).read_text()) for p in repeated]
    n_ok = sum(1 for r in docs[0]["records"] if r["status"] == "ok")
    pairs = len(list(itertools.combinations(range(len(docs)), 2)))
    assert rates["pairs"] == pairs == 6
    assert rates["false_positive"]["compared"] == n_ok * pairs
    for p in rates["planted"].values():
        assert p["planted"] == (n_ok // 2) * pairs
        assert p["speedups_planted"] == (n_ok - n_ok // 2) * pairs


def test_spreads_and_low_spread_subset_computed_independently(rates, repeated):
    docs = [json.loads(Path(p).read_text()) for p in repeated]
    meds = {}
    for d in docs:
        for r in d["records"]:
            if r["status"] == "ok":
                meds.setdefault(f"{r['id']} [gpu {','.join(map(str, r['gpus']))}]", []).append(r["stats"]["median"])
    for label, m in meds.items():
        assert rates["cases"][label]["spread"] == pytest.approx(max(m) / min(m) - 1)
    for name, p in rates["planted"].items():
        low = [c["planted"][name] for label, c in rates["cases"].items()
               if name in c["planted"] and max(meds[label]) / min(meds[label]) - 1 <= 0.02]
        assert p["low_spread"]["planted"] == sum(x["planted"] for x in low)
        assert p["low_spread"]["flagged"] == sum(x["flagged"] for x in low)
    # the noisy cases are outside the low-spread subset (15% spread)
    for rid in NOISY:
        assert rates["cases"][f"{rid} [gpu 0]"]["spread"] > 0.02


def test_rates(rates):
    # Quiet cases (0.2% between runs, 1% samples): no false alarm, and the gate keeps significant
    # sub-threshold offsets out; the 15%-noise cases may alarm at the test's level at most.
    fp = rates["false_positive"]
    assert fp["flagged"] <= 0.01 * fp["compared"] + 1
    p5, p25 = rates["planted"]["5%"], rates["planted"]["25%"]
    # A planted 5% against the quiet cases' noise: the median of one run moves by
    # sigma = hypot(0.2% between runs, 1.2533 * 1% / sqrt(20) within); the history behind each
    # comparison holds 3 runs (the new one left out), so the test statistic is a noncentral t with
    # 2 degrees of freedom and noncentrality ln(1.05) / (sigma * sqrt(2)), judged at t(0.99, 2).
    sigma = math.hypot(0.002, 1.2533 * 0.01 / math.sqrt(20))
    expect = st.nct.sf(st.t.isf(0.01, 2), 2, math.log(1.05) / (sigma * math.sqrt(2)))
    assert abs(p5["low_spread"]["rate"] - expect) <= 0.06, (p5["low_spread"]["rate"], expect)
    assert p25["low_spread"]["rate"] == 1.0
    # a planted 5% inside 15% run-to-run noise is not distinguishable: those are rarely flagged
    noisy5 = [rates["cases"][f"{rid} [gpu 0]"]["planted"].get("5%", {"planted": 0, "flagged": 0}) for rid in NOISY]
    assert sum(x["flagged"] for x in noisy5) <= max(1, sum(x["planted"] for x in noisy5) // 4)
    assert p5["speedups_flagged"] == 0 and p25["speedups_flagged"] == 0


def test_rates_with_the_history_of_all_runs(rates_all):
    # the same expectation with 3 degrees of freedom (4 runs behind the spread)
    assert rates_all["settings"]["noise"] == "history"
    sigma = math.hypot(0.002, 1.2533 * 0.01 / math.sqrt(20))
    expect = st.nct.sf(st.t.isf(0.01, 3), 3, math.log(1.05) / (sigma * math.sqrt(2)))
    p5 = rates_all["planted"]["5%"]
    assert abs(p5["low_spread"]["rate"] - expect) <= 0.06, (p5["low_spread"]["rate"], expect)
    assert p5["speedups_flagged"] == 0 and rates_all["planted"]["25%"]["low_spread"]["rate"] == 1.0
    fp = rates_all["false_positive"]
    assert fp["flagged"] <= 0.01 * fp["compared"] + 1


def test_planted_copy_scales_samples_medians_and_metrics(repeated):
    mod = _load_script()
    from nodebench_reports.load import load_run

    run = load_run(repeated[0])
    copy_run, slowed, sped = mod.planted_copy(run, 1.05, np.random.default_rng(1))
    ok = [r for r in run.records if r["status"] == "ok"]
    assert len(slowed) == len(ok) // 2 and len(sped) == len(ok) - len(ok) // 2 and not slowed & sped
    for before, after in zip(run.records, copy_run.records):
        if before["status"] != "ok":
            continue
        f = 1.05 if mod.label_of(before) in slowed else 1 / 1.05
        assert after["stats"]["median"] == pytest.approx(before["stats"]["median"] * f)
        assert after["samples_s"] == pytest.approx([s * f for s in before["samples_s"]])
        rate = "tops" if "tops" in before["metrics"] else "tflops"
        assert after["metrics"][rate] == pytest.approx(before["metrics"][rate] / f)
        assert after["metrics"]["time_us"] == pytest.approx(before["metrics"]["time_us"] * f)
    assert run.records[0]["samples_s"] != copy_run.records[0]["samples_s"]  # the original is untouched


def test_bad_input_exit_2(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("{}")
    r = subprocess.run([sys.executable, str(SCRIPT), str(bad), str(bad)], capture_output=True, text=True)
    assert r.returncode == 2 and "compare_rates: error:" in r.stderr
