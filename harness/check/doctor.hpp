// `nodebench doctor`: checks of a node's driver, libraries, GPUs, links and peers, each with an
// id, a severity, the evidence and the fix.
//
// The rules are pure functions over a captured environment (the result schema's `environment`
// object), the CUDA architectures compiled into the binary, and a few live facts read from the
// node (ECC counters, peer access, processes, physical GPU count, the PCIe link under load), so
// that they are unit-tested on recorded environments without a GPU. The command gathers the
// facts, then applies the rules. The data the rules judge by (driver minimums, end-of-support
// branches, library architecture floors, framework builds) lives in harness/profiles/compat.json
// and frameworks.json, embedded at build time.
#pragma once
#include <functional>
#include <map>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/options.hpp"
#include "node/arch_rule.hpp"
#include "node/environment.hpp"
#include "node/nvml.hpp"

namespace nb {

enum class Severity { ok = 0, info = 1, warn = 2, fail = 3 };
std::string to_string(Severity s);

struct Check {
  std::string id;               // e.g. "pcie.link"
  std::optional<int> gpu;       // CUDA index; nullopt for the node as a whole
  std::optional<int> peer;      // second GPU of a pair check
  Severity severity = Severity::ok;
  std::string summary;          // one line
  std::string evidence;         // what was read, and how
  std::string fix;              // what to do; empty when nothing
  bool skipped = false;         // validate: not judged (family not built, case skipped); severity info
  std::optional<double> value, threshold;  // validate: measured value and the minimum to pass
  std::string unit;             // of value and threshold

  std::string gpu_label() const;  // "0", "0,1", or "all"
  nlohmann::json to_json() const;
  static Check from_json(const nlohmann::json& j);
};

struct CheckCounts {
  int ok = 0, info = 0, warn = 0, fail = 0, skipped = 0;
  Severity worst = Severity::ok;
};
CheckCounts count_checks(const std::vector<Check>& checks);

// ---- Versions and architecture lists -------------------------------------------------------

// "580.159.04" -> {580, 159, 4}; non-numeric fields end the version. Empty when none.
std::vector<int> parse_version(const std::string& text);
// <0, 0, >0 like strcmp; missing trailing fields count as 0.
int compare_versions(const std::vector<int>& a, const std::vector<int>& b);
// "6.1" -> 61, "12.1" -> 121; nullopt when malformed.
std::optional<int> parse_cc(const std::string& text);
std::string cc_string(int cc);  // 61 -> "6.1"

// The lists of CUDA architectures and whether a GPU runs them: node/arch_rule.hpp.

// ---- Live facts ----------------------------------------------------------------------------

struct GpuLive {
  int index = 0;                              // CUDA index
  std::optional<PcieLink> pcie_loaded;        // link read while the GPU was busy
  std::string pcie_method;                    // how it was loaded, or why it was not
  std::optional<unsigned long long> throttle_mask_loaded;
  EccCounters ecc;
  RetiredPages retired;
  std::optional<RemappedRows> remapped;
  std::optional<std::vector<ProcessUse>> processes;
  std::vector<std::string> process_names;     // parallel to processes, where /proc tells
  std::optional<bool> acs_redirect;           // a bridge above the GPU redirects peer requests
  std::string acs_evidence;
};

struct LiveFacts {
  bool recorded = false;                      // false: nothing but the environment is known
  int self_pid = 0;
  std::optional<int> nvml_device_count;       // GPUs the driver has (CUDA_VISIBLE_DEVICES does not apply)
  std::optional<int> device_nodes;            // /dev/nvidia<N> files
  std::optional<std::string> cgroup_devices;  // a summary of the devices cgroup (v1), when readable
  std::optional<std::string> kernel_driver;   // first line of /proc/driver/nvidia/version
  std::optional<std::string> kernel_cmdline;
  std::optional<int> iommu_groups;            // entries of /sys/kernel/iommu_groups
  std::optional<std::string> cuda_device_order, nvidia_visible_devices;
  std::vector<std::vector<std::optional<bool>>> p2p;      // [i][j]: cudaDeviceCanAccessPeer
  std::vector<std::vector<std::optional<int>>> topology;  // [i][j]: NVML common-ancestor level
  std::vector<GpuLive> gpus;                  // by CUDA index

  const GpuLive* gpu(int index) const;
  nlohmann::json to_json() const;
  static LiveFacts from_json(const nlohmann::json& j);
};

// Everything the rules read.
struct DoctorInput {
  nlohmann::json environment;       // the result schema's `environment`
  std::string cuda_architectures;   // of the binary (NODEBENCH_CUDA_ARCHITECTURES)
  LiveFacts live;
  // A fixture file: {"environment": {...}, "cuda_architectures": "...", "live": {...}}.
  static DoctorInput from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;
};

// The data files the rules judge by.
struct RuleData {
  nlohmann::json compat;      // harness/profiles/compat.json
  nlohmann::json frameworks;  // harness/profiles/frameworks.json
  nlohmann::json arch_facts;  // harness/profiles/arch_facts.json: which builds carry sm_60/61/70, and the pins
  // The pins of arch_facts.json as substitution variables ({pin.cudnn_version}, ...) for fix texts.
  std::map<std::string, std::string> pin_vars() const;
  static const RuleData& builtin();
};

// NVML topology level name: 0 "same board", 10 "PIX", 20 "PXB", 30 "PHB", 40 "NODE", 50 "SYS".
std::string topology_name(int level);
// ACS Control of a PCIe function from its configuration space (>= 4 KiB read as root); nullopt
// when the extended space is absent or holds no ACS capability.
std::optional<unsigned> acs_control_from_config(const std::vector<unsigned char>& config);
bool acs_redirects_peers(unsigned acs_control);  // P2P Request or Completion Redirect set

// ---- Rules ---------------------------------------------------------------------------------
// Each returns its checks (one for the node, or one per GPU). They live by topic in
// doctor_rules_driver.cpp (NVML, driver, architectures, libraries, frameworks), doctor_rules_gpu.cpp
// (visibility, order, processes, MIG, ECC, persistence, throttling, temperature) and
// doctor_rules_pcie.cpp (PCIe link, peers, IOMMU); doctor_rules() is the one table that registers
// them, in report order, and run_doctor_rules applies it: the judgement of captured facts.
std::vector<Check> rule_nvml(const DoctorInput& in);
std::vector<Check> rule_driver_runtime(const DoctorInput& in, const RuleData& data);
std::vector<Check> rule_driver_gpu_support(const DoctorInput& in, const RuleData& data);
std::vector<Check> rule_arch_binary(const DoctorInput& in, const RuleData& data);
std::vector<Check> rule_libraries(const DoctorInput& in, const RuleData& data);
std::vector<Check> rule_visibility(const DoctorInput& in);
std::vector<Check> rule_device_order(const DoctorInput& in);
std::vector<Check> rule_processes(const DoctorInput& in);
std::vector<Check> rule_mig(const DoctorInput& in);
std::vector<Check> rule_pcie(const DoctorInput& in);
std::vector<Check> rule_ecc(const DoctorInput& in);
std::vector<Check> rule_persistence(const DoctorInput& in);
std::vector<Check> rule_throttle(const DoctorInput& in);
std::vector<Check> rule_thermal(const DoctorInput& in);
std::vector<Check> rule_p2p(const DoctorInput& in);
std::vector<Check> rule_iommu(const DoctorInput& in);
std::vector<Check> rule_frameworks(const DoctorInput& in, const RuleData& data);

struct DoctorRule {
  using Apply = std::function<std::vector<Check>(const DoctorInput&, const RuleData&)>;
  std::string name;  // the check id (or id prefix) it reports
  Apply apply;
};
const std::vector<DoctorRule>& doctor_rules();
std::vector<Check> run_doctor_rules(const DoctorInput& in, const RuleData& data = RuleData::builtin());

// The first check with this id (and GPU, when given), or null.
const Check* find_check(const std::vector<Check>& checks, const std::string& id,
                        std::optional<int> gpu = std::nullopt);

// ---- Output --------------------------------------------------------------------------------
void print_checks(const std::vector<Check>& checks, std::ostream& os);
nlohmann::json doctor_report_json(const DoctorInput& in, const std::vector<Check>& checks);

// ---- The live command ----------------------------------------------------------------------
// Reads the live facts. With `load_links`, each GPU's PCIe link is read while host-to-device
// copies keep it busy (links train down at idle). Never throws.
LiveFacts gather_live_facts(const Nvml& nvml, const Environment& env, bool load_links);


}  // namespace nb
