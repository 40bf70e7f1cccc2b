#include "base/json_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.hpp"

namespace nb {
using nlohmann::json;

json read_json_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw Error(path + ": cannot read the file (no such file)");
  if (fs::is_directory(st)) throw Error(path + ": is a folder, not a JSON file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot read the file (" + std::strerror(errno) + ")");
  std::stringstream ss;
  ss << f.rdbuf();
  if (f.bad()) throw Error(path + ": cannot read the file (read error)");
  const std::string text = ss.str();
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
