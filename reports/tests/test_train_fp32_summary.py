"""scripts/dev/device/train_fp32_summary.py (issue 40's GPU session tables) on synthetic files:
the algorithm names, the per-kind profile of the ok records, the rows from compare_train_peer's
pairs, and the printed tables, against expectations worked out here."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

DEV = Path(__file__).resolve().parents[2] / "scripts" / "dev" / "device"


def _load():
    spec = importlib.util.spec_from_file_location("train_fp32_summary", DEV / "train_fp32_summary.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _record(status, bn, conv, algos, warning=None):
    details = {"algorithms": algos, "profile_sum_ms": bn + conv, "bn_traffic": {"gbps_at_time_bn": 100.0 * bn}}
    if warning:
        details["profile_warning"] = warning
    return {"family": "train", "status": status, "params": {"precision": "fp32", "layout": "nchw", "batch": 64},
            "metrics": {"time_bn_ms": bn, "time_conv_ms": conv}, "details": details}


ALGOS = [{"layer": "conv1", "fwd_algo": 1, "bwd_filter_algo": 0},
         {"layer": "l1_b1_conv2", "fwd_algo": 6, "bwd_filter_algo": 5, "bwd_data_algo": 4},
         {"layer": "l1_b1_conv3", "fwd_algo": 5, "bwd_filter_algo": 6, "bwd_data_algo": 3},
         {"layer": "l2", "fwd_algo": 1, "bwd_filter_algo": 9, "bwd_data_algo": 1}]


def test_algorithm_names_per_pass():
    m = _load()
    counts = m.algorithm_counts([_record("ok", 1, 2, ALGOS)])
    assert counts["fwd"] == {"implicit_precomp_gemm": 2, "winograd": 1, "fft_tiling": 1}
    assert counts["bwd_filter"] == {"algo_0": 1, "winograd_nonfused": 1, "fft_tiling": 1, "algo 9": 1}
    assert counts["bwd_data"] == {"winograd": 1, "fft_tiling": 1, "algo_1": 1}  # the stem has no data gradient
    assert m.algorithm_counts([_record("wrong", 1, 2, ALGOS)]) == {}


def test_profile_medians_of_ok_records_only():
    m = _load()
    recs = [_record("ok", 10.0, 40.0, ALGOS), _record("ok", 12.0, 44.0, ALGOS, "does not add up"),
            _record("wrong", 99.0, 99.0, ALGOS)]
    p = m.profile_of(recs)
    assert (p["records"], p["ok"]) == (3, 2)
    assert p["time_bn_ms"] == 11.0 and p["time_conv_ms"] == 42.0
    assert p["bn_gbps"] == 1100.0  # the median of 1000 and 1200, the wrong record's left out
    assert p["profile_warnings"] == ["does not add up"]
    assert p["statuses"] == ["ok", "wrong"]


def test_rows_and_tables(tmp_path, capsys):
    m = _load()
    pair = {"precision": "fp32", "layout": "nchw", "batch": 64, "nodebench_step_ms": 50.0,
            "nodebench_step_ms_runs": [50.0, 51.0], "pytorch_fastest_mode": "compile", "ratio_to_fastest": 0.9,
            "memory_ratio_to_smallest": 0.8,
            "pytorch_modes": {"eager": {"step_time_ms": 60.0}, "compile": {"step_time_ms": 45.0}}}
    rows = m.step_rows({"pairs": [pair]}, {("fp32", "nchw", 64, "nchw"): [_record("ok", 10.0, 30.0, ALGOS)]})
    assert rows[0]["case"] == "fp32/nchw/b64"
    assert rows[0]["conv_layout"] == "nchw"  # a pair and records from before details.conv_layout: the case's layout
    assert rows[0]["pytorch_ms"] == {"eager": 60.0, "compile": 45.0}
    assert rows[0]["profile"]["time_bn_ms"] == 10.0
    bn = {"reference_gbps": 3000.0, "reference": "copy",
          "step": [{"layout": "nchw", "batch": 64, "all": {"ratio": 0.85},
                    **{p: {"ratio": 0.9, "worst_ratio": 0.7, "worst_shape": "64x3136"} for p in m.PASSES}}]}
    m.print_tables(rows, bn)
    out = capsys.readouterr().out
    assert "fp32/nchw/b64" in out and " 0.900" in out and "compile" in out
    assert "winograd" in out  # the FP32 NCHW algorithms line
    assert "0.900 / 0.700 64x3136" in out and "3000 GB/s" in out
    # The files as the session writes them, through main.
    (tmp_path / "cmp.json").write_text(json.dumps({"pairs": [pair]}))
    (tmp_path / "nb.json").write_text(json.dumps({"records": [_record("ok", 10.0, 30.0, ALGOS)]}))
    (tmp_path / "bn.json").write_text(json.dumps(bn))
    assert m.main(["--compare", str(tmp_path / "cmp.json"), "--nodebench", str(tmp_path / "nb.json"),
                   "--bn", str(tmp_path / "bn.json"), "--out", str(tmp_path / "s.json")]) == 0
    assert json.loads((tmp_path / "s.json").read_text())["steps"][0]["ratio_to_fastest"] == 0.9
    assert m.main(["--compare", str(tmp_path / "missing.json")]) == 2


def test_conv_layout_per_row_and_group(tmp_path, capsys):
    """Two groups of the same case (conv layout auto: nhwc; forced to the images' nchw): one row
    each, with its own records' profile, and the conv column printed."""
    m = _load()

    def rec(conv, bn):
        r = _record("ok", bn, 30.0, ALGOS)
        r["params"]["precision"], r["params"]["batch"] = "tf32", 256
        r["details"]["conv_layout"] = conv
        return r

    def pair(conv, ms):
        return {"precision": "tf32", "layout": "nchw", "batch": 256, "nodebench_step_ms": ms,
                "nodebench_conv_layout": conv, "pytorch_fastest_mode": "compile", "ratio_to_fastest": 80.0 / ms,
                "pytorch_modes": {"compile": {"step_time_ms": 80.0}}}

    by_case = m.records_by_case([])
    assert by_case == {}
    (tmp_path / "nb.json").write_text(json.dumps({"records": [rec("nhwc", 20.0), rec("nchw", 35.0)]}))
    by_case = m.records_by_case([str(tmp_path / "nb.json")])
    assert set(by_case) == {("tf32", "nchw", 256, "nhwc"), ("tf32", "nchw", 256, "nchw")}
    rows = m.step_rows([{"pairs": [pair("nhwc", 78.0)]}, {"pairs": [pair("nchw", 99.0)]}], by_case)
    assert [r["conv_layout"] for r in rows] == ["nhwc", "nchw"]
    assert [r["profile"]["time_bn_ms"] for r in rows] == [20.0, 35.0]
    m.print_tables(rows, None)
    out = capsys.readouterr().out
    assert "tf32/nchw/b256   nhwc" in out and "tf32/nchw/b256   nchw" in out
    (tmp_path / "a.json").write_text(json.dumps({"pairs": [pair("nhwc", 78.0)]}))
    (tmp_path / "b.json").write_text(json.dumps({"pairs": [pair("nchw", 99.0)]}))
    assert m.main(["--compare", str(tmp_path / "a.json"), "--compare", str(tmp_path / "b.json"),
                   "--nodebench", str(tmp_path / "nb.json"), "--out", str(tmp_path / "s.json")]) == 0
    steps = json.loads((tmp_path / "s.json").read_text())["steps"]
    assert [(s["conv_layout"], s["nodebench_ms"]) for s in steps] == [("nhwc", 78.0), ("nchw", 99.0)]
