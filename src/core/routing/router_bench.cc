// The routing-decision microbenchmark (a 16k-character prompt, 64 backends, 1 M indexed blocks;
// the target is a p99 of at most 20 us, with the index memory per block reported): one full
// decision as the gateway makes it, MakePrefixKeyFromText on the prompt text + Router::Route
// (Match, the policy, the accounting), per policy; then, timed apart, Router::CommitInsert (the
// speculative insert into the index, with its evictions), which the gateway runs once the
// request is on its way upstream.
//
// Setup: 64 backends whose index slices are 16,384 blocks each (kv_capacity_tokens 262,144 at 16
// tokens per block; max_entries 2^20), so the index holds 1,048,576 blocks once full. It is
// pre-filled by routing cold 16k-character prompts until every slice is full (every later new
// block evicts one). Then each timed request is a new 16,384-character prompt (256 blocks of 64
// characters): one of 32 system prompts (12,800 characters, 200 blocks) followed by 3,584
// characters of its own (56 blocks the index has never seen: 56 inserts and 56 evictions on the
// chosen backend). The benchmark argument `cold` = 1 times wholly new prompts instead (256 inserts
// and evictions), for reference.
//
// Each decision is timed on the steady clock; the counters report its p50, p99 and mean in
// microseconds, and apart: key_* (MakePrefixKeyFromText), route_* (Router::Route) and insert_*
// (CommitInsert); floor_* (ReportFloor: what this machine's interruptions alone make of a
// computation as long as the decision), mem_floor_* and cache_floor_* (MemoryFloor: the same for
// random memory reads); each with over20_permille, the runs over 20 us per thousand; then the
// index's entries and its memory per indexed block. Making the next
// prompt's text unique, and the request's completion (OnFinished), are outside the timing.
//
// Run: build/src/core/routing/warmroute_routing_bench --benchmark_filter=BM_Route
// (BM_LongPrompt, below, is the cost of whole-prompt keys as prompts grow.)
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "common/busy_floor.h"
#include "common/clock.h"
#include "common/rng.h"
#include "core/routing/policy_registry.h"
#include "core/routing/prefix_key.h"
#include "core/routing/router.h"

namespace warmroute::routing {
namespace {

constexpr int kRouteBackends = 64;
constexpr int64_t kSliceBlocks = 16384;
constexpr size_t kIndexedBlocks = kRouteBackends * kSliceBlocks;  // 1,048,576
constexpr size_t kPromptChars = 16384;
constexpr size_t kSystemChars = 12800;  // 200 blocks of 64 characters
constexpr int kSystemPrompts = 32;
constexpr std::string_view kModel = "llama-3.1-70b";
constexpr std::string_view kTenant = "acme";

// Printable pseudo-random text of `chars` characters, a pure function of `id`.
std::string Text(uint64_t id, size_t chars) {
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

// Makes `text` new from character `from` on: every one of its blocks after `from` starts with
// `serial`, so no two serials share a block there.
void MakeUnique(std::string& text, size_t from, uint64_t serial) {
  for (size_t at = from; at + sizeof(serial) <= text.size(); at += 64) {
    std::memcpy(&text[at], &serial, sizeof(serial));
  }
}

class Timings {
 public:
  Timings() { us_.reserve(1 << 20); }
  void Add(std::chrono::steady_clock::duration d) {
    if (us_.size() < us_.capacity())
      us_.push_back(std::chrono::duration<double, std::micro>(d).count());
  }
  size_t size() const { return us_.size(); }
  double Percentile(int q) {
    if (us_.empty()) return 0;
    std::sort(us_.begin(), us_.end());
    return us_[us_.size() * static_cast<size_t>(q) / 100];
  }
  void Report(benchmark::State& state, const std::string& prefix = "") {
    if (us_.empty()) return;
    double sum = 0;
    for (double v : us_) sum += v;
    state.counters[prefix + "p50_us"] = Percentile(50);
    state.counters[prefix + "p99_us"] = Percentile(99);
    state.counters[prefix + "mean_us"] = sum / static_cast<double>(us_.size());
    // How often a run took over 20 us (the decision's p99 target), per thousand runs: set
    // against the p50, the rate of interruptions per microsecond of work (see ReportFloor).
    double over = 0;
    for (double v : us_) over += v > 20 ? 1 : 0;
    state.counters[prefix + "over20_permille"] = 1000 * over / static_cast<double>(us_.size());
  }

 private:
  std::vector<double> us_;
};

// The machine's floor under a p99 (common/busy_floor.h): a busy loop calibrated to last as long as
// the decision's p50, timed as many times and the same way, in the same run (counters floor_p50_us,
// floor_p99_us).
void ReportFloor(benchmark::State& state, double p50_us, size_t runs) {
  Timings floor;
  for (double us : BusyFloorUs(p50_us, runs)) {
    floor.Add(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double, std::micro>(us)));
  }
  floor.Report(state, "floor_");
}

// The machine's floor for reading memory, timed in the same loop right after each decision:
// kLines reads of random cache lines (about as many lines as a decision reads) over a buffer the
// size of the index's tables, asked for huge pages as they are (mem_floor_*), and over 1 MiB
// that stays in cache (cache_floor_*). With the busy loop's floor they tell this machine's
// interruptions from the decision's own stalls: each over20_permille divided by its p50 is a
// rate of interruptions per microsecond of work. The same rate for the decision as for the
// floors means its tail is the machine's, set by how long the decision runs; a higher rate for
// the large buffer than for the small one would point at memory (paging under virtualization).
class MemoryFloor {
 public:
  static constexpr size_t kLines = 512;

  explicit MemoryFloor(size_t bytes) : lines_(bytes / 64) {
    constexpr size_t kHugePage = size_t{2} << 20;
    void* memory = nullptr;
    if (posix_memalign(&memory, kHugePage, bytes) != 0) std::abort();
    buffer_.reset(static_cast<uint64_t*>(memory));
    madvise(memory, bytes, MADV_HUGEPAGE);
    std::memset(memory, 1, bytes);  // touched once: no first-touch page faults in the timing
  }

  void Time(Rng& rng) {
    uint64_t offsets[kLines];
    for (uint64_t& offset : offsets) offset = rng.UniformInt(lines_) * 8;
    const auto start = std::chrono::steady_clock::now();
    uint64_t sum = 0;
    for (uint64_t offset : offsets) sum += buffer_[offset];
    benchmark::DoNotOptimize(sum);
    timings_.Add(std::chrono::steady_clock::now() - start);
  }

  void Report(benchmark::State& state, const std::string& prefix) {
    timings_.Report(state, prefix);
  }

 private:
  struct Free {
    void operator()(uint64_t* p) const { std::free(p); }
  };
  size_t lines_;
  std::unique_ptr<uint64_t[], Free> buffer_;
  Timings timings_;
};

void BM_Route(benchmark::State& state, const char* policy_name) {
  const bool cold = state.range(0) != 0;
  ManualClock clock;
  RouterOptions options;
  options.index.max_entries = kIndexedBlocks;
  Router router(MakePolicy(policy_name, {}).value(), options, clock, 1);
  for (int b = 0; b < kRouteBackends; ++b) {
    router.AddBackend({.name = "r" + std::to_string(b), .kv_capacity_tokens = kSliceBlocks * 16});
  }
  std::vector<std::string> system_prompts;
  for (int s = 0; s < kSystemPrompts; ++s) system_prompts.push_back(Text(s, kSystemChars));
  std::string text = Text(1'000'000, kPromptChars);
  uint64_t serial = 0;
  RoutingRequest request;
  request.model = kModel;
  request.tenant = kTenant;
  // A non-streaming response 1 ms later, with no usage: no prefill-rate sample (an instant TTFT
  // would teach the router that the first backend used is thousands of times faster than the
  // rest) and no closed-loop correction, so the decision's inputs stay the same throughout.
  auto complete = [&] {
    clock.Advance(std::chrono::milliseconds(1));
    router.OnFinished(request.id, std::nullopt);
  };

  // Pre-fill with cold prompts until every slice is full (bounded, in case a policy never
  // spreads over every backend).
  for (int i = 0; i < 64 * 1024 && router.index().entries() < kIndexedBlocks; ++i) {
    MakeUnique(text, 0, ++serial);
    request.id = serial;
    request.key = MakePrefixKeyFromText(kModel, kTenant, text, {});
    request.prompt_tokens = request.key.prompt_tokens;
    if (!router.Route(request).ok()) std::abort();
    router.CommitInsert(request.id);
    complete();
  }

  Timings timings;
  Timings keys;
  Timings routes;
  Timings inserts;
  MemoryFloor memory_floor(size_t{64} << 20);  // the index's tables: about 60 MB
  MemoryFloor cache_floor(size_t{1} << 20);
  Rng floor_rng(5);
  for (auto _ : state) {
    ++serial;
    if (!cold) text.replace(0, kSystemChars, system_prompts[serial % kSystemPrompts]);
    MakeUnique(text, cold ? 0 : kSystemChars, serial);
    request.id = serial;
    const auto start = std::chrono::steady_clock::now();
    request.key = MakePrefixKeyFromText(kModel, kTenant, text, {});
    request.prompt_tokens = request.key.prompt_tokens;
    const auto keyed = std::chrono::steady_clock::now();
    absl::StatusOr<Decision> decision = router.Route(request);
    const auto end = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(decision);
    timings.Add(end - start);
    keys.Add(keyed - start);
    routes.Add(end - keyed);
    router.CommitInsert(request.id);
    inserts.Add(std::chrono::steady_clock::now() - end);
    complete();
    memory_floor.Time(floor_rng);
    cache_floor.Time(floor_rng);
  }
  timings.Report(state);
  ReportFloor(state, timings.Percentile(50), timings.size());
  memory_floor.Report(state, "mem_floor_");
  cache_floor.Report(state, "cache_floor_");
  keys.Report(state, "key_");
  routes.Report(state, "route_");
  inserts.Report(state, "insert_");
  state.counters["entries"] = static_cast<double>(router.index().entries());
  state.counters["bytes_per_block"] = static_cast<double>(router.index().MemoryBytes()) /
                                      static_cast<double>(router.index().entries());
}

// What a whole-prompt key costs as prompts grow (PrefixKeyOptions' default: no depth cap):
// 8 backends of 460k KV tokens (the index slices hold 28,750 blocks each), prompts of `chars`
// characters whose first three quarters are one of 4 shared documents and whose last quarter is
// new. The index is filled first (untimed), so every new block evicts one. Counters: key_*,
// route_* and insert_* (CommitInsert: the new quarter's blocks with their evictions), p50 and p99
// in microseconds.
void BM_LongPrompt(benchmark::State& state) {
  const auto chars = static_cast<size_t>(state.range(0));
  ManualClock clock;
  Router router(MakePolicy("warmroute", {}).value(), RouterOptions{}, clock, 1);
  for (int b = 0; b < 8; ++b) {
    router.AddBackend({.name = "r" + std::to_string(b), .kv_capacity_tokens = 460'000});
  }
  const size_t shared = chars / 4 * 3;
  std::vector<std::string> documents;
  for (int d = 0; d < 4; ++d) documents.push_back(Text(100 + d, shared));
  std::string text = Text(7, chars);
  RoutingRequest request;
  request.model = kModel;
  request.tenant = kTenant;
  Timings keys, routes, inserts;
  uint64_t serial = 0;
  auto next_prompt = [&] {
    ++serial;
    text.replace(0, shared, documents[serial % documents.size()]);
    MakeUnique(text, shared, serial);
    request.id = serial;
  };
  // Untimed, until the slices the policy uses are full (the index's tables have grown to their
  // size and every new block evicts one): the steady state of a long-running gateway. The policy
  // may leave some backends unused (4 documents, 4 homes), so: until the index stops growing.
  for (int still = 0; still < 64;) {
    const size_t before = router.index().entries();
    next_prompt();
    request.key = MakePrefixKeyFromText(kModel, kTenant, text, {});
    request.prompt_tokens = request.key.prompt_tokens;
    if (!router.Route(request).ok()) std::abort();
    router.CommitInsert(request.id);
    clock.Advance(std::chrono::milliseconds(1));
    router.OnFinished(request.id, std::nullopt);
    still = router.index().entries() == before ? still + 1 : 0;
  }
  for (auto _ : state) {
    next_prompt();
    const auto start = std::chrono::steady_clock::now();
    request.key = MakePrefixKeyFromText(kModel, kTenant, text, {});
    request.prompt_tokens = request.key.prompt_tokens;
    const auto keyed = std::chrono::steady_clock::now();
    absl::StatusOr<Decision> decision = router.Route(request);
    const auto routed = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(decision);
    router.CommitInsert(request.id);
    const auto inserted = std::chrono::steady_clock::now();
    keys.Add(keyed - start);
    routes.Add(routed - keyed);
    inserts.Add(inserted - routed);
    clock.Advance(std::chrono::milliseconds(1));
    router.OnFinished(request.id, std::nullopt);
  }
  keys.Report(state, "key_");
  routes.Report(state, "route_");
  inserts.Report(state, "insert_");
  state.counters["blocks"] = static_cast<double>(request.key.block_hashes.size());
}

BENCHMARK(BM_LongPrompt)->ArgName("chars")->Arg(16384)->Arg(65536)->Arg(262144)->Arg(1 << 20);
BENCHMARK_CAPTURE(BM_Route, warmroute, "warmroute")->ArgName("cold")->DenseRange(0, 1);
BENCHMARK_CAPTURE(BM_Route, round_robin, "round_robin")->ArgName("cold")->Arg(0);
BENCHMARK_CAPTURE(BM_Route, consistent_hash, "consistent_hash")->ArgName("cold")->Arg(0);
BENCHMARK_CAPTURE(BM_Route, sglang_cache_aware, "sglang_cache_aware")->ArgName("cold")->Arg(0);
BENCHMARK_CAPTURE(BM_Route, dynamo_kv, "dynamo_kv")->ArgName("cold")->Arg(0);
BENCHMARK_CAPTURE(BM_Route, llmd_weighted, "llmd_weighted")->ArgName("cold")->Arg(0);
BENCHMARK_CAPTURE(BM_Route, preble, "preble")->ArgName("cold")->Arg(0);

}  // namespace
}  // namespace warmroute::routing
