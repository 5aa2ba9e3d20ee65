// Precise mode's cost on one core: KV events of one backend, applied to the prefix index.
//
// The engine of the benchmark serves prompts of 32 blocks of 16 tokens (512 tokens), each with
// its own first block, so the slice holds `live` prompts at any time. Each message (one
// scheduler step) is a vLLM array-form batch as the emulator encodes it: the new prompt's
// BlockStored split in two events (16 blocks without parent, 16 continuing from the first run's
// last block) and one BlockRemoved of the 32 blocks of the prompt stored `live` messages earlier
// (the engine evicts as much as it stores). So a message is 64 block events, and the slice,
// the writer's map and the domain attribution stay at a steady size. The messages are made once
// (2 x live of them, cycled) and one cycle runs before timing, so every removal finds its blocks.
//
//   BM_ApplyDecoded     writer.Apply + IndexUpdates::ApplyTo on pre-decoded batches
//   BM_DecodeAndApply   DecodeEventBatch + the same
//   BM_WriterOnly       writer.Apply alone (the index untouched), to split the cost
//   BM_DecodeOnly       DecodeEventBatch alone
// The slice sizes, in live prompts of 32 blocks: 2048 (65,536 blocks), 16384 (524,288 blocks, the
// size issue 27's target is stated at) and 18000 (576,000 blocks: the index's hash tables are at
// their fullest there, a load of 0.697 just below the 0.7 at which a ProbeTable grows, so the
// slowest lookups; at 524,288 they sit at 0.634).
// items/s counts block events (a block stored or removed). Counters: mem_per_block, the bytes
// of the index (PrefixIndex::MemoryBytes) plus the writer's maps (BlockIndexWriter::
// MemoryBytes) per indexed block, and attribution_bytes_per_block, the dispatch records'.
//
// Run: cmake --build --preset release --target warmroute_kv_events_bench &&
//      build/release/src/core/kv_events/warmroute_kv_events_bench
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "core/kv_events/block_index_writer.h"
#include "core/kv_events/event_decoder.h"
#include "core/kv_events/msgpack_test_util.h"
#include "core/routing/domain_attribution.h"
#include "core/routing/index_updates.h"
#include "core/routing/prefix_index.h"

namespace warmroute::kv_events {
namespace {

constexpr int kBlockTokens = 16;
constexpr int kBlocksPerPrompt = 32;
constexpr int kRun = 16;  // blocks in the first BlockStored of a prompt
constexpr std::string_view kModel = "llama-3.1-70b";

uint64_t EngineHash(size_t prompt, int block) {
  return (uint64_t{prompt} << 8 | static_cast<uint64_t>(block)) * 0x9e3779b97f4a7c15ull;
}

std::vector<int32_t> PromptTokens(size_t prompt) {
  std::vector<int32_t> tokens(kBlocksPerPrompt * kBlockTokens);
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<int32_t>((prompt * 7919 + i * 31) % 150000);
  }
  return tokens;
}

void AppendStored(testing::Msgpack& m, size_t prompt, const std::vector<int32_t>& tokens,
                  int from, int count) {
  m.Array(8).Str("BlockStored").Array(static_cast<uint32_t>(count));
  for (int b = from; b < from + count; ++b) m.Uint(EngineHash(prompt, b));
  if (from == 0) {
    m.Nil();
  } else {
    m.Uint(EngineHash(prompt, from - 1));
  }
  m.Array(static_cast<uint32_t>(count * kBlockTokens));
  for (int i = from * kBlockTokens; i < (from + count) * kBlockTokens; ++i) {
    m.Uint(static_cast<uint64_t>(tokens[static_cast<size_t>(i)]));
  }
  m.Uint(kBlockTokens).Nil().Str("GPU").Nil();
}

struct Engine {
  explicit Engine(size_t live) : live(live) {
    const size_t messages = 2 * live;
    for (size_t j = 0; j < messages; ++j) {
      const std::vector<int32_t> tokens = PromptTokens(j);
      const routing::DispatchDomain d =
          routing::DomainOfTokenPrompt(kModel, "", "", tokens, kBlockTokens);
      attribution.Record(0, d.first_block, d.record);
      testing::Msgpack m;
      m.Array(3).Double(1.0).Array(3);
      AppendStored(m, j, tokens, 0, kRun);
      AppendStored(m, j, tokens, kRun, kBlocksPerPrompt - kRun);
      const size_t evicted = (j + messages - live) % messages;
      m.Array(3).Str("BlockRemoved").Array(kBlocksPerPrompt);
      for (int b = 0; b < kBlocksPerPrompt; ++b) m.Uint(EngineHash(evicted, b));
      m.Str("GPU");
      m.Uint(0);
      payloads.push_back(m.bytes());
    }
    decoded.resize(messages);
    for (size_t j = 0; j < messages; ++j) {
      if (!DecodeEventBatch(payloads[j], decoded[j]).ok()) std::abort();
    }
    index->SetCapacity(0, static_cast<int64_t>(4 * live * kBlocksPerPrompt));
    for (size_t j = 0; j < messages; ++j) Apply(decoded[j]);  // warm-up cycle
  }

  void Apply(const EventBatch& batch) {
    updates.clear();
    if (!writer.Apply(0, batch, attribution, updates).ok()) std::abort();
    updates.ApplyTo(*index, 0);
  }

  void Report(benchmark::State& state) const {
    const double blocks = static_cast<double>(index->entries());
    state.counters["indexed_blocks"] = blocks;
    state.counters["mem_per_block"] =
        static_cast<double>(index->MemoryBytes() + writer.MemoryBytes()) / blocks;
    state.counters["attribution_bytes_per_block"] =
        static_cast<double>(attribution.MemoryBytes()) / blocks;
  }

  size_t live;
  std::vector<std::string> payloads;
  std::vector<EventBatch> decoded;
  routing::DomainAttribution attribution{{.records_per_backend = 1 << 20}};
  std::unique_ptr<routing::PrefixIndex> index =
      std::make_unique<routing::PrefixIndex>(routing::PrefixIndexOptions{.max_entries = 1 << 23});
  BlockIndexWriter writer{{.block_size = kBlockTokens}};
  routing::IndexUpdates updates;
};

constexpr int64_t kBlockEventsPerMessage = 2 * kBlocksPerPrompt;

void BM_ApplyDecoded(benchmark::State& state) {
  Engine engine(static_cast<size_t>(state.range(0)));
  size_t j = 0;
  for (auto _ : state) {
    engine.Apply(engine.decoded[j]);
    if (++j == engine.decoded.size()) j = 0;
  }
  state.SetItemsProcessed(state.iterations() * kBlockEventsPerMessage);
  engine.Report(state);
}
BENCHMARK(BM_ApplyDecoded)->ArgName("live_prompts")->Arg(2048)->Arg(16384)->Arg(18000);

void BM_DecodeAndApply(benchmark::State& state) {
  Engine engine(static_cast<size_t>(state.range(0)));
  EventBatch batch;
  size_t j = 0;
  for (auto _ : state) {
    if (!DecodeEventBatch(engine.payloads[j], batch).ok()) std::abort();
    engine.Apply(batch);
    if (++j == engine.payloads.size()) j = 0;
  }
  state.SetItemsProcessed(state.iterations() * kBlockEventsPerMessage);
  engine.Report(state);
}
BENCHMARK(BM_DecodeAndApply)->ArgName("live_prompts")->Arg(2048)->Arg(16384)->Arg(18000);

// The writer alone (its map and hashing; the index untouched), to split the cost.
void BM_WriterOnly(benchmark::State& state) {
  Engine engine(static_cast<size_t>(state.range(0)));
  size_t j = 0;
  for (auto _ : state) {
    engine.updates.clear();
    if (!engine.writer.Apply(0, engine.decoded[j], engine.attribution, engine.updates).ok()) {
      std::abort();
    }
    if (++j == engine.decoded.size()) j = 0;
  }
  state.SetItemsProcessed(state.iterations() * kBlockEventsPerMessage);
}
BENCHMARK(BM_WriterOnly)->ArgName("live_prompts")->Arg(2048)->Arg(16384)->Arg(18000);

void BM_DecodeOnly(benchmark::State& state) {
  Engine engine(2048);
  EventBatch batch;
  size_t j = 0;
  for (auto _ : state) {
    if (!DecodeEventBatch(engine.payloads[j], batch).ok()) std::abort();
    benchmark::DoNotOptimize(batch.events.data());
    if (++j == engine.payloads.size()) j = 0;
  }
  state.SetItemsProcessed(state.iterations() * kBlockEventsPerMessage);
}
BENCHMARK(BM_DecodeOnly);

}  // namespace
}  // namespace warmroute::kv_events

BENCHMARK_MAIN();
