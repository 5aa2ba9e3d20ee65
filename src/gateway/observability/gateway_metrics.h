// The gateway's /metrics (Prometheus text, passes `promtool check metrics`):
//
//   warmroute_requests_total{route,backend,code,reason} counter, one per answered request
//   warmroute_request_rejections_total{route,reason}    counter: refused before dispatch
//                                                       (bad_request, unauthenticated,
//                                                       model_not_allowed, unknown_model,
//                                                       no_backend, rate_limited, queue_full,
//                                                       queue_timeout, response_gone)
//   (route: gateway/proxy/routes.h's names — chat, completions, responses, messages,
//   embeddings, rerank, score, pooling, classify, tokenize, detokenize)
//   warmroute_retries_total{backend}                    counter: dispatches moved away from it
//   warmroute_time_to_first_token_seconds{backend}      histogram, measured at the gateway
//   warmroute_e2e_request_latency_seconds{backend}      histogram
//   warmroute_prompt_tokens_total{backend}              counter  } over requests whose usage the
//   warmroute_predicted_cached_tokens_total{backend}    counter  } engine reported: hit rate per
//   warmroute_reported_cached_tokens_total{backend}     counter  } backend = reported / prompt
//   warmroute_backend_in_flight{backend}                gauge
//   warmroute_backend_outstanding_prefill_tokens{backend} gauge
//   warmroute_backend_running_decodes{backend}          gauge
//   warmroute_backend_healthy{backend}                  gauge, 1 when eligible for new requests
//   warmroute_backend_prefill_tokens_per_second{backend} gauge, the router's estimate
//   warmroute_backend_kv_cache_usage_ratio{backend}     gauge, the engine's KV usage (last
//                                                       scrape), absent until scraped
//   warmroute_dp_rank_{in_flight, outstanding_prefill_tokens, running_decodes,
//   prefill_tokens_per_second, kv_cache_usage_ratio}{backend,dp_rank}
//                                                       gauges: of a backend that routes its
//                                                       data-parallel ranks, each rank's target
//                                                       (the backend's series are their sums)
//   warmroute_prefix_index_entries / _bytes             gauges
//   warmroute_routing_lock_waits_total                  counter: times a worker found the
//   warmroute_routing_lock_wait_seconds_total           counter  } routing lock (which every
//                                                       worker shares) held; the time waited
//   warmroute_admission_queue_length                    gauge
// Prewarm and handoff (gateway/fleet/prewarmer.h; not client traffic, so not in the above):
//   warmroute_prewarm_requests_total{backend,reason,result} counter: prewarm requests sent to
//                                                       backend, reason join (it joined) or
//                                                       handoff (another left), result ok/failed
//   warmroute_prewarm_tokens_total{backend,reason}      counter: prompt tokens of the ok ones
//                                                       (the gateway's estimate, as routed)
// Prefix keys (gateway/keys/request_key.h):
//   warmroute_prefix_key_total{mode,reason}             counter, one per prompt request keyed:
//                                                       mode precise (reason tokenized,
//                                                       token_prompt) or approximate (reason
//                                                       configured, no_tokenizer,
//                                                       parity_mismatch, template_error,
//                                                       unsupported_request, empty_prompt,
//                                                       prompt_too_long)
//   warmroute_prefix_key_parity_checks_total{backend,model,result} counter: parity self-tests
//                                                       (gateway/keys/parity_prober.h); result
//                                                       match, mismatch, no_endpoint, failed
//   warmroute_prefix_key_precise{model}                 gauge, 1 while the model's parity
//                                                       checks let it use precise keys
//   warmroute_prefix_sharing_requests_total{tenant,shared} counter: requests whose usage the
//                                                       engine reported, shared="true" when at
//                                                       least kSharedPrefixTokens were cached (the
//                                                       criterion of `warmroute analyze`); tenant
//                                                       "" without tenancy. The live share of
//                                                       requests that reuse a prefix.
//   warmroute_normalize_applied_total{tenant,rule}      counter: requests whose body a
//                                                       normalize rule (gateway/proxy/normalize.h:
//                                                       collapse_whitespace, canonical_tools,
//                                                       move_to_end) changed; tenant "" without
//                                                       tenancy (configured names only: bounded)
// With tenants (tenancy_config.h; labels carry tenant names, never keys):
//   warmroute_tenant_requests_total{tenant,code}        counter
//   warmroute_tenant_time_to_first_token_seconds{tenant} histogram
//   warmroute_rate_limited_total{tenant,limit}          counter: 429s by limit (requests,
//                                                       prompt_tokens, concurrent)
//   warmroute_rate_limit_redis_fallbacks_total          counter: decisions taken locally because
//                                                       Redis did not answer
//   warmroute_rate_limit_redis_up                       gauge: 1 while the last Redis call worked
// Per backend pool, for autoscalers (HPA/KEDA external metrics):
//   warmroute_pool_backends{pool}, warmroute_pool_healthy_backends{pool}
//   warmroute_pool_in_flight{pool}, warmroute_pool_outstanding_prefill_tokens{pool},
//   warmroute_pool_running_decodes{pool}
//   warmroute_pool_engine_waiting_requests{pool}       Σ engines' own queue lengths (scraped)
//   warmroute_pool_kv_cache_usage_ratio{pool}          mean KV usage of healthy engines (scraped)
//   warmroute_hot_prefix_requests_per_second{rank,prefix}      the 10 busiest prefixes of the
//   warmroute_hot_prefix_prompt_tokens_per_second{rank,prefix} last 10 s window (hot_prefixes.h);
//                                                       prefix = hex id, never text
//   warmroute_pool_prefill_backlog_seconds{pool}        outstanding prefill tokens / the pool's
//                                                       estimated prefill rate (healthy backends):
//                                                       seconds of queued prefill; scale out
//                                                       when it stays above the TTFT target
// Precise mode's KV events, per subscribed backend (kv_event_metrics.h):
//   warmroute_kv_events_total{backend,result}, warmroute_kv_event_stream_state{backend,state},
//   warmroute_kv_event_resets_total{backend,reason}, warmroute_kv_event_lag_seconds{backend}
// DNS discovery (discovery_metrics.h):
//   warmroute_discovery_resolutions_total{dns}, warmroute_discovery_resolve_failures_total{dns},
//   warmroute_discovery_healthy{dns}, warmroute_discovery_last_success_timestamp_seconds{dns},
//   warmroute_discovery_backends{dns}
// Placement gossip between gateway replicas (gateway/fleet/gossip.h), once gossip runs:
//   warmroute_gossip_messages_total{direction}, warmroute_gossip_dropped_total{reason},
//   warmroute_gossip_placements_total{result}, warmroute_gossip_peers, warmroute_gossip_rank
// Gauges are read from Backends when /metrics is served; a removed backend's series disappear.
//
// Thread-safety: every method is thread-safe. OnRequest, called for every request by every worker
// thread, adds to its own thread's pending counts (common/per_thread.h), so that the workers share
// no counter; Serialize adds everything pending to the exported series before it reads them.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "gateway/fleet/backends.h"
#include "gateway/observability/discovery_metrics.h"
#include "gateway/observability/hot_prefixes.h"

namespace warmroute::gateway {

// Cached prompt tokens from which a request counts as sharing a prefix (analyze/prefix_sharing.h's
// kMinSharedTokens: more than a chat template's fixed opening).
inline constexpr int64_t kSharedPrefixTokens = 64;

struct RequestRecord {
  std::string_view route;
  std::string_view backend;  // empty when never dispatched
  int status = 200;
  std::string_view reason;   // the routing decision's reason
  std::string_view tenant;   // empty without tenancy
  std::optional<double> ttft_s;
  double e2e_s = 0;
  int retries = 0;
  // From the engine's usage, when it reported one.
  std::optional<int64_t> prompt_tokens;
  int64_t predicted_cached_tokens = 0;
  std::optional<int64_t> reported_cached_tokens;
  // The prefix key's mode and reason (string literals); empty: the request had none.
  std::string_view key_mode;
  std::string_view key_reason;
  // The normalize rules that changed its body (string literals; empty slots unused).
  std::array<std::string_view, 3> normalized{};
};

// What placement gossip did since its last report (gateway/fleet/gossip.h).
struct GossipCounts {
  int64_t sent = 0;  // datagrams, one per peer address
  int64_t received = 0;
  int64_t malformed = 0;
  int64_t not_a_peer = 0;  // from an address no peer resolves to
  int64_t send_failed = 0;
  int64_t queue_full = 0;  // placements not queued: the sender fell behind
  int64_t lost = 0;        // gaps in the peers' sequence numbers
  int64_t placements = 0;
  int64_t unknown_backend = 0;
};

class GatewayMetrics {
 public:
  GatewayMetrics();
  ~GatewayMetrics();
  GatewayMetrics(const GatewayMetrics&) = delete;
  GatewayMetrics& operator=(const GatewayMetrics&) = delete;

  void OnRequest(const RequestRecord& record);
  void OnRetry(std::string_view backend);
  void OnRejected(std::string_view reason, std::string_view route);
  void OnRateLimited(std::string_view tenant, std::string_view limit);
  // A rate-limit decision that had to be taken locally because Redis failed (`redis_up` false),
  // or a Redis call that worked (true).
  void OnRedisResult(bool redis_up);
  // A parity self-test of `model` on `backend` ended with `result`.
  void OnParityCheck(std::string_view backend, std::string_view model, std::string_view result);
  // Whether `model` uses precise keys (its parity checks allow them).
  void SetModelPrecise(std::string_view model, bool precise);

  // A prewarm request to `backend` (reason "join" or "handoff") ended; `ok` a 200 answer, with
  // `prompt_tokens` sent.
  void OnPrewarm(std::string_view backend, std::string_view reason, bool ok, int64_t prompt_tokens);
  // DNS discovery finished a resolution / was turned off (discovery_metrics.h).
  void OnDiscoveryResolution(const DiscoveryResolution& resolution);
  void OnDiscoveryStopped();
  // Placement gossip's counts since its last call, the peers heard from now, and this
  // gateway's rank among them and itself (routing::GatewayPlace).
  void OnGossip(const GossipCounts& delta, int64_t peers, int64_t rank);

  // Lags (seconds, engine timestamp → applied) of KV-event batches of `backend` just applied.
  void OnKvEventLags(std::string_view backend, std::span<const double> lags_s);

  // Refreshes the gauges from `backends` and returns the exposition text.
  std::string Serialize(const Backends& backends, int64_t admission_queue_length,
                        const std::vector<HotPrefix>& hot_prefixes = {});

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace warmroute::gateway
