#!/usr/bin/env bash
# One call on a lent GPU machine: configure, build, run the GPU tests, a timed quick suite,
# and the PyTorch peer comparison. Everything goes under $OUT (default ./gpu-out).
# usage: scripts/gpu_session.sh [CUDA_ARCHS]   (default 90; the machine builds for its own GPU)
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
ARCHS=${1:-90}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
log() { echo "== $*" | tee -a "$OUT/session.log"; }
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv > "$OUT/nvidia-smi.csv" 2>&1
log "configure+build (archs $ARCHS)"
t0=$(date +%s)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" > "$OUT/build.log" 2>&1 &&
  cmake --build build -j 16 >> "$OUT/build.log" 2>&1 || { log "BUILD FAILED"; tail -50 "$OUT/build.log"; exit 1; }
log "build took $(( $(date +%s) - t0 )) s"
log "ctest -L gpu"
ctest --test-dir build -L gpu --output-on-failure > "$OUT/ctest-gpu.log" 2>&1; echo "ctest gpu rc=$?" | tee -a "$OUT/session.log"
tail -5 "$OUT/ctest-gpu.log"
