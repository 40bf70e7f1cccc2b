// base/fatbin.hpp on files built here byte by byte: an ELF64 object with a .nv_fatbin section of
// known architectures, then every truncation of it and every single-byte corruption, which must
// give an nb::Error (or a result) and never a crash or a read out of bounds. The reader against
// nvcc's own output and cuobjdump: tests/fatbin_check.py.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/error.hpp"
#include "base/fatbin.hpp"

using namespace nb;

namespace {

void put16(std::string& s, size_t at, std::uint16_t v) {
  for (int i = 0; i < 2; ++i) s[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
void put32(std::string& s, size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) s[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
void put64(std::string& s, size_t at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) s[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

struct Entry {
  int kind;
  int arch;
  std::uint64_t flags;
  std::uint32_t header = 64;
  std::uint64_t payload = 24;
};

// One fatbin container: its header, then each entry's header and payload (filled with 0xAB).
std::string container(const std::vector<Entry>& entries) {
  std::string body;
  for (const Entry& e : entries) {
    std::string h(e.header, '\0');
    put16(h, 0, static_cast<std::uint16_t>(e.kind));
    put16(h, 2, 0x0101);
    put32(h, 4, e.header);
    put64(h, 8, e.payload);
    put32(h, 28, static_cast<std::uint32_t>(e.arch));
    put64(h, 40, e.flags);
    body += h + std::string(e.payload, '\xAB');
  }
  std::string head(16, '\0');
  put32(head, 0, 0xBA55ED50u);
  put16(head, 4, 1);
  put16(head, 6, 16);
  put64(head, 8, body.size());
  return head + body;
}

// An ELF64 little-endian relocatable file with sections: null, `section` (holding `data`), .shstrtab.
std::string elf_with(const std::string& data, const std::string& section = ".nv_fatbin") {
  const std::string names = std::string("\0", 1) + section + std::string("\0", 1) + ".shstrtab" + std::string("\0", 1);
  std::string f(64, '\0');
  f[0] = 0x7f, f[1] = 'E', f[2] = 'L', f[3] = 'F', f[4] = 2, f[5] = 1, f[6] = 1;
  put16(f, 0x10, 1);     // ET_REL
  put16(f, 0x12, 62);    // x86-64
  const size_t data_at = f.size();
  f += data;
  const size_t names_at = f.size();
  f += names;
  while (f.size() % 8) f += '\0';
  const size_t sh_at = f.size();
  std::string sh(3 * 64, '\0');
  put32(sh, 64 + 0, 1);  // name offset of `section`
  put32(sh, 64 + 4, 1);  // SHT_PROGBITS
  put64(sh, 64 + 24, data_at);
  put64(sh, 64 + 32, data.size());
  put32(sh, 128 + 0, static_cast<std::uint32_t>(2 + section.size()));
  put32(sh, 128 + 4, 3);  // SHT_STRTAB
  put64(sh, 128 + 24, names_at);
  put64(sh, 128 + 32, names.size());
  f += sh;
  put64(f, 0x28, sh_at);
  put16(f, 0x34, 64);
  put16(f, 0x3A, 64);
  put16(f, 0x3C, 3);
  put16(f, 0x3E, 2);
  return f;
}

// sm_61, sm_75, sm_90a (arch-specific flag) and sm_100f (family flag) SASS; compute_90 PTX
// (compressed, as nvcc writes it), over two containers with zero padding between them.
std::string sample_fatbin() {
  std::string a = container({{2, 61, 0x11}, {2, 75, 0x11}, {1, 90, 0x8011, 80, 40}});
  std::string b = container({{2, 90, 0x100011}, {2, 100, 0x1200011, 96, 16}, {2, 75, 0x11}});
  return a + std::string(16, '\0') + b;
}

std::vector<std::string> names(const std::set<FatbinArch>& s, bool ptx) {
  std::vector<std::string> out;
  for (const auto& a : s) out.push_back(fatbin_arch_name(a, ptx));
  return out;
}

std::string error_of(const std::string& bytes) {
  try {
    (void)read_fatbin_bytes(bytes, "lib.so");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Fatbin, ElfSectionArchitectures) {
  const FatbinContents c = read_fatbin_bytes(elf_with(sample_fatbin()), "lib.so");
  EXPECT_EQ(names(c.sass, false), (std::vector<std::string>{"sm_61", "sm_75", "sm_90a", "sm_100f"}));
  EXPECT_EQ(names(c.ptx, true), (std::vector<std::string>{"compute_90"}));
  EXPECT_EQ(c.containers, 2);
  ASSERT_EQ(c.entries.size(), 6u);
  EXPECT_TRUE(c.entries[2].compressed);
  EXPECT_FALSE(c.entries[0].compressed);
  EXPECT_EQ(c.sections, (std::vector<std::string>{".nv_fatbin"}));
}

TEST(Fatbin, RelocatableSectionAndBareFatbin) {
  const std::string fb = container({{2, 80, 0x11}, {1, 80, 0x11}});
  const FatbinContents rel = read_fatbin_bytes(elf_with(fb, "__nv_relfatbin"), "k.o");
  EXPECT_EQ(names(rel.sass, false), (std::vector<std::string>{"sm_80"}));
  EXPECT_EQ(rel.sections, (std::vector<std::string>{"__nv_relfatbin"}));
  const FatbinContents bare = read_fatbin_bytes(fb, "k.fatbin");
  EXPECT_EQ(names(bare.ptx, true), (std::vector<std::string>{"compute_80"}));
  // Another section's name: no device code, and no error.
  const FatbinContents none = read_fatbin_bytes(elf_with(fb, ".rodata"), "plain.so");
  EXPECT_TRUE(none.sass.empty() && none.ptx.empty());
  EXPECT_EQ(none.containers, 0);
}

TEST(Fatbin, OtherEntryKindsAreCountedNotNamed) {
  const FatbinContents c = read_fatbin_bytes(container({{2, 86, 0x11}, {4, 86, 0x11}}), "lto.fatbin");
  EXPECT_EQ(c.other_entries, 1);
  EXPECT_EQ(names(c.sass, false), (std::vector<std::string>{"sm_86"}));
  EXPECT_TRUE(c.ptx.empty());
}

TEST(Fatbin, EveryTruncationIsANamedError) {
  const std::string full = elf_with(sample_fatbin());
  ASSERT_EQ(error_of(full), "");
  for (size_t n = 0; n < full.size(); ++n) {
    const std::string e = error_of(full.substr(0, n));
    EXPECT_NE(e, "") << "a file cut to " << n << " of " << full.size() << " bytes was read without an error";
    EXPECT_EQ(e.rfind("lib.so: ", 0), 0u) << e;
  }
  // A bare fatbin cut anywhere but at the end of its first container or in the padding after it.
  const std::string first = container({{2, 61, 0x11}, {2, 75, 0x11}, {1, 90, 0x8011, 80, 40}});
  const std::string bare = sample_fatbin();
  for (size_t n = 1; n < bare.size(); ++n) {
    const std::string e = error_of(bare.substr(0, n));
    if (n >= first.size() && n <= first.size() + 16)
      EXPECT_EQ(e, "") << "cut to " << n << " bytes: a whole container and padding";
    else
      EXPECT_NE(e, "") << "a fatbin cut to " << n << " bytes was read without an error";
  }
}

TEST(Fatbin, SizesThatDoNotAddUpAreErrors) {
  const std::string f = sample_fatbin();
  const auto fails_with = [](std::string bytes, const std::string& what) {
    const std::string e = error_of(bytes);
    EXPECT_NE(e.find(what), std::string::npos) << "expected '" << what << "', got '" << e << "'";
  };
  std::string c = f;
  put64(c, 8, 1ull << 60);  // the container claims more than the file
  fails_with(c, "truncated: the fatbin container at offset 0x0 claims 1152921504606846976 bytes");
  c = f;
  put16(c, 6, 4);  // container header size
  fails_with(c, "bad header size 4");
  c = f;
  put64(c, 16 + 8, ~0ull);  // the first entry's payload
  fails_with(c, "truncated: the fatbin entry at offset 0x10 claims");
  c = f;
  put32(c, 16 + 4, 8);  // the first entry's header size
  fails_with(c, "fatbin entry at offset 0x10 has a bad header size 8");
  c = f;
  put32(c, 16 + 4, 1u << 30);
  fails_with(c, "bad header size 1073741824");
  c = f;
  put32(c, 16 + 28, 0);  // architecture 0
  fails_with(c, "names architecture 0");
  const std::string first = container({{2, 61, 0x11}, {2, 75, 0x11}, {1, 90, 0x8011, 80, 40}});
  c = f;
  c[first.size() + 3] = 1;  // junk in the padding between containers
  fails_with(c, "no fatbin container at offset 0x" );
  // The ELF section's offset past the end of the file.
  std::string e = elf_with(f);
  const size_t sh_at = e.size() - 3 * 64;
  put64(e, sh_at + 64 + 24, 1ull << 40);
  fails_with(e, "section .nv_fatbin (offset 0x10000000000");
  e = elf_with(f);
  put16(e, 0x3C, 60000);  // more section headers than the file holds
  fails_with(e, "60000 sections do not fit in the file");
  e = elf_with(f);
  put16(e, 0x3E, 7);  // the section-name table's index
  fails_with(e, "section-name table index 7 of 3 sections");
}

TEST(Fatbin, CorruptedBytesNeverCrash) {
  // Every byte of the file, in turn, set to 0xFF and to 0x00: a result or an nb::Error, nothing else.
  const std::string full = elf_with(sample_fatbin());
  int errors = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    for (char v : {'\xFF', '\0', '\x7F'}) {
      std::string bad = full;
      bad[i] = v;
      try {
        (void)read_fatbin_bytes(bad, "lib.so");
      } catch (const Error&) {
        ++errors;
      }
    }
  }
  EXPECT_GT(errors, 0);
}

TEST(Fatbin, GarbageAndMissingFiles) {
  EXPECT_NE(error_of("").find("empty"), std::string::npos);
  EXPECT_NE(error_of("hello, world\n").find("not an ELF file nor a fatbin"), std::string::npos);
  EXPECT_NE(error_of("!<arch>\nxxxxxxxx").find("static archive"), std::string::npos);
  std::string elf32 = elf_with(sample_fatbin());
  elf32[4] = 1;
  EXPECT_NE(error_of(elf32).find("32-bit"), std::string::npos);
  try {
    (void)read_fatbin("/nonexistent/libnothing.so");
    ADD_FAILURE() << "a missing file was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/libnothing.so: cannot read"), std::string::npos);
  }
  try {
    (void)read_fatbin(NB_TEST_OUTPUT_DIR);
    ADD_FAILURE() << "a folder was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a folder"), std::string::npos);
  }
  // The same bytes through a file as from memory.
  const std::string path = std::string(NB_TEST_OUTPUT_DIR) + "/fatbin_sample.o";
  std::ofstream(path, std::ios::binary) << elf_with(sample_fatbin());
  EXPECT_EQ(read_fatbin(path).sass, read_fatbin_bytes(elf_with(sample_fatbin()), "x").sass);
}
