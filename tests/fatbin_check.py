#!/usr/bin/env python3
"""`nodebench fatbin` against what nvcc was asked to build and against cuobjdump.

usage: fatbin_check.py own --nodebench BIN --nvcc NVCC --workdir DIR [--cuobjdump CUOBJDUMP]
       fatbin_check.py toolkit --nodebench BIN --cuobjdump CUOBJDUMP --libs DIR...

own:     builds a tiny library with known -gencode architectures and checks
         that `nodebench fatbin --json` lists exactly those (and, where cuobjdump exists, the same
         as `cuobjdump --list-elf/--list-ptx`); then truncated, corrupted and garbage copies
         exit 2 with a message naming the file, never a crash or a hang.
toolkit: the CUDA libraries of a toolkit (cuBLASLt, cuDNN's operation libraries, NCCL) against
         cuobjdump. Exit 77 (skipped) when cuobjdump or the libraries are not there.
"""
import argparse
import glob
import json
import os
import random
import re
import subprocess
import sys

SKIP = 77


def run(cmd, timeout=120):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def fatbin_json(nodebench, files):
    p = run([nodebench, "fatbin", "--json", *files])
    if p.returncode != 0:
        raise SystemExit(f"FAIL: nodebench fatbin {files} exited {p.returncode}: {p.stderr}")
    return [json.loads(line) for line in p.stdout.splitlines()]


def cuobjdump_sets(cuobjdump, path):
    """(SASS, PTX) names as cuobjdump lists them: 'x.1.sm_90a.cubin' -> sm_90a, 'x.sm_90.ptx' -> compute_90."""
    sets = []
    for flag, suffix in (("--list-elf", "cubin"), ("--list-ptx", "ptx")):
        p = run([cuobjdump, flag, path], timeout=300)
        # cuobjdump says so and exits non-zero when a file has no device code of that kind.
        if p.returncode != 0 and "does not contain" not in (p.stdout + p.stderr):
            raise SystemExit(f"FAIL: {cuobjdump} {flag} {path} exited {p.returncode}: {p.stderr[-500:]}")
        found = set()
        for m in re.finditer(r"\.sm_(\d+[af]?)\." + suffix + r"\b", p.stdout):
            found.add(("sm_" if suffix == "cubin" else "compute_") + m.group(1))
        sets.append(found)
    return sets


def nvcc_archs(nvcc):
    p = run([nvcc, "--list-gpu-code"])
    return set(p.stdout.split()) if p.returncode == 0 else set()


def build(nvcc, workdir, gencodes, out, extra):
    src = os.path.join(workdir, "fatbin_probe.cu")
    with open(src, "w") as f:
        f.write("__global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }\n"
                "extern \"C\" void launch_twice(float* x) { twice<<<1, 32>>>(x); }\n")
    cmd = [nvcc, *extra, src, "-o", out]
    for arch, code in gencodes:
        cmd += ["-gencode", f"arch={arch},code={code}"]
    p = run(cmd, timeout=300)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)}: {p.stderr[-2000:]}")


def expect_sets(got, sass, ptx, what):
    ok = True
    if sorted(got["sass"]) != sorted(sass):
        print(f"FAIL: {what}: SASS {got['sass']}, expected {sorted(sass)}")
        ok = False
    if sorted(got["ptx"]) != sorted(ptx):
        print(f"FAIL: {what}: PTX {got['ptx']}, expected {sorted(ptx)}")
        ok = False
    if ok:
        print(f"ok: {what}: SASS {got['sass']}, PTX {got['ptx']}")
    return ok


def strip_family(names):
    return {n[:-1] if n.endswith("f") else n for n in names}


def against_cuobjdump(nodebench, cuobjdump, files):
    ok = True
    for got in fatbin_json(nodebench, files):
        sass, ptx = cuobjdump_sets(cuobjdump, got["file"])
        what = f"{os.path.basename(got['file'])} against cuobjdump"
        # The family-specific variant ('f', CUDA 12.9 and newer) is a flag of the fatbin entry; a
        # cuobjdump that names no 'f' entry is compared by architecture for those (said so).
        mine_f = any(n.endswith("f") for n in got["sass"] + got["ptx"])
        if mine_f and not any(n.endswith("f") for n in sass | ptx):
            print(f"note: {what}: cuobjdump names no family-specific ('f') entry; those compared without the suffix")
            got = dict(got, sass=sorted(strip_family(got["sass"])), ptx=sorted(strip_family(got["ptx"])))
        ok &= expect_sets(got, sass, ptx, what)
    return ok


def bad_inputs(nodebench, lib, workdir):
    """Every bad copy exits 2 naming the file; corruptions exit 0 or 2, never by a signal or a hang."""
    data = open(lib, "rb").read()
    ok = True

    def check(name, blob, codes, pattern):
        nonlocal ok
        path = os.path.join(workdir, name)
        with open(path, "wb") as f:
            f.write(blob)
        try:
            p = run([nodebench, "fatbin", path], timeout=30)
        except subprocess.TimeoutExpired:
            print(f"FAIL: {name}: nodebench fatbin did not return in 30 s")
            ok = False
            return
        if p.returncode not in codes or (p.returncode == 2 and not re.search(pattern, p.stderr)) or \
                (p.returncode == 2 and path not in p.stderr):
            print(f"FAIL: {name}: exit {p.returncode} (expected {codes}), stderr {p.stderr[-300:]!r}")
            ok = False

    magic = (0xBA55ED50).to_bytes(4, "little")
    at = data.find(magic)
    if at < 0:
        raise SystemExit(f"FAIL: no fatbin magic in {lib}")
    # Cut: inside the ELF header, inside the fatbin, just before the section headers at the end.
    for n in (0, 3, 40, at + 8, at + 40, len(data) // 2, len(data) - 1):
        check(f"cut_{n}.so", data[:n], (2,), r"truncated|empty|not an ELF")
    big = bytearray(data)
    big[at + 8:at + 16] = (1 << 50).to_bytes(8, "little")  # the container claims more than its section
    check("fat_size.so", bytes(big), (2,), r"truncated: the fatbin container at offset")
    bad = bytearray(data)
    bad[at + 16 + 4:at + 16 + 8] = (3).to_bytes(4, "little")  # the first entry's header size
    check("entry_header.so", bytes(bad), (2,), r"bad header size 3")
    check("garbage.so", bytes(random.Random(1).getrandbits(8) for _ in range(4096)), (2,), r"not an ELF file nor a fatbin")
    # Random corruption of the fatbin bytes, fixed seed.
    rnd = random.Random(44)
    for i in range(16):
        blob = bytearray(data)
        for _ in range(8):
            j = at + rnd.randrange(0, 512)
            blob[j] = rnd.randrange(256)
        check(f"flip_{i}.so", bytes(blob), (0, 2), r".")
    # Several files: the good one is listed, the bad one named, exit 2.
    p = run([nodebench, "fatbin", "--json", lib, os.path.join(workdir, "garbage.so")])
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    if p.returncode != 2 or len(lines) != 2 or "sass" not in lines[0] or "error" not in lines[1]:
        print(f"FAIL: a good and a bad file: exit {p.returncode}, {p.stdout!r}")
        ok = False
    if ok:
        print("ok: truncated, corrupted and garbage files: exit 2 with the file named, no crash")
    return ok


def cmd_own(a):
    os.makedirs(a.workdir, exist_ok=True)
    have = nvcc_archs(a.nvcc)
    # sm_75 and sm_90 SASS with compute_90 PTX; sm_90a (arch-specific) where nvcc knows it;
    # sm_61 where the nvcc still builds it (CUDA 12).
    gencodes = [("compute_75", "sm_75"), ("compute_90", "sm_90"), ("compute_90", "compute_90")]
    sass, ptx = {"sm_75", "sm_90"}, {"compute_90"}
    if "sm_90a" in have:
        gencodes.append(("compute_90a", "sm_90a"))
        sass.add("sm_90a")
    if "sm_61" in have:
        gencodes.append(("compute_61", "sm_61"))
        sass.add("sm_61")
    # One nvcc call (the slow part); __nv_relfatbin is covered by tests/test_fatbin.cpp.
    lib = os.path.join(a.workdir, "libfatbin_probe.so")
    build(a.nvcc, a.workdir, gencodes, lib, ["-shared", "-Xcompiler", "-fPIC"])
    (got_lib,) = fatbin_json(a.nodebench, [lib])
    ok = expect_sets(got_lib, sass, ptx, "the library built for " + ",".join(c for _, c in gencodes))
    text = run([a.nodebench, "fatbin", lib])
    # The text form lists the same SASS set in order (sm_61 too in a CUDA 12 build).
    want_sass = "SASS " + ", ".join(sorted(sass, key=lambda x: (int("".join(ch for ch in x if ch.isdigit())), x)))
    if text.returncode != 0 or want_sass not in text.stdout or "PTX compute_90" not in text.stdout:
        print(f"FAIL: the text form: {text.stdout!r}")
        ok = False
    ok &= bad_inputs(a.nodebench, lib, a.workdir)
    if a.cuobjdump and os.access(a.cuobjdump, os.X_OK):
        ok &= against_cuobjdump(a.nodebench, a.cuobjdump, [lib])
    else:
        print(f"note: no cuobjdump ({a.cuobjdump or 'not given'}): the comparison with it is skipped")
    return 0 if ok else 1


def cmd_toolkit(a):
    if not a.cuobjdump or not os.access(a.cuobjdump, os.X_OK):
        print(f"skipped: no cuobjdump at {a.cuobjdump!r} to compare with (this toolkit ships none)")
        return SKIP
    libs = []
    for pattern in ("libcublasLt.so.*", "libcudnn_ops.so.*", "libcudnn_cnn.so.*", "libnccl.so.*"):
        # The cached toolkit's lib64 holds links into the wheels: read each library once, by its target.
        found = sorted({os.path.realpath(p) for d in a.libs for p in glob.glob(os.path.join(d, pattern))
                        if os.path.isfile(p)})
        libs += found[:1]
    if not libs:
        print(f"skipped: none of cuBLASLt, cuDNN, NCCL under {' '.join(a.libs)}")
        return SKIP
    return 0 if against_cuobjdump(a.nodebench, a.cuobjdump, libs) else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["own", "toolkit"])
    ap.add_argument("--nodebench", required=True)
    ap.add_argument("--nvcc")
    ap.add_argument("--cuobjdump")
    ap.add_argument("--workdir")
    ap.add_argument("--libs", nargs="+", default=[])
    a = ap.parse_args()
    return cmd_own(a) if a.mode == "own" else cmd_toolkit(a)


if __name__ == "__main__":
    sys.exit(main())
