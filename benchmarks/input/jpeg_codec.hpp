// JPEG through libjpeg-turbo (Debian's libturbojpeg0-dev and libjpeg62-turbo-dev), as PIL,
// torchvision and TensorFlow decode: the TurboJPEG API for the timed decode and the encoder, and
// libjpeg's own API (jpeg_read_scanlines) as the second decode path the family verifies against.
// Both decode with the library's defaults (the accurate integer IDCT, fancy chroma upsampling),
// the settings PIL and torchvision use. Optional: without the libraries every call throws and
// jpeg_built() is false (the family's CPU cases are then skipped with the reason).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nb::input {

// Whether this build has libjpeg-turbo; `jpeg_missing()` says what was not found when not.
bool jpeg_built();
std::string jpeg_missing();

// An 8-bit image, RGB interleaved, rows packed (pitch = 3 x width).
struct Rgb {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;
  uint8_t at(int x, int y, int c) const { return pixels[(size_t(y) * size_t(width) + size_t(x)) * 3 + size_t(c)]; }
};

struct JpegHeader {
  int width = 0, height = 0;
  bool rgb_capable = true;  // false for CMYK/YCCK files, which TurboJPEG cannot turn into RGB
};

// A TurboJPEG decompressor; one per thread (a handle is not thread-safe). Move-only.
class JpegDecoder {
 public:
  JpegDecoder();
  ~JpegDecoder();
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;
  // Throws nb::Error for data TurboJPEG cannot parse.
  JpegHeader header(const uint8_t* data, size_t size);
  // Decodes to RGB into `out` (reusing its storage). `fast_dct`: the faster, less accurate IDCT.
  // A warning (a slightly corrupt but decodable file) is not an error, as for PIL.
  void decode(const uint8_t* data, size_t size, Rgb& out, bool fast_dct = false);

 private:
  void* handle_ = nullptr;
};

// Encodes RGB at `quality` with 4:2:0 chroma subsampling (ImageNet's files are mostly 4:2:0).
std::vector<uint8_t> encode_jpeg(const Rgb& image, int quality);

// The same decode through libjpeg's API: the second path.
Rgb decode_libjpeg(const uint8_t* data, size_t size);

// Largest absolute difference of two images of the same size (255 when the sizes differ).
int max_abs_diff(const Rgb& a, const Rgb& b);
// Peak signal-to-noise ratio of `b` against `a` in dB (infinite when equal).
double psnr_db(const Rgb& a, const Rgb& b);

}  // namespace nb::input
