#!/usr/bin/env bash
# One session on the GPU machine (an H200 machine, one GPU or several): configure and build, then
# the named steps, in the order given. What each step measured is recorded in the README of its
# folder under results/ (index: results/README.md).
#
# usage: scripts/dev/device/gpu_session.sh STEPS [CUDA_ARCHS]
#   STEPS       comma list of the steps below, or "all" (every step but multigpu)
#   CUDA_ARCHS  CMAKE_CUDA_ARCHITECTURES for the build (default 90)
# Steps:
#   build        configure (Ninja, Release) and build nodebench and the test programs; always
#                runs first when build/nodebench is missing or REBUILD=1 (the default)
#   gputests     ctest -L gpu: every GPU test
#   quick        `nodebench run --suite quick` on every GPU, timed from start to written file
#   gemm-peer    GEMM 8192^3 FP32/TF32/FP16/BF16 against torch.matmul        } PyTorch and
#   conv-peer    3x3 64->64 conv, batch 32..256, FP16/TF32, against conv2d     } nodebench taken
#   copies-peer  device copy 4 GiB, host copies 1 GiB, against Tensor.copy_   } alternately (GPU 0),
#   nccl-peer    all-reduce 256 MiB..4 GiB against torch.distributed (2+ GPUs) } then one ratio table
#   peak         the peak and GEMM families on GPU 0 with their small GPU tests, peaks summarised
#   sweep        ResNet-50 convolution sweeps (SWEEP_SERIES, default "fp16/nchw tf32/nchw") with
#                their batch recommendation, while time is left
#   validate     validate --level 2 (JUnit, Prometheus), with the GPUs hidden, and against a
#                profile no GPU can meet
#   multigpu     (alias mpi) the p2p and nccl families: their tests, p2p loopback on one GPU,
#                the quick suite of both in one process, then under mpirun, one rank per GPU
#   repeat       the quick suite REPEAT_RUNS times (default 5), each in a fresh process
#                (`run --runs`): the run files and the combined file with run_to_run spreads
#   conv-repeat  conv/resnet50 fp16/nchw/b32 and tf32/nhwc/b256, REPEAT_RUNS fresh processes
#   peak-indep   an independent peak kernel (scripts/dev/peers/peak_independent.cu), the peak family,
#                the independent kernel again; each unit's ratio
#   peak-wgmma   tensor-core peaks (needs 90 in CUDA_ARCHS): the test gpu_peak_tensor_path, then
#                cuBLAS/cuBLASLt GEMM 8192^3 FP16, BF16, TF32, INT8, FP8, the independent wgmma
#                kernel (peak_independent.cu --wgmma, sm_90a), the peak family's mma_* cases, the
#                independent kernel again, 1.5 s sustained each (GPU 0); a table of peak case /
#                max(cuBLAS, independent), target 0.97 (about 2-3 min)
#   mpi-shared   two MPI ranks that see the same GPU (CUDA_VISIBLE_DEVICES=0 for both): the per-GPU
#                cases must be skipped as shared_gpu, with the reason
#   train-peer   the ResNet-50 training step against PyTorch (scripts/dev/peers/peer_torch_train.py),
#                TRAIN_PEER_MODES (default "fp16/nhwc tf32/nchw") at batches TRAIN_BATCHES (default 64,128,256),
#                PyTorch and nodebench taken alternately, time-matched; PyTorch's GPU-busy time
#                per step is measured too (--gpu-busy)
#   train-tests  the train GPU tests (gpu_train_quick, gpu_train_gradients, gpu_train_dp_engine), then
#                the train_dp family's fp16/nhwc b32 case on every GPU
#   train-sweep  the train family's batch sweep 1, 2, 4, ... to out of memory on GPU 0, per series of
#                TRAIN_SWEEP_SERIES (default "fp16/nhwc tf32/nchw"), one algorithm cache for all,
#                with the recommendation; a table per batch (step, images/s, memory, profile sum).
#                ALGO_CACHE names the algorithm cache file (default: a new one in RAW)
#   train-fused  the fused training step (scripts/dev/device/gpu_session_train.sh): the train GPU tests
#                (TRAIN_FUSED_TESTS=0: none), then per case of TRAIN_FUSED_CASES PyTorch in each mode
#                of TRAIN_FUSED_MODES around nodebench's fused and unfused step; train_fused_ratio.json
#   train-fused-sweep  train-sweep with the fused step and the algorithm cache seeded from
#                results/h200/2026-12-01-train-sweep/algo_cache_h200.json (or ALGO_CACHE)
#   monitor      `nodebench monitor` (3 s of JSON lines, a Prometheus textfile), then the quick
#                suite with `run --monitor` and its timeline drawn (nodebench-report timeline)
#   fresh-node   issue 25 (scripts/dev/device/fresh_node.sh): ctest -L gpu with jsonschema hidden, one-rank
#                nccl records, the quick conv one-batch line, the build's --filter engine
#   families     issue 22, the families' side: the GPU tests of what moved (the Session's handles,
#                choices, NCCL teams and algorithm cache; cases from Axes; the analyses), then the
#                quick suite on every GPU (families_quick.json), its records by family and analyses
#   input-peer   the input family's GPU tests (kernel, nvJPEG cases), then the family (JPEG decode +
#                crop + normalise per core count, nvJPEG) against scripts/dev/peers/peer_torch_input.py on
#                the same files: peer, nodebench, peer; ratios last.
#                nvJPEG: the nvidia-nvjpeg wheel carried in .whl/ (NVJPEG_ROOT is set from it);
#                libjpeg-turbo: the system's, or .deps/jpeg from scripts/dev/device/carry_jpeg.sh
#   frameworks   issue 44: scripts/dev/device/frameworks_session.sh on FW_PYTHON (default
#                /opt/torch/.venv/bin/python3): live, CUDA_VISIBLE_DEVICES=, --for-cc 6.1, --bench on one
#                GPU beside nodebench's train step (its files in raw.tar.gz, its table in session.log);
#                then the fatbin and framework ctests (against cuobjdump where the toolkit has it)
# Environment: OUT (default ./gpu-out), BUDGET_S (default 540: no step starts that could not end
#   inside it), REBUILD (1), PEER_ROUNDS (1: nodebench/PyTorch pairs after the first PyTorch run),
#   SWEEP_SERIES, RAW (scratch folder, default /tmp/nb-session-raw).
# Output: $OUT holds at most 8 files: session.log, up to 6 result files, and raw.tar.gz with
#   every log and the rest. A table of the steps (exit status, seconds) is printed last.
# The schema tests need `jsonschema`; where the GPU machine's Python lacks it, carry it as wheels
#   in .whl/ (python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12
#   --platform manylinux2014_x86_64 -d .whl jsonschema jsonschema-specifications referencing rpds-py).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.." || exit 1

STEPS=${1:-}
ARCHS=${2:-90}
ALL_STEPS="build families gputests quick gemm-peer conv-peer copies-peer nccl-peer peak sweep validate multigpu repeat conv-repeat peak-indep peak-wgmma train-peer train-tests train-sweep train-fused train-fused-sweep monitor mpi-shared fresh-node input-peer frameworks"
usage() { sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }
case "$STEPS" in
  -h|--help) usage; exit 0 ;;
  "") usage >&2; exit 2 ;;
  all) STEPS="gputests,quick,gemm-peer,conv-peer,copies-peer,nccl-peer,peak,sweep,validate" ;;
esac
list=""
for s in ${STEPS//,/ }; do
  [ "$s" = mpi ] && s=multigpu
  case " $ALL_STEPS " in *" $s "*) ;; *) echo "gpu_session: unknown step '$s' (steps: $ALL_STEPS)" >&2; exit 2 ;; esac
  list="${list:+$list,}$s"
done
STEPS=$list

START=$(date +%s)
BUDGET_S=${BUDGET_S:-540}
OUT=${OUT:-$PWD/gpu-out}
RAW=${RAW:-/tmp/nb-session-raw}
MAX_KEPT=6   # result files in $OUT, beside session.log and raw.tar.gz
mkdir -p "$OUT" "$RAW"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1

left() { echo $(( BUDGET_S - ($(date +%s) - START) )); }
tmo() { local l; l=$(( $(left) - 5 )); [ "$l" -lt "$1" ] && echo "$((l > 1 ? l : 1))" || echo "$1"; }  # min(N, time left)
log() { echo "== $*" | tee -a "$OUT/session.log"; }
note() { echo "$*" | tee -a "$OUT/session.log"; }
kept=0
keep() {  # moves a result file from $RAW to $OUT while there is room; otherwise it is packed
  if [ -f "$RAW/$1" ] && [ $kept -lt $MAX_KEPT ]; then mv "$RAW/$1" "$OUT/$1"; kept=$((kept + 1)); fi
}

if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl &&
    export PYTHONPATH=/tmp/site
fi
# Optional libraries carried in the tree: nvJPEG from its wheel, libjpeg-turbo unpacked from Debian's packages.
[ -d /tmp/site/nvidia/cu13/include ] && export NVJPEG_ROOT=/tmp/site/nvidia/cu13
[ -d .deps/jpeg ] && export TURBOJPEG_ROOT=$PWD/.deps/jpeg
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "${NGPU:-0}" -ge 1 ] || NGPU=1
nvidia-smi --query-gpu=index,uuid,name,driver_version,pcie.link.gen.current,pcie.link.width.current,clocks.sm,clocks.max.sm,power.limit,temperature.gpu \
  --format=csv > "$RAW/nvidia-smi.csv" 2>&1
nvidia-smi topo -m >> "$RAW/nvidia-smi.csv" 2>&1

# --- steps: one function each (step_NAME, "-" as "_"), added to ALL_STEPS and NEED; NEED is the time a step must have left to start -------------
declare -A NEED=([build]=120 [gputests]=200 [quick]=90 [gemm-peer]=90 [conv-peer]=90 [copies-peer]=60
                 [nccl-peer]=240 [peak]=60 [sweep]=90 [validate]=120 [multigpu]=180
                 [repeat]=150 [conv-repeat]=90 [peak-indep]=60 [peak-wgmma]=150 [train-peer]=150 [train-tests]=120 [train-sweep]=120 [train-fused]=150
                 [train-fused-sweep]=120 [monitor]=120 [mpi-shared]=60
                 [fresh-node]=300
                 [families]=300 [input-peer]=200 [frameworks]=420)
R=(); P=()   # nodebench and PyTorch files of the peer steps, for the ratio table

step_build() {
  local targets=(nodebench nodebench_gpu_tests nodebench_unit_tests)
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" > "$RAW/build.log" 2>&1 || return 1
  local t
  for t in nodebench_mpi_gather_test nodebench_train_gpu_tests nodebench_train_dp_gpu_tests nodebench_input_gpu_tests; do
    grep -q "$t" build/build.ninja 2>/dev/null && targets+=("$t")
  done
  cmake --build build -j "$(nproc)" --target "${targets[@]}" >> "$RAW/build.log" 2>&1 || {
    grep -E "error" "$RAW/build.log" | head -20; return 1; }
  grep -E "nodebench: (MPI|NCCL|cuDNN|CUDA|RE2|libjpeg|nvJPEG)" "$RAW/build.log" | tee -a "$OUT/session.log"
}

step_gputests() {
  timeout "$(tmo 600)" ctest --test-dir build -L gpu --output-on-failure > "$RAW/ctest-gpu.log" 2>&1
  local rc=$?
  grep -E "tests passed|Failed|\*\*\*" "$RAW/ctest-gpu.log" | tail -8 | tee -a "$OUT/session.log"
  return $rc
}

step_quick() {
  local t0 t1 rc
  t0=$(date +%s.%N)
  timeout "$(tmo 600)" build/nodebench run --suite quick --out-file "$RAW/quick.json" > "$RAW/quick.log" 2>&1; rc=$?
  t1=$(date +%s.%N)
  note "quick suite rc=$rc wall_s=$(python3 -c "print(round($t1 - $t0, 2))")"
  grep -E "cases:|mixed precision|recommended|ResNet" "$RAW/quick.log" | tee -a "$OUT/session.log"
  keep quick.json
  return $rc
}

# A single-GPU peer comparison: PyTorch (peer_torch.py --KIND), then PEER_ROUNDS times nodebench's
# cases matching FILTER and PyTorch again.
peer_round() {
  local kind=$1 filter=$2 i rc=0
  CUDA_VISIBLE_DEVICES=0 timeout "$(tmo 120)" python3 scripts/dev/peers/peer_torch.py "--$kind" --seconds 1 \
    --out "$RAW/peer_${kind}_torch0.json" >> "$RAW/peer.log" 2>&1 || rc=1
  P+=(--peer "$RAW/peer_${kind}_torch0.json")
  for i in $(seq 1 "${PEER_ROUNDS:-1}"); do
    timeout "$(tmo 300)" build/nodebench run --suite full --gpus 0 --filter "$filter" --max-time 1 --target-cv 0 --quiet \
      --out-file "$RAW/peer_${kind}_nodebench$i.json" > "$RAW/peer_${kind}_nodebench$i.log" 2>&1 || rc=1
    CUDA_VISIBLE_DEVICES=0 timeout "$(tmo 120)" python3 scripts/dev/peers/peer_torch.py "--$kind" --seconds 1 \
      --out "$RAW/peer_${kind}_torch$i.json" >> "$RAW/peer.log" 2>&1 || rc=1
    R+=(--result "$RAW/peer_${kind}_nodebench$i.json"); P+=(--peer "$RAW/peer_${kind}_torch$i.json")
  done
  return $rc
}
step_gemm_peer() { peer_round gemm '^gemm/(fp32|tf32|fp16|bf16)/.*/square_8192$'; }
step_conv_peer() { peer_round conv '^conv/layer/l1_3x3_64_64/(fp16|tf32)/nchw/fwd/b(32|64|128|256)$'; }
step_copies_peer() { peer_round copies '^memory/(copy|memcpy_d2d)/4096MiB$|^hostlink/(h2d|d2h)/(pinned|pageable)/ce/1GiB$'; }

step_nccl_peer() {
  if [ "$NGPU" -lt 2 ]; then note "nccl-peer: needs two or more GPUs (found $NGPU)"; return 0; fi
  local f='^nccl/all_reduce/float/(in_place|out_of_place)/eager/(256MiB|1GiB|4GiB)$' rc=0
  timeout "$(tmo 120)" python3 scripts/dev/peers/peer_torch_nccl.py --sizes-mib 256,1024,4096 --out "$RAW/peer_nccl_torch0.json" >> "$RAW/peer.log" 2>&1 || rc=1
  timeout "$(tmo 180)" build/nodebench run --suite full --family nccl --filter "$f" --max-time 1 --quiet \
    --out-file "$RAW/peer_nccl_nodebench1.json" > "$RAW/peer_nccl_nodebench1.log" 2>&1 || rc=1
  timeout "$(tmo 120)" python3 scripts/dev/peers/peer_torch_nccl.py --sizes-mib 256,1024,4096 --out "$RAW/peer_nccl_torch1.json" >> "$RAW/peer.log" 2>&1 || rc=1
  R+=(--result "$RAW/peer_nccl_nodebench1.json"); P+=(--peer "$RAW/peer_nccl_torch0.json" --peer "$RAW/peer_nccl_torch1.json")
  return $rc
}

step_peak() {
  local rc=0
  timeout "$(tmo 300)" ctest --test-dir build -R "gpu_quick_families_small|gpu_timing" --output-on-failure > "$RAW/ctest-peak.log" 2>&1 || rc=1
  timeout "$(tmo 300)" build/nodebench run --suite quick --gpus 0 --family peak,gemm --out-file "$RAW/peak.json" > "$RAW/peak.log" 2>&1 || rc=1
  [ -f "$RAW/peak.json" ] || return 1
  python3 - "$RAW/peak.json" <<'PY' | tee -a "$OUT/session.log"
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
PY
  keep peak.json
  return $rc
}

step_sweep() {
  local series name rc=0
  for series in ${SWEEP_SERIES:-fp16/nchw tf32/nchw}; do
    name=${series/\//_}
    if [ "$(left)" -lt 90 ]; then note "sweep: no time left for $series"; continue; fi
    timeout $(( $(left) - 30 )) build/nodebench run --suite full --gpus 0 --family conv --filter "^conv/resnet50/$series/" \
      --out-file "$RAW/conv_sweep_$name.json" > "$RAW/conv_sweep_$name.log" 2>&1 || rc=1
    note "conv sweep $series rc=$rc"
    grep -E "cases:|recommended|no recommendation" "$RAW/conv_sweep_$name.log" | tee -a "$OUT/session.log"
    keep "conv_sweep_$name.json"
  done
  return $rc
}

step_validate() {
  local rc=0
  mkdir -p "$RAW/validate"
  timeout "$(tmo 120)" build/nodebench validate --level 2 --out "$RAW/validate" --junit "$RAW/validate-junit.xml" \
    --prometheus "$RAW/validate.prom" > "$RAW/validate.log" 2>&1 || rc=1
  grep -E "^  (ok|FAIL|warn|skip) |VERDICT" "$RAW/validate.log" | tee -a "$OUT/session.log"
  for f in "$RAW"/validate/*.json; do [ -f "$f" ] && mv "$f" "$RAW/validate.json"; done
  rm -rf "$RAW/validate"
  keep validate.json; keep validate-junit.xml
  # The planted failures: no GPU visible (exit 3), and a profile no GPU can meet (exit 1).
  CUDA_VISIBLE_DEVICES='' timeout "$(tmo 60)" build/nodebench validate --level 1 > "$RAW/validate-hidden.log" 2>&1
  note "validate with the GPUs hidden: rc=$? (3 expected)"
  if [ -f tests/data/impossible_thresholds.json ] && [ "$(left)" -gt 60 ]; then
    timeout "$(tmo 90)" build/nodebench validate --level 2 --profile tests/data/impossible_thresholds.json \
      --out "$RAW/vimp" > "$RAW/validate-impossible.log" 2>&1
    note "validate against an impossible profile: rc=$? (1 expected)"
    rm -rf "$RAW/vimp"
  fi
  return $rc
}

step_multigpu() {
  local rc=0
  timeout "$(tmo 300)" ctest --test-dir build -R "nccl|p2p|mpi|Collective|BusFactor|PickClosest|Cluster|CaseRecords" \
    --output-on-failure > "$RAW/ctest-multigpu.log" 2>&1 || rc=1
  grep -E "tests passed|Failed|\*\*\*|Not Run" "$RAW/ctest-multigpu.log" | tee -a "$OUT/session.log"
  if [ "$NGPU" = 1 ]; then
    NODEBENCH_P2P_LOOPBACK=1 timeout "$(tmo 120)" build/nodebench run --suite quick --family p2p \
      --out-file "$RAW/quick_p2p_loopback.json" > "$RAW/quick_p2p_loopback.log" 2>&1 || rc=1
  fi
  timeout "$(tmo 300)" build/nodebench run --suite quick --family p2p,nccl --out-file "$RAW/quick_single.json" \
    > "$RAW/quick_single.log" 2>&1 || rc=1
  if command -v mpirun > /dev/null && grep -q "MPI launch mode built" "$RAW/build.log" 2>/dev/null; then
    timeout "$(tmo 300)" mpirun --allow-run-as-root --oversubscribe -np "$NGPU" -x NCCL_NVLS_ENABLE \
      build/nodebench run --suite quick --family latency,p2p,nccl --out-file "$RAW/quick_mpi.json" \
      > "$RAW/quick_mpi.log" 2>&1 || rc=1
  else
    note "multigpu: no mpirun, or the build has no MPI launch mode: MPI part not run"
  fi
  python3 - "$RAW" <<'PY' | tee -a "$OUT/session.log"
import json, pathlib, sys
for f in sorted(pathlib.Path(sys.argv[1]).glob("quick_*.json")):
    if f.name == "quick.json":
        continue
    d = json.loads(f.read_text())
    print(f.name, d["run_status"], d["summary"])
    p2p = d.get("analysis", {}).get("p2p")
    if p2p:
        print("  p2p gpus", p2p["gpus"], "links", p2p["link_type"], "access", p2p["access"])
        for k, m in (p2p.get("bandwidth_gbps") or {}).items():
            print("  p2p", k, [[round(x, 1) if x else x for x in row] for row in m])
    for k, v in (d.get("analysis", {}).get("nccl_scaling") or {}).items():
        print("  scaling", k, [(p["ngpus"], round(p.get("busbw_gbps") or 0, 1), p.get("efficiency_pct")) for p in v["points"]])
PY
  keep quick_single.json; keep quick_mpi.json
  return $rc
}

# shellcheck source=scripts/dev/device/gpu_session_steps.sh
. scripts/dev/device/gpu_session_steps.sh

# shellcheck source=scripts/dev/device/gpu_session_train.sh
. scripts/dev/device/gpu_session_train.sh

# --- driver -----------------------------------------------------------------------------------
TABLE=()
run_step() {
  local s=$1 t0 rc
  if [ "$(left)" -lt "${NEED[$s]}" ]; then
    TABLE+=("$(printf '%-12s %-8s %5s  %s' "$s" skipped - "needs ${NEED[$s]} s, $(left) s left")")
    note "== $s: skipped, needs ${NEED[$s]} s and $(left) s are left"
    return 0
  fi
  log "$s ($(left) s left)"
  t0=$(date +%s)
  "step_${s//-/_}"; rc=$?
  TABLE+=("$(printf '%-12s %-8s %5d' "$s" "rc=$rc" $(( $(date +%s) - t0 )))")
  return $rc
}

log "GPUs: $NGPU; steps: $STEPS; archs: $ARCHS; budget: $BUDGET_S s"
build_ok=1
if [ ! -x build/nodebench ] || [ "${REBUILD:-1}" = 1 ] || [[ ",$STEPS," == *",build,"* ]]; then
  run_step build || build_ok=0
fi
if [ $build_ok = 0 ] || [ ! -x build/nodebench ]; then
  log "BUILD FAILED"; tail -30 "$RAW/build.log"
else
  for s in ${STEPS//,/ }; do
    [ "$s" = build ] && continue
    run_step "$s"
  done
fi
if [ ${#R[@]} -gt 0 ]; then
  python3 scripts/dev/peers/compare_peer.py "${R[@]}" "${P[@]}" --out "$RAW/peer_ratio.json" | tee -a "$OUT/session.log"
  keep peer_ratio.json
  for f in "$RAW"/peer_*nodebench1.json; do [ -f "$f" ] && keep "$(basename "$f")"; done
fi
log "time used: $(( $(date +%s) - START )) s of $BUDGET_S"
# Everything not kept goes into one archive: $OUT holds at most 8 files.
tar czf "$OUT/raw.tar.gz" -C "$RAW" . 2>/dev/null
{
  echo "== steps"
  printf '%-12s %-8s %5s  %s\n' step status s note
  printf '%s\n' "${TABLE[@]}"
  echo "== $OUT: $(find "$OUT" -maxdepth 1 -type f | wc -l) files"
} | tee -a "$OUT/session.log"
ls -la "$OUT"
[ $build_ok = 1 ]
