#include "core/engine/engine_core.h"

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "common/rng.h"
#include "common/status.h"
#include "core/request/block_hash.h"
#include "core/request/tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::engine {
namespace {

using ::testing::ElementsAre;
using Kind = RequestEvent::Kind;

constexpr uint64_t kRoot = 0xabcdef;

std::vector<int32_t> Prompt(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> tokens(static_cast<size_t>(n));
  for (int32_t& t : tokens) t = 256 + static_cast<int32_t>(rng.UniformInt(128000));
  return tokens;
}

EngineRequest Req(uint64_t id, std::vector<int32_t> prompt, int64_t max_tokens) {
  return {.id = id,
          .prompt_tokens = std::move(prompt),
          .max_tokens = max_tokens,
          .root_hash = kRoot,
          .seed = id * 7919};
}

class EngineCoreTest : public ::testing::Test {
 protected:
  EngineConfig TinyConfig(int64_t num_gpu_blocks = 4096) {
    EngineConfig c = DefaultEngineConfig(*FindTimingProfile("tiny"));
    c.num_gpu_blocks = num_gpu_blocks;
    return c;
  }

  // Steps until idle; returns every step's output.
  std::vector<StepOutput> Drain(EngineCore& core, int max_steps = 100000) {
    std::vector<StepOutput> steps;
    while (core.HasWork() && static_cast<int>(steps.size()) < max_steps) {
      steps.push_back(core.Step());
    }
    EXPECT_FALSE(core.HasWork()) << "still busy after " << max_steps << " steps";
    return steps;
  }

  // Every event of `kind` for `id`, in order.
  static std::vector<RequestEvent> EventsOf(const std::vector<StepOutput>& steps, uint64_t id,
                                            Kind kind) {
    std::vector<RequestEvent> out;
    for (const StepOutput& s : steps) {
      for (const RequestEvent& e : s.events) {
        if (e.id == id && e.kind == kind) out.push_back(e);
      }
    }
    return out;
  }

  // The step index of the first event of `kind` for `id`, or -1.
  static int StepOf(const std::vector<StepOutput>& steps, uint64_t id, Kind kind) {
    for (size_t i = 0; i < steps.size(); ++i) {
      for (const RequestEvent& e : steps[i].events) {
        if (e.id == id && e.kind == kind) return static_cast<int>(i);
      }
    }
    return -1;
  }

  request::BuiltinTokenizer tokenizer_;
  TokenGenerator generator_{tokenizer_};
};

TEST_F(EngineCoreTest, DefaultConfigTakesCapacityAndContextFromTheProfile) {
  const TimingProfile& p = *FindTimingProfile("llama-3.1-8b-h100");
  EngineConfig c = DefaultEngineConfig(p);
  EXPECT_EQ(c.num_gpu_blocks, p.default_capacity_tokens / 16);
  EXPECT_EQ(c.max_model_len, 131072);
  EXPECT_EQ(c.max_num_batched_tokens, 8192);
  EXPECT_EQ(DefaultEngineConfig(p, 1600).num_gpu_blocks, 100);
}

TEST_F(EngineCoreTest, GeneratesExactlyMaxTokensFromTheGenerator) {
  EngineCore core(TinyConfig(), *FindTimingProfile("tiny"), generator_, 1);
  ASSERT_TRUE(core.Add(Req(1, Prompt(40, 1), 5)).ok());
  const std::vector<StepOutput> steps = Drain(core);
  ASSERT_EQ(steps.size(), 5u);  // one prefill step that samples, then 4 decode steps
  const std::vector<RequestEvent> tokens = EventsOf(steps, 1, Kind::kToken);
  ASSERT_EQ(tokens.size(), 5u);
  for (int64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(tokens[i].output_index, i);
    EXPECT_EQ(tokens[i].token, generator_.Token(7919, i));
  }
  const std::vector<RequestEvent> done = EventsOf(steps, 1, Kind::kFinished);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].output_index, 5);
  EXPECT_EQ(done[0].prompt_tokens, 40);
  // Shapes: 40 prefill tokens, then one decoding sequence with a growing context.
  EXPECT_EQ(steps[0].shape.prefill_tokens, 40);
  EXPECT_EQ(steps[0].shape.decode_seqs, 0);
  EXPECT_EQ(steps[1].shape.prefill_tokens, 0);
  EXPECT_EQ(steps[1].shape.decode_seqs, 1);
  EXPECT_EQ(steps[1].shape.context_tokens, 41);
  EXPECT_EQ(steps[4].shape.context_tokens, 44);
  // The tiny profile: 1 ms + 40 x 10 µs, then 1 ms + 0.1 ms.
  EXPECT_EQ(steps[0].duration, std::chrono::microseconds(1400));
  EXPECT_EQ(steps[1].duration, std::chrono::microseconds(1100));
  const EngineStats stats = core.Stats();
  EXPECT_EQ(stats.generation_tokens, 5);
  EXPECT_EQ(stats.prompt_tokens, 40);
  EXPECT_EQ(stats.num_running, 0);
  EXPECT_EQ(stats.kv_cache_usage, 0);
}

TEST_F(EngineCoreTest, ChunksA20kPromptAcrossStepsWithinTheTokenBudget) {
  const TimingProfile& p = *FindTimingProfile("llama-3.1-8b-h100");
  EngineCore core(DefaultEngineConfig(p), p, generator_, 1);
  ASSERT_TRUE(core.Add(Req(1, Prompt(20000, 1), 2)).ok());
  const std::vector<StepOutput> steps = Drain(core);
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].shape.prefill_tokens, 8192);
  EXPECT_EQ(steps[1].shape.prefill_tokens, 8192);
  EXPECT_EQ(steps[2].shape.prefill_tokens, 20000 - 2 * 8192);
  EXPECT_EQ(steps[2].shape.context_tokens, 20000);
  EXPECT_EQ(steps[3].shape.decode_seqs, 1);
  EXPECT_EQ(StepOf(steps, 1, Kind::kToken), 2);  // no token until the prefill completes
  EXPECT_TRUE(steps[0].events.empty());
  EXPECT_TRUE(steps[1].events.empty());
}

TEST_F(EngineCoreTest, RespectsTheTokenBudgetEveryStep) {
  EngineConfig config = TinyConfig();
  config.max_num_batched_tokens = 1000;
  EngineCore core(config, *FindTimingProfile("tiny"), generator_, 3);
  for (uint64_t id = 1; id <= 30; ++id) {
    ASSERT_TRUE(core.Add(Req(id, Prompt(300 + 37 * id, id), 20)).ok());
  }
  const std::vector<StepOutput> steps = Drain(core);
  int64_t full_steps = 0;
  for (const StepOutput& s : steps) {
    const int64_t tokens = s.shape.prefill_tokens + s.shape.decode_seqs;
    EXPECT_LE(tokens, 1000);
    full_steps += tokens == 1000;
  }
  EXPECT_GT(full_steps, 5);  // the budget was the binding limit, and was used up
  for (uint64_t id = 1; id <= 30; ++id) EXPECT_EQ(EventsOf(steps, id, Kind::kToken).size(), 20u);
}

TEST_F(EngineCoreTest, IdenticalSecondRequestReusesAllButTheLastTokensBlock) {
  for (const int64_t n : {1000, 1024}) {
    SCOPED_TRACE(n);
    EngineCore core(TinyConfig(), *FindTimingProfile("tiny"), generator_, 1);
    const std::vector<int32_t> prompt = Prompt(n, 5);
    ASSERT_TRUE(core.Add(Req(1, prompt, 3)).ok());
    const std::vector<StepOutput> first = Drain(core);
    EXPECT_EQ(EventsOf(first, 1, Kind::kToken)[0].cached_tokens, 0);
    ASSERT_TRUE(core.Add(Req(2, prompt, 3)).ok());
    const std::vector<StepOutput> second = Drain(core);
    const int64_t expected = (n - 1) / 16 * 16;  // 992 for 1000; 1008 for 1024
    EXPECT_EQ(EventsOf(second, 2, Kind::kToken)[0].cached_tokens, expected);
    EXPECT_EQ(EventsOf(second, 2, Kind::kFinished)[0].cached_tokens, expected);
    EXPECT_EQ(second[0].shape.prefill_tokens, n - expected);
    EXPECT_EQ(first[0].shape.prefill_tokens, n);
    EXPECT_LT(second[0].duration, first[0].duration);
    const EngineStats stats = core.Stats();
    EXPECT_EQ(stats.prefix_cache_queries, 2 * n);
    EXPECT_EQ(stats.prefix_cache_hits, expected);
  }
}

TEST_F(EngineCoreTest, GeneratedTokensBlocksAreCachedForTheNextTurn) {
  EngineCore core(TinyConfig(), *FindTimingProfile("tiny"), generator_, 1);
  const std::vector<int32_t> prompt = Prompt(100, 9);
  ASSERT_TRUE(core.Add(Req(1, prompt, 50)).ok());
  const std::vector<StepOutput> steps = Drain(core);
  std::vector<int32_t> next = prompt;
  for (const RequestEvent& e : EventsOf(steps, 1, Kind::kToken)) next.push_back(e.token);
  const std::vector<int32_t> question = Prompt(20, 10);
  next.insert(next.end(), question.begin(), question.end());
  ASSERT_TRUE(core.Add(Req(2, next, 1)).ok());
  const std::vector<StepOutput> turn2 = Drain(core);
  // KV exists for the prompt and all but the last generated token: 149 tokens = 9 full blocks,
  // beyond the prompt's own 6 full blocks.
  EXPECT_EQ(EventsOf(turn2, 2, Kind::kToken)[0].cached_tokens, 144);
}

TEST_F(EngineCoreTest, PreemptsTheNewestRequestAndRecomputesUntilAllFinish) {
  // 20 blocks of 16 tokens; 4 requests of 64 prompt + 100 output tokens need 11 blocks each.
  EngineCore core(TinyConfig(20), *FindTimingProfile("tiny"), generator_, 1);
  for (uint64_t id = 1; id <= 4; ++id) ASSERT_TRUE(core.Add(Req(id, Prompt(64, id), 100)).ok());
  const std::vector<StepOutput> steps = Drain(core);
  EXPECT_GT(core.Stats().num_preemptions, 0);
  std::set<uint64_t> preempted;
  int64_t preempt_events = 0;
  for (const StepOutput& s : steps) {
    for (const RequestEvent& e : s.events) {
      if (e.kind != Kind::kPreempted) continue;
      preempted.insert(e.id);
      ++preempt_events;
    }
  }
  EXPECT_FALSE(preempted.empty());
  EXPECT_EQ(preempted.count(1), 0u);  // the oldest request is never the victim
  for (uint64_t id = 1; id <= 4; ++id) {
    const std::vector<RequestEvent> tokens = EventsOf(steps, id, Kind::kToken);
    ASSERT_EQ(tokens.size(), 100u) << id;
    for (int64_t i = 0; i < 100; ++i) {
      EXPECT_EQ(tokens[i].output_index, i);  // recompute continues, never repeats
      EXPECT_EQ(tokens[i].token, generator_.Token(id * 7919, i));
    }
    EXPECT_EQ(EventsOf(steps, id, Kind::kFinished).size(), 1u);
  }
  EXPECT_EQ(core.Stats().kv_cache_usage, 0);
  EXPECT_EQ(core.Stats().num_preemptions, preempt_events);
}

TEST_F(EngineCoreTest, RejectsRequestsThatCouldNeverRun) {
  EngineConfig config = TinyConfig(10);  // 160 tokens of KV
  config.max_model_len = 1000;
  EngineCore core(config, *FindTimingProfile("tiny"), generator_, 1);
  absl::Status s = core.Add(Req(1, {}, 5));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParamOf(s), "prompt");
  s = core.Add(Req(1, Prompt(10, 1), 0));
  EXPECT_EQ(ParamOf(s), "max_tokens");
  s = core.Add(Req(1, Prompt(1001, 1), 1));
  EXPECT_EQ(ParamOf(s), "prompt");
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("maximum model length of 1000"));
  config.num_gpu_blocks = 1000;
  EngineCore roomy(config, *FindTimingProfile("tiny"), generator_, 1);
  s = roomy.Add(Req(1, Prompt(900, 1), 101));
  EXPECT_EQ(ParamOf(s), "max_tokens");
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("maximum context length is 1000"));
  EXPECT_TRUE(roomy.Add(Req(1, Prompt(900, 1), 100)).ok());
  // Beyond the whole KV capacity: it would wait forever.
  s = core.Add(Req(2, Prompt(150, 1), 20));
  EXPECT_EQ(ParamOf(s), "max_tokens");
  s = core.Add(Req(2, Prompt(170, 1), 1));
  EXPECT_EQ(ParamOf(s), "prompt");
  EXPECT_TRUE(core.Add(Req(2, Prompt(150, 1), 10)).ok());
  s = core.Add(Req(2, Prompt(10, 1), 1));
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(core.Stats().num_waiting, 1);
}

TEST_F(EngineCoreTest, RunsAtMostMaxNumSeqs) {
  EngineConfig config = TinyConfig();
  config.max_num_seqs = 3;
  EngineCore core(config, *FindTimingProfile("tiny"), generator_, 1);
  for (uint64_t id = 1; id <= 8; ++id) ASSERT_TRUE(core.Add(Req(id, Prompt(50, id), 10)).ok());
  int64_t steps_at_limit = 0;
  while (core.HasWork()) {
    const StepOutput out = core.Step();
    EXPECT_LE(core.Stats().num_running, 3);
    EXPECT_LE(out.shape.decode_seqs, 3);
    steps_at_limit += core.Stats().num_running == 3;
  }
  EXPECT_GT(steps_at_limit, 10);
}

TEST_F(EngineCoreTest, AdmitsWaitingRequestsStrictlyFirstComeFirstServed) {
  // 10 blocks. B holds 8 (up to 120 tokens); A needs 5, cannot fit; C needs 1 and could.
  EngineCore core(TinyConfig(10), *FindTimingProfile("tiny"), generator_, 1);
  ASSERT_TRUE(core.Add(Req(1, Prompt(100, 1), 20)).ok());  // B
  ASSERT_TRUE(core.Step().shape.prefill_tokens == 100);
  ASSERT_TRUE(core.Add(Req(2, Prompt(80, 2), 5)).ok());  // A
  ASSERT_TRUE(core.Add(Req(3, Prompt(10, 3), 5)).ok());  // C
  std::vector<StepOutput> steps;
  while (core.HasWork()) {
    steps.push_back(core.Step());
    if (StepOf(steps, 1, Kind::kFinished) < 0) {
      EXPECT_EQ(core.Stats().num_running, 1) << "step " << steps.size();
    }
  }
  const int a_first = StepOf(steps, 2, Kind::kToken);
  const int c_first = StepOf(steps, 3, Kind::kToken);
  ASSERT_GE(a_first, 0);
  ASSERT_GE(c_first, 0);
  EXPECT_GT(a_first, StepOf(steps, 1, Kind::kFinished));
  EXPECT_LE(a_first, c_first);
}

TEST_F(EngineCoreTest, SameSeedGivesAnIdenticalEventStream) {
  const TimingProfile& p = *FindTimingProfile("llama-3.1-8b-h100");  // with jitter
  auto run = [&](uint64_t seed) {
    EngineCore core(DefaultEngineConfig(p, 4000), p, generator_, seed);
    Rng workload(77);
    for (uint64_t id = 1; id <= 20; ++id) {
      EXPECT_TRUE(
          core.Add(Req(id, Prompt(50 + static_cast<int64_t>(workload.UniformInt(400)), id % 4),
                       1 + static_cast<int64_t>(workload.UniformInt(60))))
              .ok());
    }
    std::vector<std::tuple<int64_t, int, uint64_t, int32_t, int64_t, int64_t>> trace;
    while (core.HasWork()) {
      const StepOutput out = core.Step();
      for (const RequestEvent& e : out.events) {
        trace.emplace_back(out.duration.count(), static_cast<int>(e.kind), e.id, e.token,
                           e.output_index, e.cached_tokens);
      }
      for (const KvEvent& e : out.kv_events) {
        trace.emplace_back(out.duration.count(), 100 + static_cast<int>(e.kind),
                           e.block_hashes.empty() ? 0 : e.block_hashes[0], 0,
                           static_cast<int64_t>(e.block_hashes.size()), 0);
      }
    }
    return trace;
  };
  const auto a = run(11);
  EXPECT_EQ(a, run(11));
  EXPECT_NE(a, run(12));  // the jitter differs
  EXPECT_GT(a.size(), 200u);
}

TEST_F(EngineCoreTest, WithoutKvEventsStepsAreIdenticalAndReportNoEvents) {
  const TimingProfile& p = *FindTimingProfile("llama-3.1-8b-h100");
  auto run = [&](bool emit, bool* any_kv_event) {
    EngineConfig config = DefaultEngineConfig(p, 4000);  // small: evictions and preemptions
    config.emit_kv_events = emit;
    EngineCore core(config, p, generator_, 5);
    for (uint64_t id = 1; id <= 30; ++id) {
      EXPECT_TRUE(core.Add(Req(id, Prompt(100 + 37 * static_cast<int64_t>(id), id % 3), 20)).ok());
    }
    std::vector<std::tuple<int64_t, int, uint64_t, int32_t, int64_t, int64_t>> trace;
    *any_kv_event = false;
    while (core.HasWork()) {
      const StepOutput out = core.Step();
      *any_kv_event |= !out.kv_events.empty();
      for (const RequestEvent& e : out.events) {
        trace.emplace_back(out.duration.count(), static_cast<int>(e.kind), e.id, e.token,
                           e.output_index, e.cached_tokens);
      }
    }
    const EngineStats stats = core.Stats();
    trace.emplace_back(stats.prefix_cache_hits, 0, stats.cached_blocks, 0, stats.num_preemptions,
                       0);
    return trace;
  };
  bool with_events = false;
  bool without_events = true;
  const auto a = run(true, &with_events);
  EXPECT_EQ(a, run(false, &without_events));
  EXPECT_TRUE(with_events);
  EXPECT_FALSE(without_events);
}

TEST_F(EngineCoreTest, AbortFreesBlocksOfRunningAndWaitingRequests) {
  EngineCore core(TinyConfig(), *FindTimingProfile("tiny"), generator_, 1);
  ASSERT_TRUE(core.Add(Req(1, Prompt(200, 1), 100)).ok());
  core.Step();
  EXPECT_GT(core.Stats().kv_cache_usage, 0);
  ASSERT_TRUE(core.Add(Req(2, Prompt(200, 2), 100)).ok());
  EXPECT_TRUE(core.Abort(2));  // waiting
  EXPECT_TRUE(core.Abort(1));  // running
  EXPECT_FALSE(core.Abort(1));
  EXPECT_FALSE(core.Abort(99));
  EXPECT_FALSE(core.HasWork());
  const EngineStats stats = core.Stats();
  EXPECT_EQ(stats.kv_cache_usage, 0);
  EXPECT_EQ(stats.num_running + stats.num_waiting, 0);
  EXPECT_EQ(stats.cached_blocks, 12);  // 200 prompt tokens: 12 full blocks stay cached
  // The id may be reused after an abort.
  EXPECT_TRUE(core.Add(Req(1, Prompt(200, 1), 1)).ok());
  const std::vector<StepOutput> steps = Drain(core);
  EXPECT_EQ(EventsOf(steps, 1, Kind::kToken)[0].cached_tokens, 192);
}

TEST_F(EngineCoreTest, KvEventsDescribeTheCacheExactly) {
  // Little capacity and many distinct prompts with shared prefixes: stores and evictions.
  EngineCore core(TinyConfig(64), *FindTimingProfile("tiny"), generator_, 1);
  const std::vector<int32_t> system = Prompt(96, 1000);
  std::vector<std::vector<int32_t>> prompts;
  for (uint64_t id = 1; id <= 40; ++id) {
    std::vector<int32_t> p = system;
    const std::vector<int32_t> user = Prompt(40 + static_cast<int64_t>(id % 7) * 30, id);
    p.insert(p.end(), user.begin(), user.end());
    prompts.push_back(p);
    ASSERT_TRUE(core.Add(Req(id, p, 8)).ok());
  }
  absl::flat_hash_set<uint64_t> cached;
  int64_t stored = 0, removed = 0;
  std::map<uint64_t, std::vector<int32_t>> tokens_of;
  while (core.HasWork()) {
    const StepOutput out = core.Step();
    for (const KvEvent& e : out.kv_events) {
      EXPECT_EQ(e.block_size, 16);
      if (e.kind == KvEvent::Kind::kBlockStored) {
        ASSERT_EQ(e.token_ids.size(), e.block_hashes.size() * 16);
        // Each stored hash is the chain hash of its tokens from its parent.
        uint64_t parent = e.parent_block_hash.value_or(kRoot);
        for (size_t i = 0; i < e.block_hashes.size(); ++i) {
          const std::span<const int32_t> block(e.token_ids.data() + 16 * i, 16);
          EXPECT_EQ(e.block_hashes[i], request::ChainBlockHash(parent, block));
          parent = e.block_hashes[i];
          EXPECT_TRUE(cached.insert(e.block_hashes[i]).second) << "stored twice";
          ++stored;
        }
      } else if (e.kind == KvEvent::Kind::kBlockRemoved) {
        for (uint64_t h : e.block_hashes) {
          EXPECT_EQ(cached.erase(h), 1u) << "removed a block never stored";
          ++removed;
        }
      }
    }
    ASSERT_EQ(static_cast<int64_t>(cached.size()), core.Stats().cached_blocks);
  }
  EXPECT_GT(removed, 20);
  EXPECT_GT(stored, removed);
  // The shared system prompt's first block was stored once, with no parent, and is a hit for
  // everybody: the cache saw far more hits than one prompt's worth.
  const std::vector<uint64_t> system_hashes = request::HashFullBlocks(system, 16, kRoot);
  EXPECT_TRUE(cached.contains(system_hashes[0]));
  EXPECT_GT(core.Stats().prefix_cache_hits, 30 * 96);
  std::vector<KvEvent> reset;
  EXPECT_TRUE(core.ResetPrefixCache(&reset));
  ASSERT_EQ(reset.size(), 1u);
  EXPECT_EQ(reset[0].kind, KvEvent::Kind::kAllBlocksCleared);
  EXPECT_EQ(core.Stats().cached_blocks, 0);
}

TEST_F(EngineCoreTest, ResetPrefixCacheRefusesWhileRequestsHoldBlocks) {
  EngineCore core(TinyConfig(), *FindTimingProfile("tiny"), generator_, 1);
  const std::vector<int32_t> prompt = Prompt(100, 1);
  ASSERT_TRUE(core.Add(Req(1, prompt, 5)).ok());
  core.Step();
  std::vector<KvEvent> events;
  EXPECT_FALSE(core.ResetPrefixCache(&events));
  EXPECT_TRUE(events.empty());
  Drain(core);
  EXPECT_TRUE(core.ResetPrefixCache(&events));
  ASSERT_TRUE(core.Add(Req(2, prompt, 1)).ok());
  EXPECT_EQ(EventsOf(Drain(core), 2, Kind::kToken)[0].cached_tokens, 0);
}

TEST_F(EngineCoreTest, WithoutPrefixCachingNothingIsCachedOrReported) {
  EngineConfig config = TinyConfig();
  config.enable_prefix_caching = false;
  EngineCore core(config, *FindTimingProfile("tiny"), generator_, 1);
  const std::vector<int32_t> prompt = Prompt(100, 1);
  ASSERT_TRUE(core.Add(Req(1, prompt, 2)).ok());
  ASSERT_TRUE(core.Add(Req(2, prompt, 2)).ok());
  std::vector<StepOutput> steps = Drain(core);
  ASSERT_TRUE(core.Add(Req(3, prompt, 2)).ok());
  std::vector<StepOutput> later = Drain(core);
  EXPECT_EQ(EventsOf(later, 3, Kind::kToken)[0].cached_tokens, 0);
  for (const StepOutput& s : steps) EXPECT_TRUE(s.kv_events.empty());
  EXPECT_EQ(core.Stats().cached_blocks, 0);
  EXPECT_EQ(core.Stats().prefix_cache_queries, 0);
}

TEST_F(EngineCoreTest, RandomArrivalsAndAbortsUnderPressureAllComplete) {
  EngineConfig config = TinyConfig(48);
  config.max_num_batched_tokens = 256;
  config.max_num_seqs = 8;
  EngineCore core(config, *FindTimingProfile("tiny"), generator_, 5);
  Rng rng(99);
  std::map<uint64_t, int64_t> expected;  // id -> max_tokens, for requests not aborted
  std::map<uint64_t, int64_t> generated;
  std::set<uint64_t> finished;
  uint64_t next_id = 1;
  for (int step = 0; step < 5000 && (next_id <= 300 || core.HasWork()); ++step) {
    if (next_id <= 300 && rng.UniformInt(3) == 0) {
      const int64_t max_tokens = 1 + static_cast<int64_t>(rng.UniformInt(40));
      // Prompts share prefixes through their seed (Prompt(n, s) is a prefix of Prompt(m, s)).
      ASSERT_TRUE(
          core.Add(Req(next_id,
                       Prompt(1 + static_cast<int64_t>(rng.UniformInt(500)), rng.UniformInt(5)),
                       max_tokens))
              .ok());
      expected[next_id] = max_tokens;
      ++next_id;
    }
    if (rng.UniformInt(20) == 0 && !expected.empty()) {
      const uint64_t victim = 1 + rng.UniformInt(next_id - 1);
      if (core.Abort(victim)) {
        ASSERT_FALSE(finished.contains(victim));
        expected.erase(victim);
      }
    }
    if (!core.HasWork()) continue;
    const StepOutput out = core.Step();
    for (const RequestEvent& e : out.events) {
      if (e.kind == Kind::kToken) {
        ASSERT_EQ(e.output_index, generated[e.id]++);
      } else if (e.kind == Kind::kFinished) {
        ASSERT_TRUE(finished.insert(e.id).second);
      }
    }
    ASSERT_LE(out.shape.prefill_tokens + out.shape.decode_seqs, 256);
    ASSERT_LE(core.Stats().num_running, 8);
  }
  EXPECT_FALSE(core.HasWork());
  EXPECT_GT(core.Stats().num_preemptions, 0);
  EXPECT_EQ(core.Stats().kv_cache_usage, 0);
  for (const auto& [id, max_tokens] : expected) {
    EXPECT_TRUE(finished.contains(id)) << id;
    EXPECT_EQ(generated[id], max_tokens) << id;
  }
}

}  // namespace
}  // namespace warmroute::engine
