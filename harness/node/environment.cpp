#include "node/environment.hpp"

#include <dlfcn.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

namespace nb {
namespace fs = std::filesystem;
using nlohmann::json;

std::string read_first_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  if (f) std::getline(f, line);
  return line;
}

namespace {

std::string os_pretty_name() {
  std::ifstream f("/etc/os-release");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
      return v;
    }
  }
  return "unknown";
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto pos = line.find(':');
      if (pos != std::string::npos) return line.substr(pos + 2);
    }
  }
  return "unknown";
}

json numa_nodes() {
  json nodes = json::array();
  std::error_code ec;
  const fs::path root("/sys/devices/system/node");
  if (!fs::exists(root, ec)) return nodes;
  std::vector<int> ids;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("node", 0) == 0 && n.size() > 4 && std::isdigit(static_cast<unsigned char>(n[4])))
      ids.push_back(std::atoi(n.c_str() + 4));
  }
  std::sort(ids.begin(), ids.end());
  for (int id : ids)
    nodes.push_back({{"id", id}, {"cpus", read_first_line(root.string() + "/node" + std::to_string(id) + "/cpulist")}});
  return nodes;
}

std::optional<long long> memory_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  long long kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit) {
    if (key == "MemTotal:") return kb * 1024;
  }
  return std::nullopt;
}

template <class T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

// dlopen the first library that loads and read a version through `symbol`.
template <class Fn>
void* open_first(std::initializer_list<const char*> names, const char* symbol, Fn*& fn) {
  for (const char* n : names) {
    if (void* lib = dlopen(n, RTLD_NOW | RTLD_LOCAL)) {
      if (void* s = dlsym(lib, symbol)) {
        fn = reinterpret_cast<Fn*>(s);
        return lib;
      }
      dlclose(lib);
    }
  }
  return nullptr;
}

}  // namespace

std::string cuda_version_string(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::optional<std::string> cublas_version_string() {
  const size_t v = cublasLtGetVersion();  // major*10000 + minor*100 + patch
  if (v == 0) return std::nullopt;
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
}

std::optional<std::string> cudnn_version_string() {
  size_t (*get)() = nullptr;
  if (!open_first({"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"}, "cudnnGetVersion", get)) return std::nullopt;
  const size_t v = get();
  // cuDNN 9: major*10000 + minor*100 + patch; cuDNN 8: major*1000 + minor*100 + patch.
  if (v >= 90000)
    return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
  return std::to_string(v / 1000) + "." + std::to_string((v / 100) % 10) + "." + std::to_string(v % 100);
}

std::optional<std::string> nccl_version_string() {
  int (*get)(int*) = nullptr;
  if (!open_first({"libnccl.so.2", "libnccl.so"}, "ncclGetVersion", get)) return std::nullopt;
  int v = 0;
  if (get(&v) != 0) return std::nullopt;
  // NCCL >= 2.9: major*10000 + minor*100 + patch; older: major*1000 + minor*100 + patch.
  if (v >= 20900)
    return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
  return std::to_string(v / 1000) + "." + std::to_string((v / 100) % 10) + "." + std::to_string(v % 100);
}

std::string no_gpu_diagnosis(const std::string& cuda_error) {
  std::ostringstream os;
  os << "nodebench: no usable GPU (" << cuda_error << ").\n";
  const std::string drv = read_first_line("/proc/driver/nvidia/version");
  os << "  NVIDIA kernel driver: " << (drv.empty() ? "not loaded (/proc/driver/nvidia/version absent)" : drv) << "\n";
  std::vector<std::string> nodes;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/dev", ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("nvidia", 0) == 0) nodes.push_back(e.path().string());
  }
  std::sort(nodes.begin(), nodes.end());
  os << "  device nodes: ";
  if (nodes.empty()) os << "none (/dev/nvidia* absent)";
  for (size_t i = 0; i < nodes.size(); ++i) os << (i ? " " : "") << nodes[i];
  os << "\n";
  const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
  os << "  CUDA_VISIBLE_DEVICES: " << (cvd ? (std::string("'") + cvd + "'") : std::string("not set")) << "\n";
  os << "  Check: the driver is installed and loaded (nvidia-smi), the container was started with\n"
        "  the GPUs passed in, CUDA_VISIBLE_DEVICES names existing GPUs, and the driver is new enough\n"
        "  for this CUDA runtime (" << cuda_version_string(CUDART_VERSION) << ").";
  return os.str();
}

namespace {

json host_json() {
  json host;
  char hn[256] = {};
  gethostname(hn, sizeof hn - 1);
  utsname u{};
  uname(&u);
  host["hostname"] = hn;
  host["os"] = os_pretty_name();
  host["kernel"] = std::string(u.sysname) + " " + u.release + " " + u.machine;
  host["cpu_model"] = cpu_model();
  host["cpu_count"] = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  host["numa_nodes"] = numa_nodes();
  host["memory_bytes"] = opt(memory_bytes());
  return host;
}

json software_json(const Nvml& nvml) {
  json sw;
  sw["driver_version"] = opt(nvml.driver_version());
  int drv = 0, rt = 0;
  sw["cuda_driver_version"] =
      cudaDriverGetVersion(&drv) == cudaSuccess && drv > 0 ? json(cuda_version_string(drv)) : json(nullptr);
  sw["cuda_runtime_version"] =
      cudaRuntimeGetVersion(&rt) == cudaSuccess ? json(cuda_version_string(rt)) : json(nullptr);
  sw["cuda_runtime_compiled"] = cuda_version_string(CUDART_VERSION);
  sw["cublas_version"] = opt(cublas_version_string());
  sw["cudnn_version"] = opt(cudnn_version_string());
  sw["nccl_version"] = opt(nccl_version_string());
  return sw;
}

// What CUDA's attributes say of a device's clocks and memory bus (0: not known).
struct DeviceAttrs {
  int clock_khz = 0, mem_khz = 0, bus_bits = 0;
};

DeviceAttrs device_attrs(int i) {
  DeviceAttrs a;
  (void)cudaDeviceGetAttribute(&a.clock_khz, cudaDevAttrClockRate, i);
  (void)cudaDeviceGetAttribute(&a.mem_khz, cudaDevAttrMemoryClockRate, i);
  (void)cudaDeviceGetAttribute(&a.bus_bits, cudaDevAttrGlobalMemoryBusWidth, i);
  (void)cudaGetLastError();
  return a;
}

// The GPU as the families see it: its properties, NVML index, PCIe link and expected peaks
// (`profile_note`: how the peaks were found).
GpuInfo gpu_info(int i, const cudaDeviceProp& p, const DeviceAttrs& a, const Nvml& nvml, const ProfileDb& profiles,
                 std::string& profile_note) {
  GpuInfo g;
  g.index = i;
  g.name = p.name;
  g.cc_major = p.major;
  g.cc_minor = p.minor;
  g.sm_count = p.multiProcessorCount;
  g.memory_bytes = p.totalGlobalMem;
  g.l2_bytes = size_t(p.l2CacheSize);
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, i) == cudaSuccess) g.pci_bus_id = bus;
  if (!g.pci_bus_id.empty()) g.nvml_index = nvml.find_by_pci(g.pci_bus_id);
  const int h = g.nvml_index.value_or(-1);
  PeakInputs pin;
  pin.name = g.name;
  pin.cc_major = g.cc_major;
  pin.cc_minor = g.cc_minor;
  pin.sm_count = g.sm_count;
  pin.max_sm_clock_mhz = nvml.max_sm_clock_mhz(h);
  if (!pin.max_sm_clock_mhz && a.clock_khz > 0) pin.max_sm_clock_mhz = a.clock_khz / 1000.0;
  if (a.mem_khz > 0) pin.mem_clock_mhz = a.mem_khz / 1000.0;
  if (a.bus_bits > 0) pin.mem_bus_width_bits = a.bus_bits;
  const DeviceProfile* prof = nullptr;
  g.peaks = expected_peaks(profiles, pin, &prof, &profile_note);
  if (prof) g.profile = prof->name;
  g.pcie = nvml.pcie(h);
  return g;
}

// The GPU's entry of the environment (docs/SCHEMA.md, environment.gpus).
json gpu_json(const GpuInfo& g, const DeviceAttrs& a, const Nvml& nvml, const std::string& profile_note) {
  const int h = g.nvml_index.value_or(-1);
  json gj;
  gj["index"] = g.index;
  gj["name"] = g.name;
  gj["uuid"] = opt(nvml.uuid(h));
  gj["pci_bus_id"] = g.pci_bus_id.empty() ? json(nullptr) : json(g.pci_bus_id);
  gj["compute_capability"] = g.cc_string();
  gj["sm_count"] = g.sm_count;
  gj["memory_bytes"] = g.memory_bytes;
  gj["l2_bytes"] = g.l2_bytes;
  gj["ecc_enabled"] = opt(nvml.ecc_enabled(h));
  gj["persistence_mode"] = opt(nvml.persistence_mode(h));
  gj["mig_mode"] = opt(nvml.mig_mode(h));
  std::optional<double> theo;
  if (g.pcie.gen_current && g.pcie.width_current) theo = pcie_gbps(*g.pcie.gen_current, *g.pcie.width_current);
  gj["pcie"] = {{"gen_current", opt(g.pcie.gen_current)}, {"gen_max", opt(g.pcie.gen_max)},
                {"width_current", opt(g.pcie.width_current)}, {"width_max", opt(g.pcie.width_max)},
                {"theoretical_gbps", opt(theo)}};
  const ClockSnapshot snap = nvml.snapshot(h);
  gj["clock_sm_mhz"] = opt(snap.sm_mhz);
  gj["clock_mem_mhz"] = opt(snap.mem_mhz);
  gj["clock_sm_max_mhz"] = opt(nvml.max_sm_clock_mhz(h));
  gj["clock_mem_max_mhz"] = opt(nvml.max_mem_clock_mhz(h));
  gj["clock_sm_attribute_mhz"] = a.clock_khz > 0 ? json(a.clock_khz / 1000.0) : json(nullptr);
  gj["power_limit_w"] = opt(nvml.power_limit_w(h));
  gj["temperature_c"] = opt(snap.temperature_c);
  gj["throttle_reasons"] = snap.throttle_mask ? json(throttle_reason_names(*snap.throttle_mask)) : json(nullptr);
  gj["profile"] = g.profile.empty() ? json(nullptr) : json(g.profile);
  gj["profile_note"] = profile_note.empty() ? json(nullptr) : json(profile_note);
  json pk = json::object();
  for (const auto& [k, v] : g.peaks) {
    pk[k] = {{"value", v.value}, {"source", v.source}};
    if (v.clock_mhz) pk[k]["clock_mhz"] = *v.clock_mhz;
  }
  gj["peaks"] = pk;
  return gj;
}

}  // namespace

Environment capture_environment(const Nvml& nvml, const ProfileDb& profiles) {
  Environment env;
  const json host = host_json();
  const json sw = software_json(nvml);
  json nv = {{"available", nvml.available()},
             {"error", nvml.available() ? json(nullptr) : json(nvml.error())}};
  const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");

  json gpus = json::array();
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    env.cuda_error = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
    (void)cudaGetLastError();
    count = 0;
  } else if (count == 0) {
    env.cuda_error = "cudaGetDeviceCount found 0 devices";
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    const DeviceAttrs a = device_attrs(i);
    std::string profile_note;
    GpuInfo g = gpu_info(i, p, a, nvml, profiles, profile_note);
    gpus.push_back(gpu_json(g, a, nvml, profile_note));
    env.gpus.push_back(std::move(g));
  }

  env.json = {{"host", host},
              {"software", sw},
              {"nvml", nv},
              {"cuda_visible_devices", cvd ? json(cvd) : json(nullptr)},
              {"cuda_error", env.cuda_error.empty() ? json(nullptr) : json(env.cuda_error)},
              {"gpus", gpus}};
  return env;
}

}  // namespace nb
