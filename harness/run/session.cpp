#include "run/session.hpp"

#include "base/resources.hpp"

namespace nb {

Session::Session(ProfileDb profiles, Settings settings)
    : nvml_(std::make_unique<Nvml>(settings.text("NODEBENCH_NVML_LIBRARY"))),
      profiles_(std::move(profiles)),
      settings_(std::move(settings)) {
  set_current_settings(settings_);
  env_ = capture_environment(*nvml_, profiles_);
}

Session::~Session() { release_resources(); }

GpuSlot& Session::slot(int gpu) {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_[gpu];  // std::map nodes stay put: the reference outlives later insertions
}

void Session::release_resources() {
  resources_.clear();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [gpu, slot] : slots_) {
    const bool held = (slot.resources && slot.resources->size() > 0) ||
                      (slot.family_resources && slot.family_resources->size() > 0);
    if (!held) continue;
    auto clear = [&] {
      if (slot.family_resources) slot.family_resources->clear();
      if (slot.resources) slot.resources->clear();
    };
    try {
      DeviceGuard guard(gpu);
      clear();
    } catch (const std::exception&) {
      clear();  // the GPU is gone: release what can be released
    }
  }
}

void Session::release_family_resources(const std::string& family, int except_gpu) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [gpu, slot] : slots_) {
    if (gpu == except_gpu || slot.family != family || !slot.family_resources) continue;
    try {
      DeviceGuard guard(gpu);
      slot.family_resources->clear();
    } catch (const std::exception&) {
      slot.family_resources->clear();  // the GPU is gone: release what can be released
    }
    slot.family.clear();
  }
}

}  // namespace nb
