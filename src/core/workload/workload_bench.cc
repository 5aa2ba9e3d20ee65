// Generation speed of the workloads: requests generated per second (items_per_second), and for
// the Mooncake conversation trace the block-text cache's peak size. The simulator replays up to a
// million requests, so generation must stay far below the simulator's own cost per request.
#include <string>

#include "benchmark/benchmark.h"
#include "core/workload/generators.h"
#include "core/workload/mooncake_trace.h"
#include "core/workload/workload.h"

namespace warmroute::workload {
namespace {

WorkloadOptions Options(std::string name, int64_t n) {
  WorkloadOptions options;
  options.name = std::move(name);
  options.num_requests = n;
  options.rate_per_s = 100;
  return options;
}

// Generates `n` open-loop requests per iteration (construction included: precomputed prefixes).
void DrainOpenLoop(benchmark::State& state, const std::string& name) {
  const int64_t n = state.range(0);
  int64_t bytes = 0;
  for (auto _ : state) {
    auto workload = MakeWorkload(Options(name, n), 1);
    while (auto r = (*workload)->Next()) {
      bytes += static_cast<int64_t>(r->prompt.size());
      for (const auto& m : r->messages) bytes += static_cast<int64_t>(m.content.size());
      benchmark::DoNotOptimize(r);
    }
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.SetBytesProcessed(bytes);
}

void BM_SupportBot(benchmark::State& state) { DrainOpenLoop(state, "support-bot"); }
BENCHMARK(BM_SupportBot)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_SharedPrefix(benchmark::State& state) { DrainOpenLoop(state, "shared-prefix"); }
BENCHMARK(BM_SharedPrefix)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_Unique(benchmark::State& state) { DrainOpenLoop(state, "unique"); }
BENCHMARK(BM_Unique)->Arg(100000)->Unit(benchmark::kMillisecond);

// Closed loop: every request is answered at once with a short answer.
void BM_MultiTurn(benchmark::State& state) {
  const int64_t n = state.range(0);
  for (auto _ : state) {
    auto workload = MakeWorkload(Options("multi-turn", n), 1);
    while (!(*workload)->Done()) {
      while (auto r = (*workload)->Next()) {
        (*workload)->OnResponse(r->id, " Sure, here it is.", r->arrival);
      }
    }
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_MultiTurn)->Arg(100000)->Unit(benchmark::kMillisecond);

// The Mooncake conversation trace (12,031 requests, 288,500 blocks of 512 tokens): parse, then
// generate every prompt. Reports the cache's peak bytes and the prompt bytes generated.
void BM_TraceConversation(benchmark::State& state) {
  const std::string path = std::string(WARMROUTE_TRACES_DIR) + "/conversation_trace.jsonl";
  int64_t requests = 0;
  size_t peak = 0;
  int64_t bytes = 0;
  for (auto _ : state) {
    auto records = ReadMooncakeTrace(path);
    if (!records.ok()) {
      state.SkipWithError(std::string(records.status().message()).c_str());
      return;
    }
    TraceWorkload workload(Options("trace:" + path, 0), *std::move(records), 1);
    while (auto r = workload.Next()) {
      bytes += static_cast<int64_t>(r->prompt.size());
      ++requests;
    }
    peak = workload.peak_cached_bytes();
  }
  state.SetItemsProcessed(requests);
  state.SetBytesProcessed(bytes);
  state.counters["peak_cache_MB"] = static_cast<double>(peak) / 1e6;
}
BENCHMARK(BM_TraceConversation)->Unit(benchmark::kMillisecond);

// Parsing alone.
void BM_ParseConversationTrace(benchmark::State& state) {
  const std::string path = std::string(WARMROUTE_TRACES_DIR) + "/conversation_trace.jsonl";
  int64_t records = 0;
  for (auto _ : state) {
    auto parsed = ReadMooncakeTrace(path);
    records += static_cast<int64_t>(parsed->size());
  }
  state.SetItemsProcessed(records);
}
BENCHMARK(BM_ParseConversationTrace)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace warmroute::workload

BENCHMARK_MAIN();
