#include "core/workload/open_loop.h"

#include <utility>

namespace warmroute::workload {
namespace {
constexpr uint64_t kArrivalSalt = 0xa441;
}  // namespace

OpenLoopWorkload::OpenLoopWorkload(int64_t count, double rate_per_s, uint64_t seed)
    : count_(count), arrivals_(rate_per_s, Rng(StreamSeed(seed, kArrivalSalt, 0))) {}

std::optional<WorkloadRequest> OpenLoopWorkload::Next() {
  if (next_ >= count_) return std::nullopt;
  WorkloadRequest request;
  request.id = static_cast<uint64_t>(next_);
  request.arrival = arrivals_.Next();
  Fill(next_, request);
  ++next_;
  return request;
}

}  // namespace warmroute::workload
