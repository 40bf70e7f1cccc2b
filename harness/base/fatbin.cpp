#include "base/fatbin.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.hpp"

namespace nb {
namespace {

constexpr std::uint32_t kFatbinMagic = 0xBA55ED50u;
constexpr std::uint64_t kFlagArchSpecific = 0x100000;  // sm_90a
constexpr std::uint64_t kFlagFamily = 0x200000;        // sm_100f
constexpr std::uint64_t kFlagCompressedOld = 0x2000;
constexpr std::uint64_t kFlagCompressed = 0x8000;
constexpr std::uint32_t kEntryMinHeader = 48;  // kind..flags: what is read below
constexpr std::uint64_t kMaxSections = 1u << 20;

std::string hex(std::uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

// Bounded reads from a file or from memory: every read checks offset and length against the size.
class Source {
 public:
  virtual ~Source() = default;
  virtual std::uint64_t size() const = 0;
  // Exactly n bytes at off, or an Error saying what was cut short.
  void read(std::uint64_t off, std::size_t n, void* dst, const char* what) {
    if (off > size() || n > size() - off)
      throw Error(name_ + ": truncated: " + what + " at offset " + hex(off) + " (" + std::to_string(n) +
                  " bytes) runs past the end of the file (" + std::to_string(size()) + " bytes)");
    read_raw(off, n, dst);
  }
  const std::string& name() const { return name_; }

 protected:
  explicit Source(std::string name) : name_(std::move(name)) {}
  virtual void read_raw(std::uint64_t off, std::size_t n, void* dst) = 0;
  std::string name_;
};

class MemorySource : public Source {
 public:
  MemorySource(const std::string& bytes, std::string name) : Source(std::move(name)), bytes_(bytes) {}
  std::uint64_t size() const override { return bytes_.size(); }

 private:
  void read_raw(std::uint64_t off, std::size_t n, void* dst) override { std::memcpy(dst, bytes_.data() + off, n); }
  const std::string& bytes_;
};

class FileSource : public Source {
 public:
  explicit FileSource(const std::string& path) : Source(path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const auto st = fs::status(path, ec);
    if (ec || !fs::exists(st)) throw Error(path + ": cannot read the file (no such file)");
    if (fs::is_directory(st)) throw Error(path + ": is a folder, not a library or object file");
    if (!fs::is_regular_file(st)) throw Error(path + ": not a regular file");
    f_.open(path, std::ios::binary);
    if (!f_) throw Error(path + ": cannot read the file (" + std::strerror(errno) + ")");
    size_ = fs::file_size(path, ec);
    if (ec) throw Error(path + ": cannot read the file's size (" + ec.message() + ")");
  }
  std::uint64_t size() const override { return size_; }

 private:
  void read_raw(std::uint64_t off, std::size_t n, void* dst) override {
    f_.clear();
    f_.seekg(static_cast<std::streamoff>(off));
    f_.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
    if (!f_ || static_cast<std::size_t>(f_.gcount()) != n)
      throw Error(name_ + ": read error at offset " + hex(off) + " (the file changed while being read?)");
  }
  std::ifstream f_;
  std::uint64_t size_ = 0;
};

// Little-endian fields (the formats are little-endian; so are x86-64 and aarch64 Linux).
std::uint16_t u16(const unsigned char* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }
std::uint32_t u32(const unsigned char* p) { return u16(p) | (static_cast<std::uint32_t>(u16(p + 2)) << 16); }
std::uint64_t u64(const unsigned char* p) { return u32(p) | (static_cast<std::uint64_t>(u32(p + 4)) << 32); }

struct Span {
  std::string name;
  std::uint64_t offset = 0, size = 0;
};

// The fatbin sections of an ELF64 little-endian file.
std::vector<Span> elf_fatbin_sections(Source& src) {
  unsigned char eh[64];
  src.read(0, sizeof eh, eh, "the ELF header");
  if (eh[4] != 2) throw Error(src.name() + ": a 32-bit ELF file; CUDA libraries are ELF64");
  if (eh[5] != 1) throw Error(src.name() + ": a big-endian ELF file; only little-endian (x86-64, aarch64) is read");
  const std::uint64_t shoff = u64(eh + 0x28);
  const std::uint16_t shentsize = u16(eh + 0x3A);
  std::uint64_t shnum = u16(eh + 0x3C);
  std::uint32_t shstrndx = u16(eh + 0x3E);
  if (shoff == 0) return {};  // no section headers (a stripped core-like file): no sections to name
  if (shentsize < 64) throw Error(src.name() + ": bad ELF header: section header size " + std::to_string(shentsize) + " (64 expected)");
  unsigned char sh[64];
  if (shnum == 0 || shstrndx == 0xffff) {  // extended numbering: the real values are in section 0
    src.read(shoff, sizeof sh, sh, "ELF section header 0");
    if (shnum == 0) shnum = u64(sh + 32);
    if (shstrndx == 0xffff) shstrndx = u32(sh + 40);
  }
  if (shnum > kMaxSections || shnum * shentsize > src.size())
    throw Error(src.name() + ": bad ELF header: " + std::to_string(shnum) + " sections do not fit in the file");
  if (shstrndx >= shnum) throw Error(src.name() + ": bad ELF header: section-name table index " + std::to_string(shstrndx) +
                                     " of " + std::to_string(shnum) + " sections");
  auto header = [&](std::uint64_t i) {
    src.read(shoff + i * shentsize, sizeof sh, sh, "an ELF section header");
    return Span{"", u64(sh + 24), u64(sh + 32)};
  };
  Span strtab = header(shstrndx);
  if (strtab.offset > src.size() || strtab.size > src.size() - strtab.offset)
    throw Error(src.name() + ": truncated: the section-name table runs past the end of the file");
  std::string names(strtab.size, '\0');
  if (!names.empty()) src.read(strtab.offset, names.size(), names.data(), "the section-name table");
  std::vector<Span> out;
  for (std::uint64_t i = 0; i < shnum; ++i) {
    Span s = header(i);
    const std::uint32_t name_at = u32(sh);
    const std::uint32_t type = u32(sh + 4);
    if (name_at >= names.size()) continue;
    const std::string name(names.c_str() + name_at, strnlen(names.c_str() + name_at, names.size() - name_at));
    if (name != ".nv_fatbin" && name != "__nv_relfatbin") continue;
    if (type == 8) continue;  // SHT_NOBITS: no bytes in the file
    if (s.offset > src.size() || s.size > src.size() - s.offset)
      throw Error(src.name() + ": truncated: section " + name + " (offset " + hex(s.offset) + ", " + std::to_string(s.size) +
                  " bytes) runs past the end of the file (" + std::to_string(src.size()) + " bytes)");
    s.name = name;
    out.push_back(s);
  }
  return out;
}

// Walks the containers of one section; entries and architectures go into `c`.
void walk_section(Source& src, const Span& sec, FatbinContents& c) {
  const std::string where = src.name() + ": " + (sec.name.empty() ? std::string("fatbin") : sec.name);
  const std::uint64_t end = sec.offset + sec.size;
  std::uint64_t pos = sec.offset;
  while (pos < end) {
    // Between containers: zero padding up to the next 8-byte boundary or more.
    unsigned char word[8];
    const std::size_t left = static_cast<std::size_t>(std::min<std::uint64_t>(8, end - pos));
    src.read(pos, left, word, "fatbin padding");
    if (left < 8 || u32(word) != kFatbinMagic) {
      bool zero = true;
      for (std::size_t i = 0; i < left; ++i) zero = zero && word[i] == 0;
      if (!zero)
        throw Error(where + ": no fatbin container at offset " + hex(pos) + " (magic " + hex(left >= 4 ? u32(word) : 0) +
                    ", expected " + hex(kFatbinMagic) + ")");
      pos += left;
      continue;
    }
    unsigned char fh[16];
    if (end - pos < sizeof fh)
      throw Error(where + ": truncated fatbin container header at offset " + hex(pos));
    src.read(pos, sizeof fh, fh, "a fatbin container header");
    const std::uint16_t header_size = u16(fh + 6);
    const std::uint64_t fat_size = u64(fh + 8);
    if (header_size < 16 || header_size > kFatbinMaxHeader)
      throw Error(where + ": fatbin container at offset " + hex(pos) + " has a bad header size " + std::to_string(header_size));
    if (fat_size > end - pos || header_size > end - pos - fat_size)
      throw Error(where + ": truncated: the fatbin container at offset " + hex(pos) + " claims " + std::to_string(fat_size) +
                  " bytes but the section has " + std::to_string(end - pos - header_size) + " left");
    if (++c.containers > static_cast<int>(kFatbinMaxEntries))
      throw Error(where + ": more than " + std::to_string(kFatbinMaxEntries) + " fatbin containers");
    const std::uint64_t cend = pos + header_size + fat_size;
    std::uint64_t e = pos + header_size;
    while (e < cend) {
      unsigned char h[kEntryMinHeader];
      if (cend - e < kEntryMinHeader)
        throw Error(where + ": truncated fatbin entry header at offset " + hex(e) + " (" + std::to_string(cend - e) +
                    " bytes left in its container)");
      src.read(e, sizeof h, h, "a fatbin entry header");
      FatbinEntryInfo info;
      info.kind = u16(h);
      const std::uint32_t eh_size = u32(h + 4);
      info.payload_bytes = u64(h + 8);
      info.arch.cc = static_cast<int>(u32(h + 28));
      info.flags = u64(h + 40);
      info.compressed = (info.flags & (kFlagCompressed | kFlagCompressedOld)) != 0;
      info.arch.variant = (info.flags & kFlagArchSpecific) ? 'a' : (info.flags & kFlagFamily) ? 'f' : 0;
      info.section = sec.name;
      if (eh_size < kEntryMinHeader || eh_size > kFatbinMaxHeader)
        throw Error(where + ": fatbin entry at offset " + hex(e) + " has a bad header size " + std::to_string(eh_size));
      if (info.payload_bytes > cend - e || eh_size > cend - e - info.payload_bytes)
        throw Error(where + ": truncated: the fatbin entry at offset " + hex(e) + " claims " +
                    std::to_string(info.payload_bytes) + " bytes beyond its container's end");
      if (info.kind == 1 || info.kind == 2) {
        if (info.arch.cc < 10 || info.arch.cc > 10000)
          throw Error(where + ": fatbin entry at offset " + hex(e) + " names architecture " + std::to_string(info.arch.cc));
        (info.kind == 1 ? c.ptx : c.sass).insert(info.arch);
      } else {
        ++c.other_entries;
      }
      if (c.entries.size() >= kFatbinMaxEntries)
        throw Error(where + ": more than " + std::to_string(kFatbinMaxEntries) + " fatbin entries");
      c.entries.push_back(info);
      e += eh_size + info.payload_bytes;
    }
    pos = cend;
  }
}

FatbinContents read_source(Source& src) {
  FatbinContents c;
  c.file = src.name();
  if (src.size() == 0) throw Error(src.name() + ": the file is empty, not a library or object file");
  unsigned char magic[8] = {};
  src.read(0, static_cast<std::size_t>(std::min<std::uint64_t>(sizeof magic, src.size())), magic, "the file header");
  std::vector<Span> sections;
  if (src.size() >= 4 && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F') {
    sections = elf_fatbin_sections(src);
  } else if (src.size() >= 4 && u32(magic) == kFatbinMagic) {
    sections.push_back(Span{"", 0, src.size()});
  } else if (src.size() >= 8 && std::memcmp(magic, "!<arch>\n", 8) == 0) {
    throw Error(src.name() + ": a static archive (.a); give the shared library, or extract its objects (ar x)");
  } else {
    throw Error(src.name() + ": not an ELF file nor a fatbin (no ELF or fatbin magic at the start)");
  }
  for (const Span& s : sections) {
    c.sections.push_back(s.name);
    walk_section(src, s, c);
  }
  return c;
}

}  // namespace

std::string fatbin_arch_name(const FatbinArch& a, bool ptx) {
  std::string s = (ptx ? "compute_" : "sm_") + std::to_string(a.cc);
  if (a.variant) s += a.variant;
  return s;
}

FatbinContents read_fatbin(const std::string& path) {
  FileSource src(path);
  return read_source(src);
}

FatbinContents read_fatbin_bytes(const std::string& bytes, const std::string& name) {
  MemorySource src(bytes, name);
  return read_source(src);
}

}  // namespace nb
