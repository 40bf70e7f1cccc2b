#include "run/session.hpp"

namespace nb {

Session::Session(ProfileDb profiles, Settings settings)
    : nvml_(std::make_unique<Nvml>(settings.nvml_library)), profiles_(std::move(profiles)), settings_(std::move(settings)) {
  set_current_settings(settings_);
  env_ = capture_environment(*nvml_, profiles_);
}

GpuSlot& Session::slot(int gpu) {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_[gpu];  // std::map nodes stay put: the reference outlives later insertions
}

}  // namespace nb
