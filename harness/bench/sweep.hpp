// The batch-sweep rule shared by the train family's sweep and by the run's
// estimate of time left (issue 24): a sweep over batch 1, 2, 4, ... stops once throughput has
// reached its plateau, i.e. once doubling the batch gained less than `kPlateauGain`. Each larger
// batch would then cost twice the memory and time for a gain the batch recommendation (the
// smallest batch within 5% of the plateau) hardly notices. Pure: unit-tested without a GPU.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nb {

// A doubling of the batch that gains less than this (3%) ends the sweep; one that gains exactly
// this goes on. The rule compares 100 x the larger batch's throughput against (100 + 3) x the
// smaller's, exact for throughputs that are exact in binary (1030 against 1000 is exactly 3%),
// where the quotient 1030 / 1000 - 1 is not (it rounds to 3.0000000000000027%).
constexpr double kPlateauGainPercent = 3;
constexpr double kPlateauGain = kPlateauGainPercent / 100;

struct SweepPoint {
  int64_t batch = 0;
  double per_s = 0;  // throughput (images/s)
};

// Why a sweep should not run `batch`: when the two largest measured batches below it are a
// doubling apart and the larger gained less than kPlateauGain over the smaller. nullopt: run it.
std::optional<std::string> plateau_stop(std::vector<SweepPoint> measured, int64_t batch);

// The largest batch of `batches` (ascending) that the sweep is predicted to run: `prior_last`
// (where an earlier run of the same sweep stopped: harness/profiles/costs.json) when given; else,
// from the points measured so far, the gain of each further doubling extrapolated from the last
// two gains (shrinking geometrically as a sweep nears its plateau); with fewer than three points,
// or gains that do not shrink, every batch. A sweep not stopped yet runs at least the batch after
// its last measured one; a stopped one ends at its last measured batch. nullopt: none.
std::optional<int64_t> predicted_last_batch(std::vector<SweepPoint> measured, const std::vector<int64_t>& batches,
                                            std::optional<int64_t> prior_last = std::nullopt);

}  // namespace nb
