#!/usr/bin/env python3
"""GPU test of the train family: runs `nodebench run` with the given arguments into a fresh
folder and checks the one result file: it validates against the schema, at least one train
record is ok, and every ok train record was verified (sampled conv and FC outputs, the loss
finite and falling over its 20 steps on the fixed batch), carries every metric of the family
with sane values (time per layer kind adding up to about the step, no elementwise time of its own
when the batch norms are fused, memory measured, the byte floors), says in details.fusion which
batch-norm path ran and in details.bn_traffic what the own kernels' passes move, and the file has the train_recommendation analysis.

usage: gpu_train_check.py NODEBENCH SCHEMA OUTDIR [run arguments...]
"""
import math
import pathlib
import sys

from result_check import run_one_file  # the JSON Schema, or without jsonschema the loader's checks

KINDS = ["conv", "bn", "elementwise", "pool", "fc", "loss", "update"]


def check_bn_traffic(d, m):
    """details.bn_traffic (kernels/train/bn_traffic.hpp): the layers on the own kernels as
    details.fusion counts them; per layer the stats pass moves its x once and the dx pass three
    tensors, so bwd_apply is three times fwd_stats; the passes add up to the total; with every
    batch norm on the own kernels, gbps_at_time_bn is the total over time_bn_ms."""
    t, fusion = d.get("bn_traffic") or {}, d.get("fusion") or {}
    kernels = sum(v.get("kernels", 0) for v in (fusion.get("layers") or {}).values() if isinstance(v, dict))
    passes = ("fwd_stats_bytes", "fwd_apply_bytes", "bwd_reduce_bytes", "bwd_apply_bytes")
    if t.get("batch_norm_layers") != 53 or t.get("layers") != kernels or not all(isinstance(t.get(k), (int, float)) for k in passes):
        return [f"details.bn_traffic {t} does not match details.fusion's {kernels} layers on the own kernels"]
    bad = []
    if abs(sum(t[k] for k in passes) - t["total_bytes"]) > 1e-9 * max(t["total_bytes"], 1):
        bad.append(f"details.bn_traffic passes do not add up to total_bytes: {t}")
    if t["bwd_apply_bytes"] != 3 * t["fwd_stats_bytes"] or t["fwd_apply_bytes"] < 2 * t["fwd_stats_bytes"]:
        bad.append(f"details.bn_traffic per-pass bytes inconsistent: {t}")
    if (kernels > 0) != (t["fwd_stats_bytes"] > 0):
        bad.append(f"details.bn_traffic: {kernels} layers on the own kernels, fwd_stats_bytes {t['fwd_stats_bytes']}")
    if kernels == 53:
        g = t.get("gbps_at_time_bn")
        want = t["total_bytes"] / (m["time_bn_ms"] * 1e-3) / 1e9 if m.get("time_bn_ms") else None
        if not isinstance(g, (int, float)) or want is None or abs(g - want) > 1e-6 * want:
            bad.append(f"details.bn_traffic.gbps_at_time_bn {g}, expected {want}")
    return bad


def check_record(r):
    bad = []
    m, d = r["metrics"], r["details"]
    v = d.get("verification", {})
    for part in ("conv1", "fc"):
        if v.get(part, {}).get("samples", 0) < 4 or v.get(part, {}).get("failures") != 0:
            bad.append(f"{part} not verified: {v.get(part)}")
    losses = v.get("losses", [])
    if len(losses) != 20 or not all(isinstance(x, (int, float)) and math.isfinite(x) for x in losses):
        bad.append(f"losses not 20 finite values: {losses}")
    elif not losses[-1] < losses[0] or v.get("loss_falling") is not True:
        bad.append(f"loss not falling: {losses[0]} -> {losses[-1]}")
    for k in ["step_time_ms", "images_per_s", "peak_memory_bytes", "device_used_bytes", "elementwise_share"] + \
             [f"time_{k}_ms" for k in KINDS]:
        if not isinstance(m.get(k), (int, float)) or not math.isfinite(m[k]) or m[k] < 0:
            bad.append(f"metric {k} missing or invalid: {m.get(k)}")
    if bad:
        return bad
    total = sum(m[f"time_{k}_ms"] for k in KINDS)
    if not 0.5 * m["step_time_ms"] <= total <= 2.0 * m["step_time_ms"]:
        bad.append(f"kinds add up to {total:.3f} ms, the step takes {m['step_time_ms']:.3f} ms")
    fusion = d.get("fusion") or {}
    fused = isinstance(fusion.get("fused_layers"), int) and fusion["fused_layers"] > 0
    for k in ("conv", "bn", "elementwise", "pool", "fc", "loss", "update"):
        # Fused, the ReLU and the add run inside the batch norms: nothing elementwise of its own.
        if k == "elementwise" and fused:
            if m[f"time_{k}_ms"] != 0:
                bad.append(f"time_elementwise_ms {m[f'time_{k}_ms']} with every ReLU and add fused")
        elif m[f"time_{k}_ms"] <= 0:
            bad.append(f"time_{k}_ms is zero: that kind did not run")
    # details.fusion: the setting's paths (train_fusion.hpp): 53 batch norms, 49 with a ReLU or the add.
    if fusion.get("batch_norm_layers") != 53:
        bad.append(f"details.fusion missing or not 53 batch norms: {fusion}")
    elif fused != (fusion.get("setting") != "0") or (fused and fusion["fused_layers"] != 49):
        bad.append(f"details.fusion does not match its setting: {fusion}")
    bad += check_bn_traffic(d, m)
    for k in ("bn_floor_bytes", "pool_floor_bytes", "update_floor_bytes"):
        if not isinstance(m.get(k), (int, float)) or not m[k] > 0:
            bad.append(f"metric {k} missing or not positive: {m.get(k)}")
    if not 0 < m["elementwise_share"] < 1:
        bad.append(f"elementwise_share {m['elementwise_share']}")
    if not 0 < m["peak_memory_bytes"] <= m["device_used_bytes"]:
        bad.append(f"peak_memory_bytes {m['peak_memory_bytes']} vs device_used_bytes {m['device_used_bytes']}")
    # details.memory_plan_bytes: the arena's allocations by kind add up to its peak; the planned
    # region (step_memory.hpp) needs at least the most live at one operation.
    plan = d.get("memory_plan_bytes", {})
    by_kind, region = plan.get("by_kind") or {}, plan.get("region") or {}
    if not by_kind or sum(by_kind.values()) != plan.get("total") or plan.get("total") != m["peak_memory_bytes"]:
        bad.append(f"memory_plan_bytes {plan} does not add up to the arena peak {m['peak_memory_bytes']}")
    elif not 0 < region.get("live_peak", 0) <= region.get("total", 0) == by_kind.get("region"):
        bad.append(f"memory_plan_bytes.region {region}: the region is not the planned one")
    # The step is timed as a CUDA graph; issued call by call it cannot be faster than the GPU's
    # time (10% allowed for noise), and the host's issue cost is positive.
    if not (r.get("details", {}).get("cuda_graph") or {}).get("used"):
        bad.append(f"the step was not captured as a CUDA graph: {r.get('details', {}).get('cuda_graph')}")
    for k in ("eager_step_ms", "host_issue_ms", "eager_images_per_s"):
        if not isinstance(m.get(k), (int, float)) or not m[k] > 0:
            bad.append(f"metric {k} missing or not positive: {m.get(k)}")
    if isinstance(m.get("eager_step_ms"), (int, float)) and m["eager_step_ms"] < 0.9 * m["step_time_ms"]:
        bad.append(f"eager step {m['eager_step_ms']:.3f} ms faster than the graph step {m['step_time_ms']:.3f} ms")
    if abs(m["images_per_s"] - r["params"]["batch"] / (m["step_time_ms"] / 1e3)) > 1e-6 * m["images_per_s"]:
        bad.append("images_per_s is not batch / step time")
    return bad


def check_energy(r, gpu):
    """The board's mean power over the timed iterations (metrics.board_power_w, details.energy):
    under the GPU's power limit (10% allowed for NVML's averaging) and above a tenth of it (a
    training step loads the board), read from the energy counter from compute capability 7.0 on,
    and energy = power x time."""
    bad = []
    p, e = r["metrics"].get("board_power_w"), r["details"].get("energy") or {}
    limit = gpu.get("power_limit_w")
    if not isinstance(p, (int, float)) or not math.isfinite(p):
        return [f"metric board_power_w missing: {p} (details.energy {e})"]
    if isinstance(limit, (int, float)) and not 0.1 * limit < p <= 1.1 * limit:
        bad.append(f"board_power_w {p:.1f} W implausible against the {limit:.0f} W power limit")
    want = "energy_counter" if int(str(gpu.get("compute_capability", "0.0")).split(".")[0]) >= 7 else "sampled_power"
    if e.get("method") != want:
        bad.append(f"details.energy.method {e.get('method')!r}, expected {want!r} on cc {gpu.get('compute_capability')}")
    if not (isinstance(e.get("seconds"), (int, float)) and e["seconds"] > 0 and isinstance(e.get("samples"), int)
            and e["samples"] >= 1 and isinstance(e.get("energy_j"), (int, float))
            and abs(e["energy_j"] - p * e["seconds"]) <= 1e-6 * e["energy_j"] + 1e-9):
        bad.append(f"details.energy {e} is not board_power_w x seconds")
    return bad


def main() -> int:
    exe, schema_path, outdir = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
    doc = run_one_file(exe, schema_path, outdir, sys.argv[4:], timeout=540)
    if doc is None:
        return 1
    bad, ok = [], 0
    for r in doc["records"]:
        if r["family"] != "train":
            continue
        if r["status"] == "skipped":
            if not r["reason"]:
                bad.append(f"{r['id']}: skipped without a reason")
            continue
        if r["status"] != "ok":
            bad.append(f"{r['id']}: {r['status']}: {r['reason']}")
            continue
        ok += 1
        bad += [f"{r['id']}: {b}" for b in check_record(r)]
        gpu = next((g for g in doc["environment"]["gpus"] if g["index"] == r["gpus"][0]), {})
        bad += [f"{r['id']}: {b}" for b in check_energy(r, gpu)]
    if not ok:
        bad.append("no ok train record")
    if "train_recommendation" not in doc.get("analysis", {}):
        bad.append("no train_recommendation analysis")
    for b in bad:
        print("FAIL:", b)
    print(f"{ok} ok train records checked, {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
