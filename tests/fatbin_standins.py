"""Fake CUDA libraries for the framework check's tests: ELF64 files whose .nv_fatbin holds entries
of chosen architectures (what the check reads to say which GPUs a wheel's code runs on)."""
import struct


def fatbin(entries):
    """entries: [(kind, arch, flags)], kind 1 PTX, 2 SASS; flags 0x100000 arch-specific."""
    body = b""
    for kind, arch, flags in entries:
        payload = b"\xab" * 16
        h = struct.pack("<HHIQIIHHIIIQQQ", kind, 0x0101, 64, len(payload), 0, 0, 0, 0, arch, 0, 0, flags | 0x11, 0, 0)
        assert len(h) == 64
        body += h + payload
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def elf_with_fatbin(data):
    names = b"\0.nv_fatbin\0.shstrtab\0"
    head = bytearray(64)
    head[0:7] = b"\x7fELF\x02\x01\x01"
    out = bytes(head) + data
    names_at = len(out)
    out += names
    out += b"\0" * (-len(out) % 8)
    sh_at = len(out)
    sh = bytearray(3 * 64)
    struct.pack_into("<IIQQQQ", sh, 64, 1, 1, 0, 0, 64, len(data))
    struct.pack_into("<IIQQQQ", sh, 128, 12, 3, 0, 0, names_at, len(names))
    out = bytearray(out + bytes(sh))
    struct.pack_into("<HH", out, 0x10, 3, 62)
    struct.pack_into("<Q", out, 0x28, sh_at)
    struct.pack_into("<HHHHH", out, 0x34, 64, 0, 0, 64, 3)
    struct.pack_into("<H", out, 0x3E, 2)
    return bytes(out)


def sass(*ccs):
    return [(2, c, 0) for c in ccs]


def ptx(*ccs):
    return [(1, c, 0) for c in ccs]
