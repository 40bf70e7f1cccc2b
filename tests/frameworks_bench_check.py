#!/usr/bin/env python3
"""`nodebench frameworks --bench` driven by the stand-in `torch` and `tensorflow` packages, without a GPU.

usage: frameworks_bench_check.py --nodebench BIN --workdir DIR

The stand-ins (frameworks_standins.py) answer the bench's hook with a step of a chosen duration per
mode and GPU count, an error, or a hang; the bench times those steps as it times a real framework's.
The expected images/s are computed here from the chosen step times (batch x GPUs / step), the
expected ratios from them, and the floors from harness/profiles/frameworks.json. Every verdict of
--bench is driven: data-parallel scaling that fails (it trains on one GPU) and one that passes,
the fast settings, mixed precision slower on cc 6.1 and faster on cc 9.0, a mode that errors, one
out of memory, one that hangs (ended at --bench-timeout with its child process), usage errors.
"""
import json
import os
import sys
import time

from frameworks_standins import TORCH_CU126_ARCHS, check, expect, find, nodebench, run_group

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 16
SECONDS = "0.2"


def limits():
    b = json.load(open(os.path.join(ROOT, "harness", "profiles", "frameworks.json")))["bench"]
    return b["scaling_share_min"], b["gain_min_x"]


def bench(a, env, extra=(), timeout=120):
    out = os.path.join(a.workdir, "bench.json")
    if os.path.exists(out):
        os.unlink(out)
    args = ["--python", env.python, "--bench", "--bench-seconds", SECONDS, "--bench-batch", str(BATCH), "--out", out, *extra]
    p, took = nodebench(a, args, timeout=timeout)
    if p.returncode not in (0, 1) or not os.path.exists(out):
        print(p.stdout[-3000:], p.stderr[-3000:])
        raise SystemExit("FAIL: nodebench frameworks --bench exited %d" % p.returncode)
    return json.load(open(out)), p, took


def rec(report, fw, mode, gpus):
    for r in report.get("records", []):
        if r["framework"] == fw and r["mode"] == mode and r["params"]["gpus"] == gpus:
            return r
    return None


def ratio(report, fw, mode, gpus, base_mode, base_gpus):
    a, b = rec(report, fw, mode, gpus), rec(report, fw, base_mode, base_gpus)
    if not (a and b and a["status"] == "ok" and b["status"] == "ok"):
        return None
    return a["metrics"]["images_per_s"] / b["metrics"]["images_per_s"]


def gone(pid):
    """No such process, or a zombie (ended; its parent, killed too, left it to init to reap)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def near(got, want, what):
    """The stand-ins' steps advance the bench's clock by exactly their time: the figures are exact."""
    check(got is not None and abs(got - want) <= 1e-6 * want, "%s: %s, %.3f expected" % (what, got, want))


def group_torch(a, env, share, gain):
    # Four P40s (cc 6.1), step times in ms: the default settings on four GPUs take four times one GPU's
    # step (no more images/s: it trains on one GPU), the fast ones scale; mixed precision is slower.
    ms = {"default/1": 10, "amp/1": 20, "fast/1": 8, "default/4": 40, "fast/4": 8}
    env.clear()
    env.torch({"version": "2.8.0+cu126", "cuda": "12.6", "arch_list": TORCH_CU126_ARCHS, "device_count": 4, "cc": [6, 1],
               "bench": ms, "bench_first_ms": {"default/1": 300}})
    report, p, _ = bench(a, env)
    checks = report["checks"]
    check(p.returncode == 1, "a data-parallel run that trains on one GPU: exit 1 (got %d)" % p.returncode)
    check(len(report["records"]) == 5, "five records: default, amp and fast on one GPU, default and fast on four (%d)" %
          len(report["records"]))
    for key, step in ms.items():
        mode, n = key.split("/")
        r = rec(report, "torch", mode, int(n))
        check(r is not None and r["status"] == "ok", "%s: a record, ok" % key)
        if r:
            near(r["metrics"]["images_per_s"], BATCH * int(n) / (step / 1e3), "%s images/s" % key)
            check(r["primary_metric"] == "images_per_s" and r["params"]["batch"] == BATCH, "%s: primary metric, batch" % key)
    d1 = rec(report, "torch", "default", 1)
    if d1:
        near(d1["metrics"]["warmup_s"], 0.3 + 10 * 0.010, "the slow first step and nine more are warm-up (s)")
        near(d1["metrics"]["step_time_ms"], 10, "the timed step excludes the warm-up (ms)")
        check(d1["params"]["precision"] == "fp32" and d1["params"]["layout"] == "nchw", "default on cc 6.1: fp32/nchw")
    f1 = rec(report, "torch", "fast", 1)
    check(f1 is not None and f1["params"]["precision"] == "fp32" and f1["params"]["layout"] == "nhwc" and f1["params"]["compiled"],
          "fast on cc 6.1: no mixed precision, channels_last, compiled (%s)" % (f1 or {}).get("params"))
    a1 = rec(report, "torch", "amp", 1)
    check(a1 is not None and a1["params"]["precision"] == "fp16", "amp: fp16")
    floor4 = 1 + share * 3
    check(10 / 40 * 4 < 1 + share < floor4 < 4, "the scenario's ratios straddle the floors (%.2f, %.2f)" % (1 + share, floor4))
    # The ratio the verdict states: 4 GPUs x 10 ms / 40 ms.
    x = ratio(report, "torch", "default", 4, "default", 1)
    near(x, 4 * 10 / 40, "the default settings' 4-GPU ratio")
    check(x is not None and x < 1 + share, "the default settings' 4-GPU ratio %s is below %.2f" % (x, 1 + share))
    c = expect(checks, "framework.torch.scaling", "fail",
               "PyTorch 2.8.0+cu126 on 4 GPUs reaches %.2fx its 1-GPU rate (default settings): it trains on one GPU" % (x or 0))
    check(c is not None and "default settings" in c["summary"] and "%.2fx expected" % floor4 in c["evidence"],
          "the failing scaling names the mode and its floor (%s)" % (c or {}).get("evidence"))
    expect(checks, "framework.torch.scaling", "ok", "on 4 GPUs reaches")
    x = ratio(report, "torch", "amp", 1, "default", 1)
    near(x, 10 / 20, "mixed precision's ratio")
    check(x is not None and x < gain, "mixed precision at %s is below the gain floor %.2f" % (x, gain))
    expect(checks, "framework.torch.amp", "warn", "mixed precision is slower, not faster on cc 6.1: %.2fx default" % (x or 0))
    x = ratio(report, "torch", "fast", 1, "default", 1)
    near(x, 10 / 8, "the fast settings' ratio")
    expect(checks, "framework.torch.fast", "ok", "channels_last and torch.compile reach %.2fx default settings" % (x or 0))
    expect(checks, "framework.torch.bench", "ok", "default settings on 1 GPU")
    check(find(checks, "framework.torch.bench", "fail") is None, "no mode failed")
    # JUnit and Prometheus from the same report.
    junit, prom = os.path.join(a.workdir, "b.xml"), os.path.join(a.workdir, "b.prom")
    p, _ = nodebench(a, ["--from", os.path.join(a.workdir, "bench.json"), "--junit", junit, "--prometheus", prom])
    check(p.returncode == 1, "--from the bench report: exit 1 (got %d)" % p.returncode)
    xml = open(junit).read() if os.path.exists(junit) else ""
    check('name="framework.torch.scaling"' in xml and "trains on one GPU" in xml, "JUnit: the scaling failure")
    text = open(prom).read() if os.path.exists(prom) else ""
    check('nodebench_frameworks_check_severity{check="framework.torch.scaling",gpu="all"} 3' in text,
          "Prometheus: the scaling check at 3")
    check('nodebench_frameworks_bench_images_per_second{framework="torch",mode="fast",gpus="4",batch="16"' in text,
          "Prometheus: the bench rates")


def group_tensorflow(a, env, share, gain):
    # Two GPUs of cc 9.0: mixed precision pays, the default settings scale, the fast ones run out of memory on two.
    ms = {"default/1": 10, "amp/1": 5, "fast/1": 4, "default/2": 10,
          "fast/2": "ResourceExhaustedError: OOM when allocating tensor with shape[32,64,112,112]"}
    env.clear()
    bi = {"is_cuda_build": True, "cuda_version": "12.5.1", "cudnn_version": "9", "cuda_compute_capabilities": ["sm_80", "compute_90"]}
    env.tensorflow({"version": "2.21.0", "build_info": bi, "device_count": 2, "cc": [9, 0], "name": "H100", "bench": ms})
    report, p, _ = bench(a, env)
    checks = report["checks"]
    check(p.returncode == 1, "a mode that fails: exit 1 (got %d)" % p.returncode)
    f2 = rec(report, "tensorflow", "fast", 2)
    check(f2 is not None and f2["status"] == "failed" and f2["reason_kind"] == "oom" and "OOM" in f2["reason"],
          "the out-of-memory mode: failed, oom (%s)" % (f2 or {}).get("reason"))
    c = expect(checks, "framework.tensorflow.bench", "fail", "on 2 GPUs: RuntimeError: ResourceExhaustedError")
    check(c is not None and "--bench-batch" in (c.get("fix") or ""), "out of memory: a smaller batch is the fix")
    x = ratio(report, "tensorflow", "default", 2, "default", 1)
    near(x, 2.0, "the default settings' 2-GPU ratio")
    check(x is not None and x >= 1 + share, "two GPUs at %s pass the floor %.2f" % (x, 1 + share))
    expect(checks, "framework.tensorflow.scaling", "ok", "TensorFlow 2.21.0 on 2 GPUs reaches %.2fx its 1-GPU rate" % (x or 0))
    x = ratio(report, "tensorflow", "amp", 1, "default", 1)
    check(x is not None and x >= gain, "mixed precision at %s passes the gain floor %.2f" % (x, gain))
    expect(checks, "framework.tensorflow.amp", "ok", "mixed precision reaches %.2fx default on cc 9.0" % (x or 0))
    x = ratio(report, "tensorflow", "fast", 1, "default", 1)
    expect(checks, "framework.tensorflow.fast", "ok", "mixed precision and XLA reach %.2fx default settings" % (x or 0))
    d1 = rec(report, "tensorflow", "default", 1)
    check(d1 is not None and d1["params"]["precision"] == "tf32" and d1["params"]["layout"] == "nhwc",
          "TensorFlow's default on cc 9.0: tf32/nhwc (%s)" % (d1 or {}).get("params"))
    near(rec(report, "tensorflow", "default", 2)["metrics"]["images_per_s"], 2 * BATCH / 0.010, "default/2 images/s")


def group_hang(a, env, share, gain):
    # One GPU; the default mode hangs with a child process: ended at --bench-timeout, the rest still runs.
    pid_file = os.path.join(a.workdir, "bench-hang.pids")
    if os.path.exists(pid_file):
        os.unlink(pid_file)
    env.clear()
    env.torch({"version": "2.8.0+cu126", "cuda": "12.6", "arch_list": TORCH_CU126_ARCHS, "device_count": 1, "cc": [9, 0],
               "bench": {"default/1": "hang", "amp/1": 5, "fast/1": "RuntimeError: Dynamo failed to compile"},
               "pid_file": pid_file})
    t0 = time.time()
    report, p, _ = bench(a, env, extra=["--bench-timeout", "3"])
    took = time.time() - t0
    checks = report["checks"]
    d1 = rec(report, "torch", "default", 1)
    check(d1 is not None and d1["status"] == "failed" and d1["reason_kind"] == "timeout", "the hanging mode: failed, timeout")
    expect(checks, "framework.torch.bench", "fail", "default settings on 1 GPU: did not finish within 3 s")
    expect(checks, "framework.torch.bench", "fail", "Dynamo failed to compile")
    expect(checks, "framework.torch.bench", "ok", "mixed precision")
    check(find(checks, "framework.torch.amp") is None and find(checks, "framework.torch.fast") is None,
          "no ratio to a default mode that gave no rate")
    expect(checks, "framework.torch.scaling", "info", "sees one GPU")
    check(p.returncode == 1, "a hanging mode: exit 1 (got %d)" % p.returncode)
    check(took < 60, "the hang is ended: %.1f s with --bench-timeout 3" % took)
    pids = [int(x) for x in open(pid_file).read().split()] if os.path.exists(pid_file) else []
    alive = [q for q in pids if not gone(q)]
    check(len(pids) >= 2 and not alive, "the hanging bench and its child (pids %s) are gone (alive: %s)" % (pids, alive))


def group_usage(a, env, share, gain):
    for args, text in ((["--bench", "--for-cc", "6.1"], "frameworks --bench: trains on this node's GPUs"),
                       (["--bench", "--from", "x.json"], "frameworks --bench: runs here"),
                       (["--bench-batch", "0"], "--bench-batch"),
                       (["--bench-seconds", "nan"], "--bench-seconds")):
        p, _ = nodebench(a, args)
        check(p.returncode == 2 and text in p.stderr, "%s: exit 2 naming it (%d, %r)" % (" ".join(args), p.returncode, p.stderr[-200:]))
    bad = os.path.join(a.workdir, "bad-records.json")
    with open(bad, "w") as f:
        json.dump({"schema": "nodebench.frameworks", "schema_version": 1, "node": {"gpus": []}, "environments": [],
                   "records": [{"params": {"gpus": 1}, "status": "ok", "metrics": {"images_per_s": "fast"}}]}, f)
    p, _ = nodebench(a, ["--from", bad])
    check(p.returncode == 2 and "records[0].metrics.images_per_s must be a number" in p.stderr,
          "a malformed bench record: exit 2 naming it (%r)" % p.stderr[-200:])


def main():
    share, gain = limits()
    return run_group(__doc__, {name: (lambda a, env, g=g: g(a, env, share, gain)) for name, g in
                               (("torch", group_torch), ("tensorflow", group_tensorflow), ("hang", group_hang),
                                ("usage", group_usage))}, folder_prefix="bench-")


if __name__ == "__main__":
    sys.exit(main())
