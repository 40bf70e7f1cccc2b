#include "images.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/error.hpp"
#include "bench/settings.hpp"

namespace nb::input {

namespace fs = std::filesystem;

namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A value in [-1, 1) from a seed and two lattice coordinates.
float lattice(uint64_t seed, int i, int j) {
  const uint64_t h = mix(seed ^ mix(uint64_t(uint32_t(i)) | (uint64_t(uint32_t(j)) << 32)));
  return float(double(h >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

struct Rng {
  uint64_t s;
  double next() { return double(mix(s++) >> 11) / 9007199254740992.0; }  // [0, 1)
  double in(double a, double b) { return a + (b - a) * next(); }
};

// Adds `amp` x value noise of lattice spacing `step` pixels (smoothstep-bilinear between the
// lattice values) to `field`: each lattice row interpolated along x once, then every pixel row
// between two of them.
void add_octave(std::vector<float>& field, int w, int h, int step, float amp, uint64_t seed) {
  const int gw = w / step + 2, gh = h / step + 2;
  auto smooth = [](float t) { return t * t * (3.0f - 2.0f * t); };
  std::vector<float> rows(size_t(gh) * size_t(w));
  std::vector<float> g(static_cast<size_t>(gw));
  for (int j = 0; j < gh; ++j) {
    for (int i = 0; i < gw; ++i) g[size_t(i)] = lattice(seed, i, j);
    float* r = rows.data() + size_t(j) * size_t(w);
    for (int x = 0; x < w; ++x) {
      const float fx = float(x) / float(step);  // lattice points on pixels: the 1-pixel octave is not blurred
      const int i = int(fx);
      r[x] = g[size_t(i)] + (g[size_t(i) + 1] - g[size_t(i)]) * smooth(fx - float(i));
    }
  }
  for (int y = 0; y < h; ++y) {
    const float fy = float(y) / float(step);
    const int j = int(fy);
    const float ty = amp * smooth(fy - float(j)), t0 = amp - ty;
    const float* r0 = rows.data() + size_t(j) * size_t(w);
    const float* r1 = r0 + w;
    float* out = field.data() + size_t(y) * size_t(w);
    for (int x = 0; x < w; ++x) out[x] += t0 * r0[x] + ty * r1[x];
  }
}

struct Shape {
  bool ellipse;
  float cx, cy, rx, ry, cs, sn;  // centre, half-axes, rotation
  float color[3], grad[3];       // colour at the centre, change per half-axis along `cs, sn`
  float texture;                 // the texture's strength inside
};

void random_color(Rng& r, float out[3]) {
  // Natural scenes: mostly muted colours around a mid grey.
  const double grey = r.in(40, 210), sat = r.in(0.05, 0.55);
  for (int c = 0; c < 3; ++c) out[c] = float(std::clamp(grey * (1.0 + sat * r.in(-1, 1)), 0.0, 255.0));
}

// Coverage of pixel (x, y) by the shape: 1 inside, 0 outside, linear over one pixel at the edge.
float coverage(const Shape& s, float x, float y) {
  const float dx = x - s.cx, dy = y - s.cy;
  const float u = dx * s.cs + dy * s.sn, v = -dx * s.sn + dy * s.cs;
  float d;
  if (s.ellipse) {
    const float q = std::sqrt((u / s.rx) * (u / s.rx) + (v / s.ry) * (v / s.ry));
    d = (q - 1.0f) * std::min(s.rx, s.ry);
  } else {
    d = std::max(std::fabs(u) - s.rx, std::fabs(v) - s.ry);
  }
  return std::clamp(0.5f - d, 0.0f, 1.0f);
}

// Texture amplitudes (grey levels per octave): chosen so that the files' mean size comes near
// ImageNet's (about 110 KB at 500x375); the size measured is recorded with every result.
constexpr float kLumaPerOctave = 44.0f;
constexpr float kChromaPerOctave = 14.0f;
constexpr int kChromaFinestStep = 2;
constexpr int kSmallShapesMin = 40, kSmallShapesSpread = 40;  // small objects: edges, as in photographs

}  // namespace

Rgb synth_image(int width, int height, uint64_t seed, int index) {
  const uint64_t s0 = mix(seed ^ (uint64_t(index) * 0x632be59bd9b4e019ull));
  Rng r{s0};
  const size_t n = size_t(width) * size_t(height);
  // Texture: the same amplitude in every octave (1 to 256 pixels) for the luminance, and for the
  // colour from 2 pixels up (4:2:0 keeps colour at half resolution).
  std::vector<float> luma(n, 0.0f), chroma(n, 0.0f);
  for (int step = 1, o = 0; step <= 256; step *= 2, ++o) {
    add_octave(luma, width, height, step, kLumaPerOctave, s0 + uint64_t(o));
    if (step >= kChromaFinestStep) add_octave(chroma, width, height, step, kChromaPerOctave, s0 + 100 + uint64_t(o));
  }
  // Sky above a horizon, ground below, each a vertical gradient.
  float sky_top[3], sky_low[3], ground_top[3], ground_low[3];
  random_color(r, sky_top), random_color(r, sky_low), random_color(r, ground_top), random_color(r, ground_low);
  const float horizon = float(r.in(0.25, 0.7)) * float(height);
  const int large = 5 + int(r.next() * 8);
  std::vector<Shape> shapes(size_t(large + kSmallShapesMin + int(r.next() * kSmallShapesSpread)));
  const float m = float(std::min(width, height));
  for (size_t k = 0; k < shapes.size(); ++k) {
    Shape& s = shapes[k];
    const bool small = int(k) >= large;
    s.ellipse = r.next() < 0.6;
    s.cx = float(r.in(0, width)), s.cy = float(r.in(horizon * 0.6, height));
    s.rx = m * float(small ? r.in(0.01, 0.06) : r.in(0.04, 0.35)), s.ry = m * float(small ? r.in(0.01, 0.06) : r.in(0.04, 0.35));
    const double a = r.in(0, 3.14159265);
    s.cs = float(std::cos(a)), s.sn = float(std::sin(a));
    random_color(r, s.color);
    for (float& g : s.grad) g = float(r.in(-45, 45));
    s.texture = float(r.in(0.5, 1.5));
  }
  // Background, then the shapes over it inside their bounding boxes, then the texture.
  std::vector<float> col(n * 3), tex(n);
  for (int y = 0; y < height; ++y) {
    const bool sky = float(y) < horizon;
    const float t = sky ? float(y) / std::max(horizon, 1.0f) : (float(y) - horizon) / std::max(float(height) - horizon, 1.0f);
    for (int x = 0; x < width; ++x) {
      const size_t p = size_t(y) * size_t(width) + size_t(x);
      for (int c = 0; c < 3; ++c)
        col[p * 3 + size_t(c)] = sky ? sky_top[c] + (sky_low[c] - sky_top[c]) * t : ground_top[c] + (ground_low[c] - ground_top[c]) * t;
      tex[p] = sky ? 0.3f : 1.0f;
    }
  }
  for (const Shape& s : shapes) {
    // An ellipse lies within its larger half-axis; a rotated rectangle within its half-diagonal.
    const float r = (s.ellipse ? std::max(s.rx, s.ry) : std::sqrt(s.rx * s.rx + s.ry * s.ry)) + 1;
    const int x0 = std::max(0, int(s.cx - r)), x1 = std::min(width, int(s.cx + r) + 1);
    const int y0 = std::max(0, int(s.cy - r)), y1 = std::min(height, int(s.cy + r) + 1);
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) {
        const float fx = float(x) + 0.5f, fy = float(y) + 0.5f;
        const float a = coverage(s, fx, fy);
        if (a <= 0) continue;
        const size_t p = size_t(y) * size_t(width) + size_t(x);
        const float along = ((fx - s.cx) * s.cs + (fy - s.cy) * s.sn) / s.rx;
        for (int c = 0; c < 3; ++c) col[p * 3 + size_t(c)] += a * (s.color[c] + s.grad[c] * along - col[p * 3 + size_t(c)]);
        tex[p] += a * (s.texture - tex[p]);
      }
  }
  Rgb img;
  img.width = width;
  img.height = height;
  img.pixels.resize(n * 3);
  for (size_t p = 0; p < n; ++p) {
    const float l = luma[p] * tex[p], ch = chroma[p] * tex[p];
    const float add[3] = {l + ch, l - 0.5f * ch, l - 0.5f * ch};
    for (int c = 0; c < 3; ++c)
      img.pixels[p * 3 + size_t(c)] = uint8_t(std::clamp(col[p * 3 + size_t(c)] + add[c], 0.0f, 255.0f) + 0.5f);
  }
  return img;
}

double ImageSet::mean_bytes() const { return files.empty() ? 0.0 : double(total_bytes()) / double(files.size()); }

uint64_t ImageSet::total_bytes() const {
  uint64_t t = 0;
  for (const auto& f : files) t += f.bytes.size();
  return t;
}

namespace {

std::vector<uint8_t> read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw Error("cannot read '" + p.string() + "'");
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void write_file(const fs::path& p, const std::vector<uint8_t>& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  if (!f) throw Error("cannot write '" + p.string() + "'");
}

// A folder under $TMPDIR (or /tmp) made for this process, removed when it goes out of scope.
struct TempDir {
  fs::path path;
  TempDir() {
    const char* t = std::getenv("TMPDIR");
    std::string tmpl = std::string(t && *t ? t : "/tmp") + "/nodebench-input-XXXXXX";
    if (!mkdtemp(tmpl.data())) throw Error("cannot create a temporary folder '" + tmpl + "'");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

bool is_jpeg_name(const fs::path& p) {
  std::string e = p.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return e == ".jpg" || e == ".jpeg";
}

}  // namespace

ImageSet generate_images(int count, uint64_t seed, int quality, const std::string& keep_dir) {
  std::vector<std::vector<uint8_t>> encoded(static_cast<size_t>(count));
  const int threads = std::max(1, std::min(count, int(std::thread::hardware_concurrency())));
  std::vector<std::thread> pool;
  std::vector<std::string> errors(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        for (int i = t; i < count; i += threads) {
          const bool portrait = i % 4 == 3;
          encoded[size_t(i)] = encode_jpeg(synth_image(portrait ? 375 : 500, portrait ? 500 : 375, seed, i), quality);
        }
      } catch (const std::exception& e) {
        errors[size_t(t)] = e.what();
      }
    });
  for (auto& th : pool) th.join();
  for (const auto& e : errors)
    if (!e.empty()) throw Error("generating the input images: " + e);
  std::unique_ptr<TempDir> tmp;
  fs::path dir;
  if (keep_dir.empty()) {
    tmp = std::make_unique<TempDir>();
    dir = tmp->path;
  } else {
    dir = keep_dir;
    fs::create_directories(dir);
  }
  ImageSet set;
  set.generated = true;
  set.seed = seed;
  set.kept_in = keep_dir;
  char name[32];
  for (int i = 0; i < count; ++i) {
    std::snprintf(name, sizeof name, "input_%03d.jpg", i);
    write_file(dir / name, encoded[size_t(i)]);
  }
  JpegDecoder dec;
  for (int i = 0; i < count; ++i) {
    std::snprintf(name, sizeof name, "input_%03d.jpg", i);
    JpegFile f{name, read_file(dir / name), 0, 0};
    const JpegHeader h = dec.header(f.bytes.data(), f.bytes.size());
    f.width = h.width;
    f.height = h.height;
    set.files.push_back(std::move(f));
  }
  set.source = "generated: " + std::to_string(count) + " images 500x375 (one in four 375x500), quality " +
               std::to_string(quality) + ", 4:2:0, seed " + std::to_string(seed);
  return set;
}

ImageSet load_images(const std::string& dir, size_t max_files) {
  std::vector<fs::path> names;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && is_jpeg_name(e.path())) names.push_back(e.path());
  std::sort(names.begin(), names.end());
  ImageSet set;
  set.source = dir;
  JpegDecoder dec;
  for (const auto& p : names) {
    if (set.files.size() >= max_files) break;
    JpegFile f{p.filename().string(), read_file(p), 0, 0};
    try {
      const JpegHeader h = dec.header(f.bytes.data(), f.bytes.size());
      if (!h.rgb_capable) {
        set.left_out.push_back(f.name + ": CMYK, not decodable to RGB");
        continue;
      }
      f.width = h.width;
      f.height = h.height;
      set.files.push_back(std::move(f));
    } catch (const Error& e) {
      set.left_out.push_back(f.name + ": " + e.what());
    }
  }
  if (set.files.empty())
    throw Error("no decodable JPEG in '" + dir + "' (" + std::to_string(names.size()) + " *.jpg/*.jpeg file(s)" +
                (set.left_out.empty() ? "" : "; first: " + set.left_out.front()) + ")");
  return set;
}

std::string image_dir_problem(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return "'" + dir + "': no such folder";
  if (!fs::is_directory(dir, ec)) return "'" + dir + "': not a folder";
  fs::directory_iterator it(dir, ec);
  if (ec) return "'" + dir + "': cannot be read (" + ec.message() + ")";
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (is_jpeg_name(it->path()) && it->is_regular_file(ec)) return "";
  }
  return "'" + dir + "': holds no *.jpg or *.jpeg file";
}

namespace {

std::string keep_dir_problem(const std::string& dir) {
  std::error_code ec;
  return fs::exists(dir, ec) && !fs::is_directory(dir, ec) ? "'" + dir + "': exists and is not a folder" : "";
}

const SettingRegistrar kImages({"NODEBENCH_INPUT_IMAGES", SettingKind::text, "input_images", nullptr, 0, false,
                                "=DIR the input family decodes DIR's *.jpg files, not the images it makes", "input",
                                false, true, image_dir_problem, "--images"});
const SettingRegistrar kKeep({"NODEBENCH_INPUT_KEEP", SettingKind::text, "input_keep", nullptr, 0, false,
                              "=DIR the input family writes the JPEGs it makes into DIR and keeps them", "input", false,
                              true, keep_dir_problem});

}  // namespace

namespace {
// The run's images as a session resource: made once, released with the Session.
struct RunImages {
  ImageSet set;
};
}  // namespace

const ImageSet& run_images(CaseContext& ctx) {
  const Settings& s = ctx.settings();
  return ctx.session_resources()
      .get<RunImages>([&] {
        const std::string images = s.text("NODEBENCH_INPUT_IMAGES");
        return std::make_unique<RunImages>(RunImages{
            images.empty() ? generate_images(kGeneratedCount, kGeneratedSeed, kGeneratedQuality, s.text("NODEBENCH_INPUT_KEEP"))
                           : load_images(images, 256)});
      })
      .set;
}

}  // namespace nb::input
