// The choice of data-parallel rank for one request of an engine that runs several engine cores
// behind one HTTP API (`vllm serve --data-parallel-size N`, `warmroute engine
// --data-parallel-size N`). Sans-I/O: it sees the ranks' queue lengths and the request's
// header, nothing else.
//
// The rule is vLLM's (vllm/v1/engine/core_client.py, DPLBAsyncMPClient
// .get_core_engine_for_request, with the header read by _get_data_parallel_rank in
// vllm/entrypoints/openai/serving_engine.py and checked by the input processor):
//   - an `X-data-parallel-rank` header that parses as an integer pins the request to that rank;
//     one outside [0, N) is a 400: "data_parallel_rank 5 is out of range [0, 2)." A header that
//     is not an integer is ignored, as vLLM ignores it;
//   - otherwise the rank with the least score waiting * 4 + running, ties to the lowest rank
//     (vLLM starts its scan at eng_start_index, which is 0 for a single API server). vLLM reads
//     the counts from its DP coordinator every 100 ms and adds its own submissions since; the
//     emulator reads each rank's live counts, the limit of that scheme.
// vLLM's balancer is not prefix-aware: a prompt whose prefix one rank holds may land on another.
//
// Usage:
//   std::vector<RankLoad> loads = {{.waiting = 0, .running = 3}, {.waiting = 1, .running = 0}};
//   absl::StatusOr<int> rank = PickDataParallelRank(loads, request.Header("X-data-parallel-rank"));
//
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "absl/status/statusor.h"

namespace warmroute::emulator {

// The header that pins a request to a rank (HTTP header names are case-insensitive).
inline constexpr std::string_view kDataParallelRankHeader = "X-data-parallel-rank";

// One rank's queues: requests waiting to be scheduled and requests running.
struct RankLoad {
  int64_t waiting = 0;
  int64_t running = 0;
};

// The rank for a request whose `X-data-parallel-rank` header is `rank_header` (empty when the
// request has none), over ranks 0 .. loads.size() - 1. InvalidArgument (parameter
// "data_parallel_rank") for an integer header out of range. REQUIRES: !loads.empty().
absl::StatusOr<int> PickDataParallelRank(std::span<const RankLoad> loads,
                                         std::string_view rank_header);

}  // namespace warmroute::emulator
