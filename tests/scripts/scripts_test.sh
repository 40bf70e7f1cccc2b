#!/usr/bin/env bash
# Checks of the scripts themselves (run by scripts/test.sh; no GPU): every script in scripts/ and
# scripts/dev/ parses (bash -n) and, where shellcheck is installed, has no warning; the
# GPU-machine session script rejects an unknown step (exit 2), lists its steps in --help, and,
# given a time budget too short for its steps, skips them, prints its table and leaves at most
# 8 files in OUT.
# Exit status: 0 all passed, 1 a check failed.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nodebench-scripts-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
check() {
  local what=$1; shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi
}
cd "$repo" || exit 1
for f in scripts/*.sh scripts/dev/*.sh tests/scripts/*.sh; do
  check "bash -n $f" bash -n "$f"
  if command -v shellcheck > /dev/null; then
    check "shellcheck -S warning $f" shellcheck -S warning "$f"
  fi
done

gs=scripts/dev/gpu_session.sh
bash "$gs" nosuch > /dev/null 2> "$tmp/err"; rc=$?
check "gpu_session.sh with an unknown step exits 2 (rc=$rc)" test "$rc" = 2
check "and names the step" grep -q "unknown step 'nosuch'" "$tmp/err"
bash "$gs" --help > "$tmp/help"; rc=$?
check "gpu_session.sh --help exits 0 (rc=$rc)" test "$rc" = 0
for s in build gputests quick gemm-peer conv-peer copies-peer nccl-peer peak sweep validate multigpu peak-indep peak-wgmma \
         train-peer train-tests train-sweep train-fused train-fused-sweep input-peer; do
  check "--help describes step $s" grep -qE "^  $s " "$tmp/help"
  check "step $s has a function" grep -q "^step_${s//-/_}() {" "$gs" scripts/dev/gpu_session_train.sh
done

# A budget too short for the steps: nothing runs on a GPU, every step is skipped and says why.
if [ -x build/nodebench ]; then
  mkdir -p "$tmp/out"
  REBUILD=0 BUDGET_S=50 OUT="$tmp/out" RAW="$tmp/raw" bash "$gs" validate,mpi > "$tmp/session.out" 2>&1; rc=$?
  check "a session with no time for its steps exits 0 (rc=$rc)" test "$rc" = 0
  check "its table lists validate as skipped" grep -qE "^validate +skipped" "$tmp/session.out"
  check "and mpi as the multigpu step, skipped" grep -qE "^multigpu +skipped" "$tmp/session.out"
  n=$(find "$tmp/out" -maxdepth 1 -type f | wc -l)
  check "OUT holds at most 8 files ($n), session.log and raw.tar.gz among them" \
    bash -c "[ $n -le 8 ] && [ -f '$tmp/out/session.log' ] && tar -tzf '$tmp/out/raw.tar.gz' > /dev/null"
  [ "$fails" = 0 ] || cat "$tmp/session.out"
else
  echo "skip the session dry run: build/nodebench not built"
fi

# gpu_full_session.sh with no time for a step: runs nothing, says the build is left for the next
# run, exits 0, and moves nothing but its log to OUT; a second run counts itself as the second.
fs=scripts/dev/gpu_full_session.sh
mkdir -p "$tmp/fout"
for i in 1 2; do
  NB_SESSION_DIR="$tmp/fs" BUDGET_S=10 OUT="$tmp/fout" bash "$fs" > "$tmp/fs$i.out" 2>&1; rc=$?
  check "gpu_full_session.sh run $i without time exits 0 (rc=$rc)" test "$rc" = 0
done
check "it leaves the build for the next run" grep -q "build: left for the next run" "$tmp/fs1.out"
check "the second run is run 2" grep -q "run 2," "$tmp/fs2.out"
check "OUT holds only the runs' logs" test "$(find "$tmp/fout" -type f | wc -l)" = 2
check "nothing was built" test ! -e "$tmp/fs/done.build"
# SESSION_STEPS picks the steps: the first one named is the one left for the next run.
NB_SESSION_DIR="$tmp/fs2" BUDGET_S=10 OUT="$tmp/fout2" SESSION_STEPS="peer-tf32-b256 build" bash "$fs" > "$tmp/fs3.out" 2>&1
check "SESSION_STEPS: its first step is the one left" grep -q "peer-tf32-b256: left for the next run (needs 270 s)" "$tmp/fs3.out"
check "SESSION_STEPS: the steps not named are not left" bash -c "! grep -q 'calibrate' '$tmp/fs3.out'"

if [ "$fails" = 0 ]; then echo "scripts_test: all passed"; exit 0; fi
echo "scripts_test: $fails check(s) failed"; exit 1
