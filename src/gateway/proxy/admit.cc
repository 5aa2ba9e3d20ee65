#include "gateway/proxy/admit.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "common/status.h"
#include "core/routing/prefix_key.h"
#include "gateway/observability/hot_prefixes.h"

namespace warmroute::gateway {

// The server leaves room after a request body for the JSON parser to read past its end.
static_assert(net::kBodySpareCapacity >= request::kParsePadding);

namespace {

constexpr size_t kKeptParseBytes = size_t{1} << 20;  // see ParseAndKey

Refusal Refuse(absl::Status error, std::string_view rejection) {
  Refusal refusal;
  refusal.error = std::move(error);
  refusal.rejection = rejection;
  return refusal;
}

// Parses the body into `routing` (its routing request) and `with_usage` (the body with
// include_usage added, when the gateway adds it). The parsed request lives in an object per
// thread whose strings keep their memory from one request to the next (no allocation for the
// prompt's text), which another request on this thread reuses as soon as this one waits: it is
// read only here, and this never suspends. A body over kKeptParseBytes gives its memory back at
// the end, so a thread keeps at most about that much (not the body limit) between requests.
std::optional<Refusal> ParseAndKey(const ProxySettings& settings, request::Endpoint endpoint,
                                   const net::HttpRequest& request, const Tenant* tenant,
                                   Call& call, routing::RoutingRequest& routing,
                                   std::optional<std::string>& with_usage) {
  thread_local request::InferenceRequest parsed;
  std::optional<Refusal> refused;
  absl::Status status = request::ParseInferenceRequestInto(endpoint, request.body, parsed);
  if (!status.ok()) {
    refused = Refuse(std::move(status), "bad_request");
    // A compressed body cannot parse: say why (only here, off the path of valid requests).
    const std::string_view encoding = request.Header("content-encoding");
    if (!encoding.empty() && !net::HeaderNameIs(encoding, "identity")) {
      refused->error = absl::InvalidArgumentError(
          absl::StrCat("Content-Encoding '", AbslView(encoding),
                       "' is not supported: send the request body uncompressed"));
      refused->http_status = 415;
    }
  } else {
    call.model = parsed.model;
    call.stream = parsed.stream;
    if (settings.log_prompts && !parsed.has_token_prompt) {
      call.prompt = request::RenderPrompt(parsed);
    }
    if (tenant != nullptr && !tenant->AllowsModel(parsed.model)) {
      refused = Refuse(WithParam(absl::NotFoundError(absl::StrCat(
                                     "The model `", parsed.model,
                                     "` does not exist or you do not have access to it.")),
                                 "model"),
                       "model_not_allowed");
    } else {
      routing.id = call.id;
      routing.model = parsed.model;
      if (tenant != nullptr) {
        // The client's cache_salt is replaced upstream by the tenant's: the key follows suit.
        parsed.cache_salt.clear();
        routing.tenant = tenant->cache_domain;
        routing.pools = tenant->config.pools;
      } else {
        routing.tenant = std::string(request.Header(kTenantHeader));
      }
      routing.key = routing::MakePrefixKey(parsed, routing.tenant, settings.key);
      routing.prompt_tokens = routing.key.prompt_tokens;
      routing.max_tokens = parsed.max_tokens.value_or(16);
      routing.stream = parsed.stream;
      with_usage = WithIncludeUsage(parsed, request.body);
    }
  }
  if (request.body.size() > kKeptParseBytes) request::ReleaseInferenceRequest(parsed);
  return refused;
}

// The tenant's rate-limit verdict: from Redis when configured and answering (cluster-wide), else
// from the local limiter (and the fallback is counted). Concurrency is always local.
net::Task<LimitDecision> TakeBuckets(const ProxyContext& context, RedisRateStore* redis,
                                     const std::string& tenant, const TenantLimits& limits,
                                     double prompt_tokens) {
  if (redis != nullptr) {
    absl::StatusOr<LimitDecision> cluster = co_await redis->Take(tenant, limits, prompt_tokens);
    if (cluster.ok()) {
      context.metrics.OnRedisResult(true);
      co_return *cluster;
    }
    // The client left while waiting (Cancelled): its answer no longer matters, and Redis did
    // not fail. Decided locally without counting a fallback.
    if (cluster.status().code() == absl::StatusCode::kCancelled) {
      co_return context.limiter.Take(tenant, limits, prompt_tokens);
    }
    // Unavailable (down, slow, backing off): the store logs the transition once; every
    // decision taken locally meanwhile is counted.
    context.metrics.OnRedisResult(false);
  }
  co_return context.limiter.Take(tenant, limits, prompt_tokens);
}

// The 429 for a refused limit.
Refusal RateLimited(const LimitDecision& decision, const std::string& tenant,
                    const TenantLimits& limits) {
  const int64_t retry_after_s = RetryAfterSeconds(decision.retry_after);
  Refusal refusal = Refuse(absl::ResourceExhaustedError(absl::StrCat(
                               "Rate limit reached for tenant ", tenant, " on ", decision.limit,
                               decision.limit == kConcurrentLimit
                                   ? absl::StrCat(" (", limits.max_concurrent, " requests at once)")
                                   : std::string(),
                               ". Please try again in ", retry_after_s, "s.")),
                           "rate_limited");
  refusal.retry_after_s = retry_after_s;
  return refusal;
}

// The refusal for a routing decision that could not be made.
Refusal NotRouted(const absl::Status& status, const Backends& backends, const std::string& model) {
  if (backends.Targets().empty()) {
    return Refuse(absl::UnavailableError("the gateway has no backends (add some to the config "
                                         "or with POST /admin/backends)"),
                  "no_backend");
  }
  if (status.code() == absl::StatusCode::kNotFound) {
    return Refuse(
        WithParam(absl::NotFoundError(absl::StrCat("The model `", model, "` does not exist.")),
                  "model"),
        "unknown_model");
  }
  return Refuse(absl::UnavailableError(absl::StrCat("no healthy backend can serve model `", model,
                                                    "`: ", status.message())),
                "no_backend");
}

// A request that passed the steps before the waits: keyed, its body ready, its tenant's
// concurrency slot taken (when the tenant has limits).
struct Pending {
  const Tenant* tenant = nullptr;
  routing::RoutingRequest routing;
  std::optional<UpstreamBody> body;
  std::optional<ConcurrencySlot> concurrency;
};

// Tenant → parse → models → prefix key, the body as the backends get it, and the tenant's
// concurrency slot.
std::variant<Refusal, Pending> Prepare(const ProxyContext& context, const ProxySettings& settings,
                                       request::Endpoint endpoint, const net::HttpRequest& request,
                                       Call& call) {
  const Tenants* tenants = settings.active_tenants();
  const Tenant* tenant = nullptr;
  if (tenants != nullptr) {
    absl::StatusOr<std::string_view> credentials = request.SingleHeader("Authorization");
    if (!credentials.ok()) return Refuse(credentials.status(), "bad_request");
    absl::StatusOr<const Tenant*> who = tenants->Authenticate(*credentials);
    if (!who.ok()) return Refuse(who.status(), "unauthenticated");
    tenant = *who;
    call.tenant = tenant->config.name;
  }

  std::variant<Refusal, Pending> out;
  Pending& pending = out.emplace<Pending>();
  pending.tenant = tenant;
  std::optional<std::string> with_usage;
  if (std::optional<Refusal> refused =
          ParseAndKey(settings, endpoint, request, tenant, call, pending.routing, with_usage)) {
    return std::move(*refused);
  }
  absl::StatusOr<UpstreamBody> body =
      UpstreamBody::Make(request.body, std::move(with_usage),
                         tenant != nullptr ? std::string_view(tenant->cache_salt_json) : "");
  if (!body.ok()) return Refuse(body.status(), "bad_request");
  pending.body.emplace(std::move(*body));
  if (tenant != nullptr && tenant->config.limits.any()) {
    const TenantLimits& limits = tenant->config.limits;
    if (!context.limiter.AcquireConcurrent(call.tenant, limits)) {
      const LimitDecision refused{.allowed = false,
                                  .retry_after = std::chrono::seconds(1),
                                  .limit = std::string(kConcurrentLimit)};
      context.metrics.OnRateLimited(call.tenant, refused.limit);
      return RateLimited(refused, call.tenant, limits);
    }
    pending.concurrency.emplace(context.limiter, call.tenant);
  }
  return out;
}

// The routing decision for `pending`, which holds `ticket`; takes what `pending` holds.
AdmitResult Route(const ProxyContext& context, Pending& pending, AdmissionGate::Ticket ticket,
                  Call& call) {
  const uint64_t hot_prefix = HotPrefixes::IdOf(pending.routing.key);
  const int64_t prompt_tokens = pending.routing.prompt_tokens;
  absl::StatusOr<Dispatch> dispatch = context.backends.Route(std::move(pending.routing));
  if (!dispatch.ok()) return NotRouted(dispatch.status(), context.backends, call.model);
  RoutedRequest routed(context.backends, call.id);
  routed.Dispatched();
  context.hot_prefixes.Record(hot_prefix, prompt_tokens);
  call.dispatched = true;
  call.target = dispatch->target;
  call.reason = dispatch->reason;
  call.predicted_cached_tokens = dispatch->predicted_cached_tokens;
  return Admitted{.dispatch = std::move(*dispatch),
                  .tenant = pending.tenant,
                  .body = std::move(*pending.body),
                  .routed = std::move(routed),
                  .concurrency = std::move(pending.concurrency),
                  .ticket = std::move(ticket)};
}

}  // namespace

net::Response ResponseOf(const Refusal& refusal) {
  net::Response response = net::ErrorResponse(refusal.error, refusal.http_status);
  if (refusal.retry_after_s) {
    response.head.headers.emplace_back("retry-after", std::to_string(*refusal.retry_after_s));
  }
  return response;
}

net::Task<AdmitResult> Admit(const ProxyContext& context, const ProxySettings& settings,
                             RedisRateStore* redis, request::Endpoint endpoint,
                             const net::HttpRequest& request, Call& call) {
  // The coroutine keeps only what crosses its two waits (its frame stays small enough for Asio's
  // per-thread frame recycling); the steps themselves are plain functions.
  std::variant<Refusal, Pending> prepared = Prepare(context, settings, endpoint, request, call);
  if (Refusal* refusal = std::get_if<Refusal>(&prepared)) co_return std::move(*refusal);
  Pending& pending = std::get<Pending>(prepared);

  // Limits: the tenant's token buckets (its concurrency slot was taken by Prepare).
  if (pending.concurrency) {
    const TenantLimits& limits = pending.tenant->config.limits;
    const LimitDecision decision = co_await TakeBuckets(
        context, redis, call.tenant, limits, static_cast<double>(pending.routing.prompt_tokens));
    if (!decision.allowed) {
      context.metrics.OnRateLimited(call.tenant, decision.limit);
      co_return RateLimited(decision, call.tenant, limits);
    }
  }

  // Admission (nothing to wait for without an in-flight bound).
  AdmissionGate::Ticket ticket;
  if (context.admission.bounded()) {
    absl::StatusOr<AdmissionGate::Ticket> admitted = co_await context.admission.Admit(
        call.tenant, pending.tenant != nullptr ? pending.tenant->config.weight : 1.0);
    if (!admitted.ok()) {
      co_return Refuse(admitted.status(),
                       IsQueueTimeout(admitted.status()) ? "queue_timeout" : "queue_full");
    }
    ticket = std::move(*admitted);
  }

  co_return Route(context, pending, std::move(ticket), call);
}

}  // namespace warmroute::gateway
