// The input family without a GPU: the crop, the resampling, the augmentation and the FP16
// conversion against hand-computed values; the codec against the images it encoded; the
// generated images' statistics; the CPU topology and the worker pool.
#include <gtest/gtest.h>

#include <sched.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "input/augment.hpp"
#include "input/cpu_pool.hpp"
#include "input/images.hpp"
#include "input/jpeg_codec.hpp"
#include "base/error.hpp"
#include "bench/benchmark.hpp"

using namespace nb::input;
namespace fs = std::filesystem;

namespace {

Rgb random_image(int w, int h, uint32_t seed) {
  std::mt19937 g(seed);
  Rgb img{w, h, std::vector<uint8_t>(size_t(w) * size_t(h) * 3)};
  for (auto& p : img.pixels) p = uint8_t(g() & 0xff);
  return img;
}

double normalised(double v, int c) { return (v / 255.0 - kMean[c]) / kStd[c]; }

std::vector<float> augment(const Rgb& img, const Crop& c, Layout l = Layout::nchw) {
  std::vector<float> out(image_elements());
  Augmenter a;
  a.run(img, c, l, DType::fp32, out.data());
  return out;
}

float at_nchw(const std::vector<float>& o, int c, int y, int x) { return o[size_t(c) * kOut * kOut + size_t(y) * kOut + size_t(x)]; }

}  // namespace

TEST(InputCrop, TorchvisionGetParamsFromItsDraws) {
  const double half[10] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5};
  // 500x375: area 187500 x (0.08 + 0.92 x 0.5) = 101250, ratio exp(0) = 1: a 318 x 318 crop
  // (round(sqrt(101250)) = round(318.2)), placed at int(0.5 x 58) = 29, int(0.25 x 183) = 45.
  Crop c = crop_from_draws(500, 375, half, half, 0.5, 0.25);
  EXPECT_EQ(c.width, 318);
  EXPECT_EQ(c.height, 318);
  EXPECT_EQ(c.top, 29);
  EXPECT_EQ(c.left, 45);
  // The first attempt at the full area and ratio 3/4 is 375 wide and 500 high: too high, so the
  // second (area x 0.08 = 15000, ratio 1: 122 x 122) is taken.
  const double area[10] = {1.0, 0.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5};
  const double ratio[10] = {0.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5};
  c = crop_from_draws(500, 375, area, ratio, 0.0, 1.0);
  EXPECT_EQ(c.width, 122);
  EXPECT_EQ(c.height, 122);
  EXPECT_EQ(c.top, 0);
  EXPECT_EQ(c.left, 500 - 122);  // the largest start: min(width - w, int(1.0 x (width - w + 1)))
  // 1000x100 (ratio 10): every attempt is too high; the fallback is the central crop at ratio
  // 4/3: height 100, width round(133.3) = 133, left (1000 - 133) / 2 = 433.
  c = crop_from_draws(1000, 100, half, half, 0.5, 0.5);
  EXPECT_EQ(c.height, 100);
  EXPECT_EQ(c.width, 133);
  EXPECT_EQ(c.top, 0);
  EXPECT_EQ(c.left, 433);
}

TEST(InputCrop, SamplerStaysInsideAndFlipsHalfTheTime) {
  CropSampler s(3), t(3);
  int flips = 0;
  for (int i = 0; i < 4000; ++i) {
    const Crop c = s.next(500, 375);
    const Crop d = t.next(500, 375);
    ASSERT_EQ(c.top, d.top);  // deterministic by seed
    ASSERT_EQ(c.width, d.width);
    ASSERT_GE(c.top, 0);
    ASSERT_GE(c.left, 0);
    ASSERT_LE(c.top + c.height, 375);
    ASSERT_LE(c.left + c.width, 500);
    const double frac = double(c.width) * c.height / (500.0 * 375.0), ratio = double(c.width) / c.height;
    ASSERT_GE(frac, 0.07);  // scale (0.08, 1) up to rounding of the sides
    ASSERT_LE(frac, 1.0);
    ASSERT_GE(ratio, 0.74);
    ASSERT_LE(ratio, 1.35);
    flips += c.flip;
  }
  EXPECT_NEAR(flips / 4000.0, 0.5, 0.05);
}

TEST(InputResample, PilBilinearCoefficients) {
  // 2x down: support 2, weights triangle((k - centre + 0.5) / 2) normalised: 1/8 3/8 3/8 1/8
  // inside; at the first output (centre 1) the taps 0..2 weigh 0.75 0.75 0.25, /1.75.
  const Coefficients d = resample_coefficients(448, 224);
  EXPECT_EQ(d.taps, 5);
  EXPECT_EQ(d.first[10], 19);
  ASSERT_EQ(d.count[10], 4);
  const float* w = d.weight.data() + 10 * d.taps;
  EXPECT_NEAR(w[0], 1.0 / 8, 1e-6);
  EXPECT_NEAR(w[1], 3.0 / 8, 1e-6);
  EXPECT_NEAR(w[2], 3.0 / 8, 1e-6);
  EXPECT_NEAR(w[3], 1.0 / 8, 1e-6);
  EXPECT_EQ(d.first[0], 0);
  ASSERT_EQ(d.count[0], 3);
  EXPECT_NEAR(d.weight[0], 3.0 / 7, 1e-6);
  EXPECT_NEAR(d.weight[2], 1.0 / 7, 1e-6);
  EXPECT_EQ(d.first[223], 445);
  EXPECT_EQ(d.count[223], 3);
  // Same size: the identity.
  const Coefficients id = resample_coefficients(224, 224);
  for (int i = 0; i < 224; ++i) {
    EXPECT_EQ(id.first[size_t(i)], i);
    EXPECT_NEAR(id.weight[size_t(i) * size_t(id.taps)], 1.0, 1e-7);
  }
  // 2x up: half-pixel bilinear, output 2 = 0.25 x in[0] + 0.75 x in[1], output 3 = 0.75 x in[1] + 0.25 x in[2].
  const Coefficients u = resample_coefficients(112, 224);
  EXPECT_EQ(u.first[2], 0);
  EXPECT_NEAR(u.weight[2 * size_t(u.taps)], 0.25, 1e-7);
  EXPECT_NEAR(u.weight[2 * size_t(u.taps) + 1], 0.75, 1e-7);
  EXPECT_EQ(u.first[3], 1);
  EXPECT_NEAR(u.weight[3 * size_t(u.taps)], 0.75, 1e-7);
}

TEST(InputAugment, ConstantImageGivesTheNormalisedConstant) {
  Rgb img{300, 200, {}};
  for (int i = 0; i < 300 * 200; ++i) img.pixels.insert(img.pixels.end(), {100, 150, 200});
  for (const Layout l : {Layout::nchw, Layout::nhwc})
    for (const DType t : {DType::fp32, DType::fp16}) {
      std::vector<uint8_t> out(image_elements() * element_bytes(t));
      Augmenter a;
      a.run(img, Crop{13, 27, 170, 151, true}, l, t, out.data());
      for (int c = 0; c < 3; ++c)
        for (int y = 0; y < kOut; y += 31)
          for (int x = 0; x < kOut; x += 17)
            EXPECT_NEAR(output_value(out.data(), l, t, c, y, x), normalised(c == 0 ? 100 : c == 1 ? 150 : 200, c),
                        t == DType::fp32 ? 1e-5 : 2e-3);
    }
}

TEST(InputAugment, IdentityCropFlipAndLayouts) {
  const Rgb img = random_image(224, 224, 5);
  const std::vector<float> o = augment(img, Crop{0, 0, 224, 224, false});
  const std::vector<float> f = augment(img, Crop{0, 0, 224, 224, true});
  const std::vector<float> h = augment(img, Crop{0, 0, 224, 224, true}, Layout::nhwc);
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < kOut; y += 3)
      for (int x = 0; x < kOut; x += 5) {
        EXPECT_NEAR(at_nchw(o, c, y, x), normalised(img.at(x, y, c), c), 1e-5);
        EXPECT_NEAR(at_nchw(f, c, y, x), normalised(img.at(kOut - 1 - x, y, c), c), 1e-5);
        EXPECT_EQ(h[(size_t(y) * kOut + size_t(x)) * 3 + size_t(c)], at_nchw(f, c, y, x));
      }
}

TEST(InputAugment, TwoTimesDownscaleAveragesOneThreeThreeOne) {
  const Rgb img = random_image(460, 470, 9);
  const Crop crop{7, 5, 448, 448, false};
  const std::vector<float> o = augment(img, crop);
  const double w[4] = {1, 3, 3, 1};
  for (int c = 0; c < 3; ++c)
    for (int y = 1; y < kOut - 1; y += 13)
      for (int x = 1; x < kOut - 1; x += 11) {
        double v = 0;
        for (int a = 0; a < 4; ++a)
          for (int b = 0; b < 4; ++b) v += w[a] * w[b] / 64.0 * img.at(crop.left + 2 * x - 1 + b, crop.top + 2 * y - 1 + a, c);
        EXPECT_NEAR(at_nchw(o, c, y, x), normalised(v, c), 2e-5) << c << " " << y << " " << x;
      }
}

TEST(InputAugment, MatchesItsDefinitionOnRandomCrops) {
  const Rgb img = random_image(500, 375, 11);
  CropSampler s(21);
  for (int i = 0; i < 6; ++i) {
    const Crop c = s.next(img.width, img.height);
    const std::vector<float> o = augment(img, c);
    for (int k = 0; k < 40; ++k) {
      const int ch = k % 3, y = (k * 37) % kOut, x = (k * 71 + 3) % kOut;
      EXPECT_NEAR(at_nchw(o, ch, y, x), reference_value(img, c, ch, y, x), 1e-4);
    }
  }
  EXPECT_THROW(augment(img, Crop{300, 0, 100, 100, false}), nb::Error);  // outside the image
}

TEST(InputHalf, KnownValuesAndRoundTrip) {
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);          // rounds to infinity
  EXPECT_EQ(float_to_half(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(float_to_half(0.1f), 0x2E66);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);  // the smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);  // half of it: ties to even, 0
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -26)), 0x0001);
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00);       // tie: to the even 1.0
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);   // tie: to the even 0x3C02
  EXPECT_EQ(float_to_half(INFINITY), 0x7C00);
  EXPECT_EQ(float_to_half(std::nanf("")) & 0x7C00, 0x7C00);
  EXPECT_NE(float_to_half(std::nanf("")) & 0x03FF, 0);
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF)) continue;  // NaNs
    ASSERT_EQ(float_to_half(half_to_float(uint16_t(h))), h) << std::hex << h;
  }
}

TEST(InputCodec, DecodesWhatItEncodedBothWays) {
  if (!jpeg_built()) GTEST_SKIP() << jpeg_missing();
  const Rgb src = synth_image(500, 375, 42, 1);
  const std::vector<uint8_t> j = encode_jpeg(src, 90);
  JpegDecoder d;
  const JpegHeader h = d.header(j.data(), j.size());
  EXPECT_EQ(h.width, 500);
  EXPECT_EQ(h.height, 375);
  Rgb a, f;
  d.decode(j.data(), j.size(), a);
  d.decode(j.data(), j.size(), f, true);
  EXPECT_GT(psnr_db(src, a), 30.0);              // quality 90 keeps the image
  EXPECT_EQ(max_abs_diff(a, decode_libjpeg(j.data(), j.size())), 0);  // libjpeg's API, same settings
  EXPECT_GT(max_abs_diff(a, f), 0);              // the fast IDCT is another computation ...
  EXPECT_GT(psnr_db(a, f), 40.0);                // ... of nearly the same image
  EXPECT_LT(encode_jpeg(src, 50).size(), j.size());
  const std::vector<uint8_t> junk{'n', 'o', 't', ' ', 'a', ' ', 'j', 'p', 'e', 'g'};
  EXPECT_THROW(d.header(junk.data(), junk.size()), nb::Error);
  EXPECT_THROW(decode_libjpeg(junk.data(), junk.size()), nb::Error);
}

TEST(InputImages, NaturalStatisticsNotNoise) {
  const Rgb a = synth_image(500, 375, 42, 3), b = synth_image(500, 375, 42, 3), c = synth_image(500, 375, 42, 4);
  EXPECT_EQ(a.pixels, b.pixels);
  EXPECT_NE(a.pixels, c.pixels);
  // The structure function D(d) = mean squared difference of pixels d apart grows with d in a
  // photograph (power falling with frequency); white noise gives the same D at every d.
  auto d = [&](int dist) {
    double s = 0;
    int n = 0;
    for (int y = 0; y < a.height; y += 2)
      for (int x = 0; x + dist < a.width; x += 2, ++n) {
        const double v = double(a.at(x, y, 1)) - a.at(x + dist, y, 1);
        s += v * v;
      }
    return s / n;
  };
  EXPECT_GT(d(1), 0.0);
  EXPECT_GT(d(4), 1.3 * d(1));
  EXPECT_GT(d(16), 1.3 * d(4));
  EXPECT_GT(d(64), d(16));
}

TEST(InputImages, GeneratedFilesAreKeptOrCleanedUp) {
  if (!jpeg_built()) GTEST_SKIP() << jpeg_missing();
  const fs::path keep = fs::path(NB_TEST_OUTPUT_DIR) / "input_keep";
  fs::remove_all(keep);
  const ImageSet s = generate_images(4, 7, 90, keep.string());
  ASSERT_EQ(s.files.size(), 4u);
  EXPECT_EQ(s.files[3].width, 375);  // one in four is portrait
  EXPECT_EQ(s.files[0].width, 500);
  for (const auto& f : s.files) EXPECT_EQ(fs::file_size(keep / f.name), f.bytes.size());
  // Natural content at quality 90: not a flat image (a few KB) nor noise (hundreds of KB).
  EXPECT_GT(s.mean_bytes(), 30e3);
  EXPECT_LT(s.mean_bytes(), 300e3);
  // Without a folder to keep them in, the temporary folder is gone afterwards.
  auto temps = [] {
    int n = 0;
    const char* t = std::getenv("TMPDIR");
    for (const auto& e : fs::directory_iterator(t && *t ? t : "/tmp"))
      n += e.path().filename().string().rfind("nodebench-input-", 0) == 0;
    return n;
  };
  const int before = temps();
  EXPECT_EQ(generate_images(2, 7, 90, "").files.size(), 2u);
  EXPECT_EQ(temps(), before);
  // The user's folder: the JPEGs that decode, the others said.
  const fs::path dir = fs::path(NB_TEST_OUTPUT_DIR) / "input_user";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(keep / s.files[0].name, dir / "b.JPG");
  fs::copy_file(keep / s.files[1].name, dir / "a.jpeg");
  std::ofstream(dir / "broken.jpg") << "not a jpeg";
  std::ofstream(dir / "notes.txt") << "ignored";
  const ImageSet u = load_images(dir.string(), 10);
  ASSERT_EQ(u.files.size(), 2u);
  EXPECT_EQ(u.files[0].name, "a.jpeg");
  ASSERT_EQ(u.left_out.size(), 1u);
  EXPECT_NE(u.left_out[0].find("broken.jpg"), std::string::npos);
  fs::remove(dir / "a.jpeg"), fs::remove(dir / "b.JPG");
  EXPECT_THROW(load_images(dir.string(), 10), nb::Error);
}

TEST(InputCpus, ListsOrderAndSweeps) {
  EXPECT_EQ(parse_cpulist("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_TRUE(parse_cpulist("").empty());
  EXPECT_THROW(parse_cpulist("0-a"), nb::Error);
  EXPECT_THROW(parse_cpulist("3-1"), nb::Error);
  // Two sockets of two cores with two threads each, numbered as Intel does: 0-3 the first
  // threads (0, 1 socket 0; 2, 3 socket 1), 4-7 their siblings.
  std::vector<Cpu> intel;
  for (int id = 0; id < 8; ++id) intel.push_back({id, id % 2, (id / 2) % 2, (id / 2) % 2});
  EXPECT_EQ(pin_order(intel), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(pin_order(intel, 1), (std::vector<int>{2, 3, 6, 7}));
  EXPECT_EQ(physical_core_count(intel), 4);
  EXPECT_EQ(nodes_of(intel), (std::vector<int>{0, 1}));
  // One socket of four cores, siblings adjacent (0 and 1 one core): one thread per core first.
  std::vector<Cpu> amd;
  for (int id = 0; id < 8; ++id) amd.push_back({id, id / 2, 0, 0});
  EXPECT_EQ(pin_order(amd), (std::vector<int>{0, 2, 4, 6, 1, 3, 5, 7}));
  // A NUMA placement: the GPU's node or the other one on two sockets; on one socket, an unknown
  // GPU node or a node none of whose CPUs is allowed, the reason (known before the run: the case
  // is skipped before any work and costs nothing in the estimate of time left).
  EXPECT_EQ(numa_node_for(intel, "gpu_node", 1, 0).node, 1);
  EXPECT_EQ(numa_node_for(intel, "other_node", 1, 0).node, 0);
  EXPECT_EQ(numa_node_for(intel, "other_node", 0, 0).node, 1);
  EXPECT_TRUE(numa_node_for(intel, "gpu_node", 0, 0).problem.empty());
  const NumaChoice one = numa_node_for(amd, "gpu_node", 0, 3);
  EXPECT_FALSE(one.node);
  EXPECT_NE(one.problem.find("one NUMA node (node 0)"), std::string::npos) << one.problem;
  EXPECT_FALSE(numa_node_for(amd, "other_node", 0, 3).node);
  const NumaChoice unknown = numa_node_for(intel, "gpu_node", std::nullopt, 3);
  EXPECT_FALSE(unknown.node);
  EXPECT_NE(unknown.problem.find("GPU 3"), std::string::npos) << unknown.problem;
  std::vector<Cpu> socket0(intel.begin(), intel.end());
  socket0.erase(std::remove_if(socket0.begin(), socket0.end(), [](const Cpu& c) { return c.node == 1; }), socket0.end());
  socket0.push_back({8, 9, 2, 2});  // a third node, so that two nodes remain in the list
  const NumaChoice barred = numa_node_for(socket0, "gpu_node", 1, 0);
  EXPECT_FALSE(barred.node);
  EXPECT_NE(barred.problem.find("no CPU of node 1"), std::string::npos) << barred.problem;
  EXPECT_EQ(sweep_counts(1), std::vector<int>{1});
  EXPECT_EQ(sweep_counts(2), (std::vector<int>{1, 2}));
  EXPECT_EQ(sweep_counts(6), (std::vector<int>{1, 2, 4, 6}));
  EXPECT_EQ(sweep_counts(8), (std::vector<int>{1, 2, 4, 8}));
  const std::vector<Cpu> mine = allowed_cpus();
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  EXPECT_EQ(int(mine.size()), CPU_COUNT(&set));
}

TEST(InputPool, WorkersDecodeAndCount) {
  if (!jpeg_built()) GTEST_SKIP() << jpeg_missing();
  const ImageSet set = generate_images(3, 5, 90, "");
  PoolConfig pc;
  pc.cpus = {allowed_cpus().front().id};
  pc.warmup_s = 0.01;
  nb::MeasureConfig mc;
  mc.fixed_samples = 3;
  const PoolResult r = run_pool(set, pc, mc);
  EXPECT_EQ(r.measurement.samples_s.size(), 3u);
  ASSERT_EQ(r.per_worker.size(), 1u);
  EXPECT_EQ(r.per_worker[0], r.images);
  EXPECT_GE(r.images, 5u);  // warm-up (two per worker) and three samples of at least one
  EXPECT_GT(r.decode_per_image_ms, 0.0);
  EXPECT_GT(r.augment_per_image_ms, 0.0);
  EXPECT_GT(r.cpu_share, 0.0);   // a thread's CPU time cannot exceed its wall time
  EXPECT_LE(r.cpu_share, 1.01);
  EXPECT_GT(r.images_per_cpu_s, 0.0);
  pc.cpus = {CPU_SETSIZE - 1};  // not a CPU of this process
  try {
    run_pool(set, pc, mc);
    FAIL() << "a worker pinned to a CPU it may not use ran";
  } catch (const nb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot pin a worker to CPU"), std::string::npos) << e.what();
  }
}

// The CPU cases say before the run whether they can run (so that a plan costs a case it will skip
// at nothing): not without libjpeg-turbo (not_built, with the reason), and a NUMA placement not
// where it cannot be made (unsupported, with the reason).
TEST(InputCases, CpuCasesAreAvailableExactlyWhenTheyCanRun) {
  const nb::Family* input = nullptr;
  for (const auto& f : nb::family_registry())
    if (f->name() == "input") input = f.get();
  ASSERT_NE(input, nullptr);
  // A GPU without a PCI address: its NUMA node is unknown, so a NUMA placement cannot be made
  // (whatever this host's nodes), and is known not to run before the run; a spread can.
  nb::GpuInfo g;
  g.cc_major = 9;
  int spread = 0, numa = 0;
  for (nb::Suite suite : {nb::Suite::quick, nb::Suite::full})
    for (const nb::Case& c : input->cases(suite)) {
      if (c.name.rfind("cpu/", 0) != 0) continue;
      const bool is_numa = c.name.find("/numa_") != std::string::npos;
      ++(is_numa ? numa : spread);
      ASSERT_TRUE(bool(c.available)) << c.name;
      const nb::Availability a = c.available(g);
      EXPECT_EQ(a.ok, jpeg_built() && !is_numa) << c.name;
      if (!jpeg_built()) {
        EXPECT_EQ(a.kind, nb::ReasonKind::not_built) << c.name;
        EXPECT_NE(a.reason.find("libjpeg-turbo"), std::string::npos) << a.reason;
      } else if (is_numa) {
        EXPECT_EQ(a.kind, nb::ReasonKind::unsupported) << c.name;
        EXPECT_TRUE(a.reason.find("NUMA node") != std::string::npos) << a.reason;
      }
    }
  EXPECT_GT(spread, 1);
  EXPECT_EQ(numa, 4);
}
