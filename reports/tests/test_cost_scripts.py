"""scripts/dev/costs/estimate_table.py and scripts/dev/costs/fit_costs.py (issue 24) on crafted result files,
against expectations worked out here."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

DEV = Path(__file__).resolve().parents[2] / "scripts" / "dev"
# The folder of scripts/dev each script is in: the cost fit and estimate checks, and one fact.
_FOLDER = {"seeded_vs_cache": "facts"}


def _load(name):
    spec = importlib.util.spec_from_file_location(name, DEV / _FOLDER.get(name, "costs") / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _rec(rid, elapsed, left, **progress):
    p = {"elapsed_s": elapsed, "left_s": left}
    p.update(progress)
    return {"id": rid, "status": "ok", "progress": p}


def test_the_estimate_is_judged_against_the_time_that_remained():
    et = _load("estimate_table")
    # A run of 100 s: at 10 s the estimate said 80 (90 remained: -11%), at 50 s 70 (50: +40%),
    # at 5 s 10 (95 remained) but that is before 10% of the run and not judged.
    doc = {"records": [_rec("a", 5, 10), _rec("b", 10, 80), _rec("c", 50, 70), _rec("d", 100, 0)]}
    rows, s = et.assess(et.progress_points(doc), 0.1, 1.0)
    assert s["total_s"] == 100
    assert [round(r["actual_s"]) for r in rows] == [95, 90, 50, 0]
    assert s["judged_steps"] == 2  # the last step has nothing left to estimate
    assert s["within_25_percent"] == 1
    assert s["worst_error"] == pytest.approx(0.4)
    assert s["worst_id"] == "c"
    # The tenths: the first step at or past each tenth.
    assert [r["id"] for _, r in et.tenths(rows)][:2] == ["b", "c"]


def test_a_file_without_progress_is_refused(tmp_path):
    et = _load("estimate_table")
    f = tmp_path / "r.json"
    f.write_text(json.dumps({"records": [{"id": "x", "status": "ok"}]}))
    assert et.main([str(f)]) == 2


def test_the_fit_is_least_squares_with_a_non_negative_fixed_part():
    fc = _load("fit_costs")
    # duration = 2 + 3 x model exactly.
    fixed, scale = fc.fit([(1.0, 5.0), (2.0, 8.0), (4.0, 14.0), (8.0, 26.0)], 4)
    assert fixed == pytest.approx(2.0)
    assert scale == pytest.approx(3.0)
    # A negative intercept is not a cost: through the origin instead (sum md / sum mm).
    fixed, scale = fc.fit([(1.0, 0.5), (2.0, 2.5), (4.0, 6.5), (8.0, 14.5)], 4)
    assert fixed == 0.0
    assert scale == pytest.approx((0.5 + 5 + 26 + 116) / (1 + 4 + 16 + 64))
    # Model seconds that hardly vary (and a large case that was quick): the least-squares slope is
    # negative, and the flat line at the mean (scale at its floor) fits far better than a line
    # through the origin, whose error is worked out here.
    pts = [(0.024, 0.2), (0.025, 3.0), (0.026, 0.3), (0.1, 0.4), (0.025, 0.5)]
    fixed, scale = fc.fit(pts, 4)
    assert scale == pytest.approx(fc.MIN_SCALE)
    assert fixed == pytest.approx((4.4 - fc.MIN_SCALE * 0.2) / 5)
    k0 = sum(m * d for m, d in pts) / sum(m * m for m, _ in pts)
    assert sum((k0 * m - d) ** 2 for m, d in pts) > sum((fixed + scale * m - d) ** 2 for m, d in pts)
    # Too few points: the ratio of the totals.
    assert fc.fit([(1.0, 3.0), (3.0, 5.0)], 4) == (0.0, pytest.approx(2.0))


def test_the_split_fit_scales_setup_and_sampling_apart():
    fc = _load("fit_costs")
    # duration = 0.5 + 3 x setup + 0.25 x sampling exactly, with the two parts varying apart (a
    # copy's sampling at the time cap whatever its size): recovered exactly.
    pts = [(u, v, 0.5 + 3 * u + 0.25 * v) for u, v in [(0.1, 1.0), (0.4, 1.0), (0.1, 0.4), (1.2, 0.4), (0.02, 0.2)]]
    fixed, scale, sample_scale = fc.fit_split(pts, 4)
    assert (fixed, scale, sample_scale) == (pytest.approx(0.5), pytest.approx(3.0), pytest.approx(0.25))
    # A sampling part that costs nothing in fact (durations from the setup alone): its scale goes to
    # its floor rather than below zero, and the rest is fitted with it held there.
    pts = [(u, v, 2 * u) for u, v in [(1.0, 3.0), (2.0, 1.0), (3.0, 2.0), (4.0, 5.0)]]
    fixed, scale, sample_scale = fc.fit_split(pts, 4)
    assert sample_scale == pytest.approx(fc.MIN_SCALE)
    resid = [d - fc.MIN_SCALE * v for u, v, d in pts]
    f0, k0 = fc.fit([(u, r) for (u, _, _), r in zip(pts, resid)], 4)
    assert (fixed, scale) == (pytest.approx(f0), pytest.approx(k0))
    # Too few points: one scale, the ratio of the totals (12 s over 6 model seconds).
    assert fc.fit_split([(1.0, 1.0, 4.0), (1.0, 3.0, 8.0)], 4) == (0.0, pytest.approx(2.0), pytest.approx(2.0))


def test_a_sweep_stops_where_a_doubling_gained_under_three_percent():
    fc = _load("fit_costs")

    def row(b, v, status="ok", kind=None):
        return {"batch": b, "figure": v, "status": status, "reason_kind": kind}

    # 64 -> 128 +10%, 128 -> 256 +2%: the sweep would have stopped after 256.
    assert fc.sweep_stop([row(64, 100), row(128, 110), row(256, 112.2), row(512, 130)]) == 256
    # A run that stopped itself: its last batch that ran.
    assert fc.sweep_stop([row(32, 70), row(64, 100), row(128, 150), row(256, 0, "skipped", "plateau")]) == 128
    # No plateau and no stop: the last batch that ran.
    assert fc.sweep_stop([row(1, 10), row(2, 19), row(4, 30)]) == 4
    # A few chosen batches (a calibration run) are no sweep.
    assert fc.sweep_stop([row(8, 10), row(64, 19), row(256, 30)]) is None
    assert fc.sweep_stop([row(1, 10), row(2, 19)]) is None


def test_fit_writes_kinds_families_and_sweeps(tmp_path):
    fc = _load("fit_costs")
    recs = []
    for b, m, d, v in [(1, 1.0, 5.0, 10), (2, 2.0, 8.0, 19), (4, 4.0, 14.0, 36), (8, 8.0, 26.0, 36.5)]:
        recs.append({"id": f"t/b{b}", "status": "ok", "duration_s": d, "primary_metric": "images_per_s",
                     "metrics": {"images_per_s": v},
                     "progress": {"kind": "train/fp16", "model_s": m, "sweep": "train/fp16/nhwc", "batch": b}})
    f = tmp_path / "run.json"
    f.write_text(json.dumps({"records": recs}))
    out = tmp_path / "costs.json"
    assert fc.main([str(f), "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["kinds"]["train/fp16"]["scale"] == pytest.approx(3.0)
    assert doc["kinds"]["train"]["scale"] == pytest.approx(3.0)  # the family's fit over its kinds
    assert doc["sweeps"]["train/fp16/nhwc"]["last_batch"] == 8  # 4 -> 8 gained 1.4%
    assert doc["sweeps"]["train"]["last_batch"] == 8


def test_each_runs_stop_of_a_sweep_is_written_beside_the_fullest_runs(tmp_path):
    fc = _load("fit_costs")

    def run(name, figures, skipped_at=None):
        recs = [{"id": f"t/b{b}", "status": "ok", "duration_s": 1.0, "primary_metric": "images_per_s",
                 "metrics": {"images_per_s": v},
                 "progress": {"kind": "train/fp16/nhwc", "model_s": 1.0, "sweep": "train/fp16/nhwc", "batch": b}}
                for b, v in figures]
        if skipped_at:
            recs.append({"id": f"t/b{skipped_at}", "status": "skipped", "reason_kind": "plateau", "duration_s": 0.0,
                         "progress": {"kind": "train/fp16/nhwc", "model_s": 0.0, "sweep": "train/fp16/nhwc",
                                      "batch": skipped_at}})
        f = tmp_path / name
        f.write_text(json.dumps({"records": recs}))
        return str(f)
    # Three runs: stopped after 4 (4 gained 2% over 2), after 8, and one that ran 1 to 8 without a
    # plateau record (its last batch).
    a = run("a.json", [(1, 10), (2, 19), (4, 19.4)], skipped_at=8)
    b = run("b.json", [(1, 10), (2, 19), (4, 25), (8, 25.2)], skipped_at=16)
    c = run("c.json", [(1, 10), (2, 19), (4, 25), (8, 30)])
    out = tmp_path / "costs.json"
    assert fc.main([a, b, c, "--out", str(out)]) == 0
    sw = json.loads(out.read_text())["sweeps"]["train/fp16/nhwc"]
    assert sw["last_batches"] == [4, 8, 8]
    assert sw["last_batch"] == 8  # the run that ran the most batches (b, with its skipped one)


def test_a_kind_takes_its_points_from_the_newest_file_or_from_all(tmp_path):
    fc = _load("fit_costs")

    def doc(scale):
        return {"records": [{"id": f"g/{m}", "status": "ok", "duration_s": scale * m,
                             "progress": {"kind": "gemm", "model_s": m}} for m in (1.0, 2.0, 3.0, 4.0)]}
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(doc(5.0)))
    new.write_text(json.dumps(doc(2.0)))
    out = tmp_path / "costs.json"
    fc.main([str(old), str(new), "--newest", "--out", str(out)])
    assert json.loads(out.read_text())["kinds"]["gemm"]["scale"] == pytest.approx(2.0)
    # Without --newest, both files' points together: durations 5m and 2m, least squares through the
    # points (1,5),(2,10),(3,15),(4,20),(1,2),(2,4),(3,6),(4,8): the mean line, scale 3.5, fixed 0.
    fc.main([str(old), str(new), "--out", str(out)])
    k = json.loads(out.read_text())["kinds"]["gemm"]
    assert k["scale"] == pytest.approx(3.5) and k["fixed_s"] == pytest.approx(0.0, abs=1e-9)


def _two_kinds(gemm_scale, host_scale):
    """A run of two kinds whose durations are their scale times their model seconds."""
    recs = []
    for kind, scale in (("gemm", gemm_scale), ("hostlink/pinned", host_scale)):
        recs += [{"id": f"{kind}/{m}", "status": "ok", "duration_s": scale * m,
                  "progress": {"kind": kind, "model_s": m}} for m in (1.0, 2.0, 3.0, 4.0)]
    return {"records": recs}


def test_renew_takes_only_the_named_kinds_from_the_newest_file(tmp_path):
    fc = _load("fit_costs")
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(_two_kinds(5.0, 6.0)))
    new.write_text(json.dumps(_two_kinds(2.0, 1.5)))
    out = tmp_path / "costs.json"
    assert fc.main([str(old), str(new), "--renew", "hostlink", "--out", str(out)]) == 0
    k = json.loads(out.read_text())["kinds"]
    assert k["hostlink/pinned"]["scale"] == pytest.approx(1.5)  # the new file's points alone
    assert k["hostlink"]["scale"] == pytest.approx(1.5)         # and so its family's fit
    assert k["gemm"]["scale"] == pytest.approx(3.5)             # pooled: the mean line of 5m and 2m
    assert k["gemm"]["points"] == 8 and k["hostlink/pinned"]["points"] == 4


def test_fresh_files_alone_give_the_renewed_kinds_and_pool_the_rest(tmp_path):
    fc = _load("fit_costs")
    old, new1, new2 = tmp_path / "old.json", tmp_path / "new1.json", tmp_path / "new2.json"
    old.write_text(json.dumps(_two_kinds(5.0, 6.0)))
    new1.write_text(json.dumps(_two_kinds(2.0, 1.0)))
    new2.write_text(json.dumps(_two_kinds(2.0, 2.0)))
    out = tmp_path / "costs.json"
    assert fc.main([str(old), "--renew", "hostlink", "--fresh", str(new1), "--fresh", str(new2), "--out", str(out)]) == 0
    d = json.loads(out.read_text())
    k = d["kinds"]
    # hostlink from the two fresh files pooled (durations m and 2m: the mean line, scale 1.5), not
    # from the old one; gemm from all three (5m, 2m, 2m: scale 3).
    assert k["hostlink/pinned"]["points"] == 8 and k["hostlink/pinned"]["scale"] == pytest.approx(1.5)
    assert k["gemm"]["points"] == 12 and k["gemm"]["scale"] == pytest.approx(3.0)
    assert d["source"] == [str(old), str(new1), str(new2)]


def test_the_last_steps_are_judged_in_seconds():
    et = _load("estimate_table")
    # 98 s into a 100 s run the estimate said 5 s (2 remained): +150%, but past 95% of the run it
    # is judged in seconds (+3 s), not in the relative count.
    doc = {"records": [_rec("a", 50, 52), _rec("b", 98, 5), _rec("c", 100, 0)]}
    rows, s = et.assess(et.progress_points(doc), 0.1, 0.95)
    assert s["judged_steps"] == 1 and s["within_25_percent"] == 1
    assert s["tail_worst_s"] == pytest.approx(3.0)


def test_an_unreadable_file_is_refused_with_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert _load("estimate_table").main([str(bad)]) == 2
    assert _load("estimate_table").main([str(tmp_path / "missing.json")]) == 2
    assert _load("fit_costs").main([str(bad)]) == 2
    assert "cannot read a result file" in capsys.readouterr().err


def test_the_holdout_refuses_what_it_cannot_run_with_exit_2(tmp_path, capsys):
    ho = _load("estimate_holdout")
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text("{}")
    b.write_text("{}")
    probe = tmp_path / "probe"
    probe.write_text("#!/bin/sh\nexit 0\n")
    probe.chmod(0o755)
    # One run: nothing to fit it from.
    assert ho.main(["--probe", str(probe), str(a)]) == 2
    assert "at least two result files" in capsys.readouterr().err
    # No probe program.
    assert ho.main(["--probe", str(tmp_path / "none"), str(a), str(b)]) == 2
    assert "no such program" in capsys.readouterr().err
    # A run that is not there.
    assert ho.main(["--probe", str(probe), str(a), str(tmp_path / "missing.json")]) == 2
    assert "no such file" in capsys.readouterr().err


def _train_rec(rid, ms, fused, source):
    return {"id": rid, "family": "train", "status": "ok", "metrics": {"step_time_ms": ms},
            "details": {"fusion": {"fused_layers": fused}, "algorithms": [{"fwd_source": source}]}}


def test_seeded_vs_cache_pairs_the_same_path_only(tmp_path, capsys):
    import io
    import tarfile
    svc = _load("seeded_vs_cache")
    full = tmp_path / "full.json"
    full.write_text(json.dumps({"records": [_train_rec("train/a", 10.0, 49, "search"),
                                            _train_rec("train/b", 20.0, 49, "memo")]}))
    peer = {"records": [_train_rec("train/a", 9.0, 49, "file"),    # paired: 0.9
                        _train_rec("train/a", 12.0, 0, "file"),    # the unfused step: not paired
                        _train_rec("train/b", 21.0, 49, "search"),  # not from the cache: not paired
                        _train_rec("train/c", 5.0, 49, "file")]}   # not in the full run
    tgz = tmp_path / "peer_raw.tar.gz"
    data = json.dumps(peer).encode()
    with tarfile.open(tgz, "w:gz") as t:
        info = tarfile.TarInfo("./tf_nb_x_fused_eager.json")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    assert svc.main([str(full), str(tgz)]) == 0
    out = capsys.readouterr().out
    assert "1 records: cache / seeded from 0.9000 to 0.9000" in out
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert svc.main([str(bad), str(tgz)]) == 2
    assert svc.main([str(full), str(tmp_path / "none.tar.gz")]) == 2


def test_a_family_change_compares_figures_of_cases_ok_in_both_and_their_step_times():
    fc = _load("family_change")

    def rec(rid, fam, elapsed, gbps, status="ok"):
        return {"id": rid, "family": fam, "status": status, "primary_metric": "gbps",
                "metrics": {"gbps": gbps}, "progress": {"elapsed_s": elapsed}}

    before = {"records": [rec("g/a", "gemm", 5, 1), rec("h/a", "hostlink", 7, 10), rec("h/b", "hostlink", 10, 20),
                          rec("h/c", "hostlink", 11, 30), rec("h/d", "hostlink", 12, 5)]}
    after = {"records": [rec("h/a", "hostlink", 1, 11), rec("h/b", "hostlink", 4, 10),
                         rec("h/c", "hostlink", 4.5, 30, status="wrong"), rec("h/d", "hostlink", 6, 5)]}
    lines, ratios = fc.compare("hostlink", before, after)
    # h/c is wrong after: left out; the others after / before.
    assert ratios == pytest.approx(sorted([1.1, 0.5, 1.0]))
    # Step times from the previous step's end: before 2 + 3 + 1 + 1 (the GEMM's 5 s not counted),
    # after 1 + 3 + 0.5 + 1.5.
    assert lines[0] == "wall time of its steps: 7.0 s -> 6.0 s"
    assert lines[-1].startswith("3 cases: ratio median 1.000")
    assert "all 0.500-1.100" in lines[-1]


def _best_on_active_sets(rows, targets, lower):
    """The bounded least-squares optimum found the long way: every subset of the unknowns held at
    its bound, the rest solved freely (numpy's lstsq), the feasible solution of least error."""
    import itertools

    import numpy as np
    a, b, lo = np.asarray(rows, float), np.asarray(targets, float), np.asarray(lower, float)
    best = None
    for held in itertools.product((False, True), repeat=len(lo)):
        x = lo.copy()
        free = [i for i, h in enumerate(held) if not h]
        if free:
            sol = np.linalg.lstsq(a[:, free], b - a[:, [i for i in range(len(lo)) if held[i]]] @ lo[list(held)],
                                  rcond=None)[0]
            if np.any(sol < lo[free] - 1e-12):
                continue
            x[free] = sol
        err = float(np.sum((a @ x - b) ** 2))
        best = err if best is None else min(best, err)
    return best


def test_the_bounded_fits_reach_the_least_error_within_their_bounds():
    import random
    fc = _load("fit_costs")
    rnd = random.Random(11)
    for _ in range(300):
        pts = [(rnd.uniform(0, 5) * rnd.choice((1, 0.01)), rnd.uniform(0, 5), rnd.uniform(-1, 2) * rnd.uniform(0, 20))
               for _ in range(rnd.randint(4, 20))]
        x = fc.fit_split(pts, 4)
        assert x[0] >= 0 and x[1] >= fc.MIN_SCALE and x[2] >= fc.MIN_SCALE
        err = sum((x[0] + x[1] * u + x[2] * v - d) ** 2 for u, v, d in pts)
        best = _best_on_active_sets([(1, u, v) for u, v, _ in pts], [d for *_, d in pts], (0, fc.MIN_SCALE, fc.MIN_SCALE))
        assert err <= best * (1 + 1e-9) + 1e-12
        f, k = fc.fit([(u + v, d) for u, v, d in pts], 4)
        assert f >= 0 and k >= fc.MIN_SCALE
        err = sum((f + k * (u + v) - d) ** 2 for u, v, d in pts)
        assert err <= _best_on_active_sets([(1, u + v) for u, v, _ in pts], [d for *_, d in pts],
                                           (0, fc.MIN_SCALE)) * (1 + 1e-9) + 1e-12
