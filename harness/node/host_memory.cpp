#include "node/host_memory.hpp"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include <cuda_runtime_api.h>

#include "base/error.hpp"

namespace nb {

std::string to_string(HostMemKind k) {
  switch (k) {
    case HostMemKind::pinned: return "pinned";
    case HostMemKind::pageable: return "pageable";
    case HostMemKind::write_combined: return "write_combined";
  }
  return "?";
}

int numa_node_count() {
  int n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("node", 0) == 0 && name.size() > 4 && std::isdigit(static_cast<unsigned char>(name[4]))) ++n;
  }
  return n;
}

std::optional<int> gpu_numa_node(const std::string& pci_bus_id) {
  if (pci_bus_id.empty() || numa_node_count() < 2) return std::nullopt;
  std::string id = pci_bus_id;
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return std::tolower(c); });
  std::ifstream f("/sys/bus/pci/devices/" + id + "/numa_node");
  int node = -1;
  if (!(f >> node) || node < 0) return std::nullopt;
  return node;
}

bool bind_to_numa_node(void* p, size_t bytes, int node) {
  unsigned long mask[16] = {};
  if (node < 0 || node >= int(sizeof(mask) * 8)) return false;
  mask[node / (8 * sizeof(unsigned long))] |= 1ul << (node % (8 * sizeof(unsigned long)));
  return syscall(SYS_mbind, p, bytes, 2 /* MPOL_BIND */, mask, sizeof(mask) * 8, 0) == 0;
}

HostBuffer::HostBuffer(HostMemKind kind, size_t bytes, std::optional<int> numa_node) : kind_(kind), bytes_(bytes) {
  if (bytes == 0) throw Error("HostBuffer: zero bytes");
  if (kind == HostMemKind::pageable) {
    ptr_ = std::malloc(bytes);
    if (!ptr_) throw CudaError(cudaErrorMemoryAllocation, "malloc of " + std::to_string(bytes) + " bytes failed");
    std::memset(ptr_, 0, bytes);  // touch every page so the copy does not measure page faults
    return;
  }
  if (kind == HostMemKind::pinned && numa_node) {
    // Bind the pages to the GPU's node (MPOL_BIND = 2), then pin them.
    ptr_ = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ptr_ == MAP_FAILED) {
      ptr_ = nullptr;
      throw CudaError(cudaErrorMemoryAllocation, "mmap of " + std::to_string(bytes) + " bytes failed");
    }
    mmapped_ = true;
    if (bind_to_numa_node(ptr_, bytes, *numa_node)) bound_node_ = numa_node;
    std::memset(ptr_, 0, bytes);
    NB_CUDA(cudaHostRegister(ptr_, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable));
    registered_ = true;
  } else {
    unsigned flags = cudaHostAllocMapped | cudaHostAllocPortable;
    if (kind == HostMemKind::write_combined) flags |= cudaHostAllocWriteCombined;
    NB_CUDA(cudaHostAlloc(&ptr_, bytes, flags));
    cuda_alloc_ = true;
  }
  NB_CUDA(cudaHostGetDevicePointer(&dev_, ptr_, 0));
}

HostBuffer::HostBuffer(HostBuffer&& o) noexcept
    : kind_(o.kind_), bytes_(std::exchange(o.bytes_, 0)), ptr_(std::exchange(o.ptr_, nullptr)),
      dev_(std::exchange(o.dev_, nullptr)), mmapped_(std::exchange(o.mmapped_, false)),
      registered_(std::exchange(o.registered_, false)), cuda_alloc_(std::exchange(o.cuda_alloc_, false)),
      bound_node_(o.bound_node_) {}

HostBuffer::~HostBuffer() {
  if (!ptr_) return;
  if (registered_) (void)cudaHostUnregister(ptr_);
  if (cuda_alloc_) (void)cudaFreeHost(ptr_);
  else if (mmapped_) munmap(ptr_, bytes_);
  else if (kind_ == HostMemKind::pageable) std::free(ptr_);
}

HostBuffer& HostBufferPool::get(HostMemKind kind, int slot, size_t bytes, std::optional<int> numa_node) {
  for (Held& h : held_) {
    if (h.kind != kind || h.slot != slot || h.node != numa_node) continue;
    if (h.buffer && h.buffer->bytes() >= bytes) return *h.buffer;
    h.buffer.reset();  // released before the larger one is made: never both at once
    h.buffer = std::make_unique<HostBuffer>(kind, bytes, numa_node);
    ++allocations_;
    return *h.buffer;
  }
  held_.push_back(Held{kind, slot, numa_node, std::make_unique<HostBuffer>(kind, bytes, numa_node)});
  ++allocations_;
  return *held_.back().buffer;
}

size_t HostBufferPool::held_bytes() const {
  size_t n = 0;
  for (const Held& h : held_) n += h.buffer ? h.buffer->bytes() : 0;
  return n;
}

}  // namespace nb
