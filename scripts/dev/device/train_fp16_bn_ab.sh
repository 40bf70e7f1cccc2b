#!/usr/bin/env bash
# FP16 NHWC training step: the batch norms on their default paths (cuDNN's fused persistent kernels
# where cuDNN fuses, train_fusion.cpp) against all of them on the step's own kernels
# (NODEBENCH_TRAIN_FUSION=kernels), alternated in new processes (default, kernels, default, kernels),
# on the GPU machine from the repository root after a build of build/nodebench (issue 40's FP16 goal):
#   OUT=gpu-out BATCHES="1024 256" ROUNDS=2 bash scripts/dev/device/train_fp16_bn_ab.sh
# Files in $OUT: fp16_bn_ab.txt (a line per run: batch, setting, round, step ms, images/s, bn ms,
# conv ms), fp16_<batch>_<setting>_<round>.json and .log; the algorithm cache fp16_cache.json
# starts from the committed H200 one (entries of another GPU or cuDNN are searched again).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.." || exit 2
case "${1:-}" in -h|--help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;; esac
OUT=${OUT:-$PWD/gpu-out}; BATCHES=${BATCHES:-1024 256}; ROUNDS=${ROUNDS:-2}; MAX_TIME=${MAX_TIME:-2}
mkdir -p "$OUT"
cache=$OUT/fp16_cache.json
seed=results/h200/2026-12-01-train-sweep/algo_cache_h200.json
[ -f "$cache" ] || { [ -f "$seed" ] && cp "$seed" "$cache"; }
rc=0
for b in $BATCHES; do
  for i in $(seq 1 "$ROUNDS"); do
    for f in 1 kernels; do
      tag="fp16_${b}_${f}_$i"
      NODEBENCH_TRAIN_FUSION=$f timeout 120 build/nodebench run --suite full --gpus 0 --family train \
        --filter "^train/resnet50/fp16/nhwc/b$b\$" --max-time "$MAX_TIME" --quiet --algo-cache "$cache" \
        --out-file "$OUT/$tag.json" > "$OUT/$tag.log" 2>&1 || rc=1
      python3 - "$OUT/$tag.json" "$b" "$f" "$i" <<'PY' 2>&1 | tee -a "$OUT/fp16_bn_ab.txt"
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    m = next(r["metrics"] for r in d["records"] if r.get("status") == "ok")
    print(f"b{sys.argv[2]} fusion={sys.argv[3]:8s} round {sys.argv[4]}: step {m['step_time_ms']:.2f} ms, "
          f"{m['images_per_s']:.0f} images/s, bn {m['time_bn_ms']:.2f} ms, conv {m['time_conv_ms']:.2f} ms")
except Exception as e:  # a run that failed: say so, the log has why
    print(f"b{sys.argv[2]} fusion={sys.argv[3]} round {sys.argv[4]}: no result ({e})")
PY
    done
  done
done
exit $rc
