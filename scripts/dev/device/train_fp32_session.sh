#!/usr/bin/env bash
# The FP32 and TF32 ResNet-50 training step against PyTorch on one GPU (issue 40), on the GPU
# machine (one H100 or H200, CUDA 13, PyTorch and torchvision installed, no network), from the
# repository root:
#   bash scripts/dev/device/train_fp32_session.sh
# 1. build (Release, CMAKE_CUDA_ARCHITECTURES from the GPU; an existing build/ is reused):
#    nodebench, nodebench_train_gpu_tests, nodebench_bn_bandwidth;
# 2. the GPU tests of the batch norm (TrainBnLayerGpu.*: every kind, path, layout and odd shape
#    against the float64 reference) and of the fused step against the unfused one (TrainFusionGpu.*);
# 3. the memory family's copy bandwidth (memory/copy/8xL2), then nodebench_bn_bandwidth: each
#    batch-norm pass on every ResNet-50 layer shape at b64 and b256, NCHW and NHWC, against it;
# 4. per point of POINTS, PyTorch (peer_torch_train.py) in every mode of TORCH_MODES (eager,
#    torch.compile, mode=reduce-overhead; TF32 off for fp32, on for tf32; channels_last for nhwc),
#    each mode built and warmed once, then timed in 2 rounds with nodebench's step of the same
#    point run between them (a new process each time: alternated, the same seconds per round);
# 5. compare_train_peer.py over what was measured, then the short tables (train_fp32_summary.py):
#    ratios to the fastest PyTorch mode, bn and conv time, the convolution algorithms chosen, the
#    batch-norm bandwidth table. Printed last.
# Each part starts only when its time is left (BUDGET_S, default 480 s); a point that did not fit
# is named in session.log. Expected, fresh machine, on 16 cores: build 2-3 min, tests under 1 min,
# bandwidth under 1 min, about 1.5 min per point (two torch.compile warm-ups dominate) -- the
# default four points do not all fit in 8 minutes: the second call on the warm machine runs the rest:
#   POINTS="tf32/nchw:256 tf32/nhwc:256" TESTS= BN=0 bash scripts/dev/device/train_fp32_session.sh
# torch.compile's Inductor may run an NCHW model's convolutions channels-last (its layout
# optimisation; the peer file records inductor_layout_optimization): to see torch.compile with NCHW
# convolutions, TORCHINDUCTOR_LAYOUT_OPTIMIZATION=0 OUT=gpu-out-nchw-convs POINTS=tf32/nchw:256
# TORCH_MODES=compile TESTS= bash scripts/dev/device/train_fp32_session.sh
# A point is precision/layout:batch[:conv]: conv `auto` (the default, NODEBENCH_TRAIN_CONV_LAYOUT=auto:
# an NCHW tf32/fp16 point on tensor cores runs its convolutions in NHWC) or `input` (the images'
# layout), e.g. POINTS="tf32/nchw:256 fp32/nchw:256 tf32/nchw:256:input"; the summary's `conv`
# column says the layout each ran in, the input points compared apart (train_fp32_ratio_input.json).
# Environment: OUT (default ./gpu-out), BUDGET_S (480), POINTS ("fp32/nchw:64 fp32/nchw:256
# tf32/nchw:256 tf32/nhwc:256"; empty: none), TORCH_MODES (eager,compile,reduce-overhead), ROUND_S (1: seconds
# per timed round, either side), TESTS (gtest filter; empty: none), BN_REPS (5), ARCHS (from the GPU),
# ALGO_CACHE (nodebench's --algo-cache file), SEED_CACHE (1), BN (1; 0 leaves out part 3),
# BN_SWEEP (after part 3's default grid, the bandwidth again per "blocks_per_sm:row_bytes" of the
# list, e.g. "4:128 8:512 2:512": bn_bandwidth_<blocks>_<bytes>.json and a table of the step's ratios;
# the step's grid is 4:128, kernels/train/train_vec.hpp), BN_DIRTY (1: part 3 also with the L2 left
# dirty before each launch, bn_bandwidth_dirty.json; part 3's default flush leaves it clean), NCU (0;
# 1: after part 3, Nsight Compute on the reductions of the layers NCU_SHAPES, default
# "512x49,2048x49+add,64x3136", at b64 in both layouts: time, device-memory bytes, occupancy,
# launch and warp-state sections, no clock or cache control: ncu_bn.csv).
# Files in $OUT: session.log, summary.txt (the tables), summary.json, train_fp32_ratio.json
# (train_fp32_ratio_input.json for the points with :input),
# bn_bandwidth.json, raw/ (nodebench and PyTorch files and logs; JSON gzip-compressed at the end).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.." || exit 2
case "${1:-}" in -h|--help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;; esac

START=$(date +%s)
BUDGET_S=${BUDGET_S:-480}
OUT=${OUT:-$PWD/gpu-out}
RAW=$OUT/raw
POINTS=${POINTS-fp32/nchw:64 fp32/nchw:256 tf32/nchw:256 tf32/nhwc:256}
TORCH_MODES=${TORCH_MODES:-eager,compile,reduce-overhead}
ROUND_S=${ROUND_S:-1}
TESTS=${TESTS-TrainBnLayerGpu.*:TrainFusionGpu.*}
BN_REPS=${BN_REPS:-5}
mkdir -p "$OUT" "$RAW"
export PYTHONUNBUFFERED=1
left() { echo $(( BUDGET_S - ($(date +%s) - START) )); }
tmo() { local l; l=$(( $(left) - 5 )); [ "$l" -lt "$1" ] && echo "$((l > 1 ? l : 1))" || echo "$1"; }  # min(N, time left)
note() { echo "$*" | tee -a "$OUT/session.log"; }
rc=0

# 1. build
if [ -z "${ARCHS:-}" ]; then
  ARCHS=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
  ARCHS=${ARCHS:-90}
fi
note "== build (CUDA archs $ARCHS, $(left) s left)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv > "$RAW/nvidia-smi.csv" 2>&1
if ! { cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" > "$RAW/build.log" 2>&1 &&
       timeout "$(tmo 400)" cmake --build build -j "$(nproc)" --target nodebench nodebench_train_gpu_tests nodebench_bn_bandwidth \
         >> "$RAW/build.log" 2>&1; }; then
  grep -E "error|Error" "$RAW/build.log" | head -20 | tee -a "$OUT/session.log"
  note "build failed: see raw/build.log"
  exit 1
fi
note "built in $(( $(date +%s) - START )) s"

# 2. the GPU tests
if [ -n "$TESTS" ]; then
  note "== GPU tests $TESTS ($(left) s left)"
  timeout "$(tmo 180)" build/tests/nodebench_train_gpu_tests --gtest_filter="$TESTS" > "$RAW/gpu_tests.log" 2>&1 || rc=1
  grep -E "^\[ +(OK|FAILED) +\]|PASSED|FAILED|cases run" "$RAW/gpu_tests.log" | head -40 | tee -a "$OUT/session.log"
fi

# 3. copy bandwidth, then each batch-norm pass against it
if [ "${BN:-1}" = 1 ]; then
  note "== memory copy and batch-norm bandwidth ($(left) s left)"
  timeout "$(tmo 90)" build/nodebench run --suite full --gpus 0 --family memory --filter '^memory/copy/8xL2$' --max-time 1 \
    --quiet --out-file "$RAW/memory_copy.json" > "$RAW/memory_copy.log" 2>&1 || rc=1
  copy=$(python3 - "$RAW/memory_copy.json" <<'PY' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1]))
print(next(r["metrics"]["gbps"] for r in d["records"] if r.get("status") == "ok" and "gbps" in r.get("metrics", {})))
PY
  )
  note "memory/copy/8xL2: ${copy:-not measured} GB/s"
  timeout "$(tmo 150)" build/tests/nodebench_bn_bandwidth --reps "$BN_REPS" ${copy:+--copy-gbps "$copy"} \
    --out "$OUT/bn_bandwidth.json" > "$RAW/bn_bandwidth.txt" 2>&1 || rc=1
  cat "$RAW/bn_bandwidth.txt" >> "$OUT/session.log"
  # The same with the dirty flush (BN_DIRTY=1, the default): the L2 left full of dirty lines
  # before each launch, as this tool measured before 2026-12-07 (nodebench_bn_bandwidth --help).
  if [ "${BN_DIRTY:-1}" = 1 ]; then
    timeout "$(tmo 150)" build/tests/nodebench_bn_bandwidth --reps "$BN_REPS" ${copy:+--copy-gbps "$copy"} --flush dirty \
      --out "$OUT/bn_bandwidth_dirty.json" > "$RAW/bn_bandwidth_dirty.txt" 2>&1 || rc=1
  fi
  # The reductions' grid swept (BN_SWEEP="blocks_per_sm:row_bytes ..."), each against the same copy.
  for v in ${BN_SWEEP:-}; do
    case $v in [0-9]*:[0-9]*) ;; *) note "BN_SWEEP: '$v' is not blocks_per_sm:row_bytes"; rc=2; continue ;; esac
    bps=${v%%:*}; rb=${v#*:}
    timeout "$(tmo 150)" build/tests/nodebench_bn_bandwidth --reps "$BN_REPS" ${copy:+--copy-gbps "$copy"} \
      --blocks-per-sm "$bps" --row-bytes "$rb" --out "$OUT/bn_bandwidth_${bps}_${rb}.json" \
      > "$RAW/bn_bandwidth_${bps}_${rb}.txt" 2>&1 || rc=1
  done
  if compgen -G "$OUT/bn_bandwidth_*.json" > /dev/null; then
    python3 - "$OUT"/bn_bandwidth*.json <<'PY' 2>&1 | tee -a "$OUT/session.log"
import json, sys
print("batch-norm bandwidth per run: step-weighted ratio to the copy per pass (blocks/SM, NHWC row bytes, L2 flush)")
for f in sys.argv[1:]:
    d = json.load(open(f))
    for st in d["step"]:
        print(f"{d.get('blocks_per_sm', '?'):>3}/SM {d.get('row_bytes', '?'):>4} B {d.get('l2_flush', 'dirty'):>5}  "
              f"{st['layout']}/b{st['batch']:<4}",
              "  ".join(f"{k} {st[k]['ratio']:.3f}" for k in ("fwd_stats", "fwd_apply", "bwd_reduce", "bwd_apply", "all")))
PY
  fi
fi

# 3b. (NCU=1) where the reductions' time goes on the small layers, which hold the statistics pass
# back at b64 (results/h100/2026-12-07-train-fp32-4/)
if [ "${NCU:-0}" = 1 ]; then
  if command -v ncu > /dev/null; then
    note "== Nsight Compute on the reductions of ${NCU_SHAPES:=512x49,2048x49+add,64x3136} ($(left) s left)"
    timeout "$(tmo 150)" ncu --clock-control none --cache-control none -k 'regex:(stats|sums)_n' --launch-count 60 \
      --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum --csv \
      build/tests/nodebench_bn_bandwidth --shapes "$NCU_SHAPES" --batches 64 --reps 2 > "$OUT/ncu_bn.csv" 2>&1 || rc=1
  else
    note "NCU=1: ncu is not on the PATH"
  fi
fi

# 4. the points, PyTorch's rounds around nodebench's step
# The algorithm cache: ALGO_CACHE, else one in raw/ started from a copy of the committed H200 cache
# (entries name the GPU model and cuDNN version; those that do not match this machine are searched
# again) unless SEED_CACHE=0, which makes the first nodebench run of each point search in full
# (cudnnFind over every algorithm; the later runs reuse its choice).
cache=${ALGO_CACHE:-$RAW/algo_cache.json}
seed=results/h200/2026-12-01-train-sweep/algo_cache_h200.json
if [ "${SEED_CACHE:-1}" = 1 ] && [ ! -f "$cache" ] && [ -f "$seed" ]; then cp "$seed" "$cache"; fi
NEED_POINT=${NEED_POINT:-100}
for spec in $POINTS; do
  # prec/layout:batch[:conv]: conv auto (default: NODEBENCH_TRAIN_CONV_LAYOUT=auto, an NCHW point on
  # tensor cores in tf32 runs its convolutions in NHWC) or input (forced to the images' layout).
  prec=${spec%%/*}; layout=${spec#*/}; layout=${layout%%:*}; rest=${spec#*:}; batch=${rest%%:*}
  conv=auto; [ "$rest" != "$batch" ] && conv=${rest#*:}
  case "$conv" in auto|input) ;; *) note "== $spec: conv layout '$conv' is not auto or input"; rc=2; continue ;; esac
  tag="${prec}_${layout}_b$batch"; [ "$conv" = input ] && tag+="_input"
  if [ "$(left)" -lt "$NEED_POINT" ]; then note "== $spec: not run, $(left) s left (needs $NEED_POINT)"; continue; fi
  note "== $spec: PyTorch $TORCH_MODES around nodebench, conv layout $conv ($(left) s left)"
  nb="NODEBENCH_TRAIN_CONV_LAYOUT=$conv build/nodebench run --suite full --gpus 0 --family train --filter '^train/resnet50/$prec/$layout/b$batch\$' --max-time $ROUND_S"
  nb+=" --quiet --algo-cache $cache --out-file $RAW/nb_${tag}_{torch_mode}.json > $RAW/nb_${tag}_{torch_mode}.log 2>&1; true"
  CUDA_VISIBLE_DEVICES=0 timeout "$(( $(left) - 20 ))" python3 scripts/dev/peers/peer_torch_train.py --mode "$prec/$layout" \
    --batches "$batch" --torch-modes "$TORCH_MODES" --seconds "$ROUND_S" --rounds 2 --warmup 5 --between "$nb" \
    --out "$RAW/torch_${tag}.json" > "$RAW/torch_${tag}.out" 2> "$RAW/torch_${tag}.log" || rc=1
  grep -E "compiled and warm|round|error|out of memory" "$RAW/torch_${tag}.log" | tail -9 | tee -a "$OUT/session.log"
done

# 5. the tables
note "== summary ($(left) s left)"
# One comparison per conv-layout group (the points forced to input apart: the same case ids).
cmp=()
for group in auto input; do
  nbg=(); tg=()
  for f in "$RAW"/nb_*.json "$RAW"/torch_*.json; do
    [ -e "$f" ] || continue
    case $f in *_input_*|*_input.json) g=input ;; *) g=auto ;; esac
    [ "$g" = "$group" ] || continue
    case ${f##*/} in nb_*) nbg+=("$f") ;; *) tg+=("$f") ;; esac
  done
  ratio=$OUT/train_fp32_ratio.json
  [ $group = input ] && ratio=$OUT/train_fp32_ratio_input.json
  [ ${#nbg[@]} -gt 0 ] && [ ${#tg[@]} -gt 0 ] || continue
  python3 scripts/dev/peers/compare_train_peer.py "${nbg[@]}" --peer "${tg[@]}" --out "$ratio" > "$RAW/compare_$group.txt" 2>&1
  cat "$RAW/compare_$group.txt" >> "$OUT/session.log"
  [ -f "$ratio" ] && cmp+=(--compare "$ratio")
done
nbfiles=()
compgen -G "$RAW/nb_*.json" > /dev/null && nbfiles=(--nodebench "$RAW"/nb_*.json)
bnfile=()
[ -f "$OUT/bn_bandwidth.json" ] && bnfile=(--bn "$OUT/bn_bandwidth.json")
python3 scripts/dev/device/train_fp32_summary.py "${cmp[@]}" "${nbfiles[@]}" "${bnfile[@]}" --out "$OUT/summary.json" \
  > "$OUT/summary.txt" 2>&1 || rc=1
gzip -f "$RAW"/*.json 2> /dev/null
note "done in $(( $(date +%s) - START )) s, rc=$rc"
cat "$OUT/summary.txt"
exit $rc
