"""scripts/dev/device/peak_wgmma_table.py (the GPU session's peak-wgmma table) on synthetic records and
independent-kernel output: the reference is the best of cuBLAS's APIs and of the independent runs,
and a unit fails below the ratio, when missing, or when a check failed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "dev" / "device" / "peak_wgmma_table.py"
UNITS = [("fp16", "tflops"), ("bf16", "tflops"), ("tf32", "tflops"), ("int8", "tops"), ("fp8", "tflops")]


def gemm_doc(rates):
    recs = []
    for (prec, metric), (lt, cb) in zip(UNITS, rates):
        recs.append({"id": f"gemm/{prec}/cublaslt/square_8192", "status": "ok", "metrics": {metric: lt}})
        if cb is not None:
            recs.append({"id": f"gemm/{prec}/cublas/square_8192", "status": "ok", "metrics": {metric: cb}})
        recs.append({"id": f"gemm/{prec}/cublaslt/square_4096", "status": "ok", "metrics": {metric: 10 * lt}})  # not 8192
    return {"records": recs}


def peak_doc(rates, bad_check=None, skipped=None):
    recs = []
    for (prec, metric), v in zip(UNITS, rates):
        r = {"id": f"peak/mma_{prec}", "status": "ok", "metrics": {metric: v, "sm_clock_mhz": 1755.0},
             "details": {"instruction": "wgmma", "verification": {"ok": prec != bad_check}}}
        if prec == skipped:
            r = {"id": r["id"], "status": "skipped", "reason": "not built for sm_90a", "metrics": {}}
        recs.append(r)
    return {"records": recs}


def run(tmp_path, gemm, peak, indep_texts, *extra):
    (tmp_path / "g.json").write_text(json.dumps(gemm))
    (tmp_path / "p.json").write_text(json.dumps(peak))
    files = []
    for i, t in enumerate(indep_texts):
        f = tmp_path / f"i{i}.txt"
        f.write_text(t)
        files.append(str(f))
    out = tmp_path / "ratio.json"
    p = subprocess.run([sys.executable, str(SCRIPT), "--gemm", str(tmp_path / "g.json"), "--peak", str(tmp_path / "p.json"),
                        "--independent", *files, "--out", str(out), *extra], capture_output=True, text=True)
    rows = json.loads(out.read_text())["rows"] if out.exists() else None
    return p, rows


def indep(rates, failed=()):
    lines = []
    for (prec, metric), v in zip(UNITS, rates):
        unit = "TOPS" if metric == "tops" else "TFLOPS"
        lines.append(f"wgmma_{prec}  {v:8.1f} {unit}  (... check {'FAILED' if prec in failed else 'ok'})")
    return "\n".join(lines) + "\n"


GEMM = [(600.0, 610.0), (620.0, None), (300.0, 310.0), (1200.0, None), (1300.0, None)]


def test_ratio_is_against_the_best_of_cublas_and_both_independent_runs(tmp_path):
    p, rows = run(tmp_path, gemm_doc(GEMM), peak_doc([640.0, 650.0, 325.0, 1500.0, 1470.0]),
                  [indep([630.0, 600.0, 330.0, 1400.0, 1500.0]), indep([650.0, 640.0, 300.0, 1450.0, 1480.0])])
    assert p.returncode == 0, p.stdout + p.stderr
    by = {r["unit"]: r for r in rows}
    assert by["fp16"]["cublas"] == 610.0 and by["fp16"]["ratio"] == 640.0 / 650.0   # independent best of two runs
    assert by["bf16"]["ratio"] == 650.0 / 640.0                                       # cuBLAS 620 < independent 640
    assert by["tf32"]["ratio"] == 325.0 / 330.0
    assert by["int8"]["ratio"] == 1500.0 / 1450.0
    assert by["fp8"]["ratio"] == 1470.0 / 1500.0
    assert all(r["ok"] for r in rows)
    assert "fp16" in p.stdout and "ratio" in p.stdout


def test_below_the_ratio_fails_and_says_which(tmp_path):
    # TF32 at 0.95 of the independent kernel: below 0.97.
    p, rows = run(tmp_path, gemm_doc(GEMM), peak_doc([640.0, 650.0, 0.95 * 330.0, 1500.0, 1500.0]),
                  [indep([630.0, 600.0, 330.0, 1400.0, 1500.0])])
    assert p.returncode == 1
    bad = [r["unit"] for r in rows if not r["ok"]]
    assert bad == ["tf32"]
    assert "FAIL" in p.stdout
    # The same figures pass a looser bound.
    p, _ = run(tmp_path, gemm_doc(GEMM), peak_doc([640.0, 650.0, 0.95 * 330.0, 1500.0, 1500.0]),
               [indep([630.0, 600.0, 330.0, 1400.0, 1500.0])], "--min-ratio", "0.9")
    assert p.returncode == 0


def test_failed_checks_and_skipped_cases_fail(tmp_path):
    p, rows = run(tmp_path, gemm_doc(GEMM), peak_doc([640.0, 650.0, 330.0, 1500.0, 1500.0], bad_check="int8", skipped="fp8"),
                  [indep([630.0, 600.0, 330.0, 1400.0, 1500.0], failed=("bf16",))])
    assert p.returncode == 1
    by = {r["unit"]: r for r in rows}
    assert not by["int8"]["ok"] and "all-ones" in by["int8"]["problems"][0]
    assert not by["fp8"]["ok"] and by["fp8"]["peak"] is None
    assert not by["bf16"]["ok"] and "independent" in by["bf16"]["problems"][0]
    assert by["fp16"]["ok"] and by["tf32"]["ok"]


def test_unreadable_input_exits_2(tmp_path):
    (tmp_path / "g.json").write_text("{not json")
    (tmp_path / "p.json").write_text("{}")
    (tmp_path / "i.txt").write_text("")
    p = subprocess.run([sys.executable, str(SCRIPT), "--gemm", str(tmp_path / "g.json"), "--peak", str(tmp_path / "p.json"),
                        "--independent", str(tmp_path / "i.txt")], capture_output=True, text=True)
    assert p.returncode == 2
    assert "peak_wgmma_table" in p.stderr
