#include "analyze/prefix_sharing.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "core/stats/samples.h"

namespace warmroute::analyze {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return stats::PercentileOfSorted(v, 0.5);
}

}  // namespace

SharingStats AnalyzeSharing(const PromptSet& set, size_t group_blocks, size_t max_groups) {
  SharingStats s;
  s.requests = static_cast<int64_t>(set.records.size());
  absl::flat_hash_set<uint64_t> seen;
  struct Group {
    int64_t requests = 0;
    size_t depth = 0;
    double shared_blocks = 0;
    double last_s = 0;
    int64_t last_index = 0;
    std::vector<double> gaps_s, gaps_requests;
  };
  absl::flat_hash_map<uint64_t, Group> groups;
  int64_t shared_total = 0;
  double fraction_sum = 0;
  for (size_t i = 0; i < set.records.size(); ++i) {
    const PromptRecord& r = set.records[i];
    const size_t shared = ShareAndRemember(r.blocks, seen);
    s.blocks += static_cast<int64_t>(r.blocks.size());
    shared_total += static_cast<int64_t>(shared);
    if (shared > 0 && static_cast<int64_t>(shared) * set.block_tokens >= kMinSharedTokens) {
      ++s.sharing_requests;
    }
    if (!r.blocks.empty()) {
      fraction_sum += static_cast<double>(shared) / static_cast<double>(r.blocks.size());
      const size_t depth = std::min(r.blocks.size(), std::max<size_t>(group_blocks, 1));
      Group& g = groups[r.blocks[depth - 1]];
      if (g.requests > 0) {
        g.gaps_s.push_back(r.arrival_s - g.last_s);
        g.gaps_requests.push_back(static_cast<double>(static_cast<int64_t>(i) - g.last_index - 1));
      }
      ++g.requests;
      g.depth = depth;
      g.shared_blocks += static_cast<double>(shared);
      g.last_s = r.arrival_s;
      g.last_index = static_cast<int64_t>(i);
    }
  }
  if (s.requests > 0) {
    s.sharing_share = static_cast<double>(s.sharing_requests) / static_cast<double>(s.requests);
    s.shared_fraction_mean = fraction_sum / static_cast<double>(s.requests);
  }
  if (s.blocks > 0) {
    s.infinite_cache_hit_rate = static_cast<double>(shared_total) / static_cast<double>(s.blocks);
  }
  for (auto& [id, g] : groups) {
    if (g.requests < 2) continue;
    ++s.groups_total;
    s.groups.push_back({.id = id,
                        .requests = g.requests,
                        .share = static_cast<double>(g.requests) / static_cast<double>(s.requests),
                        .prefix_tokens = static_cast<int64_t>(g.depth) * set.block_tokens,
                        .shared_blocks_mean = g.shared_blocks / static_cast<double>(g.requests),
                        .reuse_distance_s = Median(g.gaps_s),
                        .reuse_distance_requests = Median(g.gaps_requests)});
  }
  std::sort(s.groups.begin(), s.groups.end(), [](const PrefixGroup& a, const PrefixGroup& b) {
    return a.requests != b.requests ? a.requests > b.requests : a.id < b.id;
  });
  s.all_groups.reserve(s.groups.size());
  for (const PrefixGroup& g : s.groups) {
    s.all_groups.push_back({.requests = g.requests, .reuse_distance_s = g.reuse_distance_s});
  }
  if (s.groups.size() > max_groups) s.groups.resize(max_groups);
  return s;
}

}  // namespace warmroute::analyze
