// Host buffers for transfer benchmarks: pinned (optionally on a NUMA node), write-combined,
// mapped into the device, or plain pageable memory. RAII, move-only.
#pragma once
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nb {

enum class HostMemKind { pinned, pageable, write_combined };
std::string to_string(HostMemKind k);

class HostBuffer {
 public:
  // `numa_node`: when set and the host has several nodes, the pages are bound to that node
  // before being pinned (mbind, then cudaHostRegister). Pinned and write-combined buffers are
  // also mapped into the device address space (device_ptr()).
  HostBuffer(HostMemKind kind, size_t bytes, std::optional<int> numa_node = std::nullopt);
  ~HostBuffer();
  HostBuffer(HostBuffer&& o) noexcept;
  HostBuffer& operator=(HostBuffer&&) = delete;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  void* get() const { return ptr_; }
  void* device_ptr() const { return dev_; }  // null for pageable
  size_t bytes() const { return bytes_; }
  HostMemKind kind() const { return kind_; }
  std::optional<int> bound_node() const { return bound_node_; }

 private:
  HostMemKind kind_;
  size_t bytes_ = 0;
  void* ptr_ = nullptr;
  void* dev_ = nullptr;
  bool mmapped_ = false, registered_ = false, cuda_alloc_ = false;
  std::optional<int> bound_node_;
};

// Host buffers kept from one case to the next (a family's cases of growing sizes): page-locking
// 1 GiB costs 0.3-1 s, more than its copies. `get` hands out the buffer of (kind, slot) when it
// holds at least `bytes`, else releases it and makes one of `bytes` (so the largest is kept);
// `slot` tells apart the buffers one case needs at once (a source and a destination). Not
// thread-safe: one GPU's cases run one after another.
class HostBufferPool {
 public:
  HostBuffer& get(HostMemKind kind, int slot, size_t bytes, std::optional<int> numa_node = std::nullopt);
  size_t held_bytes() const;
  int allocations() const { return allocations_; }

 private:
  struct Held {
    HostMemKind kind;
    int slot;
    std::optional<int> node;
    std::unique_ptr<HostBuffer> buffer;
  };
  std::vector<Held> held_;
  int allocations_ = 0;
};

// Binds the pages of [p, p + bytes) (page-aligned, not yet touched) to NUMA node `node`
// (mbind, MPOL_BIND); false when the kernel refuses (one node, no such node).
bool bind_to_numa_node(void* p, size_t bytes, int node);

// NUMA node of a GPU from sysfs (/sys/bus/pci/devices/<bus id>/numa_node), nullopt when
// unknown or when the host has a single node.
std::optional<int> gpu_numa_node(const std::string& pci_bus_id);
int numa_node_count();

}  // namespace nb
