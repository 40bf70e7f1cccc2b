#include "node/arch_facts.hpp"

namespace nb {

extern const char* const kBuiltinArchFactsJson;  // generated from harness/profiles/arch_facts.json

const nlohmann::json& builtin_arch_facts() {
  static const nlohmann::json j = nlohmann::json::parse(kBuiltinArchFactsJson);
  return j;
}

std::map<std::string, std::string> arch_pin_vars() {
  std::map<std::string, std::string> vars;
  const nlohmann::json& f = builtin_arch_facts();
  if (f.is_object() && f.contains("pins") && f["pins"].is_object())
    for (const auto& [k, v] : f["pins"].items())
      if (v.is_string()) vars["pin." + k] = v.get<std::string>();
  return vars;
}

std::string arch_pin(const std::string& key) {
  const auto vars = arch_pin_vars();
  const auto it = vars.find("pin." + key);
  return it == vars.end() ? std::string() : it->second;
}

}  // namespace nb
