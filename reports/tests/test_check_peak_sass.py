"""scripts/dev/checks/check_peak_sass.py on synthetic machine code: the wgmma loops (opcode, operations per
source iteration, serialization), the FP8 mma.sync loop, the BF16 HFMA2.MMA split, and the per-image
split of a cuobjdump dump. Each expectation is written here from the instruction shapes."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

DEV = Path(__file__).resolve().parents[2] / "scripts" / "dev" / "checks"
sys.path.insert(0, str(DEV))
_spec = importlib.util.spec_from_file_location("check_peak_sass", DEV / "check_peak_sass.py")
cps = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cps)


def loop(body, step, start=0x100):
    """(address, instruction) pairs: a prologue, `body`, the counter step and a backward branch."""
    ins = [(start - 0x10, "MOV R0, 0x1")]
    addr = start
    for text in body + [f"VIADD R6, R6, {hex((1 << 32) - step)}"]:
        ins.append((addr, text))
        addr += 0x10
    ins.append((addr, f"@P2 BRA {hex(start)}"))
    ins.append((addr + 0x10, "EXIT"))
    return ins


def gmma_group(op="HGMMA.64x256x16.F32", n=4):
    return ["WARPGROUP.ARRIVE"] + [f"{op} R24, gdesc[UR4], R24"] * n + ["WARPGROUP.DEPBAR.LE gsb0, 0x1"]


def test_wgmma_loop_with_the_counted_operations_passes():
    # 4 iterations unrolled: 16 x m64n256k16 = 16 * 2*64*256*16 operations over 4 iterations.
    ok, msg = cps.check_function("wgmma_fp16_kernel", loop(gmma_group() * 4, 4), "sm_90a")
    assert ok is True, msg
    assert "2097152" in msg


def test_wgmma_loop_issuing_fewer_mma_than_counted_fails():
    ok, msg = cps.check_function("wgmma_fp16_kernel", loop(gmma_group(n=3) * 4, 4), "sm_90a")
    assert ok is False, msg


def test_serialized_wgmma_fails():
    # ptxas's serialization puts a wait behind every warpgroup MMA.
    body = []
    for _ in range(16):
        body += ["HGMMA.64x256x16.F32 R24, gdesc[UR4], R24, gsb0", "WARPGROUP.DEPBAR.LE gsb0, 0x0"]
    ok, msg = cps.check_function("wgmma_fp16_kernel", loop(body, 4), "sm_90a")
    assert ok is False
    assert "serialized" in msg


def test_wrong_warpgroup_mma_kind_fails():
    # The INT8 kernel must issue IGMMA: an HGMMA of the same operation count is not it.
    ok, msg = cps.check_function("wgmma_int8_kernel", loop(gmma_group("HGMMA.64x256x32.F32") * 4, 4), "sm_90a")
    assert ok is False
    assert "IGMMA" in msg
    ok, msg = cps.check_function("wgmma_int8_kernel", loop(gmma_group("IGMMA.64x256x32.S8.S8") * 4, 4), "sm_90a")
    assert ok is True, msg


def test_tf32_and_fp8_counts_follow_their_k():
    ok, _ = cps.check_function("wgmma_tf32_kernel", loop(gmma_group("HGMMA.64x256x8.F32.TF32") * 4, 4), "sm_90a")
    assert ok is True
    # A k16 shape in the TF32 kernel would do twice the counted work per iteration.
    ok, _ = cps.check_function("wgmma_tf32_kernel", loop(gmma_group("HGMMA.64x256x16.F32") * 4, 4), "sm_90a")
    assert ok is False
    ok, _ = cps.check_function("wgmma_fp8_kernel", loop(gmma_group("QGMMA.64x256x32.F32.E4M3.E4M3") * 2, 2), "sm_90a")
    assert ok is True


def test_fp8_mma_sync_checked_where_native_only():
    qmma = ["QMMA.16832.F32.E4M3.E4M3 R36, R24.ROW, R2.COL, R36"] * 32  # 8 accumulators x 4 iterations
    ok, msg = cps.check_function("mma_fp8_kernel", loop(qmma, 4), "sm_89")
    assert ok is True, msg
    ok, _ = cps.check_function("mma_fp8_kernel", loop(qmma[:16], 4), "sm_89")
    assert ok is False
    ok, msg = cps.check_function("mma_fp8_kernel", loop(["HMMA.16816.F32 R20, R12, R36, RZ"] * 2, 1), "sm_90")
    assert ok is None and "not launched" in msg


def test_bf16_split_counts_the_bf16_form_of_hfma2_mma():
    body = ["HFMA2.BF16_V2 R1, R1, R2, R3"] * 64 + ["HFMA2.MMA.BF16_V2 R4, R4, R2, R3"] * 64
    ok, msg = cps.check_function("bf16fma2_kernel", loop(body, 16), "sm_90", (13, 0))
    assert ok is True, msg
    assert "64 of them HFMA2.MMA" in msg


def test_only_arch_keeps_the_asked_image():
    dump = "\n".join(["Fatbin elf code:", "arch = sm_90a", "  Function : a_sm90a",
                      "Fatbin elf code:", "arch = sm_90", "  Function : b_sm90"])
    assert "a_sm90a" in cps.only_arch(dump, "sm_90a") and "b_sm90" not in cps.only_arch(dump, "sm_90a")
    assert "b_sm90" in cps.only_arch(dump, "sm_90") and "a_sm90a" not in cps.only_arch(dump, "sm_90")
