// Engine kinds the gateway fronts, and the reading of their Prometheus /metrics into the
// router's normalised load sample (routing::EngineMetricsSample).
//
// Metrics read, per engine kind (each summed over its label sets: one server may expose several
// models or data-parallel engines; the KV usage fraction is averaged over them instead; and the
// same per engine core, by the `engine` label, for a data-parallel backend's rank targets):
//   vllm      vllm:num_requests_running, vllm:num_requests_waiting,
//             vllm:kv_cache_usage_perc (a fraction in [0, 1] despite its name; vLLM before V1:
//             vllm:gpu_cache_usage_perc). KV capacity in tokens: num_gpu_blocks x block_size,
//             the labels of the info gauge vllm:cache_config_info (summed over engines; unknown
//             when absent or not integers, e.g. num_gpu_blocks="None").
//   sglang    sglang:num_running_reqs, sglang:num_queue_reqs, sglang:token_usage (fraction of
//             the KV token pool in use). No capacity.
//   llamacpp  llamacpp:requests_processing, llamacpp:requests_deferred, and
//             llamacpp:kv_cache_usage_ratio when the server still exposes it (removed from
//             llama.cpp in 2025: kv_usage is 0 without it). No capacity.
//   trtllm    trtllm-serve exposes only request counters and latency histograms (trtllm_*,
//   openai    on /prometheus/metrics); an OpenAI-compatible service exposes nothing: no load
//             metrics, NotFound. Do not scrape these kinds.
//
// Usage:
//   absl::StatusOr<EngineKind> kind = ParseEngineKind("vllm");
//   absl::StatusOr<ScrapedEngineMetrics> m = ReadEngineMetrics(*kind, body, clock.Now());
//   if (m.ok()) {
//     router.OnMetrics(backend, m->sample);
//     if (m->kv_capacity_tokens) router.SetKvCapacity(backend, *m->kv_capacity_tokens);
//   }
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "core/routing/fleet_view.h"

namespace warmroute::gateway {

enum class EngineKind { kVllm, kSglang, kLlamaCpp, kTrtLlm, kOpenAi };

// "vllm", "sglang", "llamacpp", "trtllm" or "openai" (the config's spelling). InvalidArgument
// listing the known names otherwise.
absl::StatusOr<EngineKind> ParseEngineKind(std::string_view name);

// The config spelling of `kind`, as ParseEngineKind accepts it.
std::string_view EngineKindName(EngineKind kind);

// "vllm, sglang, llamacpp, trtllm, openai": every kind, for messages.
std::string EngineKindNames();

// Whether ReadEngineMetrics can read load metrics of `kind` (false: trtllm, openai).
bool ExposesLoadMetrics(EngineKind kind);

// One engine core's part of a server's metrics: the series labelled engine="<engine>" (vLLM
// labels each engine core of a data-parallel deployment by its index).
struct EngineCoreMetrics {
  std::string engine;  // the label's value
  routing::EngineMetricsSample sample;
  std::optional<int64_t> kv_capacity_tokens;
};

struct ScrapedEngineMetrics {
  routing::EngineMetricsSample sample;
  // The engine's KV capacity in tokens when its metrics tell it (vLLM), else nullopt.
  std::optional<int64_t> kv_capacity_tokens;
  // Per engine core, ordered by `engine` (numerically when every value is a number), each read
  // as the whole is from its own series; empty when the series carry no `engine` label, or one
  // core's series do not read (a load metric missing or not a count).
  std::vector<EngineCoreMetrics> cores{};
};

// The load sample of a /metrics body of an engine of `kind`, stamped `now`.
// Errors: NotFound for a kind without load metrics (ExposesLoadMetrics); InvalidArgument when
// `prometheus_text` is not valid exposition text, or a load metric's value is not a count
// (negative, NaN, infinite or above 2^40; a fractional count is rounded) or a fraction (NaN, or
// outside [0, 1] by more than 0.01: within that, clamped); FailedPrecondition naming the first
// expected metric missing (e.g. an SGLang server started without --enable-metrics, or the wrong
// engine kind).
absl::StatusOr<ScrapedEngineMetrics> ReadEngineMetrics(EngineKind kind,
                                                       std::string_view prometheus_text,
                                                       TimePoint now);

}  // namespace warmroute::gateway
