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
log "quick suite (timed from start to written JSON)"
mkdir -p "$OUT/quick"
t0=$(date +%s.%N)
build/nodebench run --suite quick --out "$OUT/quick" > "$OUT/quick.log" 2>&1; rc=$?
t1=$(date +%s.%N)
echo "quick suite rc=$rc wall_s=$(python3 -c "print(round($t1 - $t0, 2))")" | tee -a "$OUT/session.log" "$OUT/quick_timing.txt"
tail -45 "$OUT/quick.log"
log "GEMM peer comparison at 8192: PyTorch and nodebench alternately, 1 s sustained per case each"
GEMM_ARGS=(--family gemm --filter 'square_8192$' --max-time 1 --target-cv 0 --quiet)
python3 scripts/peer_torch.py --gemm --seconds 1 --out "$OUT/peer1.json" >> "$OUT/peer.log" 2>&1
for i in 1 2; do
  build/nodebench run "${GEMM_ARGS[@]}" --out-file "$OUT/gemm8192_$i.json" > "$OUT/gemm8192_$i.log" 2>&1
  echo "gemm8192 run $i rc=$?" | tee -a "$OUT/session.log"
  python3 scripts/peer_torch.py --gemm --seconds 1 --out "$OUT/peer$((i+1)).json" >> "$OUT/peer.log" 2>&1
done
python3 scripts/compare_peer.py --result "$OUT/gemm8192_1.json" --result "$OUT/gemm8192_2.json" \
  --peer "$OUT/peer1.json" --peer "$OUT/peer2.json" --peer "$OUT/peer3.json" --out "$OUT/gemm_peer_ratio.json" | tee -a "$OUT/session.log"
# At most 8 files come back from $OUT: keep the result JSON files, pack the rest.
mv "$OUT"/quick/*.json "$OUT/quick.json" 2>/dev/null; rmdir "$OUT/quick" 2>/dev/null
mkdir -p /tmp/nb-raw && find "$OUT" -maxdepth 1 -type f ! -name 'quick.json' ! -name 'gemm8192_*.json' \
  ! -name 'gemm_peer_ratio.json' ! -name 'session.log' -exec mv {} /tmp/nb-raw/ \;
tar czf "$OUT/raw.tar.gz" -C /tmp/nb-raw .
ls -la "$OUT"
cat "$OUT/session.log"
