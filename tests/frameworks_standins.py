"""The stand-in `torch` and `tensorflow` packages and the helpers of the `nodebench frameworks` tests
(frameworks_check.py, frameworks_bench_check.py): fake CUDA libraries with chosen fatbin
architectures, a virtual environment holding the stand-ins and fake nvidia-* wheels, nodebench run
on it and its verdicts looked up.

A stand-in answers from the JSON file beside it (standin.json): version, build, arch list, devices,
which operations fail on which GPU, a failing or hanging import, the log lines TensorFlow prints,
and for the bench (`--bench`) the step time of each mode and GPU count (`bench`: {"MODE/GPUS": ms,
"MODE/GPUS": "error text" or "hang"}), answered through the bench's stand-in hook
`_nodebench_bench_step`, whose steps advance a clock that replaces the bench's own: the bench
measures exactly the chosen times, so no verdict depends on the machine's load.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

FAILS = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        FAILS.append(what)


from fatbin_standins import elf_with_fatbin, fatbin, ptx, sass  # noqa: F401 (the stand-ins' libraries)


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


def _nodebench_bench_step(mode, gpus, batch):
    """The bench's stand-in hook: a step of the configured milliseconds (after a slower first step,
    as a compilation makes it), an error, or a hang with a child process. The steps advance a clock
    that stands in for the bench's own (its module's `time`), so the times it measures are exactly
    the configured ones, whatever the load of the machine."""
    spec = _CFG.get("bench", {}).get("%s/%d" % (mode, gpus))
    if spec is None:
        raise RuntimeError("the stand-in has no bench answer for %s on %d GPUs" % (mode, gpus))
    if spec == "hang":
        import subprocess
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        with open(_CFG["pid_file"], "a") as f:
            f.write("%d\n%d\n" % (os.getpid(), child.pid))
        time.sleep(3600)
    if not isinstance(spec, (int, float)):
        raise RuntimeError(spec)
    now = [1000.0]

    class _Clock(object):
        def perf_counter(self):
            return now[0]

        def time(self):
            return now[0]

    sys.modules["__main__"].time = _Clock()
    first = [_CFG.get("bench_first_ms", {}).get("%s/%d" % (mode, gpus), 0)]

    def step():
        now[0] += (first[0] + spec) / 1e3
        first[0] = 0
    return step


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


def run_group(doc, groups, folder_prefix=""):
    """A check script's main: parses GROUP --nodebench BIN --workdir DIR, runs groups[GROUP](a, env)
    in WORKDIR/PREFIX+GROUP with a fresh stand-in environment there; 1 when a check failed."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("group", choices=list(groups))
    ap.add_argument("--nodebench", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    a.workdir = os.path.join(a.workdir, folder_prefix + a.group)
    os.makedirs(a.workdir, exist_ok=True)
    env = Env(os.path.join(a.workdir, "venv"))
    groups[a.group](a, env)
    if FAILS:
        print("%d check(s) failed" % len(FAILS))
        return 1
    return 0
