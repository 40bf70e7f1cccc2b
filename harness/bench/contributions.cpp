#include "bench/contributions.hpp"

namespace nb {

std::vector<AdviceContribution>& advice_contributions() {
  static std::vector<AdviceContribution> registry;
  return registry;
}

std::vector<LinkClassifier>& link_classifiers() {
  static std::vector<LinkClassifier> registry;
  return registry;
}

std::vector<HeadlineContribution>& headline_contributions() {
  static std::vector<HeadlineContribution> registry;
  return registry;
}

std::vector<RecordReport>& record_reports() {
  static std::vector<RecordReport> registry;
  return registry;
}

const RecordReport* find_record_report(const std::string& family) {
  for (const RecordReport& r : record_reports())
    if (r.family == family) return &r;
  return nullptr;
}

std::string family_of_record(const nlohmann::json& record) {
  if (!record.is_object()) return {};
  if (const auto id = record.find("id"); id != record.end() && id->is_string()) {
    const std::string s = id->get<std::string>();
    return s.substr(0, s.find('/'));
  }
  const auto f = record.find("family");
  return f != record.end() && f->is_string() ? f->get<std::string>() : std::string();
}

}  // namespace nb
