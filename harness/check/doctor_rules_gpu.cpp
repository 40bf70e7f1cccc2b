// Rules on each GPU's state: visibility, device order, processes, MIG, ECC, persistence,
// throttling, temperature.
#include "check/doctor.hpp"
#include "check/doctor_util.hpp"
#include "node/profiles.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace nb {

// The built-in device profiles, parsed once (a profile found in them outlives the call).
static const ProfileDb& builtin_profiles() {
  static const ProfileDb db = ProfileDb::builtin();
  return db;
}

using namespace doctor_detail;

std::vector<Check> rule_visibility(const DoctorInput& in) {
  const std::string id = "gpu.visibility";
  const auto gpus = gpus_of(in.environment);
  const int cuda_n = int(gpus.size());
  const auto cvd = jstr(in.environment, "cuda_visible_devices");
  const auto& L = in.live;
  std::string ev = "CUDA sees " + std::to_string(cuda_n) + "; NVML (the driver) lists " +
                   (L.nvml_device_count ? std::to_string(*L.nvml_device_count) : std::string("unknown")) +
                   "; CUDA_VISIBLE_DEVICES " + (cvd ? "'" + *cvd + "'" : std::string("not set"));
  if (L.nvidia_visible_devices) ev += "; NVIDIA_VISIBLE_DEVICES '" + *L.nvidia_visible_devices + "'";
  if (L.device_nodes) ev += "; " + std::to_string(*L.device_nodes) + " /dev/nvidiaN device node(s)";
  if (L.cgroup_devices) ev += "; " + *L.cgroup_devices;
  bool mig = false;
  for (const auto& g : gpus) mig = mig || jbool(*g.j, "mig_mode").value_or(false);
  const std::string cuda_error = jstr(in.environment, "cuda_error").value_or("");

  if (cuda_n == 0) {
    std::string fix;
    if (cvd && (cvd->empty() || *cvd == "-1" || *cvd == "none"))
      fix = "CUDA_VISIBLE_DEVICES='" + *cvd + "' hides every GPU: unset it or list the GPUs to use.";
    else if (L.nvml_device_count && *L.nvml_device_count > 0)
      fix = "The driver lists " + std::to_string(*L.nvml_device_count) +
            " GPU(s) but CUDA can use none: check CUDA_VISIBLE_DEVICES, that the driver is new enough for the runtime "
            "(driver.cuda_runtime), and dmesg for Xid errors.";
    else
      fix = "No GPU is visible: check that the driver is loaded (nvidia-smi), that a container was started with the "
            "GPUs passed in, and CUDA_VISIBLE_DEVICES.";
    return {make_check(id, std::nullopt, Severity::fail, "CUDA sees no GPU",
                       ev + (cuda_error.empty() ? std::string() : "; CUDA: " + cuda_error), fix)};
  }
  if (!L.nvml_device_count) {
    if (cvd)
      return {make_check(id, std::nullopt, Severity::info,
                         "CUDA sees " + std::to_string(cuda_n) + " GPU(s), limited by CUDA_VISIBLE_DEVICES; the physical "
                         "count is not available",
                         ev)};
    return {make_check(id, std::nullopt, Severity::info,
                       "CUDA sees " + std::to_string(cuda_n) + " GPU(s); the physical count is not available (no NVML)", ev)};
  }
  const int phys = *L.nvml_device_count;
  if (phys > cuda_n) {
    const int hidden = phys - cuda_n;
    const std::string what = "CUDA sees " + std::to_string(cuda_n) + " of the " + std::to_string(phys) + " GPUs the driver lists";
    if (cvd)
      return {make_check(id, std::nullopt, Severity::warn,
                         what + ": CUDA_VISIBLE_DEVICES='" + *cvd + "' hides " + std::to_string(hidden), ev,
                         "If this process (or a framework started the same way) should use every GPU, unset "
                         "CUDA_VISIBLE_DEVICES or list them all (e.g. 0,1,2,3). Job schedulers (Slurm, Kubernetes) set "
                         "it from the job's GPU request: check the request rather than overriding it.")};
    if (mig)
      return {make_check(id, std::nullopt, Severity::warn, what + " (MIG is on)", ev,
                         "With MIG on, CUDA sees MIG instances, not GPUs: see gpu.mig.")};
    return {make_check(id, std::nullopt, Severity::fail,
                       what + ", and CUDA_VISIBLE_DEVICES is not set: " + std::to_string(hidden) + " GPU(s) unusable", ev,
                       "A GPU the driver lists cannot be opened by CUDA: look for Xid errors and 'fallen off the bus' in "
                       "dmesg, compare nvidia-smi -L with this list, check the devices cgroup of the container; reset "
                       "the GPU (nvidia-smi -r -i N) or reboot, and RMA a GPU that keeps dropping out.")};
  }
  if (phys < cuda_n)
    return {make_check(id, std::nullopt, Severity::info,
                       "CUDA sees " + std::to_string(cuda_n) + " devices, NVML " + std::to_string(phys) +
                           " (MIG instances or NVML filtered by the container)",
                       ev)};
  return {make_check(id, std::nullopt, Severity::ok,
                     "CUDA and the driver both see " + std::to_string(cuda_n) + " GPU" + (cuda_n == 1 ? "" : "s"), ev)};
}

std::vector<Check> rule_device_order(const DoctorInput& in) {
  const auto gpus = gpus_of(in.environment);
  if (gpus.size() < 2) return {};
  const std::string order = in.live.cuda_device_order.value_or("");
  std::set<std::string> names;
  for (const auto& g : gpus) names.insert(g.name);
  const std::string ev = "CUDA_DEVICE_ORDER " + (order.empty() ? std::string("not set (FASTEST_FIRST)") : "'" + order + "'") +
                         "; " + std::to_string(names.size()) + " GPU model(s)";
  if (order == "PCI_BUS_ID")
    return {make_check("gpu.device_order", std::nullopt, Severity::ok, "CUDA numbers GPUs by PCI bus id, as nvidia-smi does", ev)};
  if (!in.live.recorded)
    return {make_check("gpu.device_order", std::nullopt, Severity::info, "CUDA_DEVICE_ORDER not recorded", ev)};
  return {make_check("gpu.device_order", std::nullopt, names.size() > 1 ? Severity::warn : Severity::info,
                     names.size() > 1 ? "CUDA numbers these mixed GPUs fastest first, nvidia-smi by bus id: indices differ"
                                      : "CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA and nvidia-smi indices may differ",
                     ev, "export CUDA_DEVICE_ORDER=PCI_BUS_ID so that CUDA indices match nvidia-smi and NVML.")};
}

std::vector<Check> rule_processes(const DoctorInput& in) {
  std::vector<Check> out;
  for (const auto& g : gpus_of(in.environment)) {
    const GpuLive* l = in.live.gpu(g.index);
    if (!l || !l->processes) {
      out.push_back(make_check("gpu.processes", g.index, Severity::info, "processes on the GPU: not available",
                               "NVML nvmlDeviceGetComputeRunningProcesses not available"));
      continue;
    }
    std::vector<std::string> others;
    for (size_t i = 0; i < l->processes->size(); ++i) {
      const ProcessUse& p = (*l->processes)[i];
      if (in.live.self_pid != 0 && int(p.pid) == in.live.self_pid) continue;
      std::string s = "pid " + std::to_string(p.pid);
      const std::string name = i < l->process_names.size() ? l->process_names[i] : "";
      if (!name.empty() || p.used_bytes)
        s += " (" + name + (name.empty() || !p.used_bytes ? "" : ", ") + (p.used_bytes ? gib(*p.used_bytes) : std::string()) + ")";
      others.push_back(s);
    }
    if (others.empty())
      out.push_back(make_check("gpu.processes", g.index, Severity::ok, "no other process uses " + g.label()));
    else
      out.push_back(make_check("gpu.processes", g.index, Severity::warn,
                               std::to_string(others.size()) + " other process(es) use " + g.label(), join(others, "; "),
                               "Stop them or choose idle GPUs (--gpus): results taken on a shared GPU are low and noisy, "
                               "and memory-hungry cases may not fit."));
  }
  return out;
}

std::vector<Check> rule_mig(const DoctorInput& in) {
  std::vector<Check> out;
  // MIG exists from compute capability 8.0 on: below it, one line for all such GPUs.
  std::vector<std::string> pre_mig;
  for (const auto& g : gpus_of(in.environment))
    if (g.cc && *g.cc < 80 && !jbool(*g.j, "mig_mode")) pre_mig.push_back(std::to_string(g.index));
  if (!pre_mig.empty())
    out.push_back(make_check("gpu.mig", std::nullopt, Severity::info,
                             "MIG: not applicable (compute capability below 8.0)",
                             "GPU(s) " + join(pre_mig, ", ") + ": MIG (multi-instance GPU) starts with compute capability 8.0"));
  for (const auto& g : gpus_of(in.environment)) {
    const auto mig = jbool(*g.j, "mig_mode");
    if (!mig && g.cc && *g.cc < 80) continue;
    if (!mig)
      out.push_back(make_check("gpu.mig", g.index, Severity::info, "MIG mode not reported (unsupported or no NVML)"));
    else if (*mig)
      out.push_back(make_check("gpu.mig", g.index, Severity::warn, "MIG mode is on: CUDA sees instances, not the whole GPU",
                               g.label() + " has MIG enabled",
                               "To measure the whole GPU: nvidia-smi -i " + std::to_string(g.index) +
                                   " -mig 0, then reset the GPU; leave MIG on where the node is meant to be shared."));
    else
      out.push_back(make_check("gpu.mig", g.index, Severity::ok, "MIG mode off"));
  }
  return out;
}

namespace {

// What ECC costs a GPU's memory: its device profile's `ecc_memory_share` (GDDR GPUs reserve part of
// the memory for the check bits; HBM GPUs keep them aside), as text ("1,536 MiB of 24,576 MiB,
// 6.25%"); empty when the profile does not say.
std::string ecc_cost_text(const GpuView& g) {
  const std::string profile = jstr(*g.j, "profile").value_or("");
  const DeviceProfile* p = profile.empty() ? nullptr : builtin_profiles().find(profile);
  if (!p) return "";
  const auto share = p->numbers.find("ecc_memory_share");
  const auto total = p->numbers.find("memory_mib");
  if (share == p->numbers.end() || total == p->numbers.end()) return "";
  const auto mib = [](double v) {
    std::string s = std::to_string((long long)std::llround(v));
    for (int i = int(s.size()) - 3; i > 0; i -= 3) s.insert(size_t(i), ",");
    return s + " MiB";
  };
  return mib(share->second * total->second) + " of " + mib(total->second) + ", " + fmt(100 * share->second, 2) +
         "%, on a " + p->name;
}

}  // namespace

std::vector<Check> rule_ecc(const DoctorInput& in) {
  std::vector<Check> out;
  for (const auto& g : gpus_of(in.environment)) {
    const std::string n = std::to_string(g.index);
    // ecc.mode
    const auto mode = jbool(*g.j, "ecc_enabled");
    if (!mode)
      out.push_back(make_check("ecc.mode", g.index, Severity::info, "ECC mode not reported (unsupported or no NVML)"));
    else if (*mode) {
      const std::string cost = ecc_cost_text(g);
      out.push_back(make_check("ecc.mode", g.index, Severity::ok,
                               cost.empty() ? std::string("ECC on") : "ECC on: it reserves " + cost,
                               cost.empty() ? std::string()
                                            : g.label() + ": the memory CUDA reports (and batch sizes can use) is "
                                                          "what is left after the ECC reserve"));
    } else {
      const std::string cost = ecc_cost_text(g);
      out.push_back(make_check("ecc.mode", g.index, Severity::warn, "ECC is off", g.label() + " runs without ECC",
                               "Turn ECC on for compute work: nvidia-smi -i " + n + " -e 1, then reboot or reset the GPU. " +
                                   (cost.empty() ? std::string("On GDDR GPUs ECC reserves part of the memory (and costs some "
                                                               "bandwidth); HBM GPUs have it always on.")
                                                 : "It reserves " + cost +
                                                       " (and costs some bandwidth): a batch that fills the memory "
                                                       "with ECC off needs to shrink by as much.")));
    }
    // ecc.errors
    const GpuLive* l = in.live.gpu(g.index);
    const EccCounters e = l ? l->ecc : EccCounters{};
    if (!e.volatile_uncorrected && !e.aggregate_uncorrected && !e.volatile_corrected && !e.aggregate_corrected) {
      out.push_back(make_check("ecc.errors", g.index, Severity::info, "ECC error counters not available",
                               mode && !*mode ? "ECC is off" : "NVML nvmlDeviceGetTotalEccErrors not available"));
    } else {
      auto v = [](const std::optional<unsigned long long>& x) { return x ? std::to_string(*x) : std::string("n/a"); };
      const std::string ev = "uncorrectable: " + v(e.volatile_uncorrected) + " since the driver loaded, " +
                             v(e.aggregate_uncorrected) + " over the GPU's life; corrected: " + v(e.volatile_corrected) +
                             " / " + v(e.aggregate_corrected);
      if (e.volatile_uncorrected.value_or(0) > 0)
        out.push_back(make_check(
            "ecc.errors", g.index, Severity::fail,
            std::to_string(*e.volatile_uncorrected) + " uncorrectable ECC error(s) since the driver loaded", ev,
            "The GPU's memory returned data ECC could not correct: drain the node, read 'nvidia-smi -q -d "
            "ECC,PAGE_RETIREMENT,ROW_REMAPPER -i " + n + "' and dmesg (Xid 48, 63, 64, 94, 95), reset the GPU to "
            "retire or remap the bad memory; if errors come back, RMA the GPU."));
      else if (e.aggregate_uncorrected.value_or(0) > 0)
        out.push_back(make_check("ecc.errors", g.index, Severity::warn,
                                 std::to_string(*e.aggregate_uncorrected) + " uncorrectable ECC error(s) in the GPU's life", ev,
                                 "None since the driver loaded; watch the counters (page retirement or row remapping should "
                                 "have isolated the memory: see ecc.retired) and RMA the GPU if they grow."));
      else if (e.volatile_corrected.value_or(0) > 0 || e.aggregate_corrected.value_or(0) > 0)
        out.push_back(make_check("ecc.errors", g.index, Severity::info, "corrected ECC errors only", ev,
                                 "Corrected errors are handled by ECC; a steadily rising count predicts a failing GPU."));
      else
        out.push_back(make_check("ecc.errors", g.index, Severity::ok, "no ECC errors", ev));
    }
    // ecc.retired: page retirement (before Ampere) and row remapping (Ampere and newer)
    const RetiredPages rp = l ? l->retired : RetiredPages{};
    const std::optional<RemappedRows> rr = l ? l->remapped : std::nullopt;
    if (!rr && !rp.single_bit && !rp.double_bit && !rp.pending) {
      out.push_back(make_check("ecc.retired", g.index, Severity::info, "retired pages / remapped rows not available"));
      continue;
    }
    std::vector<std::string> ev;
    if (rp.single_bit || rp.double_bit)
      ev.push_back("retired pages: " + std::to_string(rp.single_bit.value_or(0)) + " for multiple single-bit errors, " +
                   std::to_string(rp.double_bit.value_or(0)) + " for double-bit errors");
    if (rp.pending) ev.push_back(std::string("page retirement pending: ") + (*rp.pending ? "yes" : "no"));
    if (rr)
      ev.push_back("remapped rows: " + std::to_string(rr->correctable) + " correctable, " + std::to_string(rr->uncorrectable) +
                   " uncorrectable, pending " + (rr->pending ? "yes" : "no") + ", failure " + (rr->failure ? "yes" : "no"));
    const std::string evs = join(ev, "; ");
    const unsigned retired = rp.single_bit.value_or(0) + rp.double_bit.value_or(0);
    if (rr && rr->failure)
      out.push_back(make_check("ecc.retired", g.index, Severity::fail, "row remapping failed: the GPU has no spare rows left", evs,
                               "RMA the GPU: a bank ran out of spare rows, so new memory faults can no longer be isolated."));
    else if ((rr && rr->pending) || rp.pending.value_or(false))
      out.push_back(make_check("ecc.retired", g.index, Severity::fail,
                               "a GPU reset is needed to finish retiring or remapping faulty memory", evs,
                               "Drain the GPU and reset it (nvidia-smi -r -i " + n + ") or reboot; until then the faulty memory "
                               "is still in use."));
    else if (retired >= 60)
      out.push_back(make_check("ecc.retired", g.index, Severity::warn, std::to_string(retired) + " pages retired", evs,
                               "NVIDIA's guideline is to RMA a GPU with 60 or more retired pages."));
    else if (retired > 0 || (rr && rr->uncorrectable > 0))
      out.push_back(make_check("ecc.retired", g.index, Severity::info, "some memory has been retired or remapped", evs,
                               "Isolated by the GPU; watch the counts grow (nvidia-smi -q -d PAGE_RETIREMENT,ROW_REMAPPER)."));
    else
      out.push_back(make_check("ecc.retired", g.index, Severity::ok, "nothing retired or pending", evs));
  }
  return out;
}

std::vector<Check> rule_persistence(const DoctorInput& in) {
  std::vector<Check> out;
  for (const auto& g : gpus_of(in.environment)) {
    const auto pm = jbool(*g.j, "persistence_mode");
    if (!pm)
      out.push_back(make_check("gpu.persistence", g.index, Severity::info, "persistence mode not reported"));
    else if (*pm)
      out.push_back(make_check("gpu.persistence", g.index, Severity::ok, "persistence mode on"));
    else
      out.push_back(make_check("gpu.persistence", g.index, Severity::warn, "persistence mode is off",
                               g.label() + ": the driver tears the GPU down when the last client exits",
                               "Every CUDA start then pays driver initialisation (seconds on multi-GPU nodes) and settings "
                               "such as application clocks are lost: sudo systemctl enable --now nvidia-persistenced "
                               "(or nvidia-smi -pm 1)."));
  }
  return out;
}

std::vector<Check> rule_throttle(const DoctorInput& in) {
  std::vector<Check> out;
  const std::string cooling =
      "Check the cooling: inlet air temperature, fans and fan profile, blocked or dusty heat sinks, airflow blanks in "
      "empty slots; for passively cooled GPUs (P40, H100/H200 SXM) the chassis fans must push enough air through them.";
  for (const auto& g : gpus_of(in.environment)) {
    const std::string n = std::to_string(g.index);
    std::vector<std::string> idle, busy;
    bool known = false;
    if (g.j->contains("throttle_reasons") && (*g.j)["throttle_reasons"].is_array()) {
      known = true;
      for (const auto& r : (*g.j)["throttle_reasons"])
        if (r.is_string()) idle.push_back(r.get<std::string>());
    }
    const GpuLive* l = in.live.gpu(g.index);
    if (l && l->throttle_mask_loaded) {
      known = true;
      busy = throttle_reason_names(*l->throttle_mask_loaded);
    }
    if (!known) {
      out.push_back(make_check("gpu.throttle", g.index, Severity::info, "clock throttle reasons not available"));
      continue;
    }
    std::set<std::string> all(idle.begin(), idle.end());
    all.insert(busy.begin(), busy.end());
    std::string ev = "NVML clocks-event reasons at capture: [" + join(idle, ", ") + "]";
    if (l && l->throttle_mask_loaded) ev += "; during host-to-device copies: [" + join(busy, ", ") + "]";
    const auto temp = jnum(*g.j, "temperature_c");
    if (temp) ev += "; " + fmt(*temp, 0) + " C";
    const bool idle_power_cap = std::find(idle.begin(), idle.end(), "sw_power_cap") != idle.end();
    if (all.count("hw_thermal_slowdown"))
      out.push_back(make_check("gpu.throttle", g.index, Severity::fail,
                               "hardware thermal slowdown: the GPU is too hot and halves its clocks", ev, cooling));
    else if (all.count("hw_power_brake_slowdown"))
      out.push_back(make_check("gpu.throttle", g.index, Severity::fail,
                               "hardware power brake: the board asserted an external slowdown", ev,
                               "The power brake comes from the system: check the power supplies (redundancy lost, a PSU "
                               "failed or is unplugged), the GPU's power cables, and the BMC's event log."));
    else if (all.count("hw_slowdown"))
      out.push_back(make_check("gpu.throttle", g.index, Severity::fail, "hardware slowdown is active", ev,
                               "HW slowdown is asserted for overheating or a power problem: nvidia-smi -q -d PERFORMANCE,"
                               "TEMPERATURE,POWER -i " + n + " says which; " + cooling + " Check the power cables and PSUs."));
    else if (all.count("sw_thermal_slowdown"))
      out.push_back(make_check("gpu.throttle", g.index, Severity::warn,
                               "software thermal slowdown: the driver lowers clocks to cool the GPU", ev, cooling));
    else if (idle_power_cap) {
      const auto limit = jnum(*g.j, "power_limit_w");
      out.push_back(make_check("gpu.throttle", g.index, Severity::warn, "power-capped while idle",
                               ev + (limit ? "; power limit " + fmt(*limit, 0) + " W" : std::string()),
                               "The power limit may be below the board's default: read both first (nvidia-smi -i " + n +
                                   " --query-gpu=power.limit,power.default_limit,power.max_limit --format=csv); only if "
                                   "the limit is below power.default_limit, restore it: nvidia-smi -i " + n +
                                   " -pl <power.default_limit as read>. If they are equal, the cap comes from elsewhere "
                                   "(the chassis or BMC power budget)."));
    } else if (all.count("applications_clocks_setting") || all.count("display_clock_setting") || all.count("sync_boost")) {
      // A GPU whose default application clock is its base clock (a P40: 1303 MHz) reaches its boost
      // only by explicit application clocks: -rac would restore the base clock, not raise it.
      const auto mem = jnum(*g.j, "clock_mem_max_mhz"), sm = jnum(*g.j, "clock_sm_max_mhz");
      const std::string ac = mem && sm ? fmt(*mem, 0) + "," + fmt(*sm, 0) : std::string("<memory>,<graphics>");
      out.push_back(make_check("gpu.throttle", g.index, Severity::info, "clocks limited by a setting", ev,
                               "Application clocks or a clock setting hold the GPU below its boost clock. List the "
                               "supported pairs (nvidia-smi -q -d SUPPORTED_CLOCKS -i " + n +
                                   ") and set the highest explicitly: sudo nvidia-smi -i " + n + " -ac " + ac +
                                   " (memory,graphics in MHz; on a Tesla P40 memory 3615, graphics up to 1531). "
                                   "nvidia-smi -rac is not the fix: it restores the default application clocks, which on "
                                   "a P40 is the 1303 MHz base clock. Locked clocks are reset with nvidia-smi -rgc -i " +
                                   n + "."));
    }
    else
      out.push_back(make_check("gpu.throttle", g.index, Severity::ok, "no throttling", ev));
  }
  return out;
}

std::vector<Check> rule_thermal(const DoctorInput& in) {
  std::vector<Check> out;
  for (const auto& g : gpus_of(in.environment)) {
    const auto temp = jnum(*g.j, "temperature_c");
    const auto limit = jnum(*g.j, "power_limit_w");
    std::string ev = g.label() + ": " + (temp ? fmt(*temp, 0) + " C" : std::string("temperature unknown")) +
                     (limit ? ", power limit " + fmt(*limit, 0) + " W" : std::string());
    if (!temp)
      out.push_back(make_check("gpu.thermal", g.index, Severity::info, "temperature not available", ev));
    else if (*temp >= 85)
      out.push_back(make_check("gpu.thermal", g.index, Severity::warn, "GPU at " + fmt(*temp, 0) + " C", ev,
                               "Over 85 C the GPU is near its slowdown temperature; find out why (load from another process, "
                               "airflow, fan failure) before benchmarking."));
    else
      out.push_back(make_check("gpu.thermal", g.index, Severity::ok, "GPU at " + fmt(*temp, 0) + " C", ev));
  }
  return out;
}

}  // namespace nb
