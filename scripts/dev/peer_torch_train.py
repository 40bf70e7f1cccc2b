#!/usr/bin/env python3
"""PyTorch peer of nodebench's ResNet-50 training step (family train), for compare_train_peer.py.

torchvision resnet50 (v1.5, randomly initialised), synthetic images and labels made on the GPU,
cudnn.benchmark on, SGD with momentum 0.9 and weight decay, cross-entropy loss; the learning rate
as nodebench's step sets it (0.1 x batch / 256, at most 0.02). Modes:
  fp16/nhwc  mixed precision: autocast FP16, channels_last, GradScaler (FP32 master weights)
  tf32/nchw  FP32 storage with TF32 allowed in convolutions and matmuls
  fp32/nchw  FP32, TF32 disallowed
Each batch: warm-up steps (cudnn.benchmark's search happens there), then steps timed with CUDA
events for --seconds (time-matched with nodebench's --max-time); the median step time. Memory is
torch.cuda.max_memory_allocated over the timed steps (reset after the warm-up, so cudnn.benchmark's
search workspaces are left out, as nodebench leaves out its own search workspace).
With --gpu-busy, a few more steps run under torch.profiler (CUDA activity only): gpu_busy_ms is the
union of the GPU's kernel and copy intervals per step, the time the GPU itself worked. A step time
well above it means the GPU waited for the host (Python, the framework's dispatch, a
synchronisation), which nodebench, issuing its step from C++, does not pay.

With --losses N, the first N steps (on the fixed batch, before the warm-up) record their loss, as
nodebench's verification does over 20 steps.

usage: peer_torch_train.py --mode fp16/nhwc --batches 64,128,256 --seconds 2 [--gpu-busy] [--losses N] --out FILE
Output: {"mode", "torch", "device", "results": [{"batch", "step_time_ms", "images_per_s", "sgd_lr",
"max_memory_allocated_bytes", "steps"[, "gpu_busy_ms", "gpu_busy_steps"][, "losses"]} or {"batch", "error"}]}
"""
import argparse
import json
import statistics
import sys
import time

MODES = ("fp16/nhwc", "tf32/nchw", "fp32/nchw")


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


def run_batch(torch, torchvision, mode, batch, seconds, warmup, busy_steps=0, loss_steps=0):
    amp = mode == "fp16/nhwc"
    fmt = torch.channels_last if mode.endswith("nhwc") else torch.contiguous_format
    model = torchvision.models.resnet50().cuda().to(memory_format=fmt)
    lr = sgd_lr_for_batch(batch)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=5e-5)
    scaler = (torch.amp.GradScaler("cuda", enabled=amp) if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler")
              else torch.cuda.amp.GradScaler(enabled=amp))
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(batch, 3, 224, 224, device="cuda").to(memory_format=fmt)
    y = torch.randint(0, 1000, (batch,), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    losses = [float(step().item()) for _ in range(loss_steps)]
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    # After the warm-up: cudnn.benchmark's algorithm search (and its trial workspaces) is done, as
    # nodebench's peak leaves out its own search workspace.
    torch.cuda.reset_peak_memory_stats()
    times = []
    end = time.monotonic() + seconds
    while time.monotonic() < end or len(times) < 5:
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        step()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    med = statistics.median(times)
    peak = torch.cuda.max_memory_allocated()
    out = {"batch": batch, "step_time_ms": med, "images_per_s": batch / (med / 1e3), "sgd_lr": lr,
           "max_memory_allocated_bytes": peak, "steps": len(times)}
    if loss_steps:
        out["losses"] = losses
    if busy_steps:
        try:
            out["gpu_busy_ms"] = gpu_busy_ms(torch, step, busy_steps)
            out["gpu_busy_steps"] = busy_steps
        except Exception as e:  # the profiler is an extra: its failure must not lose the timing
            out["gpu_busy_error"] = f"{type(e).__name__}: {e}"
    del model, opt, x, y
    torch.cuda.empty_cache()
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", required=True, choices=MODES)
    ap.add_argument("--batches", default="64,128,256")
    ap.add_argument("--seconds", type=float, default=2.0)
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
    import torch
    import torchvision
    if not torch.cuda.is_available():
        print("peer_torch_train: no CUDA device", file=sys.stderr)
        return 3
    torch.backends.cudnn.benchmark = True
    tf32 = a.mode == "tf32/nchw"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    doc = {"mode": a.mode, "torch": torch.__version__, "torchvision": torchvision.__version__,
           "device": torch.cuda.get_device_name(0), "seconds": a.seconds, "results": []}
    for b in batches:
        try:
            r = run_batch(torch, torchvision, a.mode, b, a.seconds, a.warmup, 5 if a.gpu_busy else 0, max(a.losses, 0))
        except torch.cuda.OutOfMemoryError as e:
            r = {"batch": b, "error": f"out of memory: {str(e).splitlines()[0]}"}
            torch.cuda.empty_cache()
        doc["results"].append(r)
        print(json.dumps(r), flush=True)
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
