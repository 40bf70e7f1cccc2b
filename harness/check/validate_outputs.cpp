#include "check/validate_outputs.hpp"

#include <ctime>
#include <filesystem>

#include "base/files.hpp"

namespace nb {

namespace {

void write_with_folder(const std::string& path, const std::string& text) {
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  write_file_atomic(path, text);
}

}  // namespace

std::string utc_stamp(const char* format) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

void JunitReport::finished(const RunDocument&) {
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  write_with_folder(path_, junit_xml(report_, hostname_, utc_stamp("%Y-%m-%dT%H:%M:%SZ"), secs));
}

void PrometheusReport::finished(const RunDocument&) {
  PromContext c = ctx_;
  c.unix_time = double(std::time(nullptr));
  write_with_folder(path_, prometheus_text(report_, c));
}

}  // namespace nb
