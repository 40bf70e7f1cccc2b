// Every NODEBENCH_* environment variable is a setting declared where it is used -- the core's
// here, a family's in its own folder (a static SettingRegistrar) -- and parsed once, by one parser,
// at the start of a command: a bad value exits 2 naming the variable before anything runs. The
// values are recorded in the result file (`settings`) and read through the Settings in force
// (CaseContext::settings(), current_settings()); nothing below the parser calls getenv.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nb {

enum class SettingKind {
  flag,        // 0 or 1; default false unless `default_value` says otherwise
  tristate,    // 0 or 1, or unset (null: decided elsewhere)
  number,      // a number in (0, max] (or [0, max] with allow_zero)
  integer,     // a whole number, likewise
  text,        // any non-empty string
  choice,      // one of `choices` (a string)
};

struct SettingSpec {
  std::string name;     // NODEBENCH_...
  SettingKind kind = SettingKind::flag;
  std::string key;      // its key in the result's `settings` (e.g. "nccl_timeout_s")
  nlohmann::json default_value;  // null: unset (tristate, text)
  double max = 0;       // number / integer: the largest value
  bool allow_zero = false;
  std::string help;     // one line for --help, after the name
  std::string owner;    // "core" or the family that declares it
  // A fault-injection hook: honoured only in a build with -DNODEBENCH_TEST_HOOKS=ON (elsewhere
  // setting it is an error saying so), and recorded only when set.
  bool test_hook = false;
  // Recorded in the result only when set (a path, say).
  bool record_only_when_set = false;
  // A text setting's check of its value (a folder that must exist, say): empty when the value is
  // fine, else what is wrong with it, naming the value; the parser prefixes the variable.
  std::function<std::string(const std::string& value)> check = nullptr;
  // Also an option of `run` (e.g. "--images"): given there, it overrides the environment.
  std::string run_option = "";
  std::vector<std::string> choices;  // choice: the values it takes
};

// The declared settings, in declaration order per owner ("core" first in --help).
std::vector<SettingSpec>& setting_registry();
struct SettingRegistrar {
  explicit SettingRegistrar(SettingSpec s);
};
// The --help lines for every declared setting.
std::string settings_help();

class Settings {
 public:
  // From the process environment (or `env` for tests). Throws nb::Error naming the variable on a
  // bad value or an out-of-range one. `unknown` gets the NODEBENCH_* names that are no setting
  // (a misspelt one is then worth a warning).
  static Settings from_environment(std::vector<std::string>* unknown = nullptr);
  static Settings from_map(const std::map<std::string, std::string>& env, std::vector<std::string>* unknown = nullptr);

  // The value of a declared setting (its default when unset). Throws nb::Error for a name that
  // was never declared, or one read as the wrong kind: a typo in code fails loudly.
  bool flag(const std::string& name) const;
  std::optional<bool> tristate(const std::string& name) const;
  double number(const std::string& name) const;
  int64_t integer(const std::string& name) const;
  std::string text(const std::string& name) const;  // "" when unset
  std::string choice(const std::string& name) const;  // its default when unset
  bool is_set(const std::string& name) const;
  // A copy with `name` set to `value`, parsed and checked as from the environment (throws
  // nb::Error naming the variable).
  Settings with(const std::string& name, const std::string& value) const;

  // The result file's `settings`: every declared setting by its key (test hooks and
  // record_only_when_set ones only when set).
  nlohmann::json to_json() const;

 private:
  const SettingSpec& spec(const std::string& name, SettingKind expect) const;
  std::map<std::string, nlohmann::json> values_;  // parsed values of the settings that were set
};

// Whether this binary honours the test hooks.
bool test_hooks_built();

// The settings in force: set once by the command at its start; defaults until then.
const Settings& current_settings();
void set_current_settings(const Settings& s);

}  // namespace nb
