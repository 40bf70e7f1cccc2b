"""scripts/dev/peer_torch_train.py's interval union and compare_train_peer.py's verdicts, on synthetic
files, against expectations worked out here."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

DEV = Path(__file__).resolve().parents[2] / "scripts" / "dev"


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
