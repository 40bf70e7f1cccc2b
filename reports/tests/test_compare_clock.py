"""`compare` across machines and clocks (issue 25): the header says when BASE and NEW ran on other
hosts or GPUs; a slowdown whose clock-normalised figure is unchanged is "slower: clock", counted
apart from one at the same clock; --fail-on chooses which fail. The expectations come from how the
files are built here: one case slowed by its clock alone, one slowed at the same clock."""

from __future__ import annotations

import dataclasses
import json
import xml.etree.ElementTree as ET

import pytest

import nbgen

CLOCK = "gemm/fp32/cublas/square_8192"     # 15% slower, the SM clock 15% lower: per GHz unchanged
SAME = "gemm/fp16/cublaslt/square_4096"    # 15% slower at the same clock: per GHz 13% lower
BASE_MHZ = 1980.0


def _doc(seed, hostname, slowdown=None):
    doc = nbgen.make_result(families=("gemm",), n_gpus=1, seed=seed, hostname=hostname, noise_cv=0.01,
                            slowdown=slowdown or {})
    return doc


def _clock_rates(doc, mhz_by_id):
    """The records' figure of merit and its clock-normalised rate, as nodebench writes them."""
    for r in doc["records"]:
        if r["status"] != "ok" or "tflops" not in r["metrics"]:
            continue
        r["primary_metric"], r["primary_better"] = "tflops", "higher"
        mhz = mhz_by_id.get(r["id"], BASE_MHZ)
        r["clocks"]["sm_mhz_during"] = mhz
        r["metrics"]["tflops_per_ghz"] = r["metrics"]["tflops"] / (mhz / 1e3)
    return doc


@pytest.fixture()
def pair(tmp_path):
    """BASE on node01; NEW on node02 (other GPUs), seed shared so only the planted changes differ."""
    base = _clock_rates(_doc(5, "node01"), {})
    new = _clock_rates(_doc(5, "node02", {CLOCK: 1.15, SAME: 1.15}), {CLOCK: BASE_MHZ / 1.15})
    return nbgen.write(base, tmp_path / "base.json"), nbgen.write(new, tmp_path / "new.json"), base, new


def _compare(cli, tmp_path, *args):
    out = tmp_path / "c.json"
    r = cli("compare", *args, "--json", out)
    return r, json.loads(out.read_text()) if out.exists() else None


def _verdicts(data):
    return {c["id"]: c["verdict"] for c in data["cases"]}


def test_header_says_the_runs_are_on_other_hosts_and_gpus(cli, tmp_path, pair):
    base, new, bdoc, ndoc = pair
    r, data = _compare(cli, tmp_path, base, new)
    uuid_b, uuid_n = bdoc["environment"]["gpus"][0]["uuid"], ndoc["environment"]["gpus"][0]["uuid"]
    assert uuid_b != uuid_n  # nbgen's UUIDs are per host
    assert f"different machines: {base} and {new} ran on different hosts node01 -> node02" in r.out, r.out
    assert f"GPUs (UUID) {uuid_b} -> {uuid_n}" in r.out
    assert data["machines"]["same_hosts"] is False and data["machines"]["same_gpus"] is False
    assert data["machines"]["new"]["gpu_uuids"] == [uuid_n]
    # the same machine twice: no such line
    other = nbgen.write(_clock_rates(_doc(6, "node01"), {}), tmp_path / "again.json")
    r, data = _compare(cli, tmp_path, base, other)
    assert "different machines" not in r.out and data["machines"]["same_hosts"] and data["machines"]["same_gpus"]


def test_a_slowdown_of_the_clock_alone_is_counted_apart(cli, tmp_path, pair):
    base, new, _, _ = pair
    r, data = _compare(cli, tmp_path, base, new)
    v = _verdicts(data)
    assert v[CLOCK] == "slower: clock" and v[SAME] == "regression", v
    case = next(c for c in data["cases"] if c["id"] == CLOCK)
    assert case["clock_slowdown"] is True and case["regression"] is False
    assert case["clock_normalised"]["tflops_per_ghz"] == pytest.approx(0.0, abs=1e-9)
    assert case["ratio"] == pytest.approx(1.15, rel=0.03)
    same = next(c for c in data["cases"] if c["id"] == SAME)
    assert same["clock_normalised"]["tflops_per_ghz"] == pytest.approx((1 / 1.15 - 1) * 100, abs=2.0)
    assert data["summary"]["clock_slowdowns"] == 1 and data["summary"]["regressions"] == 1
    assert "1 slower: clock (unchanged at the same clock)" in r.out
    assert r.rc == 1  # default: both fail, as every slowdown did before


@pytest.mark.parametrize("fail_on,keep_same,rc", [
    ("regression,clock", False, 1),   # the clock slowdown alone fails by default
    ("clock", False, 1),
    ("regression", False, 0),         # tolerated: the text still counts it
    ("regression", True, 1),          # the same-clock regression fails
    ("clock", True, 1),               # the clock case fails; the regression is not asked about
])
def test_fail_on_chooses_what_fails(cli, tmp_path, pair, fail_on, keep_same, rc):
    base, new, bdoc, ndoc = pair
    if not keep_same:  # NEW without the same-clock slowdown
        ndoc = _clock_rates(_doc(5, "node02", {CLOCK: 1.15}), {CLOCK: BASE_MHZ / 1.15})
        new = nbgen.write(ndoc, tmp_path / "new_clock_only.json")
    junit = tmp_path / "c.xml"
    r, data = _compare(cli, tmp_path, base, new, "--fail-on", fail_on, "--junit", junit)
    assert r.rc == rc == data["exit_code"], r
    assert data["fail_on"] == fail_on.split(",")
    failures = {tc.get("name").split(" [")[0] for tc in ET.parse(junit).getroot().iter("testcase")
                if tc.find("failure") is not None}
    expect = ({CLOCK} if "clock" in fail_on else set()) | ({SAME} if keep_same and "regression" in fail_on else set())
    assert failures == expect
    if rc == 0:
        assert "result: no regression (exit 0) (1 slower: clock, not failing: --fail-on regression)" in r.out


def test_bad_fail_on_is_refused(cli, tmp_path, pair):
    base, new, _, _ = pair
    with pytest.raises(SystemExit) as exc:
        cli("compare", base, new, "--fail-on", "clock,speed")
    assert exc.value.code == 2


def test_a_clock_explanation_needs_the_per_ghz_figure_unchanged_within_the_noise():
    """The rule itself, on one case: unchanged per GHz -> clock; per GHz slower beyond noise and
    threshold -> not the clock; per GHz slower within the noise -> clock."""
    from nodebench_reports.compare import CaseResult
    from nodebench_reports.compare_clock import clock_explains

    def case(change_pct, noise):
        return CaseResult(id="x", gpus=[0], family="gemm", base_status="ok", new_status="ok", verdict="regression",
                          regression=True, metric="tflops", better="higher", noise_used=noise, base_runs=1,
                          clock_normalised={"tflops_per_ghz": change_pct})

    assert clock_explains(case(0.0, 0.01), 0.01, 0.05)
    assert not clock_explains(case(-13.0, 0.01), 0.01, 0.05)       # slower per GHz: at the same clock
    assert clock_explains(case(-3.0, 0.02), 0.01, 0.05)            # within 2.326 x 2% x sqrt(2) of nothing
    assert clock_explains(case(-4.0, 0.001), 0.01, 0.05)           # significant but cannot reach 5%
    assert not clock_explains(dataclasses.replace(case(0.0, 0.01), clock_normalised={}), 0.01, 0.05)  # no figure
