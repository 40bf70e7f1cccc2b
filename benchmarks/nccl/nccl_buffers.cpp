// Internal to the nccl family: a rank's buffers and the NCCL call of a collective (see nccl_buffers.hpp).
#include "nccl_buffers.hpp"

#if NB_HAVE_NCCL

#include <cstring>

#include "base/verify.hpp"
#include "kernels/nccl/collective_kernels.cuh"

namespace nb::nccl {

using coll::Collective;
using coll::DType;

namespace {

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::f32: return ncclFloat32;
    case DType::f16: return ncclFloat16;
    case DType::bf16:
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
      return ncclBfloat16;
#else
      throw SkipCase{"this NCCL has no bfloat16 (2.10 or newer needed)", ReasonKind::unsupported};
#endif
  }
  return ncclFloat32;
}

}  // namespace

void place(Slot& s, const Layout& l, coll::Shape shape) {
  const size_t chunk_at = size_t(l.rank) * l.k.chunk * l.esize;
  if (shape == coll::Shape::scatter && l.in_place) {
    s.b = DeviceBuffer(l.k.send * l.esize);
    s.in = s.b.get();
    s.out = s.b.as<char>() + chunk_at;
    return;
  }
  s.b = DeviceBuffer(l.k.recv * l.esize);
  s.out = s.b.get();
  if (!l.in_place) s.a = DeviceBuffer(l.k.send * l.esize);
  if (l.in_place) s.in = shape == coll::Shape::gather ? s.b.as<char>() + chunk_at : s.b.get();
  else s.in = s.a.get();
}

ncclResult_t call(Collective c, const Slot& s, const Layout& l, ncclComm_t comm, cudaStream_t st) {
  switch (c) {
    case Collective::all_reduce: return ncclAllReduce(s.in, s.out, l.k.send, nccl_type(l.dtype), ncclSum, comm, st);
    case Collective::reduce_scatter:
      return ncclReduceScatter(s.in, s.out, l.k.chunk, nccl_type(l.dtype), ncclSum, comm, st);
    case Collective::all_gather: return ncclAllGather(s.in, s.out, l.k.chunk, nccl_type(l.dtype), comm, st);
    case Collective::broadcast: return ncclBroadcast(s.in, s.out, l.k.send, nccl_type(l.dtype), 0, comm, st);
  }
  throw Error("no NCCL call for collective " + coll::to_string(c));
}

void init_input(Slot& s, const Layout& l, Collective c, uint64_t seed, cudaStream_t st) {
  if (s.a.get()) NB_CUDA(cudaMemsetAsync(s.a.get(), 0xFF, s.a.bytes(), st));
  NB_CUDA(cudaMemsetAsync(s.b.get(), 0xFF, s.b.bytes(), st));
  kernels::launch_coll_fill(st, s.in, l.k.send, l.dtype, c, l.rank, seed);
  NB_CUDA_LAUNCH();
}

double tolerance(DType t, int nranks) {
  // Sums of {0, 1} over up to 256 ranks are exact in bfloat16 (2048 in half).
  if (t == DType::bf16 && nranks > 256) return nranks / 64.0;
  if (t == DType::f16 && nranks > 2048) return nranks / 512.0;
  return 0.0;
}

void expect_output(Slot& s, const Layout& l, Collective c, uint64_t seed, cudaStream_t st) {
  NB_CUDA(cudaMemsetAsync(s.counters.get(), 0, 8, st));
  NB_CUDA(cudaMemsetAsync(s.counters.as<char>() + 8, 0xFF, 8, st));
  kernels::launch_coll_check(st, s.out, l.k.recv, l.dtype, c, l.rank, l.nranks, l.k.chunk, seed,
                             tolerance(l.dtype, l.nranks), s.counters.as<unsigned long long>());
  NB_CUDA_LAUNCH();
}

double decode(const void* p, DType t) {
  if (t == DType::f32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return t == DType::f16 ? half_to_double(h) : bf16_to_double(h);
}

}  // namespace nb::nccl

#endif  // NB_HAVE_NCCL
