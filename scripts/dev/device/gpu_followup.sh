#!/usr/bin/env bash
# After gpu_full_session.sh (one short call on a GPU machine): build; the quick suite twice, each
# with its estimate-against-actual table (the cost fit built in now: harness/profiles/costs.json);
# the cases the full run recorded as wrong, again (gemm FP16 classifier at small batches, the FP32
# 3x3 layer at batch 256); the planned-memory GPU test; the NHWC FP16 and TF32 part of the full
# suite (conv network cases, then the train sweeps) with its estimate table. JSON results and the
# logs (logs.tar.gz) in $OUT (OUT, default ./gpu-out).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.." || exit 1
OUT=${OUT:-$PWD/gpu-out}
L=/tmp/nbf
mkdir -p "$OUT" "$L"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
[ -d .deps/jpeg ] && export TURBOJPEG_ROOT=$PWD/.deps/jpeg
T0=$(date +%s)
step() { echo "== [$(( $(date +%s) - T0 )) s] $*" | tee -a "$L/session.log"; }
step build
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-90}" > "$L/build.log" 2>&1 &&
  cmake --build build -j "$(nproc)" --target nodebench nodebench_train_gpu_tests >> "$L/build.log" 2>&1 ||
  { tail -20 "$L/build.log"; exit 1; }
for i in 1 2; do
  step "quick suite $i"
  build/nodebench run --suite quick --out-file "$OUT/quick$i.json" > "$L/quick$i.log" 2>&1
  grep -E "cases:" "$L/quick$i.log" | tee -a "$L/session.log"
  python3 scripts/dev/costs/estimate_table.py "$OUT/quick$i.json" | tee -a "$L/session.log"
done
step "the full run's wrong cases again"
build/nodebench run --suite full --filter '^(gemm/fp16/cublaslt/classifier_b(1|2|4|8)|conv/layer/l1_3x3_64_64/fp32/nchw/(fwd|bwd_data)/b256)$' \
  --out-file "$OUT/fixes.json" > "$L/fixes.log" 2>&1
sed -n '/^case /,/^$/p' "$L/fixes.log" | tee -a "$L/session.log"
step "planned-memory GPU test"
build/tests/nodebench_train_gpu_tests --gtest_filter='TrainStepGpu.PlannedMemory*' > "$L/memtest.log" 2>&1
grep -E "worst|  OK|FAILED" "$L/memtest.log" | tee -a "$L/session.log"
step "NHWC FP16/TF32 part of the full suite"
build/nodebench run --suite full --filter '^(conv/resnet50/(fp16|tf32)/nhwc/|train/resnet50/(fp16|tf32)/nhwc/)' \
  --out-file "$OUT/subset.json" > "$L/subset.log" 2>&1
grep -E "cases:|predicted duration" "$L/subset.log" | tee -a "$L/session.log"
python3 scripts/dev/costs/estimate_table.py "$OUT/subset.json" | tee -a "$L/session.log"
step "done"
tar czf "$OUT/logs.tar.gz" -C "$L" .
