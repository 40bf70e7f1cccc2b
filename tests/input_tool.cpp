// The input family's codec and augmentation from the command line, for the PIL comparison
// (tests/input_pil_check.py) and for looking at the images the family makes:
//   input_tool make DIR COUNT [QUALITY]      the generated images, kept in DIR; prints the mean size
//   input_tool decode IN.jpg OUT.rgb          RGB bytes; prints "WIDTH HEIGHT"
//   input_tool augment IN.jpg TOP LEFT H W FLIP LAYOUT DTYPE OUT.bin   the normalised tensor
// Exit 2 on bad arguments, 1 on a failure.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "input/augment.hpp"
#include "input/images.hpp"
#include "base/error.hpp"

using namespace nb::input;

namespace {

std::vector<uint8_t> read(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw nb::Error("cannot read " + p);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void write(const std::string& p, const void* data, size_t n) {
  std::ofstream f(p, std::ios::binary);
  f.write(static_cast<const char*>(data), std::streamsize(n));
  if (!f) throw nb::Error("cannot write " + p);
}

int usage() {
  std::cerr << "usage: input_tool make DIR COUNT [QUALITY] | decode IN.jpg OUT.rgb | "
               "augment IN.jpg TOP LEFT H W FLIP nchw|nhwc fp32|fp16 OUT.bin\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> a(argv + 1, argv + argc);
  try {
    if (a.size() >= 3 && a[0] == "make") {
      const ImageSet s = generate_images(std::stoi(a[2]), kGeneratedSeed, a.size() > 3 ? std::stoi(a[3]) : kGeneratedQuality, a[1]);
      std::printf("%zu files, mean %.0f bytes\n", s.files.size(), s.mean_bytes());
      return 0;
    }
    if (a.size() == 3 && a[0] == "decode") {
      const std::vector<uint8_t> j = read(a[1]);
      JpegDecoder d;
      Rgb img;
      d.decode(j.data(), j.size(), img);
      write(a[2], img.pixels.data(), img.pixels.size());
      std::printf("%d %d\n", img.width, img.height);
      return 0;
    }
    if (a.size() == 10 && a[0] == "augment") {
      const std::vector<uint8_t> j = read(a[1]);
      JpegDecoder d;
      Rgb img;
      d.decode(j.data(), j.size(), img);
      const Crop c{std::stoi(a[2]), std::stoi(a[3]), std::stoi(a[4]), std::stoi(a[5]), a[6] == "1"};
      const DType t = parse_dtype(a[8]);
      std::vector<uint8_t> out(image_elements() * element_bytes(t));
      Augmenter aug;
      aug.run(img, c, parse_layout(a[7]), t, out.data());
      write(a[9], out.data(), out.size());
      return 0;
    }
  } catch (const std::invalid_argument&) {
    return usage();
  } catch (const std::exception& e) {
    std::cerr << "input_tool: " << e.what() << "\n";
    return 1;
  }
  return usage();
}
