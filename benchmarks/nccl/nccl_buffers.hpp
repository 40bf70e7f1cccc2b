// Internal to the nccl family: a rank's buffers for one collective, placed by the collective's
// shape (shared/nccl/collectives.hpp), the NCCL call that runs it, its fresh input and the check
// of its output on the GPU (nccl_buffers.cpp); used by the driver (nccl_driver.cpp).
#pragma once
#if NB_HAVE_NCCL
#include <memory>
#include <utility>

#include <nccl.h>

#include "base/resources.hpp"
#include "shared/nccl/collectives.hpp"
#include "shared/nccl/nccl_team.hpp"

namespace nb::nccl {

// A rank's buffers: `a` the send buffer (out of place), `b` the receive buffer; `in`/`out`
// where the collective reads and writes (in place: both inside `b`).
struct Slot {
  Member* member = nullptr;
  DeviceBuffer a, b;
  void* in = nullptr;
  void* out = nullptr;
  std::unique_ptr<Stream> stream;
  std::unique_ptr<Event> e0, e1;
  cudaGraphExec_t graph = nullptr;
  DeviceBuffer counters;  // [0] wrong elements, [1] first wrong index
  PinnedBuffer hold;      // [0] release, [1] timed out: the flag of the kernel that holds the stream
  int32_t* hold_dev = nullptr;
  Slot() = default;
  Slot(Slot&& o) noexcept
      : member(o.member), a(std::move(o.a)), b(std::move(o.b)), in(o.in), out(o.out), stream(std::move(o.stream)),
        e0(std::move(o.e0)), e1(std::move(o.e1)), graph(std::exchange(o.graph, nullptr)), counters(std::move(o.counters)),
        hold(std::move(o.hold)), hold_dev(std::exchange(o.hold_dev, nullptr)) {}
  Slot& operator=(Slot&&) = delete;
  Slot(const Slot&) = delete;
  ~Slot() { drop_graph(); }
  void drop_graph() {
    if (graph) (void)cudaGraphExecDestroy(graph);
    graph = nullptr;
  }
};

struct Layout {
  const coll::Counts& k;
  size_t esize;
  int rank, nranks;
  coll::DType dtype;
  bool in_place;
};

// The buffers of a rank by the collective's shape (in place: reduce-scatter's output is the
// rank's chunk of its input, all-gather's input the rank's chunk of its output).
void place(Slot& s, const Layout& l, coll::Shape shape);
// The collective's NCCL call on the slot's buffers.
ncclResult_t call(coll::Collective c, const Slot& s, const Layout& l, ncclComm_t comm, cudaStream_t st);
// Fresh input: everything the collective may write is poisoned first (all-ones bits: NaN in
// every type), so an element it failed to write is caught.
void init_input(Slot& s, const Layout& l, coll::Collective c, uint64_t seed, cudaStream_t st);
// The largest difference accepted from the exact result (0: exact).
double tolerance(coll::DType t, int nranks);
// Counts the output's mismatches against the expected result on the GPU (into s.counters).
void expect_output(Slot& s, const Layout& l, coll::Collective c, uint64_t seed, cudaStream_t st);
// One element of the type, as a double.
double decode(const void* p, coll::DType t);

}  // namespace nb::nccl

#endif  // NB_HAVE_NCCL
