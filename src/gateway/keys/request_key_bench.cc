// What a request's prefix key costs in the admit stage (request_key.h), precise against
// approximate, on a 12 KB chat: an 11.5 KB system prompt and a 500-byte user question, for Qwen 3
// (the files the build unpacks for the tokenize tests).
//   BM_ApproximateKey   the built-in template's text in 64-byte blocks
//   BM_PreciseKeySeen   the model's template and tokenizer; the system prompt was seen before
//                       (each iteration asks a new question)
//   BM_PreciseKeyCold   the same with a system prompt not remembered (8,192 of them in turn)
//   BM_RenderOnly       of BM_PreciseKeySeen, the chat template's render alone
//   BM_EncodeOnly       of BM_PreciseKeySeen, the rendered chat's encode alone (the ids after those
//                       reused from the prefix cache, HfTokenizer::EncodeAfterReuse, as the key)
//   BM_HashOnly         of BM_PreciseKeySeen, the ids' block hashes and domain alone (the reused
//                       ids' blocks from the memo, block_hash_memo.h, as the key)
// The parse of the body, common to both, is not timed in these.
//
// BM_Decision: the whole routing decision of the admit stage, one request at a time, each timed
// on the steady clock: parse the body (request::ParseInferenceRequest), make its key
// (MakeRequestKey, approximate or precise) and route it (routing::Router::Route with the
// warmroute policy over 8 backends, then CommitInsert), in both modes on the same requests,
// paired and interleaved in blocks (BM_Decision's comment). 32 system prompts of 11.5 KB, each
// seen before (routed once in the warm-up), every request a new 500-byte question; the
// completion (OnFirstToken, OnFinished) and the body's construction are outside the timing.
// Counters: each mode's p50 and p99 in microseconds, and precise / approximate at each; and each
// mode's p50 and p99 of two parts alone, the parse (the same code in both modes) and the key
// (where the modes differ), the route being the rest. Then the machine's stalls, measured for half
// a second after the decisions (MeasureStalls): their rate, median length and period, and the
// share of each mode's decisions that lasted more than half a stall longer than its median; and
// each mode's floor (common/busy_floor.h): the p50 and p99 of a busy loop as long as its p50.
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
#include "common/busy_floor.h"
#include "common/clock.h"
#include "common/json_writer.h"
#include "core/request/inference_request.h"
#include "core/routing/domain_attribution.h"
#include "core/routing/policy_registry.h"
#include "core/routing/prefix_key.h"
#include "core/routing/router.h"
#include "core/template/chat_prompt.h"
#include "gateway/keys/block_hash_memo.h"
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

// The requests of a part benchmark, built before its timing: pausing the timer per iteration
// costs two CPU-time clock reads, system calls that would be timed as part of the step.
std::vector<request::InferenceRequest> Chats(bool new_system, uint64_t count = 1024) {
  const std::string system = SystemPrompt(0);
  std::vector<request::InferenceRequest> chats;
  for (uint64_t n = 1; n <= count; ++n) {
    chats.push_back(Chat(new_system ? SystemPrompt(n) : system, Question(n)));
  }
  return chats;
}

void Run(benchmark::State& state, PrefixKeyMode mode, bool new_system) {
  const ModelTokenizers& models = Models();
  const routing::PrefixKeyOptions options;
  // A cold system prompt must not be one an earlier lap remembered: more than the prefix cache
  // holds (64 MB of 12 KB texts with their ids and index).
  const std::vector<request::InferenceRequest> chats = Chats(new_system, new_system ? 8192 : 1024);
  size_t n = 0;
  int64_t blocks = 0;
  for (auto _ : state) {
    const request::InferenceRequest& r = chats[n++ % chats.size()];
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
  const std::vector<request::InferenceRequest> chats = Chats(/*new_system=*/false);
  size_t n = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(jinja::RenderChatPrompt(chats[n++ % chats.size()],
                                                     *files.chat_template, {.clock = &kClock}));
  }
}

// The encode of a rendered chat alone (the system prompt seen before), then the hashing of its
// ids alone: the two steps of a precise key after the render.
void BM_EncodeOnly(benchmark::State& state) {
  const TokenizerFiles& files = *Models().Find("qwen")->files();
  const std::string system = SystemPrompt(0);
  std::vector<std::string> texts;
  for (uint64_t n = 0; n < 1024; ++n) {
    texts.push_back(*jinja::RenderChatPrompt(Chat(system, Question(n)), *files.chat_template,
                                             {.clock = &kClock}));
  }
  size_t n = 0;
  tokenize::HfTokenizer::Reuse reuse;
  for (auto _ : state) {
    benchmark::DoNotOptimize(files.tokenizer->EncodeAfterReuse(texts[n++ % texts.size()], &reuse));
  }
}
void BM_HashOnly(benchmark::State& state) {
  const TokenizerFiles& files = *Models().Find("qwen")->files();
  const auto render = [&](uint64_t question) {
    return *jinja::RenderChatPrompt(Chat(SystemPrompt(0), Question(question)), *files.chat_template,
                                    {.clock = &kClock});
  };
  files.tokenizer->Encode(render(0));        // the system prompt remembered, if no other run did it
  const std::string text = render(1 << 30);  // a question never encoded
  tokenize::HfTokenizer::Reuse reuse;
  const std::vector<int32_t> rest = files.tokenizer->EncodeAfterReuse(text, &reuse);
  routing::PrefixKeyOptions options;
  options.block_tokens = 16;
  options.max_tokens = static_cast<int64_t>(reuse.ids + rest.size());
  BlockHashMemo memo;
  std::vector<int32_t> first(reuse.remembered->begin(), reuse.remembered->begin() + 16);
  for (auto _ : state) {
    benchmark::DoNotOptimize(memo.MakeKey("qwen", "", reuse, rest, options));
    benchmark::DoNotOptimize(routing::DomainOfTokenPrompt("qwen", "", "", first, 16));
  }
  state.counters["ids"] = static_cast<double>(reuse.ids + rest.size());
  state.counters["reused_ids"] = static_cast<double>(reuse.ids);
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

// One mode's routing decisions: its own router over 8 backends, fed the same requests.
class Decider {
 public:
  explicit Decider(PrefixKeyMode mode)
      : mode_(mode), router_(*routing::MakePolicy("warmroute", {}), {}, clock_, /*seed=*/1) {
    for (int b = 0; b < 8; ++b) {
      router_.AddBackend({.name = absl::StrCat("r", b), .kv_capacity_tokens = 460'000});
    }
  }

  // The durations of one decision and of two of its parts, in microseconds.
  struct Timing {
    double total;  // parse, key, Route, CommitInsert
    double parse;
    double key;
  };

  // One request: its decision's durations; the completion that follows is not timed.
  Timing Decide(const std::string& body) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<request::InferenceRequest> parsed =
        request::ParseInferenceRequest(request::Endpoint::kChatCompletions, body);
    const auto parsed_at = std::chrono::steady_clock::now();
    RequestKey key = MakeRequestKey(*parsed, {.body = body,
                                              .tenant = "",
                                              .precise_salt = "",
                                              .options = &options_,
                                              .mode = mode_,
                                              .models = &Models()});
    const auto keyed_at = std::chrono::steady_clock::now();
    routing::RoutingRequest routing;
    routing.id = ++id_;
    routing.model = parsed->model;
    routing.prompt_tokens = key.key.prompt_tokens;
    routing.key = std::move(key.key);
    const absl::StatusOr<routing::Decision> decision = router_.Route(std::move(routing));
    router_.CommitInsert(id_);
    const auto end = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(decision);
    clock_.Advance(std::chrono::milliseconds(50));
    router_.OnFirstToken(id_);
    router_.OnFinished(id_, std::nullopt);
    const auto us = [](auto d) { return std::chrono::duration<double, std::micro>(d).count(); };
    return {
        .total = us(end - start), .parse = us(parsed_at - start), .key = us(keyed_at - parsed_at)};
  }

 private:
  PrefixKeyMode mode_;
  routing::PrefixKeyOptions options_;
  ManualClock clock_;
  routing::Router router_;
  uint64_t id_ = 0;
};

double Quantile(std::vector<double> us, double q) {
  std::sort(us.begin(), us.end());
  return us[static_cast<size_t>(q * static_cast<double>(us.size() - 1))];
}

// The machine's own stalls, which no code avoids: a thread that only reads the steady clock for
// `span` sees the moments its CPU was taken from it (a timer interrupt, the hypervisor) as gaps
// between consecutive reads. A decision a stall falls in lasts the stall longer, and a decision
// that lasts d microseconds meets stalls that come every P microseconds with probability about
// d / P: once that passes 1%, the decision's p99 is its p50 plus a stall.
struct Stalls {
  double per_ms = 0;     // gaps of more than kMinGapUs per millisecond
  double p50_us = 0;     // their median length
  double period_us = 0;  // the median time from one to the next
};
Stalls MeasureStalls(std::chrono::milliseconds span) {
  constexpr double kMinGapUs = 5;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  Clock::time_point previous = start;
  std::vector<double> gaps, at;
  for (Clock::time_point now = start; now - start < span; now = Clock::now()) {
    const double gap = std::chrono::duration<double, std::micro>(now - previous).count();
    if (gap > kMinGapUs) {
      gaps.push_back(gap);
      at.push_back(std::chrono::duration<double, std::micro>(now - start).count());
    }
    previous = now;
  }
  Stalls stalls;
  if (gaps.empty()) return stalls;
  stalls.per_ms = static_cast<double>(gaps.size()) / static_cast<double>(span.count());
  stalls.p50_us = Quantile(gaps, 0.5);
  if (at.size() > 1) {
    std::vector<double> between;
    for (size_t i = 1; i < at.size(); ++i) between.push_back(at[i] - at[i - 1]);
    stalls.period_us = Quantile(between, 0.5);
  }
  return stalls;
}

// Both modes on the same requests, interleaved in blocks: kBlock requests in one mode, the same
// kBlock in the other, the first mode alternating, so that the machine's load falls on both
// alike. Blocks, not single requests: a gateway keys its requests in one mode, and a precise
// decision after an approximate one would find the tokenizer's tables evicted by the other
// mode's work, which no gateway does.
void BM_Decision(benchmark::State& state) {
  Decider approximate(PrefixKeyMode::kApproximate);
  Decider precise(PrefixKeyMode::kPrecise);
  constexpr int kSystems = 32;
  std::vector<std::string> systems;
  for (int i = 0; i < kSystems; ++i) systems.push_back(SystemPrompt(1000 + i));
  for (int i = 0; i < kSystems; ++i) {
    const std::string body = ChatBody(systems[i], Question(i));
    approximate.Decide(body);
    precise.Decide(body);
  }
  constexpr uint64_t kBlock = 5000;
  std::vector<Decider::Timing> approximate_us, precise_us;
  std::vector<std::string> bodies;
  uint64_t n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    bodies.clear();
    for (uint64_t i = 0; i < kBlock; ++i, ++n) {
      bodies.push_back(ChatBody(systems[n % kSystems], Question(kSystems + n)));
    }
    const bool approximate_first = (n / kBlock) % 2 == 0;
    state.ResumeTiming();
    for (int pass = 0; pass < 2; ++pass) {
      const bool is_approximate = (pass == 0) == approximate_first;
      for (const std::string& body : bodies) {
        (is_approximate ? approximate_us : precise_us)
            .push_back((is_approximate ? approximate : precise).Decide(body));
      }
    }
  }
  // Each quantile of each part is taken over that part's own durations.
  const auto part = [](const std::vector<Decider::Timing>& timings,
                       double Decider::Timing::*field) {
    std::vector<double> us;
    us.reserve(timings.size());
    for (const Decider::Timing& t : timings) us.push_back(t.*field);
    return us;
  };
  // The stalls, measured after the decisions in the same run, and the share of each mode's
  // decisions that lasted more than half a stall longer than its median.
  const Stalls stalls = MeasureStalls(std::chrono::milliseconds(500));
  state.counters["stalls_per_ms"] = stalls.per_ms;
  state.counters["stall_p50_us"] = stalls.p50_us;
  state.counters["stall_period_us"] = stalls.period_us;
  // And the floor (common/busy_floor.h): what the machine alone makes of a busy loop as long as
  // each mode's p50, timed as many times.
  for (const auto& [mode, timings] :
       {std::pair{"approximate", &approximate_us}, std::pair{"precise", &precise_us}}) {
    const std::vector<double> total = part(*timings, &Decider::Timing::total);
    const double p50 = Quantile(total, 0.5);
    const auto n = std::count_if(total.begin(), total.end(),
                                 [&](double t) { return t > p50 + stalls.p50_us / 2; });
    state.counters[absl::StrCat(mode, "_stalled_pct")] =
        100.0 * static_cast<double>(n) / static_cast<double>(total.size());
    const std::vector<double> floor = BusyFloorUs(p50, total.size());
    state.counters[absl::StrCat(mode, "_floor_p50_us")] = Quantile(floor, 0.5);
    state.counters[absl::StrCat(mode, "_floor_p99_us")] = Quantile(floor, 0.99);
  }
  state.counters["floor_ratio_p99"] =
      state.counters["precise_floor_p99_us"] / state.counters["approximate_floor_p99_us"];
  for (const auto& [name, q] : {std::pair{"p50", 0.5}, std::pair{"p99", 0.99}}) {
    const double a = Quantile(part(approximate_us, &Decider::Timing::total), q);
    const double p = Quantile(part(precise_us, &Decider::Timing::total), q);
    state.counters[absl::StrCat("approximate_", name, "_us")] = a;
    state.counters[absl::StrCat("precise_", name, "_us")] = p;
    state.counters[absl::StrCat("ratio_", name)] = p / a;
    for (const auto& [part_name, field] :
         {std::pair{"parse", &Decider::Timing::parse}, std::pair{"key", &Decider::Timing::key}}) {
      state.counters[absl::StrCat("approximate_", part_name, "_", name, "_us")] =
          Quantile(part(approximate_us, field), q);
      state.counters[absl::StrCat("precise_", part_name, "_", name, "_us")] =
          Quantile(part(precise_us, field), q);
    }
  }
}

BENCHMARK(BM_ApproximateKey);
BENCHMARK(BM_RenderOnly);
BENCHMARK(BM_PreciseKeySeen);
BENCHMARK(BM_PreciseKeyCold);
BENCHMARK(BM_EncodeOnly);
BENCHMARK(BM_HashOnly);
BENCHMARK(BM_Decision)->Iterations(4);  // blocks: 20,000 requests in each mode

}  // namespace
}  // namespace warmroute::gateway
BENCHMARK_MAIN();
