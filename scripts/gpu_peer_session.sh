#!/usr/bin/env bash
# One call on a lent GPU machine (one GPU or several): the PyTorch peer comparisons that
# results/README.md records, each taken alternately with nodebench (peer, nodebench, peer):
#   conv     3x3 64->64 56x56 NCHW forward, batch 32..256, FP16 and TF32, against
#            torch.nn.functional.conv2d with cudnn.benchmark (GPU 0);
#   copies   device copy 4 GiB and pinned/pageable host copies 1 GiB against Tensor.copy_ (GPU 0);
#   nccl     all-reduce float at 256 MiB, 1 GiB and 4 GiB on every GPU, against
#            torch.distributed.all_reduce (NCCL backend) -- only with two or more GPUs;
#   peak     the peak family (GPU 0); sweep: the ResNet-50 convolution sweeps (FP16 and TF32,
#            NCHW; SWEEP_SERIES="fp32/nhwc ..." for others) with their batch recommendation, while
#            time is left; validate: level 2; quick: `nodebench run --suite quick` on every GPU,
#            timed from start to written result file.
# usage: scripts/gpu_peer_session.sh [STEPS] [CUDA_ARCHS]
#        STEPS: comma list of quick,conv,copies,nccl,peak,sweep,validate
#        (default all), archs default 90. Starts no step past BUDGET_S seconds (default 540).
# Writes under $OUT (default ./gpu-out): at most 8 files (the device tool's limit); logs packed.
set -uo pipefail
STEPS=${1:-conv,copies,nccl,peak,sweep,validate}
ARCHS=${2:-90}
START=$(date +%s)
BUDGET_S=${BUDGET_S:-540}
OUT=${OUT:-$PWD/gpu-out}
RAW=${RAW:-/tmp/nb-peer-raw}
mkdir -p "$OUT" "$RAW"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
left() { echo $(( BUDGET_S - ($(date +%s) - START) )); }
has() { case ",$STEPS," in *",$1,"*) return 0 ;; esac; return 1; }
log() { echo "== $*" | tee -a "$OUT/session.log"; }
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || echo 1)
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv > "$RAW/nvidia-smi.csv" 2>&1
log "GPUs: $NGPU; steps: $STEPS; configure+build (archs $ARCHS)"
t0=$(date +%s)
if [ ! -x build/nodebench ] || [ "${REBUILD:-1}" = 1 ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" > "$RAW/build.log" 2>&1 &&
    cmake --build build -j "$(nproc)" --target nodebench nodebench_gpu_tests >> "$RAW/build.log" 2>&1 ||
    { log "BUILD FAILED"; grep -E "error" "$RAW/build.log" | head -20; exit 1; }
fi
log "build took $(( $(date +%s) - t0 )) s"
R=(); P=()

if has quick; then
  log "quick suite on every GPU, timed from start to written JSON ($(left) s left)"
  t0=$(date +%s.%N)
  build/nodebench run --suite quick --out-file "$OUT/quick.json" > "$RAW/quick.log" 2>&1; rc=$?
  t1=$(date +%s.%N)
  echo "quick suite rc=$rc wall_s=$(python3 -c "print(round($t1 - $t0, 2))")" | tee -a "$OUT/session.log"
  grep -E "cases:|mixed precision|recommended" "$RAW/quick.log" | tee -a "$OUT/session.log"
fi
# One single-GPU peer comparison: PyTorch (peer_torch.py --KIND), nodebench's cases matching
# FILTER, PyTorch again; the files join the ratio table below.
peer_round() {
  local kind=$1 filter=$2
  log "$kind peer: PyTorch, nodebench, PyTorch ($(left) s left)"
  CUDA_VISIBLE_DEVICES=0 python3 scripts/peer_torch.py "--$kind" --seconds 1 --out "$RAW/peer_${kind}1.json" >> "$RAW/peer.log" 2>&1
  build/nodebench run --suite full --gpus 0 --filter "$filter" --max-time 1 --target-cv 0 --quiet \
    --out-file "$OUT/peer_${kind}_nodebench.json" > "$RAW/peer_${kind}_nodebench.log" 2>&1
  echo "nodebench $kind rc=$?" | tee -a "$OUT/session.log"
  CUDA_VISIBLE_DEVICES=0 python3 scripts/peer_torch.py "--$kind" --seconds 1 --out "$RAW/peer_${kind}2.json" >> "$RAW/peer.log" 2>&1
  R+=(--result "$OUT/peer_${kind}_nodebench.json"); P+=(--peer "$RAW/peer_${kind}1.json" --peer "$RAW/peer_${kind}2.json")
}
has conv && peer_round conv '^conv/layer/l1_3x3_64_64/(fp16|tf32)/nchw/fwd/b(32|64|128|256)$'
has copies && peer_round copies '^memory/(copy|memcpy_d2d)/4096MiB$|^hostlink/(h2d|d2h)/(pinned|pageable)/ce/1GiB$'
if has nccl && [ "$NGPU" -ge 2 ] && [ "$(left)" -gt 120 ]; then
  log "nccl peer: torch.distributed, nodebench, torch.distributed on $NGPU GPUs ($(left) s left)"
  F='^nccl/all_reduce/float/(in_place|out_of_place)/eager/(256MiB|1GiB|4GiB)$'
  timeout 120 python3 scripts/peer_torch_nccl.py --sizes-mib 256,1024,4096 --out "$RAW/peer_nccl1.json" >> "$RAW/peer.log" 2>&1
  echo "torch nccl rc=$?" | tee -a "$OUT/session.log"
  timeout 180 build/nodebench run --suite full --family nccl --filter "$F" --max-time 1 --quiet \
    --out-file "$OUT/peer_nccl_nodebench.json" > "$RAW/peer_nccl_nodebench.log" 2>&1
  echo "nodebench nccl rc=$?" | tee -a "$OUT/session.log"
  timeout 120 python3 scripts/peer_torch_nccl.py --sizes-mib 256,1024,4096 --out "$RAW/peer_nccl2.json" >> "$RAW/peer.log" 2>&1
  R+=(--result "$OUT/peer_nccl_nodebench.json"); P+=(--peer "$RAW/peer_nccl1.json" --peer "$RAW/peer_nccl2.json")
fi
if [ ${#R[@]} -gt 0 ]; then
  python3 scripts/compare_peer.py "${R[@]}" "${P[@]}" --out "$OUT/peer_ratio.json" | tee -a "$OUT/session.log"
  tar czf "$OUT/peer_raw.tar.gz" -C "$RAW" $(cd "$RAW" && ls peer_*.json 2>/dev/null)
fi
if has peak && [ "$(left)" -gt 60 ]; then
  log "peak family and its GPU test ($(left) s left)"
  ctest --test-dir build -R "gpu_quick_families_small|gpu_timing" --output-on-failure > "$RAW/ctest-gpu.log" 2>&1
  echo "ctest (families small, timing) rc=$?" | tee -a "$OUT/session.log"
  build/nodebench run --suite quick --gpus 0 --family peak,gemm --out-file "$OUT/peak.json" > "$RAW/peak.log" 2>&1
  echo "peak rc=$?" | tee -a "$OUT/session.log"
  python3 - "$OUT/peak.json" <<'EOF' | tee -a "$OUT/session.log"
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["records"]:
    if r["family"] == "peak":
        m = r.get("metrics", {})
        rate = m.get("tflops", m.get("tops"))
        print(f"  {r['id']:22s} {r['status']:7s} {rate or 0:9.1f} {m.get('of_theoretical_pct', 0):6.1f}% of "
              f"{m.get('theoretical_tflops', m.get('theoretical_tops', 0)):.1f} at {m.get('sm_clock_mhz', 0):.0f} MHz")
for v in d.get("analysis", {}).get("fp16_vs_fp32", []):
    print(" ", v["verdict"], "-", v["reason"])
EOF
fi
if has sweep; then
  for series in ${SWEEP_SERIES:-fp16/nchw tf32/nchw}; do
    name=${series/\//_}
    if [ "$(left)" -lt 90 ]; then log "no time left for the $series sweep"; continue; fi
    log "ResNet-50 convolution sweep $series ($(left) s left)"
    timeout $(( $(left) - 30 )) build/nodebench run --suite full --gpus 0 --family conv --filter "^conv/resnet50/$series/" \
      --out-file "$OUT/conv_sweep_$name.json" > "$RAW/conv_sweep_$name.log" 2>&1
    echo "conv sweep $series rc=$?" | tee -a "$OUT/session.log"
    grep -E "cases:|recommended|no recommendation" "$RAW/conv_sweep_$name.log" | tee -a "$OUT/session.log"
  done
fi
if has validate && [ "$(left)" -gt 60 ]; then
  log "validate --level 2 on $NGPU GPU(s) ($(left) s left)"
  mkdir -p "$RAW/validate"
  timeout 120 build/nodebench validate --level 2 --out "$RAW/validate" --junit "$OUT/validate-junit.xml" \
    --prometheus "$RAW/validate.prom" > "$RAW/validate.log" 2>&1
  echo "validate rc=$?" | tee -a "$OUT/session.log"
  grep -E "^  (ok|FAIL|warn|skip) |VERDICT" "$RAW/validate.log" | tee -a "$OUT/session.log"
  mv "$RAW"/validate/*.json "$OUT/validate.json" 2>/dev/null
fi
log "time used: $(( $(date +%s) - START )) s"
tar czf "$OUT/logs.tar.gz" -C "$RAW" $(cd "$RAW" && ls *.log *.csv *.prom 2>/dev/null)
ls -la "$OUT"
