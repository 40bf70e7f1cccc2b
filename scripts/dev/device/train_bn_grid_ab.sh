#!/usr/bin/env bash
# The training step with its own batch-norm reductions on different grids (BnGridTuning,
# kernels/train/train_vec.hpp; NODEBENCH_TRAIN_BN_BLOCKS_PER_SM and NODEBENCH_TRAIN_BN_ROW_BYTES),
# each point's grids alternated in new processes (round 1: every grid in GRIDS' order, round 2 in
# reverse, ...), on the GPU machine from the repository root after a build of build/nodebench
# (issue 40: which grid the step keeps):
#   OUT=gpu-out POINTS="tf32/nhwc:256 fp32/nchw:64" GRIDS="4:512 4:128 8:128" ROUNDS=2 \
#     bash scripts/dev/device/train_bn_grid_ab.sh
# A point is precision/layout:batch; a grid blocks_per_sm:row_bytes (row bytes 128, 256 or 512;
# they matter to NHWC only). MAX_TIME (2) is each run's --max-time; ALGO_CACHE (default
# $OUT/grid_cache.json, started from the committed H200 cache) is shared by the runs.
# Files in $OUT: grid_ab.txt (a line per run: point, grid, round, step ms, images/s, bn ms, then
# each grid's median over the rounds and, per point, the grid of the fastest median step:
# "fastest step: POINT GRID"), grid_<point>_<grid>_<round>.json and .log.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.." || exit 2
case "${1:-}" in -h|--help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;; esac
OUT=${OUT:-$PWD/gpu-out}; POINTS=${POINTS:-tf32/nhwc:256}; GRIDS=${GRIDS:-4:512 4:128}; ROUNDS=${ROUNDS:-2}
MAX_TIME=${MAX_TIME:-2}
mkdir -p "$OUT"
cache=${ALGO_CACHE:-$OUT/grid_cache.json}
seed=results/h200/2026-12-01-train-sweep/algo_cache_h200.json
[ -f "$cache" ] || { [ -f "$seed" ] && cp "$seed" "$cache"; }
rc=0
for spec in $POINTS; do
  case $spec in fp32/*:[0-9]*|tf32/*:[0-9]*|fp16/*:[0-9]*) ;; *) echo "POINTS: '$spec' is not precision/layout:batch"; rc=2; continue ;; esac
  prec=${spec%%/*}; layout=${spec#*/}; layout=${layout%%:*}; batch=${spec##*:}
  for i in $(seq 1 "$ROUNDS"); do
    order=$GRIDS
    [ $((i % 2)) = 0 ] && order=$(echo "$GRIDS" | tr ' ' '\n' | tac | tr '\n' ' ')
    for g in $order; do
      case $g in [0-9]*:[0-9]*) ;; *) echo "GRIDS: '$g' is not blocks_per_sm:row_bytes"; rc=2; continue ;; esac
      tag="grid_${prec}_${layout}_b${batch}_${g%%:*}_${g#*:}_$i"
      NODEBENCH_TRAIN_BN_BLOCKS_PER_SM=${g%%:*} NODEBENCH_TRAIN_BN_ROW_BYTES=${g#*:} timeout 150 build/nodebench run \
        --suite full --gpus 0 --family train --filter "^train/resnet50/$prec/$layout/b$batch\$" --max-time "$MAX_TIME" \
        --quiet --algo-cache "$cache" --out-file "$OUT/$tag.json" > "$OUT/$tag.log" 2>&1 || rc=1
      python3 - "$OUT/$tag.json" "$spec" "$g" "$i" <<'PY' 2>&1 | tee -a "$OUT/grid_ab.txt"
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    r = next(r for r in d["records"] if r.get("status") == "ok")
    m, s = r["metrics"], d.get("settings", {})
    print(f"{sys.argv[2]} grid {sys.argv[3]} round {sys.argv[4]}: step {m['step_time_ms']:.2f} ms, "
          f"{m['images_per_s']:.0f} images/s, bn {m['time_bn_ms']:.2f} ms, conv {m['time_conv_ms']:.2f} ms "
          f"(recorded grid {s.get('train_bn_blocks_per_sm')}:{s.get('train_bn_row_bytes')})")
except Exception as e:  # a run that failed: say so, the log has why
    print(f"{sys.argv[2]} grid {sys.argv[3]} round {sys.argv[4]}: no result ({e})")
PY
    done
  done
done
python3 - "$OUT/grid_ab.txt" <<'PY' | tee -a "$OUT/grid_ab.txt"
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+) grid (\S+) round \d+: step ([\d.]+) ms, \d+ images/s, bn ([\d.]+) ms", line)
    if m:
        runs.setdefault((m[1], m[2]), []).append((float(m[3]), float(m[4])))
print("median over rounds: point, grid, step ms, bn ms, runs")
for (p, g), v in runs.items():
    print(f"  {p:16s} {g:7s} {statistics.median(x[0] for x in v):8.2f} {statistics.median(x[1] for x in v):8.2f} {len(v)}")
for p in dict.fromkeys(p for p, _ in runs):
    best = min((statistics.median(x[0] for x in v), g) for (q, g), v in runs.items() if q == p)
    print(f"fastest step: {p} {best[1]}")
PY
exit $rc
