// The prefix-index part of the routing-decision microbenchmark (router_bench.cc): a
// 16k-character prompt (256 blocks of 64 characters), 64 backends, 1M indexed blocks.
//
// The index: 64 backends with 16,384 blocks each (1,048,576 entries, max_entries the same).
// 8 "hot" documents of 16k characters are held by every backend; every backend also holds 56
// documents of its own. Queries rotate over 512 prompts (8 MB of text, so they are not all in
// cache), of five kinds (the benchmark argument `kind`):
//   0 hot    a hot document: all 64 backends match all 256 blocks
//   1 owned  one backend's document: one backend matches 256 blocks (the coldest walk)
//   2 half   one backend's document cut at 8k characters, then new text: 128 blocks
//   3 cold   new text: nothing matches at block 0
//   4 mix    the four kinds, a quarter each
// BM_RoutingDecision times MakePrefixKeyFromText + Match per request, and reports its own
// p50 / p99 (each op timed on the steady clock) next to Google Benchmark's mean, and the index's
// memory per indexed block. The Insert benchmarks change the index, so they are registered last
// (the held-chain one first: the new chains evict what the backends held).
//
// Run: build/src/core/routing/warmroute_routing_bench
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "common/rng.h"
#include "core/routing/prefix_index.h"
#include "core/routing/prefix_key.h"

namespace warmroute::routing {
namespace {

constexpr int kBackends = 64;
constexpr int64_t kBlocksPerBackend = 16384;
constexpr size_t kPromptChars = 16384;
constexpr int kHotDocuments = 8;
constexpr int kOwnedPerBackend = 56;
constexpr int kPrompts = 512;
constexpr std::string_view kModel = "llama-3.1-70b";
constexpr std::string_view kTenant = "acme";

std::string Document(uint64_t id, size_t chars = kPromptChars) {
  Rng rng(Mix64(id));
  std::string text(chars, ' ');
  for (size_t i = 0; i < chars; i += 8) {
    uint64_t bits = rng.Next();
    for (size_t j = i; j < std::min(i + 8, chars); ++j, bits >>= 8) {
      text[j] = static_cast<char>(' ' + (bits & 63));
    }
  }
  return text;
}

uint64_t OwnedDocument(int backend, int k) { return 1000 + backend * 100 + k; }

struct Fleet {
  PrefixIndex index{{.max_entries = kBackends * kBlocksPerBackend}};
  std::vector<std::string> prompts[5];  // by kind: hot, owned, half, cold, mix

  Fleet() {
    for (int b = 0; b < kBackends; ++b) index.SetCapacity(b, kBlocksPerBackend);
    for (int b = 0; b < kBackends; ++b) {
      for (int k = 0; k < kOwnedPerBackend; ++k) {
        index.Insert(
            b,
            MakePrefixKeyFromText(kModel, kTenant, Document(OwnedDocument(b, k)), {}).block_hashes);
      }
    }
    for (int d = 0; d < kHotDocuments; ++d) {
      const PrefixKey key = MakePrefixKeyFromText(kModel, kTenant, Document(d), {});
      for (int b = 0; b < kBackends; ++b) index.Insert(b, key.block_hashes);
    }
    Rng rng(7);
    for (int i = 0; i < kPrompts; ++i) {
      const int backend = static_cast<int>(rng.UniformInt(kBackends));
      const int owned = static_cast<int>(rng.UniformInt(kOwnedPerBackend));
      prompts[0].push_back(Document(rng.UniformInt(kHotDocuments)));
      prompts[1].push_back(Document(OwnedDocument(backend, owned)));
      prompts[2].push_back(Document(OwnedDocument(backend, owned), kPromptChars / 2) +
                           Document(1'000'000 + i, kPromptChars / 2));
      prompts[3].push_back(Document(2'000'000 + i));
    }
    for (int i = 0; i < kPrompts; ++i) prompts[4].push_back(prompts[i % 4][i]);
  }
};

Fleet& GetFleet() {
  static Fleet* fleet = new Fleet();
  return *fleet;
}

void SetIndexCounters(benchmark::State& state, const PrefixIndex& index) {
  state.counters["entries"] = static_cast<double>(index.entries());
  state.counters["bytes_per_block"] =
      static_cast<double>(index.MemoryBytes()) / static_cast<double>(index.entries());
}

void BM_RoutingDecision(benchmark::State& state) {
  Fleet& fleet = GetFleet();
  const std::vector<std::string>& prompts = fleet.prompts[state.range(0)];
  std::vector<double> latencies_us;
  latencies_us.reserve(1 << 20);
  size_t i = 0;
  int64_t matched = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const PrefixKey key = MakePrefixKeyFromText(kModel, kTenant, prompts[i++ % kPrompts], {});
    std::vector<int32_t> depth = fleet.index.Match(key.block_hashes);
    const auto end = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(depth.data());
    matched += *std::max_element(depth.begin(), depth.end());
    if (latencies_us.size() < latencies_us.capacity()) {
      latencies_us.push_back(std::chrono::duration<double, std::micro>(end - start).count());
    }
  }
  std::sort(latencies_us.begin(), latencies_us.end());
  state.counters["p50_us"] = latencies_us[latencies_us.size() / 2];
  state.counters["p99_us"] = latencies_us[latencies_us.size() * 99 / 100];
  state.counters["best_depth"] = static_cast<double>(matched) / static_cast<double>(i);
  SetIndexCounters(state, fleet.index);
}
BENCHMARK(BM_RoutingDecision)->ArgName("kind")->DenseRange(0, 4)->Unit(benchmark::kMicrosecond);

void BM_MakePrefixKey(benchmark::State& state) {
  const std::vector<std::string>& prompts = GetFleet().prompts[3];
  size_t i = 0;
  for (auto _ : state) {
    PrefixKey key = MakePrefixKeyFromText(kModel, kTenant, prompts[i++ % kPrompts], {});
    benchmark::DoNotOptimize(key.block_hashes.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(i * kPromptChars));
}
BENCHMARK(BM_MakePrefixKey)->Unit(benchmark::kMicrosecond);

void BM_Match(benchmark::State& state) {
  Fleet& fleet = GetFleet();
  std::vector<std::vector<uint64_t>> chains;
  for (const std::string& prompt : fleet.prompts[state.range(0)]) {
    chains.push_back(MakePrefixKeyFromText(kModel, kTenant, prompt, {}).block_hashes);
  }
  size_t i = 0;
  for (auto _ : state) {
    std::vector<int32_t> depth = fleet.index.Match(chains[i++ % kPrompts]);
    benchmark::DoNotOptimize(depth.data());
  }
  SetIndexCounters(state, fleet.index);
}
BENCHMARK(BM_Match)->ArgName("kind")->DenseRange(0, 4)->Unit(benchmark::kMicrosecond);

// Insert of a chain the backend already holds (the engine's confirmation, or a request whose
// prefix is warm): 256 LRU touches. The chains rotate over every backend's own documents (3,584
// chains, 7 MB of hashes), so that entries and table slots are not all in cache. Argument `hint`:
// 1 passes the held depth as the router does (Insert's held_hint), 0 does not.
void BM_InsertHeldChain(benchmark::State& state) {
  Fleet& fleet = GetFleet();
  const bool hint = state.range(0) != 0;
  std::vector<std::pair<BackendId, std::vector<uint64_t>>> held;
  for (int b = 0; b < kBackends; ++b) {
    for (int k = 0; k < kOwnedPerBackend; ++k) {
      held.emplace_back(
          b,
          MakePrefixKeyFromText(kModel, kTenant, Document(OwnedDocument(b, k)), {}).block_hashes);
    }
  }
  Rng rng(11);
  std::vector<size_t> order(held.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = rng.UniformInt(held.size());
  size_t i = 0;
  for (auto _ : state) {
    const auto& [backend, chain] = held[order[i++ % order.size()]];
    fleet.index.Insert(backend, chain, hint ? chain.size() : 0);
  }
  SetIndexCounters(state, fleet.index);
}
BENCHMARK(BM_InsertHeldChain)->ArgName("hint")->DenseRange(0, 1)->Unit(benchmark::kMicrosecond);

// Insert of a chain the backend holds, in a small index that stays in cache: the gateway's case
// when one prompt comes again and again (bench/proxy_overhead.py's 12 KB body is 190 blocks).
// The chain's entries and the tables are in cache, so what is left is the walk along the held
// blocks' LRU list.
void BM_InsertHeldChainInCache(benchmark::State& state) {
  PrefixIndex index({.max_entries = 1 << 16});
  index.SetCapacity(0, 1 << 15);
  const std::vector<uint64_t> chain =
      MakePrefixKeyFromText(kModel, kTenant, Document(7, 12288), {}).block_hashes;
  index.Insert(0, chain);
  for (auto _ : state) index.Insert(0, chain, chain.size());
  SetIndexCounters(state, index);
}
BENCHMARK(BM_InsertHeldChainInCache)->Unit(benchmark::kMicrosecond);

// Insert of a new 256-block chain into a full backend: 256 new entries, 256 evictions. The chain
// is made in the loop (256 Mix64 calls, about 0.5 us) so that every insert is new.
void BM_InsertNewChain(benchmark::State& state) {
  Fleet& fleet = GetFleet();
  std::vector<uint64_t> chain(256);
  uint64_t i = 0;
  for (auto _ : state) {
    for (size_t k = 0; k < chain.size(); ++k) chain[k] = Mix64(uint64_t{1} << 62 | i << 10 | k);
    fleet.index.Insert(static_cast<BackendId>(i % kBackends), chain);
    ++i;
  }
  SetIndexCounters(state, fleet.index);
}
BENCHMARK(BM_InsertNewChain)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace warmroute::routing

BENCHMARK_MAIN();
