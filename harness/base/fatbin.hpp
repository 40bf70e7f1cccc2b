// The GPU code a CUDA library carries, read from its fatbin headers: which architectures have
// SASS (machine code) and which have PTX (JIT-compilable), without cuobjdump or a GPU.
//
// A library or object (ELF64, little-endian: x86-64 or aarch64) keeps its device code in the
// sections .nv_fatbin (and __nv_relfatbin in objects built with -rdc). Each section holds one or
// more fatbin containers: a 16-byte header (magic 0xBA55ED50, version, header size, size of what
// follows) and then entries, each with its own header (kind: 1 PTX, 2 ELF/SASS; header size;
// payload size; the architecture as cc*10; flags: arch-specific "a", family "f", compression).
// Only headers are read, each read bounded by the file's size; a bad or truncated file is an
// nb::Error naming the file and what is wrong, never a crash or a read past the end.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace nb {

// One architecture of device code: cc as major*10+minor (61, 90, 100, 121) and its variant:
// 0 for portable code, 'a' for arch-specific (sm_90a: runs only on cc 9.0), 'f' for
// family-specific (sm_100f: runs on the 10.x GPUs of that family from 10.0 up).
struct FatbinArch {
  int cc = 0;
  char variant = 0;
  auto operator<=>(const FatbinArch&) const = default;
};
// "sm_90a" (SASS) or "compute_90" (PTX).
std::string fatbin_arch_name(const FatbinArch& a, bool ptx);

struct FatbinEntryInfo {
  int kind = 0;            // 1 PTX, 2 ELF (SASS), other kinds (LTO IR, ...) kept as found
  FatbinArch arch;
  std::uint64_t flags = 0;
  bool compressed = false;
  std::uint64_t payload_bytes = 0;
  std::string section;     // ".nv_fatbin" or "__nv_relfatbin"
};

struct FatbinContents {
  std::string file;
  std::set<FatbinArch> sass;   // kind 2
  std::set<FatbinArch> ptx;    // kind 1
  std::vector<std::string> sections;  // the fatbin sections found ("" for a bare fatbin file)
  int containers = 0;
  std::vector<FatbinEntryInfo> entries;
  int other_entries = 0;       // entries of a kind other than PTX or SASS
};

// Reads `path`: an ELF64 little-endian library, executable or object, or a bare fatbin file (as
// `nvcc -fatbin` writes). A file without fatbin sections gives empty sets. Throws nb::Error naming
// `path`: missing, a folder, not ELF64 nor a fatbin, truncated, or headers that do not add up.
FatbinContents read_fatbin(const std::string& path);

// The same from bytes in memory (the tests' truncated and garbage inputs); `name` for messages.
FatbinContents read_fatbin_bytes(const std::string& bytes, const std::string& name);

// Bounds: a file may hold at most this many fatbin entries and containers (the largest CUDA
// libraries hold tens of thousands); headers larger than kFatbinMaxHeader are refused.
constexpr std::uint64_t kFatbinMaxEntries = 1u << 22;
constexpr std::uint32_t kFatbinMaxHeader = 4096;

}  // namespace nb
