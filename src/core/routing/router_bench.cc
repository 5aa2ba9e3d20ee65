// The policy part of the routing-decision microbenchmark (issue 4, section 5): Router::Route plus
// the request's completion (OnFirstToken, OnFinished) for each policy, 64 backends, keys of
// 256 blocks (a 16k-character prompt), 512 distinct prompts sharing 32 system prompts, so every
// backend's slice of the index is warm. The prefix key is computed outside the timed loop
// (prefix_index_bench.cc times MakePrefixKeyFromText + Match).
//
// Run: build/src/core/routing/warmroute_routing_bench --benchmark_filter=BM_Route
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "common/clock.h"
#include "common/rng.h"
#include "core/routing/policy_registry.h"
#include "core/routing/router.h"

namespace warmroute::routing {
namespace {

constexpr int kRouteBackends = 64;
constexpr int kRouteBlocks = 256;
constexpr int kRoutePrompts = 512;

void BM_Route(benchmark::State& state, const char* policy_name) {
  ManualClock clock;
  Router router(MakePolicy(policy_name, {}).value(), RouterOptions{}, clock, 1);
  for (int b = 0; b < kRouteBackends; ++b) {
    router.AddBackend({.name = "r" + std::to_string(b), .kv_capacity_tokens = 460000});
  }
  std::vector<RoutingRequest> requests(kRoutePrompts);
  for (int p = 0; p < kRoutePrompts; ++p) {
    RoutingRequest& r = requests[p];
    r.model = "m";
    r.prompt_tokens = kRouteBlocks * 16;
    r.key.prompt_tokens = r.prompt_tokens;
    const uint64_t system = static_cast<uint64_t>(p % 32);
    for (int i = 0; i < kRouteBlocks; ++i) {
      const uint64_t owner = i < 200 ? system : 1000 + static_cast<uint64_t>(p);
      r.key.block_hashes.push_back(Mix64(owner * 1000003 + static_cast<uint64_t>(i)));
    }
  }
  uint64_t id = 0;
  for (auto _ : state) {
    RoutingRequest& r = requests[id % kRoutePrompts];
    r.id = id++;
    absl::StatusOr<Decision> d = router.Route(r);
    benchmark::DoNotOptimize(d);
    clock.Advance(std::chrono::milliseconds(1));
    router.OnFirstToken(r.id);
    router.OnFinished(r.id, std::nullopt);
  }
}

BENCHMARK_CAPTURE(BM_Route, warmroute, "warmroute");
BENCHMARK_CAPTURE(BM_Route, round_robin, "round_robin");
BENCHMARK_CAPTURE(BM_Route, consistent_hash, "consistent_hash");
BENCHMARK_CAPTURE(BM_Route, sglang_cache_aware, "sglang_cache_aware");
BENCHMARK_CAPTURE(BM_Route, dynamo_kv, "dynamo_kv");
BENCHMARK_CAPTURE(BM_Route, llmd_weighted, "llmd_weighted");
BENCHMARK_CAPTURE(BM_Route, preble, "preble");

}  // namespace
}  // namespace warmroute::routing
