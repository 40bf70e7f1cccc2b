#!/usr/bin/env bash
# Checks of the scripts themselves (run by scripts/test.sh; no GPU): every script in scripts/ and
# scripts/dev/'s folders parses (bash -n) and, where shellcheck is installed, has no warning;
# scripts/dev/ holds folders only (each with its README.md), no loose script; the
# GPU-machine session script rejects an unknown step (exit 2), lists its steps in --help, and,
# given a time budget too short for its steps, skips them, prints its table and leaves at most
# 8 files in OUT; scripts/dev/facts/read_wheel_archs.py reads a wheel at hand with a stand-in for the
# fatbin reader and compares it with harness/profiles/arch_facts.json.
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
for f in scripts/*.sh scripts/dev/*/*.sh tests/scripts/*.sh; do
  check "bash -n $f" bash -n "$f"
  if command -v shellcheck > /dev/null; then
    check "shellcheck -S warning $f" shellcheck -S warning "$f"
  fi
done

# scripts/dev/: a folder per purpose (peers, device, costs, checks, facts), each saying in its
# README.md what its scripts do; nothing loose at the top but the index README.md.
loose=$(find scripts/dev -maxdepth 1 -type f ! -name README.md)
check "scripts/dev has no loose file at its top (${loose:-none})" test -z "$loose"
for d in scripts/dev/*/; do
  check "${d}README.md is there" test -s "${d}README.md"
done

# scripts/dev/facts/read_wheel_archs.py on a wheel at hand (no download) and a stand-in for
# `nodebench fatbin --json`: it agrees with arch_facts.json's row, and says which row differs (exit
# 1) when the wheel's lowest SASS is not the row's.
mkdir -p "$tmp/whl"
"$(command -v python3)" - "$tmp/whl" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1] + "/nvidia_nccl_cu12-2.27.7-py3-none-manylinux2014_x86_64.whl", "w") as z:
    z.writestr("nvidia/nccl/lib/libnccl.so.2", b"not really a library")
    z.writestr("nvidia/nccl/include/nccl.h", b"")
PY
for lowest in 50 60; do
  cat > "$tmp/whl/fake_nb_$lowest" <<SH
#!/bin/sh
[ "\$1" = fatbin ] && [ "\$2" = --json ] || exit 2
shift 2
for f in "\$@"; do
  echo "{\"file\": \"\$f\", \"sass\": [\"sm_$lowest\", \"sm_60\", \"sm_61\", \"sm_70\", \"sm_90\"], \"ptx\": []}"
done
SH
  chmod +x "$tmp/whl/fake_nb_$lowest"
  python3 scripts/dev/facts/read_wheel_archs.py --nodebench "$tmp/whl/fake_nb_$lowest" --download-dir "$tmp/whl" \
    --wheel-files "$tmp/whl/nvidia_nccl_cu12-2.27.7-py3-none-manylinux2014_x86_64.whl" --out "$tmp/whl/out$lowest" \
    > "$tmp/whl/out$lowest.txt" 2>&1
  echo $? > "$tmp/whl/rc$lowest"
done
check "read_wheel_archs: the row's lowest SASS read back agrees (rc=$(cat "$tmp/whl/rc50"))" \
  bash -c "[ \$(cat '$tmp/whl/rc50') = 0 ] && grep -q 'agrees with arch_facts.json' '$tmp/whl/out50.txt'"
check "read_wheel_archs: only libnccl.so.2 was read, and written out" \
  bash -c "grep -q 'libnccl.so.2 .*SASS sm_50' '$tmp/whl/out50/wheel_archs.txt' && ! grep -q nccl.h '$tmp/whl/out50.txt'"
check "read_wheel_archs: a wheel starting at sm_60 differs from the row (rc=$(cat "$tmp/whl/rc60"))" \
  bash -c "[ \$(cat '$tmp/whl/rc60') = 1 ] && grep -q 'DIFFERS: lowest SASS: arch_facts.json says sm_50, the wheel sm_60' '$tmp/whl/out60.txt'"
check "read_wheel_archs: the rows not read from a wheel are listed as such" grep -q "not re-read: pytorch torch 2.14" "$tmp/whl/out50.txt"

gs=scripts/dev/device/gpu_session.sh
bash "$gs" nosuch > /dev/null 2> "$tmp/err"; rc=$?
check "gpu_session.sh with an unknown step exits 2 (rc=$rc)" test "$rc" = 2
check "and names the step" grep -q "unknown step 'nosuch'" "$tmp/err"
bash "$gs" --help > "$tmp/help"; rc=$?
check "gpu_session.sh --help exits 0 (rc=$rc)" test "$rc" = 0
for s in build gputests quick gemm-peer conv-peer copies-peer nccl-peer peak sweep validate multigpu peak-indep peak-wgmma \
         train-peer train-tests train-sweep train-fused train-fused-sweep input-peer; do
  check "--help describes step $s" grep -qE "^  $s " "$tmp/help"
  check "step $s has a function" grep -q "^step_${s//-/_}() {" "$gs" scripts/dev/device/gpu_session_steps.sh scripts/dev/device/gpu_session_train.sh
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
fs=scripts/dev/device/gpu_full_session.sh
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
