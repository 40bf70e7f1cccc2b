#!/usr/bin/env python3
"""Checks that a nodebench build can run on a Tesla P40 (compute capability 6.1).

Reads the binaries with cuobjdump (a CUDA 12 one: CUDA 13's cuobjdump lists sm_61 code but
refuses to disassemble it) and checks:

  1. every artefact with device code (the nodebench binary, the static libraries such as
     the libnb_kernels_*.a of kernels/<family>/) holds sm_61 machine code (SASS), not only PTX to be JIT-compiled;
  2. every __global__ kernel defined in the sources (*.cu, *.cuh outside build directories and
     scripts/, whose standalone maintainer kernels are not part of the binary) is
     in the binary's sm_61 SASS, so no kernel is left without a P40 code path; files named
     *_sm90a.cu hold kernels built for the arch-specific target sm_90a only (Hopper's wgmma)
     and are left out;
  3. the sm_61 SASS uses nothing a P40 lacks: no tensor-core instructions (HMMA, IMMA, DMMA,
     BMMA, *GMMA, UTC*MMA), no ldmatrix/stmatrix/movmatrix, no BF16/TF32/FP8 operand types;
  4. the binary holds SASS for every real architecture in CMAKE_CUDA_ARCHITECTURES (and PTX
     for the virtual ones);
  5. with --libs DIR: every CUDA library there with device code (cuBLAS, cuDNN, NCCL) carries
     code a P40 can run (sm_60/sm_61 SASS, or PTX for compute_60/61).

Kernels whose sm_61 code is a trap (a `__trap()` in the branch for older architectures) are
listed: the host must never launch them on a P40.

Usage: check_sm61.py BUILD_DIR [--cuobjdump PATH] [--source-root DIR] [--libs DIR]
Exit status: 0 all checks passed; 1 a check failed; 2 usage error or no usable cuobjdump.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

# Instructions that exist only on sm_70 and newer (tensor cores, matrix load/store/move).
FORBIDDEN_OPCODES = {
    "HMMA", "IMMA", "BMMA", "DMMA", "HGMMA", "IGMMA", "QGMMA", "BGMMA", "OMMA", "QMMA",
    "UTCHMMA", "UTCIMMA", "UTCQMMA", "UTCOMMA", "UTCBAR", "UTMALDG", "UTMASTG",
    "LDSM", "STSM", "MOVM",
}
# Operand types that a P40 does not have.
FORBIDDEN_TYPES = re.compile(r"\b(BF16|BF16_V2|TF32|E4M3|E5M2|E2M1|E3M2|E2M3|UE8M0)\b")
TARGET = "sm_61"
# Sources compiled only for an arch-specific target (never for sm_61).
ARCH_SPECIFIC_SUFFIXES = ("_sm90a.cu",)
# Source-level kernel definitions: __global__ [__launch_bounds__(...)] void name(
KERNEL_RE = re.compile(
    r"(template\s*<[^;{]*?>\s*)?(?:static\s+|extern\s+\"C\"\s+)?__global__\s+"
    r"(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(",
    re.S)


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout, p.stderr


class Report:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def ok(self, msg):
        self.passed += 1
        print(f"  PASS  {msg}")

    def fail(self, msg):
        self.failed += 1
        print(f"  FAIL  {msg}")

    @staticmethod
    def info(msg):
        print(f"  info  {msg}")


def find_cuobjdump(explicit, accept_cuda13=False):
    """A cuobjdump and its release; CUDA 13's only with accept_cuda13 (it reads sm_75 and newer)."""
    cands = []
    if explicit:
        cands.append(explicit)
    for env in ("CUDA12_HOME", "CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            cands.append(os.path.join(os.environ[env], "bin", "cuobjdump"))
    w = shutil.which("cuobjdump")
    if w:
        cands.append(w)
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            rc, out, _ = run([c, "--version"])
            m = re.search(r"release (\d+)\.(\d+)", out)
            if m and int(m.group(1)) >= 13 and not accept_cuda13:
                print(f"check_sm61: skipping {c}: CUDA {m.group(1)}.{m.group(2)}'s cuobjdump cannot "
                      "disassemble sm_61 (nvdisasm: 'SM61 is deprecated')")
                continue
            return c, (m.group(0) if m else "unknown release")
    return None, None


def demangle(names):
    if not names:
        return {}
    tool = shutil.which("c++filt")
    if not tool:
        return {n: n for n in names}
    p = subprocess.run([tool], input="\n".join(names) + "\n", stdout=subprocess.PIPE, text=True)
    out = p.stdout.splitlines()
    return dict(zip(names, out)) if len(out) == len(names) else {n: n for n in names}


def base_name(demangled):
    """nb::kernels::(anonymous namespace)::fill_kernel(void*, ...) -> fill_kernel;
    void foo<float, 4>(float*) -> foo."""
    s = demangled
    depth = 0
    cut = len(s)
    for i, ch in enumerate(s):  # the first '(' at template depth 0 opens the parameter list
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and not s.startswith("(anonymous", i):
            cut = i
            break
    s = s[:cut]
    s = re.sub(r"<.*>$", "", s)          # template arguments
    s = s.split("::")[-1]
    return s.split()[-1] if s.split() else s


def list_elf(cuobjdump, path):
    rc, out, err = run([cuobjdump, "--list-elf", str(path)])
    archs = re.findall(r"\.(sm_\d+a?)\.cubin", out)
    return archs, rc, err


def list_ptx(cuobjdump, path):
    rc, out, _ = run([cuobjdump, "--list-ptx", str(path)])
    return re.findall(r"\.(sm_\d+a?)\.ptx", out)


def sass_functions(cuobjdump, path, arch):
    """{mangled name: [instruction text, ...]} for the given arch's SASS in path."""
    rc, out, err = run([cuobjdump, "-sass", "-arch", arch, str(path)])
    if rc != 0 and not out:
        raise RuntimeError(f"cuobjdump -sass {path}: {err.strip()}")
    if "deprecated" in err or "fatal" in err:
        raise RuntimeError(f"cuobjdump -sass {path}: {err.strip()}")
    return {name: [ins for _, ins in body] for name, body in parse_sass_text(out).items()}


def parse_sass_text(text, rename=lambda mangled: mangled):
    """{name: [(address, instruction text), ...]} from cuobjdump -sass output; `rename` maps a
    mangled function name to the key to use, or None to leave the function out."""
    funcs, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            name = rename(m.group(1))
            cur = funcs.setdefault(name, []) if name is not None else None
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
        if m and cur is not None:
            cur.append((int(m.group(1), 16), m.group(2).strip()))
    return funcs


def opcode(instr):
    toks = instr.split()
    if toks and toks[0].startswith("@"):
        toks = toks[1:]
    return toks[0] if toks else ""


def source_kernels(root):
    kernels = {}
    # scripts/ holds standalone maintainer kernels (independent peak and copy kernels built by
    # hand on a GPU machine), not code of the nodebench binary.
    skip = {".git", "__pycache__", "scripts"}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in skip and not d.startswith("build")
                       and not d.startswith(".")]
        for f in filenames:
            if f.endswith((".cu", ".cuh")) and not f.endswith(ARCH_SPECIFIC_SUFFIXES):
                p = Path(dirpath) / f
                text = p.read_text(errors="replace")
                text = re.sub(r"//[^\n]*", "", text)
                text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
                for m in KERNEL_RE.finditer(text):
                    kernels.setdefault(m.group(2), (p.relative_to(root), bool(m.group(1))))
    return kernels


def cache_archs(build_dir):
    cache = Path(build_dir) / "CMakeCache.txt"
    if not cache.exists():
        return None
    m = re.search(r"^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=(.*)$", cache.read_text(), re.M)
    return m.group(1).strip() if m else None


def check_artifact_sass(rep, cuobjdump, path, required):
    archs, rc, err = list_elf(cuobjdump, path)
    name = path.name
    if not archs:
        if required:
            rep.fail(f"{name}: no device code at all ({err.strip() or 'cuobjdump found none'})")
        return None
    have = sorted(set(archs))
    if TARGET in have:
        rep.ok(f"{name}: {TARGET} SASS present ({archs.count(TARGET)} cubin(s); all SASS archs: {', '.join(have)})")
    else:
        ptx = sorted(set(list_ptx(cuobjdump, path)))
        rep.fail(f"{name}: no {TARGET} SASS (SASS for {', '.join(have)}; PTX for {', '.join(ptx) or 'none'})")
        return None
    return sass_functions(cuobjdump, path, TARGET)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build_dir")
    ap.add_argument("--cuobjdump")
    ap.add_argument("--source-root", default=str(Path(__file__).resolve().parents[3]))
    ap.add_argument("--libs", action="append", default=[],
                    help="directory of CUDA libraries (cuBLAS, cuDNN, NCCL) that must carry P40 code")
    args = ap.parse_args()

    build = Path(args.build_dir)
    binary = build / "nodebench"
    if not binary.is_file():
        print(f"check_sm61: {binary} not found: build first (scripts/build-cuda12.sh)")
        return 2
    cuobjdump, release = find_cuobjdump(args.cuobjdump)
    if not cuobjdump:
        print("check_sm61: no CUDA 12 cuobjdump found: pass --cuobjdump or set CUDA_HOME to a CUDA 12 "
              "toolkit (scripts/build-cuda12.sh --print-toolkit prints one)")
        return 2
    print(f"check_sm61: {cuobjdump} ({release}); build {build}")
    rep = Report()

    # 1. sm_61 SASS in the binary and the static libraries.
    print(f"[1] {TARGET} machine code in the artefacts")
    bin_funcs = check_artifact_sass(rep, cuobjdump, binary, required=True) or {}
    lib_funcs = {}
    statics = sorted(p for p in build.rglob("*.a") if "CMakeFiles" not in p.parts)
    for lib in statics:
        f = check_artifact_sass(rep, cuobjdump, lib, required=lib.name.startswith("libnb_kernels_"))
        if f:
            lib_funcs.update(f)
    if not any(p.name.startswith("libnb_kernels_") for p in statics):
        rep.fail("no libnb_kernels_*.a (kernels/<family>/ libraries) found in the build directory")

    all_funcs = dict(bin_funcs)
    all_funcs.update({k: v for k, v in lib_funcs.items() if k not in all_funcs})
    dem = demangle(list(all_funcs))
    by_base = {}
    for mangled, instrs in all_funcs.items():
        by_base.setdefault(base_name(dem.get(mangled, mangled)), []).append((mangled, instrs))
    bin_bases = {base_name(dem.get(m, m)) for m in bin_funcs}

    # 2. every kernel of the sources has sm_61 code in the binary.
    print(f"[2] every __global__ kernel of the sources has {TARGET} SASS in nodebench")
    kernels = source_kernels(Path(args.source_root))
    if not kernels:
        rep.fail(f"no __global__ kernels found under {args.source_root}")
    missing, tmpl_missing = [], []
    for k, (src, is_template) in sorted(kernels.items()):
        if k in bin_bases:
            continue
        (tmpl_missing if is_template else missing).append(f"{k} ({src})")
    if missing:
        rep.fail(f"kernels without {TARGET} SASS in nodebench: {', '.join(missing)}")
    else:
        rep.ok(f"all {len(kernels) - len(tmpl_missing)} kernels found in {TARGET} SASS: "
               f"{', '.join(sorted(k for k in kernels if k in bin_bases))}")
    if tmpl_missing:
        Report.info(f"kernel templates with no {TARGET} instantiation in nodebench: {', '.join(tmpl_missing)}")

    # 3. no instruction a P40 lacks.
    print(f"[3] {TARGET} SASS uses nothing a P40 lacks (tensor cores, ldmatrix, BF16/TF32/FP8)")
    bad = []
    n_instr = 0
    traps = []
    for base, items in sorted(by_base.items()):
        for mangled, instrs in items:
            n_instr += len(instrs)
            for ins in instrs:
                op = opcode(ins)
                if op.split(".")[0] in FORBIDDEN_OPCODES or FORBIDDEN_TYPES.search(ins):
                    bad.append(f"{base}: {ins}")
            if any(opcode(i).startswith("BPT.TRAP") for i in instrs):
                traps.append(base)
    if bad:
        rep.fail(f"{len(bad)} instruction(s) a P40 cannot execute, e.g. " + "; ".join(bad[:8]))
    elif n_instr == 0:
        rep.fail(f"no {TARGET} instructions could be read (cuobjdump output changed?)")
    else:
        rep.ok(f"{n_instr} {TARGET} instructions in {len(all_funcs)} functions: none needs sm_70+ "
               "(HMMA/IMMA/DMMA/*GMMA/LDSM) or BF16/TF32/FP8 types")
    if traps:
        Report.info(f"kernels that trap on {TARGET} (the host must not launch them on a P40): "
                    f"{', '.join(sorted(set(traps)))}")

    # 4. the binary has the architectures the build asked for.
    print("[4] the binary holds every architecture of CMAKE_CUDA_ARCHITECTURES")
    spec = cache_archs(build)
    if spec:
        have_sass = set(list_elf(cuobjdump, binary)[0])
        have_ptx = set(list_ptx(cuobjdump, binary))
        want_missing = []
        for item in re.split(r"[;,\s]+", spec):
            m = re.match(r"(\d+)(?:-(real|virtual))?$", item)
            if not m:
                continue
            sm = f"sm_{m.group(1)}"
            if m.group(2) != "virtual" and sm not in have_sass:
                want_missing.append(f"{sm} SASS")
            if m.group(2) in (None, "virtual") and sm not in have_ptx:
                want_missing.append(f"compute_{m.group(1)} PTX")
        if want_missing:
            rep.fail(f"CMAKE_CUDA_ARCHITECTURES={spec} but nodebench lacks {', '.join(want_missing)}")
        else:
            rep.ok(f"CMAKE_CUDA_ARCHITECTURES={spec}: SASS {', '.join(sorted(have_sass))}; "
                   f"PTX {', '.join(sorted(have_ptx)) or 'none'}")
    else:
        Report.info("no CMakeCache.txt: architecture list not checked")

    # 5. the CUDA libraries the binary loads carry P40 code.
    if args.libs:
        print("[5] CUDA libraries carry code a P40 can run (sm_60/sm_61 SASS or PTX <= compute_61)")
        seen = set()
        for d in args.libs:
            for p in sorted(Path(d).glob("lib*.so*")):
                real = p.resolve()
                if real in seen or not real.is_file():
                    continue
                seen.add(real)
                archs, _, _ = list_elf(cuobjdump, p)
                if not archs:
                    continue
                ptx = set(list_ptx(cuobjdump, p))
                runnable = sorted({a for a in archs if a in ("sm_60", "sm_61")} |
                                  {a for a in ptx if a in ("sm_50", "sm_52", "sm_53", "sm_60", "sm_61")})
                if runnable:
                    rep.ok(f"{real.name}: {', '.join(runnable)} code ({len(archs)} cubins in all)")
                else:
                    rep.fail(f"{real.name}: nothing a P40 can run (SASS for {', '.join(sorted(set(archs)))})")

    print(f"check_sm61: {rep.passed} passed, {rep.failed} failed")
    if rep.failed:
        print("check_sm61: FAILED: this build would not run correctly on a Tesla P40 (see FAIL lines)")
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
