#!/usr/bin/env bash
# Makes sure this machine can build (and, with --for tests, test) nodebench. It looks for what
# the build needs the way the build will look for it -- commands on PATH with their versions,
# and the libraries through CMake's own find_package in a small probe project -- and installs
# only what is truly missing (Debian packages with apt-get, CMake/Ninja from PyPI when apt
# cannot). When nothing can be installed (a GPU node without network), it succeeds if everything
# is there, and otherwise names exactly what is missing and how to get it. Safe to run again.
#
# usage: scripts/setup.sh [--for build|tests] [--no-install]
#   --for build   (default) what `scripts/build.sh` needs: cmake >= 3.25, a C++20 compiler, the
#                 CUDA toolkit (nvcc, cuBLAS), Google Benchmark, GoogleTest, nlohmann_json >= 3.10,
#                 CLI11, zlib, RE2, nvml.h, a Python 3 interpreter (the build's tests use it); reports the optional
#                 cuDNN, NCCL, MPI, libjpeg-turbo
#                 (the input family's CPU cases) and Ninja. Needs no Python package.
#   --for tests   the above, plus the Python side of the tests: python3 with pytest, jsonschema,
#                 scipy and this tree's reports package (installed editable with pip if missing).
#   --no-install  only check: report what is missing, install nothing.
# Environment: NODEBENCH_SETUP_HIDE="name,name" hides find_package names (and cuDNN, NCCL) from the
#   probe (a test seam: tests/setup_test.sh uses it to make a library missing).
# cuDNN and NCCL hints: for a GPU below compute capability 7.5 (read with nvidia-smi; unknown
#   without it) they name the versions that still have its code, pinned and held (apt-mark hold),
#   from harness/profiles/arch_facts.json.
# Exit status: 0 everything required is present; 1 something required is missing (listed);
#   2 bad usage.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prog=setup
target=build
install=1
while [ $# -gt 0 ]; do
  case "$1" in
    --for) [ $# -ge 2 ] || { echo "$prog: --for needs build or tests" >&2; exit 2; }; target=$2; shift 2 ;;
    --for=*) target=${1#*=}; shift ;;
    --no-install) install=0; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "$prog: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
case "$target" in build|tests) ;; *) echo "$prog: --for must be build or tests, not '$target'" >&2; exit 2 ;; esac

log() { echo "$prog: $*"; }
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

# ---------------------------------------------------------------------------------------------
# What each capability is called for the user, and where it comes from.
declare -A DEB=(
  [cmake]=cmake [ninja]=ninja-build [cxx]=g++ [benchmark]=libbenchmark-dev [GTest]=libgtest-dev
  [nlohmann_json]=nlohmann-json3-dev [CLI11]=libcli11-dev [MPI]="libopenmpi-dev openmpi-bin" [RE2]=libre2-dev
  [ZLIB]=zlib1g-dev
  [JPEG]="libturbojpeg0-dev libjpeg62-turbo-dev"
  [python3]="python3 python3-pip" [Python3]=python3)
declare -A PIP=([cmake]="cmake>=3.25" [ninja]=ninja)
declare -A HOWTO=(
  [cmake]="CMake >= 3.25: apt-get install cmake, or python3 -m pip install 'cmake>=3.25'"
  [cxx]="a C++20 compiler (g++ >= 10): apt-get install g++"
  [ninja]="a build tool: apt-get install ninja-build (or make), or python3 -m pip install ninja"
  [CUDAToolkit]="the CUDA toolkit 12.x or 13.x (nvcc, cuBLAS) from NVIDIA: https://developer.nvidia.com/cuda-downloads; put its bin/ on PATH or set CUDACXX"
  [benchmark]="Google Benchmark: apt-get install libbenchmark-dev (or build it and set CMAKE_PREFIX_PATH)"
  [GTest]="GoogleTest: apt-get install libgtest-dev (or set CMAKE_PREFIX_PATH)"
  [nlohmann_json]="nlohmann_json >= 3.10: apt-get install nlohmann-json3-dev (or set CMAKE_PREFIX_PATH)"
  [CLI11]="CLI11: apt-get install libcli11-dev (or set CMAKE_PREFIX_PATH)"
  [ZLIB]="zlib (the readers of .json.gz result files): apt-get install zlib1g-dev"
  [RE2]="RE2 (--filter's linear-time engine): apt-get install libre2-dev, or RE2_ROOT (scripts/dev/device/carry_re2.sh)"
  [NVML_H]="nvml.h (NVML's types; the library is loaded at run time): the CUDA toolkit's, or python3 -m pip install nvidia-nvml-dev (nvidia-nvml-dev-cu12 for CUDA 12), or NVML_ROOT"
  [python3]="python3 with pip: apt-get install python3 python3-pip"
  [Python3]="a Python 3 interpreter (the build's tests run with it): apt-get install python3"
  [py:pytest]="python3 -m pip install pytest"
  [py:jsonschema]="python3 -m pip install jsonschema"
  [py:scipy]="python3 -m pip install scipy"
  [py:nodebench_reports]="python3 -m pip install -e $here/reports (or a nodebench_reports wheel)")

# ---------------------------------------------------------------------------------------------
# Commands and libraries, found as the build finds them. Fills FOUND[name]=detail, MISSING
# (required) and OPTIONAL_MISSING.
declare -A FOUND
MISSING=()
OPTIONAL_MISSING=()

version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]; }

probe_dir=""
cleanup() { [ -n "$probe_dir" ] && rm -rf "$probe_dir"; }
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

write_probe() {  # a CMake project that looks for each library as the top-level CMakeLists does
  cat > "$1/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25...4.4)
project(nodebench_setup_probe LANGUAGES CXX)
function(report name ok detail)
  if(ok)
    message(STATUS "NBPROBE ${name} FOUND ${detail}")
  else()
    message(STATUS "NBPROBE ${name} MISSING ${detail}")
  endif()
endfunction()
set(_cxx20 FALSE)
if("cxx_std_20" IN_LIST CMAKE_CXX_COMPILE_FEATURES)
  set(_cxx20 TRUE)
endif()
report(cxx "${_cxx20}" "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION} (${CMAKE_CXX_COMPILER})")
# The CUDA compiler as project(... CUDA) finds it, then the toolkit's libraries.
include(CheckLanguage)
check_language(CUDA)
find_package(CUDAToolkit QUIET)
set(_cuda FALSE)
if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND AND TARGET CUDA::cublas)
  set(_cuda TRUE)
endif()
report(CUDAToolkit "${_cuda}" "${CUDAToolkit_VERSION} (nvcc: ${CMAKE_CUDA_COMPILER})")
# nvml.h exactly as harness/CMakeLists.txt looks for it (the same file), reported rather than stopping.
set(NB_NVML_PROBE_ONLY ON)
include(${NB_SRC}/cmake/NodebenchNVML.cmake)
report(NVML_H "${NB_NVML_INCLUDE_DIR}" "${NB_NVML_INCLUDE_DIR}/nvml.h")
find_package(benchmark QUIET)
report(benchmark "${benchmark_FOUND}" "${benchmark_VERSION}")
find_package(GTest QUIET)
report(GTest "${GTest_FOUND}" "${GTest_VERSION}")
find_package(nlohmann_json 3.10 QUIET)
report(nlohmann_json "${nlohmann_json_FOUND}" "${nlohmann_json_VERSION}")
find_package(CLI11 QUIET)
report(CLI11 "${CLI11_FOUND}" "${CLI11_VERSION}")
find_package(ZLIB QUIET)
report(ZLIB "${ZLIB_FOUND}" "${ZLIB_VERSION_STRING}")
# tests/CMakeLists.txt runs its schema and CLI checks with the Python interpreter (no package).
find_package(Python3 COMPONENTS Interpreter QUIET)
report(Python3 "${Python3_Interpreter_FOUND}" "${Python3_VERSION} (${Python3_EXECUTABLE})")
# Optional, looked for as benchmarks/ and harness/ do.
find_path(_cudnn_h cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/include/x86_64-linux-gnu /usr/include)
find_library(_cudnn_lib cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/lib/x86_64-linux-gnu)
set(_cudnn FALSE)
if(_cudnn_h AND _cudnn_lib AND NOT CMAKE_DISABLE_FIND_PACKAGE_cuDNN)
  set(_cudnn TRUE)
endif()
report(cuDNN "${_cudnn}" "${_cudnn_lib}")
set(_roots ${NCCL_ROOT} $ENV{NCCL_ROOT} $ENV{NCCL_HOME})
find_path(_nccl_h nccl.h PATHS ${_roots} ${CUDAToolkit_INCLUDE_DIRS} /usr/include PATH_SUFFIXES include NO_DEFAULT_PATH)
if(CMAKE_DISABLE_FIND_PACKAGE_NCCL)
  set(_nccl_h "")
endif()
report(NCCL "${_nccl_h}" "${_nccl_h}")
find_package(MPI COMPONENTS CXX QUIET)
report(MPI "${MPI_CXX_FOUND}" "${MPI_CXX_VERSION}")
# RE2 exactly as harness/CMakeLists.txt looks for it (the same file), reported rather than stopping.
set(NB_RE2_PROBE_ONLY ON)
include(${NB_SRC}/cmake/NodebenchRE2.cmake)
report(RE2 "${NB_RE2_TARGET}" "${NB_RE2_DETAIL}")
find_path(_tj_h turbojpeg.h)
find_path(_jl_h jpeglib.h)
set(_jpeg FALSE)
if(_tj_h AND _jl_h)
  set(_jpeg TRUE)
endif()
report(JPEG "${_jpeg}" "${_tj_h}/turbojpeg.h")
CMAKE
}

probe() {
  FOUND=(); MISSING=(); OPTIONAL_MISSING=(); UNCHECKED=0
  local v
  # cmake: on PATH, new enough (the probe itself needs it).
  if command -v cmake >/dev/null 2>&1; then
    v=$(cmake --version 2>/dev/null | sed -n 's/^cmake version \([0-9.]*\).*/\1/p')
    if version_ge "${v:-0}" 3.25; then FOUND[cmake]="$v ($(command -v cmake))"; else MISSING+=(cmake); FOUND[cmake_old]=$v; fi
  else
    MISSING+=(cmake)
  fi
  # A build tool: Ninja (build.sh prefers it), else make.
  if command -v ninja >/dev/null 2>&1; then FOUND[ninja]="$(ninja --version 2>/dev/null)"
  elif command -v make >/dev/null 2>&1; then OPTIONAL_MISSING+=(ninja)
  else MISSING+=(ninja); fi
  if [ -n "${FOUND[cmake]:-}" ]; then
    probe_dir=$(mktemp -d "${TMPDIR:-/tmp}/nodebench-probe.XXXXXX")
    write_probe "$probe_dir"
    local hide=() h IFS_old=$IFS
    IFS=,
    for h in ${NODEBENCH_SETUP_HIDE:-}; do [ -n "$h" ] && hide+=("-DCMAKE_DISABLE_FIND_PACKAGE_$h=ON"); done
    IFS=$IFS_old
    if ! cmake -S "$probe_dir" -B "$probe_dir/b" -DNB_SRC="$here" "${hide[@]}" > "$probe_dir/log" 2>&1; then
      if ! grep -q NBPROBE "$probe_dir/log"; then
        MISSING+=(cxx)  # project(... CXX) itself failed: no working C++ compiler
        sed 's/^/  | /' "$probe_dir/log" | tail -15
      fi
    fi
    local name state detail
    while read -r name state detail; do
      case "$name" in cuDNN|NCCL|MPI|JPEG) [ "$state" = FOUND ] || { OPTIONAL_MISSING+=("$name"); continue; } ;; esac
      if [ "$state" = FOUND ]; then FOUND[$name]=$detail; else MISSING+=("$name"); fi
    done < <(sed -n 's/^-- NBPROBE //p' "$probe_dir/log")
    rm -rf "$probe_dir"; probe_dir=""
  else
    UNCHECKED=1  # the compiler and libraries are looked for through CMake, once it is there
  fi
  if [ "$target" = tests ]; then
    if ! command -v python3 >/dev/null 2>&1; then
      MISSING+=(python3)
    else
      local m
      for m in pytest jsonschema scipy; do
        python3 -c "import $m" >/dev/null 2>&1 && FOUND[py:$m]=ok || MISSING+=("py:$m")
      done
      # This tree's reports package, not another checkout's.
      v=$(python3 -c 'import nodebench_reports, os; print(os.path.realpath(nodebench_reports.__file__))' 2>/dev/null)
      case "$v" in "$(realpath "$here")/reports/"*) FOUND[py:nodebench_reports]=$v ;; *) MISSING+=(py:nodebench_reports) ;; esac
    fi
  fi
}

# The lowest compute capability of this machine's GPUs as major*10+minor ("" when nvidia-smi is
# absent or says nothing).
lowest_cc() {
  command -v nvidia-smi >/dev/null 2>&1 || return 0
  nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null \
    | sed -n 's/^ *\([0-9]\)\.\([0-9]\) *$/\1\2/p' | sort -n | head -1
}
# A pin of harness/profiles/arch_facts.json ("pins"), where the versions with code for GPUs below
# compute capability 7.5 are kept with their sources.
pin() {
  sed -n 's/^ *"'"$1"'": "\([^"]*\)",\{0,1\}$/\1/p' "$here/harness/profiles/arch_facts.json" | head -1
}
# Where to get cuDNN or NCCL: NVIDIA's unpinned packages install releases without code below
# compute capability 7.5 (cuDNN 9.11 on; NCCL for CUDA 13), so a GPU below it (or an unknown
# one) is given the pinned versions, held.
lib_hint() {
  local cc generic pinned
  cc=$(lowest_cc)
  case "$1" in
    cuDNN)
      generic="NVIDIA's cudnn9-cuda-XX packages"
      pinned="for a GPU below compute capability 7.5 (Pascal, Volta) only cuDNN $(pin cudnn_version) and older have its code: apt-get install $(pin cudnn_debs_cuda12) && apt-mark hold libcudnn9-cuda-12 libcudnn9-dev-cuda-12 libcudnn9-headers-cuda-12, or pip install $(pin cudnn_wheel)" ;;
    NCCL)
      generic="NVIDIA's libnccl-dev, or NCCL_ROOT"
      pinned="for a GPU below compute capability 7.5, an NCCL built with CUDA 12: apt-get install $(pin nccl_debs_cuda12) && apt-mark hold libnccl2 libnccl-dev, or pip install $(pin nccl_wheel)" ;;
  esac
  if [ -z "$cc" ]; then echo "$generic; $pinned"
  elif [ "$cc" -lt 75 ]; then echo "$pinned (this machine's lowest: ${cc:0:1}.${cc:1})"
  else echo "$generic"; fi
}

report() {
  local k
  for k in cmake ninja cxx CUDAToolkit NVML_H benchmark GTest nlohmann_json CLI11 ZLIB Python3 cuDNN NCCL MPI RE2 JPEG \
           py:pytest py:jsonschema py:scipy py:nodebench_reports; do
    [ -n "${FOUND[$k]:-}" ] && log "  found $k ${FOUND[$k]}"
  done
  for k in "${OPTIONAL_MISSING[@]}"; do
    case "$k" in
      ninja) log "  optional: ninja not found (the build uses make; apt-get install ninja-build or pip install ninja)" ;;
      cuDNN) log "  optional: cuDNN not found: the convolution family will not be built ($(lib_hint cuDNN))" ;;
      NCCL) log "  optional: NCCL not found: the nccl family's cases will be skipped ($(lib_hint NCCL))" ;;
      MPI) log "  optional: MPI not found: the MPI launch mode will not be built (apt-get install libopenmpi-dev)" ;;
      JPEG) log "  optional: libjpeg-turbo not found: the input family's CPU cases will be skipped (apt-get install libturbojpeg0-dev libjpeg62-turbo-dev)" ;;
    esac
  done
}

# ---------------------------------------------------------------------------------------------
apt_ok=1
apt_install() {  # Debian packages; waits for a dpkg lock held by another apt (5 minutes)
  [ $install = 1 ] && [ $apt_ok = 1 ] || return 1
  command -v apt-get >/dev/null 2>&1 || { apt_ok=0; return 1; }
  if [ -n "$SUDO" ] && ! command -v sudo >/dev/null 2>&1; then apt_ok=0; return 1; fi
  log "installing Debian packages: $*"
  if [ -z "${apt_updated:-}" ]; then
    # Offline, update fails: the package lists already there may still do.
    $SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq || log "apt-get update failed; trying the package lists at hand"
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq "$@" \
    || { log "apt-get install $* failed"; apt_ok=0; return 1; }
}
pip_install() {
  [ $install = 1 ] || return 1
  command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1 || return 1
  log "installing with pip: $*"
  python3 -m pip install -q --disable-pip-version-check "$@" || { log "pip install $* failed"; return 1; }
}

try_install() {  # one round: Debian packages, else CMake/Ninja from PyPI; the Python side
  local k d debs=() pips=() pydeps=()
  for k in "${MISSING[@]}"; do
    case "$k" in
      py:nodebench_reports) ;;
      py:*) pydeps+=("${k#py:}") ;;
      CUDAToolkit) ;;
      *) [ -n "${DEB[$k]:-}" ] && read -r -a d <<<"${DEB[$k]}" && debs+=("${d[@]}") ;;
    esac
  done
  # Ninja, MPI and libjpeg-turbo are optional, but a machine that can install gets them (a
  # quicker build; the MPI launch mode and its tests; the input family's CPU cases).
  # Only when something required is installed too.
  if [ ${#debs[@]} -gt 0 ]; then
    for k in "${OPTIONAL_MISSING[@]}"; do
      case "$k" in ninja|MPI|JPEG) read -r -a d <<<"${DEB[$k]}"; debs+=("${d[@]}") ;; esac
    done
  fi
  # nvml.h where the toolkit lacks it (a toolkit assembled from wheels): NVIDIA's header wheel of
  # the toolkit's major version.
  case " ${MISSING[*]} " in
    *" NVML_H "*) case "${FOUND[CUDAToolkit]:-}" in 12.*) pip_install nvidia-nvml-dev-cu12 || true ;; *) pip_install nvidia-nvml-dev || true ;; esac ;;
  esac
  if [ ${#debs[@]} -gt 0 ] && ! apt_install "${debs[@]}"; then
    # Without apt, CMake and Ninja can still come from PyPI (as on a GPU node's own Python).
    for k in cmake ninja; do
      case " ${MISSING[*]} " in *" $k "*) pips+=("${PIP[$k]}") ;; esac
    done
    [ ${#pips[@]} -gt 0 ] && pip_install "${pips[@]}"
  fi
  if [ "$target" = tests ]; then
    case " ${MISSING[*]} " in
      *" py:nodebench_reports "*) pip_install -e "$here/reports[test]" ;;
      *) [ ${#pydeps[@]} -gt 0 ] && pip_install "${pydeps[@]}" ;;
    esac
  fi
  hash -r
}

probe
# Two rounds at most: a missing CMake hides which libraries are missing until it is installed.
for round in 1 2; do
  if [ ${#MISSING[@]} = 0 ] || [ $install = 0 ]; then break; fi
  if [ $round = 2 ] && { [ "$cmake_was_missing" = 0 ] || [ "$UNCHECKED" = 1 ]; }; then break; fi
  cmake_was_missing=$UNCHECKED
  log "missing: ${MISSING[*]}"
  try_install
  probe
done
report
if [ ${#MISSING[@]} -gt 0 ]; then
  [ "$UNCHECKED" = 1 ] && echo "$prog: the compiler, the CUDA toolkit and the libraries are checked once CMake >= 3.25 is there" >&2
  echo "$prog: MISSING for --for $target (nothing could install it, or --no-install):" >&2
  for k in "${MISSING[@]}"; do
    extra=""
    [ "$k" = cmake ] && [ -n "${FOUND[cmake_old]:-}" ] && extra=" (found ${FOUND[cmake_old]}, too old)"
    echo "  - $k$extra: ${HOWTO[$k]:-see README.md}" >&2
  done
  exit 1
fi
log "everything needed for --for $target is present"
