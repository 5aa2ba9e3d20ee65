#include "emulator/data_parallel_ranks.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "emulator/dp_rank_picker.h"

namespace warmroute::emulator {

DataParallelRanks::DataParallelRanks(std::vector<Replica*> ranks) : ranks_(std::move(ranks)) {}

absl::StatusOr<Replica*> DataParallelRanks::Pick(const net::HttpRequest& request) const {
  if (ranks_.size() == 1) return ranks_.front();
  std::vector<RankLoad> loads;
  loads.reserve(ranks_.size());
  for (const Replica* replica : ranks_) {
    const engine::EngineStats stats = replica->Stats();
    loads.push_back({.waiting = stats.num_waiting, .running = stats.num_running});
  }
  absl::StatusOr<int> rank = PickDataParallelRank(loads, request.Header(kDataParallelRankHeader));
  if (!rank.ok()) return rank.status();
  return ranks_[static_cast<size_t>(*rank)];
}

absl::Status DataParallelRanks::ResetPrefixCache() {
  absl::Status first;
  for (size_t r = 0; r < ranks_.size(); ++r) {
    absl::Status reset = ranks_[r]->ResetPrefixCache();
    if (reset.ok() || !first.ok()) continue;
    first = ranks_.size() == 1 ? reset
                               : absl::Status(reset.code(), absl::StrCat("data-parallel rank ", r,
                                                                         ": ", reset.message()));
  }
  return first;
}

std::string DataParallelRanks::MetricsText() {
  std::vector<const ReplicaMetrics*> metrics;
  metrics.reserve(ranks_.size());
  for (Replica* replica : ranks_) metrics.push_back(&replica->UpdatedMetrics());
  return ReplicaMetrics::SerializeAll(metrics);
}

}  // namespace warmroute::emulator
