#!/usr/bin/env bash
# One call on a lent GPU machine (see results/README.md): configure, build, then a phase.
#   A: the GPU tests, the timed quick suite, and the PyTorch peer comparisons (GEMM, copies,
#      convolution), PyTorch and nodebench taken alternately.
#   B: the ResNet-50 convolution sweep (FP16 and TF32, NCHW) with its batch recommendation,
#      and `nodebench validate` (pass, and the two planted failures).
# Everything goes under $OUT (default ./gpu-out); at most 8 files are kept there, the rest
# packed into raw.tar.gz.  usage: scripts/gpu_session.sh A|B|ALL [CUDA_ARCHS]   (archs default 90)
# ALL does A with one peer round, then B, and starts no step past BUDGET_S seconds (540).
# The schema tests need `jsonschema`, which the GPU machine lacks: carry it as wheels in .whl/
# (python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12
#  --platform manylinux2014_x86_64 -d .whl jsonschema jsonschema-specifications referencing rpds-py).
set -uo pipefail
PHASE=${1:-A}
START=$(date +%s)
BUDGET_S=${BUDGET_S:-540}   # phase ALL: start no step that would not end inside this
keep=""
left() { echo $(( BUDGET_S - ($(date +%s) - START) )); }
ARCHS=${2:-90}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
log() { echo "== $*" | tee -a "$OUT/session.log"; }
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv > "$OUT/nvidia-smi.csv" 2>&1
log "configure+build (archs $ARCHS)"
t0=$(date +%s)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" > "$OUT/build.log" 2>&1 &&
  cmake --build build -j 16 --target nodebench nodebench_gpu_tests >> "$OUT/build.log" 2>&1 || { log "BUILD FAILED"; tail -50 "$OUT/build.log"; exit 1; }
log "build took $(( $(date +%s) - t0 )) s"

if [ "$PHASE" = A ] || [ "$PHASE" = ALL ]; then
  log "ctest -L gpu"
  ctest --test-dir build -L gpu --output-on-failure > "$OUT/ctest-gpu.log" 2>&1; echo "ctest gpu rc=$?" | tee -a "$OUT/session.log"
  grep -E "tests passed|Failed|Passed" "$OUT/ctest-gpu.log" | tail -8
  log "quick suite (timed from start to written JSON)"
  mkdir -p "$OUT/quick"
  t0=$(date +%s.%N)
  build/nodebench run --suite quick --out "$OUT/quick" > "$OUT/quick.log" 2>&1; rc=$?
  t1=$(date +%s.%N)
  echo "quick suite rc=$rc wall_s=$(python3 -c "print(round($t1 - $t0, 2))")" | tee -a "$OUT/session.log"
  grep -E "cases:|mixed precision|recommended|ResNet" "$OUT/quick.log" | tee -a "$OUT/session.log"
  mv "$OUT"/quick/*.json "$OUT/quick.json"; rmdir "$OUT/quick"
  log "peer comparison: PyTorch and nodebench alternately, 1 s sustained per case each"
  F='^gemm/(fp32|tf32|fp16|bf16)/.*/square_8192$|^memory/(copy|memcpy_d2d)/4096MiB$|^hostlink/(h2d|d2h)/(pinned|pageable)/ce/1GiB$|^conv/layer/l1_3x3_64_64/(fp16|tf32)/nchw/fwd/b(32|64|128|256)$'
  python3 scripts/peer_torch.py --gemm --copies --conv --seconds 1 --out "$OUT/peer1.json" >> "$OUT/peer.log" 2>&1
  ROUNDS="1 2"; [ "$PHASE" = ALL ] && ROUNDS=1
  for i in $ROUNDS; do
    build/nodebench run --suite full --filter "$F" --max-time 1 --target-cv 0 --quiet --out-file "$OUT/peer_nodebench_$i.json" > "$OUT/peer_nodebench_$i.log" 2>&1
    echo "nodebench peer run $i rc=$?" | tee -a "$OUT/session.log"
    python3 scripts/peer_torch.py --gemm --copies --conv --seconds 1 --out "$OUT/peer$((i+1)).json" >> "$OUT/peer.log" 2>&1
  done
  R=(); P=()
  for f in "$OUT"/peer_nodebench_*.json; do R+=(--result "$f"); done
  for f in "$OUT"/peer[0-9].json; do P+=(--peer "$f"); done
  python3 scripts/compare_peer.py "${R[@]}" "${P[@]}" --out "$OUT/peer_ratio.json" | tee -a "$OUT/session.log"
  keep='quick.json peer_nodebench_1.json peer_nodebench_2.json peer_ratio.json session.log'
  log "time used: $(( $(date +%s) - START )) s"
fi
if [ "$PHASE" = B ] || [ "$PHASE" = ALL ]; then
  [ "$PHASE" = ALL ] && keep="quick.json peer_nodebench_1.json peer_ratio.json session.log"
  SWEEP='^conv/resnet50/(fp16|tf32)/nchw/'
  [ "$PHASE" = ALL ] && SWEEP='^conv/resnet50/fp16/nchw/'
  log "ResNet-50 convolution sweep ($SWEEP), batch 1..1024 ($(left) s left)"
  timeout $(( $(left) - 100 )) build/nodebench run --suite full --family conv --filter "$SWEEP" --out-file "$OUT/conv_sweep.json" > "$OUT/conv_sweep.log" 2>&1
  echo "conv sweep rc=$?" | tee -a "$OUT/session.log"
  grep -E "cases:|recommended|no recommendation|mixed" "$OUT/conv_sweep.log" | tee -a "$OUT/session.log"
  if build/nodebench validate --help > /dev/null 2>&1; then
    log "validate --level 2"
    timeout 120 build/nodebench validate --level 2 --out "$OUT/validate" --junit "$OUT/validate-junit.xml" --prometheus "$OUT/validate.prom" > "$OUT/validate.log" 2>&1
    echo "validate rc=$?" | tee -a "$OUT/session.log"; tail -30 "$OUT/validate.log"
    mv "$OUT"/validate/*.json "$OUT/validate.json" 2>/dev/null; rm -rf "$OUT/validate"
    log "validate with the GPU hidden (CUDA_VISIBLE_DEVICES=)"
    CUDA_VISIBLE_DEVICES= build/nodebench validate --level 1 > "$OUT/validate-hidden.log" 2>&1; echo "hidden rc=$?" | tee -a "$OUT/session.log"; tail -12 "$OUT/validate-hidden.log"
    if [ -f tests/data/impossible_thresholds.json ]; then
      log "validate against a profile the GPU cannot meet"
      timeout 90 build/nodebench validate --level 2 --profile tests/data/impossible_thresholds.json --out "$OUT/vimp" > "$OUT/validate-impossible.log" 2>&1
      echo "impossible rc=$?" | tee -a "$OUT/session.log"; tail -20 "$OUT/validate-impossible.log"; rm -rf "$OUT/vimp"
    fi
  fi
  keep="$keep conv_sweep.json validate.json validate-junit.xml session.log"
fi
# At most 8 files come back from $OUT: keep the results, pack the rest.
mkdir -p /tmp/nb-raw
for f in "$OUT"/*; do
  b=$(basename "$f")
  case " $keep " in *" $b "*) ;; *) mv "$f" /tmp/nb-raw/ ;; esac
done
tar czf "$OUT/raw.tar.gz" -C /tmp/nb-raw .
ls -la "$OUT"
