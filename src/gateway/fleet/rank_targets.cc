#include "gateway/fleet/rank_targets.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"

namespace warmroute::gateway {

std::string RankTargetName(std::string_view backend, int rank) {
  return absl::StrCat(AbslView(backend), "/rank", rank);
}

int64_t RankShare(int64_t total, int ranks, int rank) {
  return total / ranks + (rank < total % ranks ? 1 : 0);
}

std::optional<std::string> DataParallelRankOf(const net::HttpHeaders& headers) {
  for (const auto& [name, value] : headers) {
    if (net::HeaderNameIs(name, kDataParallelRankHeader)) return value;
  }
  return std::nullopt;
}

void SetDataParallelRank(net::HttpHeaders& headers, int dp_rank,
                         const std::optional<std::string>& client) {
  std::erase_if(headers, [](const auto& header) {
    return net::HeaderNameIs(header.first, kDataParallelRankHeader);
  });
  if (dp_rank >= 0) {
    headers.emplace_back(std::string(kDataParallelRankHeader), std::to_string(dp_rank));
  } else if (client) {
    headers.emplace_back(std::string(kDataParallelRankHeader), *client);
  }
}

ScrapedEngineMetrics RankMetrics(const ScrapedEngineMetrics& backend, int ranks, int rank) {
  ScrapedEngineMetrics out;
  if (backend.cores.size() == static_cast<size_t>(ranks)) {
    const EngineCoreMetrics& core = backend.cores[static_cast<size_t>(rank)];
    out.sample = core.sample;
    out.kv_capacity_tokens = core.kv_capacity_tokens;
  } else {
    out.sample = backend.sample;
    out.sample.num_running = RankShare(backend.sample.num_running, ranks, rank);
    out.sample.num_waiting = RankShare(backend.sample.num_waiting, ranks, rank);
  }
  if (!out.kv_capacity_tokens && backend.kv_capacity_tokens) {
    out.kv_capacity_tokens = RankShare(*backend.kv_capacity_tokens, ranks, rank);
  }
  return out;
}

}  // namespace warmroute::gateway
