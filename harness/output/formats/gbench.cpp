// `run --gbench-out FILE`: the samples in Google Benchmark's JSON format (output/gbench_out.hpp).
#include <memory>

#include "output/gbench_out.hpp"
#include "run/formats.hpp"

namespace nb {
namespace {

const FormatRegistrar kGbench{{
    .name = "gbench",
    .what = "Google Benchmark JSON",
    .commands = kFormatRun,
    .option = "--gbench-out",
    .help = "Also write the samples as a Google Benchmark JSON file (for its tools/compare.py and dashboards)",
    .order = 30,
    .make = [](const FormatContext& c) -> std::unique_ptr<Reporter> { return std::make_unique<GbenchJson>(c.file); },
}};

}  // namespace
}  // namespace nb
