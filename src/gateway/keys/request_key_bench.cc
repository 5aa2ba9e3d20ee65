// What a request's prefix key costs in the admit stage (request_key.h), precise against
// approximate, on a 12 KB chat: an 11.5 KB system prompt and a 500-byte user question, for Qwen 3
// (the files the build unpacks for the tokenize tests).
//   BM_ApproximateKey   the built-in template's text in 64-byte blocks
//   BM_PreciseKeySeen   the model's template and tokenizer; the system prompt was seen before
//                       (each iteration asks a new question)
//   BM_PreciseKeyCold   the same with a new system prompt every iteration (nothing remembered)
//   BM_RenderOnly       of BM_PreciseKeySeen, the chat template's render alone
// The parse of the body, common to both, is not timed in these.
//
// BM_Decision/precise:{0,1}: the whole routing decision of the admit stage, one request at a
// time, each timed on the steady clock: parse the body (request::ParseInferenceRequest), make its
// key (MakeRequestKey, approximate or precise) and route it (routing::Router::Route with the
// warmroute policy over 8 backends, then CommitInsert). 32 system prompts of 11.5 KB, each seen
// before (routed once in the warm-up), every request a new 500-byte question; the completion
// (OnFirstToken, OnFinished) and the body's construction are outside the timing. Counters: p50,
// p99 and mean in microseconds.
//
// Run: cmake --build build/release --target warmroute_gateway_bench &&
//      build/release/src/gateway/warmroute_gateway_bench --benchmark_filter='Key|Decision'
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "common/clock.h"
#include "common/json_writer.h"
#include "core/request/inference_request.h"
#include "core/routing/policy_registry.h"
#include "core/routing/router.h"
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

// The chat's body as a client sends it.
std::string ChatBody(const std::string& system, const std::string& user) {
  std::string body;
  JsonWriter w(&body);
  w.BeginObject();
  w.Key("model").String("qwen");
  w.Key("messages").BeginArray();
  w.BeginObject().Key("role").String("system").Key("content").String(system).EndObject();
  w.BeginObject().Key("role").String("user").Key("content").String(user).EndObject();
  w.EndArray();
  w.Key("max_tokens").Int(100);
  w.EndObject();
  return body;
}

void BM_Decision(benchmark::State& state) {
  const PrefixKeyMode mode = state.range(0) == 1 ? PrefixKeyMode::kPrecise
                                                 : PrefixKeyMode::kApproximate;
  const ModelTokenizers& models = Models();
  const routing::PrefixKeyOptions options;
  ManualClock clock;
  routing::Router router(*routing::MakePolicy("warmroute", {}), {}, clock, /*seed=*/1);
  for (int b = 0; b < 8; ++b) {
    router.AddBackend({.name = absl::StrCat("r", b), .kv_capacity_tokens = 460'000});
  }
  constexpr int kSystems = 32;
  std::vector<std::string> systems;
  for (int i = 0; i < kSystems; ++i) systems.push_back(SystemPrompt(1000 + i));
  uint64_t id = 0;
  // One request: returns its decision's duration (parse, key, Route, CommitInsert).
  auto decide = [&](const std::string& body) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<request::InferenceRequest> parsed =
        request::ParseInferenceRequest(request::Endpoint::kChatCompletions, body);
    RequestKey key = MakeRequestKey(*parsed, {.body = body,
                                              .tenant = "",
                                              .precise_salt = "",
                                              .options = &options,
                                              .mode = mode,
                                              .models = &models});
    routing::RoutingRequest routing;
    routing.id = ++id;
    routing.model = parsed->model;
    routing.prompt_tokens = key.key.prompt_tokens;
    routing.key = std::move(key.key);
    const absl::StatusOr<routing::Decision> decision = router.Route(std::move(routing));
    router.CommitInsert(id);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    benchmark::DoNotOptimize(decision);
    clock.Advance(std::chrono::milliseconds(50));
    router.OnFirstToken(id);
    router.OnFinished(id, std::nullopt);
    return std::chrono::duration<double, std::micro>(elapsed).count();
  };
  for (int i = 0; i < kSystems; ++i) decide(ChatBody(systems[i], Question(i)));
  std::vector<double> us;
  uint64_t n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ++n;
    const std::string body = ChatBody(systems[n % kSystems], Question(kSystems + n));
    state.ResumeTiming();
    us.push_back(decide(body));
  }
  std::sort(us.begin(), us.end());
  auto at = [&us](double q) { return us[static_cast<size_t>(q * static_cast<double>(us.size() - 1))]; };
  double sum = 0;
  for (double u : us) sum += u;
  state.counters["p50_us"] = at(0.5);
  state.counters["p99_us"] = at(0.99);
  state.counters["mean_us"] = sum / static_cast<double>(us.size());
}

BENCHMARK(BM_ApproximateKey);
BENCHMARK(BM_RenderOnly);
BENCHMARK(BM_PreciseKeySeen);
BENCHMARK(BM_PreciseKeyCold);
BENCHMARK(BM_Decision)->ArgName("precise")->Arg(0)->Arg(1)->Iterations(20000);

}  // namespace
}  // namespace warmroute::gateway
BENCHMARK_MAIN();
