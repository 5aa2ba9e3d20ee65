#include "gateway/proxy/admit.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "common/status.h"
#include "core/routing/prefix_key.h"
#include "gateway/keys/request_key.h"
#include "gateway/observability/hot_prefixes.h"
#include "gateway/observability/request_sample.h"
#include "gateway/proxy/model_field.h"
#include "gateway/proxy/multipart_field.h"
#include "gateway/proxy/normalize.h"
#include "gateway/proxy/response_ids.h"

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

// What the steps before the waits learn of a request, besides its routing request.
struct BodyFacts {
  std::optional<std::string> with_usage;  // the body with include_usage added (chat, completions)
  std::string previous_response_id;       // a Responses follow-up's
  bool response_ids = false;              // a Responses request without its own request_id
};

// Where a generation API's answer reports usage.
net::UsageFormat UsageFormatOf(request::Endpoint endpoint) {
  switch (endpoint) {
    case request::Endpoint::kResponses:
      return net::UsageFormat::kResponses;
    case request::Endpoint::kMessages:
      return net::UsageFormat::kMessages;
    default:
      return net::UsageFormat::kChat;
  }
}

// 404 for a model the tenant may not use.
Refusal ModelNotAllowed(std::string_view model) {
  return Refuse(WithParam(absl::NotFoundError(
                              absl::StrCat("The model `", AbslView(model),
                                           "` does not exist or you do not have access to it.")),
                          "model"),
                "model_not_allowed");
}

// The prefix key of `parsed` (request_key.h), noted in `call`. The precise key's cache_salt is
// the one the engine gets: the tenant's (its JSON literal without the quotes: a hex digest),
// else the client's, with the x-warmroute-tenant header folded in.
void KeyRequest(const ProxySettings& settings, std::string_view body, const Tenant* tenant,
                const request::InferenceRequest& parsed, Call& call,
                routing::RoutingRequest& routing, routing::DispatchDomain& domain) {
  std::string salt;
  if (tenant != nullptr) {
    const std::string_view json = tenant->cache_salt_json;
    if (json.size() >= 2) salt.assign(json.substr(1, json.size() - 2));
  } else {
    salt = routing::PrefixKeySalt(routing.tenant, parsed.cache_salt);
  }
  RequestKey key = MakeRequestKey(parsed, {.body = body,
                                           .tenant = routing.tenant,
                                           .precise_salt = salt,
                                           .options = &settings.key,
                                           .mode = settings.key_mode,
                                           .models = settings.models.get()});
  routing.key = std::move(key.key);
  routing.prompt_tokens = routing.key.prompt_tokens;
  domain = key.domain;
  call.key_mode = KeyModeName(key.precise);
  call.key_reason = key.reason;
}

// The normalize rules (normalize.h) applied to a prompt request's body, in place, before it is
// parsed and keyed: routing sees what the engines will see. When they changed it, `client_body`
// gets the body as the client sent it (the request sample keeps clients' bodies) and
// `call.normalized` the rules that did.
void NormalizeRequest(const ProxySettings& settings, request::Endpoint endpoint,
                      net::HttpRequest& request, Call& call, std::string& client_body) {
  if (settings.normalize == nullptr) return;
  Normalized normalized = NormalizeBody(*settings.normalize, call.tenant, endpoint, request.body);
  if (!normalized.body) return;
  size_t applied = 0;
  for (size_t i = 0; i < kNormalizeRuleCount; ++i) {
    if (normalized.applied[i]) call.normalized[applied++] = NormalizeRuleName(kNormalizeRules[i]);
  }
  client_body = std::move(request.body);
  request.body = std::move(*normalized.body);
  request.body.reserve(request.body.size() + net::kBodySpareCapacity);
}

// Parses the prompt-bearing body into `routing` (its routing request) and `facts`. The parsed
// request lives in an object per
// thread whose strings keep their memory from one request to the next (no allocation for the
// prompt's text), which another request on this thread reuses as soon as this one waits: it is
// read only here, and this never suspends. A body over kKeptParseBytes gives its memory back at
// the end, so a thread keeps at most about that much (not the body limit) between requests.
std::optional<Refusal> ParseAndKey(const ProxySettings& settings, request::Endpoint endpoint,
                                   const net::HttpRequest& request, const Tenant* tenant,
                                   Call& call, routing::RoutingRequest& routing,
                                   routing::DispatchDomain& domain, BodyFacts& facts) {
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
      refused = ModelNotAllowed(parsed.model);
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
      KeyRequest(settings, request.body, tenant, parsed, call, routing, domain);
      routing.max_tokens = parsed.max_tokens.value_or(16);
      routing.stream = parsed.stream;
      if (endpoint == request::Endpoint::kChatCompletions ||
          endpoint == request::Endpoint::kCompletions) {
        facts.with_usage = WithIncludeUsage(parsed, request.body);
      }
      if (endpoint == request::Endpoint::kResponses) {
        facts.previous_response_id = parsed.previous_response_id.value_or("");
        facts.response_ids = parsed.request_id.empty();
      }
    }
  }
  if (request.body.size() > kKeptParseBytes) request::ReleaseInferenceRequest(parsed);
  return refused;
}

// For the routes whose body only names a model: the model, checked against the tenant's; placed
// where the least work is outstanding. The prompt's size is estimated from the body (about 4
// bytes per token) for the tenant's token bucket and the load accounting.
std::optional<Refusal> ReadModel(const net::HttpRequest& request, const Tenant* tenant, Call& call,
                                 routing::RoutingRequest& routing) {
  absl::StatusOr<std::string> model = ModelOfBody(request.body);
  if (!model.ok()) return Refuse(model.status(), "bad_request");
  call.model = *model;
  if (tenant != nullptr && !tenant->AllowsModel(*model)) return ModelNotAllowed(*model);
  routing.id = call.id;
  routing.model = std::move(*model);
  if (tenant != nullptr) routing.pools = tenant->config.pools;
  routing.placement = routing::Placement::kLeastLoad;
  routing.prompt_tokens = static_cast<int64_t>(request.body.size() / 4);
  routing.max_tokens = 0;
  return std::nullopt;
}

// Reads a multipart upload's beginning (into request.body) until its `model` form field is
// complete; "" when it is not within kModelLookaheadBytes (nothing more is read). InvalidArgument
// for a body that is not multipart/form-data or ends without a model; the client's read error
// (Unavailable, OutOfRange) as it came.
net::Task<absl::StatusOr<std::string>> ReadAheadForModel(net::HttpRequest& request) {
  absl::StatusOr<std::string> boundary = MultipartBoundary(request.Header("content-type"));
  if (!boundary.ok()) co_return boundary.status();
  for (;;) {
    const FormFieldSearch found = FindFormField(request.body, *boundary, "model");
    if (found.state == FormFieldSearch::kFound) co_return found.value;
    if (found.state == FormFieldSearch::kMissing || request.body_reader->done()) {
      co_return InvalidParam("model", "the multipart body has no `model` field");
    }
    if (request.body.size() >= kModelLookaheadBytes) co_return std::string();
    absl::StatusOr<std::string_view> piece = co_await request.body_reader->ReadSome();
    if (!piece.ok()) co_return piece.status();
    request.body.append(*piece);
  }
}

// For a streamed route, before its model is known: placed where the least work is.
void StreamedRouting(const Tenant* tenant, Call& call, routing::RoutingRequest& routing) {
  routing.id = call.id;
  if (tenant != nullptr) routing.pools = tenant->config.pools;
  routing.placement = routing::Placement::kLeastLoad;
  routing.max_tokens = 0;
}

// Places a request about the stored response `response_id` (`param`: the request parameter that
// named it, for the error) on the backend that stores it, when the gateway issued the id
// (response_ids.h); another id leaves the placement as it was.
std::optional<Refusal> PinTo(const Backends& backends, std::string_view response_id,
                             std::string_view param, routing::RoutingRequest& routing) {
  const std::optional<uint64_t> name_hash = BackendHashOfResponseId(response_id);
  if (!name_hash) return std::nullopt;
  const std::optional<routing::BackendId> backend = backends.FindByNameHash(*name_hash);
  if (!backend) {
    absl::Status gone = absl::NotFoundError(absl::StrCat(
        "The response `", AbslView(response_id),
        "` was stored by a backend that is no longer in the fleet: it cannot be continued or "
        "retrieved."));
    if (!param.empty()) gone = WithParam(std::move(gone), param);
    return Refuse(std::move(gone), "response_gone");
  }
  routing.placement = routing::Placement::kPinned;
  routing.pinned = *backend;
  return std::nullopt;
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

// The refusal for a routing decision that could not be made; `response_id`: the stored response
// a pinned request is about.
Refusal NotRouted(const absl::Status& status, const Backends& backends, const std::string& model,
                  std::string_view response_id) {
  if (!response_id.empty()) {
    if (status.code() == absl::StatusCode::kNotFound) {
      return Refuse(absl::NotFoundError(absl::StrCat(
                        "The response `", AbslView(response_id),
                        "` is stored by a backend this request may not use, or that no longer "
                        "serves its model: ",
                        status.message())),
                    "response_gone");
    }
    return Refuse(absl::UnavailableError(absl::StrCat("The response `", AbslView(response_id),
                                                      "` is stored by a backend that is "
                                                      "unavailable; retry later: ",
                                                      status.message())),
                  "no_backend");
  }
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
  std::optional<net::UsageFormat> usage_format;
  routing::RoutingRequest routing;
  std::string response_id;  // a pinned request's stored response
  std::optional<UpstreamBody> body;
  std::optional<ConcurrencySlot> concurrency;
};

// Tenant → parse → models → prefix key, the body as the backends get it, and the tenant's
// concurrency slot.
// Writes `body` to the request sample (request_sample.h), stamped now.
void SampleRequest(AccessLog& sample, std::string_view body, std::string_view tenant) {
  const double now = std::chrono::duration<double>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  const std::string line = RequestSampleLine(body, tenant, now);
  if (!line.empty()) sample.WriteLine(line);
}

std::variant<Refusal, Pending> Prepare(const ProxyContext& context, const ProxySettings& settings,
                                       const RouteMatch& route, net::HttpRequest& request,
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
  BodyFacts facts;
  routing::DispatchDomain domain;
  std::optional<Refusal> refused;
  std::string_view pinned_by;  // the parameter naming the stored response
  std::string client_body;     // the body as sent, when normalize rules changed it
  switch (route.route->body) {
    case RouteBody::kPrompt:
      pending.usage_format = UsageFormatOf(route.route->endpoint);
      NormalizeRequest(settings, route.route->endpoint, request, call, client_body);
      refused = ParseAndKey(settings, route.route->endpoint, request, tenant, call, pending.routing,
                            domain, facts);
      if (!refused && context.request_sample != nullptr &&
          (route.route->endpoint == request::Endpoint::kChatCompletions ||
           route.route->endpoint == request::Endpoint::kCompletions) &&
          SampleTakes(call.id, context.sample_rate)) {
        SampleRequest(*context.request_sample, client_body.empty() ? request.body : client_body,
                      call.tenant);
      }
      // Kept by Backends until the request is routed (not here: the admit coroutine's frame
      // holds Pending, and must stay small).
      if (domain.first_block != 0) context.backends.NoteDispatchDomain(call.id, domain);
      pending.response_id = facts.previous_response_id;
      pinned_by = "previous_response_id";
      break;
    case RouteBody::kModel:
      pending.usage_format = net::UsageFormat::kChat;  // usage.prompt_tokens, as OpenAI's
      refused = ReadModel(request, tenant, call, pending.routing);
      break;
    case RouteBody::kStream:
      StreamedRouting(tenant, call, pending.routing);
      break;
    case RouteBody::kNone:
      pending.routing.id = call.id;
      if (tenant != nullptr) pending.routing.pools = tenant->config.pools;
      pending.routing.placement = routing::Placement::kLeastLoad;
      pending.routing.max_tokens = 0;
      pending.response_id = std::string(route.response_id);
      break;
  }
  if (refused) return std::move(*refused);
  if (!pending.response_id.empty()) {
    refused = PinTo(context.backends, pending.response_id, pinned_by, pending.routing);
    if (refused) return std::move(*refused);
    if (pending.routing.placement != routing::Placement::kPinned) pending.response_id.clear();
  }
  // The tenant's cache_salt goes to the generation APIs (their prompts are what engines cache).
  const bool salted = tenant != nullptr && route.route->body == RouteBody::kPrompt;
  if (route.route->body != RouteBody::kStream) {  // that body is made once read ahead
    absl::StatusOr<UpstreamBody> body = UpstreamBody::Make(
        request.body, std::move(facts.with_usage),
        salted ? std::string_view(tenant->cache_salt_json) : "", facts.response_ids);
    if (!body.ok()) return Refuse(body.status(), "bad_request");
    pending.body.emplace(std::move(*body));
  }
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

// A streamed upload's model, once read ahead ("" unknown): checked against the tenant's, and its
// body (what was read ahead, then the rest as it comes) ready to send.
std::optional<Refusal> UseStreamedModel(std::string model, const net::HttpRequest& request,
                                        Pending& pending, Call& call) {
  if (pending.tenant != nullptr && !model.empty() && !pending.tenant->AllowsModel(model)) {
    return ModelNotAllowed(model);
  }
  call.model = model;
  pending.routing.model = std::move(model);
  pending.body.emplace(*UpstreamBody::Make(request.body, std::nullopt, ""));  // no edit: no error
  return std::nullopt;
}

// ReadAheadForModel, then UseStreamedModel, on the pending request in `prepared`; false when
// that became a refusal. (A coroutine of its own, whose frame is made only for streamed routes:
// the admit stage's stays small.)
net::Task<bool> ReadStreamedModel(net::HttpRequest& request,
                                  std::variant<Refusal, Pending>& prepared, Call& call) {
  absl::StatusOr<std::string> model = co_await ReadAheadForModel(request);
  std::optional<Refusal> refused =
      model.ok() ? UseStreamedModel(std::move(*model), request, std::get<Pending>(prepared), call)
                 : Refuse(model.status(), "bad_request");
  if (!refused) co_return true;
  prepared = std::move(*refused);
  co_return false;
}

// The routing decision for `pending`, which holds `ticket`; takes what `pending` holds. A prompt
// request of `endpoint` (prompt: the route's body is one) is counted by the prewarmer, and kept
// as its prefix's sample when the prewarmer asks for one (now and then, not per request).
AdmitResult RouteAdmitted(const ProxyContext& context, Pending& pending,
                          AdmissionGate::Ticket ticket, Call& call, bool prompt,
                          request::Endpoint endpoint) {
  const uint64_t hot_prefix = HotPrefixes::IdOf(pending.routing.key);
  const int64_t prompt_tokens = pending.routing.prompt_tokens;
  std::optional<routing::RoutingRequest> sample;
  if (prompt && context.prewarmer != nullptr && context.prewarmer->Count(pending.routing)) {
    sample = pending.routing;
  }
  absl::StatusOr<Dispatch> dispatch = context.backends.Route(std::move(pending.routing));
  if (!dispatch.ok()) {
    return NotRouted(dispatch.status(), context.backends, call.model, pending.response_id);
  }
  if (sample) context.prewarmer->Keep(*sample, endpoint, pending.body->For(dispatch->target->kind));
  RoutedRequest routed(context.backends, call.id);
  routed.Dispatched();
  context.hot_prefixes.Record(hot_prefix, prompt_tokens, dispatch->target->id);
  call.dispatched = true;
  call.target = dispatch->target;
  call.reason = dispatch->reason;
  call.predicted_cached_tokens = dispatch->predicted_cached_tokens;
  return Admitted{.dispatch = std::move(*dispatch),
                  .tenant = pending.tenant,
                  .body = std::move(*pending.body),
                  .usage_format = pending.usage_format,
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
                             const std::unique_ptr<RedisRateStore>& redis,
                             const RouteMatch& route, net::HttpRequest& request, Call& call) {
  // The coroutine keeps only what crosses its two waits (its frame stays small enough for Asio's
  // per-thread frame recycling); the steps themselves are plain functions.
  std::variant<Refusal, Pending> prepared = Prepare(context, settings, route, request, call);
  if (Refusal* refusal = std::get_if<Refusal>(&prepared)) co_return std::move(*refusal);
  Pending& pending = std::get<Pending>(prepared);

  // A streamed upload's model, read from its beginning (after the tenant was authenticated).
  if (route.route->body == RouteBody::kStream &&
      !co_await ReadStreamedModel(request, prepared, call)) {
    co_return std::move(std::get<Refusal>(prepared));
  }

  // Limits: the tenant's token buckets (its concurrency slot was taken by Prepare).
  if (pending.concurrency) {
    const TenantLimits& limits = pending.tenant->config.limits;
    const LimitDecision decision =
        co_await TakeBuckets(context, redis.get(), call.tenant, limits,
                             static_cast<double>(pending.routing.prompt_tokens));
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

  co_return RouteAdmitted(context, pending, std::move(ticket), call,
                          route.route->body == RouteBody::kPrompt, route.route->endpoint);
}

}  // namespace warmroute::gateway
