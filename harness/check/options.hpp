// The options of `doctor` and `validate` (docs/VALIDATE.md).
#pragma once
#include <string>
#include <vector>

namespace nb {

struct DoctorOptions {
  bool json = false;             // the checks as JSON
  bool no_load = false;          // read the PCIe link without loading the GPU
  std::string from;              // --from FILE: judge a captured node (no GPU needed)
  std::string archs;             // --archs LIST: the binary's CUDA architectures, with --from
};

// `nodebench frameworks` (docs/FRAMEWORKS.md).
struct FrameworksOptions {
  std::vector<std::string> pythons;  // --python PATH (repeatable): probe these instead of the defaults
  std::vector<std::string> for_cc;   // --for-cc 6.1[,7.0]: judge for these GPUs, static part only
  bool json = false;                 // the report as JSON on stdout
  std::string out_file;              // --out FILE: the report as JSON, written atomically
  std::string from;                  // --from FILE: judge a report captured elsewhere
  double timeout_s = 300;            // per probe process
  bool bench = false;                // --bench: a short synthetic ResNet-50 training run per framework and mode
  double bench_seconds = 10;         // timed seconds per mode (after its warm-up)
  double bench_timeout_s = 300;      // the most one mode's process may take, warm-up and compilation included
  int bench_batch = 64;              // images per GPU and step
  std::string junit_file, prometheus_file;
};

struct ValidateOptions {
  int level = 2;                 // 1 checks only; 2 plus quick bandwidth and GEMM; 3 every family, full sweeps
  std::string profile = "auto";  // auto, a model name of the thresholds file, or a thresholds FILE
  // --junit and --prometheus are output formats (run/formats.hpp): their files are in the run
  // options' format_files.
};

}  // namespace nb
