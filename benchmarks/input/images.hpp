// The input images: JPEGs the family makes itself at ImageNet's typical size (500x375, one in
// four portrait 375x500) and quality (90, 4:2:0), with natural-image statistics rather than
// noise (a sky/ground gradient, smooth shapes with gradients, and a texture whose amplitude is
// the same in every octave, so that the power spectrum falls as 1/f^2 as in photographs), so
// that file sizes and decode times are realistic; or the user's own files
// (NODEBENCH_INPUT_IMAGES=DIR, run --images DIR).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/benchmark.hpp"
#include "jpeg_codec.hpp"

namespace nb::input {

constexpr int kGeneratedCount = 128;
constexpr int kGeneratedQuality = 90;
constexpr uint64_t kGeneratedSeed = 20261201;

// Image `index` of the generated set: deterministic in (seed, index).
Rgb synth_image(int width, int height, uint64_t seed, int index);

struct JpegFile {
  std::string name;
  std::vector<uint8_t> bytes;
  int width = 0, height = 0;
};

struct ImageSet {
  std::vector<JpegFile> files;
  bool generated = false;
  uint64_t seed = 0;    // generated: synth_image(width, height, seed, index) made file `index`
  std::string source;   // "generated: ..." or the folder
  std::string kept_in;  // generated files written to this folder and kept (NODEBENCH_INPUT_KEEP)
  std::vector<std::string> left_out;  // user files that could not be used, with why
  double mean_bytes() const;
  uint64_t total_bytes() const;
};

// Makes `count` images, encodes them, writes them to `keep_dir` (kept) or to a temporary folder
// that is removed once they are read back, and reads them back: the files measured are files.
ImageSet generate_images(int count, uint64_t seed, int quality, const std::string& keep_dir);
// The *.jpg / *.jpeg files of `dir` (case-insensitive; at most `max_files`, in name order).
// Throws nb::Error when none of them can be decoded to RGB.
ImageSet load_images(const std::string& dir, size_t max_files);

// The images of this run, made or loaded once per session (a session resource) from the family's
// settings (NODEBENCH_INPUT_IMAGES, also run --images; NODEBENCH_INPUT_KEEP), declared in images.cpp.
const ImageSet& run_images(CaseContext& ctx);
// A folder of input images: empty when it holds a *.jpg or *.jpeg file, else what is wrong.
std::string image_dir_problem(const std::string& dir);

}  // namespace nb::input
