#include "base/json_file.hpp"

#include <cerrno>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/error.hpp"

namespace nb {
using nlohmann::json;

namespace {

std::string mib(size_t bytes) {
  return bytes >= (size_t(1) << 20) ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes) + " bytes";
}

// Closes the descriptor it holds.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_input_file(const std::string& path, size_t max_bytes) {
  if (path.empty()) throw Error("'': an empty file name");
  // O_NONBLOCK: opening a FIFO for reading would wait for a writer; the type is judged first.
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (f.fd < 0) {
    const int err = errno;
    if (err == ENOENT) throw Error(path + ": cannot read the file (no such file)");
    throw Error(path + ": cannot read the file (" + std::strerror(err) + ")");
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw Error(path + ": cannot read the file (" + std::strerror(errno) + ")");
  if (S_ISDIR(st.st_mode)) throw Error(path + ": is a folder, not a JSON file");
  if (!S_ISREG(st.st_mode))
    throw Error(path + ": not a regular file (a device, FIFO or socket): nodebench reads files only");
  if (size_t(st.st_size) > max_bytes)
    throw Error(path + ": the file is " + mib(size_t(st.st_size)) + ", more than the " + mib(max_bytes) +
                " nodebench reads");
  const int flags = ::fcntl(f.fd, F_GETFL);
  if (flags >= 0) (void)::fcntl(f.fd, F_SETFL, flags & ~O_NONBLOCK);
  // gzip reads a plain file as it is (transparent mode), and a compressed one decompressed.
  const int dup_fd = ::dup(f.fd);
  if (dup_fd < 0) throw Error(path + ": cannot read the file (" + std::strerror(errno) + ")");
  gzFile gz = ::gzdopen(dup_fd, "rb");
  if (!gz) {
    ::close(dup_fd);
    throw Error(path + ": cannot read the file (out of memory)");
  }
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const int n = ::gzread(gz, buf, sizeof buf);
    if (n < 0) {
      int code = 0;
      const std::string why = ::gzerror(gz, &code);
      ::gzclose(gz);
      if (code == Z_ERRNO) throw Error(path + ": cannot read the file (" + std::strerror(errno) + ")");
      throw Error(path + ": a damaged gzip file (" + why + ")");
    }
    if (n == 0) break;
    if (text.size() + size_t(n) > max_bytes) {
      ::gzclose(gz);
      throw Error(path + ": decompresses to more than the " + mib(max_bytes) + " nodebench reads");
    }
    text.append(buf, size_t(n));
  }
  int code = 0;
  const std::string why = ::gzerror(gz, &code);
  ::gzclose(gz);
  if (code != Z_OK) throw Error(path + ": a damaged gzip file (" + why + ")");
  return text;
}

json read_json_file(const std::string& path) {
  const std::string text = read_input_file(path);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) throw Error(path + ": the file is empty, not JSON");
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw Error(path + ": not valid JSON (" + e.what() + ")");
  }
}

void check_schema_version(const json& doc, const std::string& path) {
  if (!doc.is_object()) return;
  const auto s = doc.find("schema");
  const bool ours = s != doc.end() && s->is_string() && s->get<std::string>().rfind("nodebench.", 0) == 0;
  const auto v = doc.find("schema_version");
  const std::string name = ours ? "'" + s->get<std::string>() + "' " : std::string();
  if (v == doc.end()) {
    if (ours) throw Error(path + ": " + name + "document without 'schema_version' (this nodebench reads version " +
                          std::to_string(kReadableSchemaVersion) + ")");
    return;
  }
  if (!v->is_number_integer() || v->get<long long>() != kReadableSchemaVersion)
    throw Error(path + ": " + name + "schema_version " + v->dump() + ": this nodebench reads version " +
                std::to_string(kReadableSchemaVersion) + " only (docs/SCHEMA.md); use the nodebench that wrote it");
}

}  // namespace nb
