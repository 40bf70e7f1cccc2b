#!/usr/bin/env python3
"""Writes the P40 node fixtures (synthetic, no P40 was at hand; every field in the format nodebench
writes it, every figure from the P40's datasheet or the CUDA device properties of a GP102):

    python3 tests/data/make_p40_fixtures.py

- p40_environment.json: what `nodebench env --json` prints on a node of four Tesla P40 (cc 6.1,
  30 SMs, 24 GB, PCIe Gen3 x16) in two CPU sockets, GPUs 0-1 on socket 0 and 2-3 on socket 1,
  driver R580, CUDA 12.9 runtime, cuBLAS 12.9, cuDNN 9.10, NCCL 2.27. Captured at idle: the
  links show Gen1 (P40 links train down when idle) and the clocks are the idle ones.
- p40_doctor.json: what `nodebench doctor --json` prints on the same node (the environment plus
  the live facts: links read under load at Gen3 x16, no ECC errors, peer access within a socket
  (one PCIe switch, NVML level PIX) and none across sockets (SYS), and a binary built for sm_61).
  Its checks are left out: `doctor --from` judges the facts again.
- p40_result.json: a result file as `nodebench run --suite quick` would write it on that node
  (one sample set per case, GPU 0 for the compute and memory families, every GPU for the host
  link, the peer pairs and a four-GPU all-reduce). SYNTHETIC: the figures are plausible from public
  sources (docs/P40.md, "What a healthy P40 node shows"), not measured; `note` says so. Cases a
  P40 cannot run are skipped with the reason the families give. GEMM and convolution FP16 with FP32
  compute are taken against fp32_tflops (they run on the FP32 units below compute capability 7.0).
  The GEMMs ran at the 1303 MHz base clock a passively cooled P40 may hold at 250 W (healthy: the
  records carry percent_at_clock as the binary writes it), the peak kernels at the boost clock; the
  ResNet-50 train and conv records (FP32 NCHW, batch 64 and 128) are scaled from a GTX 1080 Ti's
  published rate, so that `nodebench advise` runs on the file. The GPUs report 23,040 MiB: ECC on.
"""
import json
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
DEVICES = json.loads((HERE.parent.parent / "harness/profiles/devices.json").read_text())
BUS = ["0000:04:00.0", "0000:05:00.0", "0000:84:00.0", "0000:85:00.0"]
P40 = next(p for p in DEVICES["profiles"] if p["name"] == "Tesla P40")
# 24 GB GDDR5 = 24,576 MiB; ECC on (as captured) reserves 1/16 of it: 23,040 MiB left to CUDA.
MEMORY_ECC_ON = int(P40["memory_mib"] * (1 - P40["ecc_memory_share"])) << 20
PINS = json.loads((HERE.parent.parent / "harness/profiles/arch_facts.json").read_text())["pins"]


def peaks_of(profile_name):
    p = next(p for p in DEVICES["profiles"] if p["name"] == profile_name)
    return {k: {"source": "profile:" + profile_name, "value": float(v)}
            for k, v in p.items()
            if isinstance(v, (int, float)) and (k.endswith("_tflops") or k.endswith("_tops") or k.endswith("_gbps"))}


def gpu(i):
    return {
        "clock_mem_max_mhz": 3615.0,
        "clock_mem_mhz": 405.0,
        "clock_sm_attribute_mhz": 1531.0,
        "clock_sm_max_mhz": 1531.0,
        "clock_sm_mhz": 544.0,
        "compute_capability": "6.1",
        "ecc_enabled": True,
        "index": i,
        "l2_bytes": 3145728,
        "memory_bytes": MEMORY_ECC_ON,
        "mig_mode": None,
        "name": "Tesla P40",
        "pci_bus_id": BUS[i],
        "pcie": {"gen_current": 1, "gen_max": 3, "theoretical_gbps": 4.0, "width_current": 16, "width_max": 16},
        "peaks": peaks_of("Tesla P40"),
        "persistence_mode": True,
        "power_limit_w": 250.0,
        "profile": "Tesla P40",
        "sm_count": 30,
        "temperature_c": 29.0 + i,
        "throttle_reasons": ["gpu_idle"],
        "uuid": "GPU-5c1f6d2e-0000-4000-8000-0000000p40%02d" % i,
    }


ENV = {
    "cuda_error": None,
    "cuda_visible_devices": None,
    "gpus": [gpu(i) for i in range(4)],
    "host": {
        "cpu_count": 80,
        "cpu_model": "Intel(R) Xeon(R) CPU E5-2698 v4 @ 2.20GHz",
        "hostname": "p40-node",
        "kernel": "Linux 6.1.0-28-amd64 x86_64",
        "memory_bytes": 540886065152,
        "numa_nodes": [{"cpus": "0-19,40-59", "id": 0}, {"cpus": "20-39,60-79", "id": 1}],
        "os": "Debian GNU/Linux 12 (bookworm)",
    },
    "nvml": {"available": True, "error": None},
    "software": {
        "cublas_version": "12.9.1",
        "cuda_driver_version": "13.0",
        "cuda_runtime_compiled": "12.9",
        "cuda_runtime_version": "12.9",
        "cudnn_version": "9.10.2",
        "driver_version": "580.95.05",
        "nccl_version": "2.27.7",
    },
}


def live_gpu(i):
    return {
        "index": i,
        "pcie_loaded": {"gen_current": 3, "gen_max": 3, "width_current": 16, "width_max": 16},
        "pcie_method": "read under load: pinned host-to-device copies of 64 MiB on a side thread, 6 readings, highest kept",
        "throttle_mask_loaded": 0,
        "ecc": {"volatile_corrected": 0, "volatile_uncorrected": 0, "aggregate_corrected": 0, "aggregate_uncorrected": 0},
        "retired_pages": {"single_bit": 0, "double_bit": 0, "pending": False},
        "remapped_rows": None,  # Pascal retires pages; row remapping came with Ampere
        "processes": [],
        "acs_redirect": False,
        "acs_evidence": "ACS Control of the bridge above %s: no P2P redirect" % BUS[i],
    }


def socket(i):
    return 0 if i < 2 else 1


LIVE = {
    "recorded": True,
    "self_pid": 4242,
    "nvml_device_count": 4,
    "device_nodes": 4,
    "cgroup_devices": None,
    "kernel_driver": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05",
    "kernel_cmdline": "BOOT_IMAGE=/boot/vmlinuz-6.1.0-28-amd64 root=/dev/sda1 ro quiet",
    "iommu_groups": 0,
    "cuda_device_order": None,
    "nvidia_visible_devices": None,
    "p2p": [[None if i == j else socket(i) == socket(j) for j in range(4)] for i in range(4)],
    "topology": [[0 if i == j else (10 if socket(i) == socket(j) else 50) for j in range(4)] for i in range(4)],
    "gpus": [live_gpu(i) for i in range(4)],
}

DOCTOR = {
    "schema": "nodebench.doctor",
    "schema_version": 1,
    "about": "Synthetic `nodebench doctor --json` capture of a healthy four-P40 node (tests/data/make_p40_fixtures.py); checks left out",
    "cuda_architectures": "61-real",
    "environment": ENV,
    "live": LIVE,
}



# ---- the result file ------------------------------------------------------------------------
T0 = "2026-11-30T09:00:00Z"
PEAK = {k: v["value"] for k, v in peaks_of("Tesla P40").items()}
LINK = 15.754  # PCIe Gen3 x16 per direction, GB/s (8 GT/s x 16 lanes x 128/130)
CLOCKS = {"before": {"sm_mhz": 1531.0, "mem_mhz": 3615.0, "temperature_c": 34.0, "power_w": 52.0,
                     "throttle_reasons": [], "throttle_mask": 0},
          "after": {"sm_mhz": 1392.0, "mem_mhz": 3615.0, "temperature_c": 61.0, "power_w": 247.0,
                    "throttle_reasons": ["sw_power_cap"], "throttle_mask": 4},
          "sm_mhz_during": 1392.0}
# A long SGEMM on a passively cooled P40 at its 250 W limit holds the 1303 MHz base clock (the
# datasheet's base; sw_power_cap): healthy, below the 1531 MHz boost the peaks assume. A short
# kernel (the peak family) holds the boost clock.
BASE, BOOST = float(P40["base_mhz"]), float(P40["peak_clock_mhz"])
GEMM_CLOCKS = {"before": CLOCKS["before"],
               "after": {"sm_mhz": BASE, "mem_mhz": 3615.0, "temperature_c": 74.0, "power_w": 250.0,
                         "throttle_reasons": ["sw_power_cap"], "throttle_mask": 4},
               "sm_mhz_during": BASE}
PEAK_CLOCKS = dict(CLOCKS, sm_mhz_during=BOOST)
RECORDS = []


def stats_of(samples):
    a = sorted(samples)
    n = len(a)
    mean = sum(a) / n
    sd = (sum((x - mean) ** 2 for x in a) / (n - 1)) ** 0.5
    med = (a[n // 2] + a[(n - 1) // 2]) / 2
    return {"unit": "s", "count": n, "median": med, "min": a[0], "max": a[-1], "mean": mean, "stddev": sd,
            "p10": a[1], "p90": a[-2], "cv": sd / mean, "ci_median": {"level": 0.98, "low": a[2], "high": a[-3]}}


def add(family, case, params, gpus, *, seconds=None, metrics=None, peak=None, reason=None, flags=(), clocks=CLOCKS):
    rec = {"id": family + "/" + case, "family": family, "case": case, "params": params, "gpus": gpus,
           "status": "ok" if reason is None else "skipped", "reason": reason,
           "reason_kind": None if reason is None else "unsupported",
           "stats": None, "metrics": {}, "percent_of_peak": None, "flags": list(flags), "samples_s": [],
           "clocks": clocks if clocks and reason is None else {}, "started_at": T0, "duration_s": 0.0}
    if reason is None:
        # ten samples within +-0.5% of the time, deterministic
        samples = [seconds * (1 + 0.001 * ((i * 7) % 11 - 5)) for i in range(10)]
        rec["samples_s"] = samples
        rec["stats"] = stats_of(samples)
        rec["metrics"] = metrics
        rec["duration_s"] = round(sum(samples) + 0.05, 6)
        if peak:
            metric, key = peak
            pct = 100 * metrics[metric] / PEAK[key]
            rec["percent_of_peak"] = {"metric": metric, "peak": PEAK[key], "percent": pct,
                                      "peak_key": key, "source": "profile:Tesla P40"}
            sm = rec["clocks"].get("sm_mhz_during") if rec["clocks"] else None
            if sm and not key.endswith("_gbps"):  # as harness/run/record.cpp writes it
                rec["percent_of_peak"].update({"peak_clock_mhz": BOOST, "sm_mhz": sm, "peak_at_clock": PEAK[key] * sm / BOOST,
                                               "percent_at_clock": pct * BOOST / sm})
        rec["primary_metric"] = next(m for m in ("images_per_s", "tflops", "tops", "train_images_per_s", "busbw_gbps",
                                                 "gbps", "latency_us") if m in metrics)
        rec["primary_better"] = "lower" if rec["primary_metric"].endswith("_us") else "higher"
    RECORDS.append(rec)
    return rec


# GEMM at the base clock it holds (GEMM_CLOCKS): each precision's share of its peak at that clock,
# as cuBLAS reaches it (SGEMM 93%: 9.3 TFLOPS of the 10.0 a P40 has at 1303 MHz, i.e. 79% of the
# 11.76 boost peak), FP16 with FP32 compute on the FP32 units, FP16 accumulation on the 1/64-rate
# HFMA2 units, INT8 by DP4A, FP64 at 1/32.
GEMM = {"fp64": (0.90, "fp64_tflops"), "fp32": (0.93, "fp32_tflops"), "fp16": (0.90, "fp32_tflops"),
        "fp16acc16": (0.94, "fp16_tflops"), "int8": (0.80, "int8_tops")}
NEEDS = {"tf32": "TF32 tensor cores (compute capability 8.0 or newer)",
         "bf16": "BF16 arithmetic (compute capability 8.0 or newer)",
         "fp8": "FP8 tensor cores (compute capability 8.9 or newer)"}


def gemm(prec, api, n):
    params = {"precision": prec, "api": api, "shape": "square", "m": n, "n": n, "k": n}
    case = "%s/%s/square_%d" % (prec, api, n)
    if prec in NEEDS:
        return add("gemm", case, params, [0],
                   reason="%s needs %s; this GPU has compute capability 6.1" % (prec, NEEDS[prec]))
    share, key = GEMM[prec]
    rate = round(share * PEAK[key] * BASE / BOOST * {1024: 0.72, 4096: 0.96, 8192: 1.0}[n], 4)
    unit = "tops" if prec == "int8" else "tflops"
    flops = 2.0 * n ** 3
    sec = flops / (rate * 1e12)
    return add("gemm", case, params, [0], seconds=sec, metrics={unit: rate, "time_us": sec * 1e6}, peak=(unit, key),
               flags=["power_capped"], clocks=GEMM_CLOCKS)


for n in (1024, 4096, 8192):
    for prec in ("fp64", "fp32", "tf32", "fp16", "fp16acc16", "bf16", "int8", "fp8"):
        gemm(prec, "cublaslt", n)
for prec in ("fp32", "tf32", "fp16", "bf16"):
    gemm(prec, "cublas", 8192)

# Peak arithmetic: FFMA near the boost-clock rate, HFMA2 at 1/64, DFMA at 1/32, DP4A at 4x FFMA.
PEAK_UNITS = [("fp32_ffma", 11.5, "tflops", "fp32_tflops", None), ("fp16_hfma2", 0.18, "tflops", "fp16_tflops", None),
              ("bf16_fma2", None, "tflops", None, "BF16 arithmetic (compute capability 8.0 or newer)"),
              ("fp64_dfma", 0.36, "tflops", "fp64_tflops", None), ("int8_dp4a", 45.8, "tops", None, None),
              ("int32_imad", 3.8, "tops", None, None),
              ("mma_fp16", None, "tflops", None, "tensor cores (compute capability 7.0 or newer)"),
              ("mma_bf16", None, "tflops", None, "BF16 tensor cores (compute capability 8.0 or newer)"),
              ("mma_tf32", None, "tflops", None, "TF32 tensor cores (compute capability 8.0 or newer)"),
              ("mma_int8", None, "tops", None, "INT8 tensor cores (compute capability 7.2 or newer)")]
for unit, rate, metric, key, needs in PEAK_UNITS:
    if needs:
        add("peak", unit, {"unit": unit}, [0], reason="%s needs %s; this GPU has compute capability 6.1" % (unit, needs))
    else:
        add("peak", unit, {"unit": unit}, [0], seconds=0.05, metrics={metric: rate}, peak=(metric, key) if key else None,
            clocks=PEAK_CLOCKS)

# Memory: 4 GiB streaming copy and triad at ~82% of the 346 GB/s datasheet rate.
GiB = 1 << 30
for kernel, gbps in (("copy", 284.0), ("triad", 288.0)):
    moved = (2 if kernel == "copy" else 3) * 4 * GiB
    add("memory", kernel + "/4096MiB", {"kernel": kernel, "size": "4096MiB", "bytes": 4 * GiB}, [0],
        seconds=moved / (gbps * 1e9), metrics={"gbps": gbps}, peak=("gbps", "mem_gbps"))

# Host link: pinned 1 GiB copies as the published bandwidthTest shows them on a P40 (H2D 11.84, D2H 12.90 GB/s).
for g in range(4):
    for direction, gbps in (("h2d", 11.84), ("d2h", 12.90)):
        add("hostlink", "%s/pinned/ce/1GiB" % direction,
            {"direction": direction, "memory": "pinned", "engine": "ce", "bytes": GiB}, [g],
            seconds=GiB / (gbps * 1e9), metrics={"gbps": gbps, "link_gbps": LINK, "link_pct": 100 * gbps / LINK})

# Peers: one-way copies of 256 MiB with peer access on, within a socket (one PCIe switch); across
# sockets there is no peer access and the case part is skipped with the family's reason.
MiB = 1 << 20
for a in range(4):
    for b in range(4):
        if a == b:
            continue
        params = {"test": "bandwidth", "mode": "one_way", "peer": "enabled", "engine": "ce", "bytes": 256 * MiB,
                  "src": a, "dst": b}
        case = "one_way/enabled/ce/256MiB/gpu%d-gpu%d" % (a, b)
        if socket(a) != socket(b):
            add("p2p", case, params, [a, b],
                reason="no peer access between GPU %d and GPU %d (cudaDeviceCanAccessPeer)" % (a, b))
        else:
            add("p2p", case, params, [a, b], seconds=256 * MiB / 12.6e9, metrics={"gbps": 12.6})

# All-reduce over the four GPUs: the ring crosses the sockets through host memory.
ar = add("nccl", "all_reduce/float/out_of_place/eager/256MiB/ngpus4",
         {"collective": "all_reduce", "dtype": "float", "in_place": False, "bytes": 256 * MiB, "ngpus": 4},
         [0, 1, 2, 3], seconds=256 * MiB / 3.6e9,
         metrics={"busbw_gbps": 5.4, "algbw_gbps": 3.6})

# ResNet-50 training, FP32 NCHW (FP16 does not pay on a P40), so that `nodebench advise` runs on
# this file. From public figures, not measured: a GTX 1080 Ti (GP102, 28 SMs, 1582 MHz boost) trains
# 208.7 images/s at batch 64 (TensorFlow 2.2, synthetic data; lambda-tensorflow-benchmark), scaled to
# the P40's 30 SMs at its 1303 MHz base clock; the step's work grows with the batch at that rate.
# Peak memory in proportion to the batch, 21.55 GB at batch 256 as nodebench's own TF32 NCHW step
# plans it (docs/RESULTS.md, results/h200/2026-12-02-full-suite-2/).
TRAIN_IMAGES_PER_S = 208.7 * (30 * BASE) / (28 * 1582.0)
MEMORY_PER_IMAGE = 21.55e9 / 256
TRAIN_FLOP_PER_IMAGE = 3 * 8.2e9  # forward 4.1 GMAC, backward twice it
for batch in (64, 128):
    step = batch / TRAIN_IMAGES_PER_S
    add("train", "resnet50/fp32/nchw/b%d" % batch, {"precision": "fp32", "layout": "nchw", "batch": batch}, [0],
        seconds=step, clocks=GEMM_CLOCKS,
        metrics={"step_time_ms": step * 1e3, "images_per_s": TRAIN_IMAGES_PER_S,
                 "peak_memory_bytes": MEMORY_PER_IMAGE * batch,
                 "tflops": TRAIN_IMAGES_PER_S * TRAIN_FLOP_PER_IMAGE / 1e12})
    # The conv family's network case: the convolutions of that step only (taken as 70% of it).
    conv = 0.7 * step
    add("conv", "resnet50/fp32/nchw/b%d" % batch,
        {"layer": "resnet50_total", "network": "resnet50", "pass": "train", "precision": "fp32", "layout": "nchw",
         "batch": batch}, [0], seconds=conv, clocks=GEMM_CLOCKS,
        metrics={"time_us": conv * 1e6, "train_images_per_s": batch / conv})

# analysis.fp16_vs_fp32 as the binary computes it from these records (harness/bench/analysis.cpp).
def rate_of(pred):
    best = None
    for r in RECORDS:
        if r["status"] == "ok" and r["gpus"] == [0] and pred(r):
            v = r["metrics"].get("tflops", r["metrics"].get("tops"))
            best = v if best is None else max(best, v)
    return best


def peak_rate(unit):
    return rate_of(lambda r: r["family"] == "peak" and r["params"]["unit"] == unit)


def gemm_rate(prec, n):
    return rate_of(lambda r: r["family"] == "gemm" and r["params"]["precision"] == prec and r["params"]["m"] == n)


p32 = peak_rate("fp32_ffma")
rows = [{"source": "peak: fp16_hfma2 / fp32_ffma", "kind": "peak", "fp32": p32, "fp16": peak_rate("fp16_hfma2"),
         "speedup_x": peak_rate("fp16_hfma2") / p32}]
f32, f16, i8 = gemm_rate("fp32", 8192), gemm_rate("fp16", 8192), gemm_rate("int8", 8192)
rows.append({"source": "gemm 8192^3: fp16 / fp32", "kind": "gemm", "fp32": f32, "fp16": f16, "speedup_x": f16 / f32})
rows.append({"source": "gemm 8192^3: int8 / fp32", "kind": "int8", "fp32": f32, "int8": i8, "speedup_x": i8 / f32})
dp4a = peak_rate("int8_dp4a")
rows.append({"source": "peak: int8_dp4a / fp32_ffma", "kind": "int8", "fp32": p32, "int8": dp4a, "speedup_x": dp4a / p32})
best_i8 = max((r for r in rows if r["kind"] == "int8"), key=lambda r: r["speedup_x"])
ANALYSIS = {
    "fp16_vs_fp32": [{
        "gpu": 0, "name": "Tesla P40", "compute_capability": "6.1", "rows": rows, "verdict": "does_not_pay",
        "reason": "FP16 runs only %.2fx as fast as FP32 (gemm 8192^3: fp16 / fp32): mixed precision does not pay "
                  "(compute capability 6.1: FP16 arithmetic at 1/64 of FP32, no tensor cores)" % (f16 / f32),
        "recommendation": "train in FP32; for inference use INT8 (DP4A): %.2fx FP32 (%s)"
                          % (best_i8["speedup_x"], best_i8["source"]) +
                          "; with TensorRT %s (%s), the last TensorRT for compute capability 6.1: TensorRT 10 and "
                          "later refuse it; or cuBLASLt INT8 GEMMs (CUDA 12.x) directly"
                          % (PINS["tensorrt_last"], PINS["tensorrt_wheel"]),
    }],
    "p2p": {"gpus": [0, 1, 2, 3],
            "access": [[i != j and socket(i) == socket(j) for j in range(4)] for i in range(4)],
            "link_type": [["X" if i == j else ("PIX" if socket(i) == socket(j) else "SYS") for j in range(4)]
                          for i in range(4)],
            "note": "rows are the source (or first) GPU, columns the destination; matrices in the order of 'gpus'"},
}

COUNTS = {s: sum(1 for r in RECORDS if r["status"] == s) for s in ("ok", "skipped", "failed", "wrong")}
RESULT = {
    "schema": "nodebench.result", "schema_version": 1, "run_id": "p40synthetic0000000000000000000a",
    "note": "SYNTHETIC: written by tests/data/make_p40_fixtures.py, not measured on a P40; figures plausible from "
            "public sources (docs/P40.md)",
    "started_at": T0, "finished_at": "2026-11-30T09:04:10Z", "run_status": "complete", "run_error": None,
    "nodebench": {"version": "0.1.0", "git_commit": "synthetic", "cuda_architectures": "61-real",
                  "command_line": ["build-cuda12/nodebench", "run", "--suite", "quick", "--out", "results/runs"]},
    "options": {"suite": "quick", "families": [], "filter": "", "gpus": "all", "repetitions": 0, "target_cv": 0.01,
                "max_time_s": 0.4, "min_samples": 10, "l2": "family default", "profiles_file": None},
    "environment": ENV,
    "records": RECORDS,
    "analysis": ANALYSIS,
    "summary": dict(COUNTS, total=len(RECORDS), wall_time_s=250.0),
}


def write(name, doc):
    (HERE / name).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


write("p40_environment.json", ENV)
write("p40_doctor.json", DOCTOR)
write("p40_result.json", RESULT)
