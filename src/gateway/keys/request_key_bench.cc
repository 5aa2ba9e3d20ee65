// What a request's prefix key costs in the admit stage (request_key.h), precise against
// approximate, on a 12 KB chat: an 11.5 KB system prompt and a 500-byte user question, for Qwen 3
// (the files the build unpacks for the tokenize tests).
//   BM_ApproximateKey   the built-in template's text in 64-byte blocks
//   BM_PreciseKeySeen   the model's template and tokenizer; the system prompt was seen before
//                       (each iteration asks a new question)
//   BM_PreciseKeyCold   the same with a new system prompt every iteration (nothing remembered)
//   BM_RenderOnly       of BM_PreciseKeySeen, the chat template's render alone
// The parse of the body, common to both, is not timed.
//
// Run: cmake --build build/release --target warmroute_gateway_bench &&
//      build/release/src/gateway/warmroute_gateway_bench --benchmark_filter=Key
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "core/request/inference_request.h"
#include "core/template/chat_prompt.h"
#include "gateway/keys/request_key.h"

namespace warmroute::gateway {
namespace {

const FixedWallClock kClock(std::chrono::system_clock::from_time_t(1700000000));

std::string SystemPrompt(uint64_t variant) {
  std::string text = absl::StrCat("Session ", variant, ". You are the support assistant of Acme.\n");
  for (int i = 0; text.size() < 11'500; ++i) {
    absl::StrAppend(&text, "Rule ", i,
                    ": answer politely, cite the policy section, never promise refunds over "
                    "$100 without approval; escalate légal questions.\n");
  }
  return text;
}

std::string Question(uint64_t n) {
  std::string text = absl::StrCat("Ticket ", n, ": ");
  while (text.size() < 500) text += "My order arrived damaged and I would like a replacement. ";
  return text;
}

request::InferenceRequest Chat(const std::string& system, const std::string& user) {
  request::InferenceRequest r;
  r.endpoint = request::Endpoint::kChatCompletions;
  r.model = "qwen";
  r.messages.push_back({.role = "system", .content = system});
  r.messages.push_back({.role = "user", .content = user});
  return r;
}

const ModelTokenizers& Models() {
  static const std::shared_ptr<const ModelTokenizers> models = *ModelTokenizers::Load(
      {{.name = "qwen",
        .tokenizer = std::string(WARMROUTE_TOKENIZE_TESTDATA) + "/qwen3",
        .block_size = 16}},
      nullptr, kClock);
  return *models;
}

void Run(benchmark::State& state, PrefixKeyMode mode, bool new_system) {
  const ModelTokenizers& models = Models();
  const routing::PrefixKeyOptions options;
  const std::string system = SystemPrompt(0);
  uint64_t n = 0;
  int64_t blocks = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ++n;
    const request::InferenceRequest r = Chat(new_system ? SystemPrompt(n) : system, Question(n));
    state.ResumeTiming();
    const RequestKey key = MakeRequestKey(r, {.body = "",
                                              .tenant = "",
                                              .precise_salt = "",
                                              .options = &options,
                                              .mode = mode,
                                              .models = &models});
    blocks = static_cast<int64_t>(key.key.block_hashes.size());
    benchmark::DoNotOptimize(key);
  }
  state.counters["blocks"] = static_cast<double>(blocks);
}

void BM_ApproximateKey(benchmark::State& state) { Run(state, PrefixKeyMode::kApproximate, false); }
void BM_PreciseKeySeen(benchmark::State& state) { Run(state, PrefixKeyMode::kPrecise, false); }
void BM_PreciseKeyCold(benchmark::State& state) { Run(state, PrefixKeyMode::kPrecise, true); }
void BM_RenderOnly(benchmark::State& state) {
  const TokenizerFiles& files = *Models().Find("qwen")->files();
  const std::string system = SystemPrompt(0);
  uint64_t n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const request::InferenceRequest r = Chat(system, Question(++n));
    state.ResumeTiming();
    benchmark::DoNotOptimize(jinja::RenderChatPrompt(r, *files.chat_template, {.clock = &kClock}));
  }
}

BENCHMARK(BM_ApproximateKey);
BENCHMARK(BM_RenderOnly);
BENCHMARK(BM_PreciseKeySeen);
BENCHMARK(BM_PreciseKeyCold);

}  // namespace
}  // namespace warmroute::gateway
BENCHMARK_MAIN();
