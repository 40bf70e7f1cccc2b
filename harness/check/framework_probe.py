# nodebench's framework probe (`nodebench frameworks`, docs/FRAMEWORKS.md). nodebench embeds this
# file, writes it to a temporary file and runs it in the Python under test, one process per
# question, each under a timeout:
#   python PROBE env  OUT.json            the interpreter, installed frameworks, nvidia-* wheels
#   python PROBE torch|tensorflow|jax OUT.json [--live] [--allreduce]
#                                         import it; its build, arch list, devices, loaded
#                                         libraries; with --live a matmul and a convolution with
#                                         batch norm on every GPU it sees, with --allreduce one
#                                         all-reduce over all of them through its own multi-GPU path
# It writes one JSON object to OUT.json (what it found so far, also when an operation fails) and
# prints nothing nodebench reads; the framework's own log lines (TensorFlow's "Ignoring visible
# gpu device") go to stderr, which nodebench keeps. Standard library only, Python 3.8 and newer.
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # framework_common.py, beside this file
from framework_common import OUT, err_text, run_and_save, save, start  # noqa: E402

LIB_PREFIXES = ("libcudnn", "libcublas", "libnccl", "libcudart", "libcufft", "libcusparse", "libcusolver",
                "libcurand", "libnvrtc", "libnvJitLink", "libtorch_cuda", "libc10_cuda", "libtensorflow",
                "_pywrap_tensorflow", "libtensorflow_framework", "libxla", "xla_extension", "libjax",
                "libcupti", "libnvshmem", "libcusparseLt")


def loaded_libraries():
    """CUDA-related shared libraries mapped into this process (from /proc/self/maps)."""
    found = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) < 6:
                    continue
                path = parts[5].strip()
                base = os.path.basename(path)
                if path.startswith("/") and ".so" in base and base.startswith(LIB_PREFIXES) and path not in found:
                    found.append(path)
    except OSError:
        pass
    return found


def wheel_files():
    """{absolute path of each shared library an nvidia-* (or framework) wheel installed: 'dist==version'},
    and {dist: version} of every installed distribution whose name starts with nvidia-."""
    libs, versions = {}, {}
    try:
        from importlib import metadata
    except ImportError:  # Python < 3.8
        return libs, versions
    for dist in metadata.distributions():
        try:
            name = dist.metadata["Name"] or ""
        except Exception:
            continue
        low = name.lower()
        if not (low.startswith("nvidia-") or low in ("torch", "tensorflow", "tensorflow-cpu", "tf-nightly", "jaxlib",
                                                     "jax-cuda12-plugin", "jax-cuda12-pjrt", "jax-cuda13-plugin",
                                                     "jax-cuda13-pjrt")):
            continue
        if low.startswith("nvidia-"):
            versions[name] = dist.version
        for f in dist.files or []:
            s = str(f)
            if ".so" in os.path.basename(s):
                try:
                    p = os.path.realpath(str(dist.locate_file(f)))
                except Exception:
                    continue
                libs[p] = "%s==%s" % (name, dist.version)
    return libs, versions


def shipped_libraries(package_dir):
    """Shared libraries a framework package carries in its own folder (torch/lib, tensorflow/...)."""
    out = []
    for root, _dirs, files in os.walk(package_dir):
        for fn in files:
            if ".so" in fn and fn.startswith(LIB_PREFIXES):
                out.append(os.path.join(root, fn))
        if len(out) > 200:
            break
    return sorted(out)


def probe_env():
    import importlib.util
    OUT["python"] = {
        "executable": sys.executable,
        "version": sys.version.split()[0],
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "virtual_env": os.environ.get("VIRTUAL_ENV"),
        "conda_prefix": os.environ.get("CONDA_PREFIX"),
    }
    OUT["frameworks"] = {}
    for mod in ("torch", "tensorflow", "jax"):
        spec = None
        try:
            spec = importlib.util.find_spec(mod)
        except Exception as e:  # a broken package: still "installed"
            OUT["frameworks"][mod] = {"installed": True, "find_error": err_text(e)}
            continue
        if spec is not None:
            loc = spec.origin or (list(spec.submodule_search_locations or [None])[0])
            OUT["frameworks"][mod] = {"installed": True, "location": loc}
    libs, versions = wheel_files()
    OUT["nvidia_wheels"] = versions
    OUT["wheel_libraries"] = libs
    OUT["cuda_visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES")
    save()


def relative_error(diff_max, ref_max):
    """A matmul's largest difference from the host's float64 product, relative to the product's
    largest value; an Error when it is too large (a wrong result is a failure, as an exception is)."""
    rel = float(diff_max) / max(float(ref_max), 1e-30)
    if not rel <= 1e-2:  # also NaN; TF32 (TensorFlow's default on Ampere and newer) stays well inside
        raise RuntimeError("wrong result: largest relative error %.3g (at most 1e-2 expected)" % rel)
    return {"max_rel_err": rel}


def finite(x):
    v = float(x)
    if not math.isfinite(v):
        raise RuntimeError("non-finite gradient")


def live_op(results, gpu, op, fn):
    entry = {"gpu": gpu, "op": op}
    t0 = time.time()
    try:
        extra = fn()
        entry["ok"] = True
        if isinstance(extra, dict):
            entry.update(extra)
    except Exception as e:
        entry["ok"] = False
        entry["error"] = err_text(e)
    entry["ms"] = round((time.time() - t0) * 1e3, 2)
    results.append(entry)
    save()


def probe_torch(live, allreduce):
    fw = OUT
    fw["framework"] = "torch"
    t0 = time.time()
    import torch
    fw["import_s"] = round(time.time() - t0, 3)
    fw["version"] = torch.__version__
    fw["location"] = os.path.dirname(torch.__file__)
    cuda = getattr(torch.version, "cuda", None)
    fw["built"] = {"cuda": cuda, "hip": getattr(torch.version, "hip", None)}
    fw["cuda_build"] = cuda is not None
    try:
        fw["built"]["cudnn"] = torch.backends.cudnn.version() if cuda else None
    except Exception as e:
        fw["built"]["cudnn_error"] = err_text(e)
    try:
        v = torch.cuda.nccl.version() if cuda else None
        fw["built"]["nccl"] = ".".join(str(x) for x in v) if isinstance(v, tuple) else v
    except Exception as e:
        fw["built"]["nccl_error"] = err_text(e)
    # The arch list: torch._C._cuda_getArchFlags() answers without a GPU; get_arch_list() needs one.
    arch = None
    try:
        flags = torch._C._cuda_getArchFlags() if cuda else ""
        arch = flags.split() if flags else []
    except Exception:
        try:
            arch = torch.cuda.get_arch_list()
        except Exception as e:
            fw["arch_error"] = err_text(e)
    fw["arch_list"] = arch or []
    fw["shipped_libraries"] = shipped_libraries(fw["location"])
    save()
    devices = []
    try:
        fw["cuda_available"] = bool(torch.cuda.is_available())
        n = torch.cuda.device_count() if fw["cuda_available"] else 0
    except Exception as e:
        fw["cuda_available"] = False
        fw["cuda_error"] = err_text(e)
        n = 0
    for i in range(n):
        d = {"index": i}
        try:
            cc = torch.cuda.get_device_capability(i)
            d["cc"] = "%d.%d" % cc
            d["name"] = torch.cuda.get_device_name(i)
        except Exception as e:
            d["error"] = err_text(e)
        devices.append(d)
    fw["devices"] = devices
    fw["device_count"] = n
    save()
    if live and n:
        results = fw.setdefault("live", [])
        for i in range(n):
            dev = torch.device("cuda", i)

            def mm(dev=dev):
                a = torch.randn(256, 256)
                b = torch.randn(256, 256)
                c = (a.to(dev) @ b.to(dev)).cpu()
                torch.cuda.synchronize(dev)
                ref = a.double() @ b.double()
                return relative_error((c.double() - ref).abs().max().item(), ref.abs().max().item())

            def conv_bn(dev=dev):
                conv = torch.nn.Conv2d(16, 32, 3, padding=1).to(dev)
                bn = torch.nn.BatchNorm2d(32).to(dev)
                x = torch.randn(8, 16, 32, 32, device=dev, requires_grad=True)
                y = bn(conv(x)).relu().sum()
                y.backward()
                torch.cuda.synchronize(dev)
                finite(x.grad.sum().item())
                return {"cudnn_enabled": bool(torch.backends.cudnn.enabled)}

            live_op(results, i, "matmul", mm)
            live_op(results, i, "conv_bn", conv_bn)
        torch.cuda.empty_cache()
    if allreduce and n >= 2:
        def nccl_allreduce():
            import torch.distributed as dist
            import torch.multiprocessing as mp
            import tempfile
            store = tempfile.mktemp(prefix="nodebench-fw-")
            ctx = mp.get_context("spawn")
            q = ctx.Queue()
            procs = [ctx.Process(target=_torch_rank, args=(r, n, store, q)) for r in range(n)]
            for p in procs:
                p.start()
            got = []
            for _ in range(n):
                got.append(q.get(timeout=120))
            for p in procs:
                p.join(30)
            try:
                os.unlink(store)
            except OSError:
                pass
            bad = [g for g in got if g[1] != "ok"]
            if bad:
                raise RuntimeError("; ".join("rank %d: %s" % (g[0], g[1]) for g in bad))
            return {"ranks": n, "path": "torch.distributed (NCCL)"}

        live_op(fw.setdefault("live", []), "all", "allreduce", nccl_allreduce)
    fw["loaded_libraries"] = loaded_libraries()
    save()


def _torch_rank(rank, world, store, q):
    try:
        import torch
        import torch.distributed as dist
        torch.cuda.set_device(rank)
        dist.init_process_group("nccl", init_method="file://" + store, rank=rank, world_size=world)
        t = torch.full((1024,), float(rank + 1), device="cuda")
        dist.all_reduce(t)
        torch.cuda.synchronize()
        want = world * (world + 1) / 2
        lo, hi = float(t.min().item()), float(t.max().item())
        dist.destroy_process_group()
        q.put((rank, "ok" if lo == want and hi == want else "wrong sum %s..%s, expected %s" % (lo, hi, want)))
    except Exception as e:
        q.put((rank, err_text(e)))


def probe_tensorflow(live, allreduce):
    fw = OUT
    fw["framework"] = "tensorflow"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")  # its "Ignoring visible gpu device" line is evidence
    os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")
    t0 = time.time()
    import tensorflow as tf
    fw["import_s"] = round(time.time() - t0, 3)
    fw["version"] = tf.__version__
    fw["location"] = os.path.dirname(tf.__file__)
    info = {}
    try:
        info = dict(tf.sysconfig.get_build_info())
    except Exception as e:
        fw["build_info_error"] = err_text(e)
    fw["build_info"] = {k: v for k, v in info.items() if isinstance(v, (str, int, float, bool, list))}
    is_cuda = bool(info.get("is_cuda_build", False))
    try:
        is_cuda = is_cuda or bool(tf.test.is_built_with_cuda())
    except Exception:
        pass
    fw["cuda_build"] = is_cuda
    fw["built"] = {"cuda": info.get("cuda_version"), "cudnn": info.get("cudnn_version"), "nccl": info.get("nccl_version")}
    caps = info.get("cuda_compute_capabilities") or []
    if isinstance(caps, str):
        caps = [c for c in caps.replace(";", ",").split(",") if c]
    fw["arch_list"] = list(caps)
    fw["shipped_libraries"] = shipped_libraries(fw["location"])
    save()
    gpus = []
    try:
        gpus = tf.config.list_physical_devices("GPU")
        for g in gpus:  # no op may take every byte of every GPU
            try:
                tf.config.experimental.set_memory_growth(g, True)
            except Exception:
                pass
    except Exception as e:
        fw["cuda_error"] = err_text(e)
    devices = []
    for i, g in enumerate(gpus):
        d = {"index": i, "tf_name": g.name}
        try:
            det = tf.config.experimental.get_device_details(g)
            cc = det.get("compute_capability")
            if cc:
                d["cc"] = "%d.%d" % tuple(cc)
            d["name"] = det.get("device_name")
        except Exception as e:
            d["error"] = err_text(e)
        devices.append(d)
    fw["devices"] = devices
    fw["device_count"] = len(gpus)
    save()
    if live and gpus:
        results = fw.setdefault("live", [])
        for i in range(len(gpus)):
            def mm(i=i):
                with tf.device("/CPU:0"):
                    a = tf.random.normal([256, 256], seed=1)
                    b = tf.random.normal([256, 256], seed=2)
                    ref = tf.linalg.matmul(tf.cast(a, tf.float64), tf.cast(b, tf.float64))
                with tf.device("/GPU:%d" % i):
                    c = tf.linalg.matmul(tf.identity(a), tf.identity(b))
                with tf.device("/CPU:0"):
                    diff = tf.reduce_max(tf.abs(tf.cast(c, tf.float64) - ref))
                    return relative_error(diff, tf.reduce_max(tf.abs(ref)))

            def conv_bn(i=i):
                with tf.device("/GPU:%d" % i):
                    x = tf.random.normal([8, 32, 32, 16])
                    w = tf.Variable(tf.random.normal([3, 3, 16, 32]))
                    scale = tf.Variable(tf.ones([32]))
                    offset = tf.Variable(tf.zeros([32]))
                    with tf.GradientTape() as tape:
                        y = tf.nn.conv2d(x, w, 1, "SAME")
                        y, _m, _v = tf.compat.v1.nn.fused_batch_norm(y, scale, offset, is_training=True)
                        loss = tf.reduce_sum(tf.nn.relu(y))
                    grads = tape.gradient(loss, [w, scale, offset])
                    for g in grads:
                        finite(tf.reduce_sum(g))
                return None

            live_op(results, i, "matmul", mm)
            live_op(results, i, "conv_bn", conv_bn)
    if allreduce and len(gpus) >= 2:
        def mirrored():
            strategy = tf.distribute.MirroredStrategy(["/GPU:%d" % i for i in range(len(gpus))])

            def step():
                ctx = tf.distribute.get_replica_context()
                return ctx.all_reduce("sum", tf.ones([1024]) * tf.cast(ctx.replica_id_in_sync_group + 1, tf.float32))

            out = strategy.run(step)
            vals = strategy.experimental_local_results(out)
            want = len(gpus) * (len(gpus) + 1) / 2
            got = [float(tf.reduce_min(v)) for v in vals] + [float(tf.reduce_max(v)) for v in vals]
            if any(abs(g - want) > 1e-3 for g in got):
                raise RuntimeError("wrong sums %s, expected %s" % (got, want))
            return {"replicas": strategy.num_replicas_in_sync, "path": "tf.distribute.MirroredStrategy"}

        live_op(fw.setdefault("live", []), "all", "allreduce", mirrored)
    fw["loaded_libraries"] = loaded_libraries()
    save()


def probe_jax(live, allreduce):
    fw = OUT
    fw["framework"] = "jax"
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # not 75% of every GPU for a probe
    t0 = time.time()
    import jax
    fw["import_s"] = round(time.time() - t0, 3)
    fw["version"] = jax.__version__
    fw["location"] = os.path.dirname(jax.__file__)
    try:
        import jaxlib
        fw["built"] = {"jaxlib": getattr(jaxlib, "__version__", None)}
    except Exception:
        fw["built"] = {}
    gpus = []
    try:
        gpus = jax.devices("gpu")
    except Exception as e:
        fw["cuda_error"] = err_text(e)
    # A CUDA build: the CUDA plugin is installed (jax-cuda12/13-plugin; jaxlib's own cuda module in
    # older releases), whether or not a GPU is visible now.
    import importlib.util
    plugin = False
    for m in ("jax_cuda13_plugin", "jax_cuda12_plugin", "jaxlib.cuda"):
        try:
            plugin = plugin or importlib.util.find_spec(m) is not None
        except Exception:
            pass
    fw["cuda_build"] = bool(gpus) or plugin
    fw["arch_list"] = []
    fw["devices"] = [{"index": i, "name": getattr(d, "device_kind", str(d)),
                      "cc": getattr(d, "compute_capability", None)} for i, d in enumerate(gpus)]
    fw["device_count"] = len(gpus)
    fw["shipped_libraries"] = []
    save()
    if live and gpus:
        import numpy as np  # jax depends on numpy
        results = fw.setdefault("live", [])
        for i, d in enumerate(gpus):
            def mm(d=d):
                a = np.random.RandomState(1).randn(256, 256).astype(np.float32)
                b = np.random.RandomState(2).randn(256, 256).astype(np.float32)
                c = np.asarray(jax.device_put(a, d) @ jax.device_put(b, d))
                ref = a.astype(np.float64) @ b.astype(np.float64)
                return relative_error(np.abs(c - ref).max(), np.abs(ref).max())

            live_op(results, i, "matmul", mm)
    fw["loaded_libraries"] = loaded_libraries()
    save()


def main():
    if len(sys.argv) < 3:
        sys.stderr.write("usage: probe MODE OUT.json [--live] [--allreduce]\n")
        return 2
    mode = sys.argv[1]
    live = "--live" in sys.argv[3:]
    allreduce = "--allreduce" in sys.argv[3:]
    start(sys.argv[2], probe_version=1)
    OUT["mode"] = mode
    OUT["cuda_visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES")
    save()

    def work():
        if mode == "env":
            probe_env()
        elif mode == "torch":
            probe_torch(live, allreduce)
        elif mode == "tensorflow":
            probe_tensorflow(live, allreduce)
        elif mode == "jax":
            probe_jax(live, allreduce)
        else:
            sys.stderr.write("unknown mode %r\n" % mode)
            return 2
        return 0

    # an import that fails, a framework that raises: a finding, with the libraries loaded by then
    return run_and_save(work, on_error=lambda: OUT.update(loaded_libraries=loaded_libraries()))


if __name__ == "__main__":
    sys.exit(main())
