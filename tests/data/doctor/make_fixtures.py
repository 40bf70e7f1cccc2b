#!/usr/bin/env python3
"""Derives the doctor fixtures in this folder from the real H200 capture
(tests/data/h200_environment.json, which stays as recorded). Run it again after changing it:

    python3 tests/data/doctor/make_fixtures.py

Each fixture is {"about", "environment", "cuda_architectures", "live"}: what `nodebench doctor`
reads (the result schema's environment, the binary's CUDA architectures, the live facts).
"""
import copy
import json
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
BASE = json.loads((HERE.parent / "h200_environment.json").read_text())
CUDA13_ARCHS = "75-real;80-real;86-real;87-real;88-real;89-real;90-real;100-real;103-real;110-real;120-real;121"
DEVICES = json.loads((HERE.parent.parent.parent / "harness/profiles/devices.json").read_text())


def peaks_of(profile_name):
    p = next(p for p in DEVICES["profiles"] if p["name"] == profile_name)
    return {k: {"source": "profile:" + profile_name, "value": float(v)}
            for k, v in p.items() if isinstance(v, (int, float)) and (k.endswith("_tflops") or k.endswith("_tops") or k.endswith("_gbps"))}


def gpu_live(index, **kw):
    g = {"index": index,
         "pcie_loaded": {"gen_current": 5, "gen_max": 5, "width_current": 16, "width_max": 16},
         "pcie_method": "read under load: pinned host-to-device copies of 64 MiB on a side thread, 6 readings, highest kept",
         "throttle_mask_loaded": 0,
         "ecc": {"volatile_corrected": 0, "volatile_uncorrected": 0, "aggregate_corrected": 0, "aggregate_uncorrected": 0},
         "retired_pages": {"single_bit": None, "double_bit": None, "pending": None},
         "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False},
         "processes": [],
         "acs_redirect": None,
         "acs_evidence": "ACS: no PCIe bridge above 0000:00:06.0 in sysfs"}
    g.update(kw)
    return g


def live(n_gpus, **kw):
    f = {"recorded": True, "self_pid": 4242, "nvml_device_count": n_gpus, "device_nodes": n_gpus,
         "cgroup_devices": None, "kernel_driver": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04",
         "kernel_cmdline": "console=ttyS0 quiet", "iommu_groups": 0, "cuda_device_order": None,
         "nvidia_visible_devices": None,
         "p2p": [[None if i == j else True for j in range(n_gpus)] for i in range(n_gpus)],
         "topology": [[None if i == j else 10 for j in range(n_gpus)] for i in range(n_gpus)],
         "gpus": [gpu_live(i) for i in range(n_gpus)]}
    f.update(kw)
    return f


def h200_gpus(n):
    out = []
    for i in range(n):
        g = copy.deepcopy(BASE["gpus"][0])
        g["index"] = i
        g["pci_bus_id"] = "0000:%02X:00.0" % (0x18 + 0x20 * i)
        g["uuid"] = g["uuid"][:-2] + "%02x" % i
        out.append(g)
    return out


def write(name, about, env, lv, archs=CUDA13_ARCHS):
    doc = {"about": about, "environment": env, "cuda_architectures": archs, "live": lv}
    (HERE / name).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


# 1. The H200 as captured, with the live facts a healthy node gives.
write("h200_healthy.json", "The real H200 capture, with healthy live facts (ECC counters zero, link Gen5 x16 under load).",
      BASE, live(1, topology=[[None]], p2p=[[None]]))

# 2. A Tesla P40 with CUDA 13 libraries and a CUDA 13 build of nodebench.
env = copy.deepcopy(BASE)
g = env["gpus"][0]
g.update({"name": "Tesla P40", "compute_capability": "6.1", "sm_count": 30, "memory_bytes": 24438554624,
          "l2_bytes": 3145728, "pci_bus_id": "0000:3B:00.0", "uuid": "GPU-5c1f6d2e-0000-4000-8000-00000000p40a",
          "clock_mem_max_mhz": 3615.0, "clock_mem_mhz": 405.0, "clock_sm_attribute_mhz": 1531.0, "clock_sm_max_mhz": 1531.0,
          "clock_sm_mhz": 544.0, "mig_mode": None, "power_limit_w": 250.0, "temperature_c": 31.0, "profile": "Tesla P40",
          "throttle_reasons": ["gpu_idle"], "peaks": peaks_of("Tesla P40"),
          "pcie": {"gen_current": 1, "gen_max": 3, "theoretical_gbps": 4.0, "width_current": 16, "width_max": 16}})
lv = live(1, topology=[[None]], p2p=[[None]])
lv["gpus"][0].update({"pcie_loaded": {"gen_current": 3, "gen_max": 3, "width_current": 16, "width_max": 16},
                      "retired_pages": {"single_bit": 0, "double_bit": 0, "pending": False}, "remapped_rows": None})
write("p40_cuda13.json", "A Tesla P40 (cc 6.1) on driver 580 with the CUDA 13.0 runtime, cuBLAS 13.1, cuDNN 9.14, NCCL 2.28 "
      "and a CUDA 13 build of nodebench (no sm_61): derived from the H200 capture.", env, lv)

# 3. The H200 with its link trained at x8 (read under load).
lv = live(1, topology=[[None]], p2p=[[None]])
lv["gpus"][0]["pcie_loaded"] = {"gen_current": 5, "gen_max": 5, "width_current": 8, "width_max": 16}
write("h200_link_x8.json", "The H200 capture with the PCIe link at Gen5 x8 of x16 under load.", BASE, lv)

# 4. Four GPUs, CUDA_VISIBLE_DEVICES=0,1,2 hides one; GPU 2 is across the socket; IOMMU on.
env = copy.deepcopy(BASE)
env["gpus"] = h200_gpus(3)
env["cuda_visible_devices"] = "0,1,2"
lv = live(3, nvml_device_count=4, device_nodes=4, iommu_groups=41, kernel_cmdline="console=ttyS0 intel_iommu=on quiet",
          p2p=[[None, True, False], [True, None, False], [False, False, None]],
          topology=[[None, 10, 50], [10, None, 50], [50, 50, None]])
write("hidden_gpu_cvd.json", "Four H200s, CUDA_VISIBLE_DEVICES=0,1,2 hides one; GPUs 0 and 1 share a PCIe switch, GPU 2 "
      "sits on the other socket without peer access; the IOMMU translates (intel_iommu=on, no iommu=pt).", env, lv)

# 5. NVML lists 4 GPUs, CUDA sees 1, CUDA_VISIBLE_DEVICES not set.
lv = live(1, nvml_device_count=4, device_nodes=4, topology=[[None]], p2p=[[None]])
write("hidden_gpu_lost.json", "The H200 capture where NVML lists 4 GPUs but CUDA sees 1 and CUDA_VISIBLE_DEVICES is unset.",
      BASE, lv)

# 6. ECC errors: uncorrectable errors since boot, a row remap pending.
lv = live(1, topology=[[None]], p2p=[[None]])
lv["gpus"][0]["ecc"] = {"volatile_corrected": 17, "volatile_uncorrected": 2, "aggregate_corrected": 130,
                        "aggregate_uncorrected": 2}
lv["gpus"][0]["remapped_rows"] = {"correctable": 0, "uncorrectable": 2, "pending": True, "failure": False}
write("h200_ecc_errors.json", "The H200 capture with 2 uncorrectable ECC errors since the driver loaded and a row remap "
      "pending.", BASE, lv)

# 7. A throttled GPU: hardware thermal slowdown at 91 C.
env = copy.deepcopy(BASE)
env["gpus"][0].update({"throttle_reasons": ["sw_thermal_slowdown", "hw_thermal_slowdown"], "temperature_c": 91.0,
                       "clock_sm_mhz": 1005.0})
lv = live(1, topology=[[None]], p2p=[[None]])
lv["gpus"][0]["throttle_mask_loaded"] = 0x60
write("h200_throttled.json", "The H200 capture with hardware and software thermal slowdown active at 91 C.", env, lv)
print("fixtures written to", HERE)
