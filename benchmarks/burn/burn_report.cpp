// What `nodebench burn` prints for each burn record after the run (bench/contributions.hpp's
// RecordReport): the GPU, its status, the sustained and first-minute GEMM rates, the mean power,
// the faulty elements and memory errors, and the reason where there is one.
#include "base/json_fields.hpp"
#include "base/text.hpp"
#include "bench/contributions.hpp"

namespace nb::burn {
namespace {

using nlohmann::json;
using jf::num_or;
using jf::str_or;

std::string line(const json& r) {
  const json d = r.value("details", json::object());
  const json sm = d.value("summary", json::object());
  return "burn: GPU " + (r.contains("gpus") && !r["gpus"].empty() ? r["gpus"][0].dump() : std::string("?")) + " " +
         str_or(r, "status") + ": sustained " + fmt(num_or(sm, "sustained_tflops", 0), 1) + " TFLOPS " +
         str_or(d, "precision") + " (first minute " + fmt(num_or(sm, "first_minute_tflops", 0), 1) + "), mean power " +
         fmt(num_or(sm, "mean_power_w", 0), 0) + " W, faulty elements " + fmt(num_or(d, "faulty_elements", 0), 0) +
         ", memory errors " + (d.contains("memory_test") ? fmt(num_or(d["memory_test"], "errors", 0), 0) : std::string("?")) +
         (str_or(r, "reason").empty() ? "" : " -- " + str_or(r, "reason"));
}

bool cut_short(const json& r) { return r.value("details", json::object()).value("cut_short", false); }

const RecordReportRegistrar report({"burn", line, cut_short});

}  // namespace
}  // namespace nb::burn
