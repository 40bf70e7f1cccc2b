#!/usr/bin/env python3
"""The input family against PIL (the decoder and resampling torchvision's data loaders use).

usage: input_pil_check.py INPUT_TOOL NODEBENCH SCHEMA OUTDIR

1. The images the family makes (input_tool make), decoded by our TurboJPEG path and by PIL:
   the same pixels (at most 1 apart: PIL may carry another libjpeg-turbo version).
2. Crops of them through our resize, flip and normalise against PIL's crop + resize(BILINEAR) +
   transpose, then ToTensor and Normalize computed with numpy (PIL rounds to 8 bits after each
   resampling pass, we do not: at most about 2 grey levels apart).
3. `nodebench run` of two host-only cases with no GPU visible (CUDA_VISIBLE_DEVICES=""), on those
   files as the user's own (NODEBENCH_INPUT_IMAGES): exit 0, valid against the schema, every
   record ok and verified, `gpus` empty, the analysis written.
Exit 0 passed, 1 failed, 77 skipped (no PIL or numpy here, or a build without libjpeg-turbo).
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys

SKIP = 77
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def main() -> int:
    tool, nodebench, schema, out = sys.argv[1], sys.argv[2], sys.argv[3], pathlib.Path(sys.argv[4])
    try:
        import numpy as np
        from PIL import Image
    except ImportError as e:
        print(f"SKIP: {e}")
        return SKIP
    shutil.rmtree(out, ignore_errors=True)
    imgs = out / "images"
    p = subprocess.run([tool, "make", str(imgs), "6"], capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stdout, p.stderr)
        return SKIP if "without libjpeg-turbo" in p.stderr else 1
    print(p.stdout.strip())
    bad = []
    files = sorted(imgs.glob("*.jpg"))
    for f in files:
        raw = out / (f.stem + ".rgb")
        w, h = map(int, subprocess.run([tool, "decode", str(f), str(raw)], check=True, capture_output=True,
                                       text=True).stdout.split())
        ours = np.fromfile(raw, dtype=np.uint8).reshape(h, w, 3).astype(int)
        pil = np.asarray(Image.open(f).convert("RGB")).astype(int)
        diff = np.abs(ours - pil).max()
        print(f"{f.name}: {w}x{h} decode max |ours - PIL| = {diff}")
        if pil.shape != ours.shape or diff > 1:
            bad.append(f"{f.name}: decode differs from PIL by {diff}")
    # (top, left, height, width, flip): a downscale, an upscale, a thin crop, the whole image.
    crops = [(10, 20, 300, 280, 0), (100, 150, 120, 100, 1), (0, 0, 375, 250, 0), (0, 0, 375, 500, 1)]
    for f, (t, l, ch, cw, flip) in zip(files[:len(crops)] * 2, crops):
        im = Image.open(f).convert("RGB")
        ch, cw = min(ch, im.height - t), min(cw, im.width - l)
        ref = im.crop((l, t, l + cw, t + ch)).resize((224, 224), Image.BILINEAR)
        if flip:
            ref = ref.transpose(Image.FLIP_LEFT_RIGHT)
        ref = np.asarray(ref).astype(np.float64) / 255.0
        ref = ((ref - MEAN) / STD).transpose(2, 0, 1)
        for layout, dtype in (("nchw", "fp32"), ("nhwc", "fp16")):
            binf = out / f"{f.stem}_{layout}.bin"
            subprocess.run([tool, "augment", str(f), str(t), str(l), str(ch), str(cw), str(flip), layout, dtype,
                            str(binf)], check=True)
            v = np.fromfile(binf, dtype=np.float32 if dtype == "fp32" else np.float16).astype(np.float64)
            v = v.reshape(3, 224, 224) if layout == "nchw" else v.reshape(224, 224, 3).transpose(2, 0, 1)
            err = np.abs(v - ref)
            grey = err * np.array(STD)[:, None, None] * 255  # in grey levels
            print(f"{f.name} crop {t},{l} {ch}x{cw} flip {flip} {layout}/{dtype}: max {grey.max():.2f}, "
                  f"mean {grey.mean():.3f} grey levels from PIL")
            if grey.max() > 2.5 or grey.mean() > 0.5:
                bad.append(f"{f.name} crop {(t, l, ch, cw, flip)} {layout}/{dtype}: {grey.max():.2f} grey levels from PIL")
    bad += run_host_only(nodebench, schema, out, imgs)
    for b in bad:
        print("FAIL:", b)
    return 1 if bad else 0


def run_host_only(nodebench, schema, out, imgs):
    result = out / "host_only.json"
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", NODEBENCH_INPUT_IMAGES=str(imgs))
    p = subprocess.run([nodebench, "run", "--family", "input", "--suite", "full", "--filter", "/c1$", "--max-time", "0.3",
                        "--out-file", str(result)], capture_output=True, text=True, env=env, timeout=240)
    print(p.stdout[-3000:], p.stderr[-2000:])
    if p.returncode != 0:
        return [f"host-only run without a GPU: exit {p.returncode}"]
    doc = json.loads(result.read_text())
    bad = []
    try:
        import jsonschema
        jsonschema.validate(doc, json.loads(pathlib.Path(schema).read_text()))
    except ImportError:
        print("note: no jsonschema here: the result is not validated against the schema")
    ids = sorted(r["id"] for r in doc["records"])
    if ids != ["input/cpu/nchw/fp32/c1", "input/cpu/nhwc/fp16/c1"]:
        bad.append(f"records {ids}")
    for r in doc["records"]:
        v = r["details"].get("verification", {})
        if r["status"] != "ok" or r["gpus"] != [] or not v.get("ok") or v.get("decode_max_abs_diff") != 0:
            bad.append(f"{r['id']}: {r['status']} {r['reason']} gpus {r['gpus']} verification {v}")
        if r["details"]["images"]["source"] != str(imgs) or r["metrics"].get("images_per_s", 0) <= 0:
            bad.append(f"{r['id']}: images {r['details']['images']} metrics {r['metrics']}")
        if "clock_unknown" in r["flags"]:
            bad.append(f"{r['id']}: a host-only record flagged clock_unknown")
    curves = doc.get("analysis", {}).get("input_pipeline", {}).get("curves", [])
    if len(curves) != 2:
        bad.append(f"analysis.input_pipeline curves: {curves}")
    return bad


if __name__ == "__main__":
    sys.exit(main())
