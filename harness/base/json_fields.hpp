// Reading optional fields of a JSON object without throwing and without inserting: the result
// file, the environment and the rule data are read this way by doctor, validate and the families'
// validation checks.
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace nb::jf {

// j[k], or null where j has no such key (const operator[] must not be used on missing keys).
inline const nlohmann::json& at(const nlohmann::json& j, const char* k) {
  static const nlohmann::json null_json;
  return j.is_object() && j.contains(k) ? j[k] : null_json;
}

inline std::optional<std::string> jstr(const nlohmann::json& j, const char* k) {
  if (j.is_object() && j.contains(k) && j[k].is_string()) return j[k].get<std::string>();
  return std::nullopt;
}
inline std::optional<double> jnum(const nlohmann::json& j, const char* k) {
  if (j.is_object() && j.contains(k) && j[k].is_number()) return j[k].get<double>();
  return std::nullopt;
}
inline std::optional<bool> jbool(const nlohmann::json& j, const char* k) {
  if (j.is_object() && j.contains(k) && j[k].is_boolean()) return j[k].get<bool>();
  return std::nullopt;
}
template <class T>
nlohmann::json opt_json(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
template <class T>
std::optional<T> json_opt(const nlohmann::json& j, const char* k) {
  if (j.is_object() && j.contains(k) && !j[k].is_null()) return j[k].get<T>();
  return std::nullopt;
}

inline double num_or(const nlohmann::json& j, const char* k, double dflt) {
  return j.is_object() && j.contains(k) && j[k].is_number() ? j[k].get<double>() : dflt;
}
inline std::string str_or(const nlohmann::json& j, const char* k, const std::string& dflt = "") {
  return j.is_object() && j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : dflt;
}

}  // namespace nb::jf
