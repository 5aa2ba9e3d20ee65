#include "gateway/proxy/forward.h"

#include <spdlog/spdlog.h>

#include <boost/asio/this_coro.hpp>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gateway/fleet/rank_targets.h"
#include "gateway/proxy/forwarding.h"
#include "gateway/proxy/response_ids.h"

namespace warmroute::gateway {
namespace {

// The head of an SSE stream to relay. Every member given: the default Content-Type would be a
// string built only to be replaced.
net::ResponseHead StreamHead(net::UpstreamExchange& exchange) {
  net::UpstreamResponseHead upstream = exchange.TakeHead();
  return net::ResponseHead{.status = upstream.status,
                           .content_type = std::move(upstream.content_type),
                           .headers = std::move(upstream.headers)};
}

// A client's streamed body as it is sent upstream, noting whether the client failed it (closed,
// stalled, malformed, over the limit): that is no failure of the backend's.
class WatchedBody final : public net::BodyReader {
 public:
  explicit WatchedBody(net::BodyReader& body) : body_(body) {}
  net::Task<absl::StatusOr<std::string_view>> ReadSome() override {
    absl::StatusOr<std::string_view> piece = co_await body_.ReadSome();
    if (!piece.ok()) failed_ = true;
    co_return piece;
  }
  bool done() const override { return body_.done(); }
  bool failed() const { return failed_; }

 private:
  net::BodyReader& body_;
  bool failed_ = false;
};

}  // namespace

net::Response FailureResponse(Attempt attempt) {
  if (attempt.reply) {  // the engine's own 5xx (engine_answer.h: its body maybe wrapped)
    return net::Response{.head = std::move(*attempt.reply), .body = std::move(attempt.body)};
  }
  if (attempt.error_http != 0) return net::ErrorResponse(attempt.error, attempt.error_http);
  if (attempt.error.code() == absl::StatusCode::kDeadlineExceeded) {
    return net::ErrorResponse(attempt.error);
  }
  return net::ErrorResponse(absl::UnavailableError(
      absl::StrCat("no backend could take the request: ", attempt.error.message())));
}

net::Task<Forwarded> Forward(const ProxyContext& context, const ProxySettings& settings,
                             UpstreamPools& pools, Rng& ids, Admitted& admitted,
                             net::HttpRequest& request, Call& call) {
  // The client's headers are not read past here: filtered in place and sent upstream.
  KeepForwardedHeaders(request.headers, /*strip_credentials=*/admitted.tenant != nullptr);
  // A rank's target names its rank upstream in place of the client's (rank_targets.h).
  const std::optional<std::string> client_rank = DataParallelRankOf(request.headers);
  const AttemptLimits limits{.max_response_bytes = settings.max_response_bytes};
  Attempt attempt;
  std::string response_id;
  std::optional<WatchedBody> streamed;  // an upload streamed as it arrives
  if (request.body_reader != nullptr) streamed.emplace(*request.body_reader);
  for (;;) {
    response_id.clear();
    if (admitted.body.issues_response_ids() && TakesResponseIds(call.target->kind)) {
      response_id = NewResponseId(call.target->name, ids);  // each backend its own
    }
    SetDataParallelRank(request.headers, call.target->dp_rank, client_rank);
    net::UpstreamRequest upstream{.method = request.method,
                                  .target = request.target,
                                  .headers = &request.headers,
                                  .body = admitted.body.For(call.target->kind, response_id),
                                  .body_stream = streamed ? &*streamed : nullptr};
    attempt = co_await TryBackend(pools.For(*call.target), upstream, settings.timeouts,
                                  call.target->name, limits);
    context.backends.OnUpstreamResult(call.target->id,
                                      attempt.backend_ok || (streamed && streamed->failed()));
    if (attempt.exchange) break;
    spdlog::debug("request {}: backend {} failed: {}", call.id, call.target->name,
                  std::string(attempt.error.message()));
    if (!attempt.retry || call.retries >= settings.retries) break;
    // A streamed body is spent as it is sent: another backend can be tried only when nothing
    // reached this one.
    if (streamed && !net::ConnectFailed(attempt.error)) break;
    std::optional<Dispatch> next = context.backends.Reroute(call.id);
    if (!next) {
      admitted.routed.Forget();  // the Router failed it: no alternate left
      break;
    }
    context.metrics.OnRetry(call.target->name);
    admitted.routed.CommitInsertSoon(co_await boost::asio::this_coro::executor);
    ++call.retries;
    call.target = next->target;
    call.reason = next->reason;
    call.predicted_cached_tokens = next->predicted_cached_tokens;
  }

  Forwarded out;
  if (!attempt.exchange) {
    admitted.routed.Failed();
    call.error = std::string(attempt.error.message());
    out.response = FailureResponse(std::move(attempt));
  } else if (attempt.stream) {
    out.response.head = StreamHead(*attempt.exchange);
    out.exchange = std::move(attempt.exchange);
    out.stream = true;
  } else {  // read whole by TryBackend
    out.response.head = std::move(*attempt.reply);
    out.response.body = std::move(attempt.body);
    out.exchange = std::move(attempt.exchange);
  }
  co_return out;
}

}  // namespace warmroute::gateway
