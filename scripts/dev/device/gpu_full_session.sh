#!/usr/bin/env bash
# The full suite on one GPU machine with its estimate of time left checked (issue 24), the GPU
# tests on a fresh node and the quick suite before and after the redesign of issue 22. One
# machine, one command run again and again (a command may run 10 minutes at most): each run does
# the steps left, in order, while they fit in BUDGET_S (default 560), and says what is left; the
# full suite runs on in its own session between runs. Work files are in /tmp/nbs; each run moves
# at most 7 result files to $OUT (OUT, default ./gpu-out) besides its log, and prints a table last.
#
# Steps: build (Release, CUDA_ARCHS, default 90, every target); calibrate (the cases whose cost
# kinds the committed runs lack: CALIBRATE, a filter; the small batch of each series first so that
# the larger ones' algorithm search is seeded); fit (scripts/dev/costs/fit_costs.py over the committed
# runs and the calibration run, built in); full (`run --suite full` started in its own session;
# not when the calibration run's training-step cases failed); wait (for the full suite); report
# (its file, log and estimate-against-actual table); gputests (ctest -L gpu, jsonschema hidden, as
# on a node without it); quick-before, quick-after, quick-before2 (the quick suite from commit
# 9f879c2 in .before/ -- scripts/dev/device/build_before.sh --, from this tree, from 9f879c2 again);
# quick-report (the quick suite's estimate table; the logs packed in raw.tar.gz).
# usage: scripts/dev/device/gpu_full_session.sh            (again until it prints "all steps done")
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.." || exit 1
S=${NB_SESSION_DIR:-/tmp/nbs}
OUT=${OUT:-$PWD/gpu-out}
BOX=$S/outbox
mkdir -p "$S" "$OUT" "$BOX"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
[ -d .deps/jpeg ] && export TURBOJPEG_ROOT=$PWD/.deps/jpeg
CALIBRATE=${CALIBRATE:-'^(train/resnet50/fp32/nchw/b(8|64|256)|train/resnet50/fp32/nhwc/b(8|64)|train/resnet50/tf32/nhwc/b(8|256)|train/resnet50/fp16/nchw/b(8|256)|conv/resnet50/tf32/nchw/b32|conv/resnet50/fp16/nhwc/b(32|256))$'}
# The committed runs the fit starts from (fit_costs pools their points with the calibration run's);
# FIT_RUNS (a space list) names others, FIT_ARGS adds fit_costs.py options (--renew PREFIX: that
# family's kinds from the calibration run alone, for a family whose cases changed since those runs).
OLD_RUNS=(results/h200/2026-12-02-full-suite/full.json.gz results/h200/2026-12-02-refactor-quick/quick-after.json.gz)
[ -n "${FIT_RUNS:-}" ] && read -r -a OLD_RUNS <<< "$FIT_RUNS"
read -r -a FIT_ARGS <<< "${FIT_ARGS:-}"
STEPS=(build calibrate fit full wait report gputests quick-before quick-after quick-before2 quick-report)
# SESSION_STEPS (a space list) runs other steps of these, in its order; the peer-* steps (not in the
# default list) run scripts/dev/device/gpu_session.sh train-fused for one case each (TRAIN_FUSED_TESTS=0):
# the fused step against every PyTorch mode, alternated; quick-after2 and quick-after3 run the quick
# suite from this tree again, each in a new process; gtest runs build/tests/nodebench_gpu_tests
# with GTEST_FILTER (build it: BUILD_TARGETS); fit-fresh refits from this session's runs of the new
# code and rebuilds (see step_fit_fresh), after which quick-fit1..3 and full2 wait2 report2 run the
# quick and the full suite again with the new fit.
[ -n "${SESSION_STEPS:-}" ] && read -r -a STEPS <<< "$SESSION_STEPS"
declare -A NEED=([build]=150 [calibrate]=200 [fit]=60 [full]=30 [wait]=60 [report]=20 [gputests]=420
                 [quick-before]=100 [quick-after]=100 [quick-after2]=100 [quick-after3]=100 [quick-before2]=100
                 [quick-report]=20 [gtest]=60 [fit-fresh]=90 [full2]=30 [wait2]=60 [report2]=20
                 [quick-fit1]=100 [quick-fit2]=100 [quick-fit3]=100
                 [peer-fp16-b64]=200 [peer-fp16-b256]=200 [peer-fp16-b1024]=300 [peer-tf32-b256]=270)
BUDGET_S=${BUDGET_S:-560}
T0=$(date +%s)
RUN=$(( $(cat "$S/runs" 2>/dev/null || echo 0) + 1 )); echo $RUN > "$S/runs"
LOG=$S/session-$RUN.log
elapsed() { echo $(( $(date +%s) - T0 )); }
tmo() { local l=$(( BUDGET_S - $(elapsed) - 5 )); [ "$l" -lt "$1" ] && echo $(( l > 1 ? l : 1 )) || echo "$1"; }  # min(N, time left)
log() { echo "== [run $RUN, $(elapsed) s] $*" | tee -a "$LOG"; }
done_step() { [ -f "$S/done.$1" ]; }

step_build() {  # BUILD_TARGETS: a space list of targets (default: every target)
  local targets=()
  [ -n "${BUILD_TARGETS:-}" ] && read -r -a targets <<< "$BUILD_TARGETS" && targets=(--target "${targets[@]}")
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-90}" > "$S/build.log" 2>&1 &&
    cmake --build build -j "$(nproc)" "${targets[@]}" >> "$S/build.log" 2>&1 || { grep -E "error" "$S/build.log" | head; return 1; }
  grep -E "nodebench: (MPI|NCCL|cuDNN|RE2|libjpeg|nvJPEG)" "$S/build.log" | tee -a "$LOG"
}
step_calibrate() {
  timeout "$(tmo 300)" build/nodebench run --suite full --filter "$CALIBRATE" --out-file "$S/calibrate.json" > "$S/calibrate.log" 2>&1
  tail -n 3 "$S/calibrate.log" | tee -a "$LOG"
  cp "$S/calibrate.json" "$BOX/"
}
step_fit() {
  python3 scripts/dev/costs/fit_costs.py --probe build/tests/nodebench_cost_probe "${FIT_ARGS[@]}" "${OLD_RUNS[@]}" \
    "$S/calibrate.json" --out harness/profiles/costs.json > "$S/fit.log" 2>&1 || { cat "$S/fit.log"; return 1; }
  cp harness/profiles/costs.json "$BOX/costs.json"
  cp "$S/fit.log" "$BOX/fit.txt"
  cmake --build build -j "$(nproc)" --target nodebench >> "$S/build.log" 2>&1
}
full_running() { [ -f "$S/$1.pid" ] && kill -0 "$(cat "$S/$1.pid")" 2>/dev/null; }  # full_running NAME
full_start() {  # full_start NAME: `run --suite full` into $S/NAME.json, started in its own session
  setsid nohup bash -c "build/nodebench run --suite full --out-file $S/$1.json > $S/$1.log 2>&1; echo \$? > $S/$1.rc" \
    > /dev/null 2>&1 < /dev/null &
  echo $! > "$S/$1.pid"
  sleep 10
  head -n 3 "$S/$1.log" | cut -c1-200 | tee -a "$LOG"
}
full_wait() {  # full_wait NAME: waits while the budget allows; not done until that run has ended
  while full_running "$1" && [ "$(elapsed)" -lt "$BUDGET_S" ]; do sleep 5; done
  tail -n 1 "$S/$1.log" 2>/dev/null | cut -c1-160 | tee -a "$LOG"
  ! full_running "$1"
}
full_report() {  # full_report NAME: its file, log and estimate-against-actual table to the outbox
  log "$1 rc $(cat "$S/$1.rc" 2>/dev/null)"
  grep -E "cases:|recommended|PAYS|pays" "$S/$1.log" | cut -c1-220 | tail -20 | tee -a "$LOG"
  python3 scripts/dev/costs/estimate_table.py "$S/$1.json" --plot "$BOX/estimate_$1.png" --json "$S/estimate_$1.json" \
    | tee "$BOX/estimate_$1.txt" | tee -a "$LOG"
  gzip -c "$S/$1.json" > "$BOX/$1.json.gz"
  gzip -c "$S/$1.log" > "$BOX/$1.log.gz"
}
step_full() {  # after the calibration run, when there was one, only if its training-step cases ran
  if [ ! -f "$S/calibrate.json" ] || python3 - "$S/calibrate.json" <<'PY'; then
import json, sys
bad = [r["id"] for r in json.load(open(sys.argv[1]))["records"] if r["family"] == "train" and r["status"] in ("failed", "wrong")]
print("calibration: training-step cases failed or wrong: " + ", ".join(bad) if bad else "calibration: training-step cases ok")
sys.exit(1 if bad else 0)
PY
    full_start full
  else
    touch "$S/full.skipped"
  fi
}
step_wait() { full_wait full; }
step_report() {
  [ -f "$S/full.skipped" ] && return 0
  full_report full
}
# A second full run (after fit-fresh: printed with the new fit), in the same way.
step_full2() { full_start full2; }
step_wait2() { full_wait full2; }
step_report2() { full_report full2; }
# The fit again with the new code's runs of this session (FRESH, a space list of files in $S;
# default the full run and the first two quick runs) for the kinds FIT_ARGS renews (--renew
# PREFIX), over the committed runs (FIT_RUNS); nodebench rebuilt with it.
step_fit_fresh() {
  local fresh=() f
  for f in ${FRESH:-full.json quick-after.json quick-after2.json}; do fresh+=(--fresh "$S/$f"); done
  python3 scripts/dev/costs/fit_costs.py --probe build/tests/nodebench_cost_probe "${FIT_ARGS[@]}" "${OLD_RUNS[@]}" \
    "${fresh[@]}" --out harness/profiles/costs.json > "$S/fit.log" 2>&1 || { cat "$S/fit.log"; return 1; }
  cp harness/profiles/costs.json "$BOX/costs.json"
  cp "$S/fit.log" "$BOX/fit.txt"
  cmake --build build -j "$(nproc)" --target nodebench >> "$S/build.log" 2>&1
}
step_gputests() {
  PYTHONPATH="$PWD/tests/data/no_jsonschema" timeout "$(tmo 450)" ctest --test-dir build -L gpu --output-on-failure > "$S/ctest-gpu.log" 2>&1
  local rc=$?
  grep -E "tests passed|Failed|\*\*\*|Total Test" "$S/ctest-gpu.log" | tail -12 | tee -a "$LOG"
  cp "$S/ctest-gpu.log" "$BOX/"
  return $rc
}
quick() {  # quick NAME: the quick suite from this tree (after) or from 9f879c2 (before*)
  local name=$1
  if [[ "$name" == after* ]]; then
    timeout "$(tmo 150)" build/nodebench run --suite quick --out-file "$S/quick-$name.json" > "$S/quick-$name.log" 2>&1
  else
    LD_LIBRARY_PATH="$PWD/.before${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout "$(tmo 150)" .before/nodebench-9f879c2 run \
      --suite quick --out-file "$S/quick-$name.json" > "$S/quick-$name.log" 2>&1
  fi
  local rc=$?
  grep -E "cases:" "$S/quick-$name.log" | tee -a "$LOG"
  gzip -c "$S/quick-$name.json" > "$BOX/quick-$name.json.gz"
  return $rc
}
step_quick_before() { quick before; }
step_quick_after() { quick after; }
step_quick_after2() { quick after2; }
step_quick_after3() { quick after3; }
step_quick_before2() { quick before2; }
step_quick_fit1() { quick after-fit1; }
step_quick_fit2() { quick after-fit2; }
step_quick_fit3() { quick after-fit3; }
step_quick_report() {  # each quick run of this tree: its estimate table
  local f n
  for f in "$S"/quick-after*.json; do
    [ -f "$f" ] || continue
    n=$(basename "$f" .json); n=${n#quick-}
    python3 scripts/dev/costs/estimate_table.py "$f" | tee "$BOX/estimate_quick${n#after}.txt" | tee -a "$LOG"
  done
}
step_gtest() {
  timeout "$(tmo 120)" build/tests/nodebench_gpu_tests --gtest_filter="${GTEST_FILTER:-*}" > "$S/gtest.log" 2>&1
  local rc=$?
  grep -E "^\[  (PASSED|FAILED) |^\[==========\]|OK \]|FAILED \]" "$S/gtest.log" | tail -8 | tee -a "$LOG"
  return $rc
}

peer() {  # peer SPEC TAG: gpu_session.sh train-fused for TRAIN_FUSED_CASES=SPEC in what is left of the budget
  local spec=$1 tag=$2 o=$S/peer_$2 r
  mkdir -p "$o"
  OUT=$o RAW=$S/raw_peer_$tag REBUILD=0 BUDGET_S=$(( BUDGET_S - $(elapsed) - 10 )) TRAIN_FUSED_TESTS=0 \
    TRAIN_FUSED_CASES=$spec TRAIN_FUSED_NEED=60 bash scripts/dev/device/gpu_session.sh train-fused > "$S/peer_$tag.log" 2>&1
  r=$?
  tail -n 8 "$o/session.log" 2>/dev/null | cut -c1-200 | tee -a "$LOG"
  [ -f "$o/session.log" ] && cp "$o/session.log" "$BOX/peer_${tag}_session.log"
  [ -f "$o/train_fused_ratio.json" ] && cp "$o/train_fused_ratio.json" "$BOX/peer_${tag}_ratio.json"
  (cd "$S/raw_peer_$tag" 2>/dev/null && tar czf "$BOX/peer_${tag}_raw.tar.gz" --exclude='*.pt' . 2>/dev/null)
  return $r
}
step_peer_fp16_b64() { peer fp16/nhwc:64 fp16_b64; }
step_peer_fp16_b256() { peer fp16/nhwc:256 fp16_b256; }
step_peer_fp16_b1024() { peer fp16/nhwc:1024 fp16_b1024; }
step_peer_tf32_b256() { peer tf32/nchw+nhwc:256 tf32_b256; }

rc=0
for s in "${STEPS[@]}"; do
  done_step "$s" && continue
  if [ $(( $(elapsed) + ${NEED[$s]} )) -gt "$BUDGET_S" ]; then log "$s: left for the next run (needs ${NEED[$s]} s)"; break; fi
  log "$s"
  if "step_${s//-/_}"; then touch "$S/done.$s"
  elif [ "$s" = wait ] || [ "$s" = wait2 ]; then log "the full suite still runs"; break
  else log "$s failed"; rc=1; touch "$S/done.$s"; fi
done
# Results to $OUT: at most 7 files a run (the rest stay for the next), and this run's log.
n=0
for f in "$BOX"/*; do
  [ -e "$f" ] || continue
  [ $n -ge 7 ] && break
  mv "$f" "$OUT/"; n=$((n + 1))
done
left=""
for s in "${STEPS[@]}"; do done_step "$s" || left="$left $s"; done
if [ -z "$left" ] && [ -z "$(ls -A "$BOX")" ]; then
  (cd "$S" && tar czf "$OUT/raw.tar.gz" --exclude=outbox --exclude='*.json' --exclude='*.gz' --exclude='*.png' . 2>/dev/null)
  log "all steps done"
else
  log "left for the next run:${left:- (files in the outbox)}"
fi
cp "$LOG" "$OUT/"
ls -la "$OUT" | tail -n +2
exit $rc
