// The data-parallel training step's plan (family train_dp), host logic only so that it is
// unit-tested without a GPU: the gradient buckets, the accumulation schedule, the scaling
// arithmetic and the cases.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nb::train_dp {

// A bucket: the parameters [first, end) by index. Buckets are filled in backward order (the
// highest index first), so bucket 0 holds the last layers and is ready first.
struct Bucket {
  size_t first = 0, end = 0;
  size_t bytes = 0;
};
// `param_bytes[i]`: the gradient bytes of parameter i. Walking the parameters from the last to
// the first, a parameter joins the open bucket while it stays within `cap` bytes; a parameter
// larger than `cap` is alone in its bucket. Every parameter is in exactly one bucket. cap 0 is
// treated as 1 byte (one parameter per bucket).
std::vector<Bucket> assign_buckets(const std::vector<size_t>& param_bytes, size_t cap);

// A parameter's place: the FP32 segment or the compute segment, element offset and count.
struct ParamSpan {
  bool fp32_segment = false;
  size_t offset = 0, count = 0;
};
// A bucket's gradient ranges (elements): [a_off, a_off + a_n) of the compute segment and
// [b_off, b_off + b_n) of the FP32 segment, from its first parameter's offset to the end of its
// last one in each (the padding between parameters included; n 0: none in that segment).
struct BucketRange {
  size_t first = 0, end = 0;
  size_t a_off = 0, a_n = 0, b_off = 0, b_n = 0;
};
std::vector<BucketRange> bucket_ranges(const std::vector<ParamSpan>& params, const std::vector<Bucket>& buckets);

// Gradient accumulation: micro-steps are counted from 1; the all-reduce and the update run on
// micro-steps k, 2k, 3k, ...
bool allreduce_on(int64_t micro_step, int k);

// scaling efficiency = N-GPU images/s / (N x 1-GPU images/s at the same per-GPU batch), a
// fraction (1 = perfect); NaN when an input is not positive.
double scaling_efficiency(double images_per_s_n, int n, double images_per_s_1);
// Images per second of an optimizer step: n GPUs x batch per GPU x k micro-steps / step seconds.
double images_per_s(int n, int64_t batch, int k, double step_s);

// A case: precision, layout, per-GPU batch. Its records are parts, one per GPU count:
// train_dp/resnet50/<precision>/<layout>/b<batch>/g<gpus>.
struct Point {
  std::string precision, layout;
  int64_t batch = 0;
  std::string name() const;  // resnet50/<precision>/<layout>/b<batch>
};
// quick: fp16/nhwc b32 (all GPUs only); full: fp16 nhwc and nchw, tf32 nhwc, fp32 nchw, each
// at per-GPU batch 32, 64, 128, 256 (every GPU count of the sweep).
std::vector<Point> points(bool full);
std::string part_name(int gpus);  // g<gpus>
std::string record_id(const Point& p, int gpus);
// The family's case ids (train_dp.cpp; built with cuDNN only).
std::vector<std::string> case_ids(bool full);

}  // namespace nb::train_dp
