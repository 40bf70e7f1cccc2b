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
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import time

FAILS = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        FAILS.append(what)


# ---- Fake CUDA libraries: ELF64 files whose .nv_fatbin holds entries of chosen architectures ----

def fatbin(entries):
    """entries: [(kind, arch, flags)], kind 1 PTX, 2 SASS; flags 0x100000 arch-specific."""
    body = b""
    for kind, arch, flags in entries:
        payload = b"\xab" * 16
        h = struct.pack("<HHIQIIHHIIIQQQ", kind, 0x0101, 64, len(payload), 0, 0, 0, 0, arch, 0, 0, flags | 0x11, 0, 0)
        assert len(h) == 64
        body += h + payload
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def elf_with_fatbin(data):
    names = b"\0.nv_fatbin\0.shstrtab\0"
    head = bytearray(64)
    head[0:7] = b"\x7fELF\x02\x01\x01"
    out = bytes(head) + data
    names_at = len(out)
    out += names
    out += b"\0" * (-len(out) % 8)
    sh_at = len(out)
    sh = bytearray(3 * 64)
    struct.pack_into("<IIQQQQ", sh, 64, 1, 1, 0, 0, 64, len(data))
    struct.pack_into("<IIQQQQ", sh, 128, 12, 3, 0, 0, names_at, len(names))
    out = bytearray(out + bytes(sh))
    struct.pack_into("<HH", out, 0x10, 3, 62)
    struct.pack_into("<Q", out, 0x28, sh_at)
    struct.pack_into("<HHHHH", out, 0x34, 64, 0, 0, 64, 3)
    struct.pack_into("<H", out, 0x3E, 2)
    return bytes(out)


def sass(*ccs):
    return [(2, c, 0) for c in ccs]


def ptx(*ccs):
    return [(1, c, 0) for c in ccs]


# ---- Stand-in packages ----------------------------------------------------------------------------

COMMON = r'''
import json, os, sys, time
_CFG = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "standin.json")))
if _CFG.get("pid_file"):
    with open(_CFG["pid_file"], "a") as _f:
        _f.write("%d\n" % os.getpid())
for _line in _CFG.get("stderr_lines", []):
    sys.stderr.write(_line + "\n")
sys.stderr.flush()
if _CFG.get("import_hang"):
    time.sleep(3600)
if _CFG.get("import_error"):
    raise ImportError(_CFG["import_error"])
__version__ = _CFG["version"]


class _NS(object):
    pass


def _fail(op, gpu):
    if gpu is not None and gpu in _CFG.get("fail", {}).get(op, []):
        raise RuntimeError(_CFG.get("fail_message", "CUDA error: no kernel image is available for execution on the device"))


class T(object):
    """A stand-in tensor: every operation gives a tensor of the same value on the same GPU."""
    def __init__(self, value=1.0, gpu=None):
        self.value, self.gpu, self.grad = float(value), gpu, None

    def to(self, dev):
        return T(self.value, getattr(dev, "index", None))

    def __matmul__(self, o):
        _fail("matmul", self.gpu)
        return T(self.value, self.gpu)

    def __sub__(self, o):
        return T(self.value - o.value, self.gpu)

    def __mul__(self, o):
        return T(self.value * (o.value if isinstance(o, T) else o), self.gpu)

    def __float__(self):
        return self.value

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *a, **k: T(self.value, self.gpu)
'''

TORCH = COMMON + r'''
version = _NS()
version.cuda = _CFG.get("cuda")
version.hip = None


class _Device(object):
    def __init__(self, kind, index=None):
        self.type, self.index = kind, index


def device(kind, index=None):
    return _Device(kind, index)


def randn(*shape, **kw):
    t = T(1.0, getattr(kw.get("device"), "index", None))
    t.grad = T(1.0)
    return t


def full(shape, value, device=None):
    return T(value)


class _Module(object):
    op = None

    def __init__(self, *a, **k):
        self.gpu = None

    def to(self, dev):
        self.gpu = dev.index
        return self

    def __call__(self, x):
        _fail(self.op, self.gpu)
        return T(x.value, self.gpu)


class _Conv(_Module):
    op = "conv_bn"


nn = _NS()
nn.Conv2d = _Conv
nn.BatchNorm2d = _Module

_n = _CFG.get("device_count", 0)
cuda = _NS()
cuda.is_available = lambda: bool(_CFG.get("cuda")) and _n > 0
cuda.device_count = lambda: _n
cuda.get_device_capability = lambda i: tuple(_CFG["cc"])
cuda.get_device_name = lambda i: _CFG.get("name", "Tesla P40")
cuda.synchronize = lambda *a: None
cuda.empty_cache = lambda: None
cuda.set_device = lambda i: None
cuda.nccl = _NS()
cuda.nccl.version = lambda: tuple(_CFG.get("nccl", (2, 21, 5)))
backends = _NS()
backends.cudnn = _NS()
backends.cudnn.version = lambda: _CFG.get("cudnn")
backends.cudnn.enabled = True
_C = _NS()
_C._cuda_getArchFlags = lambda: " ".join(_CFG.get("arch_list", []))
'''

TORCH_DISTRIBUTED = r'''
import torch
_world = [1]


def init_process_group(backend, init_method=None, rank=0, world_size=1):
    _world[0] = world_size


def all_reduce(t):
    n = _world[0]
    t.value = 1.0 if torch._CFG.get("allreduce_wrong") else n * (n + 1) / 2.0


def destroy_process_group():
    pass
'''

TORCH_MP = "from multiprocessing import *\nfrom multiprocessing import get_context\n"

TF = COMMON + r'''
import contextlib
float32, float64 = "float32", "float64"
_cur = [None]


@contextlib.contextmanager
def device(name):
    old = _cur[0]
    _cur[0] = int(name.split(":")[-1]) if name.upper().startswith("/GPU") else None
    try:
        yield
    finally:
        _cur[0] = old


def _v(x):
    return x.value if isinstance(x, T) else float(x)


sysconfig = _NS()
sysconfig.get_build_info = lambda: dict(_CFG["build_info"])
test = _NS()
test.is_built_with_cuda = lambda: bool(_CFG["build_info"].get("is_cuda_build"))


class _PD(object):
    def __init__(self, i):
        self.index, self.name = i, "/physical_device:GPU:%d" % i


_n = _CFG.get("device_count", 0)
config = _NS()
config.list_physical_devices = lambda kind: [_PD(i) for i in range(_n)]
config.experimental = _NS()
config.experimental.set_memory_growth = lambda g, v: None
config.experimental.get_device_details = lambda g: {"compute_capability": tuple(_CFG["cc"]), "device_name": _CFG.get("name", "Tesla P40")}
random = _NS()
random.normal = lambda shape, seed=None: T(1.0, _cur[0])
linalg = _NS()


def _matmul(a, b):
    _fail("matmul", _cur[0])
    return T(a.value, _cur[0])


linalg.matmul = _matmul
cast = lambda x, dtype: T(_v(x))
identity = lambda x: T(_v(x), _cur[0])
abs = lambda x: T(_v(x))
reduce_max = reduce_min = reduce_sum = lambda x: T(_v(x))
ones = zeros = lambda shape: T(1.0)
Variable = lambda x: x
nn = _NS()


def _conv2d(x, w, strides, padding):
    _fail("conv_bn", _cur[0])
    return T(1.0, _cur[0])


nn.conv2d = _conv2d
nn.relu = lambda x: x
compat = _NS()
compat.v1 = _NS()
compat.v1.nn = _NS()
compat.v1.nn.fused_batch_norm = lambda y, s, o, is_training=True: (y, T(), T())


class GradientTape(object):
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False

    def gradient(self, loss, variables):
        return [T(1.0) for _ in variables]


class _Replica(object):
    def __init__(self, i, n):
        self.replica_id_in_sync_group, self._n = i, n

    def all_reduce(self, op, value):
        n = self._n
        return T(1.0 if _CFG.get("allreduce_wrong") else n * (n + 1) / 2.0)


_ctx = [None]
distribute = _NS()
distribute.get_replica_context = lambda: _ctx[0]


class _Mirrored(object):
    def __init__(self, devices):
        self.num_replicas_in_sync = len(devices)

    def run(self, fn):
        out = []
        for i in range(self.num_replicas_in_sync):
            _ctx[0] = _Replica(i, self.num_replicas_in_sync)
            out.append(fn())
        return out

    def experimental_local_results(self, out):
        return out


distribute.MirroredStrategy = _Mirrored
'''


class Env:
    """A virtual environment with stand-in packages."""

    def __init__(self, root):
        self.root = root
        if os.path.exists(root):
            shutil.rmtree(root)
        made = subprocess.run([sys.executable, "-m", "venv", "--without-pip", root], capture_output=True, text=True)
        self.python = os.path.join(root, "bin", "python")
        if made.returncode == 0:
            out = subprocess.run([self.python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 capture_output=True, text=True, check=True)
            self.site = out.stdout.strip()
        else:  # no venv module here (Debian without python3-venv): an interpreter with the packages first on its path
            print("note: python3 -m venv failed (%s); using a wrapper with PYTHONPATH" % made.stderr.strip()[-200:])
            self.site = os.path.join(root, "site-packages")
            os.makedirs(self.site, exist_ok=True)
            os.makedirs(os.path.dirname(self.python), exist_ok=True)
            with open(self.python, "w") as f:
                f.write('#!/bin/sh\nPYTHONPATH="%s${PYTHONPATH:+:$PYTHONPATH}" exec "%s" "$@"\n' % (self.site, sys.executable))
            os.chmod(self.python, 0o755)

    def clear(self):
        for name in os.listdir(self.site):
            if name in ("torch", "tensorflow", "nvidia") or name.startswith("nvidia_"):
                shutil.rmtree(os.path.join(self.site, name))

    def package(self, name, init, cfg, extra=None, libs=None):
        d = os.path.join(self.site, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "__init__.py"), "w") as f:
            f.write(init)
        with open(os.path.join(d, "standin.json"), "w") as f:
            json.dump(cfg, f)
        for fn, text in (extra or {}).items():
            with open(os.path.join(d, fn), "w") as f:
                f.write(text)
        for rel, entries in (libs or {}).items():
            p = os.path.join(d, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(elf_with_fatbin(fatbin(entries)))

    def wheel(self, dist, version, libs):
        """An nvidia-* wheel: its libraries under nvidia/, its dist-info naming them in RECORD."""
        info = os.path.join(self.site, "%s-%s.dist-info" % (dist.replace("-", "_"), version))
        os.makedirs(info, exist_ok=True)
        record = []
        for rel, entries in libs.items():
            p = os.path.join(self.site, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(elf_with_fatbin(fatbin(entries)))
            record.append(rel + ",,")
        with open(os.path.join(info, "METADATA"), "w") as f:
            f.write("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (dist, version))
        with open(os.path.join(info, "RECORD"), "w") as f:
            f.write("\n".join(record + [os.path.basename(info) + "/METADATA,,", os.path.basename(info) + "/RECORD,,"]) + "\n")

    def torch(self, cfg, libs=None):
        self.package("torch", TORCH, cfg, {"distributed.py": TORCH_DISTRIBUTED, "multiprocessing.py": TORCH_MP}, libs)

    def tensorflow(self, cfg, libs=None):
        self.package("tensorflow", TF, cfg, None, libs)


# ---- Running nodebench ----------------------------------------------------------------------------

def nodebench(a, args, env_extra=None, timeout=120):
    env = dict(os.environ)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env.pop("VIRTUAL_ENV", None)
    env.pop("CONDA_PREFIX", None)
    env.update(env_extra or {})
    t0 = time.time()
    p = subprocess.run([a.nodebench, "frameworks", *args], capture_output=True, text=True, env=env, timeout=timeout)
    return p, time.time() - t0


def probe_and_judge(a, env, node, extra_args=(), env_extra=None):
    """Probes `env` here, then judges the report with `node` as NVML's view; (checks, report, exit)."""
    out = os.path.join(a.workdir, "report.json")
    p, _ = nodebench(a, ["--python", env.python, "--out", out, *extra_args], env_extra)
    if p.returncode not in (0, 1) or not os.path.exists(out):
        print(p.stdout[-3000:], p.stderr[-3000:])
        raise SystemExit("FAIL: nodebench frameworks exited %d" % p.returncode)
    report = json.load(open(out))
    if node is not None:
        report["node"] = node
        with open(out, "w") as f:
            json.dump(report, f)
        p, _ = nodebench(a, ["--from", out, "--json"])
        if p.returncode not in (0, 1):
            print(p.stderr[-3000:])
            raise SystemExit("FAIL: nodebench frameworks --from exited %d" % p.returncode)
        report = json.loads(p.stdout)
    return report["checks"], report, p.returncode


def p40s(n, cvd=None, cuda="12.8"):
    return {"source": "nvml", "nvml_gpus": n, "cuda_visible_devices": cvd, "cuda_driver_version": cuda,
            "gpus": [{"index": i, "cc": "6.1", "name": "Tesla P40"} for i in range(n)]}


def find(checks, cid, severity=None, gpu="any", text=None):
    for c in checks:
        if c["id"] != cid:
            continue
        if gpu != "any" and c.get("gpu") != gpu:
            continue
        if severity and c["severity"] != severity:
            continue
        if text and text not in c["summary"] + " " + (c.get("evidence") or "") + " " + (c.get("fix") or ""):
            continue
        return c
    return None


def expect(checks, cid, severity, text=None, gpu="any"):
    c = find(checks, cid, severity, gpu, text)
    got = [(x["id"], x.get("gpu"), x["severity"], x["summary"]) for x in checks if x["id"] == cid]
    check(c is not None, "%s %s%s (got %s)" % (cid, severity, " with '%s'" % text if text else "", got))
    return c


TORCH_CU128_ARCHS = ["sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
TORCH_CU126_ARCHS = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
CUDNN_9_10 = {"nvidia/cudnn/lib/libcudnn_ops.so.9": sass(50, 60, 61, 70, 80, 90, 100, 120) + ptx(120),
              "nvidia/cudnn/lib/libcudnn_cnn.so.9": sass(50, 60, 61, 70, 75, 80, 90, 100, 120) + ptx(120)}
CUDNN_9_28 = {"nvidia/cudnn/lib/libcudnn_ops.so.9": sass(75, 80, 90, 100, 120) + ptx(120),
              "nvidia/cudnn/lib/libcudnn_cnn.so.9": sass(75, 80, 90, 100, 120) + ptx(120),
              "nvidia/cudnn/lib/libcudnn_engines_precompiled.so.9": sass(50, 60, 61, 75, 80)}


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
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("group", choices=["torch", "tensorflow", "static"])
    ap.add_argument("--nodebench", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    a.workdir = os.path.join(a.workdir, a.group)
    os.makedirs(a.workdir, exist_ok=True)
    env = Env(os.path.join(a.workdir, "venv"))
    {"torch": group_torch, "tensorflow": group_tensorflow, "static": group_static}[a.group](a, env)
    if FAILS:
        print("%d check(s) failed" % len(FAILS))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
