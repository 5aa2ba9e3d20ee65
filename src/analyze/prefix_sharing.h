// How much a stream of requests shares prefixes: the question before any routing (does this
// traffic have prefixes to reuse?), answered from the block chains of prompt_set.h.
//
// A request shares k blocks with earlier requests when its first k chain hashes were all seen
// before (a chain hash stands for the whole prefix up to its block). Figures:
//   sharing_requests       requests sharing at least kMinSharedTokens tokens of prefix with an
//                          earlier one (more than a chat template's fixed opening): the usual
//                          criterion is that more than half do
//   shared_fraction_mean   per request, shared blocks / its blocks, averaged
//   infinite_cache_hit_rate  shared blocks / all blocks: the hit rate of one engine with
//                          unbounded KV memory, which no fleet can beat
// Prefix groups: requests with the same first group_blocks blocks (fewer when the prompt is
// shorter: then its last full block) form a group; each group with at least two requests is
// listed, biggest first, with its share of all requests, the mean blocks its requests shared, and
// its reuse distance (median, between consecutive requests of the group: seconds, and requests
// of other groups in between: the cache must keep the prefix that long). Every group's size and
// reuse distance in seconds is kept too, for the plots (analysis_plots.h).
//
// Usage:
//   SharingStats s = AnalyzeSharing(set, /*group_blocks=*/16, /*max_groups=*/10);
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "analyze/prompt_set.h"

namespace warmroute::analyze {

inline constexpr int64_t kMinSharedTokens = 64;

struct PrefixGroup {
  uint64_t id = 0;                    // the chain hash that defines it
  int64_t requests = 0;
  double share = 0;                   // of all requests
  int64_t prefix_tokens = 0;          // tokens of its defining blocks
  double shared_blocks_mean = 0;      // blocks its requests shared with earlier ones (any group)
  double reuse_distance_s = 0;        // median seconds between consecutive requests
  double reuse_distance_requests = 0; // median requests between them
};

// What the plots need of every prefix group.
struct GroupReuse {
  int64_t requests = 0;
  double reuse_distance_s = 0;  // as PrefixGroup's
};

struct SharingStats {
  int64_t requests = 0;
  int64_t blocks = 0;
  int64_t sharing_requests = 0;
  double sharing_share = 0;
  double shared_fraction_mean = 0;
  double infinite_cache_hit_rate = 0;
  int64_t groups_total = 0;            // groups of two or more requests
  std::vector<PrefixGroup> groups;     // the biggest max_groups
  std::vector<GroupReuse> all_groups;  // every one of groups_total, in the order of `groups`
};

SharingStats AnalyzeSharing(const PromptSet& set, size_t group_blocks, size_t max_groups);

// Blocks of `blocks` already in `seen` from the start (the request's cache hits with unbounded
// memory); then adds every block of `blocks` to `seen`.
template <typename Set>
size_t ShareAndRemember(const std::vector<uint64_t>& blocks, Set& seen) {
  size_t shared = 0;
  while (shared < blocks.size() && seen.contains(blocks[shared])) ++shared;
  for (size_t i = shared; i < blocks.size(); ++i) seen.insert(blocks[i]);
  return shared;
}

}  // namespace warmroute::analyze
