#include "gateway/observability/gateway_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "common/adaptive_mutex.h"
#include "common/per_thread.h"
#include "gateway/observability/discovery_metrics.h"
#include "gateway/observability/kv_event_metrics.h"

namespace warmroute::gateway {
namespace {

// TTFT buckets as vLLM's histogram_time_to_first_token, so gateway and engine TTFTs compare.
const prometheus::Histogram::BucketBoundaries kTtftBuckets = {
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
    1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
// E2E buckets as vLLM's request_latency_buckets, with sub-second steps added for short answers.
const prometheus::Histogram::BucketBoundaries kE2eBuckets = {
    0.01, 0.025, 0.05, 0.1,  0.3,  0.5,  0.8,   1.0,   1.5,   2.0,   2.5,    5.0,   10.0,
    15.0, 20.0,  30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

struct BackendGauges {
  prometheus::Gauge* in_flight;
  prometheus::Gauge* outstanding;
  prometheus::Gauge* decodes;
  prometheus::Gauge* healthy;
  prometheus::Gauge* rate;
  prometheus::Gauge* kv_usage = nullptr;  // only while the engine's metrics are known
};

// What OnRequest counted on one thread since the last Serialize, series by series, each with the
// registry's series it is added to. The per-request path writes only these (its own thread's,
// common/per_thread.h); Serialize folds them into the registry.
struct PendingCounter {
  prometheus::Counter* series = nullptr;
  double pending = 0;

  PendingCounter() = default;
  explicit PendingCounter(prometheus::Counter* s) : series(s) {}

  void Fold() {
    if (pending == 0) return;
    series->Increment(pending);
    pending = 0;
  }
};

struct PendingHistogram {
  prometheus::Histogram* series = nullptr;
  const prometheus::Histogram::BucketBoundaries* bounds = nullptr;
  std::vector<double> buckets;  // observations per bucket (not cumulative); the last is +Inf
  double sum = 0;
  bool observed = false;

  PendingHistogram() = default;
  PendingHistogram(prometheus::Histogram* s, const prometheus::Histogram::BucketBoundaries& b)
      : series(s), bounds(&b), buckets(b.size() + 1, 0) {}

  // The bucket prometheus::Histogram::Observe picks: the first whose bound is >= v (+Inf for
  // NaN).
  void Observe(double v) {
    const size_t bucket =
        std::isnan(v) ? bounds->size()
                      : static_cast<size_t>(std::lower_bound(bounds->begin(), bounds->end(), v) -
                                            bounds->begin());
    buckets[bucket] += 1;
    sum += v;
    observed = true;
  }
  void Fold() {
    if (!observed) return;
    series->ObserveMultiple(buckets, sum);
    std::fill(buckets.begin(), buckets.end(), 0);
    sum = 0;
    observed = false;
  }
};

struct PendingBackend {
  PendingHistogram ttft;
  PendingHistogram e2e;
  PendingCounter prompt_tokens;
  PendingCounter predicted;
  PendingCounter reported;
};

struct RequestShard {
  std::string key_buffer;  // OnRequest's scratch for the requests' key (no allocation once warm)
  // route \n backend \n code \n reason
  absl::flat_hash_map<std::string, PendingCounter> requests;
  absl::flat_hash_map<std::string, PendingBackend> backends;
  absl::flat_hash_map<std::string, PendingCounter> tenant_requests;  // tenant \n code
  absl::flat_hash_map<std::string, PendingHistogram> tenant_ttfts;
  absl::flat_hash_map<std::string, PendingCounter> keys;  // mode \n reason
  absl::flat_hash_map<std::string, PendingCounter> sharing;  // tenant \n shared
  absl::flat_hash_map<std::string, PendingCounter> normalized;  // tenant \n rule

  void Fold() {
    for (auto& [key, c] : requests) c.Fold();
    for (auto& [key, c] : sharing) c.Fold();
    for (auto& [key, c] : normalized) c.Fold();
    for (auto& [key, c] : keys) c.Fold();
    for (auto& [name, b] : backends) {
      b.ttft.Fold();
      b.e2e.Fold();
      b.prompt_tokens.Fold();
      b.predicted.Fold();
      b.reported.Fold();
    }
    for (auto& [key, c] : tenant_requests) c.Fold();
    for (auto& [tenant, h] : tenant_ttfts) h.Fold();
  }
};

}  // namespace

struct GatewayMetrics::State {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  prometheus::Family<prometheus::Counter>& requests =
      prometheus::BuildCounter()
          .Name("warmroute_requests_total")
          .Help("Requests answered, by backend, HTTP status and routing reason")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& rejections =
      prometheus::BuildCounter()
          .Name("warmroute_request_rejections_total")
          .Help("Requests refused before dispatch, by reason")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& prefix_keys =
      prometheus::BuildCounter()
          .Name("warmroute_prefix_key_total")
          .Help("Prompt requests keyed, by the key's mode (precise, approximate) and its reason")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& parity_checks =
      prometheus::BuildCounter()
          .Name("warmroute_prefix_key_parity_checks_total")
          .Help("Comparisons of a backend's /tokenize ids with the gateway's, by result")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& prewarm_requests =
      prometheus::BuildCounter()
          .Name("warmroute_prewarm_requests_total")
          .Help(
              "Prewarm requests (max_tokens 1) sent to a backend that joined (reason join) or "
              "for one that left (handoff), by result")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& prewarm_tokens =
      prometheus::BuildCounter()
          .Name("warmroute_prewarm_tokens_total")
          .Help("Prompt tokens of the prewarm requests sent to a backend, by reason")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& gossip_messages =
      prometheus::BuildCounter()
          .Name("warmroute_gossip_messages_total")
          .Help("Placement gossip datagrams sent to and received from the other gateway "
                "replicas, by direction")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& gossip_dropped =
      prometheus::BuildCounter()
          .Name("warmroute_gossip_dropped_total")
          .Help("Gossip datagrams dropped, by reason (malformed, not_a_peer, send_failed), "
                "lost on the way (lost: gaps in a peer's sequence numbers), and placements not "
                "queued (queue_full)")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& gossip_placements =
      prometheus::BuildCounter()
          .Name("warmroute_gossip_placements_total")
          .Help("Peers' placements received, by result (applied, unknown_backend)")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& gossip_peers_family =
      prometheus::BuildGauge()
          .Name("warmroute_gossip_peers")
          .Help("Other gateway replicas heard from within the peer expiry")
          .Register(*registry);
  prometheus::Gauge& gossip_peers = gossip_peers_family.Add({});
  prometheus::Family<prometheus::Gauge>& gossip_rank_family =
      prometheus::BuildGauge()
          .Name("warmroute_gossip_rank")
          .Help("This gateway's place, from 0, among itself and the peers it hears (by gossip "
                "sender id): with warmroute_gossip_peers + 1 gateways, the share of the fleet "
                "where the warmroute policy places its cold prefixes")
          .Register(*registry);
  prometheus::Gauge& gossip_rank = gossip_rank_family.Add({});
  prometheus::Family<prometheus::Gauge>& model_precise =
      prometheus::BuildGauge()
          .Name("warmroute_prefix_key_precise")
          .Help("1 while the model's requests may get precise prefix keys (its parity checks "
                "match), else 0")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& retries =
      prometheus::BuildCounter()
          .Name("warmroute_retries_total")
          .Help("Dispatches that failed before any byte reached the client and were retried "
                "elsewhere, by the backend that failed")
          .Register(*registry);
  prometheus::Family<prometheus::Histogram>& ttft =
      prometheus::BuildHistogram()
          .Name("warmroute_time_to_first_token_seconds")
          .Help("Time from the request's arrival at the gateway to its first streamed byte")
          .Register(*registry);
  prometheus::Family<prometheus::Histogram>& e2e =
      prometheus::BuildHistogram()
          .Name("warmroute_e2e_request_latency_seconds")
          .Help("Time from the request's arrival at the gateway to the end of its response")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& prompt_tokens =
      prometheus::BuildCounter()
          .Name("warmroute_prompt_tokens_total")
          .Help("Prompt tokens of requests whose usage the engine reported")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& predicted =
      prometheus::BuildCounter()
          .Name("warmroute_predicted_cached_tokens_total")
          .Help("Cached prompt tokens the router predicted, for requests whose usage the engine "
                "reported")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& reported =
      prometheus::BuildCounter()
          .Name("warmroute_reported_cached_tokens_total")
          .Help("Cached prompt tokens the engine reported (usage.prompt_tokens_details)")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& in_flight =
      prometheus::BuildGauge()
          .Name("warmroute_backend_in_flight")
          .Help("Requests dispatched to the backend and not finished")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& outstanding =
      prometheus::BuildGauge()
          .Name("warmroute_backend_outstanding_prefill_tokens")
          .Help("Predicted uncached prompt tokens sent to the backend with no first token yet")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& decodes =
      prometheus::BuildGauge()
          .Name("warmroute_backend_running_decodes")
          .Help("Requests on the backend past their first token")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& healthy =
      prometheus::BuildGauge()
          .Name("warmroute_backend_healthy")
          .Help("1 when the backend may take new requests (probe up, not ejected, not draining)")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& rate =
      prometheus::BuildGauge()
          .Name("warmroute_backend_prefill_tokens_per_second")
          .Help("The router's online estimate of the backend's prefill rate")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& kv_usage =
      prometheus::BuildGauge()
          .Name("warmroute_backend_kv_cache_usage_ratio")
          .Help("KV-cache usage the backend's engine reports (last scrape), 0..1; absent until "
                "scraped")
          .Register(*registry);
  // A backend that routes its data-parallel ranks (rank_targets.h): each rank's target, beside
  // the backend's series above (which are the ranks' sums), so that an uneven split shows.
  prometheus::Family<prometheus::Gauge>& rank_in_flight =
      prometheus::BuildGauge()
          .Name("warmroute_dp_rank_in_flight")
          .Help("Requests dispatched to the data-parallel rank and not finished")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& rank_outstanding =
      prometheus::BuildGauge()
          .Name("warmroute_dp_rank_outstanding_prefill_tokens")
          .Help("Predicted uncached prompt tokens sent to the data-parallel rank with no first "
                "token yet")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& rank_decodes =
      prometheus::BuildGauge()
          .Name("warmroute_dp_rank_running_decodes")
          .Help("Requests on the data-parallel rank past their first token")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& rank_rate =
      prometheus::BuildGauge()
          .Name("warmroute_dp_rank_prefill_tokens_per_second")
          .Help("The router's online estimate of the data-parallel rank's prefill rate")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& rank_kv_usage =
      prometheus::BuildGauge()
          .Name("warmroute_dp_rank_kv_cache_usage_ratio")
          .Help("KV-cache usage of the data-parallel rank's engine core (last scrape), 0..1; "
                "absent until scraped")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& index =
      prometheus::BuildGauge()
          .Name("warmroute_prefix_index_entries")
          .Help("(block, backend) entries in the prefix index")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& index_bytes =
      prometheus::BuildGauge()
          .Name("warmroute_prefix_index_bytes")
          .Help("Memory held by the prefix index")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& queue =
      prometheus::BuildGauge()
          .Name("warmroute_admission_queue_length")
          .Help("Requests waiting for admission")
          .Register(*registry);

  prometheus::Family<prometheus::Counter>& sharing =
      prometheus::BuildCounter()
          .Name("warmroute_prefix_sharing_requests_total")
          .Help("Requests whose usage the engine reported, by tenant and by whether at least 64 "
                "prompt tokens were cached (shared a prefix with an earlier request)")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& normalized =
      prometheus::BuildCounter()
          .Name("warmroute_normalize_applied_total")
          .Help("Requests whose body a normalize rule changed, by tenant and rule")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& tenant_requests =
      prometheus::BuildCounter()
          .Name("warmroute_tenant_requests_total")
          .Help("Requests answered, by tenant and HTTP status")
          .Register(*registry);
  prometheus::Family<prometheus::Histogram>& tenant_ttft =
      prometheus::BuildHistogram()
          .Name("warmroute_tenant_time_to_first_token_seconds")
          .Help("Time to first token measured at the gateway, by tenant")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& rate_limited =
      prometheus::BuildCounter()
          .Name("warmroute_rate_limited_total")
          .Help("Requests refused with 429 by a tenant's rate limit, by the limit that refused")
          .Register(*registry);
  prometheus::Counter& redis_fallbacks =
      prometheus::BuildCounter()
          .Name("warmroute_rate_limit_redis_fallbacks_total")
          .Help("Rate-limit decisions taken by the local limiter because Redis did not answer")
          .Register(*registry)
          .Add({});
  prometheus::Counter& lock_waits =
      prometheus::BuildCounter()
          .Name("warmroute_routing_lock_waits_total")
          .Help(
              "Times a worker thread found the routing lock (the router's shared state, "
              "taken several times per request) held and waited for it")
          .Register(*registry)
          .Add({});
  prometheus::Counter& lock_wait_seconds =
      prometheus::BuildCounter()
          .Name("warmroute_routing_lock_wait_seconds_total")
          .Help("Time worker threads waited for the routing lock, spinning or asleep")
          .Register(*registry)
          .Add({});
  prometheus::Gauge& redis_up = prometheus::BuildGauge()
                                    .Name("warmroute_rate_limit_redis_up")
                                    .Help("1 while the last Redis rate-limit call succeeded")
                                    .Register(*registry)
                                    .Add({});
  prometheus::Family<prometheus::Gauge>& pool_backends =
      prometheus::BuildGauge()
          .Name("warmroute_pool_backends")
          .Help("Backends in the pool")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& pool_healthy =
      prometheus::BuildGauge()
          .Name("warmroute_pool_healthy_backends")
          .Help("Backends in the pool that may take new requests")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& pool_in_flight =
      prometheus::BuildGauge()
          .Name("warmroute_pool_in_flight")
          .Help("Requests in flight on the pool's backends")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& pool_outstanding =
      prometheus::BuildGauge()
          .Name("warmroute_pool_outstanding_prefill_tokens")
          .Help("Predicted uncached prompt tokens waiting for their first token in the pool")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& pool_decodes =
      prometheus::BuildGauge()
          .Name("warmroute_pool_running_decodes")
          .Help("Requests past their first token in the pool")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& pool_waiting =
      prometheus::BuildGauge()
          .Name("warmroute_pool_engine_waiting_requests")
          .Help("Requests the pool's engines report waiting in their queues (last scrape)")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& pool_kv_usage =
      prometheus::BuildGauge()
          .Name("warmroute_pool_kv_cache_usage_ratio")
          .Help("Mean KV-cache usage the pool's healthy engines report (last scrape), 0..1")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& pool_backlog =
      prometheus::BuildGauge()
          .Name("warmroute_pool_prefill_backlog_seconds")
          .Help("Outstanding prefill tokens over the pool's estimated prefill rate (healthy "
                "backends): seconds of queued prefill work, the autoscaling signal")
          .Register(*registry);

  prometheus::Family<prometheus::Gauge>& hot_requests =
      prometheus::BuildGauge()
          .Name("warmroute_hot_prefix_requests_per_second")
          .Help("Requests per second of the busiest prefixes (last 10 s window), by rank and "
                "hashed prefix id")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& hot_tokens =
      prometheus::BuildGauge()
          .Name("warmroute_hot_prefix_prompt_tokens_per_second")
          .Help("Prompt tokens per second of the busiest prefixes (last 10 s window), by rank "
                "and hashed prefix id")
          .Register(*registry);

  // OnRequest's counts, per worker thread, until Serialize folds them into the series above. A
  // shard's first use of a series gets it from its family (Family::Add returns the series of
  // labels it already has; it takes the family's own mutex).
  PerThread<RequestShard> shards;

  KvEventMetrics kv_events{*registry};
  DiscoveryMetrics discovery{*registry};
  std::mutex mu;  // guards the maps below
  // What the routing-lock counters count so far (they are counters: Serialize adds the growth).
  AdaptiveMutex::Contention lock_counted;
  std::vector<prometheus::Gauge*> hot_gauges;  // of the last Serialize, replaced each time
  // The data-parallel ranks' series of the last Serialize, each with its family, replaced each
  // time (a handful per backend that routes its ranks).
  std::vector<std::pair<prometheus::Family<prometheus::Gauge>*, prometheus::Gauge*>> rank_gauges;
  std::map<std::string, BackendGauges> gauges;
  std::set<std::string> pools_shown;  // the pools of the last Serialize's pool series
};

GatewayMetrics::GatewayMetrics() : state_(std::make_unique<State>()) {}
GatewayMetrics::~GatewayMetrics() = default;

void GatewayMetrics::OnRequest(const RequestRecord& r) {
  State& state = *state_;
  state.shards.WithLocal([&](RequestShard& shard) {
    std::string& key = shard.key_buffer;
    key.clear();
    absl::StrAppend(&key, AbslView(r.route), "\n", AbslView(r.backend), "\n", r.status, "\n",
                    AbslView(r.reason));
    auto it = shard.requests.find(key);
    if (it == shard.requests.end()) {
      prometheus::Counter& series = state.requests.Add({{"route", std::string(r.route)},
                                                        {"backend", std::string(r.backend)},
                                                        {"code", std::to_string(r.status)},
                                                        {"reason", std::string(r.reason)}});
      it = shard.requests.emplace(key, PendingCounter{&series}).first;
    }
    it->second.pending += 1;
    if (!r.key_mode.empty()) {
      key.clear();
      absl::StrAppend(&key, AbslView(r.key_mode), "\n", AbslView(r.key_reason));
      auto k = shard.keys.find(key);
      if (k == shard.keys.end()) {
        prometheus::Counter& series = state.prefix_keys.Add(
            {{"mode", std::string(r.key_mode)}, {"reason", std::string(r.key_reason)}});
        k = shard.keys.emplace(key, PendingCounter{&series}).first;
      }
      k->second.pending += 1;
    }
    if (r.reported_cached_tokens.has_value()) {
      const bool shared = *r.reported_cached_tokens >= kSharedPrefixTokens;
      key.clear();
      absl::StrAppend(&key, AbslView(r.tenant), "\n", shared);
      auto s = shard.sharing.find(key);
      if (s == shard.sharing.end()) {
        prometheus::Counter& series = state.sharing.Add(
            {{"tenant", std::string(r.tenant)}, {"shared", shared ? "true" : "false"}});
        s = shard.sharing.emplace(key, PendingCounter{&series}).first;
      }
      s->second.pending += 1;
    }
    for (std::string_view rule : r.normalized) {
      if (rule.empty()) continue;
      key.clear();
      absl::StrAppend(&key, AbslView(r.tenant), "\n", AbslView(rule));
      auto n = shard.normalized.find(key);
      if (n == shard.normalized.end()) {
        prometheus::Counter& series =
            state.normalized.Add({{"tenant", std::string(r.tenant)}, {"rule", std::string(rule)}});
        n = shard.normalized.emplace(key, PendingCounter{&series}).first;
      }
      n->second.pending += 1;
    }
    if (!r.tenant.empty()) {
      key.clear();
      absl::StrAppend(&key, AbslView(r.tenant), "\n", r.status);
      auto t = shard.tenant_requests.find(key);
      if (t == shard.tenant_requests.end()) {
        prometheus::Counter& series = state.tenant_requests.Add(
            {{"tenant", std::string(r.tenant)}, {"code", std::to_string(r.status)}});
        t = shard.tenant_requests.emplace(key, PendingCounter{&series}).first;
      }
      t->second.pending += 1;
      if (r.ttft_s) {
        auto h = shard.tenant_ttfts.find(AbslView(r.tenant));
        if (h == shard.tenant_ttfts.end()) {
          h = shard.tenant_ttfts
                  .emplace(std::string(r.tenant),
                           PendingHistogram(&state.tenant_ttft.Add(
                                                {{"tenant", std::string(r.tenant)}}, kTtftBuckets),
                                            kTtftBuckets))
                  .first;
        }
        h->second.Observe(*r.ttft_s);
      }
    }
    if (r.backend.empty()) return;
    auto b = shard.backends.find(AbslView(r.backend));
    if (b == shard.backends.end()) {
      const std::map<std::string, std::string> labels = {{"backend", std::string(r.backend)}};
      b = shard.backends
              .emplace(std::string(r.backend),
                       PendingBackend{
                           .ttft = PendingHistogram(&state.ttft.Add(labels, kTtftBuckets),
                                                    kTtftBuckets),
                           .e2e = PendingHistogram(&state.e2e.Add(labels, kE2eBuckets),
                                                   kE2eBuckets),
                           .prompt_tokens = PendingCounter{&state.prompt_tokens.Add(labels)},
                           .predicted = PendingCounter{&state.predicted.Add(labels)},
                           .reported = PendingCounter{&state.reported.Add(labels)}})
              .first;
    }
    PendingBackend& p = b->second;
    if (r.ttft_s) p.ttft.Observe(*r.ttft_s);
    p.e2e.Observe(r.e2e_s);
    if (r.prompt_tokens && r.reported_cached_tokens) {
      p.prompt_tokens.pending += static_cast<double>(*r.prompt_tokens);
      p.predicted.pending += static_cast<double>(r.predicted_cached_tokens);
      p.reported.pending += static_cast<double>(*r.reported_cached_tokens);
    }
  });
}

void GatewayMetrics::OnRetry(std::string_view backend) {
  state_->retries.Add({{"backend", std::string(backend)}}).Increment();
}

void GatewayMetrics::OnRejected(std::string_view reason, std::string_view route) {
  state_->rejections.Add({{"reason", std::string(reason)}, {"route", std::string(route)}})
      .Increment();
}

void GatewayMetrics::OnParityCheck(std::string_view backend, std::string_view model,
                                   std::string_view result) {
  state_->parity_checks
      .Add({{"backend", std::string(backend)},
            {"model", std::string(model)},
            {"result", std::string(result)}})
      .Increment();
}

void GatewayMetrics::OnPrewarm(std::string_view backend, std::string_view reason, bool ok,
                               int64_t prompt_tokens) {
  state_->prewarm_requests
      .Add({{"backend", std::string(backend)},
            {"reason", std::string(reason)},
            {"result", ok ? "ok" : "failed"}})
      .Increment();
  if (ok && prompt_tokens > 0) {
    state_->prewarm_tokens.Add({{"backend", std::string(backend)}, {"reason", std::string(reason)}})
        .Increment(static_cast<double>(prompt_tokens));
  }
}

void GatewayMetrics::OnKvEventLags(std::string_view backend, std::span<const double> lags_s) {
  state_->kv_events.OnLags(backend, lags_s);
}

void GatewayMetrics::SetModelPrecise(std::string_view model, bool precise) {
  state_->model_precise.Add({{"model", std::string(model)}}).Set(precise ? 1 : 0);
}

void GatewayMetrics::OnRateLimited(std::string_view tenant, std::string_view limit) {
  state_->rate_limited.Add({{"tenant", std::string(tenant)}, {"limit", std::string(limit)}})
      .Increment();
}

void GatewayMetrics::OnDiscoveryResolution(const DiscoveryResolution& resolution) {
  state_->discovery.OnResolution(resolution);
}

void GatewayMetrics::OnDiscoveryStopped() { state_->discovery.Clear(); }

void GatewayMetrics::OnGossip(const GossipCounts& delta, int64_t peers, int64_t rank) {
  State& s = *state_;
  auto add = [](prometheus::Family<prometheus::Counter>& family, const char* key,
                const char* value, int64_t n) {
    prometheus::Counter& counter = family.Add({{key, value}});  // present from the first call
    if (n > 0) counter.Increment(static_cast<double>(n));
  };
  add(s.gossip_messages, "direction", "sent", delta.sent);
  add(s.gossip_messages, "direction", "received", delta.received);
  add(s.gossip_dropped, "reason", "malformed", delta.malformed);
  add(s.gossip_dropped, "reason", "not_a_peer", delta.not_a_peer);
  add(s.gossip_dropped, "reason", "send_failed", delta.send_failed);
  add(s.gossip_dropped, "reason", "queue_full", delta.queue_full);
  add(s.gossip_dropped, "reason", "lost", delta.lost);
  add(s.gossip_placements, "result", "applied", delta.placements);
  add(s.gossip_placements, "result", "unknown_backend", delta.unknown_backend);
  s.gossip_peers.Set(static_cast<double>(peers));
  s.gossip_rank.Set(static_cast<double>(rank));
}

void GatewayMetrics::OnRedisResult(bool redis_up) {
  state_->redis_up.Set(redis_up ? 1 : 0);
  if (!redis_up) state_->redis_fallbacks.Increment();
}

std::string GatewayMetrics::Serialize(const Backends& backends, int64_t admission_queue_length,
                                      const std::vector<HotPrefix>& hot_prefixes) {
  // What every thread counted until now goes into the series first (not under mu: see shards).
  state_->shards.ForEach([](RequestShard& shard) { shard.Fold(); });
  const std::vector<BackendSnapshot> snapshot = backends.Snapshot();
  state_->kv_events.Update(snapshot);
  {
    std::lock_guard lock(state_->mu);
    std::set<std::string> present;
    for (const BackendSnapshot& b : snapshot) {
      const std::string& name = b.target->name;
      present.insert(name);
      auto it = state_->gauges.find(name);
      if (it == state_->gauges.end()) {
        const std::map<std::string, std::string> labels = {{"backend", name}};
        it = state_->gauges
                 .emplace(name, BackendGauges{&state_->in_flight.Add(labels),
                                              &state_->outstanding.Add(labels),
                                              &state_->decodes.Add(labels),
                                              &state_->healthy.Add(labels),
                                              &state_->rate.Add(labels)})
                 .first;
      }
      it->second.in_flight->Set(static_cast<double>(b.in_flight));
      it->second.outstanding->Set(static_cast<double>(b.outstanding_prefill_tokens));
      it->second.decodes->Set(static_cast<double>(b.running_decodes));
      it->second.healthy->Set(b.eligible ? 1 : 0);
      it->second.rate->Set(b.prefill_tokens_per_s);
      if (b.metrics.has_value()) {
        if (it->second.kv_usage == nullptr) {
          it->second.kv_usage = &state_->kv_usage.Add({{"backend", name}});
        }
        it->second.kv_usage->Set(b.metrics->kv_usage);
      } else if (it->second.kv_usage != nullptr) {
        state_->kv_usage.Remove(it->second.kv_usage);
        it->second.kv_usage = nullptr;
      }
    }
    for (auto it = state_->gauges.begin(); it != state_->gauges.end();) {
      if (present.count(it->first)) {
        ++it;
        continue;
      }
      state_->in_flight.Remove(it->second.in_flight);
      state_->outstanding.Remove(it->second.outstanding);
      state_->decodes.Remove(it->second.decodes);
      state_->healthy.Remove(it->second.healthy);
      state_->rate.Remove(it->second.rate);
      if (it->second.kv_usage != nullptr) state_->kv_usage.Remove(it->second.kv_usage);
      it = state_->gauges.erase(it);
    }
  }
  {
    std::lock_guard lock(state_->mu);
    for (const auto& [family, gauge] : state_->rank_gauges) family->Remove(gauge);
    state_->rank_gauges.clear();
    for (const BackendSnapshot& b : snapshot) {
      for (size_t r = 0; r < b.ranks.size(); ++r) {
        const RankSnapshot& rank = b.ranks[r];
        const std::map<std::string, std::string> labels = {{"backend", b.target->name},
                                                           {"dp_rank", std::to_string(r)}};
        const auto set = [&](prometheus::Family<prometheus::Gauge>& family, double value) {
          prometheus::Gauge* gauge = &family.Add(labels);
          gauge->Set(value);
          state_->rank_gauges.emplace_back(&family, gauge);
        };
        set(state_->rank_in_flight, static_cast<double>(rank.in_flight));
        set(state_->rank_outstanding, static_cast<double>(rank.outstanding_prefill_tokens));
        set(state_->rank_decodes, static_cast<double>(rank.running_decodes));
        set(state_->rank_rate, rank.prefill_tokens_per_s);
        if (rank.metrics.has_value()) set(state_->rank_kv_usage, rank.metrics->kv_usage);
      }
    }
  }
  struct PoolTotals {
    double backends = 0, healthy = 0, in_flight = 0, outstanding = 0, decodes = 0, rate = 0;
    double waiting = 0, kv_usage_sum = 0, scraped = 0;
  };
  std::map<std::string, PoolTotals> pools;
  for (const BackendSnapshot& b : snapshot) {
    PoolTotals& p = pools[b.target->pool];
    p.backends += 1;
    p.in_flight += static_cast<double>(b.in_flight);
    p.outstanding += static_cast<double>(b.outstanding_prefill_tokens);
    p.decodes += static_cast<double>(b.running_decodes);
    if (b.metrics) p.waiting += static_cast<double>(b.metrics->num_waiting);
    if (b.eligible) {
      p.healthy += 1;
      p.rate += b.prefill_tokens_per_s;
      if (b.metrics) {
        p.kv_usage_sum += b.metrics->kv_usage;
        p.scraped += 1;
      }
    }
  }
  {
    std::lock_guard lock(state_->mu);
    // A pool whose last backend went (removed, or moved to another pool) loses its series: a
    // stale "1 backend, 1 healthy" would mislead an autoscaler. (Family::Add finds a series by
    // its labels, for Remove.)
    for (const std::string& pool : state_->pools_shown) {
      if (pools.count(pool)) continue;
      const std::map<std::string, std::string> labels = {{"pool", pool}};
      for (prometheus::Family<prometheus::Gauge>* family :
           {&state_->pool_backends, &state_->pool_healthy, &state_->pool_in_flight,
            &state_->pool_outstanding, &state_->pool_decodes, &state_->pool_waiting,
            &state_->pool_kv_usage, &state_->pool_backlog}) {
        family->Remove(&family->Add(labels));
      }
    }
    state_->pools_shown.clear();
    for (const auto& [pool, p] : pools) {
      state_->pools_shown.insert(pool);
      const std::map<std::string, std::string> labels = {{"pool", pool}};
      state_->pool_backends.Add(labels).Set(p.backends);
      state_->pool_healthy.Add(labels).Set(p.healthy);
      state_->pool_in_flight.Add(labels).Set(p.in_flight);
      state_->pool_outstanding.Add(labels).Set(p.outstanding);
      state_->pool_decodes.Add(labels).Set(p.decodes);
      state_->pool_waiting.Add(labels).Set(p.waiting);
      state_->pool_kv_usage.Add(labels).Set(p.scraped > 0 ? p.kv_usage_sum / p.scraped : 0);
      // No healthy backend: the whole backlog is stuck; report it against a nominal 1 token/s.
      state_->pool_backlog.Add(labels).Set(p.outstanding / std::max(p.rate, 1.0));
    }
  }
  {
    std::lock_guard lock(state_->mu);
    for (size_t i = 0; i < state_->hot_gauges.size(); i += 2) {
      state_->hot_requests.Remove(state_->hot_gauges[i]);
      state_->hot_tokens.Remove(state_->hot_gauges[i + 1]);
    }
    state_->hot_gauges.clear();
    for (size_t i = 0; i < hot_prefixes.size(); ++i) {
      char id[17];
      std::snprintf(id, sizeof(id), "%016llx",
                    static_cast<unsigned long long>(hot_prefixes[i].id));
      const std::map<std::string, std::string> labels = {{"rank", std::to_string(i + 1)},
                                                         {"prefix", id}};
      prometheus::Gauge* requests = &state_->hot_requests.Add(labels);
      prometheus::Gauge* tokens = &state_->hot_tokens.Add(labels);
      requests->Set(hot_prefixes[i].requests_per_s);
      tokens->Set(hot_prefixes[i].prompt_tokens_per_s);
      state_->hot_gauges.push_back(requests);
      state_->hot_gauges.push_back(tokens);
    }
  }
  {
    std::lock_guard lock(state_->mu);
    const AdaptiveMutex::Contention now = backends.routing_lock_contention();
    AdaptiveMutex::Contention& counted = state_->lock_counted;
    if (now.waits > counted.waits) {
      state_->lock_waits.Increment(static_cast<double>(now.waits - counted.waits));
      counted.waits = now.waits;
    }
    if (now.wait_ns > counted.wait_ns) {
      state_->lock_wait_seconds.Increment(static_cast<double>(now.wait_ns - counted.wait_ns) *
                                          1e-9);
      counted.wait_ns = now.wait_ns;
    }
  }
  state_->index.Add({}).Set(static_cast<double>(backends.index_entries()));
  state_->index_bytes.Add({}).Set(static_cast<double>(backends.index_bytes()));
  state_->queue.Add({}).Set(static_cast<double>(admission_queue_length));
  return prometheus::TextSerializer().Serialize(state_->registry->Collect());
}

}  // namespace warmroute::gateway
