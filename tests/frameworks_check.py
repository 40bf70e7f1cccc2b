#!/usr/bin/env python3
"""`nodebench frameworks` driven by stand-in `torch` and `tensorflow` packages, without a GPU.

usage: frameworks_check.py GROUP --nodebench BIN --workdir DIR     (GROUP: torch, tensorflow, static)

The test makes a virtual environment (python3 -m venv --without-pip) and writes into it small
stand-in packages whose answers come from a JSON file beside them (version, build, arch list,
devices, which operations fail on which GPU, a failing or hanging import, the log lines
TensorFlow prints), plus fake nvidia-* wheels whose libraries are ELF files with a .nv_fatbin
section of chosen architectures. Each scenario probes that environment with nodebench; the node's
GPUs (NVML's view) are then set in the report and judged again with --from, since a machine
without GPUs has none to compare with. Each scenario states the verdicts it expects.
"""
import json
import os
import sys
import time

from frameworks_standins import (CUDNN_9_10, CUDNN_9_28, TORCH_CU126_ARCHS, TORCH_CU128_ARCHS, check, expect, find,
                                 nodebench, p40s, probe_and_judge, ptx, run_group, sass)


def group_torch(a, env):
    # A PyTorch cu128 build on four P40s: no code for 6.1, every operation fails.
    env.clear()
    env.torch({"version": "2.9.0+cu128", "cuda": "12.8", "cudnn": 91002, "arch_list": TORCH_CU128_ARCHS,
               "device_count": 4, "cc": [6, 1], "fail": {"matmul": [0, 1, 2, 3], "conv_bn": [0, 1, 2, 3]}},
              libs={"lib/libtorch_cuda.so": sass(70, 75, 80, 86, 90, 100, 120)})
    env.wheel("nvidia-cudnn-cu12", "9.10.2.21", CUDNN_9_10)
    checks, report, rc = probe_and_judge(a, env, p40s(4))
    check(rc == 1, "a PyTorch without code for the GPU: exit 1 (got %d)" % rc)
    expect(checks, "framework.torch.archs", "fail", "carries no code for cc 6.1", gpu=0)
    expect(checks, "framework.torch.archs", "fail", "cu126", gpu=3)
    expect(checks, "framework.torch.libraries", "fail", "libtorch_cuda.so", gpu=0)
    expect(checks, "framework.torch.ops", "fail", "no kernel image", gpu=2)
    expect(checks, "framework.torch.devices", "ok", "sees 4 of 4 GPUs")
    expect(checks, "framework.torch.allreduce", "ok", "right sum")
    expect(checks, "framework.python", "ok", "nvidia-cudnn-cu12 9.10.2.21")
    libs = report["environments"][0]["frameworks"]["torch"]["libraries"]
    ops = [l for l in libs if l["path"].endswith("libcudnn_ops.so.9")]
    check(len(ops) == 1 and ops[0].get("wheel") == "nvidia-cudnn-cu12==9.10.2.21" and "sm_61" in ops[0]["sass"],
          "the cuDNN wheel's library is read and named by its wheel (%s)" % ops)

    # The CUDA 12.6 build with cuDNN 9.10: everything passes on P40s.
    env.clear()
    env.torch({"version": "2.8.0+cu126", "cuda": "12.6", "cudnn": 91002, "arch_list": TORCH_CU126_ARCHS,
               "device_count": 4, "cc": [6, 1]},
              libs={"lib/libtorch_cuda.so": sass(50, 60, 70, 75, 80, 86, 90)})
    env.wheel("nvidia-cudnn-cu12", "9.10.2.21", CUDNN_9_10)
    checks, report, rc = probe_and_judge(a, env, p40s(4))
    check(rc == 0, "PyTorch cu126 with cuDNN 9.10 on P40s: exit 0 (got %d; %s)" %
          (rc, [(c["id"], c["summary"]) for c in checks if c["severity"] == "fail"]))
    expect(checks, "framework.torch.archs", "ok", "sm_60 code", gpu=1)
    expect(checks, "framework.torch.libraries", "ok", gpu=0)
    expect(checks, "framework.torch.ops", "ok", "matmul", gpu=3)
    expect(checks, "framework.torch.build", "ok", "CUDA 12.6")

    # CUDA_VISIBLE_DEVICES=0 on a node of four: it sees one, and says why; '' hides all.
    env.clear()
    env.torch({"version": "2.8.0+cu126", "cuda": "12.6", "arch_list": TORCH_CU126_ARCHS, "device_count": 1, "cc": [6, 1]})
    checks, _, rc = probe_and_judge(a, env, p40s(4, cvd="0"), env_extra={"CUDA_VISIBLE_DEVICES": "0"})
    expect(checks, "framework.torch.devices", "warn", "sees 1 of 4 GPUs: CUDA_VISIBLE_DEVICES=0 is set")
    env.torch({"version": "2.8.0+cu126", "cuda": "12.6", "arch_list": TORCH_CU126_ARCHS, "device_count": 0, "cc": [6, 1]})
    checks, _, rc = probe_and_judge(a, env, p40s(4, cvd=""), env_extra={"CUDA_VISIBLE_DEVICES": ""})
    expect(checks, "framework.torch.devices", "fail", "sees 0 of 4 GPUs: CUDA_VISIBLE_DEVICES= is set")
    check(rc == 1, "no GPU seen: exit 1 (got %d)" % rc)

    # A wrong all-reduce over two GPUs.
    env.torch({"version": "2.8.0+cu126", "cuda": "12.6", "arch_list": TORCH_CU126_ARCHS, "device_count": 2, "cc": [6, 1],
               "allreduce_wrong": True})
    checks, _, rc = probe_and_judge(a, env, p40s(2))
    expect(checks, "framework.torch.allreduce", "fail", "wrong sum")

    # A failing import, then one that hangs: findings, within the time limit, nothing left running.
    env.torch({"version": "0", "import_error": "libcudnn.so.9: cannot open shared object file"})
    checks, _, rc = probe_and_judge(a, env, p40s(1))
    expect(checks, "framework.torch.import", "fail", "libcudnn.so.9: cannot open shared object file")
    pid_file = os.path.join(a.workdir, "hang.pids")
    if os.path.exists(pid_file):
        os.unlink(pid_file)
    env.torch({"version": "0", "import_hang": True, "pid_file": pid_file})
    t0 = time.time()
    checks, _, rc = probe_and_judge(a, env, p40s(1), extra_args=["--timeout", "3"])
    took = time.time() - t0
    expect(checks, "framework.torch.import", "fail", "did not finish within 3 s (hung)")
    check(took < 60, "a hanging import is ended: nodebench took %.1f s with --timeout 3" % took)
    pids = [int(x) for x in open(pid_file).read().split()] if os.path.exists(pid_file) else []
    alive = [p for p in pids if os.path.exists("/proc/%d" % p)]
    check(pids and not alive, "the hanging probe (pids %s) is gone (alive: %s)" % (pids, alive))


def group_tensorflow(a, env):
    bi = {"is_cuda_build": True, "cuda_version": "12.5.1", "cudnn_version": "9",
          "cuda_compute_capabilities": ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"]}
    # TensorFlow 2.21 with the cuDNN pip resolves today: no sm_61 code in the operation libraries.
    env.clear()
    env.tensorflow({"version": "2.21.0", "build_info": bi, "device_count": 4, "cc": [6, 1],
                    "fail": {"conv_bn": [0, 1, 2, 3]}, "fail_message": "CUDNN_STATUS_EXECUTION_FAILED"})
    env.wheel("nvidia-cudnn-cu12", "9.28.0.42", CUDNN_9_28)
    junit = os.path.join(a.workdir, "fw.xml")
    prom = os.path.join(a.workdir, "fw.prom")
    checks, report, rc = probe_and_judge(a, env, p40s(4))
    check(rc == 1, "TensorFlow with cuDNN 9.28 on P40s: exit 1 (got %d)" % rc)
    c = expect(checks, "framework.tensorflow.libraries", "fail", "nvidia-cudnn-cu12 9.28.0.42 has no sm_61 code in libcudnn_cnn.so.9", gpu=0)
    check(c is not None and "nvidia-cudnn-cu12==9.10.2.21" in (c.get("fix") or ""), "the fix pins nvidia-cudnn-cu12==9.10.2.21 (%s)" % (c or {}).get("fix"))
    check(c is not None and "libcudnn_engines_precompiled" not in c["summary"], "a library with sm_61 code is not blamed")
    expect(checks, "framework.tensorflow.archs", "ok", "sm_60 code", gpu=0)
    c = expect(checks, "framework.tensorflow.ops", "fail", "conv_bn: RuntimeError: CUDNN_STATUS_EXECUTION_FAILED", gpu=1)
    check(c is not None and "framework.tensorflow.libraries" in (c.get("fix") or "") and "9.10.2.21" in (c.get("fix") or ""),
          "a failed convolution points at the library verdict and its fix (%s)" % (c or {}).get("fix"))
    expect(checks, "framework.tensorflow.allreduce", "ok", "MirroredStrategy")
    # The same report's checks as JUnit and Prometheus.
    p, _ = nodebench(a, ["--from", os.path.join(a.workdir, "report.json"), "--junit", junit, "--prometheus", prom])
    check(p.returncode == 1, "--from with --junit/--prometheus: exit 1 (got %d)" % p.returncode)
    xml = open(junit).read() if os.path.exists(junit) else ""
    check('name="framework.tensorflow.libraries gpu0"' in xml and "<failure" in xml, "JUnit names the failing check")
    text = open(prom).read() if os.path.exists(prom) else ""
    check('nodebench_frameworks_check_severity{check="framework.tensorflow.libraries",gpu="0"} 3' in text and
          "nodebench_frameworks_pass 0" in text, "Prometheus: the failing check at 3, pass 0")

    # A build whose minimum is 7.0: TensorFlow ignores the P40 and says so.
    env.clear()
    env.tensorflow({"version": "2.21.0", "build_info": dict(bi, cuda_compute_capabilities=["sm_70", "sm_80", "compute_90"]),
                    "device_count": 0, "cc": [6, 1],
                    "stderr_lines": ["2026-12-06 12:00:00.000000: I tensorflow/core/common_runtime/gpu/gpu_device.cc:2303] "
                                     "Ignoring visible gpu device (device: 0, name: Tesla P40, pci bus id: 0000:3b:00.0, "
                                     "compute capability: 6.1) with Cuda compute capability 6.1. The minimum required Cuda "
                                     "capability is 7.0."]})
    checks, _, rc = probe_and_judge(a, env, p40s(1))
    expect(checks, "framework.tensorflow.devices", "fail", "The minimum required Cuda capability is 7.0")
    expect(checks, "framework.tensorflow.archs", "fail", "carries no code for cc 6.1")

    # A CPU-only build on a GPU node.
    env.clear()
    env.tensorflow({"version": "2.21.0", "build_info": {"is_cuda_build": False}, "device_count": 0, "cc": [6, 1]})
    checks, _, rc = probe_and_judge(a, env, p40s(2))
    c = expect(checks, "framework.tensorflow.build", "fail", "CPU-only build")
    check(c is not None and "nvidia-cudnn-cu12==9.10.2.21" in (c.get("fix") or ""), "the CPU-only fix for a P40 pins cuDNN 9.10.2.21")


def group_static(a, env):
    # --for-cc 6.1 on a CUDA 13 environment (no GPU needed, nothing run).
    env.clear()
    env.torch({"version": "2.11.0+cu130", "cuda": "13.0", "arch_list": ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"],
               "device_count": 0, "cc": [9, 0]},
              libs={"lib/libtorch_cuda.so": sass(75, 80, 86, 90, 100, 120)})
    env.wheel("nvidia-cudnn-cu13", "9.19.0.56", {"nvidia/cudnn/lib/libcudnn_ops.so.9": sass(75, 80, 90, 100, 120) + ptx(120)})
    env.wheel("nvidia-nccl-cu13", "2.28.9", {"nvidia/nccl/lib/libnccl.so.2": sass(75, 80, 90, 100, 120) + ptx(120)})
    checks, report, rc = probe_and_judge(a, env, None, extra_args=["--for-cc", "6.1"])
    check(rc == 1, "--for-cc 6.1 on a CUDA 13 environment: exit 1 (got %d)" % rc)
    expect(checks, "framework.torch.archs", "fail", "carries no code for cc 6.1", gpu=0)
    c = expect(checks, "framework.torch.libraries", "fail", "nvidia-cudnn-cu13 9.19.0.56 has no sm_61 code in libcudnn_ops.so.9")
    check(c is not None and "nvidia-nccl-cu13 2.28.9 has no sm_61 code" in c["summary"], "NCCL named too")
    check(find(checks, "framework.torch.ops") is None and find(checks, "framework.torch.devices") is None,
          "--for-cc runs no operation and compares no GPU count")
    check("live" not in report["environments"][0]["frameworks"]["torch"]["probe"], "the probe ran nothing live")
    # The same environment for cc 9.0: passes.
    checks, _, rc = probe_and_judge(a, env, None, extra_args=["--for-cc", "9.0"])
    check(rc == 0, "--for-cc 9.0: exit 0 (got %d)" % rc)
    expect(checks, "framework.torch.libraries", "ok", gpu=0)
    # A driver older than the build's CUDA.
    checks, _, rc = probe_and_judge(a, env, {"source": "nvml", "nvml_gpus": 1, "cuda_driver_version": "12.8",
                                             "gpus": [{"index": 0, "cc": "9.0", "name": "H100"}]})
    expect(checks, "framework.torch.build", "fail", "needs a driver for CUDA 13.0")
    # Usage errors.
    p, _ = nodebench(a, ["--python", "/nonexistent/bin/python"])
    check(p.returncode == 2 and "--python: '/nonexistent/bin/python' is not an executable file" in p.stderr,
          "a missing --python: exit 2 naming it (%d, %r)" % (p.returncode, p.stderr[-200:]))
    p, _ = nodebench(a, ["--for-cc", "sixone"])
    check(p.returncode == 2 and "--for-cc: 'sixone' is not a compute capability" in p.stderr, "a bad --for-cc: exit 2")
    bad = os.path.join(a.workdir, "bad.json")
    with open(bad, "w") as f:
        json.dump({"schema": "nodebench.frameworks", "schema_version": 1, "node": {"gpus": [{"cc": 61}]}, "environments": []}, f)
    p, _ = nodebench(a, ["--from", bad])
    check(p.returncode == 2 and "'node.gpus' entries need a 'cc'" in p.stderr, "a malformed --from report: exit 2 naming the field")


def main():
    return run_group(__doc__, {"torch": group_torch, "tensorflow": group_tensorflow, "static": group_static})


if __name__ == "__main__":
    sys.exit(main())
