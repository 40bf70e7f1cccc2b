// What `nodebench advise --measure` runs: the cases each registered advise contribution declares
// it reads (bench/contributions.hpp, measure_filter), each from its own family. The harness names
// no family: the contributions say which.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace nb::advise {

// (family, case filter) of each registered contribution that declares a filter, in the order
// they registered; the run's selections (run/options.hpp).
std::vector<std::pair<std::string, std::string>> measure_selections();

}  // namespace nb::advise
