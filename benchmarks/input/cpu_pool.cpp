#include "cpu_pool.hpp"

#include <sched.h>
#include <time.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include "node/environment.hpp"
#include "base/error.hpp"
#include "node/host_memory.hpp"

namespace nb::input {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::vector<int> parse_cpulist(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string part;
  auto number = [&](const std::string& s) {
    if (s.empty() || !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }))
      throw Error("cpu list '" + text + "': '" + s + "' is not a CPU number");
    return std::stoi(s);
  };
  while (std::getline(ss, part, ',')) {
    while (!part.empty() && std::isspace(static_cast<unsigned char>(part.back()))) part.pop_back();
    if (part.empty()) continue;
    const size_t dash = part.find('-');
    if (dash == std::string::npos) {
      out.push_back(number(part));
      continue;
    }
    const int a = number(part.substr(0, dash)), b = number(part.substr(dash + 1));
    if (b < a) throw Error("cpu list '" + text + "': range '" + part + "' runs backwards");
    for (int i = a; i <= b; ++i) out.push_back(i);
  }
  return out;
}

namespace {

int read_int(const std::string& path, int fallback) {
  const std::string s = read_first_line(path);
  try {
    return s.empty() ? fallback : std::stoi(s);
  } catch (const std::exception&) {
    return fallback;
  }
}

}  // namespace

std::vector<Cpu> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) throw Error(std::string("sched_getaffinity: ") + std::strerror(errno));
  std::map<int, int> node_of;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/sys/devices/system/node", ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("node", 0) != 0 || n.size() < 5 || !std::isdigit(static_cast<unsigned char>(n[4]))) continue;
    try {
      for (int c : parse_cpulist(read_first_line(e.path().string() + "/cpulist"))) node_of[c] = std::stoi(n.substr(4));
    } catch (const Error&) {
    }
  }
  std::vector<Cpu> out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    const std::string t = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
    Cpu cpu;
    cpu.id = c;
    cpu.core = read_int(t + "core_id", c);
    cpu.package = read_int(t + "physical_package_id", 0);
    cpu.node = node_of.count(c) ? node_of[c] : 0;
    out.push_back(cpu);
  }
  return out;
}

std::vector<int> pin_order(const std::vector<Cpu>& cpus, std::optional<int> node) {
  std::vector<Cpu> pick;
  for (const Cpu& c : cpus)
    if (!node || c.node == *node) pick.push_back(c);
  std::sort(pick.begin(), pick.end(), [](const Cpu& a, const Cpu& b) { return a.id < b.id; });
  // Each CPU's place among the hardware threads of its physical core (0: the first).
  std::map<std::pair<int, int>, int> seen;
  std::vector<std::tuple<int, int, int>> key;  // (thread rank, node, id)
  for (const Cpu& c : pick) key.emplace_back(seen[{c.package, c.core}]++, c.node, c.id);
  std::sort(key.begin(), key.end());
  std::vector<int> out;
  for (const auto& k : key) out.push_back(std::get<2>(k));
  return out;
}

int physical_core_count(const std::vector<Cpu>& cpus) {
  std::vector<std::pair<int, int>> cores;
  for (const Cpu& c : cpus) cores.emplace_back(c.package, c.core);
  std::sort(cores.begin(), cores.end());
  return int(std::unique(cores.begin(), cores.end()) - cores.begin());
}

std::vector<int> nodes_of(const std::vector<Cpu>& cpus) {
  std::vector<int> n;
  for (const Cpu& c : cpus) n.push_back(c.node);
  std::sort(n.begin(), n.end());
  n.erase(std::unique(n.begin(), n.end()), n.end());
  return n;
}

NumaChoice numa_node_for(const std::vector<Cpu>& cpus, const std::string& placement, std::optional<int> gpu_node,
                         int gpu_index) {
  const std::vector<int> nodes = nodes_of(cpus);
  if (nodes.size() < 2)
    return {std::nullopt, "one NUMA node (node " + std::to_string(nodes.empty() ? 0 : nodes[0]) +
                              "): no other socket to compare the GPU's with"};
  if (!gpu_node) return {std::nullopt, "the NUMA node of GPU " + std::to_string(gpu_index) + " is unknown (sysfs numa_node)"};
  int node = *gpu_node;
  if (placement == "other_node") node = *std::find_if(nodes.begin(), nodes.end(), [&](int n) { return n != *gpu_node; });
  if (pin_order(cpus, node).empty()) return {std::nullopt, "this process may run on no CPU of node " + std::to_string(node)};
  return {node, ""};
}

std::vector<int> sweep_counts(int n) {
  std::vector<int> out;
  for (int k = 1; k < n; k *= 2) out.push_back(k);
  if (n >= 1) out.push_back(n);
  return out;
}

namespace {

// Anonymous memory, its pages bound to a NUMA node when asked (before they are touched), then
// touched so that no page fault is timed.
class NodeMemory {
 public:
  NodeMemory(size_t bytes, std::optional<int> node) : bytes_(std::max<size_t>(bytes, 1)) {
    p_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p_ == MAP_FAILED) throw Error("mmap of " + std::to_string(bytes_) + " bytes failed");
    bound_ = node && bind_to_numa_node(p_, bytes_, *node);
    std::memset(p_, 0, bytes_);
  }
  ~NodeMemory() { munmap(p_, bytes_); }
  NodeMemory(const NodeMemory&) = delete;
  NodeMemory& operator=(const NodeMemory&) = delete;
  uint8_t* get() const { return static_cast<uint8_t*>(p_); }
  bool bound() const { return bound_; }

 private:
  size_t bytes_;
  void* p_ = nullptr;
  bool bound_ = false;
};

struct Span {
  const uint8_t* data;
  size_t size;
};

struct Worker {
  uint64_t images = 0;
  double decode_s = 0, augment_s = 0;
  double cpu_s = 0, wall_s = 0;  // the thread's CPU time and wall time in its loop
  std::string error;
};

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)  // 0: the calling thread
    throw Error("cannot pin a worker to CPU " + std::to_string(cpu) + ": " + std::strerror(errno));
}

}  // namespace

namespace {

// What the workers share: the files, the output batch, the counters.
struct Shared {
  std::vector<Span> files;
  NodeMemory* out = nullptr;
  size_t per_image = 0;
  std::vector<Worker> w;
  std::atomic<uint64_t> done{0};
  std::atomic<int> ready{0};
  std::atomic<bool> stop{false}, failed{false};
};

// A worker: pinned, then decode, crop, resize, flip and normalise into its slots until told to stop.
void worker_loop(Shared& sh, const PoolConfig& pc, int i) {
  Worker& me = sh.w[size_t(i)];
  try {
    pin_to(pc.cpus[size_t(i)]);
    JpegDecoder dec;
    Augmenter aug;
    Rgb img;
    CropSampler crops(pc.seed * 1000003ull + uint64_t(i));
    size_t k = (size_t(i) * 37) % sh.files.size();  // workers start at different files
    sh.ready.fetch_add(1);
    const double cpu0 = thread_cpu_s();
    const auto wall0 = Clock::now();
    const size_t slots = size_t(pc.slots_per_worker);
    while (!sh.stop.load(std::memory_order_relaxed)) {
      const Span& f = sh.files[k];
      k = (k + 1) % sh.files.size();
      const auto t0 = Clock::now();
      dec.decode(f.data, f.size, img);
      const auto t1 = Clock::now();
      const Crop c = crops.next(img.width, img.height);
      aug.run(img, c, pc.layout, pc.dtype, sh.out->get() + sh.per_image * (size_t(i) * slots + me.images % slots));
      const auto t2 = Clock::now();
      me.decode_s += std::chrono::duration<double>(t1 - t0).count();
      me.augment_s += std::chrono::duration<double>(t2 - t1).count();
      ++me.images;
      sh.done.fetch_add(1, std::memory_order_relaxed);
    }
    me.cpu_s = thread_cpu_s() - cpu0;
    me.wall_s = std::chrono::duration<double>(Clock::now() - wall0).count();
  } catch (const std::exception& e) {
    me.error = e.what();
    sh.failed.store(true);
    sh.ready.fetch_add(1);
  }
}

// The main thread: waits for the workers, warms up, then samples the time per image of all of
// them together until the sampling stops.
Measurement sample_workers(Shared& sh, const PoolConfig& pc, const MeasureConfig& mc) {
  const int nw = int(pc.cpus.size());
  auto wait_until = [&](auto cond) {
    while (!cond()) {
      if (sh.failed.load()) throw Error("a worker failed");
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  };
  wait_until([&] { return sh.ready.load() == nw; });
  const auto t0 = Clock::now();
  const uint64_t n0 = sh.done.load();
  wait_until([&] {
    return std::chrono::duration<double>(Clock::now() - t0).count() >= pc.warmup_s && sh.done.load() >= n0 + 2 * uint64_t(nw);
  });
  const uint64_t warm = sh.done.load() - n0;
  const double rate = double(warm) / std::chrono::duration<double>(Clock::now() - t0).count();
  // A sample spans images enough for about a fifteenth of the time cap (at least 20 ms), and at
  // least one image per worker.
  const double want_s = std::clamp(mc.max_time_s / 15.0, 0.02, 0.25);
  const uint64_t per_sample = std::max<uint64_t>(uint64_t(nw), uint64_t(std::ceil(rate * want_s)));
  Measurement m = sample_until_stop(mc, [&] {
    const uint64_t a = sh.done.load();
    const auto ta = Clock::now();
    wait_until([&] { return sh.done.load() >= a + per_sample; });
    const uint64_t b = sh.done.load();
    return std::chrono::duration<double>(Clock::now() - ta).count() / double(b - a);
  });
  m.warmup_runs = size_t(warm);  // images, all workers together
  return m;
}

}  // namespace

PoolResult run_pool(const ImageSet& set, const PoolConfig& pc, const MeasureConfig& mc) {
  const int nw = int(pc.cpus.size());
  if (nw == 0 || set.files.empty()) throw Error("run_pool: no CPU or no image");
  Shared sh;
  // The files, copied to the node when one is asked for; else read where they are.
  std::unique_ptr<NodeMemory> files_mem;
  if (pc.memory_node) {
    files_mem = std::make_unique<NodeMemory>(set.total_bytes(), pc.memory_node);
    size_t at = 0;
    for (const auto& f : set.files) {
      std::memcpy(files_mem->get() + at, f.bytes.data(), f.bytes.size());
      sh.files.push_back({files_mem->get() + at, f.bytes.size()});
      at += f.bytes.size();
    }
  } else {
    for (const auto& f : set.files) sh.files.push_back({f.bytes.data(), f.bytes.size()});
  }
  sh.per_image = image_elements() * element_bytes(pc.dtype);
  NodeMemory out(sh.per_image * size_t(nw) * size_t(pc.slots_per_worker), pc.memory_node);
  sh.out = &out;
  sh.w.resize(size_t(nw));
  std::vector<std::thread> threads;
  for (int i = 0; i < nw; ++i) threads.emplace_back(worker_loop, std::ref(sh), std::cref(pc), i);
  auto finish = [&] {
    sh.stop.store(true);
    for (auto& t : threads) t.join();
    for (const auto& x : sh.w)
      if (!x.error.empty()) throw Error(x.error);
  };
  PoolResult res;
  try {
    res.measurement = sample_workers(sh, pc, mc);
  } catch (...) {
    finish();  // a worker's own error says more than "a worker failed"
    throw;
  }
  finish();
  double dec = 0, aug = 0, cpu = 0, wall = 0;
  for (const auto& x : sh.w) {
    cpu += x.cpu_s, wall += x.wall_s, dec += x.decode_s, aug += x.augment_s;
    res.images += x.images;
    res.per_worker.push_back(x.images);
  }
  res.decode_per_image_ms = res.images ? 1e3 * dec / double(res.images) : 0;
  res.augment_per_image_ms = res.images ? 1e3 * aug / double(res.images) : 0;
  res.cpu_share = wall > 0 ? cpu / wall : 0;
  res.images_per_cpu_s = cpu > 0 ? double(res.images) / cpu : 0;
  res.memory_bound = pc.memory_node && out.bound() && (!files_mem || files_mem->bound());
  return res;
}

}  // namespace nb::input
