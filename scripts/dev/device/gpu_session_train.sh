# The fused training step's GPU session steps (issue 23), sourced by gpu_session.sh, which defines
# left, tmo, note, keep, OUT and RAW. Most important first; each part starts only when its time
# is left, so BUDGET_S cuts the tail.
# shellcheck shell=bash

# The algorithm cache of the train steps: ALGO_CACHE, else a copy of the committed H200 cache
# (its entries name the GPU model and cuDNN version; entries that do not match are searched again).
seed_algo_cache() {
  local cache=${ALGO_CACHE:-$RAW/algo_cache.json} seed=results/h200/2026-12-01-train-sweep/algo_cache_h200.json
  if [ ! -f "$cache" ] && [ -f "$seed" ]; then cp "$seed" "$cache"; fi
  echo "$cache"
}

# One case of TRAIN_FUSED_CASES, PREC/LAYOUT[+LAYOUT]:BATCH: the PyTorch peer in every mode of
# TRAIN_FUSED_MODES, each compiled and warmed once, then two timed rounds with nodebench's fused
# step run between them (NODEBENCH_TRAIN_FUSION=1, every layout of the case; the unfused step,
# =0, beside the eager mode's rounds). nodebench runs while PyTorch's model stays built (its free
# cached blocks released): those records' device_used_bytes include PyTorch's memory; their
# peak_memory_bytes (the step's own arena) does not.
train_fused_case() {
  local spec=$1 cache=$2 prec layouts batch tag filt nb between
  prec=${spec%%/*}; layouts=${spec#*/}; layouts=${layouts%%:*}; batch=${spec##*:}
  tag="${prec}_${layouts//+/_}_b$batch"
  filt="^train/resnet50/$prec/(${layouts//+/|})/b$batch\$"
  nb="build/nodebench run --suite full --gpus 0 --family train --filter '$filt' --max-time 2 --quiet --algo-cache $cache"
  between="NODEBENCH_TRAIN_FUSION=1 $nb --out-file $RAW/tf_nb_${tag}_fused_{torch_mode}.json > $RAW/tf_nb_${tag}_fused_{torch_mode}.log 2>&1;"
  between+=" if [ {torch_mode} = eager ]; then NODEBENCH_TRAIN_FUSION=0 $nb --out-file $RAW/tf_nb_${tag}_unfused.json"
  between+=" > $RAW/tf_nb_${tag}_unfused.log 2>&1; fi; true"
  note "train-fused $spec: PyTorch ${TRAIN_FUSED_MODES:-eager,compile,reduce-overhead} around nodebench ($(left) s left)"
  CUDA_VISIBLE_DEVICES=0 timeout $(( $(left) - 30 )) python3 scripts/dev/peers/peer_torch_train.py --mode "$prec/${layouts%%+*}" \
    --batches "$batch" --torch-modes "${TRAIN_FUSED_MODES:-eager,compile,reduce-overhead}" --seconds 2 --rounds 2 \
    --between "$between" --out "$RAW/tf_torch_${tag}.json" > "$RAW/tf_torch_${tag}.out" 2> "$RAW/tf_torch_${tag}.log"
  local rc=$?
  grep -E "compiled and warm|round|error|out of memory" "$RAW/tf_torch_${tag}.log" | tail -12 | tee -a "$OUT/session.log"
  return $rc
}

# train-fused: 1. the train GPU tests (the fused step against the unfused one, then the step's
# own: gradients against finite differences, overflow, every precision/layout/fusion learning;
# then the quick case; TRAIN_FUSED_TESTS=0 leaves them out); 2. each case of TRAIN_FUSED_CASES
# (default "fp16/nhwc:256 tf32/nchw+nhwc:256 fp16/nhwc:64 fp16/nhwc:1024") while
# TRAIN_FUSED_NEED (200) seconds are left; 3. compare_train_peer.py over what was measured:
# train_fused_ratio.json, the tables last.
step_train_fused() {
  local rc=0 cache spec
  cache=$(seed_algo_cache)
  if [ "${TRAIN_FUSED_TESTS:-1}" = 1 ]; then
    timeout "$(tmo 300)" build/tests/nodebench_train_gpu_tests --gtest_filter='TrainFusionGpu.*:TrainStepGpu.*' \
      > "$RAW/train_fused_tests.log" 2>&1 || rc=1
    grep -E "^\[ +(OK|FAILED) +\]|fusion [01k]|  loss unfused| rel |PASSED|FAILED" "$RAW/train_fused_tests.log" | head -90 \
      | cut -c1-240 | tee -a "$OUT/session.log"
    timeout "$(tmo 200)" ctest --test-dir build -R "gpu_train_quick" --output-on-failure > "$RAW/ctest-train-quick.log" 2>&1 || rc=1
    grep -E "tests passed|Failed|\*\*\*" "$RAW/ctest-train-quick.log" | tee -a "$OUT/session.log"
  fi
  for spec in ${TRAIN_FUSED_CASES:-fp16/nhwc:256 tf32/nchw+nhwc:256 fp16/nhwc:64 fp16/nhwc:1024}; do
    if [ "$(left)" -lt "${TRAIN_FUSED_NEED:-200}" ]; then note "train-fused: no time left for $spec ($(left) s)"; continue; fi
    train_fused_case "$spec" "$cache" || rc=1
  done
  if compgen -G "$RAW/tf_torch_*.json" > /dev/null && compgen -G "$RAW/tf_nb_*.json" > /dev/null; then
    python3 scripts/dev/peers/compare_train_peer.py "$RAW"/tf_nb_*.json --peer "$RAW"/tf_torch_*.json \
      --out "$RAW/train_fused_ratio.json" | tee -a "$OUT/session.log"
    keep train_fused_ratio.json
  fi
  for f in "$RAW"/tf_nb_fp16_nhwc_b256_fused_eager.json "$RAW"/tf_nb_tf32_nchw_nhwc_b256_fused_eager.json; do
    [ -f "$f" ] && keep "$(basename "$f")"
  done
  return $rc
}

# train-fused-sweep: the batch sweeps of TRAIN_SWEEP_SERIES (default "fp16/nhwc tf32/nchw") redone
# with the fused step (NODEBENCH_TRAIN_FUSION=1) and the algorithm cache (seed_algo_cache), with
# the recommendation and a table per batch (step_train_sweep's).
step_train_fused_sweep() {
  local cache rc had=${NODEBENCH_TRAIN_FUSION+x} old=${NODEBENCH_TRAIN_FUSION-}
  cache=$(seed_algo_cache)
  export NODEBENCH_TRAIN_FUSION=1
  ALGO_CACHE=$cache TRAIN_SWEEP_TAG=_fused step_train_sweep; rc=$?
  if [ -n "$had" ]; then export NODEBENCH_TRAIN_FUSION=$old; else unset NODEBENCH_TRAIN_FUSION; fi
  return $rc
}
