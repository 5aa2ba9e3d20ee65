// A data-parallel backend's routing targets: how the gateway addresses each rank of one
// `vllm serve --data-parallel-size D` API (D engine cores, each with its own KV cache) as a target
// of its own, so that the router's prefix index and load accounting are per cache, exactly what
// the router already does per backend, and the Router and its policies stay unaware of ranks.
//
// The rule (docs/precise-mode.md "Data-parallel ranks, live"): a backend whose
// kv_events.routes_ranks() (dp_ranks D > 1, route_ranks not false) becomes D routing targets:
//   - rank r's target is named RankTargetName(name, r) = "NAME/rank<r>": deterministic, so
//     every gateway replica names it alike and placement gossip matches (a backend's name has
//     no '/', so no backend is named like a rank's target);
//   - it has the backend's URL and connection pool, and the upstream request carries
//     X-data-parallel-rank: r (vLLM's API server, and the emulator, then send it to that engine
//     core rather than to their own balancer's pick); a client's header of that name is replaced;
//   - its KV capacity is the backend's configured kv_capacity_tokens split evenly (RankShare)
//     when set, else that rank's from the engine's per-`engine` metrics, else the backend's
//     scraped capacity split evenly;
//   - its load is that rank's engine series (ScrapedEngineMetrics::cores, the k-th core in
//     `engine` order being rank k, used when the engine reports exactly D cores), else the
//     backend's counts split evenly and its KV usage fraction as is: RankMetrics;
//   - its KV events are rank r's stream (endpoint port + r) into its own slice
//     (kv_events::BackendEventFeedOptions::rank_slices).
// Health, draining, removal and model discovery belong to the backend and act on all its ranks.
//
// vLLM's other data-parallel topology, external load balancing (one API server per rank:
// `vllm serve --data-parallel-size D --data-parallel-rank r --port P+r`), needs none of this:
// each rank's server is a backend of its own (dp_ranks: 1).
//
// Usage:
//   const int d = config.kv_events.dp_ranks;
//   if (config.kv_events.routes_ranks())
//     for (int r = 0; r < d; ++r) AddTarget(RankTargetName(config.name, r));
//   for (int r = 0; r < d; ++r) router.OnMetrics(rank_id[r], RankMetrics(scraped, d, r).sample);
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/fleet/engine_metrics.h"
#include "net/http1/http_request.h"

namespace warmroute::gateway {

// The request header naming the data-parallel rank (vLLM's `_get_data_parallel_rank`).
inline constexpr std::string_view kDataParallelRankHeader = "X-data-parallel-rank";

// "NAME/rank<r>".
std::string RankTargetName(std::string_view backend, int rank);

// Rank `rank`'s share of `total` split over `ranks` (the first total % ranks ranks one more).
// REQUIRES: 0 <= rank < ranks.
int64_t RankShare(int64_t total, int ranks, int rank);

// The value of the first X-data-parallel-rank header in `headers` (the client's), if any.
std::optional<std::string> DataParallelRankOf(const net::HttpHeaders& headers);

// Sets the upstream request's X-data-parallel-rank: `dp_rank` when >= 0 (a rank's target: any
// other value of the header is removed), else `client`'s value when given, else none.
void SetDataParallelRank(net::HttpHeaders& headers, int dp_rank,
                         const std::optional<std::string>& client);

// Rank `rank`'s load and KV capacity out of its backend's scrape (see above). REQUIRES: 0 <= rank
// < ranks.
ScrapedEngineMetrics RankMetrics(const ScrapedEngineMetrics& backend, int ranks, int rank);

}  // namespace warmroute::gateway
