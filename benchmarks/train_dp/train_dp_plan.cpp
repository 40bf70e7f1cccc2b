// The data-parallel training step's plan (see train_dp_plan.hpp).
#include "train_dp_plan.hpp"

#include "bench/settings.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace nb::train_dp {
namespace {

// The data-parallel step's settings (docs: benchmarks/train_dp/README.md).
const SettingRegistrar kBucket({"NODEBENCH_DP_BUCKET_MIB", SettingKind::number, "dp_bucket_mib", 25.0, 1 << 16, false,
                                "train_dp gradient bucket in MiB (default 25, PyTorch DDP's bucket_cap_mb)", "train_dp"});
const SettingRegistrar kAccumulation({"NODEBENCH_DP_ACCUMULATION", SettingKind::integer, "dp_accumulation", 1, 1024,
                                      false, "train_dp micro-steps per all-reduce and update (default 1)", "train_dp"});

}  // namespace

std::vector<Bucket> assign_buckets(const std::vector<size_t>& param_bytes, size_t cap) {
  if (cap == 0) cap = 1;
  std::vector<Bucket> out;
  Bucket cur;
  bool open = false;
  for (size_t i = param_bytes.size(); i-- > 0;) {
    const size_t b = param_bytes[i];
    if (open && cur.bytes + b > cap) {
      out.push_back(cur);
      open = false;
    }
    if (!open) {
      cur = Bucket{i, i + 1, 0};
      open = true;
    }
    cur.first = i;
    cur.bytes += b;
    if (cur.bytes >= cap) {  // full (or one parameter larger than a bucket): closed
      out.push_back(cur);
      open = false;
    }
  }
  if (open) out.push_back(cur);
  return out;
}

std::vector<BucketRange> bucket_ranges(const std::vector<ParamSpan>& params, const std::vector<Bucket>& buckets) {
  std::vector<BucketRange> out;
  for (const Bucket& b : buckets) {
    BucketRange r;
    r.first = b.first;
    r.end = b.end;
    size_t a_lo = SIZE_MAX, a_hi = 0, b_lo = SIZE_MAX, b_hi = 0;
    for (size_t i = b.first; i < b.end && i < params.size(); ++i) {
      const ParamSpan& p = params[i];
      size_t& lo = p.fp32_segment ? b_lo : a_lo;
      size_t& hi = p.fp32_segment ? b_hi : a_hi;
      lo = std::min(lo, p.offset);
      hi = std::max(hi, p.offset + p.count);
    }
    if (a_lo != SIZE_MAX) r.a_off = a_lo, r.a_n = a_hi - a_lo;
    if (b_lo != SIZE_MAX) r.b_off = b_lo, r.b_n = b_hi - b_lo;
    out.push_back(r);
  }
  return out;
}

bool allreduce_on(int64_t micro_step, int k) { return k >= 1 && micro_step >= 1 && micro_step % k == 0; }

double scaling_efficiency(double images_per_s_n, int n, double images_per_s_1) {
  if (!(images_per_s_n > 0) || n < 1 || !(images_per_s_1 > 0)) return NAN;
  return images_per_s_n / (double(n) * images_per_s_1);
}

double images_per_s(int n, int64_t batch, int k, double step_s) {
  if (!(step_s > 0)) return NAN;
  return double(n) * double(batch) * double(k) / step_s;
}

std::string Point::name() const { return "resnet50/" + precision + "/" + layout + "/b" + std::to_string(batch); }

std::vector<Point> points(bool full) {
  if (!full) return {{"fp16", "nhwc", 32}};
  std::vector<Point> out;
  const std::pair<const char*, const char*> series[] = {{"fp16", "nhwc"}, {"fp16", "nchw"}, {"tf32", "nhwc"}, {"fp32", "nchw"}};
  for (const auto& [p, l] : series)
    for (int64_t b : {32, 64, 128, 256}) out.push_back({p, l, b});
  return out;
}

std::string part_name(int gpus) { return "g" + std::to_string(gpus); }
std::string record_id(const Point& p, int gpus) { return "train_dp/" + p.name() + "/" + part_name(gpus); }

}  // namespace nb::train_dp
