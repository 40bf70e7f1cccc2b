#include "jpeg_codec.hpp"

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "base/error.hpp"

#if NB_HAVE_JPEG
#include <turbojpeg.h>
// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>
#endif

namespace nb::input {

#if NB_HAVE_JPEG
bool jpeg_built() { return true; }
std::string jpeg_missing() { return ""; }

namespace {

tjhandle tj(void* h) { return static_cast<tjhandle>(h); }

[[noreturn]] void tj_fail(void* h, const char* what) {
  throw Error(std::string("TurboJPEG ") + what + ": " + tjGetErrorStr2(tj(h)));
}

// libjpeg reports errors through error_exit, which must not return: jump back to the caller,
// which throws (no C++ object lives in the libjpeg frames that the jump leaves).
struct LibjpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};
extern "C" void libjpeg_error_exit(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<LibjpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}
extern "C" void libjpeg_quiet(j_common_ptr, int) {}  // warnings are not printed

}  // namespace

JpegDecoder::JpegDecoder() : handle_(tjInitDecompress()) {
  if (!handle_) throw Error(std::string("TurboJPEG: tjInitDecompress failed: ") + tjGetErrorStr2(nullptr));
}
JpegDecoder::~JpegDecoder() {
  if (handle_) tjDestroy(tj(handle_));
}

JpegHeader JpegDecoder::header(const uint8_t* data, size_t size) {
  int w = 0, h = 0, sub = 0, cs = 0;
  if (tjDecompressHeader3(tj(handle_), data, static_cast<unsigned long>(size), &w, &h, &sub, &cs) != 0)
    tj_fail(handle_, "header");
  return {w, h, cs != TJCS_CMYK && cs != TJCS_YCCK};
}

void JpegDecoder::decode(const uint8_t* data, size_t size, Rgb& out, bool fast_dct) {
  const JpegHeader hd = header(data, size);
  out.width = hd.width;
  out.height = hd.height;
  out.pixels.resize(size_t(hd.width) * size_t(hd.height) * 3);
  const int flags = fast_dct ? TJFLAG_FASTDCT : 0;
  if (tjDecompress2(tj(handle_), data, static_cast<unsigned long>(size), out.pixels.data(), hd.width, hd.width * 3,
                    hd.height, TJPF_RGB, flags) != 0 &&
      tjGetErrorCode(tj(handle_)) != TJERR_WARNING)
    tj_fail(handle_, "decode");
}

std::vector<uint8_t> encode_jpeg(const Rgb& image, int quality) {
  tjhandle h = tjInitCompress();
  if (!h) throw Error(std::string("TurboJPEG: tjInitCompress failed: ") + tjGetErrorStr2(nullptr));
  unsigned char* buf = nullptr;
  unsigned long n = 0;
  const int rc = tjCompress2(h, image.pixels.data(), image.width, image.width * 3, image.height, TJPF_RGB, &buf, &n,
                             TJSAMP_420, quality, 0);
  std::vector<uint8_t> out;
  std::string why;
  if (rc == 0) out.assign(buf, buf + n);
  else why = tjGetErrorStr2(h);
  if (buf) tjFree(buf);
  tjDestroy(h);
  if (rc != 0) throw Error("TurboJPEG encode: " + why);
  return out;
}

Rgb decode_libjpeg(const uint8_t* data, size_t size) {
  jpeg_decompress_struct cinfo{};
  LibjpegError err{};
  Rgb out;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = libjpeg_error_exit;
  err.mgr.emit_message = libjpeg_quiet;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    throw Error(std::string("libjpeg decode: ") + err.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  out.width = int(cinfo.output_width);
  out.height = int(cinfo.output_height);
  out.pixels.resize(size_t(out.width) * size_t(out.height) * 3);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out.pixels.data() + size_t(cinfo.output_scanline) * size_t(out.width) * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return out;
}

#else
bool jpeg_built() { return false; }
std::string jpeg_missing() { return NB_JPEG_MISSING; }
namespace {
[[noreturn]] void not_built() { throw Error("built without libjpeg-turbo (" + jpeg_missing() + ")"); }
}  // namespace
JpegDecoder::JpegDecoder() { not_built(); }
JpegDecoder::~JpegDecoder() = default;
JpegHeader JpegDecoder::header(const uint8_t*, size_t) { not_built(); }
void JpegDecoder::decode(const uint8_t*, size_t, Rgb&, bool) { not_built(); }
std::vector<uint8_t> encode_jpeg(const Rgb&, int) { not_built(); }
Rgb decode_libjpeg(const uint8_t*, size_t) { not_built(); }
#endif

int max_abs_diff(const Rgb& a, const Rgb& b) {
  if (a.width != b.width || a.height != b.height || a.pixels.size() != b.pixels.size()) return 255;
  int m = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) m = std::max(m, std::abs(int(a.pixels[i]) - int(b.pixels[i])));
  return m;
}

double psnr_db(const Rgb& a, const Rgb& b) {
  if (a.width != b.width || a.height != b.height || a.pixels.size() != b.pixels.size() || a.pixels.empty()) return 0;
  double se = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) {
    const double d = double(a.pixels[i]) - double(b.pixels[i]);
    se += d * d;
  }
  if (se == 0) return std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(255.0 * 255.0 / (se / double(a.pixels.size())));
}

}  // namespace nb::input
