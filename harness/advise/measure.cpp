#include "advise/measure.hpp"

#include "bench/contributions.hpp"

namespace nb::advise {

std::vector<std::pair<std::string, std::string>> measure_selections() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const AdviceContribution& c : advice_contributions())
    if (!c.measure_filter.empty()) out.emplace_back(c.family, c.measure_filter);
  return out;
}

}  // namespace nb::advise
