#!/usr/bin/env bash
# Tests of scripts/setup.sh (run by scripts/test.sh after setup has run, so everything is here):
#  a) apt-get, apt and pip made to fail (PATH shims that exit 1 and log their call): setup still
#     succeeds, for the build and for the tests, and calls none of them;
#  b) a library made missing (the NODEBENCH_SETUP_HIDE seam hides it from CMake's find_package):
#     setup tries apt-get with the dpkg lock wait, fails, exits 1 and names the library and the
#     package that provides it;
#  c) bad usage exits 2;
#  d) cuDNN and NCCL missing under a cc 6.1 nvidia-smi: the hints pin versions with sm_61 code and hold
#     them (harness/profiles/arch_facts.json); under cc 9.0 they do not.
# Exit status: 0 all passed, 1 a check failed.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nodebench-setup-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
check() {  # description, then a command that must succeed
  local what=$1; shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi
}

real_python=$(command -v python3)
mkdir -p "$tmp/bin"
for c in apt-get apt pip pip3; do
  printf '#!/bin/sh\necho "%s $*" >> "%s/calls"\nexit 1\n' "$c" "$tmp" > "$tmp/bin/$c"
done
# python3 -m pip fails too; every other use of python3 is the real one.
cat > "$tmp/bin/python3" <<SHIM
#!/bin/sh
if [ "\$1" = -m ] && [ "\$2" = pip ]; then echo "python3 \$*" >> "$tmp/calls"; exit 1; fi
exec "$real_python" "\$@"
SHIM
printf '#!/bin/sh\nexec "$@"\n' > "$tmp/bin/sudo"
chmod +x "$tmp/bin"/*
shimmed() { PATH="$tmp/bin:$PATH" PYTHONPATH="$repo/reports${PYTHONPATH:+:$PYTHONPATH}" "$@"; }

# a) everything present, nothing can be installed
: > "$tmp/calls"
shimmed bash "$repo/scripts/setup.sh" --for build > "$tmp/a1.out" 2>&1; rc=$?
check "a) --for build succeeds with apt/pip failing (rc=$rc)" test "$rc" = 0
check "a) --for build reports the toolkit it found" grep -q "found CUDAToolkit" "$tmp/a1.out"
check "a) --for build reports RE2 (a required library)" grep -qE "found RE2 " "$tmp/a1.out"
shimmed bash "$repo/scripts/setup.sh" --for tests > "$tmp/a2.out" 2>&1; rc=$?
check "a) --for tests succeeds with apt/pip failing (rc=$rc)" test "$rc" = 0
check "a) no apt-get or pip call was made" test ! -s "$tmp/calls"
[ "$fails" = 0 ] || { cat "$tmp/a1.out" "$tmp/a2.out" "$tmp/calls"; }

# b) nlohmann_json missing, nothing can be installed
: > "$tmp/calls"
NODEBENCH_SETUP_HIDE=nlohmann_json shimmed bash "$repo/scripts/setup.sh" --for build > "$tmp/b.out" 2> "$tmp/b.err"; rc=$?
check "b) a missing library fails with exit 1 (rc=$rc)" test "$rc" = 1
check "b) the message names nlohmann_json and its package" \
  grep -q "nlohmann_json.*nlohmann-json3-dev" "$tmp/b.err"
check "b) the other libraries are not called missing" bash -c "! grep -qE '^  - (benchmark|GTest|CLI11|CUDAToolkit|cmake|cxx)' '$tmp/b.err'"
check "b) apt-get install was tried with the dpkg lock wait" \
  grep -qE "^apt-get .*DPkg::Lock::Timeout=300 .*install .*nlohmann-json3-dev" "$tmp/calls"
[ "$fails" = 0 ] || { cat "$tmp/b.out" "$tmp/b.err" "$tmp/calls"; }

# d) cuDNN and NCCL missing on a P40 (nvidia-smi answers 6.1): the hints name the versions that
#    still have sm_61 code, the cuDNN headers package too, held with apt-mark; on a cc 9.0 machine
#    they do not.
pins=$("$real_python" -c 'import json,sys; p=json.load(open(sys.argv[1]))["pins"]; print(p["cudnn_debs_cuda12"]); print(p["nccl_wheel"])' "$repo/harness/profiles/arch_facts.json")
cudnn_debs=$(sed -n 1p <<<"$pins"); nccl_wheel=$(sed -n 2p <<<"$pins")
for cc in 6.1 9.0; do
  printf '#!/bin/sh\necho "%s"\n' "$cc" > "$tmp/bin/nvidia-smi"; chmod +x "$tmp/bin/nvidia-smi"
  NODEBENCH_SETUP_HIDE=cuDNN,NCCL shimmed bash "$repo/scripts/setup.sh" --for build --no-install > "$tmp/d$cc.out" 2>&1
done
rm -f "$tmp/bin/nvidia-smi"
check "d) cc 6.1: the cuDNN hint pins the runtime, dev and headers packages" grep -qF "apt-get install $cudnn_debs" "$tmp/d6.1.out"
check "d) cc 6.1: ... and holds them" grep -qF "apt-mark hold libcudnn9-cuda-12 libcudnn9-dev-cuda-12 libcudnn9-headers-cuda-12" "$tmp/d6.1.out"
check "d) cc 6.1: the pins include the headers package" grep -qF "libcudnn9-headers-cuda-12=" <<<"$cudnn_debs"
check "d) cc 6.1: the NCCL hint names an NCCL built with CUDA 12, held" grep -qE "NCCL not found.*$nccl_wheel" "$tmp/d6.1.out"
check "d) cc 6.1: no unpinned cudnn9-cuda-XX hint" bash -c "! grep -q 'cudnn9-cuda-XX' '$tmp/d6.1.out'"
check "d) cc 9.0: the plain hint, no pin" bash -c "grep -q 'cudnn9-cuda-XX' '$tmp/d9.0.out' && ! grep -q 'apt-mark hold' '$tmp/d9.0.out'"
[ "$fails" = 0 ] || { cat "$tmp/d6.1.out" "$tmp/d9.0.out"; }

# c) bad usage
bash "$repo/scripts/setup.sh" --for nothing > /dev/null 2> "$tmp/c.err"; rc=$?
check "c) --for nothing exits 2 (rc=$rc)" test "$rc" = 2
check "c) and says what --for takes" grep -q "build or tests" "$tmp/c.err"

if [ "$fails" = 0 ]; then echo "setup_test: all passed"; exit 0; fi
echo "setup_test: $fails check(s) failed"; exit 1
