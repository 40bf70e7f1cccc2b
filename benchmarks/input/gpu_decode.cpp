#include "gpu_decode.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <sstream>

#include "images.hpp"
#include "input_metrics.hpp"
#include "base/resources.hpp"
#include "base/stats.hpp"
#include "base/text.hpp"

#if NB_HAVE_NVJPEG
#include <dlfcn.h>
#include <nvjpeg.h>

#include "kernels/input/input_kernels.cuh"
#endif

namespace nb::input {

using nlohmann::json;

const std::vector<std::string>& gpu_backends() {
  static const std::vector<std::string> b{"default", "gpu_hybrid", "hardware"};
  return b;
}

#if !NB_HAVE_NVJPEG
bool nvjpeg_built() { return false; }
std::string nvjpeg_missing() { return NB_NVJPEG_MISSING; }
void run_gpu_decode(CaseContext& ctx, const std::string&, Layout, DType, int) {
  ctx.skip("built without nvJPEG (" + nvjpeg_missing() + ")", ReasonKind::not_built);
}
#else
bool nvjpeg_built() { return true; }
std::string nvjpeg_missing() { return ""; }

namespace {

// nvJPEG's entry points, loaded at run time.
struct Api {
  std::string error, path;
  decltype(&nvjpegCreateEx) create = nullptr;
  decltype(&nvjpegDestroy) destroy = nullptr;
  decltype(&nvjpegJpegStateCreate) state_create = nullptr;
  decltype(&nvjpegJpegStateDestroy) state_destroy = nullptr;
  decltype(&nvjpegDecodeBatchedInitialize) batched_init = nullptr;
  decltype(&nvjpegDecodeBatched) batched = nullptr;
  decltype(&nvjpegJpegStreamCreate) stream_create = nullptr;
  decltype(&nvjpegJpegStreamDestroy) stream_destroy = nullptr;
  decltype(&nvjpegJpegStreamParse) stream_parse = nullptr;
  decltype(&nvjpegDecodeBatchedSupported) batched_supported = nullptr;
  decltype(&nvjpegGetProperty) property = nullptr;
};

template <class F>
void bind(void* lib, const char* name, F& f, std::string& missing) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  if (!f) missing += std::string(missing.empty() ? "" : ", ") + name;
}

const Api& api() {
  static const Api a = [] {
    Api x;
    void* lib = nullptr;
    // The library CMake found first (a wheel's path), then the loader's search path.
    for (const std::string& p : {std::string(NB_NVJPEG_LIBRARY), "libnvjpeg.so." + std::to_string(NVJPEG_VER_MAJOR)}) {
      if ((lib = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL))) {
        x.path = p;
        break;
      }
      x.error = dlerror();
    }
    if (!lib) return x;
    std::string missing;
    bind(lib, "nvjpegCreateEx", x.create, missing);
    bind(lib, "nvjpegDestroy", x.destroy, missing);
    bind(lib, "nvjpegJpegStateCreate", x.state_create, missing);
    bind(lib, "nvjpegJpegStateDestroy", x.state_destroy, missing);
    bind(lib, "nvjpegDecodeBatchedInitialize", x.batched_init, missing);
    bind(lib, "nvjpegDecodeBatched", x.batched, missing);
    bind(lib, "nvjpegJpegStreamCreate", x.stream_create, missing);
    bind(lib, "nvjpegJpegStreamDestroy", x.stream_destroy, missing);
    bind(lib, "nvjpegJpegStreamParse", x.stream_parse, missing);
    bind(lib, "nvjpegDecodeBatchedSupported", x.batched_supported, missing);
    bind(lib, "nvjpegGetProperty", x.property, missing);
    x.error = missing.empty() ? "" : x.path + " lacks " + missing;
    return x;
  }();
  return a;
}

struct NvjpegError : Error {
  nvjpegStatus_t status;
  NvjpegError(nvjpegStatus_t s, const std::string& m) : Error(m), status(s) {}
};

void check(nvjpegStatus_t s, const char* expr, const char* file, int line) {
  if (s == NVJPEG_STATUS_SUCCESS) return;
  std::ostringstream os;
  os << "nvJPEG status " << int(s) << " from " << expr << " (" << file << ":" << line << ")";
  throw NvjpegError(s, os.str());
}
#define NB_NVJPEG(expr) check((expr), #expr, __FILE__, __LINE__)

// A handle and one decode state, released in order.
struct Decoder {
  nvjpegHandle_t handle = nullptr;
  nvjpegJpegState_t state = nullptr;
  Decoder(nvjpegBackend_t backend, int batch) {
    NB_NVJPEG(api().create(backend, nullptr, nullptr, 0, &handle));
    NB_NVJPEG(api().state_create(handle, &state));
    NB_NVJPEG(api().batched_init(handle, state, batch, 1, NVJPEG_OUTPUT_RGBI));
  }
  ~Decoder() {
    if (state) api().state_destroy(state);
    if (handle) api().destroy(handle);
  }
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;
};

nvjpegBackend_t backend_of(const std::string& b) {
  if (b == "hardware") return NVJPEG_BACKEND_HARDWARE;
  if (b == "gpu_hybrid") return NVJPEG_BACKEND_GPU_HYBRID;
  return NVJPEG_BACKEND_DEFAULT;
}

// How many of the files the hardware backend cannot decode (progressive, 4:1:0, ...).
size_t unsupported_by_hardware(const Decoder& d, const ImageSet& set) {
  nvjpegJpegStream_t js = nullptr;
  NB_NVJPEG(api().stream_create(d.handle, &js));
  size_t bad = 0;
  for (const auto& f : set.files) {
    int unsupported = 1;  // nvjpegDecodeBatchedSupported: 0 means supported
    if (api().stream_parse(d.handle, f.bytes.data(), f.bytes.size(), 0, 0, js) != NVJPEG_STATUS_SUCCESS ||
        api().batched_supported(d.handle, js, &unsupported) != NVJPEG_STATUS_SUCCESS || unsupported != 0)
      ++bad;
  }
  api().stream_destroy(js);
  return bad;
}

struct Batch {
  std::vector<const unsigned char*> data;
  std::vector<size_t> lengths;
  std::vector<nvjpegImage_t> dest;
  std::vector<size_t> files;  // which file each slot holds
};

// Checks sampled slots of the last batch: nvJPEG's pixels against TurboJPEG's, our kernel's
// output against the host augmentation of the same pixels and crop.
json verify(const ImageSet& set, const Batch& b, const std::vector<kernels::CropJob>& jobs, const DeviceBuffer& out,
            Layout layout, DType dtype, std::string& err) {
  JpegDecoder dec;
  Augmenter aug;
  double psnr_min = INFINITY, aug_err = 0;
  const size_t per_image = image_elements() * element_bytes(dtype);
  std::vector<uint8_t> gpu_out(per_image), host_out(per_image);
  const size_t n = b.files.size();
  for (size_t slot : {size_t(0), n / 2, n - 1}) {
    const JpegFile& f = set.files[b.files[slot]];
    Rgb cpu, gpu;
    dec.decode(f.bytes.data(), f.bytes.size(), cpu);
    gpu.width = f.width, gpu.height = f.height;
    gpu.pixels.resize(size_t(f.width) * size_t(f.height) * 3);
    NB_CUDA(cudaMemcpy2D(gpu.pixels.data(), size_t(f.width) * 3, b.dest[slot].channel[0], b.dest[slot].pitch[0],
                         size_t(f.width) * 3, size_t(f.height), cudaMemcpyDeviceToHost));
    psnr_min = std::min(psnr_min, psnr_db(cpu, gpu));
    const kernels::CropJob& j = jobs[slot];
    aug.run(gpu, Crop{j.top, j.left, j.crop_height, j.crop_width, j.flip != 0}, layout, dtype, host_out.data());
    NB_CUDA(cudaMemcpy(gpu_out.data(), out.as<uint8_t>() + slot * per_image, per_image, cudaMemcpyDeviceToHost));
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < kOut; y += 7)
        for (int x = 0; x < kOut; x += 5)
          aug_err = std::max(aug_err, std::fabs(output_value(gpu_out.data(), layout, dtype, c, y, x) -
                                                output_value(host_out.data(), layout, dtype, c, y, x)));
  }
  const double tol = dtype == DType::fp32 ? 1e-3 : 4e-3;
  if (psnr_min < 30) err = "nvJPEG's pixels are " + fmt(psnr_min, 1) + " dB from TurboJPEG's (at least 30 expected)";
  else if (!(aug_err <= tol)) err = "the GPU crop/resize/normalise differs from the host's by " + fmt(aug_err, 5);
  return {{"method", "3 images of the last batch: nvJPEG's RGB against TurboJPEG's (PSNR), the kernel's output against "
                     "the host augmentation of the same pixels and crop (every 7th row, 5th column)"},
          {"psnr_vs_turbojpeg_db_min", psnr_min}, {"augment_max_error", aug_err}, {"augment_tolerance", tol},
          {"ok", err.empty()}};
}

}  // namespace

namespace {

// One batch after another: nvJPEG's batched decode into per-slot buffers, then our kernel over
// the batch; each timed by the host clock (returned) and by events (kept).
class BatchRunner {
 public:
  BatchRunner(const ImageSet& set, Decoder& d, Layout layout, DType dtype, int batch, cudaStream_t s)
      : set_(set), d_(d), layout_(layout), dtype_(dtype), batch_(batch), s_(s),
        out_(image_elements() * element_bytes(dtype) * size_t(batch)), jobs_dev_(sizeof(kernels::CropJob) * size_t(batch)),
        jobs_host_(sizeof(kernels::CropJob) * size_t(batch), cudaHostAllocDefault) {
    size_t max_bytes = 0;
    for (const auto& f : set.files) max_bytes = std::max(max_bytes, size_t(f.width) * size_t(f.height) * 3);
    for (int i = 0; i < batch; ++i) slots_.emplace_back(max_bytes);
    b_.data.resize(size_t(batch)), b_.lengths.resize(size_t(batch)), b_.dest.resize(size_t(batch)), b_.files.resize(size_t(batch));
  }
  double once(bool keep) {
    auto* jobs = jobs_host_.as<kernels::CropJob>();
    for (int i = 0; i < batch_; ++i, next_ = (next_ + 1) % set_.files.size()) {
      const JpegFile& f = set_.files[next_];
      b_.files[size_t(i)] = next_;
      b_.data[size_t(i)] = f.bytes.data();
      b_.lengths[size_t(i)] = f.bytes.size();
      b_.dest[size_t(i)] = nvjpegImage_t{};
      b_.dest[size_t(i)].channel[0] = slots_[size_t(i)].as<unsigned char>();
      b_.dest[size_t(i)].pitch[0] = size_t(f.width) * 3;
      const Crop c = crops_.next(f.width, f.height);
      jobs[i] = {slots_[size_t(i)].as<uint8_t>(), f.width * 3, f.width, f.height, c.top, c.left, c.height, c.width, c.flip ? 1 : 0};
    }
    const auto h0 = std::chrono::steady_clock::now();
    NB_CUDA(cudaMemcpyAsync(jobs_dev_.get(), jobs, sizeof(kernels::CropJob) * size_t(batch_), cudaMemcpyHostToDevice, s_));
    e0_.record(s_);
    NB_NVJPEG(api().batched(d_.handle, d_.state, b_.data.data(), b_.lengths.data(), b_.dest.data(), s_));
    e1_.record(s_);
    kernels::launch_resized_crop(s_, jobs_dev_.as<kernels::CropJob>(), batch_, out_.get(), layout_ == Layout::nhwc,
                                 dtype_ == DType::fp16);
    NB_CUDA_LAUNCH();
    e2_.record(s_);
    NB_CUDA(cudaStreamSynchronize(s_));
    if (keep) gpu_s.push_back(e2_.seconds_since(e0_)), kernel_s.push_back(e2_.seconds_since(e1_));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - h0).count();
  }
  json verify(std::string& err) const {
    const auto* jobs = jobs_host_.as<kernels::CropJob>();
    return input::verify(set_, b_, std::vector<kernels::CropJob>(jobs, jobs + batch_), out_, layout_, dtype_, err);
  }
  std::vector<double> gpu_s, kernel_s;

 private:
  const ImageSet& set_;
  Decoder& d_;
  Layout layout_;
  DType dtype_;
  int batch_;
  cudaStream_t s_;
  std::vector<DeviceBuffer> slots_;
  DeviceBuffer out_, jobs_dev_;
  PinnedBuffer jobs_host_;
  Batch b_;
  CropSampler crops_{17};
  Event e0_, e1_, e2_;
  size_t next_ = 0;
};

}  // namespace

void run_gpu_decode(CaseContext& ctx, const std::string& backend, Layout layout, DType dtype, int batch) {
  if (!api().error.empty() || !api().create) ctx.skip("nvJPEG cannot be loaded: " + api().error, ReasonKind::not_built);
  if (!jpeg_built()) ctx.skip("built without libjpeg-turbo (" + jpeg_missing() + "): no images", ReasonKind::not_built);
  const ImageSet& set = run_images(ctx);
  std::unique_ptr<Decoder> d;
  try {
    d = std::make_unique<Decoder>(backend_of(backend), batch);
  } catch (const NvjpegError& e) {
    if (backend == "hardware" && e.status != NVJPEG_STATUS_ALLOCATOR_FAILURE)
      ctx.skip("no hardware JPEG decoder for nvJPEG on this GPU (" + std::string(e.what()) + ")", ReasonKind::unsupported);
    throw;
  }
  if (backend == "hardware")
    if (const size_t bad = unsupported_by_hardware(*d, set))
      ctx.skip(std::to_string(bad) + " of " + std::to_string(set.files.size()) + " images not decodable by the hardware backend",
               ReasonKind::unsupported);
  BatchRunner run(set, *d, layout, dtype, batch, ctx.stream());
  ctx.set_measurement(warm_then_sample(ctx.config(), 3, [&](bool keep) { return run.once(keep); }));
  ctx.set_throughput(kImagesPerS, double(batch), "");
  ctx.set_primary_metric(kImagesPerS);
  ctx.metric(kGpuTimePerImage, 1e3 * compute_stats(run.gpu_s).median / batch);
  ctx.metric(kAugmentGpuTimePerImage, 1e3 * compute_stats(run.kernel_s).median / batch);
  ctx.metric(kMeanFile, set.mean_bytes());
  int major = 0, minor = 0, patch = 0;
  api().property(MAJOR_VERSION, &major), api().property(MINOR_VERSION, &minor), api().property(PATCH_LEVEL, &patch);
  ctx.details()["nvjpeg"] = {{"version", std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch)},
                             {"library", api().path}, {"backend", backend}};
  ctx.details()["host_threads"] = 1;
  ctx.details()["images"] = {{"source", set.source}, {"count", set.files.size()}};
  ctx.details()["timer"] = "samples: the host clock per batch, copy of the crop list to the end of the kernel; "
                           "gpu_time_per_image_ms: CUDA events from before the decode call to the end of the kernel (an upper "
                           "bound of the GPU's time: it includes waits for nvJPEG's host part); augment_gpu_time_per_image_ms: "
                           "the kernel alone";
  std::string err;
  ctx.details()["verification"] = run.verify(err);
  if (!err.empty()) ctx.wrong(err);
}
#endif

}  // namespace nb::input
