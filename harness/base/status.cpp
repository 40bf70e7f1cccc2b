#include "base/status.hpp"

#include <array>

#include "base/error.hpp"
#include <utility>

namespace nb {

namespace {
constexpr std::array<std::pair<Status, const char*>, 4> kStatus = {
    {{Status::ok, "ok"}, {Status::skipped, "skipped"}, {Status::failed, "failed"}, {Status::wrong, "wrong"}}};
constexpr std::array<std::pair<ReasonKind, const char*>, 15> kKinds = {{
    {ReasonKind::none, "none"},
    {ReasonKind::oom, "oom"},
    {ReasonKind::unsupported, "unsupported"},
    {ReasonKind::needs_gpus, "needs_gpus"},
    {ReasonKind::timeout, "timeout"},
    {ReasonKind::error, "error"},
    {ReasonKind::wrong_result, "wrong_result"},
    {ReasonKind::above_peak, "above_peak"},
    {ReasonKind::shared_gpu, "shared_gpu"},
    {ReasonKind::not_built, "not_built"},
    {ReasonKind::interrupted, "interrupted"},
    {ReasonKind::unusable_gpu, "unusable_gpu"},
    {ReasonKind::peer_rank, "peer_rank"},
    {ReasonKind::smaller_oom, "smaller_oom"},
    {ReasonKind::plateau, "plateau"},
}};
}  // namespace

const char* to_string(Status s) {
  for (const auto& [v, n] : kStatus)
    if (v == s) return n;
  return "failed";
}

const char* to_string(ReasonKind k) {
  for (const auto& [v, n] : kKinds)
    if (v == k) return n;
  return "error";
}

std::optional<Status> parse_status(const std::string& s) {
  for (const auto& [v, n] : kStatus)
    if (s == n) return v;
  return std::nullopt;
}

std::optional<ReasonKind> parse_reason_kind(const std::string& s) {
  for (const auto& [v, n] : kKinds)
    if (s == n) return v;
  return std::nullopt;
}

Outcome outcome_of(const std::exception& e) {
  if (const auto* c = dynamic_cast<const CudaError*>(&e); c && c->out_of_memory())
    return {Status::skipped, ReasonKind::oom, std::string("out of memory: ") + e.what()};
  return {Status::failed, ReasonKind::error, e.what()};
}

}  // namespace nb
