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

Refusal Refuse(absl::Status error, std::string rejection) {
  Refusal refusal;
  refusal.error = std::move(error);
  refusal.rejection = std::move(rejection);
  return refusal;
}

// What the parse step learns, for the steps after it (the parsed request itself is not kept).
struct Parsed {
  routing::RoutingRequest routing;
  std::optional<std::string> with_usage;  // the body with include_usage added
};

// Parses the body and builds its routing request. The parsed request lives in an object per
// thread whose strings keep their memory from one request to the next (no allocation for the
// prompt's text), which another request on this thread reuses as soon as this one waits: it is
// read only here, and this never suspends. A body over kKeptParseBytes gives its memory back at
// the end, so a thread keeps at most about that much (not the body limit) between requests.
std::variant<Parsed, Refusal> ParseAndKey(const ProxySettings& settings, request::Endpoint endpoint,
                                          const net::HttpRequest& request, const Tenant* tenant,
                                          Call& call) {
  thread_local request::InferenceRequest parsed;
  std::variant<Parsed, Refusal> out;
  absl::Status status = request::ParseInferenceRequestInto(endpoint, request.body, parsed);
  if (!status.ok()) {
    Refusal refusal = Refuse(std::move(status), "bad_request");
    // A compressed body cannot parse: say why (only here, off the path of valid requests).
    const std::string_view encoding = request.Header("content-encoding");
    if (!encoding.empty() && !net::HeaderNameIs(encoding, "identity")) {
      refusal.error = absl::InvalidArgumentError(
          absl::StrCat("Content-Encoding '", AbslView(encoding),
                       "' is not supported: send the request body uncompressed"));
      refusal.http_status = 415;
    }
    out = std::move(refusal);
  } else {
    call.model = parsed.model;
    call.stream = parsed.stream;
    if (settings.log_prompts && !parsed.has_token_prompt) {
      call.prompt = request::RenderPrompt(parsed);
    }
    if (tenant != nullptr && !tenant->AllowsModel(parsed.model)) {
      out = Refuse(WithParam(absl::NotFoundError(
                                 absl::StrCat("The model `", parsed.model,
                                              "` does not exist or you do not have access to it.")),
                             "model"),
                   "model_not_allowed");
    } else {
      Parsed& p = out.emplace<Parsed>();
      p.routing.id = call.id;
      p.routing.model = parsed.model;
      if (tenant != nullptr) {
        // The client's cache_salt is replaced upstream by the tenant's: the key follows suit.
        parsed.cache_salt.clear();
        p.routing.tenant = tenant->cache_domain;
        p.routing.pools = tenant->config.pools;
      } else {
        p.routing.tenant = std::string(request.Header(kTenantHeader));
      }
      p.routing.key = routing::MakePrefixKey(parsed, p.routing.tenant, settings.key);
      p.routing.prompt_tokens = p.routing.key.prompt_tokens;
      p.routing.max_tokens = parsed.max_tokens.value_or(16);
      p.routing.stream = parsed.stream;
      p.with_usage = WithIncludeUsage(parsed, request.body);
    }
  }
  if (request.body.size() > kKeptParseBytes) request::ReleaseInferenceRequest(parsed);
  return out;
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
  // Tenant.
  const Tenants* tenants = settings.active_tenants();
  const Tenant* tenant = nullptr;
  if (tenants != nullptr) {
    absl::StatusOr<std::string_view> credentials = request.SingleHeader("Authorization");
    if (!credentials.ok()) co_return Refuse(credentials.status(), "bad_request");
    absl::StatusOr<const Tenant*> who = tenants->Authenticate(*credentials);
    if (!who.ok()) co_return Refuse(who.status(), "unauthenticated");
    tenant = *who;
    call.tenant = tenant->config.name;
  }

  // Parse, models, prefix key; and the body as the backends get it.
  std::variant<Parsed, Refusal> parsed = ParseAndKey(settings, endpoint, request, tenant, call);
  if (Refusal* refusal = std::get_if<Refusal>(&parsed)) co_return std::move(*refusal);
  routing::RoutingRequest& routing_request = std::get<Parsed>(parsed).routing;
  absl::StatusOr<UpstreamBody> body =
      UpstreamBody::Make(request.body, std::move(std::get<Parsed>(parsed).with_usage),
                         tenant != nullptr ? std::string_view(tenant->cache_salt_json) : "");
  if (!body.ok()) co_return Refuse(body.status(), "bad_request");

  // Limits.
  std::optional<ConcurrencySlot> concurrency;
  if (tenant != nullptr && tenant->config.limits.any()) {
    const TenantLimits& limits = tenant->config.limits;
    if (!context.limiter.AcquireConcurrent(call.tenant, limits)) {
      const LimitDecision refused{.allowed = false,
                                  .retry_after = std::chrono::seconds(1),
                                  .limit = std::string(kConcurrentLimit)};
      context.metrics.OnRateLimited(call.tenant, refused.limit);
      co_return RateLimited(refused, call.tenant, limits);
    }
    concurrency.emplace(context.limiter, call.tenant);
    const LimitDecision decision = co_await TakeBuckets(
        context, redis, call.tenant, limits, static_cast<double>(routing_request.prompt_tokens));
    if (!decision.allowed) {
      context.metrics.OnRateLimited(call.tenant, decision.limit);
      co_return RateLimited(decision, call.tenant, limits);
    }
  }

  // Admission.
  absl::StatusOr<AdmissionGate::Ticket> ticket = co_await context.admission.Admit(
      call.tenant, tenant != nullptr ? tenant->config.weight : 1.0);
  if (!ticket.ok()) {
    co_return Refuse(ticket.status(),
                     IsQueueTimeout(ticket.status()) ? "queue_timeout" : "queue_full");
  }

  // Route.
  const uint64_t hot_prefix = HotPrefixes::IdOf(routing_request.key);
  const int64_t prompt_tokens = routing_request.prompt_tokens;
  absl::StatusOr<Dispatch> dispatch = context.backends.Route(std::move(routing_request));
  if (!dispatch.ok()) co_return NotRouted(dispatch.status(), context.backends, call.model);
  RoutedRequest routed(context.backends, call.id);
  routed.Dispatched();
  context.hot_prefixes.Record(hot_prefix, prompt_tokens);
  call.dispatched = true;
  call.target = dispatch->target;
  call.reason = dispatch->reason;
  call.predicted_cached_tokens = dispatch->predicted_cached_tokens;
  co_return Admitted{.dispatch = std::move(*dispatch),
                     .tenant = tenant,
                     .body = std::move(*body),
                     .routed = std::move(routed),
                     .concurrency = std::move(concurrency),
                     .ticket = std::move(*ticket)};
}

}  // namespace warmroute::gateway
