// The JSON result file (docs/SCHEMA.md): written by every run of `run` and `validate`, at the
// path the command chose (output/json_file.hpp).
#include <memory>

#include "output/json_file.hpp"
#include "run/formats.hpp"

namespace nb {
namespace {

const FormatRegistrar kResultJson{{
    .name = "result_json",
    .what = "JSON result file",
    .commands = kFormatRun | kFormatValidate,
    .order = 0,
    .make = [](const FormatContext& c) -> std::unique_ptr<Reporter> {
      return std::make_unique<JsonResultFile>(c.file, *c.doc);  // writes it now: throws when it cannot
    },
}};

}  // namespace
}  // namespace nb
