"""The burn family in the report (families/burn.py) on a synthetic timeline: one figure per GPU with
rate, clocks, temperature and power against time and the slowdown seconds shaded; the checklist item
from the records' own verdict fields."""

from __future__ import annotations

import copy

import nbgen
from nodebench_reports import families
from nodebench_reports.checklist import FAIL, PASS, WARN
from nodebench_reports.assemble import build_checklist
from nodebench_reports.load import Run, check_document, merge_runs
from nodebench_reports.assemble import render_all


def data_of(doc):
    check_document(doc, "test.json")
    return merge_runs([Run("test.json", doc)])


def _timeline(n=30, slow=()):
    out = []
    for t in range(1, n + 1):
        out.append({"t_s": float(t), "gemm_tflops": 100.0 - (10.0 if t in slow else 0.0), "mem_gbps": 5.0,
                    "gemm_iterations": 70, "sm_clock_mhz": 1980.0 - (300.0 if t in slow else 0.0),
                    "mem_clock_mhz": 2619.0, "temperature_c": 60.0 + t / 2, "power_w": 690.0,
                    "power_limit_w": 700.0, "throttle_mask": (0x40 | 0x4) if t in slow else 0x4,
                    "ecc_volatile_corrected": 0, "ecc_volatile_uncorrected": 0, "pcie_replays": 0,
                    "pcie_link_gen": 5, "pcie_link_width": 16, "xids": []})
    return out


def _burn_doc(slow=(), wrong_gpu=None):
    doc = nbgen.make_result(families=("hostlink",), n_gpus=2)
    base = doc["records"][0]
    for gpu in (0, 1):
        rec = copy.deepcopy(base)
        tl = _timeline(slow=slow if gpu == 1 else ())
        rec.update(id="burn/sustained", family="burn", case="sustained", gpus=[gpu], params={"gemm": "cublas"},
                   primary_metric="sustained_gemm_tflops", metrics={"sustained_gemm_tflops": 100.0, "mean_power_w": 690.0},
                   details={"precision": "fp16", "timeline": tl, "faulty_elements": 0, "gemm_iterations": 2100,
                            "memory_test": {"errors": 0}, "cut_short": False,
                            "gpu_facts": {"slowdown_temperature_c": 87.0},
                            "summary": {"duration_s": 30.0, "sustained_tflops": 100.0, "first_minute_tflops": 100.0,
                                        "mean_power_w": 690.0,
                                        "slowdown_pct": 100.0 * len(slow) / 30 if gpu == 1 else 0.0,
                                        "slowdown_evidence": "x"}})
        if gpu == wrong_gpu:
            rec.update(status="wrong", reason="GPU 1: 5 faulty GEMM element(s); first: GEMM iteration 3")
            rec["details"]["faulty_elements"] = 5
        doc["records"].append(rec)
    doc["summary"].update(total=doc["summary"]["total"] + 2, ok=doc["summary"]["ok"] + 2 - (wrong_gpu is not None))
    if wrong_gpu is not None:
        doc["summary"]["wrong"] = doc["summary"].get("wrong", 0) + 1
    return doc


def _span(patch):
    """(x0, x1) of an axvspan: a Rectangle (matplotlib >= 3.9) or a Polygon."""
    if hasattr(patch, "get_width"):
        return round(patch.get_x(), 6), round(patch.get_x() + patch.get_width(), 6)
    xs = [x for x, _ in patch.get_xy()]
    return round(min(xs), 6), round(max(xs), 6)


def test_each_gpu_gets_its_figure_with_rate_clocks_temperature_power_and_shaded_slowdown(monkeypatch):
    from nodebench_reports import plots
    figs = []
    monkeypatch.setattr(plots, "_png", lambda fig: figs.append(fig) or b"png")
    slow = (11, 12, 13, 20)
    data = data_of(_burn_doc(slow=slow))
    made = families.module("burn").figures(data)
    assert [p.key for p in made] == ["burn_0", "burn_1"] and all(p.png == b"png" for p in made)
    assert len(figs) == 2
    rate, clock, temp, power = figs[1].axes[:4]
    (line,) = [ln for ln in rate.get_lines() if ln.get_label() == "GEMM TFLOPS"]
    assert list(line.get_ydata()) == [d["gemm_tflops"] for d in _timeline(slow=slow)]
    assert {ln.get_label() for ln in clock.get_lines()} == {"SM clock", "memory clock"}
    assert "slowdown (NVML)" in {ln.get_label() for ln in temp.get_lines()}
    assert {"power", "power limit"} <= {ln.get_label() for ln in power.get_lines()}
    # the slowdown seconds (10, 13] and (19, 20] shaded on every panel of GPU 1, none on GPU 0
    for ax in figs[1].axes[:4]:
        spans = sorted(_span(p) for p in ax.patches)
        assert spans == [(10.0, 13.0), (19.0, 20.0)], spans
    assert all(not ax.patches for ax in figs[0].axes[:4])
    assert [p.key for p in render_all(data)][-2:] == ["burn_0", "burn_1"]


def test_slowdown_intervals_merge_consecutive_seconds_and_ignore_the_power_cap():
    burn = families.module("burn")
    tl = _timeline(n=6, slow=(2, 3, 5))
    assert burn.slowdown_intervals(tl) == [(1.0, 3.0), (4.0, 5.0)]
    assert burn.slowdown_intervals(_timeline(n=6)) == []  # 0x4, the power cap alone


def test_checklist_item_reads_the_records_verdicts():
    items = {i.key: i for i in build_checklist(data_of(_burn_doc()))}
    assert items["burn"].status == PASS
    assert any("sustained 100.0 TFLOPS fp16" in e for e in items["burn"].evidence)
    assert {i.key: i for i in build_checklist(data_of(_burn_doc(slow=(3,))))}["burn"].status == WARN
    bad = {i.key: i for i in build_checklist(data_of(_burn_doc(wrong_gpu=1)))}["burn"]
    assert bad.status == FAIL and any("GEMM iteration 3" in e for e in bad.evidence)


def test_reports_without_a_burn_show_nothing_of_it():
    data = data_of(nbgen.make_result(n_gpus=2))
    assert families.module("burn").figures(data) == [] and families.module("burn").checklist_items(data) == []


# ----------------------------------------------------------------------------------------------
# scripts/dev/peers/burn_peer_summary.py: reading gpu-burn's progress lines (as its source prints them)

def _script():
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "scripts" / "dev" / "peers" / "burn_peer_summary.py"
    spec = importlib.util.spec_from_file_location("burn_peer_summary", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_gpu_burn_rates_are_the_second_halfs_per_gpu_means(tmp_path):
    s = _script()
    log = tmp_path / "1-peer.log"
    log.write_text("\r10.0%  proc'd: 100 (40000 Gflop/s) - 90 (39000 Gflop/s)   errors: 0 - 0   temps: 50 C - 51 C "
                   "\r60.0%  proc'd: 700 (50000 Gflop/s) - 690 (48000 Gflop/s)   errors: 0 - 0   temps: 60 C - 61 C "
                   "\n\tSummary at:   Sun Dec  6\n\n"
                   "\r90.0%  proc'd: 900 (52000 Gflop/s) - 880 (46000 Gflop/s)   errors: 0 - 2  (WARNING!)   temps: 62 C - 63 C "
                   "\nTested 2 GPUs:\n\tGPU 0: OK\n\tGPU 1: FAULTY\n")
    got = s.parse_peer_log(str(log))
    # TFLOPS: the readings at 60% and 90% only; the 10% one is before the second half.
    assert got[0]["sustained_tflops"] == 51.0 and got[1]["sustained_tflops"] == 47.0
    assert got[0]["reports_in_window"] == 2
    assert (got[0]["max_errors_in_a_report"], got[1]["max_errors_in_a_report"]) == (0, 2)
    assert (got[0]["verdict"], got[1]["verdict"]) == ("OK", "FAULTY")


def test_peer_power_is_the_second_half_of_the_loaded_stretch(tmp_path):
    s = _script()
    csv = tmp_path / "1-peer-power.csv"
    # Idle while gpu-burn allocates, six loaded seconds, idle again while it frees: the window is the
    # loaded stretch's second half (690, 700, 700), never the idle tail.
    watts = [80, 75, 400, 600, 650, 690, 700, 700, 300, 75, 74, 74, 74, 74]
    csv.write_text("".join(f"2026/12/06 22:00:{i:02d}.000, 0, {w}.0, 700.00, 1980, 60, 0x0\n" for i, w in enumerate(watts))
                   + "[N/A], garbage line\n")
    got = s.parse_power(str(csv))
    assert got[0]["loaded_samples"] == 6 and got[0]["samples_in_window"] == 3
    assert abs(got[0]["mean_power_w"] - (690 + 700 + 700) / 3) < 1e-9 and got[0]["power_limit_w"] == 700.0
