"""The analyses of generated result files (nbgen.py), computed from their records as the harness does
(train_recommendation, batch_recommendation, fp16_vs_fp32), so that the fixtures carry them as real files
do; the report reads them and never computes them again."""

from __future__ import annotations

GPU_MEMORY = 150_754_820_096   # an H200's, as nbgen's environment says

# ----------------------------------------------------------------------------------------------
# The analyses the harness writes at the end of a run (harness/bench/analysis.cpp and the families'
# AnalysisRegistrars), computed here from the generated records as the harness does, so that the
# fixtures carry them as real files do; the report reads them and never computes them again.


def train_analysis(records: list) -> list:
    series: dict = {}
    for r in records:
        if r["family"] == "train":
            p = r["params"]
            series.setdefault((r["gpus"][0], p["precision"], p["layout"]), []).append(r)
    out = []
    for (g, prec, layout), recs in sorted(series.items()):
        ok = sorted((r for r in recs if r["status"] == "ok"), key=lambda r: r["params"]["batch"])
        plateau = max(r["metrics"]["images_per_s"] for r in ok)
        fast = next(r for r in ok if r["metrics"]["images_per_s"] >= 0.95 * plateau)
        big = [r for r in ok if r["metrics"]["memory_fraction_x"] <= 0.9][-1]
        pick = fast if fast["params"]["batch"] <= big["params"]["batch"] else big
        steps = -(-256 // big["params"]["batch"])
        out.append({"gpu": g, "precision": prec, "layout": layout, "batch": pick["params"]["batch"],
                    "reason": "smallest batch at >= 95% of the plateau, within 90% of device memory",
                    "memory_batch": big["params"]["batch"],
                    "memory_batch_fraction": big["metrics"]["memory_fraction_x"],
                    "memory_fraction": pick["metrics"]["memory_fraction_x"], "memory_fraction_limit": 0.9,
                    "images_per_s": pick["metrics"]["images_per_s"], "global_batch": 256,
                    "accumulation_steps": steps, "micro_batch": -(-256 // steps),
                    "accumulation_reason": f"{steps} accumulation steps reach global batch 256"})
    return out


def batch_analysis(records: list) -> list:
    """analysis.batch_recommendation: per GPU, precision and layout of the network conv cases, the batch of
    the best training images/s (a simpler pick than the harness's plateau rule: the report only reads it)."""
    series: dict = {}
    for r in records:
        p = r["params"]
        if r["family"] == "conv" and p.get("layer") == "resnet50_total" and len(r["gpus"]) == 1:
            series.setdefault((r["gpus"][0], p["precision"], p.get("layout", "")), []).append(r)
    out = []
    for (g, prec, layout), recs in sorted(series.items()):
        ok = [r for r in recs if r["status"] == "ok"]
        oom = [r["params"]["batch"] for r in recs if r["status"] == "skipped"]
        e = {"gpu": g, "precision": prec, "layout": layout, "memory_fraction_limit": 0.9, "plateau_share": 0.95}
        if oom:
            e["smallest_batch_out_of_memory"] = min(oom)
        if not ok:
            out.append(dict(e, batch=None, reason="no batch size fit in memory"))
            continue
        best = max(ok, key=lambda r: r["metrics"]["train_images_per_s"])
        m = best["metrics"]
        out.append(dict(e, batch=best["params"]["batch"], train_images_per_s=m["train_images_per_s"],
                        memory_fraction=m["peak_memory_bytes"] / GPU_MEMORY, peak_memory_bytes=m["peak_memory_bytes"],
                        plateau_images_per_s=m["train_images_per_s"], plateau_batch=best["params"]["batch"],
                        reason=f"batch {best['params']['batch']}: the best training images/s measured"))
    return out


def _best(records: list, gpu: int, family: str, metric: str, **params) -> float | None:
    vals = [r["metrics"][metric] for r in records if r["family"] == family and r["status"] == "ok"
            and r["gpus"] == [gpu] and metric in r["metrics"] and all(r["params"].get(k) == v for k, v in params.items())]
    return max(vals) if vals else None


def fp16_analysis(records: list, gpus: list) -> list:
    """analysis.fp16_vs_fp32 as the harness writes it: one entry per GPU of the run; rows from GEMM (the
    largest square size with both precisions, best API), the network convolutions and the training step;
    the verdict from the best GEMM speedup, else the training step, else the convolutions (pays from 1.5x)."""
    out = []
    for gpu in gpus:
        g, rows = gpu["index"], []
        sizes = sorted({r["params"]["m"] for r in records if r["family"] == "gemm" and r["params"].get("shape") == "square"})
        for n in reversed(sizes):
            a = _best(records, g, "gemm", "tflops", precision="fp32", shape="square", m=n)
            b = _best(records, g, "gemm", "tflops", precision="fp16", shape="square", m=n)
            if a and b:
                rows.append({"source": f"gemm {n}^3: fp16 / fp32", "kind": "gemm", "fp32": a, "fp16": b, "speedup_x": b / a})
                i8 = _best(records, g, "gemm", "tops", precision="int8", shape="square", m=n)
                if i8:
                    rows.append({"source": f"gemm {n}^3: int8 / fp32", "kind": "int8", "fp32": a, "int8": i8,
                                 "speedup_x": i8 / a})
                break
        for family, metric, label in (("conv", "train_images_per_s", "conv (network, training images/s)"),
                                      ("train", "images_per_s", "train (ResNet-50 step, images/s)")):
            a, b = _best(records, g, family, metric, precision="fp32"), _best(records, g, family, metric, precision="fp16")
            if a and b:
                rows.append({"source": f"{label}: fp16 / fp32", "kind": family, "fp32": a, "fp16": b, "speedup_x": b / a})
        entry = {"gpu": g, "name": gpu["name"], "compute_capability": gpu["compute_capability"], "rows": rows}
        judged = next(([r for r in rows if r["kind"] == k] for k in ("gemm", "train", "conv")
                       if any(r["kind"] == k for r in rows)), [])
        if not judged:
            entry.update(verdict="not_measured",
                         reason="no FP16 and FP32 results to compare on this GPU (run the gemm or peak family)")
        else:
            best = max(judged, key=lambda r: r["speedup_x"])
            pays = best["speedup_x"] >= 1.5
            entry.update(verdict="pays" if pays else "does_not_pay",
                         reason=f"FP16 runs {best['speedup_x']:.2f}x as fast as FP32 ({best['source']})")
            if not pays:
                entry["recommendation"] = "train and infer in FP32"
        out.append(entry)
    return out


def analysis_of(records: list, gpus: list) -> dict:
    """The analyses a run of these records has, keyed as in the result file (absent when none applies)."""
    out: dict = {}
    families = {r["family"] for r in records}
    if "train" in families:
        out["train_recommendation"] = train_analysis(records)
    if any(r["family"] == "conv" and r["params"].get("layer") == "resnet50_total" for r in records):
        out["batch_recommendation"] = batch_analysis(records)
    if families & {"gemm", "peak", "conv"}:
        out["fp16_vs_fp32"] = fp16_analysis(records, gpus)
    return out
