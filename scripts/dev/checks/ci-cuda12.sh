#!/usr/bin/env bash
# CI check that nodebench builds for the Tesla P40 (sm_61) with CUDA 12, which CUDA 13 cannot
# do. Needs no GPU. Steps:
#   1. the private CUDA 12 toolkit (scripts/build-cuda12.sh --print-toolkit; downloads are cached
#      under ~/.cache/nodebench-cuda12, so only the first run on a machine fetches them);
#   2. the project's default architecture choice (cmake/CudaArchitectures.cmake) under that
#      nvcc must include sm_61 and sm_70 (configure only);
#   3. every target, in build-cuda12/, for 61;70;75;80;86;89;90 (SASS each, PTX for 90);
#   4. scripts/dev/checks/check_sm61.py: sm_61 SASS for every kernel, nothing sm_61 lacks in it, every
#      requested architecture present, and cuBLAS/cuDNN/NCCL as pinned carry sm_60/61 code;
#   4b. scripts/dev/checks/check_peak_sass.py: in every architecture's SASS, the peak kernels' loops issue
#      the instructions their FLOP counts assume (no dead-code halves, loop overhead under 5%);
#   5. the unit and CLI tests (ctest -LE gpu) of that CUDA 12 build.
# Environment: NB_CUDA12_BUILD_DIR (default build-cuda12), NB_CUDA12_ARCHS (default all),
#   NB_CUDA12_TOOLKIT (pypi, the default here, or auto/system: see build-cuda12.sh),
#   NB_CUDA12_SKIP_TESTS=1 (skip step 5), NB_CUDA12_CACHE (download cache).
# Exit status: 0 all passed; 1 a step failed (the last lines say which).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$here" || exit 1
build_dir=${NB_CUDA12_BUILD_DIR:-$here/build-cuda12}
archs=${NB_CUDA12_ARCHS:-all}
toolkit_mode=${NB_CUDA12_TOOLKIT:-pypi}
jobs=$(nproc 2>/dev/null || echo 2)
t_start=$SECONDS
timings=()

step_t0=0
begin() { echo "== ci-cuda12: $1"; step_t0=$SECONDS; step_name=$1; }
end() { timings+=("$(printf '%5d s  %s' $((SECONDS - step_t0)) "$step_name")"); }
fail() {
  end
  echo "ci-cuda12: FAILED at step '$step_name': $1"
  printf '%s\n' "${timings[@]}"
  echo "ci-cuda12: total $((SECONDS - t_start)) s"
  exit 1
}

begin "CUDA 12 toolkit ($toolkit_mode)"
toolkit=$(bash scripts/build-cuda12.sh --toolkit "$toolkit_mode" --print-toolkit) ||
  fail "no CUDA 12 toolkit (see the build-cuda12 lines above)"
echo "ci-cuda12: toolkit $toolkit: $("$toolkit/bin/nvcc" --version | grep -o 'release [0-9.]*, V[0-9.]*')"
end

begin "default architecture choice under CUDA 12"
probe="$build_dir-arch-probe"
rm -rf "$probe"
if bash scripts/build-cuda12.sh --toolkit "$toolkit_mode" --archs default --build-dir "$probe" --no-tests \
     --configure-only > "$probe.log" 2>&1; then
  chosen=$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$probe/CMakeCache.txt")
  echo "ci-cuda12: default CMAKE_CUDA_ARCHITECTURES with this nvcc: $chosen"
  for a in 61 70; do
    case ";$chosen;" in *";$a-real;"*|*";$a;"*) ;; *) fail "the default architectures ($chosen) lack sm_$a" ;; esac
  done
else
  tail -30 "$probe.log"
  fail "configure with the project's default architectures failed"
fi
rm -rf "$probe" "$probe.log"
end

begin "build every target for $archs"
bash scripts/build-cuda12.sh --toolkit "$toolkit_mode" --archs "$archs" --build-dir "$build_dir" -j "$jobs" ||
  fail "the CUDA 12 build failed (see above)"
end

begin "sm_61 machine-code check"
python3 scripts/dev/checks/check_sm61.py "$build_dir" --cuobjdump "$toolkit/bin/cuobjdump" --libs "$toolkit/lib64" ||
  fail "scripts/dev/checks/check_sm61.py found a problem (FAIL lines above)"
end

begin "peak kernels: the machine code does the work the FLOP counts assume"
python3 scripts/dev/checks/check_peak_sass.py "$build_dir/nodebench" --cuobjdump "$toolkit/bin/cuobjdump" ||
  fail "scripts/dev/checks/check_peak_sass.py found a peak kernel whose loop does not match its count (FAIL lines above)"
end

if [ "${NB_CUDA12_SKIP_TESTS:-0}" != 1 ]; then
  begin "unit and CLI tests of the CUDA 12 build"
  LD_LIBRARY_PATH="$toolkit/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    ctest --test-dir "$build_dir" -LE gpu --output-on-failure ||
    fail "tests of the CUDA 12 build failed"
  end
fi

echo "ci-cuda12: passed"
printf '%s\n' "${timings[@]}"
echo "ci-cuda12: total $((SECONDS - t_start)) s"
