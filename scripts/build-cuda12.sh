#!/usr/bin/env bash
# Builds nodebench with a CUDA 12.x toolchain, the last CUDA that can compile for the Tesla P40
# (compute capability 6.1): CUDA 13 dropped sm_50..sm_72. See docs/P40.md.
#
#   On a node with CUDA 12 installed:
#     CUDA_HOME=/usr/local/cuda-12.9 scripts/build-cuda12.sh
#   On a machine without one (a CUDA 13 development or CI machine): a private CUDA 12 toolkit is
#   assembled under ~/.cache/nodebench-cuda12 from pinned packages (PyPI wheels plus Debian's
#   CUDA 12 compiler front end, see below) and used for this build only; nothing is installed
#   system-wide and /usr/local/cuda is left alone:
#     scripts/build-cuda12.sh                       # sm_61 only, into build-cuda12/
#     scripts/build-cuda12.sh --archs all           # sm_61,70,75,80,86,89,90 (+PTX for 90)
#
# Why two sources: PyPI's nvidia-cuda-nvcc-cu12 wheels (every 12.x, 12.9.86 included) carry only
# ptxas, libnvvm, libdevice and the crt headers: no nvcc driver, no cicc (the CUDA C++ front
# end), no cudafe++/fatbinary/nvlink; and the cu12 runtime wheels before 12.9 lack
# libcudadevrt.a/libcudart_static.a. No other PyPI package has a CUDA 12 nvcc. The newest CUDA 12
# compiler that Debian's archive has is 12.4.1 (Debian 13 "trixie", non-free: NVIDIA's own
# binaries, repackaged; they need glibc >= 2.34 and run on Debian 12). So the private toolkit is
# CUDA 12.4.1 throughout: nvcc, cicc, cudafe++, nvlink, fatbinary, cuobjdump, nvdisasm from
# Debian's nvidia-cuda-toolkit 12.4.131, libcudadevrt.a/libcudart_static.a/libculibos.a from
# Debian's nvidia-cuda-dev 12.4.127, and from PyPI the 12.4.1 wheels (nvcc 12.4.131: ptxas,
# crt, libdevice; runtime and CCCL 12.4.127; cuBLAS 12.4.5.8; nvml.h 12.4.127) plus cuDNN
# 9.10.2 and NCCL 2.27.7 for CUDA 12. One CUDA release, as NVIDIA ships it; mixing a 12.4 front
# end with 12.9 parts does not work (nvlink 12.4 refuses objects and libcudadevrt from 12.9).
# Code must therefore build with CUDA 12.4 too: guard APIs newer than 12.4 with CUDA_VERSION.
# A P40 node with CUDA 12.9 installed builds with 12.9 throughout (CUDA_HOME above).
#
# Options:
#   --archs A        61 (default) | all (61;70;75;80;86;89;90) | default (the project's own choice:
#                    every arch the nvcc lists from 61 up) | a CMake list such as "61-real;90"
#   --build-dir D    build directory (default: build-cuda12 in the source tree)
#   --toolkit M      auto (default) | system | pypi. system: use $CUDA_HOME (must be CUDA 12.x);
#                    pypi: assemble the private toolkit; auto: $CUDA_HOME if it is CUDA 12.x,
#                    else the newest /usr/local/cuda-12.*, else /usr/local/cuda if it is 12.x,
#                    else assemble
#   --target T       build only target T (repeatable; default: all targets)
#   --no-tests       configure with NODEBENCH_BUILD_TESTS=OFF
#   -j, --jobs N     parallel build jobs (default: number of cores)
#   --fresh          reconfigure from scratch
#   --configure-only run the CMake configure step only
#   --print-toolkit  make sure the toolkit is there, print its root on stdout, build nothing
#   -- ARGS          further arguments for the CMake configure step
# Environment: CUDA_HOME (system toolkit), NB_CUDA12_CACHE (default ~/.cache/nodebench-cuda12;
#   the first run fetches 2.44 GB and keeps 1.5 GB of it plus the unpacked toolkit, about 3.6 GB
#   in all; scripts/dev/facts/cuda12-download-size.sh prints the sizes),
#   NB_CUDA12_TOOLKIT (default for --toolkit).
# Exit status: 0 built; 1 a step failed (the message says which); 2 bad usage.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { echo "build-cuda12: $*" >&2; }
die() { echo "build-cuda12: error: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }

archs=61
build_dir="$here/build-cuda12"
toolkit_mode=${NB_CUDA12_TOOLKIT:-auto}
targets=()
tests=ON
jobs=$(nproc 2>/dev/null || echo 2)
fresh=0
print_toolkit=0
configure_only=0
cmake_extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --archs) archs=${2:?--archs needs a value}; shift 2 ;;
    --archs=*) archs=${1#*=}; shift ;;
    --build-dir) build_dir=${2:?}; shift 2 ;;
    --build-dir=*) build_dir=${1#*=}; shift ;;
    --toolkit) toolkit_mode=${2:?}; shift 2 ;;
    --toolkit=*) toolkit_mode=${1#*=}; shift ;;
    --target) targets+=("${2:?}"); shift 2 ;;
    --no-tests) tests=OFF; shift ;;
    -j|--jobs) jobs=${2:?}; shift 2 ;;
    -j*) jobs=${1#-j}; shift ;;
    --fresh) fresh=1; shift ;;
    --print-toolkit) print_toolkit=1; shift ;;
    --configure-only) configure_only=1; shift ;;
    -h|--help) usage 0 ;;
    --) shift; cmake_extra=("$@"); break ;;
    *) echo "build-cuda12: unknown argument '$1'" >&2; usage 2 ;;
  esac
done
case "$toolkit_mode" in auto|system|pypi) ;; *) echo "build-cuda12: --toolkit must be auto, system or pypi" >&2; exit 2 ;; esac
case "$build_dir" in /*) ;; *) build_dir="$PWD/$build_dir" ;; esac

# ---------------------------------------------------------------------------------------------
# Pinned packages: kind name version sha256 (whl: PyPI; deb: Debian trixie non-free).
# Check that a wheel exists:  python3 -m pip index versions nvidia-cuda-nvcc-cu12
#                             python3 -m pip download --no-deps -d /tmp/x nvidia-cublas-cu12==12.4.5.8
# cuDNN must stay at 9.10.x (9.11 and later dropped Pascal); scripts/dev/checks/check_sm61.py --libs checks
# that every pinned library still carries sm_61 code. (nvidia-cuda-cccl-cu12 12.4.127 was yanked
# as broken, without most of libcu++; 12.4.127.post1 replaces it.)
DEB_SUITE=trixie
PINS="
deb nvidia-cuda-toolkit      12.4.131~12.4.1-2 cd5fe85aee38d108b315f408a688641478f2402622a10c677478eb7a6c4e5319
deb nvidia-cuda-dev          12.4.127~12.4.1-2 d846838f914a0176948d48a8bcade5d6dbcccb5c9374343f6475f5503f173ee0
whl nvidia-cuda-nvcc-cu12    12.4.131   e4c9a35435c3b0e36c6397c5696334c9ea6650e524736cbd1c5d345ea099bb04
whl nvidia-cuda-runtime-cu12 12.4.127   64403288fa2136ee8e467cdc9c9427e0434110899d07c779f25b5c068934faa5
whl nvidia-cuda-cccl-cu12    12.4.127.post1 2027fa5fc75fbee703bf24e8275a40a605cf94a3e8fef8a7187897d49b34facb
whl nvidia-cublas-cu12       12.4.5.8   2fc8da60df463fdefa81e323eef2e36489e1c94335b5358bcb38360adf75ac9b
whl nvidia-nvml-dev-cu12     12.4.127   f3d070140734992f018d46b5fc1663495898637534b94a87cec64bf12bdc584c
whl nvidia-cudnn-cu12        9.10.2.21  949452be657fa16687d0930933f032835951ef0892b37d2d53824d1a84dc97a8
whl nvidia-nccl-cu12         2.27.7     de5ba5562f08029a19cb1cd659404b18411ed0d6c90ac5f52f30bf99ad5809aa"
# Only these members of nvidia-cuda-dev (934 MB, mostly static libraries) are kept.
CUDA_DEV_MEMBERS="libcudadevrt.a libcudart_static.a libculibos.a"
LAYOUT_VERSION=2   # bump when the assembly below changes, so cached toolkits are rebuilt

CACHE=${NB_CUDA12_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodebench-cuda12}

nvcc_release() {  # prints "12.9" for a given nvcc, or nothing
  "$1" --version 2>/dev/null | sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -1
}

sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

# Private apt: Debian's archive (trixie, non-free) read with its own state directories, so the
# system's sources, lists and dpkg database are untouched. apt verifies the Release signatures.
apt_private() {
  local a="$CACHE/apt"
  mkdir -p "$a/lists/partial" "$a/cache/archives/partial" "$a/etc/preferences.d"
  : > "$a/status"
  local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  [ -r "$keyring" ] || die "$keyring is missing: apt-get install debian-archive-keyring (Debian and Ubuntu have it)"
  echo "deb [arch=amd64 signed-by=$keyring] http://deb.debian.org/debian $DEB_SUITE non-free" > "$a/etc/sources.list"
  local opts=(-o "Dir::Etc::SourceList=$a/etc/sources.list" -o "Dir::Etc::SourceParts=$a/etc/none"
              -o "Dir::Etc::Preferences=$a/etc/none" -o "Dir::Etc::PreferencesParts=$a/etc/preferences.d"
              -o "Dir::State::Lists=$a/lists" -o "Dir::State::status=$a/status" -o "Dir::Cache=$a/cache"
              -o "APT::Architecture=amd64" -o "APT::Get::List-Cleanup=0" -o "Debug::NoLocking=1")
  [ "$(id -u)" = 0 ] && opts+=(-o "APT::Sandbox::User=root")
  "$@" "${opts[@]}"
}

apt_updated=0
apt_update_once() {  # in the main shell, not in $(...), so that it runs once
  command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null ||
    die "apt-get and dpkg-deb are needed to fetch CUDA 12 (Debian/Ubuntu); or install CUDA 12 and pass CUDA_HOME"
  if [ $apt_updated = 0 ]; then
    log "reading Debian $DEB_SUITE (non-free) package lists into $CACHE/apt"
    apt_private apt-get -q update >&2 || die "apt-get update of Debian $DEB_SUITE non-free failed (network?)"
    apt_updated=1
  fi
}
# Downloads Debian package NAME at VERSION (or, where a point release replaced that revision,
# the same upstream version) into directory DIR; checks the pinned sha256 when the revision is
# the pinned one (apt checks the archive's signatures in any case). Prints the .deb's path.
deb_download() {
  local name=$1 ver=$2 sha=$3 dir=$4 got f
  got=$ver
  if ! apt_private apt-cache show "$name=$ver" >/dev/null 2>&1; then
    got=$(apt_private apt-cache madison "$name" | awk -v up="${ver%%~*}~" 'index($3, up) == 1 {print $3; exit}')
    [ -n "$got" ] || die "Debian $DEB_SUITE no longer has $name ${ver%%~*}; update PINS in $0"
    log "warning: $name $ver is gone from $DEB_SUITE; using $got (apt checked its signature; sha256 not pinned)"
    sha=""
  fi
  log "downloading $name $got from Debian $DEB_SUITE"
  (cd "$dir" && apt_private apt-get -q download "$name=$got" >&2) || die "apt-get download $name=$got failed"
  f=$(ls "$dir/${name}_"*.deb | head -1)
  if [ -n "$sha" ] && ! sha_ok "$f" "$sha"; then die "sha256 of $(basename "$f") differs from the pin"; fi
  echo "$f"
}

# Cached: downloads/nvidia-cuda-toolkit_VER_amd64.deb (whole) and, of nvidia-cuda-dev, only
# $CUDA_DEV_MEMBERS under downloads/nvidia-cuda-dev_VER.static/ (the .deb itself is deleted).
fetch_debs() {
  local kind name ver sha tmp f m out
  while read -r kind name ver sha; do
    [ "$kind" = deb ] || continue
    tmp="$CACHE/downloads/tmp.$$"
    case "$name" in
      nvidia-cuda-toolkit)
        TOOLKIT_DEB="$CACHE/downloads/${name}_${ver}_amd64.deb"
        sha_ok "$TOOLKIT_DEB" "$sha" && continue
        rm -rf "$tmp"; mkdir -p "$tmp"
        apt_update_once
        f=$(deb_download "$name" "$ver" "$sha" "$tmp")
        mv "$f" "$TOOLKIT_DEB"; rm -rf "$tmp" ;;
      nvidia-cuda-dev)
        CUDA_DEV_LIBS="$CACHE/downloads/${name}_${ver}.static"
        [ -f "$CUDA_DEV_LIBS/.sha256" ] && [ "$(cat "$CUDA_DEV_LIBS/.sha256")" = "$sha" ] && continue
        rm -rf "$tmp"; mkdir -p "$tmp/x"
        apt_update_once
        f=$(deb_download "$name" "$ver" "$sha" "$tmp")
        log "extracting $CUDA_DEV_MEMBERS from $(basename "$f") (about a minute: one xz stream)"
        m=(); for out in $CUDA_DEV_MEMBERS; do m+=("./usr/lib/x86_64-linux-gnu/$out"); done
        dpkg-deb --fsys-tarfile "$f" | tar -x -C "$tmp/x" "${m[@]}" || die "extracting from $(basename "$f") failed"
        rm -rf "$CUDA_DEV_LIBS"; mkdir -p "$CUDA_DEV_LIBS"
        mv "$tmp/x/usr/lib/x86_64-linux-gnu/"* "$CUDA_DEV_LIBS/"
        echo "$sha" > "$CUDA_DEV_LIBS/.sha256"
        rm -rf "$tmp" ;;
      *) die "no rule for Debian package $name" ;;
    esac
  done <<<"$PINS"
}

wheel_file() {  # name version -> cached wheel path (may not exist)
  local norm; norm=$(echo "$1" | tr '-' '_')
  ls "$CACHE/downloads/${norm}-$2-"*.whl 2>/dev/null | head -1 || true
}

fetch_wheels() {
  local req="$CACHE/downloads/requirements.$$.txt" need=0 kind name ver sha f
  : > "$req"
  while read -r kind name ver sha; do
    [ "$kind" = whl ] || continue
    f=$(wheel_file "$name" "$ver")
    if [ -n "$f" ] && sha_ok "$f" "$sha"; then continue; fi
    [ -n "$f" ] && rm -f "$f"
    echo "$name==$ver --hash=sha256:$sha" >> "$req"; need=1
  done <<<"$PINS"
  if [ $need = 1 ]; then
    log "downloading wheels from PyPI: $(cut -d' ' -f1 "$req" | tr '\n' ' ')"
    python3 -m pip download --disable-pip-version-check --no-cache-dir --no-deps --only-binary=:all: \
      --require-hashes --progress-bar off -d "$CACHE/downloads" -r "$req" >&2 ||
      die "pip download failed (network, or a pinned wheel/hash no longer matches PyPI)"
  fi
  rm -f "$req"
}

# Lays out a toolkit like /usr/local/cuda under DIR/toolkit from DIR/deb (the unpacked
# nvidia-cuda-toolkit), DIR/devlibs (the static libraries) and DIR/site (the wheels): bin/
# (nvcc and its helpers, ptxas, cuobjdump, nvdisasm), nvvm/ (cicc, libdevice, libnvvm),
# include/ (all headers merged), lib64/ (with the unversioned .so links that the linker and
# FindCUDAToolkit look for). Links are relative, so the cache directory can move.
assemble() {
  local dst=${1:?}
  local d="$dst/deb/usr" s="$dst/site/nvidia" tk="$dst/toolkit" t f n u pkg
  mkdir -p "$tk/bin/crt" "$tk/nvvm/bin" "$tk/include" "$tk/lib64"
  # nvcc reads nvcc.profile next to its real path, so the driver is copied, not linked.
  cp "$d/lib/nvidia-cuda-toolkit/bin/nvcc" "$tk/bin/nvcc"
  for t in cudafe++ fatbinary nvlink bin2c nvprune cuobjdump nvdisasm cu++filt; do
    if [ -e "$d/bin/$t" ]; then ln -sr "$d/bin/$t" "$tk/bin/$t"; fi
  done
  ln -sr "$d/lib/nvidia-cuda-toolkit/bin/crt/link.stub" "$tk/bin/crt/link.stub"
  ln -sr "$d/lib/nvidia-cuda-toolkit/bin/crt/prelink.stub" "$tk/bin/crt/prelink.stub"
  ln -sr "$d/lib/nvidia-cuda-toolkit/bin/cicc" "$tk/nvvm/bin/cicc"
  ln -sr "$s/cuda_nvcc/bin/ptxas" "$tk/bin/ptxas"
  for t in libdevice include lib64; do
    if [ -e "$s/cuda_nvcc/nvvm/$t" ]; then ln -sr "$s/cuda_nvcc/nvvm/$t" "$tk/nvvm/$t"; fi
  done
  cat > "$tk/bin/nvcc.profile" <<'PROFILE'
TOP              = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH += $(TOP)/lib64:
PATH            += $(TOP)/nvvm/bin:$(_HERE_):
INCLUDES        +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/lib64/stubs" "-L$(TOP)/lib64"
CUDAFE_FLAGS    +=
PTXAS_FLAGS     +=
PROFILE
  for pkg in cuda_runtime cuda_nvcc cuda_cccl cublas cudnn nccl nvml_dev; do
    [ -d "$s/$pkg" ] || die "wheel layout changed: $s/$pkg missing"
    if [ -d "$s/$pkg/include" ]; then
      for f in "$s/$pkg/include"/*; do
        n=$(basename "$f")
        case "$n" in __init__.py|__pycache__) continue ;; esac
        [ -e "$tk/include/$n" ] || ln -sr "$f" "$tk/include/$n"
      done
    fi
    if [ -d "$s/$pkg/lib" ]; then
      for f in "$s/$pkg/lib"/*; do
        n=$(basename "$f")
        case "$n" in __init__.py|__pycache__|cmake) continue ;; esac
        ln -sr "$f" "$tk/lib64/$n"
        case "$n" in *.so.*) u=${n%%.so.*}.so; [ -e "$tk/lib64/$u" ] || ln -s "$n" "$tk/lib64/$u" ;; esac
      done
    fi
  done
  for f in "$dst/devlibs"/*.a; do
    if [ -f "$f" ] && [ ! -e "$tk/lib64/$(basename "$f")" ]; then ln -sr "$f" "$tk/lib64/"; fi
  done
  for f in nvcc ptxas cuobjdump nvdisasm fatbinary nvlink cudafe++; do
    [ -x "$tk/bin/$f" ] || die "assembled toolkit lacks bin/$f"
  done
  [ -x "$tk/nvvm/bin/cicc" ] && [ -f "$tk/nvvm/libdevice/libdevice.10.bc" ] || die "assembled toolkit lacks nvvm/"
  for f in cuda_runtime.h crt/host_config.h cublasLt.h cudnn.h nccl.h nvml.h cuda/std/cstdint; do
    [ -e "$tk/include/$f" ] || die "assembled toolkit lacks include/$f"
  done
  for f in libcudart.so libcudart_static.a libcudadevrt.a libcublas.so libcublasLt.so libcudnn.so libnccl.so; do
    [ -e "$tk/lib64/$f" ] || die "assembled toolkit lacks lib64/$f"
  done
}

ensure_pypi_toolkit() {  # -> $TOOLKIT
  command -v python3 >/dev/null || die "python3 (with pip) is needed to fetch the CUDA 12 wheels"
  python3 -m pip --version >/dev/null 2>&1 || die "python3 -m pip is missing: apt-get install python3-pip"
  [ "$(uname -m)" = x86_64 ] || die "the private CUDA 12 toolkit is x86_64 only; install CUDA 12 and pass CUDA_HOME"
  mkdir -p "$CACHE/downloads"
  local stamp_text dir="$CACHE/cuda-12.4"
  stamp_text="layout=$LAYOUT_VERSION $(echo "$PINS" | tr -s ' \n' ' ')"
  exec 9>"$CACHE/.lock"
  if command -v flock >/dev/null; then flock 9; fi
  if [ -f "$dir/.complete" ] && [ "$(cat "$dir/.complete")" = "$stamp_text" ] && [ -x "$dir/toolkit/bin/nvcc" ]; then
    TOOLKIT="$dir/toolkit"
    log "using the cached CUDA 12.4.1 toolkit at $TOOLKIT"
    exec 9>&-
    return
  fi
  local t0=$SECONDS new="$dir.new.$$" files=() kind name ver sha
  rm -rf "$dir".new.* "$CACHE"/downloads/tmp.* "$CACHE"/downloads/requirements.*  # left by an interrupted run
  fetch_debs
  fetch_wheels
  rm -rf "$new"; mkdir -p "$new/deb" "$new/devlibs"
  log "unpacking $(basename "$TOOLKIT_DEB")"
  dpkg-deb -x "$TOOLKIT_DEB" "$new/deb"
  cp "$CUDA_DEV_LIBS"/*.a "$new/devlibs/"
  while read -r kind name ver sha; do
    if [ "$kind" = whl ]; then files+=("$(wheel_file "$name" "$ver")"); fi
  done <<<"$PINS"
  log "installing ${#files[@]} wheels into $new/site (private: pip install --target)"
  python3 -m pip install --disable-pip-version-check --no-cache-dir --no-deps --no-index --no-compile \
    --root-user-action=ignore -q --target "$new/site" "${files[@]}" >&2 || die "pip install --target failed"
  assemble "$new"
  echo "$stamp_text" > "$new/.complete"
  rm -rf "$dir"; mv "$new" "$dir"
  TOOLKIT="$dir/toolkit"
  exec 9>&-
  log "assembled the CUDA 12.4.1 toolkit at $TOOLKIT in $((SECONDS - t0)) s"
}

# ---------------------------------------------------------------------------------------------
TOOLKIT=""
sys_candidate=""
if [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then
  sys_candidate=$CUDA_HOME
fi
case "$toolkit_mode" in
  system)
    [ -n "$sys_candidate" ] || die "--toolkit system needs CUDA_HOME pointing at a CUDA 12 install (with bin/nvcc)"
    rel=$(nvcc_release "$sys_candidate/bin/nvcc")
    case "$rel" in 12.*) TOOLKIT=$sys_candidate ;;
      *) die "CUDA_HOME=$sys_candidate has nvcc ${rel:-of unknown release}; sm_61 needs CUDA 12.x (CUDA 13 cannot compile for it)" ;;
    esac ;;
  auto)
    if [ -n "$sys_candidate" ] && [[ "$(nvcc_release "$sys_candidate/bin/nvcc")" == 12.* ]]; then
      TOOLKIT=$sys_candidate
    else
      for c in $(ls -d /usr/local/cuda-12.* 2>/dev/null | sort -V -r) /usr/local/cuda; do
        if [ -x "$c/bin/nvcc" ] && [[ "$(nvcc_release "$c/bin/nvcc")" == 12.* ]]; then TOOLKIT=$c; break; fi
      done
      if [ -z "$TOOLKIT" ]; then
        [ -n "$sys_candidate" ] && log "CUDA_HOME=$sys_candidate is CUDA $(nvcc_release "$sys_candidate/bin/nvcc"), not 12.x"
        ensure_pypi_toolkit
      fi
    fi ;;
  pypi) ensure_pypi_toolkit ;;
esac
TOOLKIT=$(cd "$TOOLKIT" && pwd)
NVCC="$TOOLKIT/bin/nvcc"
release=$(nvcc_release "$NVCC")
[[ "$release" == 12.* ]] || die "$NVCC is release ${release:-unknown}, not 12.x"

if [ $print_toolkit = 1 ]; then
  echo "$TOOLKIT"
  exit 0
fi

# Keep every other CUDA (the system's CUDA 13 above all) out of this build's paths.
strip_cuda() {  # colon list -> the list without entries under a CUDA install other than ours
  local out="" e IFS=:
  for e in $1; do
    [ -z "$e" ] && continue
    case "$e" in "$TOOLKIT"|"$TOOLKIT"/*) ;; */cuda|*/cuda/*|*/cuda-[0-9]*) continue ;; esac
    out="${out:+$out:}$e"
  done
  echo "$out"
}
PATH="$TOOLKIT/bin:$(strip_cuda "$PATH")"
export PATH
export CUDA_HOME="$TOOLKIT" CUDA_PATH="$TOOLKIT" CUDACXX="$NVCC"
unset CUDAHOSTCXX CUDAToolkit_ROOT || true
for v in LIBRARY_PATH CPATH C_INCLUDE_PATH CPLUS_INCLUDE_PATH; do
  if [ -n "${!v:-}" ]; then export "$v=$(strip_cuda "${!v}")"; fi
done
export LD_LIBRARY_PATH="$TOOLKIT/lib64${LD_LIBRARY_PATH:+:$(strip_cuda "$LD_LIBRARY_PATH")}"

case "$archs" in
  61|sm_61|p40) arch_args=(-DCMAKE_CUDA_ARCHITECTURES=61-real) ;;
  all) arch_args=("-DCMAKE_CUDA_ARCHITECTURES=61-real;70-real;75-real;80-real;86-real;89-real;90") ;;
  default) arch_args=(-UCMAKE_CUDA_ARCHITECTURES) ;;
  *) arch_args=("-DCMAKE_CUDA_ARCHITECTURES=$archs") ;;
esac

# Two builds into one directory at once (a developer and scripts/test.sh) would corrupt it.
mkdir -p "$build_dir"
exec 8>"$build_dir/.build-cuda12.lock"
if command -v flock >/dev/null && ! flock -n 8; then
  log "waiting for another build in $build_dir to finish"
  flock 8
fi

gen=()
if [ ! -f "$build_dir/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
if [ -f "$build_dir/CMakeCache.txt" ]; then
  old=$(sed -n 's/^CMAKE_CUDA_COMPILER:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
  if [ "$old" != "$NVCC" ]; then
    log "$build_dir was configured with ${old:-another compiler}; reconfiguring from scratch"
    fresh=1
  fi
fi
fresh_arg=()
[ $fresh = 1 ] && fresh_arg=(--fresh)

host_cxx=$(command -v g++ || command -v c++ || true)
log "CUDA $release at $TOOLKIT; archs: $archs; build dir: $build_dir"
t0=$SECONDS
cmake "${fresh_arg[@]}" -S "$here" -B "$build_dir" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_COMPILER="$NVCC" -DCUDAToolkit_ROOT="$TOOLKIT" ${host_cxx:+-DCMAKE_CUDA_HOST_COMPILER="$host_cxx"} \
  "${arch_args[@]}" -DNODEBENCH_BUILD_TESTS=$tests "${cmake_extra[@]}" ||
  die "CMake configure with CUDA $release failed (see above)"
chosen=$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
case ";$chosen;" in *";61;"*|*";61-real;"*|*";61-virtual;"*) ;;
  *) log "warning: CMAKE_CUDA_ARCHITECTURES=$chosen holds no sm_61: this build will not run on a P40" ;;
esac
if [ $configure_only = 1 ]; then
  log "configured with CUDA $release for $chosen in $((SECONDS - t0)) s: $build_dir"
  exit 0
fi
build_args=()
for t in "${targets[@]}"; do build_args+=(--target "$t"); done
cmake --build "$build_dir" -j "$jobs" "${build_args[@]}" || die "build with CUDA $release for $chosen failed (see above)"
log "built with CUDA $release (${TOOLKIT}) for $chosen in $((SECONDS - t0)) s: $build_dir"
