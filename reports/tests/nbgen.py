"""Generator of schema-valid nodebench result files for the tests (no GPU needed).

The numbers follow simple models of an H200-class node so that plots and checklist items have
something realistic to show. Used by the tests; can also be run to write example files:

    python3 reports/tests/nbgen.py OUTDIR
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import json
import math
import os
import sys

import numpy as np
from nbgen_analysis import GPU_MEMORY, analysis_of

PEAKS = {  # H200 SXM dense peaks, TFLOPS / TOPS
    "fp64": ("fp64_tensor_tflops", 67.0), "fp32": ("fp32_tflops", 67.0), "tf32": ("tf32_tflops", 494.0),
    "fp16": ("fp16_tensor_tflops", 989.0), "bf16": ("bf16_tensor_tflops", 989.0), "int8": ("int8_tops", 1979.0),
    "fp8": ("fp8_tflops", 1979.0),
}
GEMM_EFF = {"fp64": 0.80, "fp32": 0.78, "tf32": 0.62, "fp16": 0.72, "bf16": 0.71, "int8": 0.68, "fp8": 0.65}
GEMM_SIZES = (1024, 2048, 4096, 8192)
CONV_BATCHES = (64, 128, 256, 512, 1024, 2048)
HOSTLINK_SIZES = tuple(4 ** k * 4096 for k in range(0, 8))        # 4 KiB .. 64 MiB
NCCL_SIZES = tuple(4 ** k * (1 << 20) for k in range(0, 6))        # 1 MiB .. 1 GiB
ALL_FAMILIES = ("gemm", "conv", "hostlink", "p2p", "nccl", "train", "input")
INPUT_CORES = (1, 2, 4, 8, 16, 32, 64, 112)  # the environment's 112 CPUs
TRAIN_BATCHES = (16, 32, 64, 128, 256, 512, 1024, 2048)


def _ts(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def stats_of(samples: list[float]) -> dict:
    a = np.sort(np.asarray(samples, dtype=float))
    n = len(a)
    mean = float(a.mean())
    sd = float(a.std(ddof=1)) if n > 1 else 0.0
    # distribution-free CI of the median from order statistics (normal approximation of the binomial)
    half = 1.96 * math.sqrt(n) / 2
    lo = max(0, int(math.floor(n / 2 - half)))
    hi = min(n - 1, int(math.ceil(n / 2 + half)) - 1)
    return {"unit": "s", "count": n, "median": float(np.median(a)), "min": float(a[0]), "max": float(a[-1]),
            "mean": mean, "stddev": sd, "p10": float(np.percentile(a, 10)), "p90": float(np.percentile(a, 90)),
            "cv": sd / mean if mean else 0.0, "ci_median": {"level": 0.95, "low": float(a[lo]), "high": float(a[hi])}}


class Builder:
    def __init__(self, *, hostname="node01", gpu_name="NVIDIA H200", n_gpus=4, started_at="2025-06-01T02:00:00Z",
                 seed=0, noise_cv=0.02, n_samples=20, run_offset=1.0, slowdown=None, speed=1.0,
                 cuda_architectures="80-real;90-real;90", pcie_width=16, pcie_gen=5, throttle=False,
                 power_capped=False, nvml=True, compute_capability="9.0", run_id=None, analysis=True,
                 run_noise_cv=0.0, run_noise=None, build_support=("sass", "sm_90", "native code (sm_90)")):
        self.rng = np.random.default_rng(seed)
        self.hostname, self.gpu_name, self.n_gpus = hostname, gpu_name, n_gpus
        self.start = dt.datetime.strptime(started_at, "%Y-%m-%dT%H:%M:%SZ")
        self.t = self.start
        self.noise_cv, self.n_samples, self.run_offset = noise_cv, n_samples, run_offset
        self.slowdown = slowdown or {}
        self.speed = speed
        self.cuda_architectures = cuda_architectures
        # the verdict nodebench records per GPU for its build (environment.gpus[].build_support; the
        # default is what it writes for the default architectures on cc 9.0); None leaves it out
        self.build_support = build_support
        self.pcie_width, self.pcie_gen = pcie_width, pcie_gen
        self.throttle, self.power_capped, self.nvml, self.cc = throttle, power_capped, nvml, compute_capability
        self.analysis_wanted = analysis
        self.run_id = run_id or hashlib.sha1(f"{hostname}{started_at}{seed}".encode()).hexdigest()[:16]
        self.records: list[dict] = []
        # between-run noise: each case's median moves by a lognormal factor per run (run_noise maps
        # a record id to its own spread, run_noise_cv is the spread of the others)
        self.run_noise_cv, self.run_noise = run_noise_cv, run_noise or {}

    # ------------------------------------------------------------------------------------------
    def samples(self, rid: str, t: float) -> list[float]:
        t = t * self.run_offset / self.speed * self.slowdown.get(rid, 1.0)
        cv = self.run_noise.get(rid, self.run_noise_cv)
        if cv:
            t *= float(self.rng.lognormal(0.0, cv))
        noise = self.rng.lognormal(0.0, self.noise_cv, self.n_samples)
        return [float(t * x) for x in noise]

    def clocks(self) -> dict:
        if not self.nvml:
            return {}
        reasons, mask, during = [], 0, 1965.0
        if self.power_capped:
            reasons, mask, during = reasons + ["sw_power_cap"], mask | 0x4, 1830.0
        if self.throttle:
            reasons, mask, during = reasons + ["sw_thermal_slowdown"], mask | 0x20, 1500.0
        snap = {"sm_mhz": during, "mem_mhz": 3201.0, "temperature_c": 52.0, "power_w": 610.0,
                "throttle_reasons": reasons, "throttle_mask": mask}
        return {"before": dict(snap, sm_mhz=1980.0, temperature_c=38.0, power_w=120.0, throttle_reasons=[],
                               throttle_mask=0), "after": snap, "sm_mhz_during": during}

    def add(self, family: str, case: str, params: dict, gpus: list[int], *, time_s: float | None = None,
            metrics_fn=None, status: str = "ok", reason: str | None = None, peak: tuple | None = None,
            details: dict | None = None) -> dict:
        rid = f"{family}/{case}"
        rec = {"id": rid, "family": family, "case": case, "params": params, "gpus": gpus, "status": status,
               "reason": reason, "stats": None, "metrics": {}, "percent_of_peak": None, "flags": [],
               "samples_s": [], "clocks": self.clocks(),
               "measurement": {"l2": "cold", "warmup_runs": 3, "target_cv": 0.02, "max_time_s": 2.0,
                               "min_samples": 10, "batch": 1},
               "details": details or {}, "started_at": _ts(self.t), "duration_s": 0.0}
        if status == "ok":
            samples = self.samples(rid, time_s)
            rec["samples_s"] = samples
            rec["stats"] = stats_of(samples)
            rec["metrics"] = metrics_fn(rec["stats"]["median"])
            rec["duration_s"] = round(sum(samples) + 0.2, 6)
            if peak:
                metric, peak_value, key = peak
                rec["percent_of_peak"] = {"metric": metric, "peak": peak_value,
                                          "percent": rec["metrics"][metric] / peak_value * 100,
                                          "peak_key": key, "source": "profile:h200-sxm"}
            if self.throttle:
                rec["flags"].append("throttled")
            if self.power_capped:
                rec["flags"].append("power_capped")
            if not self.nvml:
                rec["flags"].append("clock_unknown")
        self.t += dt.timedelta(seconds=max(1, int(rec["duration_s"]) + 1))
        self.records.append(rec)
        return rec

    # ------------------------------------------------------------------------------------------
    def gemm(self, gpus=(0,)):
        for g in gpus:
            for prec, (key, peak) in PEAKS.items():
                for api in ("cublas", "cublaslt"):
                    for n in GEMM_SIZES:
                        eff = GEMM_EFF[prec] * (1 - math.exp(-n / 1400.0)) * (1.0 if api == "cublaslt" else 0.97)
                        tput = peak * eff
                        flops = 2.0 * n ** 3
                        unit = "tops" if prec == "int8" else "tflops"
                        case = f"{prec}/{api}/square_{n}"
                        self.add("gemm", case, {"precision": prec, "api": api, "shape": "square", "m": n, "n": n,
                                                "k": n}, [g], time_s=flops / (tput * 1e12),
                                 metrics_fn=lambda med, f=flops, u=unit: {u: f / med / 1e12, "time_us": med * 1e6},
                                 peak=(unit, peak, key),
                                 details={"algorithm": {"id": 21} if api == "cublaslt" else "default",
                                          "verification": {"samples": 256, "max_error_ratio": 0.12}})
            # model shapes at one batch, as in the quick suite
            for prec, shape, n, k in (("bf16", "mlp", 16384, 4096), ("fp32", "mlp", 16384, 4096),
                                      ("fp32", "classifier", 1000, 2048)):
                key, peak = PEAKS[prec]
                b = 64
                flops = 2.0 * b * n * k
                tput = peak * GEMM_EFF[prec] * 0.55
                self.add("gemm", f"{prec}/cublaslt/{shape}_b{b}",
                         {"precision": prec, "api": "cublaslt", "shape": shape, "m": b, "n": n, "k": k, "batch": b},
                         [g], time_s=flops / (tput * 1e12),
                         metrics_fn=lambda med, f=flops: {"tflops": f / med / 1e12, "time_us": med * 1e6},
                         peak=("tflops", peak, key))

    def conv(self, gpus=(0,)):
        ips = {"fp32": 1150.0, "fp16": 3050.0}
        mem_per_img = {"fp32": 82e6, "fp16": 44e6}
        for g in gpus:
            for prec in ("fp32", "fp16"):
                for b in CONV_BATCHES:
                    params = {"layer": "resnet50_total", "batch": b, "precision": prec, "layout": "nhwc",
                              "pass": "train"}
                    case = f"resnet50_total_{prec}_b{b}"
                    mem = 2.5e9 + mem_per_img[prec] * b
                    if mem > GPU_MEMORY:
                        self.add("conv", case, params, [g], status="skipped",
                                 reason=f"out of memory: batch {b} needs about {mem / 2**30:.0f} GiB")
                        continue
                    rate = ips[prec] * (1 - 0.45 * math.exp(-b / 90.0))
                    self.add("conv", case, params, [g], time_s=b / rate,
                             metrics_fn=lambda med, b=b, mem=mem: {
                                 "train_images_per_s": b / med, "fwd_images_per_s": 2.9 * b / med,
                                 "peak_memory_bytes": mem})
            # one layer-level record
            self.add("conv", "conv1_fp16_b256_fwd", {"layer": "conv1", "batch": 256, "precision": "fp16",
                                                     "layout": "nhwc", "pass": "fwd"}, [g], time_s=0.0021,
                     metrics_fn=lambda med: {"images_per_s": 256 / med, "tflops": 256 * 0.118e9 * 2 / med / 1e12})

    def hostlink(self, gpus=None):
        gpus = range(self.n_gpus) if gpus is None else gpus
        link = self.link_gbps()
        for g in gpus:
            for direction in ("h2d", "d2h", "bidir_h2d", "bidir_d2h"):
                for memory in ("pinned", "pageable"):
                    if direction.startswith("bidir") and memory == "pageable":
                        continue
                    top = {"pinned": 0.875, "pageable": 0.36}[memory] * link
                    if direction.startswith("bidir"):
                        top *= 0.92
                    for size in HOSTLINK_SIZES:
                        bw = top * size / (size + 9e-6 * top * 1e9)  # ~9 us fixed cost
                        case = f"{direction}_{memory}_ce_{size}"
                        self.add("hostlink", case, {"direction": direction, "memory": memory, "bytes": size,
                                                    "engine": "ce"}, [g], time_s=size / (bw * 1e9),
                                 metrics_fn=lambda med, s=size: {"gbps": s / med / 1e9, "link_gbps": link,
                                                                 "link_pct": s / med / 1e9 / link * 100})

    def p2p(self):
        if self.n_gpus < 2:
            self.add("p2p", "pairs", {"src": 0, "dst": 1, "mode": "one_way", "peer": "enabled"}, [0],
                     status="skipped", reason="needs two GPUs")
            return
        size = 256 << 20
        for mode, bw in (("one_way", 360.0), ("bidir", 690.0)):
            for s in range(self.n_gpus):
                for d in range(self.n_gpus):
                    if s == d:
                        continue
                    self.add("p2p", f"{mode}_{s}_{d}", {"src": s, "dst": d, "mode": mode, "peer": "enabled",
                                                        "bytes": size}, [s, d], time_s=size / (bw * 1e9),
                             metrics_fn=lambda med: {"gbps": size / med / 1e9})

    def nccl(self):
        counts = [n for n in (2, 4, 8) if n <= self.n_gpus]
        if not counts:
            self.add("nccl", "all_reduce", {"collective": "all_reduce", "dtype": "float", "bytes": 1 << 20,
                                            "ngpus": 2, "in_place": False}, [0], status="skipped",
                     reason="needs two GPUs")
            return
        for n in counts:
            top = 370.0 * (1 - 0.04 * math.log2(n))
            for size in NCCL_SIZES:
                busbw = top * size / (size + 25e-6 * top * 1e9)
                algbw = busbw * n / (2 * (n - 1))
                self.add("nccl", f"all_reduce_float_{n}gpu_{size}",
                         {"collective": "all_reduce", "dtype": "float", "bytes": size, "ngpus": n, "in_place": False},
                         list(range(n)), time_s=size / (algbw * 1e9),
                         metrics_fn=lambda med, s=size, n=n: {
                             "time_us": med * 1e6, "algbw_gbps": s / med / 1e9,
                             "busbw_gbps": s / med / 1e9 * 2 * (n - 1) / n})

    def input(self, per_core=400.0, cpus=112):
        """The input family's core sweep (host-only records, gpus []): images/s a little below
        linear as the workers grow, for both series the training steps are fed."""
        for layout, dtype in (("nchw", "fp32"), ("nhwc", "fp16")):
            for n in [c for c in INPUT_CORES if c <= cpus]:
                rate = per_core * n * (1 - 0.002 * n)
                params = {"layout": layout, "dtype": dtype, "placement": "spread", "cores": n}
                rec = self.add("input", f"cpu/{layout}/{dtype}/c{n}", params, [], time_s=1.0 / rate,
                         metrics_fn=lambda med, n=n: {"images_per_s": 1.0 / med, "per_core_images_per_s": 1.0 / med / n,
                                                      "cores_count": n, "mean_file_bytes": 110e3},
                         details={"cpus_available": cpus, "verification": {"ok": True}})
                rec.update(clocks={}, flags=[])  # a host record: no GPU clock

    def train(self, gpus=(0,)):
        """The train family's sweep: FP16 NHWC and TF32 NCHW, memory growing with the batch until
        a batch does not fit; throughput rising to a plateau."""
        ips = {"fp16": 3000.0, "tf32": 1300.0}
        mem_per_img = {"fp16": 0.1e9, "tf32": 0.19e9}
        for g in gpus:
            for prec, layout in (("fp16", "nhwc"), ("tf32", "nchw")):
                for b in TRAIN_BATCHES:
                    params = {"precision": prec, "layout": layout, "batch": b}
                    case = f"resnet50/{prec}/{layout}/b{b}"
                    used = 3e9 + mem_per_img[prec] * b
                    if used > GPU_MEMORY:
                        rec = self.add("train", case, params, [g], status="skipped",
                                       reason=f"out of memory: does not fit: asked for {used:.0f} bytes")
                        rec["reason_kind"] = "oom"
                        continue
                    rate = ips[prec] * (1 - 0.6 * math.exp(-b / 40.0))

                    def metrics(med, b=b, used=used):
                        kinds = {"conv": 0.62, "bn": 0.18, "elementwise": 0.1, "pool": 0.03, "fc": 0.02, "loss": 0.01,
                                 "update": 0.04}
                        m = {"step_time_ms": med * 1e3, "images_per_s": b / med, "peak_memory_bytes": used - 1.5e9,
                             "device_used_bytes": used, "memory_fraction_x": used / GPU_MEMORY,
                             "elementwise_share": 0.31,
                             # issued call by call: the host's 25 ms a step or the GPU's time
                             "eager_step_ms": max(med, 0.025) * 1e3, "eager_images_per_s": b / max(med, 0.025)}
                        m.update({f"time_{k}_ms": v * med * 1e3 for k, v in kinds.items()})
                        return m
                    self.add("train", case, params, [g], time_s=b / rate, metrics_fn=metrics)

    def link_gbps(self) -> float:
        per_lane = {3: 0.985, 4: 1.969, 5: 3.938}[self.pcie_gen]
        return per_lane * self.pcie_width

    # ------------------------------------------------------------------------------------------
    def analysis(self) -> dict:
        return analysis_of(self.records, self.environment()["gpus"])

    def environment(self) -> dict:
        gpus = []
        for i in range(self.n_gpus):
            theo = self.link_gbps()
            gpus.append({
                "index": i, "name": self.gpu_name,
                "uuid": f"GPU-{hashlib.sha1(self.hostname.encode()).hexdigest()[:8]}-{i:04d}",  # stable per host
                "pci_bus_id": f"00000000:{0x18 + 0x10 * i:02X}:00.0", "compute_capability": self.cc,
                "sm_count": 132, "memory_bytes": GPU_MEMORY, "l2_bytes": 62914560, "ecc_enabled": True,
                "persistence_mode": True, "mig_mode": False,
                "pcie": {"gen_current": self.pcie_gen, "gen_max": 5, "width_current": self.pcie_width,
                         "width_max": 16, "theoretical_gbps": theo} if self.nvml else None,
                "clock_sm_mhz": 1980 if self.nvml else None, "clock_mem_mhz": 3201 if self.nvml else None,
                "clock_sm_max_mhz": 1980 if self.nvml else None, "clock_mem_max_mhz": 3201 if self.nvml else None,
                "power_limit_w": 700.0 if self.nvml else None, "temperature_c": 36.0 if self.nvml else None,
                "throttle_reasons": ["gpu_idle"] if self.nvml else [], "profile": "h200-sxm",
                "peaks": {key: {"value": v, "source": "profile:h200-sxm"} for key, v in PEAKS.values()},
            })
            if self.build_support is not None:
                status, arch, reason = self.build_support
                gpus[-1]["build_support"] = {"status": status, "arch": arch, "reason": reason}
        return {
            "host": {"hostname": self.hostname, "os": "Ubuntu 24.04.1 LTS", "kernel": "6.8.0-45-generic",
                     "cpu_model": "Intel(R) Xeon(R) Platinum 8480+", "cpu_count": 112,
                     "numa_nodes": [{"id": 0, "cpus": "0-55"}, {"id": 1, "cpus": "56-111"}],
                     "memory_bytes": 2_164_000_000_000},
            "software": {"driver_version": "570.86.15", "cuda_driver_version": "12.8", "cuda_runtime_version": "12.8",
                         "cublas_version": "12.8.3", "cudnn_version": "9.7.0", "nccl_version": "2.25.1"},
            "nvml": {"available": self.nvml, "error": None if self.nvml else "libnvidia-ml.so.1 not found"},
            "cuda_visible_devices": None, "cuda_error": None, "gpus": gpus,
        }

    def build(self, families=ALL_FAMILIES, run_status="complete") -> dict:
        if "gemm" in families:
            self.gemm()
        if "conv" in families:
            self.conv()
        if "hostlink" in families:
            self.hostlink()
        if "p2p" in families:
            self.p2p()
        if "nccl" in families:
            self.nccl()
        if "train" in families:
            self.train()
        if "input" in families:
            self.input()
        counts = {s: sum(1 for r in self.records if r["status"] == s) for s in ("ok", "skipped", "failed", "wrong")}
        doc = {
            "schema": "nodebench.result", "schema_version": 1, "run_id": self.run_id,
            "started_at": _ts(self.start), "finished_at": _ts(self.t) if run_status != "running" else None,
            "run_status": run_status, "run_error": None,
            "nodebench": {"version": "0.1.0", "git_commit": "f3d769a", "cuda_architectures": self.cuda_architectures,
                          "command_line": ["build/nodebench", "run", "--suite", "quick", "--out", "results/runs"]},
            "options": {"suite": "quick", "filter": None, "repetitions": 1, "target_cv": 0.02, "max_time_s": 2.0,
                        "l2": "cold"},
            "environment": self.environment(),
            "records": self.records,
            "summary": dict(counts, total=len(self.records), wall_time_s=(self.t - self.start).total_seconds()),
        }
        if self.analysis_wanted:
            a = self.analysis()
            if a:
                doc["analysis"] = a
        return doc


def reanalyse(doc: dict) -> dict:
    """The document with its analyses computed again from its (edited) records, as the harness would."""
    doc = copy.deepcopy(doc)
    doc.pop("analysis", None)
    a = analysis_of(doc["records"], doc["environment"]["gpus"])
    if a:
        doc["analysis"] = a
    return doc


def make_result(families=ALL_FAMILIES, run_status="complete", **kw) -> dict:
    return Builder(**kw).build(families=families, run_status=run_status)


def set_status(doc: dict, rid: str, status: str, reason: str, gpus=None) -> dict:
    """Return a copy of doc where the record(s) with this id get a non-ok status."""
    doc = copy.deepcopy(doc)
    for r in doc["records"]:
        if r["id"] == rid and (gpus is None or r["gpus"] == list(gpus)):
            r.update(status=status, reason=reason)
            if status != "ok":
                r.update(stats=None, samples_s=[], metrics={}, percent_of_peak=None)
    counts = {s: sum(1 for r in doc["records"] if r["status"] == s) for s in ("ok", "skipped", "failed", "wrong")}
    doc["summary"].update(counts)
    return doc


def add_primary(doc: dict) -> dict:
    """Return a copy whose ok records state primary_metric/primary_better (as the C++ side writes)."""
    doc = copy.deepcopy(doc)
    order = ("tflops", "tops", "train_images_per_s", "busbw_gbps", "gbps", "latency_us")
    for r in doc["records"]:
        for name in order:
            if name in r["metrics"]:
                r["primary_metric"] = name
                r["primary_better"] = "lower" if name.endswith("_us") else "higher"
                break
    return doc


def write(doc: dict, path) -> str:
    path = os.fspath(path)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
    return path


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    print(write(make_result(), os.path.join(out, "example-full.json")))
    print(write(make_result(families=("gemm",), n_gpus=1, hostname="node02", seed=1),
                os.path.join(out, "example-gemm-only.json")))
