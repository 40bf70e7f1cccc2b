#include "output/json_file.hpp"

#include "base/files.hpp"

namespace nb {

JsonResultFile::JsonResultFile(std::string path, const RunDocument& doc, double min_interval_s)
    : path_(std::move(path)), min_interval_s_(min_interval_s) {
  write(doc);
}

void JsonResultFile::recorded(const RunDocument& doc, const nlohmann::json&, const Progress&) {
  const auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_write_).count() >= min_interval_s_) write(doc);
}

void JsonResultFile::write(const RunDocument& doc) {
  write_file_atomic(path_, doc.doc().dump(1, ' ', false, nlohmann::json::error_handler_t::replace));
  last_write_ = std::chrono::steady_clock::now();
}

}  // namespace nb
