#!/usr/bin/env python3
"""Peers of nodebench's input family (JPEG decode + RandomResizedCrop(224) + flip + normalise), on the
same JPEG files (nodebench writes them with NODEBENCH_INPUT_KEEP=DIR), for compare_input_peer.py.

Peers (each at every worker count of --workers, files read into memory first, as nodebench does):
  pil_dataloader   torch.utils.data.DataLoader, num_workers=N: PIL decode, torchvision.transforms
                   RandomResizedCrop(224) + RandomHorizontalFlip + ToTensor + Normalize (the ImageNet
                   training pipeline), batches of 64
  tv_cpu_dataloader the same DataLoader, decoding with torchvision.io.decode_jpeg on the CPU and the
                   transforms (v2, antialias=True) on the tensor
  pil_pool         without torch (--pil-only): N processes of multiprocessing, PIL decode, PIL crop +
                   resize(BILINEAR) + flip with torchvision's crop parameters, normalise with numpy to
                   NCHW float32 (where torch is not installed)
  tv_gpu           (--gpu) torchvision.io.decode_jpeg(device='cuda') on a batched list of --batch files,
                   then resized_crop (antialias) + flip + normalise on the GPU; one host thread; the GPU's
                   time per batch from CUDA events
Each point: a warm-up, then images counted for --seconds; images/s = images / seconds.

usage: peer_torch_input.py --files DIR --workers 1,2,4 [--seconds 2] [--pil-only] [--gpu] [--batch 128] --out FILE
Output: {"schema": "nodebench.peer_input", "files", "mean_file_bytes", "versions", "results": [{"peer", "workers",
"images_per_s", "seconds", "images"[, "gpu_time_per_image_ms"]} or {"peer", "workers", "error"}]}
"""
import argparse
import io
import json
import math
import multiprocessing as mp
import os
import pathlib
import random
import sys
import time

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def crop_params(width, height, rng):
    """torchvision's RandomResizedCrop.get_params, scale (0.08, 1), ratio (3/4, 4/3)."""
    area = width * height
    lr = (math.log(3 / 4), math.log(4 / 3))
    for _ in range(10):
        target = area * rng.uniform(0.08, 1.0)
        aspect = math.exp(rng.uniform(*lr))
        w, h = int(round(math.sqrt(target * aspect))), int(round(math.sqrt(target / aspect)))
        if 0 < w <= width and 0 < h <= height:
            return rng.randint(0, height - h), rng.randint(0, width - w), h, w
    ratio = width / height
    if ratio < 3 / 4:
        w, h = width, int(round(width / (3 / 4)))
    elif ratio > 4 / 3:
        h, w = height, int(round(height * 4 / 3))
    else:
        w, h = width, height
    return (height - h) // 2, (width - w) // 2, h, w


def load(folder):
    files = sorted(p for p in pathlib.Path(folder).iterdir() if p.suffix.lower() in (".jpg", ".jpeg"))
    if not files:
        sys.exit(f"peer_torch_input: no *.jpg in {folder}")
    return [f.read_bytes() for f in files]


# --- PIL in processes, without torch -------------------------------------------------------------

def _pil_worker(blobs, start, seconds, seed, out):
    import numpy as np
    from PIL import Image
    rng = random.Random(seed)
    mean, std = np.array(MEAN, np.float32), np.array(STD, np.float32)

    def one(k):
        im = Image.open(io.BytesIO(blobs[k % len(blobs)])).convert("RGB")
        t, left, h, w = crop_params(im.width, im.height, rng)
        im = im.crop((left, t, left + w, t + h)).resize((224, 224), Image.BILINEAR)
        if rng.random() < 0.5:
            im = im.transpose(Image.FLIP_LEFT_RIGHT)
        a = (np.asarray(im, np.float32) / 255.0 - mean) / std
        return np.ascontiguousarray(a.transpose(2, 0, 1))

    k = seed * 37
    while time.monotonic() < start:  # warm-up until the common start
        one(k)
        k += 1
    n = 0
    while time.monotonic() < start + seconds:
        one(k)
        k += 1
        n += 1
    out.put(n)


def pil_pool(blobs, workers, seconds):
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    start = time.monotonic() + 1.0 + 0.05 * workers  # time for the processes to start and warm up
    procs = [ctx.Process(target=_pil_worker, args=(blobs, start, seconds, i + 1, q)) for i in range(workers)]
    for p in procs:
        p.start()
    n = sum(q.get() for _ in procs)
    for p in procs:
        p.join()
    return {"images": n, "seconds": seconds, "images_per_s": n / seconds}


# --- torch DataLoaders ---------------------------------------------------------------------------

def dataloader_rate(torch, dataset, workers, seconds, batch=64):
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch, num_workers=workers, persistent_workers=True,
                                         prefetch_factor=4, shuffle=False)
    it = iter(loader)
    for _ in range(2 * workers + 2):  # warm-up: every worker has delivered
        next(it)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        n += next(it).shape[0]
    dt = time.perf_counter() - t0
    del it, loader
    return {"images": n, "seconds": dt, "images_per_s": n / dt}


def make_datasets(torch, blobs):
    import torchvision
    from PIL import Image
    from torchvision import transforms as T
    from torchvision.transforms import v2

    pil_tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(MEAN, STD)])
    tv_tf = v2.Compose([v2.RandomResizedCrop(224, antialias=True), v2.RandomHorizontalFlip(),
                        v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])

    class Endless(torch.utils.data.Dataset):
        def __init__(self, fn):
            self.fn = fn

        def __len__(self):
            return 1 << 30

        def __getitem__(self, i):
            return self.fn(blobs[i % len(blobs)])

    pil = Endless(lambda b: pil_tf(Image.open(io.BytesIO(b)).convert("RGB")))
    tv = Endless(lambda b: tv_tf(torchvision.io.decode_jpeg(torch.frombuffer(bytearray(b), dtype=torch.uint8))))
    return {"pil_dataloader": pil, "tv_cpu_dataloader": tv}


def tv_gpu(torch, blobs, batch, seconds):
    import torchvision
    from torchvision.transforms.v2 import functional as F
    rng = random.Random(5)
    datas = [torch.frombuffer(bytearray(b), dtype=torch.uint8) for b in blobs]
    mean = torch.tensor(MEAN, device="cuda").view(3, 1, 1)
    std = torch.tensor(STD, device="cuda").view(3, 1, 1)
    k = 0

    def once():
        nonlocal k
        chunk = [datas[(k + i) % len(datas)] for i in range(batch)]
        k += batch
        imgs = torchvision.io.decode_jpeg(chunk, device="cuda")
        out = []
        for im in imgs:
            t, left, h, w = crop_params(im.shape[2], im.shape[1], rng)
            x = F.resized_crop(im, t, left, h, w, [224, 224], antialias=True)
            if rng.random() < 0.5:
                x = x.flip(-1)
            out.append((x.float() / 255.0 - mean) / std)
        return torch.stack(out)

    for _ in range(3):
        once()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    n, gpu_ms, t0 = 0, 0.0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        e0.record()
        once()
        e1.record()
        torch.cuda.synchronize()
        gpu_ms += e0.elapsed_time(e1)
        n += batch
    dt = time.perf_counter() - t0
    return {"images": n, "seconds": dt, "images_per_s": n / dt, "gpu_time_per_image_ms": gpu_ms / n, "batch": batch}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", required=True)
    ap.add_argument("--workers", default="1")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--pil-only", action="store_true")
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    blobs = load(a.files)
    counts = [int(x) for x in a.workers.split(",") if x]
    doc = {"schema": "nodebench.peer_input", "files": len(blobs), "mean_file_bytes": sum(map(len, blobs)) / len(blobs),
           "cpus": len(os.sched_getaffinity(0)), "versions": {}, "results": []}
    import PIL
    doc["versions"]["pillow"] = PIL.__version__

    def point(peer, workers, fn):
        try:
            r = fn()
        except Exception as e:  # a peer that cannot run here is recorded, the others still run
            r = {"error": f"{type(e).__name__}: {e}"}
        r.update(peer=peer, workers=workers)
        doc["results"].append(r)
        print(json.dumps(r), flush=True)

    if a.pil_only:
        for n in counts:
            point("pil_pool", n, lambda n=n: pil_pool(blobs, n, a.seconds))
    else:
        import torch
        import torchvision
        doc["versions"].update(torch=torch.__version__, torchvision=torchvision.__version__)
        torch.set_num_threads(1)
        for name, ds in make_datasets(torch, blobs).items():
            for n in counts:
                point(name, n, lambda ds=ds, n=n: dataloader_rate(torch, ds, n, a.seconds))
        if a.gpu:
            point("tv_gpu", 1, lambda: tv_gpu(torch, blobs, a.batch, a.seconds))
    pathlib.Path(a.out).write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
