// What a run needs, owned in one place: the settings, NVML, the environment captured once, the
// device profiles, and each GPU's timing resources (created on first use). `run`, `validate`
// and later commands build a Session and hand it a Plan (plan.hpp).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "node/environment.hpp"
#include "bench/measure.hpp"
#include "node/nvml.hpp"
#include "bench/algo_choice.hpp"
#include "bench/resources_store.hpp"
#include "node/profiles.hpp"
#include "bench/settings.hpp"

namespace nb {

// One GPU's timing resources. `broken` is set after an error that leaves the CUDA context
// unusable (a sticky error); later cases on that GPU are recorded as failed without running.
struct GpuSlot {
  std::unique_ptr<Measurer> measurer;
  std::unique_ptr<Stream> stream;
  std::string broken;
  // What families keep on this GPU (handles, algorithm choices); emptied before the slot goes.
  std::unique_ptr<ResourceStore> resources = std::make_unique<ResourceStore>();
  // What the family of the last case run here keeps for its next cases (CaseContext::
  // family_resources); emptied before a case of another family runs (`family`: whose it is).
  std::unique_ptr<ResourceStore> family_resources = std::make_unique<ResourceStore>();
  std::string family;
};

class Session {
 public:
  // Captures the environment (never throws for a missing GPU or library: they are recorded).
  Session(ProfileDb profiles, Settings settings);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const Nvml& nvml() const { return *nvml_; }
  const Environment& env() const { return env_; }
  Environment& env() { return env_; }
  const Settings& settings() const { return settings_; }
  const ProfileDb& profiles() const { return profiles_; }
  bool has_gpus() const { return !env_.gpus.empty(); }
  const GpuInfo& gpu(int index) const { return env_.gpus.at(size_t(index)); }

  // The GPU's slot, created empty on first call; safe from several threads (one per GPU).
  GpuSlot& slot(int gpu);
  // What spans GPUs (NCCL teams), and the algorithm cache of the run (docs/SCHEMA.md).
  ResourceStore& resources() { return resources_; }
  AlgoCache& algo_cache() { return algo_cache_; }
  // Whether the run was asked to stop (Ctrl-C): set by run_plan from its hooks, read by the
  // cases that run long (CaseContext::stop_requested) so that they end early.
  std::function<bool()> stop_requested;
  // Destroys what the families kept (session-wide first, then each GPU's with that GPU current),
  // while the CUDA contexts are still there; the destructor calls it.
  void release_resources();
  // Empties what `family` keeps on every GPU but `except_gpu` (GpuSlot::family_resources): a
  // family whose cases run one GPU at a time (Family::shares_host) holds its buffers on one GPU
  // at a time, not on each GPU it has been through. Only while no other GPU runs a case.
  void release_family_resources(const std::string& family, int except_gpu);
  ~Session();

 private:
  std::unique_ptr<Nvml> nvml_;
  ProfileDb profiles_;
  Settings settings_;
  Environment env_;
  std::mutex mu_;
  std::map<int, GpuSlot> slots_;
  AlgoCache algo_cache_;
  ResourceStore resources_;  // last member: destroyed first
};

}  // namespace nb
