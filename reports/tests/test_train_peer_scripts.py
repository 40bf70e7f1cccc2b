"""scripts/dev/peers/peer_torch_train.py's interval union, PyTorch-mode parsing, --between command and
round summary, and compare_train_peer.py's verdicts, every-mode comparison and best-of-each-side
table, on synthetic files, against expectations worked out here."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

DEV = Path(__file__).resolve().parents[2] / "scripts" / "dev" / "peers"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, DEV / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("intervals, expected", [
    ([], 0.0),
    ([(0, 10)], 10.0),
    ([(0, 10), (5, 12)], 12.0),          # overlap counted once
    ([(20, 30), (0, 10)], 20.0),         # unsorted, disjoint
    ([(0, 10), (2, 3), (10, 15)], 15.0),  # nested, then touching
])
def test_union_of_gpu_intervals(intervals, expected):
    assert _load("peer_torch_train").union_us(intervals) == pytest.approx(expected)


def _nb(path, rows):
    recs = [{"family": "train", "status": "ok", "id": f"train/resnet50/{p}/{l}/b{b}",
             "params": {"precision": p, "layout": l, "batch": b},
             "metrics": {"step_time_ms": ms, "images_per_s": b / ms * 1e3, "peak_memory_bytes": mem}}
            for p, l, b, ms, mem in rows]
    path.write_text(json.dumps({"records": recs}))
    return str(path)


def _peer(path, mode, rows):
    res = []
    for b, ms, mem, busy in rows:
        r = {"batch": b, "step_time_ms": ms, "images_per_s": b / ms * 1e3, "max_memory_allocated_bytes": mem}
        if busy is not None:
            r["gpu_busy_ms"] = busy
        res.append(r)
    path.write_text(json.dumps({"mode": mode, "results": res}))
    return str(path)


def _compare(tmp_path, nb_rows, peer_rows):
    out = tmp_path / "ratio.json"
    cmd = [sys.executable, str(DEV / "compare_train_peer.py"), _nb(tmp_path / "nb.json", nb_rows),
           "--peer", _peer(tmp_path / "pt.json", "fp16/nhwc", peer_rows), "--out", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, {t["batch"]: t for t in json.loads(out.read_text())["pairs"]}, p.stdout


def test_much_faster_step_explained_by_a_host_bound_peer_passes(tmp_path):
    # 13.8 ms against a 22.2 ms PyTorch step (ratio 0.62 < 1/1.3) whose GPU worked 14.0 ms of it.
    rc, t, out = _compare(tmp_path, [("fp16", "nhwc", 64, 13.8, 3.3e9)], [(64, 22.2, 3.0e9, 14.0)])
    row = t[64]
    assert row["step_time_ratio"] == pytest.approx(13.8 / 22.2)
    assert row["gpu_busy_ratio"] == pytest.approx(13.8 / 14.0)
    assert row["step_ok"] is False and row["pytorch_host_bound"] is True
    assert rc == 0 and "HOST" in out


def test_much_faster_step_with_a_busy_peer_gpu_fails(tmp_path):
    # Same step ratio, but PyTorch's GPU was busy 21 ms: nodebench does less GPU work -> STEP.
    rc, t, out = _compare(tmp_path, [("fp16", "nhwc", 64, 13.8, 3.3e9)], [(64, 22.2, 3.0e9, 21.0)])
    assert t[64]["pytorch_host_bound"] is False
    assert rc == 1 and "STEP" in out


def test_without_busy_figures_the_plain_bounds_apply(tmp_path):
    rc, t, _ = _compare(tmp_path, [("fp16", "nhwc", 64, 13.8, 3.3e9), ("fp16", "nhwc", 256, 49.1, 12.3e9)],
                        [(64, 22.2, 3.0e9, None), (256, 44.8, 11.0e9, None)])
    assert t[64]["gpu_busy_ratio"] is None and t[64]["pytorch_host_bound"] is False
    assert t[256]["step_ok"] is True and t[256]["memory_ratio"] == pytest.approx(12.3 / 11.0)
    assert rc == 1  # b64 is still more than 1.3x faster, unexplained


def test_memory_outside_bound_fails_even_when_step_is_fine(tmp_path):
    rc, t, out = _compare(tmp_path, [("fp16", "nhwc", 128, 25.0, 9.0e9)], [(128, 25.0, 6.0e9, 24.0)])
    assert t[128]["step_ok"] is True and t[128]["memory_ok"] is False
    assert rc == 1 and "MEMORY" in out


@pytest.mark.parametrize("batch, lr", [(1, 0.1 / 256), (32, 0.0125), (51, 0.1 * 51 / 256), (52, 0.02), (4096, 0.02)])
def test_peer_learning_rate_follows_the_linear_rule_capped(batch, lr):
    assert _load("peer_torch_train").sgd_lr_for_batch(batch) == pytest.approx(lr)


# ---- every PyTorch mode, the fused and unfused nodebench step, the best of each side ------------

def _nb_records(rows):
    """rows: (precision, layout, batch, ms, peak, setting or None)"""
    recs = []
    for p, l, b, ms, mem, setting in rows:
        r = {"family": "train", "status": "ok", "id": f"train/resnet50/{p}/{l}/b{b}",
             "params": {"precision": p, "layout": l, "batch": b},
             "metrics": {"step_time_ms": ms, "images_per_s": b / ms * 1e3, "peak_memory_bytes": mem}}
        if setting is not None:
            r["details"] = {"fusion": {"setting": setting}}
        recs.append(r)
    return recs


def _peer_modes(path, mode, rows):
    """rows: (batch, torch_mode or None, [round medians], max_memory_allocated[, max_memory_reserved])"""
    res = []
    for b, tm, runs, mem, *reserved in rows:
        r = {"batch": b, "step_time_ms": sorted(runs)[len(runs) // 2], "runs": runs, "max_memory_allocated_bytes": mem}
        if tm is not None:
            r["torch_mode"] = tm
        if reserved:
            r["max_memory_reserved_bytes"] = reserved[0]
        res.append(r)
    path.write_text(json.dumps({"mode": mode, "results": res}))
    return str(path)


def _run(tmp_path, nb_files, peer_files):
    out = tmp_path / "ratio.json"
    cmd = [sys.executable, str(DEV / "compare_train_peer.py"), *nb_files, "--peer", *peer_files, "--out", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, json.loads(out.read_text()) if out.exists() else None, p.stdout


def test_every_mode_the_fastest_and_the_ratio_to_it(tmp_path):
    nb = tmp_path / "nb.json"
    nb.write_text(json.dumps({"records": _nb_records([("fp16", "nhwc", 256, 36.0, 10e9, "1"),
                                                      ("fp16", "nhwc", 256, 49.0, 11e9, "0")])}))
    pt = _peer_modes(tmp_path / "pt.json", "fp16/nhwc", [(256, "eager", [44.0], 9e9), (256, "compile", [38.0], 8e9),
                                                         (256, "reduce-overhead", [40.0], 0.5e9, 12e9)])
    rc, doc, out = _run(tmp_path, [str(nb)], [pt])
    t = doc["pairs"][0]
    assert t["nodebench_setting"] == "1" and t["nodebench_step_ms"] == 36.0
    assert t["nodebench_step_ms_by_setting"] == {"1": 36.0, "0": 49.0}
    assert t["pytorch_fastest_mode"] == "compile" and t["pytorch_step_ms"] == 38.0
    assert t["ratio_to_fastest"] == pytest.approx(38.0 / 36.0)
    assert t["step_time_ratio"] == pytest.approx(36.0 / 38.0)
    assert t["memory_ratio"] == pytest.approx(10 / 8)  # against the fastest mode's memory
    # reduce-overhead by its reserved memory (its CUDA graph's pool), not its 0.5 GB allocated.
    assert t["memory_ratio_by_mode"] == pytest.approx({"eager": 10 / 9, "compile": 10 / 8, "reduce-overhead": 10 / 12})
    assert t["memory_ratio_to_smallest"] == pytest.approx(10 / 8)
    assert set(t["pytorch_modes"]) == {"eager", "compile", "reduce-overhead"}
    assert rc == 0 and "compile" in out and "best of each side" in out.splitlines()[-3]


def test_rounds_and_files_pool_into_one_median_per_mode(tmp_path):
    nb = tmp_path / "nb.json"
    nb.write_text(json.dumps({"records": _nb_records([("fp16", "nhwc", 64, 13.0, 3e9, "1"),
                                                      ("fp16", "nhwc", 64, 14.0, 3e9, "1"),
                                                      ("fp16", "nhwc", 64, 12.0, 3e9, "1")])}))
    a = _peer_modes(tmp_path / "a.json", "fp16/nhwc", [(64, "eager", [26.0, 24.0], 3e9)])
    b = _peer_modes(tmp_path / "b.json", "fp16/nhwc", [(64, None, [25.5], 3e9)])  # an old file: eager
    _, doc, _ = _run(tmp_path, [str(nb)], [a, b])
    t = doc["pairs"][0]
    assert t["nodebench_step_ms"] == 13.0  # the median of 13, 14, 12
    assert sorted(t["pytorch_step_ms_runs"]) == [24.0, 25.5, 26.0]
    assert t["pytorch_step_ms"] == 25.5


def test_records_before_fusion_count_as_unfused(tmp_path):
    nb = tmp_path / "nb.json"
    nb.write_text(json.dumps({"records": _nb_records([("tf32", "nchw", 256, 116.0, 26e9, None)])}))
    pt = _peer_modes(tmp_path / "pt.json", "tf32/nchw", [(256, "eager", [116.5], 22e9)])
    _, doc, _ = _run(tmp_path, [str(nb)], [pt])
    assert doc["pairs"][0]["nodebench_setting"] == "0"


def test_best_takes_nodebench_faster_layout_against_pytorch_fastest_mode(tmp_path):
    nb = tmp_path / "nb.json"
    nb.write_text(json.dumps({"records": _nb_records([("tf32", "nchw", 256, 60.0, 20e9, "1"),
                                                      ("tf32", "nhwc", 256, 55.0, 21e9, "1")])}))
    nchw = _peer_modes(tmp_path / "p1.json", "tf32/nchw", [(256, "eager", [116.0], 22e9), (256, "compile", [66.0], 20e9)])
    _, doc, _ = _run(tmp_path, [str(nb)], [nchw])
    assert len(doc["pairs"]) == 1  # PyTorch ran NCHW only; nodebench's NHWC still counts for the best
    (b,) = doc["best"]
    assert (b["nodebench_layout"], b["nodebench_step_ms"]) == ("nhwc", 55.0)
    assert (b["pytorch_layout"], b["pytorch_mode"], b["pytorch_step_ms"]) == ("nchw", "compile", 66.0)
    assert b["ratio_to_fastest"] == pytest.approx(66.0 / 55.0)
    assert b["nodebench_step_ms_by_layout"] == {"nchw": 60.0, "nhwc": 55.0}
    assert b["memory_ratio"] == pytest.approx(21 / 20)
    assert b["nodebench_images_per_s"] == pytest.approx(256 / 0.055)


@pytest.mark.parametrize("text, expected", [("eager", ["eager"]), ("compile,reduce-overhead", ["compile", "reduce-overhead"]),
                                            (" eager , compile,eager", ["eager", "compile"])])
def test_peer_torch_modes_parse(text, expected):
    assert _load("peer_torch_train").parse_torch_modes(text) == expected


@pytest.mark.parametrize("text", ["", "eager,jit", "max-autotune"])
def test_peer_torch_modes_reject(text):
    with pytest.raises(ValueError):
        _load("peer_torch_train").parse_torch_modes(text)


def test_peer_between_command_and_round_summary():
    m = _load("peer_torch_train")
    assert m.between_command("nb --filter b{batch} --out x_{torch_mode}_{round}.json", 256, "compile", 1) == \
        "nb --filter b256 --out x_compile_1.json"
    with pytest.raises(ValueError, match="unknown placeholder"):
        m.between_command("nb {mode}", 1, "eager", 1)
    s = m.summarize(128, "reduce-overhead", [30.0, 28.0, 29.0], 90, 5e9, 0.01)
    assert s["step_time_ms"] == 29.0 and s["runs"] == [30.0, 28.0, 29.0]
    assert s["images_per_s"] == pytest.approx(128 / 0.029)
    assert s["torch_mode"] == "reduce-overhead" and s["max_memory_allocated_bytes"] == 5e9


# ---- the memory a CUDA-graph mode holds ----------------------------------------------------------

def test_a_graph_modes_allocated_counter_is_not_its_memory(tmp_path):
    # reduce-overhead fastest, with only max_memory_allocated (0.47 GB: its graph's pool left out):
    # judged against the largest memory of the modes that have one (eager's), not against 0.47 GB.
    nb = tmp_path / "nb.json"
    nb.write_text(json.dumps({"records": _nb_records([("fp16", "nhwc", 256, 33.0, 11.0e9, "1")])}))
    pt = _peer_modes(tmp_path / "pt.json", "fp16/nhwc", [(256, "eager", [45.7], 11.8e9), (256, "compile", [40.7], 11.3e9),
                                                         (256, "reduce-overhead", [39.7], 0.47e9)])
    rc, doc, _ = _run(tmp_path, [str(nb)], [pt])
    t = doc["pairs"][0]
    assert t["pytorch_fastest_mode"] == "reduce-overhead"
    assert (t["pytorch_memory_mode"], t["pytorch_memory_source"]) == ("eager", "max_memory_allocated_bytes")
    assert t["memory_ratio"] == pytest.approx(11.0 / 11.8) and t["memory_ok"] is True
    assert t["memory_ratio_by_mode"]["reduce-overhead"] is None
    assert t["pytorch_modes"]["reduce-overhead"]["memory_source"].startswith("no max_memory_reserved_bytes")
    assert t["memory_ratio_to_smallest"] == pytest.approx(11.0 / 11.3)
    assert rc == 0


def test_a_graph_mode_with_its_reserved_memory_is_judged_by_it(tmp_path):
    nb = tmp_path / "nb.json"
    nb.write_text(json.dumps({"records": _nb_records([("fp16", "nhwc", 256, 33.0, 11.0e9, "1")])}))
    pt = _peer_modes(tmp_path / "pt.json", "fp16/nhwc", [(256, "eager", [45.7], 11.8e9),
                                                         (256, "reduce-overhead", [39.7], 0.47e9, 12.6e9)])
    _, doc, _ = _run(tmp_path, [str(nb)], [pt])
    t = doc["pairs"][0]
    assert (t["pytorch_memory_mode"], t["pytorch_memory_source"]) == ("reduce-overhead", "max_memory_reserved_bytes")
    assert t["pytorch_memory_bytes"] == 12.6e9 and t["memory_ratio"] == pytest.approx(11.0 / 12.6)
    (b,) = doc["best"]
    assert b["memory_ratio"] == pytest.approx(11.0 / 12.6)


def test_peer_records_reserved_and_device_memory():
    m = _load("peer_torch_train")
    s = m.summarize(256, "reduce-overhead", [40.0], 50, 0.47e9, 0.02, reserved=12.6e9, used_delta=13.1e9)
    assert s["max_memory_reserved_bytes"] == 12.6e9 and s["device_used_delta_bytes"] == 13.1e9
    assert "max_memory_reserved_bytes" not in m.summarize(256, "eager", [40.0], 50, 1e9, 0.02)
