#include "run/result.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>
#include <sstream>

#include "base/files.hpp"
#include "base/stats.hpp"

namespace nb {
using nlohmann::json;

RunDocument::RunDocument(json header) : doc_(std::move(header)), t0_(std::chrono::steady_clock::now()) {
  doc_["schema"] = "nodebench.result";
  doc_["schema_version"] = kSchemaVersion;
  doc_["run_status"] = "running";
  doc_["finished_at"] = nullptr;
  doc_["records"] = json::array();
  doc_["summary"] = summary();
}

json RunDocument::summary() const {
  int ok = 0, skipped = 0, failed = 0, wrong = 0;
  for (const auto& r : doc_["records"]) {
    const std::string s = r.value("status", "");
    ok += s == "ok";
    skipped += s == "skipped";
    failed += s == "failed";
    wrong += s == "wrong";
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  return {{"ok", ok}, {"skipped", skipped}, {"failed", failed}, {"wrong", wrong},
          {"total", ok + skipped + failed + wrong}, {"wall_time_s", wall}};
}

const json& RunDocument::doc() const {
  if (doc_["run_status"] == "running") doc_["summary"] = summary();  // a finished run keeps its wall time
  return doc_;
}

void RunDocument::add(json record) { doc_["records"].push_back(std::move(record)); }

void RunDocument::set_analysis(const std::string& key, json value) { doc_["analysis"][key] = std::move(value); }

void RunDocument::finish(const std::string& run_status, const std::string& error) {
  doc_["summary"] = summary();
  doc_["run_status"] = run_status;
  doc_["run_error"] = error.empty() ? json(nullptr) : json(error);
  doc_["finished_at"] = iso_utc(std::chrono::system_clock::now());
}

}  // namespace nb
