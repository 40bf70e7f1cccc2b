# nodebench's framework bench (`nodebench frameworks --bench`, docs/FRAMEWORKS.md): a short
# synthetic ResNet-50 training run in one framework, one mode per process. nodebench embeds this
# file, writes it beside the probe and runs it in the Python under test, each mode under a time
# limit:
#   python BENCH torch|tensorflow OUT.json --mode default|amp|fast --gpus N --batch B
#                                          --seconds S --warmup W
#     default  the framework's default settings: FP32 (TF32 where the framework turns it on by
#              default, cc 8.0 and newer), PyTorch NCHW eager, TensorFlow/Keras NHWC
#     amp      the same with mixed precision (autocast FP16 and a gradient scaler; Keras'
#              mixed_float16 policy): measured on every GPU, so that where it does not pay
#              (below cc 7.0, no tensor cores) it is seen to be slower
#     fast     the framework's fast settings: channels_last (PyTorch; Keras is NHWC already),
#              mixed precision only where the GPU gains from it (cc 7.0 and newer),
#              torch.compile / XLA (jit_compile=True), cuDNN autotuning (cudnn.benchmark)
#   N GPUs go through the framework's data-parallel path: torch DistributedDataParallel with NCCL,
#   one spawned process per GPU; tf.distribute.MirroredStrategy. B is the batch per GPU.
# ResNet-50 v1.5 is defined here with torch.nn (no torchvision); TensorFlow uses
# keras.applications.ResNet50(weights=None) (v1: the stride in the first 1x1 convolution).
# Synthetic images and labels made once on the GPU, SGD with momentum. The first W steps (the
# compilation and the algorithm searches) are warm-up and not timed; then groups of steps are
# timed between device synchronisations until S seconds have passed (at least 3 groups); the
# median step time gives images/s = B x N / step. It writes one JSON object to OUT.json (what it
# has so far, also when the mode fails) and prints nothing nodebench reads.
# A stand-in framework package (the tests') may answer `_nodebench_bench_step(mode, gpus, batch)`
# with a step function; the timing code is then the same as for a real one (the tests' stand-in
# also replaces this module's clock, so that the times it measures are exactly the ones it chose).
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # framework_common.py, beside this file
from framework_common import OUT, err_text, run_and_save, save, start  # noqa: E402


def timed(step, sync, warmup, seconds, group=5):
    """Warm-up steps (not timed), then groups of `group` steps between synchronisations for at
    least `seconds` and 3 groups: {"warmup_s", "samples_s" (seconds per step, one per group)}."""
    t0 = time.perf_counter()
    for _ in range(warmup):
        step()
    sync()
    warm = time.perf_counter() - t0
    samples = []
    end = time.perf_counter() + seconds
    while True:
        a = time.perf_counter()
        for _ in range(group):
            step()
        sync()
        b = time.perf_counter()
        samples.append((b - a) / group)
        if b >= end and len(samples) >= 3:
            break
    return {"warmup_s": round(warm, 3), "samples_s": samples, "steps": len(samples) * group}


def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def finish(result, batch, gpus):
    OUT.update(result)
    m = median(result["samples_s"])
    OUT["step_time_ms"] = m * 1e3
    OUT["images_per_s"] = batch * gpus / m


def precision_of(mode, cc, amp_pays):
    if mode == "amp" or (mode == "fast" and amp_pays):
        return "fp16"
    return "tf32" if cc >= 80 else "fp32"


# ---- PyTorch ----------------------------------------------------------------------------------

def torch_resnet50(nn):
    class Bottleneck(nn.Module):
        def __init__(self, cin, width, stride):
            super().__init__()
            cout = width * 4
            self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)  # v1.5: the stride here
            self.bn2 = nn.BatchNorm2d(width)
            self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            idn = x if self.down is None else self.down(x)
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.relu(self.bn2(self.conv2(y)))
            return self.relu(self.bn3(self.conv3(y)) + idn)

    layers = [nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
              nn.MaxPool2d(3, stride=2, padding=1)]
    cin = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
            cin = width * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, 1000)]
    return nn.Sequential(*layers)


def grad_scaler(torch, amp):
    """The mixed-precision loss scaler (disabled unless amp)."""
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler("cuda", enabled=amp)
    return torch.cuda.amp.GradScaler(enabled=amp)  # PyTorch before 2.3


def train_step(torch, fwd, opt, x, y, amp):
    """One optimizer step on the fixed batch (x, y) through fwd, with a cross-entropy loss, under
    autocast FP16 with a loss scaler when amp; the step returns the loss. Also the PyTorch peer's
    step (scripts/dev/peers/peer_torch_train.py)."""
    scaler = grad_scaler(torch, amp)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
            loss = loss_fn(fwd(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    return step


def torch_step(torch, mode, batch, rank, ddp):
    """One rank's training step: (step, sync, settings)."""
    dev = torch.device("cuda", rank)
    cc = torch.cuda.get_device_capability(rank)
    cc = cc[0] * 10 + cc[1]
    fast = mode == "fast"
    amp = mode == "amp" or (fast and cc >= 70)
    fmt = torch.channels_last if fast else torch.contiguous_format
    torch.backends.cudnn.benchmark = fast
    model = torch_resnet50(torch.nn).to(dev).to(memory_format=fmt)
    if ddp:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
    fwd = torch.compile(model) if fast else model
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 3, 224, 224, device=dev).to(memory_format=fmt)
    y = torch.randint(0, 1000, (batch,), device=dev)
    step = train_step(torch, fwd, opt, x, y, amp)
    settings = {"precision": precision_of(mode, cc, cc >= 70), "layout": "nhwc" if fast else "nchw",
                "compiled": fast, "amp": amp, "cudnn_benchmark": fast,
                "tf32_conv": bool(torch.backends.cudnn.allow_tf32), "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32)}
    return step, (lambda: torch.cuda.synchronize(dev)), settings


def _torch_rank(rank, world, store, a, q):
    import torch
    import torch.distributed as dist
    try:
        torch.cuda.set_device(rank)
        dist.init_process_group("nccl", init_method="file://" + store, rank=rank, world_size=world)
        step, sync, settings = torch_step(torch, a["mode"], a["batch"], rank, True)
        r = timed(step, sync, a["warmup"], a["seconds"])
        # every rank times the same steps (each waits for the others in the all-reduce); rank 0 reports
        q.put((rank, "ok", r, settings))
        dist.barrier()
        dist.destroy_process_group()
    except Exception as e:
        q.put((rank, err_text(e), None, None))


def bench_torch(a):
    t0 = time.time()
    import torch
    OUT["import_s"] = round(time.time() - t0, 3)
    OUT["version"] = torch.__version__
    fake = getattr(torch, "_nodebench_bench_step", None)
    n_seen = torch.cuda.device_count()
    if a["gpus"] > n_seen:
        raise RuntimeError("%d GPUs asked, PyTorch sees %d" % (a["gpus"], n_seen))
    cc = torch.cuda.get_device_capability(0)
    OUT["device"] = {"name": torch.cuda.get_device_name(0), "cc": "%d.%d" % tuple(cc)}
    save()
    if fake is not None:
        step = fake(a["mode"], a["gpus"], a["batch"])
        ccn = cc[0] * 10 + cc[1]
        OUT["settings"] = {"precision": precision_of(a["mode"], ccn, ccn >= 70), "layout": "nhwc" if a["mode"] == "fast" else "nchw",
                           "compiled": a["mode"] == "fast", "stand_in": True}
        finish(timed(step, lambda: None, a["warmup"], a["seconds"]), a["batch"], a["gpus"])
        return
    if a["gpus"] == 1:
        step, sync, settings = torch_step(torch, a["mode"], a["batch"], 0, False)
        OUT["settings"] = settings
        save()
        finish(timed(step, sync, a["warmup"], a["seconds"]), a["batch"], 1)
        del step
        torch.cuda.empty_cache()
        return
    import tempfile
    import torch.multiprocessing as mp
    store = tempfile.mktemp(prefix="nodebench-fwbench-")
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_torch_rank, args=(r, a["gpus"], store, a, q)) for r in range(a["gpus"])]
    for p in procs:
        p.start()
    got = {}
    import queue
    try:
        while len(got) < a["gpus"]:  # as long as the ranks run (compiling takes minutes); nodebench's limit ends a hang
            try:
                rank, status, r, settings = q.get(timeout=5)
            except queue.Empty:
                dead = [i for i, p in enumerate(procs) if not p.is_alive() and i not in got]
                if dead:
                    raise RuntimeError("rank(s) %s ended without an answer" % dead)
                continue
            got[rank] = (status, r, settings)
            if status != "ok":
                break
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.terminate()
        try:
            os.unlink(store)
        except OSError:
            pass
    bad = sorted((r, s) for r, (s, _x, _y) in got.items() if s != "ok")
    if bad:
        raise RuntimeError("; ".join("rank %d: %s" % b for b in bad))
    OUT["settings"] = dict(got[0][2], data_parallel="torch DistributedDataParallel (NCCL), one process per GPU")
    finish(got[0][1], a["batch"], a["gpus"])


# ---- TensorFlow -------------------------------------------------------------------------------

def bench_tensorflow(a):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")
    t0 = time.time()
    import tensorflow as tf
    OUT["import_s"] = round(time.time() - t0, 3)
    OUT["version"] = tf.__version__
    gpus = tf.config.list_physical_devices("GPU")
    if a["gpus"] > len(gpus):
        raise RuntimeError("%d GPUs asked, TensorFlow sees %d" % (a["gpus"], len(gpus)))
    det = tf.config.experimental.get_device_details(gpus[0])
    cc = tuple(det.get("compute_capability") or (0, 0))
    ccn = cc[0] * 10 + cc[1]
    OUT["device"] = {"name": det.get("device_name"), "cc": "%d.%d" % cc}
    mode, batch, n = a["mode"], a["batch"], a["gpus"]
    amp = mode == "amp" or (mode == "fast" and ccn >= 70)
    settings = {"precision": precision_of(mode, ccn, ccn >= 70), "layout": "nhwc", "compiled": mode == "fast", "amp": amp}
    fake = getattr(tf, "_nodebench_bench_step", None)
    if fake is not None:
        OUT["settings"] = dict(settings, stand_in=True)
        finish(timed(fake(mode, n, batch), lambda: None, a["warmup"], a["seconds"]), batch, n)
        return
    keras = tf.keras
    if amp:
        keras.mixed_precision.set_global_policy("mixed_float16")
    names = ["/GPU:%d" % i for i in range(n)]
    strategy = tf.distribute.MirroredStrategy(names) if n > 1 else tf.distribute.OneDeviceStrategy(names[0])
    with strategy.scope():
        model = keras.applications.ResNet50(weights=None, input_shape=(224, 224, 3), classes=1000)
        kw = {"jit_compile": True} if mode == "fast" else {}  # else Keras' default (Keras 3: "auto")
        model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.01, momentum=0.9),
                      loss=keras.losses.SparseCategoricalCrossentropy(), **kw)
    settings["jit_compile"] = True if mode == "fast" else "the framework's default"
    with tf.device(names[0]):
        x = tf.random.uniform([batch * n, 224, 224, 3])
        y = tf.random.uniform([batch * n], maxval=1000, dtype=tf.int32)
    if n > 1:
        settings["data_parallel"] = "tf.distribute.MirroredStrategy"
    OUT["settings"] = settings
    save()
    # train_on_batch returns the loss as a host value: each step ends synchronised
    finish(timed(lambda: model.train_on_batch(x, y), lambda: None, a["warmup"], a["seconds"]), batch, n)


def main():
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("framework", choices=["torch", "tensorflow"])
    ap.add_argument("out")
    ap.add_argument("--mode", choices=["default", "amp", "fast"], required=True)
    ap.add_argument("--gpus", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--warmup", type=int, default=10)
    args = ap.parse_args()
    a = {"mode": args.mode, "gpus": max(1, args.gpus), "batch": max(1, args.batch), "seconds": args.seconds,
         "warmup": max(0, args.warmup)}
    start(args.out, bench_version=1)
    OUT.update({"framework": args.framework, "mode": a["mode"], "gpus": a["gpus"], "batch": a["batch"],
                "seconds": a["seconds"], "warmup_steps": a["warmup"]})
    save()
    return run_and_save(lambda: (bench_torch if args.framework == "torch" else bench_tensorflow)(a))


if __name__ == "__main__":
    sys.exit(main())
