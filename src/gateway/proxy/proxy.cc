#include "gateway/proxy/proxy.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "common/status.h"
#include "gateway/proxy/forwarding.h"
#include "gateway/proxy/upstream_attempt.h"
#include "net/openai_error.h"
#include "net/usage_tap.h"

namespace warmroute::gateway {

// The server leaves room after a request body for the JSON parser to read past its end.
static_assert(net::kBodySpareCapacity >= request::kParsePadding);

namespace {

namespace asio = boost::asio;

constexpr size_t kKeptParseBytes = size_t{1} << 20;  // see the per-thread parse object

// What one request did, for the access log and metrics; filled as it goes.
struct Call {
  uint64_t id = 0;
  TimePoint start{};
  std::string model;
  bool stream = false;
  std::shared_ptr<const BackendTarget> target;
  routing::Reason reason = routing::Reason::kLeastLoad;
  bool dispatched = false;
  int64_t predicted_cached_tokens = 0;
  int retries = 0;
  int status = 0;
  std::optional<TimePoint> first_byte;
  std::optional<net::Usage> usage;
  std::string error;
  std::string rejection;  // metric label when refused before dispatch
  std::string tenant;     // with tenancy
  std::string prompt;     // observability.log_prompts only
  std::optional<int64_t> retry_after_s;  // a 429 from a rate limit
};

// Holds one of a tenant's concurrent-request slots until the request ends.
class ConcurrencySlot {
 public:
  ConcurrencySlot(LocalRateLimiter* limiter, std::string tenant)
      : limiter_(limiter), tenant_(std::move(tenant)) {}
  ConcurrencySlot(const ConcurrencySlot&) = delete;
  ConcurrencySlot& operator=(const ConcurrencySlot&) = delete;
  ~ConcurrencySlot() { limiter_->Release(tenant_); }

 private:
  LocalRateLimiter* limiter_;
  std::string tenant_;
};

// Keeps the Router's accounting right however the request ends: a request that neither
// finished nor was failed explicitly (e.g. the client left and the handler was cancelled) is
// failed when this goes out of scope.
class RouterGuard {
 public:
  RouterGuard(Backends& backends, uint64_t id) : backends_(backends), id_(id) {}
  ~RouterGuard() {
    if (active_) backends_.OnFailed(id_);
  }
  void Dispatched() { active_ = true; }
  void Finished(std::optional<int64_t> cached_tokens) {
    if (active_) backends_.OnFinished(id_, cached_tokens);
    active_ = false;
  }
  void Failed() {
    if (active_) backends_.OnFailed(id_);
    active_ = false;
  }
  // The Router already failed it (no alternate was left).
  void Forget() { active_ = false; }

 private:
  Backends& backends_;
  uint64_t id_;
  bool active_ = false;
};

// Records the request in metrics and the access log when it ends, however it ends (a cancelled
// handler — the client went away — is logged with nginx's 499).
class Recorder {
 public:
  Recorder(const ProxyShared& shared, const Call& call, const net::HttpRequest& request)
      : shared_(shared), call_(call), request_(request) {}
  ~Recorder() {
    const TimePoint now = shared_.clock->Now();
    const int status = call_.status != 0 ? call_.status : 499;
    const std::string_view backend = call_.target ? std::string_view(call_.target->name) : "";
    const std::string_view reason =
        call_.dispatched ? routing::ReasonName(call_.reason) : std::string_view();
    std::optional<double> ttft_s;
    if (call_.first_byte) ttft_s = ToSeconds(*call_.first_byte - call_.start);
    const double e2e_s = ToSeconds(now - call_.start);
    std::optional<int64_t> prompt_tokens;
    std::optional<int64_t> cached_tokens;
    if (call_.usage) {
      prompt_tokens = call_.usage->prompt_tokens;
      cached_tokens = call_.usage->cached_tokens;
    }
    if (!call_.rejection.empty()) shared_.metrics->OnRejected(call_.rejection);
    shared_.metrics->OnRequest({.backend = backend,
                                .status = status,
                                .reason = reason,
                                .tenant = call_.tenant,
                                .ttft_s = ttft_s,
                                .e2e_s = e2e_s,
                                .retries = call_.retries,
                                .prompt_tokens = prompt_tokens,
                                .predicted_cached_tokens = call_.predicted_cached_tokens,
                                .reported_cached_tokens = cached_tokens});
    if (!shared_.access_log->enabled()) return;
    std::optional<double> ttft_ms;
    if (ttft_s) ttft_ms = *ttft_s * 1e3;
    shared_.access_log->Write({.id = call_.id,
                               .method = request_.method,
                               .path = request_.path,
                               .model = call_.model,
                               .stream = call_.stream,
                               .status = status,
                               .backend = backend,
                               .reason = reason,
                               .prompt_tokens = prompt_tokens,
                               .predicted_cached_tokens = call_.predicted_cached_tokens,
                               .cached_tokens = cached_tokens,
                               .ttft_ms = ttft_ms,
                               .e2e_ms = e2e_s * 1e3,
                               .retries = call_.retries,
                               .error = call_.error,
                               .tenant = call_.tenant,
                               .prompt = call_.prompt});
  }

 private:
  const ProxyShared& shared_;
  const Call& call_;
  const net::HttpRequest& request_;
};

// The head of an SSE stream to relay. Every member given: the default Content-Type would be a
// string built only to be replaced.
net::ResponseHead StreamHead(net::UpstreamExchange& exchange) {
  net::UpstreamResponseHead upstream = exchange.TakeHead();
  return net::ResponseHead{.status = upstream.status,
                           .content_type = std::move(upstream.content_type),
                           .headers = std::move(upstream.headers)};
}

// The SSE event that ends a stream whose upstream failed: an OpenAI-style error object.
std::string StreamErrorEvent(const absl::Status& status) {
  const net::HttpError error = net::ToHttpError(status);
  return absl::StrCat("data: ", error.body, "\n\n");
}

}  // namespace

Proxy::Proxy(ProxyShared shared, std::shared_ptr<const ProxySettings> settings,
             net::Executor executor)
    : shared_(shared), executor_(executor) {
  SetSettings(std::move(settings));
}

void Proxy::SetSettings(std::shared_ptr<const ProxySettings> settings) {
  const bool redis_changed = !settings_ || settings_->redis_url != settings->redis_url ||
                             settings_->redis_timeout != settings->redis_timeout;
  settings_ = std::move(settings);
  if (!redis_changed) return;
  redis_.reset();
  if (settings_->redis_url.empty()) return;
  absl::StatusOr<net::RedisEndpoint> endpoint = net::ParseRedisUrl(settings_->redis_url);
  if (!endpoint.ok()) return;  // the config validator refused it already
  RedisRateStoreOptions options;
  options.endpoint = *endpoint;
  options.command_timeout = settings_->redis_timeout;
  options.connect_timeout = std::max(settings_->redis_timeout, std::chrono::milliseconds(100));
  redis_ = std::make_unique<RedisRateStore>(executor_, options, *shared_.clock);
}

void Proxy::CommitInsertSoon(uint64_t request_id) {
  // Posted: it runs on this thread as soon as the handler first waits — once the request has
  // been written upstream (or is waiting to connect) — so the insert and its evictions are not
  // on the request's path. Decisions made in the microseconds between (by handlers queued
  // before it) do not see this one chain yet: they predict as if it were not cached.
  asio::post(executor_, [backends = shared_.backends, request_id] {
    backends->CommitInsert(request_id);
  });
}

net::Task<LimitDecision> Proxy::TakeBuckets(const std::string& tenant, const TenantLimits& limits,
                                            double prompt_tokens) {
  if (redis_) {
    absl::StatusOr<LimitDecision> cluster = co_await redis_->Take(tenant, limits, prompt_tokens);
    if (cluster.ok()) {
      shared_.metrics->OnRedisResult(true);
      co_return *cluster;
    }
    // The client left while waiting (Cancelled): its answer no longer matters, and Redis did
    // not fail. Decided locally without counting a fallback.
    if (cluster.status().code() == absl::StatusCode::kCancelled) {
      co_return shared_.limiter->Take(tenant, limits, prompt_tokens);
    }
    // Unavailable (down, slow, backing off): the store logs the transition once; every
    // decision taken locally meanwhile is counted.
    shared_.metrics->OnRedisResult(false);
  }
  co_return shared_.limiter->Take(tenant, limits, prompt_tokens);
}

net::UpstreamPool& Proxy::Pool(const BackendTarget& target) {
  auto it = pools_.find(target.address);
  if (it != pools_.end() && it->second->tls_context() != target.tls_context.get()) {
    pools_.erase(it);  // replaced at the same address with other TLS settings
    it = pools_.end();
  }
  if (it == pools_.end()) {
    // A new address: first forget the pools of backends that are gone (removed, or replaced at
    // another address), closing their idle connections. Exchanges still running on one of them
    // keep what they need (http_client.h) and close their connection when done.
    std::vector<std::string> present;
    for (const auto& t : shared_.backends->Targets()) present.push_back(t->address);
    for (auto p = pools_.begin(); p != pools_.end();) {
      if (std::find(present.begin(), present.end(), p->first) == present.end()) {
        pools_.erase(p++);
      } else {
        ++p;
      }
    }
    net::PoolOptions options;
    options.tls = target.tls_context;
    options.tls_server_name = target.tls.server_name;
    it = pools_
             .emplace(target.address, std::make_unique<net::UpstreamPool>(
                                          executor_, target.host, target.port, options))
             .first;
  }
  return *it->second;
}

net::Task<void> Proxy::Handle(request::Endpoint endpoint, net::HttpRequest& request,
                              net::ResponseWriter& writer) {
  const std::shared_ptr<const ProxySettings> settings = settings_;
  Backends& backends = *shared_.backends;
  Call call;
  call.id = shared_.next_request_id->fetch_add(1, std::memory_order_relaxed);
  call.start = shared_.clock->Now();
  Recorder recorder(shared_, call, request);
  RouterGuard guard(backends, call.id);

  // Everything up to a response head: an error here is answered with its status.
  absl::Status refused = absl::OkStatus();
  int refused_http = 0;  // the HTTP status of `refused` when not its code's own
  const Tenants* tenants =
      settings->tenants && settings->tenants->enabled() ? settings->tenants.get() : nullptr;
  const Tenant* tenant = nullptr;
  std::optional<ConcurrencySlot> concurrency;
  std::optional<AdmissionGate::Ticket> ticket;
  std::optional<std::string> edited_body;
  std::optional<std::string> salted_body;  // edited_body (or the body) with the tenant's salt
  do {
    if (tenants != nullptr) {
      absl::StatusOr<std::string_view> credentials = request.SingleHeader("Authorization");
      if (!credentials.ok()) {
        refused = credentials.status();
        call.rejection = "bad_request";
        break;
      }
      absl::StatusOr<const Tenant*> who = tenants->Authenticate(*credentials);
      if (!who.ok()) {
        refused = who.status();
        call.rejection = "unauthenticated";
        break;
      }
      tenant = *who;
      call.tenant = tenant->config.name;
    }
    routing::RoutingRequest routing_request;
    {
      // The parsed request is read only in this block, which never suspends: it lives in an
      // object per thread whose strings keep their memory from one request to the next (no
      // allocation for the prompt's text), which another request on this thread reuses as soon
      // as this one waits. A body over kKeptParseBytes gives its memory back at the end of the
      // block, so a thread keeps at most about that much (not the body limit) between requests.
      thread_local request::InferenceRequest parsed;
      refused = request::ParseInferenceRequestInto(endpoint, request.body, parsed);
      if (!refused.ok()) {  // parsed in place (kBodySpareCapacity)
        call.rejection = "bad_request";
        // A compressed body cannot parse: say why (only here, off the path of valid requests).
        const std::string_view encoding = request.Header("content-encoding");
        if (!encoding.empty() && !net::HeaderNameIs(encoding, "identity")) {
          refused = absl::InvalidArgumentError(
              absl::StrCat("Content-Encoding '", AbslView(encoding),
                           "' is not supported: send the request body uncompressed"));
          refused_http = 415;
        }
      } else {
        call.model = parsed.model;
        call.stream = parsed.stream;
        if (settings->log_prompts && !parsed.has_token_prompt) {
          call.prompt = request::RenderPrompt(parsed);
        }
        if (tenant != nullptr && !tenant->AllowsModel(parsed.model)) {
          refused = WithParam(absl::NotFoundError(absl::StrCat(
                                  "The model `", parsed.model,
                                  "` does not exist or you do not have access to it.")),
                              "model");
          call.rejection = "model_not_allowed";
        } else {
          routing_request.id = call.id;
          routing_request.model = parsed.model;
          if (tenant != nullptr) {
            // The client's cache_salt is replaced upstream by the tenant's: the key follows suit.
            parsed.cache_salt.clear();
            routing_request.tenant = tenant->cache_domain;
            routing_request.pools = tenant->config.pools;
          } else {
            routing_request.tenant = std::string(request.Header(kTenantHeader));
          }
          routing_request.key =
              routing::MakePrefixKey(parsed, routing_request.tenant, settings->key);
          routing_request.prompt_tokens = routing_request.key.prompt_tokens;
          routing_request.max_tokens = parsed.max_tokens.value_or(16);
          routing_request.stream = parsed.stream;
          edited_body = WithIncludeUsage(parsed, request.body);
        }
      }
      if (request.body.size() > kKeptParseBytes) request::ReleaseInferenceRequest(parsed);
    }
    if (!refused.ok()) break;

    if (tenant != nullptr && tenant->config.limits.any()) {
      const TenantLimits& limits = tenant->config.limits;
      LimitDecision decision;
      if (!shared_.limiter->AcquireConcurrent(call.tenant, limits)) {
        decision = {.allowed = false, .retry_after = std::chrono::seconds(1), .limit = "concurrent"};
      } else {
        concurrency.emplace(shared_.limiter, call.tenant);
        const double prompt_tokens = static_cast<double>(routing_request.prompt_tokens);
        decision = co_await TakeBuckets(call.tenant, limits, prompt_tokens);
      }
      if (!decision.allowed) {
        concurrency.reset();
        call.retry_after_s = RetryAfterSeconds(decision.retry_after);
        refused = absl::ResourceExhaustedError(absl::StrCat(
            "Rate limit reached for tenant ", call.tenant, " on ", decision.limit,
            decision.limit == "concurrent"
                ? absl::StrCat(" (", limits.max_concurrent, " requests at once)")
                : std::string(),
            ". Please try again in ", *call.retry_after_s, "s."));
        call.rejection = "rate_limited";
        shared_.metrics->OnRateLimited(call.tenant, decision.limit);
        break;
      }
    }

    const std::string queue = call.tenant;
    const double weight = tenant != nullptr ? tenant->config.weight : 1.0;
    absl::StatusOr<AdmissionGate::Ticket> admitted =
        co_await shared_.admission->Admit(queue, weight);
    if (!admitted.ok()) {
      refused = admitted.status();
      call.rejection = IsQueueTimeout(refused) ? "queue_timeout" : "queue_full";
      break;
    }
    ticket.emplace(std::move(*admitted));

    const uint64_t hot_prefix = HotPrefixes::IdOf(routing_request.key);
    const int64_t prompt_tokens = routing_request.prompt_tokens;
    absl::StatusOr<Dispatch> dispatch = backends.Route(std::move(routing_request));
    if (!dispatch.ok()) {
      if (backends.Targets().empty()) {
        refused = absl::UnavailableError("the gateway has no backends (add some to the config "
                                         "or with POST /admin/backends)");
        call.rejection = "no_backend";
      } else if (dispatch.status().code() == absl::StatusCode::kNotFound) {
        refused = WithParam(
            absl::NotFoundError(absl::StrCat("The model `", call.model, "` does not exist.")),
            "model");
        call.rejection = "unknown_model";
      } else {
        refused =
            absl::UnavailableError(absl::StrCat("no healthy backend can serve model `", call.model,
                                                "`: ", std::string(dispatch.status().message())));
        call.rejection = "no_backend";
      }
      break;
    }
    guard.Dispatched();
    call.dispatched = true;
    CommitInsertSoon(call.id);
    shared_.hot_prefixes->Record(hot_prefix, prompt_tokens);
    call.target = dispatch->target;
    call.reason = dispatch->reason;
    call.predicted_cached_tokens = dispatch->predicted_cached_tokens;
    if (tenant != nullptr) {
      const std::string_view unsalted = edited_body ? std::string_view(*edited_body) : request.body;
      absl::StatusOr<std::string> salted = WithCacheSalt(unsalted, tenant->cache_salt_json);
      if (!salted.ok()) {
        refused = salted.status();
        call.rejection = "bad_request";
        break;
      }
      salted_body = std::move(*salted);
    }
    // The client's headers are not read past here: filtered in place and sent upstream.
    KeepForwardedHeaders(request.headers, /*strip_credentials=*/tenants != nullptr);
  } while (false);

  if (!refused.ok()) {
    call.status = refused_http != 0 ? refused_http : net::HttpStatusOf(refused.code());
    call.error = std::string(refused.message());
    if (call.retry_after_s || refused_http != 0) {
      net::HttpError error =
          refused_http != 0 ? net::ToHttpError(refused, refused_http) : net::ToHttpError(refused);
      net::ResponseHead head;
      head.status = error.status;
      if (call.retry_after_s) {
        head.headers.emplace_back("retry-after", std::to_string(*call.retry_after_s));
      }
      co_await writer.Reply(std::move(head), std::move(error.body));
      co_return;
    }
    co_await writer.ReplyError(refused);
    co_return;
  }

  // Dispatch, retrying on the decision's alternates while nothing reached the client. Engines
  // that honour cache_salt get the salted body; the others (a tenant's dedicated pool, by the
  // config's rule) the client's.
  const std::string_view unsalted_body =
      edited_body ? std::string_view(*edited_body) : request.body;
  const AttemptLimits limits{.max_response_bytes = settings->max_response_bytes};
  Attempt attempt;
  for (;;) {
    net::UpstreamPool& pool = Pool(*call.target);
    const std::string_view body = salted_body && EngineSupportsCacheSalt(call.target->kind)
                                      ? std::string_view(*salted_body)
                                      : unsalted_body;
    net::UpstreamRequest upstream{
        .method = "POST", .target = request.target, .headers = &request.headers, .body = body};
    attempt = co_await TryBackend(pool, upstream, settings->timeouts, call.target->name, limits);
    backends.OnUpstreamResult(call.target->id, attempt.backend_ok);
    if (attempt.exchange) break;
    spdlog::debug("request {}: backend {} failed: {}", call.id, call.target->name,
                  std::string(attempt.error.message()));
    if (!attempt.retry || call.retries >= settings->retries) break;
    std::optional<Dispatch> next = backends.Reroute(call.id);
    if (!next) {
      guard.Forget();  // the Router failed it: no alternate left
      break;
    }
    shared_.metrics->OnRetry(call.target->name);
    CommitInsertSoon(call.id);
    ++call.retries;
    call.target = next->target;
    call.reason = next->reason;
    call.predicted_cached_tokens = next->predicted_cached_tokens;
  }

  if (!attempt.exchange) {
    guard.Failed();
    call.error = std::string(attempt.error.message());
    if (attempt.reply) {  // the engine's own 5xx (engine_answer.h: its body maybe wrapped)
      call.status = attempt.reply->status;
      co_await writer.Reply(std::move(*attempt.reply), std::move(attempt.body));
      co_return;
    }
    net::HttpError error;
    if (attempt.error_http != 0) {
      error = net::ToHttpError(attempt.error, attempt.error_http);
    } else if (attempt.error.code() == absl::StatusCode::kDeadlineExceeded) {
      error = net::ToHttpError(attempt.error);
    } else {
      error = net::ToHttpError(absl::UnavailableError(absl::StrCat(
          "no backend could take the request: ", std::string(attempt.error.message()))));
    }
    call.status = error.status;
    net::ResponseHead head;
    head.status = error.status;
    co_await writer.Reply(std::move(head), std::move(error.body));
    co_return;
  }

  const std::unique_ptr<net::UpstreamExchange> exchange = std::move(attempt.exchange);
  net::ResponseHead head = attempt.stream ? StreamHead(*exchange) : std::move(*attempt.reply);
  if (settings->response_headers) {
    head.headers.emplace_back("x-warmroute-backend", call.target->name);
    head.headers.emplace_back("x-warmroute-reason", std::string(routing::ReasonName(call.reason)));
  }
  call.status = head.status;

  if (!attempt.stream) {  // read whole by TryBackend
    call.first_byte = shared_.clock->Now();
    if (head.status == 200) call.usage = net::ReadUsage(attempt.body);
    if (head.status < 400) {
      std::optional<int64_t> cached;
      if (call.usage) cached = call.usage->cached_tokens;
      guard.Finished(cached);
    } else {
      guard.Failed();
    }
    co_await writer.Reply(std::move(head), std::move(attempt.body));
    co_return;
  }

  // Server-Sent Events: relayed piece by piece.
  net::SseUsageTap tap(/*drop_usage_event=*/edited_body.has_value());
  absl::Status opened = co_await writer.StartStream(std::move(head));
  if (!opened.ok()) co_return;  // the client left; the guard fails the request
  for (;;) {
    absl::StatusOr<std::string_view> piece = co_await exchange->ReadSome();
    if (!piece.ok()) {
      // The upstream died mid-stream: tell the client in-band, then cut the connection.
      guard.Failed();
      call.error = std::string(piece.status().message());
      const absl::Status status = absl::UnavailableError(
          absl::StrCat("backend ", call.target->name,
                       " failed mid-stream: ", std::string(piece.status().message())));
      const std::string event = StreamErrorEvent(status);
      co_await writer.WriteChunk(event);
      writer.Abort();
      co_return;
    }
    if (piece->empty()) break;
    if (!call.first_byte) {
      call.first_byte = shared_.clock->Now();
      backends.OnFirstToken(call.id);
    }
    const std::string_view out = tap.Feed(*piece);
    if (out.empty()) continue;
    absl::Status written = co_await writer.WriteChunk(out);
    if (!written.ok()) co_return;  // the client left: the exchange closes upstream
  }
  const std::string_view rest = tap.Finish();
  if (!rest.empty()) {
    absl::Status written = co_await writer.WriteChunk(rest);
    if (!written.ok()) co_return;
  }
  call.usage = tap.usage();
  std::optional<int64_t> cached;
  if (call.usage) cached = call.usage->cached_tokens;
  guard.Finished(cached);
  co_await writer.FinishStream();
}

}  // namespace warmroute::gateway
