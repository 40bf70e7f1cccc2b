#include "bench/settings.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <algorithm>
#include <sstream>

#include "base/error.hpp"

extern char** environ;

namespace nb {
using nlohmann::json;

std::vector<SettingSpec>& setting_registry() {
  static std::vector<SettingSpec> r;
  return r;
}

SettingRegistrar::SettingRegistrar(SettingSpec s) {
  if (s.owner.empty()) s.owner = "core";
  setting_registry().push_back(std::move(s));
}

namespace {

// The core's own settings: the library the node layer loads, the launch mode.
const SettingRegistrar kNvmlLibrary({"NODEBENCH_NVML_LIBRARY", SettingKind::text, "nvml_library", nullptr, 0, false,
                                     "=PATH the NVML library to load (default: the driver's libnvidia-ml.so.1)", "core",
                                     false, true});
const SettingRegistrar kMpi({"NODEBENCH_MPI", SettingKind::tristate, "mpi", nullptr, 0, false,
                             "=0|1 force the MPI launch mode off or on (default: detected)", "core"});

// Names that belong to the scripts, not to the binary: known, so never warned about.
const char* const kScripts[] = {"NODEBENCH_BIN", "NODEBENCH_REPORT", "NODEBENCH_SKIP_CUDA12", "NODEBENCH_SETUP_HIDE"};

const SettingSpec* find_spec(const std::string& name) {
  for (const auto& s : setting_registry())
    if (s.name == name) return &s;
  return nullptr;
}

std::string limit_text(double max) {
  std::ostringstream os;
  os.precision(15);
  os << max;
  return os.str();
}

json parse_value(const SettingSpec& s, const std::string& v) {
  switch (s.kind) {
    case SettingKind::flag:
    case SettingKind::tristate:
      if (v == "0") return false;
      if (v == "1") return true;
      throw Error(s.name + "='" + v + "': must be 0 or 1");
    case SettingKind::text:
      if (s.check)
        if (const std::string why = s.check(v); !why.empty()) throw Error(s.name + "=" + why);
      return v;
    case SettingKind::choice: {
      std::string all;
      for (size_t i = 0; i < s.choices.size(); ++i) {
        if (v == s.choices[i]) return v;
        all += (i ? (i + 1 == s.choices.size() ? " or " : ", ") : "") + s.choices[i];
      }
      throw Error(s.name + "='" + v + "': must be " + all);
    }
    case SettingKind::number:
    case SettingKind::integer: break;
  }
  const bool integer = s.kind == SettingKind::integer;
  errno = 0;
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  const bool bad = end == v.c_str() || *end != '\0' || errno == ERANGE || !std::isfinite(x) ||
                   (s.allow_zero ? x < 0 : !(x > 0)) || (integer && x != std::floor(x));
  if (bad) {
    const std::string what = integer ? (s.allow_zero ? "a whole number >= 0" : "a positive whole number")
                                     : (s.allow_zero ? "a number >= 0" : "a positive number");
    throw Error(s.name + "='" + v + "': must be " + what);
  }
  if (x > s.max) throw Error(s.name + "='" + v + "': too large (at most " + limit_text(s.max) + ")");
  if (integer) return int64_t(x);
  return x;
}

}  // namespace

std::string settings_help() {
  std::string out;
  std::vector<std::string> owners{"core"};
  for (const auto& s : setting_registry())
    if (std::find(owners.begin(), owners.end(), s.owner) == owners.end()) owners.push_back(s.owner);
  for (const auto& o : owners)
    for (const auto& s : setting_registry()) {
      if (s.owner != o || s.test_hook) continue;
      // "=0|1 what it does" puts the value's form after the name; the text starts in one column.
      std::string line = "  " + s.name, text = s.help;
      if (!text.empty() && text[0] == '=') {
        const size_t sp = text.find(' ');
        line += text.substr(0, sp);
        text = sp == std::string::npos ? "" : text.substr(sp + 1);
      }
      line.resize(std::max<size_t>(line.size() + 1, 33), ' ');
      out += line + text + "\n";
    }
  return out;
}

bool test_hooks_built() {
#if NB_TEST_HOOKS
  return true;
#else
  return false;
#endif
}

Settings Settings::from_map(const std::map<std::string, std::string>& env, std::vector<std::string>* unknown) {
  Settings out;
  for (const auto& [name, value] : env) {
    if (name.rfind("NODEBENCH_", 0) != 0) continue;
    const SettingSpec* s = find_spec(name);
    if (!s) {
      bool script = false;
      for (const char* k : kScripts) script = script || name == k;
      if (!script && unknown) unknown->push_back(name);
      continue;
    }
    if (value.empty()) continue;  // set but empty: the default
    if (s->test_hook && !test_hooks_built())
      throw Error(name + ": a test hook; this build has none (configure with -DNODEBENCH_TEST_HOOKS=ON)");
    out.values_[name] = parse_value(*s, value);
  }
  return out;
}

Settings Settings::from_environment(std::vector<std::string>* unknown) {
  std::map<std::string, std::string> env;
  for (char** p = environ; p && *p; ++p) {
    const std::string kv = *p;
    if (kv.rfind("NODEBENCH_", 0) != 0) continue;
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return from_map(env, unknown);
}

const SettingSpec& Settings::spec(const std::string& name, SettingKind expect) const {
  const SettingSpec* s = find_spec(name);
  if (!s) throw Error("setting " + name + " is not declared (SettingRegistrar)");
  if (s->kind != expect) throw Error("setting " + name + " is read as another kind than it is declared");
  return *s;
}

namespace {
template <class T>
T value_or_default(const std::map<std::string, json>& values, const SettingSpec& s, T fallback) {
  if (auto it = values.find(s.name); it != values.end()) return it->second.get<T>();
  return s.default_value.is_null() ? fallback : s.default_value.get<T>();
}
}  // namespace

bool Settings::flag(const std::string& name) const {
  return value_or_default<bool>(values_, spec(name, SettingKind::flag), false);
}
std::optional<bool> Settings::tristate(const std::string& name) const {
  const SettingSpec& s = spec(name, SettingKind::tristate);
  if (auto it = values_.find(name); it != values_.end()) return it->second.get<bool>();
  if (s.default_value.is_boolean()) return s.default_value.get<bool>();
  return std::nullopt;
}
double Settings::number(const std::string& name) const {
  return value_or_default<double>(values_, spec(name, SettingKind::number), 0.0);
}
int64_t Settings::integer(const std::string& name) const {
  return value_or_default<int64_t>(values_, spec(name, SettingKind::integer), 0);
}
std::string Settings::text(const std::string& name) const {
  return value_or_default<std::string>(values_, spec(name, SettingKind::text), std::string());
}
std::string Settings::choice(const std::string& name) const {
  return value_or_default<std::string>(values_, spec(name, SettingKind::choice), std::string());
}
bool Settings::is_set(const std::string& name) const { return values_.count(name) > 0; }

Settings Settings::with(const std::string& name, const std::string& value) const {
  const SettingSpec* s = find_spec(name);
  if (!s) throw Error("setting " + name + " is not declared (SettingRegistrar)");
  Settings out = *this;
  out.values_[name] = parse_value(*s, value);
  return out;
}

json Settings::to_json() const {
  json j = json::object();
  for (const auto& s : setting_registry()) {
    const auto it = values_.find(s.name);
    if ((s.test_hook || s.record_only_when_set) && it == values_.end()) continue;
    j[s.key] = it != values_.end() ? it->second : s.default_value;
  }
  return j;
}

namespace {
std::mutex g_mu;
Settings g_current;
}  // namespace

const Settings& current_settings() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_current;
}

void set_current_settings(const Settings& s) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_current = s;
}

}  // namespace nb
