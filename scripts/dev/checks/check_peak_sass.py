#!/usr/bin/env python3
"""Checks that the peak-arithmetic kernels issue the instructions their FLOP counts assume.

The peak family reports operations per second from a count per loop iteration
(kernels/peak/peak_kernels.cu, peak_ops_per_thread_iter). That count is only true when the compiler
keeps every operation: a result that is never used is dead code, and a tensor-core kernel that
summed one element of each accumulator lost half its HMMA instructions and reported 123% of
the tensor cores' peak. This script reads the machine code (cuobjdump -sass) and checks, for
every architecture in the binary, the main loop of each peak kernel:

  * scalar kernels (FFMA, HFMA2, BF16 HFMA2, DFMA, DP4A/IDP, IMAD): the unit's instruction is at
    least 95% of the loop's instructions (the rest, counter and branch, takes issue slots);
    where the datasheet's FP16 rate (sm_80, sm_90) and BF16 rate (sm_90) need it, about half of
    the HFMA2 issue as HFMA2.MMA; CUDA 12.4's ptxas does not split the BF16 kernel, which is
    then a WARN (a CUDA 12 build reads BF16 FMA2 at half the rate on Hopper), not a failure;
  * tensor-core kernels (sm_75+ IMMA, sm_80+ HMMA, sm_89 QMMA for FP8): the operations the
    loop's MMA instructions perform, per source iteration (the loop counter's step), equal the
    count the FLOP rate uses; the FP8 mma.sync kernel is not checked on sm_90 to sm_11x, where it
    is never launched (wgmma on 9.0; 10.x/11.x have no warp-level FP8 MMA and skip the case);
  * the wgmma kernels, in the sm_90a image (the only one they are built for; a binary with sm_90
    code must hold it): each loop issues its unit's warpgroup MMA (HGMMA for FP16/BF16/TF32,
    IGMMA for INT8, QGMMA for FP8), whose operations per source iteration equal the count, with
    at least WGMMA_PER_WAIT of them between two WARPGROUP.DEPBAR waits (ptxas did not serialize
    them, which it does, with a warning, when it cannot prove the pipeline safe).

Usage: check_peak_sass.py BINARY [--cuobjdump PATH] [--arch sm_90 ...]
A CUDA 13 cuobjdump (with its nvdisasm on PATH) serves a binary without code below sm_75; sm_61
and sm_70 need a CUDA 12 one. Loops of sm_100 and newer are not read (their uniform-register loop
counters differ).
Exit status: 0 all checks passed; 1 a check failed; 2 usage error or no usable cuobjdump.
"""
import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_sm61 import find_cuobjdump, list_elf, opcode, parse_sass_text, run  # noqa: E402

# Scalar kernels: the opcode that does the work.
SCALAR = {"ffma_kernel": "FFMA", "hfma2_kernel": "HFMA2", "bf16fma2_kernel": "HFMA2",
          "dfma_kernel": "DFMA", "dp4a_kernel": "IDP", "imad_kernel": "IMAD"}
# Tensor-core kernels: operations per warp per source iteration (4 accumulators of a 16x16xK
# WMMA tile: 4 * 2 * 16 * 16 * K), as peak_ops_per_thread_iter counts them (times 32 lanes).
MMA = {"mma_fp16_kernel": 4 * 2 * 16 * 16 * 16, "mma_bf16_kernel": 4 * 2 * 16 * 16 * 16,
       "mma_int8_kernel": 4 * 2 * 16 * 16 * 16, "mma_tf32_kernel": 4 * 2 * 16 * 16 * 8,
       "mma_fp8_kernel": 8 * 2 * 16 * 8 * 32}  # 8 accumulators of m16n8k32
# Architectures whose FP8 mma.sync is not a native instruction (ptxas converts it to FP16 MMA):
# the FP8 kernel is never launched there.
FP8_SYNC_NOT_LAUNCHED = range(90, 120)
# wgmma kernels: the GMMA opcode each must issue and the operations per warpgroup per source
# iteration (kWgmmaPerIter = 4 wgmma m64n256kK each iteration: 4 * 2 * 64 * 256 * K).
WGMMA = {"wgmma_fp16_kernel": ("HGMMA", 4 * 2 * 64 * 256 * 16), "wgmma_bf16_kernel": ("HGMMA", 4 * 2 * 64 * 256 * 16),
         "wgmma_tf32_kernel": ("HGMMA", 4 * 2 * 64 * 256 * 8), "wgmma_int8_kernel": ("IGMMA", 4 * 2 * 64 * 256 * 32),
         "wgmma_fp8_kernel": ("QGMMA", 4 * 2 * 64 * 256 * 32)}
WGMMA_PER_WAIT = 4
MIN_SCALAR_SHARE = 0.95
# Where the datasheet's non-tensor FP16 (and, on Hopper, BF16) rate is twice the FFMA rate, ptxas
# reaches it by issuing about half of the HFMA2 as HFMA2.MMA (on the tensor pipe): a loop of
# plain HFMA2 runs at half the rate. Kernel -> architectures where both forms must appear.
MMA_SPLIT = {"hfma2_kernel": (80, 90), "bf16fma2_kernel": (90,)}
MIN_MMA_SPLIT_SHARE = 0.3
# The oldest toolkit whose ptxas is known to split a kernel's HFMA2 (CUDA 12.4 splits the FP16
# kernel on sm_80 and sm_90 but keeps every BF16 HFMA2 on the FMA pipe; CUDA 13 splits both).
# Below it a missing split is a warning: such a build measures that unit at half the rate.
MMA_SPLIT_MIN_RELEASE = {"bf16fma2_kernel": (13, 0)}
MIN_MMA_SPLIT_SHARE = 0.3


def parse_sass(text):
    """{kernel short name: [(address, instruction), ...]} for the peak kernels in one SASS dump."""
    pattern = re.compile(r"\d(" + "|".join(sorted(set(SCALAR) | set(MMA) | set(WGMMA))) + r")E")

    def rename(mangled):
        k = pattern.search(mangled)
        return k.group(1) if k else None

    return parse_sass_text(text, rename)


def only_arch(text, arch):
    """The parts of a cuobjdump -sass dump whose "arch = ..." header is exactly `arch` (asked for
    sm_90, cuobjdump also prints the sm_90a image, and the other way round)."""
    keep, out = True, []
    for line in text.splitlines():
        m = re.match(r"\s*arch = (\S+)", line)
        if m:
            keep = m.group(1) == arch
        if keep:
            out.append(line)
    return "\n".join(out)


def main_loop(instrs):
    """The longest backward-branch loop: its instructions, or None."""
    best = None
    for addr, ins in instrs:
        m = re.search(r"\bBRA\s+(?:`?\()?\.?L?_?x?_?(0x[0-9a-f]+)", ins)
        if opcode(ins) == "BRA" and m and int(m.group(1), 16) < addr:
            body = [i for a, i in instrs if int(m.group(1), 16) <= a <= addr]
            if best is None or len(body) > len(best):
                best = body
    return best


def loop_step(body):
    """Source iterations per pass of the loop: the counter's decrement (IADD3/VIADD/UIADD3)."""
    for ins in body:
        op = opcode(ins).split(".")[0]
        if op not in ("IADD3", "UIADD3", "VIADD", "IADD"):
            continue
        for tok in re.findall(r"-0x[0-9a-f]+|\b0x[0-9a-f]+\b", ins):
            v = int(tok, 16) if not tok.startswith("-") else -int(tok[1:], 16)
            if v >= 0x80000000:
                v -= 1 << 32
            if -64 <= v < 0:
                return -v
    return None


def mma_ops(ins):
    """Operations per warp of one MMA instruction, from its shape (HMMA.16816 = m16n8k16)."""
    m = re.match(r"(HMMA|IMMA|QMMA)\.(\d+)", opcode(ins))
    if not m:
        return None
    shape = m.group(2)
    for mm, nn in (("16", "8"), ("8", "8")):
        if shape.startswith(mm + nn):
            k = int(shape[len(mm + nn):])
            return 2 * int(mm) * int(nn) * k
    return None


def gmma_ops(ins):
    """Operations per warpgroup of one warpgroup MMA, from its shape (HGMMA.64x256x16 = m64n256k16)."""
    m = re.match(r"[A-Z]GMMA\.(\d+)x(\d+)x(\d+)", opcode(ins))
    return 2 * int(m.group(1)) * int(m.group(2)) * int(m.group(3)) if m else None


def check_wgmma(name, body, arch):
    """(ok, message) for the main loop of a wgmma kernel."""
    want_op, want = WGMMA[name]
    gmma = [i for i in body if opcode(i).split(".")[0].endswith("GMMA")]
    kinds = sorted({opcode(i).split(".")[0] for i in gmma})
    ops = [gmma_ops(i) for i in gmma]
    step = loop_step(body)
    waits = sum(opcode(i).startswith("WARPGROUP.DEPBAR") for i in body)
    if not gmma or None in ops or not step:
        return False, f"{name} {arch}: cannot read the loop (warpgroup MMA {kinds}, counter step {step})"
    per_iter = sum(ops) / step
    msg = (f"{name} {arch}: {len(gmma)} {'/'.join(kinds)} per {step} iteration(s) = {per_iter:.0f} operations per "
           f"warpgroup-iteration, counted as {want}; {waits} wait(s) in the loop")
    if kinds != [want_op]:
        return False, msg + f" (expected {want_op} only)"
    if waits and len(gmma) / waits < WGMMA_PER_WAIT:
        return False, msg + f" (fewer than {WGMMA_PER_WAIT} per wait: serialized)"
    return per_iter == want, msg


def release_tuple(release):
    m = re.search(r"(\d+)\.(\d+)", release or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def check_function(name, instrs, arch, release=None):
    """(ok, message) for one kernel's SASS, or (None, why) where the check does not apply.
    `release` is the toolkit's (major, minor), where known."""
    arch_n = int(re.sub(r"\D", "", arch) or 0)
    if any(opcode(i).startswith("BPT") for _, i in instrs):
        return None, f"{name} {arch}: a trap (not launched on this architecture)"
    if name == "mma_fp8_kernel" and arch_n in FP8_SYNC_NOT_LAUNCHED:
        return None, f"{name} {arch}: not launched here (wgmma on 9.0; no warp-level FP8 MMA on 10.x/11.x)"
    body = main_loop(instrs)
    if body is None:
        return False, f"{name} {arch}: no loop found"
    if name in WGMMA:
        return check_wgmma(name, body, arch)
    if name in SCALAR:
        # Pascal has no one-instruction 32-bit multiply-add: three XMAD do it (and the rate
        # table claims none for 6.x), so there the loop is checked for XMAD.
        unit = "XMAD" if name == "imad_kernel" and arch_n < 70 else SCALAR[name]
        n = sum(opcode(i).split(".")[0] == unit for i in body)
        share = n / len(body)
        msg = f"{name} {arch}: {n} {unit} of {len(body)} loop instructions ({share:.1%})"
        if arch_n in MMA_SPLIT.get(name, ()):
            m = sum(opcode(i).startswith("HFMA2.MMA") for i in body)  # HFMA2.MMA, HFMA2.MMA.BF16_V2
            msg += f", {m} of them HFMA2.MMA"
            if n == 0 or m / n < MIN_MMA_SPLIT_SHARE:
                need = MMA_SPLIT_MIN_RELEASE.get(name)
                if need and release and release < need:
                    return "warn", msg + (f" (this toolkit's ptxas keeps it on the FMA pipe; from CUDA {need[0]}.{need[1]}"
                                          " it splits: a build with this toolkit measures this unit at half the rate)")
                return False, msg + f" (needs at least {MIN_MMA_SPLIT_SHARE:.0%} on the MMA pipe for the full FP16 rate)"
        return share >= MIN_SCALAR_SHARE, msg
    if arch_n < 75 or (arch_n < 80 and name != "mma_int8_kernel") or (arch_n < 89 and name == "mma_fp8_kernel"):
        return None, f"{name} {arch}: tensor-core shapes of this architecture are not checked"
    ops = [mma_ops(i) for i in body if opcode(i).startswith(("HMMA", "IMMA", "QMMA"))]
    step = loop_step(body)
    if not ops or None in ops or not step:
        return False, f"{name} {arch}: cannot read the loop (MMA shapes {ops}, counter step {step})"
    per_iter = sum(ops) / step
    msg = (f"{name} {arch}: {len(ops)} MMA instructions per {step} iteration(s) = {per_iter:.0f} "
           f"operations per warp-iteration, counted as {MMA[name]}")
    return per_iter == MMA[name], msg


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary", help="the nodebench binary or libnb_kernels_peak.a")
    ap.add_argument("--cuobjdump", help="a cuobjdump (CUDA 12 reads sm_61; found on PATH or CUDA_HOME)")
    ap.add_argument("--arch", action="append", help="architectures to check (default: every sm_XX in the binary)")
    a = ap.parse_args()
    if not Path(a.binary).is_file():
        print(f"check_peak_sass: {a.binary}: no such file", file=sys.stderr)
        return 2
    cuobjdump, release = find_cuobjdump(a.cuobjdump, accept_cuda13=True)
    if not cuobjdump:
        print("check_peak_sass: no cuobjdump found (give --cuobjdump)", file=sys.stderr)
        return 2
    in_binary = sorted(set(list_elf(cuobjdump, a.binary)[0]))
    old = [x for x in (a.arch or in_binary) if int(re.sub(r"\D", "", x) or 0) < 75]
    rel = release_tuple(release)
    if old and rel and rel >= (13, 0):
        print(f"check_peak_sass: {cuobjdump} (CUDA {rel[0]}.{rel[1]}) cannot disassemble {', '.join(old)}: "
              "give a CUDA 12 cuobjdump (--cuobjdump)", file=sys.stderr)
        return 2
    archs = a.arch or in_binary
    failed = passed = 0
    if "sm_90" in in_binary and "sm_90a" not in in_binary:
        print("  FAIL  sm_90 code but no sm_90a image: the wgmma kernels are missing (Hopper's tensor peaks would be skipped)")
        failed += 1
    for arch in archs:
        rc, out, err = run([cuobjdump, "-sass", "-arch", arch, a.binary])
        funcs = parse_sass(only_arch(out, arch))
        # The sm_90a image holds the wgmma kernels alone; every other image holds the rest.
        expected = set(WGMMA) if arch.endswith("a") else set(SCALAR) | set(MMA)
        missing = sorted(expected - set(funcs))
        if missing:
            print(f"  FAIL  {arch}: peak kernels not in the SASS: {', '.join(missing)}")
            failed += 1
        for name in sorted(funcs):
            ok, msg = check_function(name, funcs[name], arch, release_tuple(release))
            if ok is None:
                print(f"  info  {msg}")
            elif ok == "warn":
                print(f"  WARN  {msg}")
            elif ok:
                print(f"  PASS  {msg}")
                passed += 1
            else:
                print(f"  FAIL  {msg}")
                failed += 1
    print(f"check_peak_sass: {passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
