#!/usr/bin/env python3
"""PyTorch peer of nodebench's ResNet-50 training step (family train), for compare_train_peer.py.

torchvision resnet50 (v1.5, randomly initialised), synthetic images and labels made on the GPU,
cudnn.benchmark on, SGD with momentum 0.9 and weight decay, cross-entropy loss; the learning rate
as nodebench's step sets it (0.1 x batch / 256, at most 0.02). Precision modes (--mode):
  fp16/nhwc  mixed precision: autocast FP16, channels_last, GradScaler (FP32 master weights)
  tf32/nchw  FP32 storage with TF32 allowed in convolutions and matmuls
  fp32/nchw  FP32, TF32 disallowed
  tf32/nhwc, fp32/nhwc  the same in channels_last
PyTorch modes (--torch-modes, any of): eager; compile (torch.compile(model), the default mode);
reduce-overhead (torch.compile(model, mode="reduce-overhead"): CUDA graphs). The optimizer step
stays eager, as a user writes it.

Per batch and PyTorch mode: the model is built (and compiled) once, warmed (the first steps
compile and cudnn.benchmark searches: a minute per compiled mode and batch on 16 cores), then
timed in --rounds rounds of --seconds each (CUDA events around each step, the round's median);
between rounds the --between command runs (nodebench's step, so that the two alternate: PyTorch
mode A, nodebench, mode A again, ...; the model stays built, its cached free blocks released
first). The mode's step time is the median of its rounds. Memory is torch.cuda.max_memory_allocated
over the timed rounds (reset after the warm-up, so the search workspaces are left out, as nodebench
leaves out its own search workspace; the nodebench process in between is not counted). That
counter leaves out what a CUDA graph's private pool holds (reduce-overhead: its tensors are
allocated once, at capture, before the reset, and only reused after), so two more figures are
recorded per mode: torch.cuda.max_memory_reserved over the same rounds (the caching allocator's
segments, the graphs' pools among them) and device_used_delta_bytes (torch.cuda.mem_get_info's
used memory after the rounds less the same before the model was built: everything the mode holds
on the device, the libraries' workspaces too). Progress lines on stderr carry the seconds since
the start.
With --gpu-busy, a few more steps run under torch.profiler (CUDA activity only): gpu_busy_ms is the
union of the GPU's kernel and copy intervals per step, the time the GPU itself worked. A step time
well above it means the GPU waited for the host (Python, the framework's dispatch, a
synchronisation), which nodebench, issuing its step from C++, does not pay.
With --losses N, the first N steps (on the fixed batch, before the warm-up) record their loss, as
nodebench's verification does over 20 steps.

usage: peer_torch_train.py --mode fp16/nhwc --batches 64,256 [--torch-modes eager,compile,reduce-overhead]
       [--seconds 2] [--rounds 2] [--between 'CMD {batch} {torch_mode} {round}'] [--gpu-busy] [--losses N] --out FILE
Output: {"mode", "torch", "device", "results": [{"batch", "torch_mode", "step_time_ms", "runs", "images_per_s",
"sgd_lr", "max_memory_allocated_bytes", "max_memory_reserved_bytes", "device_used_delta_bytes", "steps",
"warmup_s"[, "gpu_busy_ms", "gpu_busy_steps"][, "losses"]}
or {"batch", "torch_mode", "error"}], "between": [{"command", "rc", "seconds"}]}
"""
import argparse
import json
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

# The training step nodebench's own framework bench times (harness/check/framework_bench.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "harness" / "check"))
from framework_bench import train_step  # noqa: E402

MODES = ("fp16/nhwc", "tf32/nchw", "fp32/nchw", "tf32/nhwc", "fp32/nhwc")
TORCH_MODES = ("eager", "compile", "reduce-overhead")
T0 = time.monotonic()


def progress(msg):
    print(f"[{time.monotonic() - T0:7.1f} s] {msg}", file=sys.stderr, flush=True)


def union_us(intervals):
    """Total length of the union of (start, end) intervals."""
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def gpu_busy_ms(torch, step, steps):
    """The GPU's own working time per step: the union of its activity intervals under torch.profiler."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    iv = [(e.time_range.start, e.time_range.end) for e in prof.events()
          if e.device_type == DeviceType.CUDA and e.time_range.end > e.time_range.start]
    if not iv:
        raise RuntimeError("the profiler recorded no GPU activity")
    return union_us(iv) / 1e3 / steps


def sgd_lr_for_batch(batch):
    """nodebench's rule (kernels/train/train_kernels.cuh): 0.1 per 256 images, at most 0.02."""
    return min(0.02, 0.1 * max(batch, 1) / 256)


def parse_torch_modes(text):
    """'eager,compile' -> ['eager', 'compile']; ValueError naming what is wrong."""
    modes = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in modes if m not in TORCH_MODES]
    if not modes or bad:
        raise ValueError(f"expected a comma list of {', '.join(TORCH_MODES)}, got '{text}'")
    return list(dict.fromkeys(modes))


def between_command(template, batch, torch_mode, rnd):
    """The --between command for this batch, PyTorch mode and round ({batch}, {torch_mode}, {round});
    ValueError for another placeholder."""
    try:
        return template.format(batch=batch, torch_mode=torch_mode, round=rnd)
    except (KeyError, IndexError) as e:
        raise ValueError(f"--between: unknown placeholder {e} (use {{batch}}, {{torch_mode}}, {{round}})") from None


def summarize(batch, torch_mode, round_medians, steps, peak, lr, reserved=None, used_delta=None):
    """The result entry of one (batch, PyTorch mode): the step time is the median of the rounds'.
    reserved: max_memory_reserved over the rounds; used_delta: the device memory the mode held."""
    med = statistics.median(round_medians)
    out = {"batch": batch, "torch_mode": torch_mode, "step_time_ms": med, "runs": list(round_medians),
           "images_per_s": batch / (med / 1e3), "sgd_lr": lr, "max_memory_allocated_bytes": peak, "steps": steps}
    if reserved is not None:
        out["max_memory_reserved_bytes"] = reserved
    if used_delta is not None:
        out["device_used_delta_bytes"] = used_delta
    return out


def device_used(torch):
    """Bytes in use on the device (all processes): total - free."""
    free, total = torch.cuda.mem_get_info()
    return total - free


def build(torch, torchvision, mode, torch_mode, batch):
    amp = mode == "fp16/nhwc"
    fmt = torch.channels_last if mode.endswith("nhwc") else torch.contiguous_format
    model = torchvision.models.resnet50().cuda().to(memory_format=fmt)
    lr = sgd_lr_for_batch(batch)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=5e-5)
    fwd = model if torch_mode == "eager" else torch.compile(
        model, **({"mode": "reduce-overhead"} if torch_mode == "reduce-overhead" else {}))
    x = torch.randn(batch, 3, 224, 224, device="cuda").to(memory_format=fmt)
    y = torch.randint(0, 1000, (batch,), device="cuda")
    step = train_step(torch, fwd, opt, x, y, amp)
    return step, lr, (model, opt, x, y, fwd)


def timed_round(torch, step, seconds):
    times = []
    end = time.monotonic() + seconds
    while time.monotonic() < end or len(times) < 5:
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        step()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times), len(times)


def run_between(torch, cmd, log):
    torch.cuda.synchronize()
    torch.cuda.empty_cache()  # the free cached blocks back to the device for the other process
    progress(f"between: {cmd}")
    t = time.monotonic()
    rc = subprocess.run(cmd, shell=True).returncode
    log.append({"command": cmd, "rc": rc, "seconds": time.monotonic() - t})
    progress(f"between done rc={rc} in {time.monotonic() - t:.1f} s")


def release(torch):
    """Frees what a mode left: its compiled graphs (and their CUDA-graph memory pools) and cached
    blocks. Dynamo forgets the previous batch's shapes too: it would otherwise compile the next
    batch with dynamic shapes ("automatic dynamic"), not as a user compiling for one batch gets."""
    import gc
    if hasattr(torch, "_dynamo"):
        torch._dynamo.reset()
    gc.collect()
    torch.cuda.empty_cache()


def run_batch(torch, torchvision, a, torch_mode, batch, log):
    release(torch)
    torch.cuda.synchronize()
    used_before = device_used(torch)
    progress(f"{a.mode} b{batch} {torch_mode}: building")
    step, lr, keep = build(torch, torchvision, a.mode, torch_mode, batch)
    t = time.monotonic()
    losses = [float(step().item()) for _ in range(max(a.losses, 0))]
    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    warm = time.monotonic() - t
    progress(f"{a.mode} b{batch} {torch_mode}: compiled and warm in {warm:.1f} s")
    torch.cuda.reset_peak_memory_stats()
    medians, steps = [], 0
    for rnd in range(a.rounds):
        if rnd and a.between:
            run_between(torch, between_command(a.between, batch, torch_mode, rnd), log)
        med, n = timed_round(torch, step, a.seconds)
        medians.append(med)
        steps += n
        progress(f"{a.mode} b{batch} {torch_mode}: round {rnd + 1}/{a.rounds} {med:.2f} ms ({n} steps)")
    torch.cuda.synchronize()
    out = summarize(batch, torch_mode, medians, steps, torch.cuda.max_memory_allocated(), lr,
                    torch.cuda.max_memory_reserved(), device_used(torch) - used_before)
    out["warmup_s"] = warm
    if a.losses:
        out["losses"] = losses
    if a.gpu_busy:
        try:
            out["gpu_busy_ms"] = gpu_busy_ms(torch, step, 5)
            out["gpu_busy_steps"] = 5
        except Exception as e:  # the profiler is an extra: its failure must not lose the timing
            out["gpu_busy_error"] = f"{type(e).__name__}: {e}"
    del keep, step
    release(torch)
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", required=True, choices=MODES)
    ap.add_argument("--batches", default="64,128,256")
    ap.add_argument("--torch-modes", default="eager", help=f"comma list of {', '.join(TORCH_MODES)} (default eager)")
    ap.add_argument("--seconds", type=float, default=2.0, help="seconds of steps per timed round")
    ap.add_argument("--rounds", type=int, default=1, help="timed rounds per batch and mode (default 1)")
    ap.add_argument("--between", default="", help="shell command run between rounds ({batch}, {torch_mode}, {round})")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--gpu-busy", action="store_true",
                    help="also measure the GPU's own working time per step (torch.profiler, 5 steps)")
    ap.add_argument("--losses", type=int, default=0, metavar="N",
                    help="record the loss of the first N steps on the fixed batch (nodebench verifies over 20)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    try:
        batches = [int(b) for b in a.batches.split(",") if b]
        if not batches or min(batches) < 1:
            raise ValueError
    except ValueError:
        print(f"peer_torch_train: --batches: expected positive integers separated by commas, got '{a.batches}'",
              file=sys.stderr)
        return 2
    try:
        torch_modes = parse_torch_modes(a.torch_modes)
        if a.rounds < 1:
            raise ValueError(f"--rounds must be at least 1, got {a.rounds}")
        between_command(a.between, 1, "eager", 1)
    except ValueError as e:
        print(f"peer_torch_train: {e}", file=sys.stderr)
        return 2
    import torch
    import torchvision
    if not torch.cuda.is_available():
        print("peer_torch_train: no CUDA device", file=sys.stderr)
        return 3
    torch.backends.cudnn.benchmark = True
    tf32 = a.mode.startswith("tf32/")
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    doc = {"mode": a.mode, "torch": torch.__version__, "torchvision": torchvision.__version__,
           "device": torch.cuda.get_device_name(0), "seconds": a.seconds, "rounds": a.rounds,
           "command": " ".join(shlex.quote(x) for x in sys.argv), "results": [], "between": []}
    try:  # Inductor's layout optimisation runs an NCHW model's convolutions channels-last (TORCHINDUCTOR_LAYOUT_OPTIMIZATION)
        import torch._inductor.config as inductor_config
        doc["inductor_layout_optimization"] = bool(inductor_config.layout_optimization)
    except (ImportError, AttributeError):
        pass
    for b in batches:
        for tm in torch_modes:
            try:
                r = run_batch(torch, torchvision, a, tm, b, doc["between"])
            except torch.cuda.OutOfMemoryError as e:
                r = {"batch": b, "torch_mode": tm, "error": f"out of memory: {str(e).splitlines()[0]}"}
            except Exception as e:  # a mode that fails (a compile error) must not lose the others
                r = {"batch": b, "torch_mode": tm, "error": f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}"}
            if "error" in r:
                progress(f"{a.mode} b{b} {tm}: {r['error']}")
                release(torch)
            doc["results"].append(r)
            print(json.dumps(r), flush=True)
            with open(a.out, "w") as f:
                json.dump(doc, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
