// GPU test of the input family's kernel (kernels/input/): the crop, resize, flip and normalise of
// a batch on the GPU against the host augmentation of the same pixels and crops, in both layouts
// and types. Needs a GPU (ctest -L gpu); nvJPEG is not needed.
#include <gtest/gtest.h>

#include <random>

#include "input/augment.hpp"
#include "gpu_test_util.hpp"
#include "kernels/input/input_kernels.cuh"
#include "base/resources.hpp"

using namespace nb;
using namespace nb::input;

TEST(InputKernel, MatchesTheHostAugmentation) {
  cudaDeviceProp prop{};
  if (!nb::test::have_gpu(prop)) GTEST_SKIP() << "no GPU";
  std::mt19937 g(3);
  const int batch = 5;
  std::vector<Rgb> imgs;
  std::vector<DeviceBuffer> dev;
  std::vector<kernels::CropJob> jobs;
  CropSampler crops(9);
  for (int b = 0; b < batch; ++b) {
    const int w = b % 2 ? 375 : 500, h = b % 2 ? 500 : 375;
    Rgb img{w, h, std::vector<uint8_t>(size_t(w) * h * 3)};
    for (auto& p : img.pixels) p = uint8_t(g() & 0xff);
    dev.emplace_back(img.pixels.size());
    NB_CUDA(cudaMemcpy(dev.back().get(), img.pixels.data(), img.pixels.size(), cudaMemcpyHostToDevice));
    Crop c = crops.next(w, h);
    if (b == 0) c = Crop{0, 0, h, w, true};  // the whole image, flipped
    jobs.push_back({dev.back().as<uint8_t>(), w * 3, w, h, c.top, c.left, c.height, c.width, c.flip ? 1 : 0});
    imgs.push_back(std::move(img));
  }
  DeviceBuffer jobs_dev(sizeof(kernels::CropJob) * batch);
  NB_CUDA(cudaMemcpy(jobs_dev.get(), jobs.data(), sizeof(kernels::CropJob) * batch, cudaMemcpyHostToDevice));
  for (const Layout l : {Layout::nchw, Layout::nhwc})
    for (const DType t : {DType::fp32, DType::fp16}) {
      const size_t per = image_elements() * element_bytes(t);
      DeviceBuffer out(per * batch);
      kernels::launch_resized_crop(nullptr, jobs_dev.as<kernels::CropJob>(), batch, out.get(), l == Layout::nhwc, t == DType::fp16);
      NB_CUDA_LAUNCH();
      std::vector<uint8_t> got(per * batch), want(per);
      NB_CUDA(cudaMemcpy(got.data(), out.get(), got.size(), cudaMemcpyDeviceToHost));
      Augmenter aug;
      double worst = 0;
      for (int b = 0; b < batch; ++b) {
        const kernels::CropJob& j = jobs[size_t(b)];
        aug.run(imgs[size_t(b)], Crop{j.top, j.left, j.crop_height, j.crop_width, j.flip != 0}, l, t, want.data());
        for (int c = 0; c < 3; ++c)
          for (int y = 0; y < kOut; ++y)
            for (int x = 0; x < kOut; x += 3)
              worst = std::max(worst, std::fabs(output_value(got.data() + per * size_t(b), l, t, c, y, x) -
                                                output_value(want.data(), l, t, c, y, x)));
      }
      EXPECT_LT(worst, t == DType::fp32 ? 1e-4 : 4e-3) << (l == Layout::nchw ? "nchw " : "nhwc ") << (t == DType::fp32 ? "fp32" : "fp16");
    }
}
