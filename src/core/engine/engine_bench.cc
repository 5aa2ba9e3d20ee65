// Microbenchmarks of the engine model's hot paths:
//   BM_PrefixLookupAndAllocate: a 3,000-token prompt against a warm cache (its first 2,048
//     tokens cached, as for a shared system prompt): hash the blocks, find the cached prefix,
//     allocate the rest, free.
//   BM_DecodeStep256: one EngineCore::Step with 256 running decode sequences (1k-token contexts).
#include <memory>
#include <vector>

#include "benchmark/benchmark.h"
#include "common/rng.h"
#include "core/engine/engine_core.h"
#include "core/engine/kv_block_manager.h"
#include "core/request/block_hash.h"
#include "core/request/tokenizer.h"

namespace warmroute::engine {
namespace {

std::vector<int32_t> RandomTokens(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> tokens(n);
  for (int32_t& t : tokens) t = 256 + static_cast<int32_t>(rng.UniformInt(128000));
  return tokens;
}

void BM_PrefixLookupAndAllocate(benchmark::State& state) {
  constexpr int kBlockSize = 16;
  KvBlockManager pool(27500, kBlockSize);  // llama-3.1-8b-h100's 440k tokens
  std::vector<KvEvent> events;
  const std::vector<int32_t> shared = RandomTokens(2048, 1);
  {  // warm the cache with the shared prefix
    const std::vector<uint64_t> h = request::HashFullBlocks(shared, kBlockSize, 7);
    std::vector<BlockId> blocks;
    pool.Allocate({}, static_cast<int64_t>(h.size()), &blocks, &events);
    pool.CacheFullBlocks(blocks, h, 0, static_cast<int64_t>(h.size()), shared, &events);
    pool.Free(blocks);
  }
  std::vector<int32_t> prompt = shared;
  const std::vector<int32_t> tail = RandomTokens(3000 - 2048, 2);
  prompt.insert(prompt.end(), tail.begin(), tail.end());
  std::vector<BlockId> blocks;
  blocks.reserve(256);
  int64_t hits = 0;
  for (auto _ : state) {
    const std::vector<uint64_t> hashes = request::HashFullBlocks(prompt, kBlockSize, 7);
    const int64_t max_hit = (static_cast<int64_t>(prompt.size()) - 1) / kBlockSize;
    blocks.clear();
    events.clear();
    const int64_t hit = pool.FindCachedPrefix(hashes, max_hit, &blocks);
    const int64_t needed = (static_cast<int64_t>(prompt.size()) + kBlockSize - 1) / kBlockSize;
    if (!pool.Allocate(blocks, needed - hit, &blocks, &events)) state.SkipWithError("full");
    pool.Free(blocks);
    hits += hit;
    benchmark::DoNotOptimize(blocks.data());
  }
  state.counters["hit_blocks"] =
      static_cast<double>(hits) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_PrefixLookupAndAllocate);

void BM_DecodeStep256(benchmark::State& state) {
  request::BuiltinTokenizer tokenizer;
  TokenGenerator generator(tokenizer);
  const TimingProfile& profile = *FindTimingProfile("llama-3.1-8b-h100");
  constexpr int kSeqs = 256;
  constexpr int64_t kMaxTokens = 2000;
  std::unique_ptr<EngineCore> core;
  int64_t steps_left = 0;
  auto start = [&] {
    core = std::make_unique<EngineCore>(
        DefaultEngineConfig(profile, kSeqs * (1000 + kMaxTokens + 16)), profile, generator, 1);
    for (uint64_t id = 0; id < kSeqs; ++id) {
      (void)core->Add({.id = id,
                       .prompt_tokens = RandomTokens(1000, id),
                       .max_tokens = kMaxTokens,
                       .root_hash = 7,
                       .seed = id});
    }
    // Prefill everything (256k prompt tokens at 8192 per step) until every step is pure decode.
    while (true) {
      const StepOutput out = core->Step();
      if (core->Stats().num_running == kSeqs && out.shape.prefill_tokens == 0) break;
    }
    steps_left = kMaxTokens - 100;
  };
  int64_t decode_seqs = 0;
  for (auto _ : state) {
    if (steps_left == 0) {
      state.PauseTiming();
      start();
      state.ResumeTiming();
    }
    StepOutput out = core->Step();
    decode_seqs += out.shape.decode_seqs;
    --steps_left;
    benchmark::DoNotOptimize(out.events.data());
  }
  state.counters["decode_seqs"] =
      static_cast<double>(decode_seqs) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_DecodeStep256);

}  // namespace
}  // namespace warmroute::engine

BENCHMARK_MAIN();
