#include "router/upstream_attempt.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "router/engine_answer.h"

namespace warmroute::router {

net::Task<Attempt> TryBackend(net::UpstreamPool& pool, const net::UpstreamRequest& request,
                              const net::UpstreamTimeouts& timeouts, std::string_view backend,
                              const AttemptLimits& limits) {
  Attempt attempt;
  const absl::string_view name = AbslView(backend);
  absl::StatusOr<std::unique_ptr<net::UpstreamExchange>> started =
      co_await net::UpstreamExchange::Start(pool, request, timeouts);
  if (!started.ok()) {
    attempt.error = started.status();
    // A first-byte timeout is not retried: the engine may be working on it.
    attempt.retry = attempt.error.code() != absl::StatusCode::kDeadlineExceeded ||
                    net::ConnectFailed(attempt.error);
    co_return attempt;
  }
  net::UpstreamExchange& exchange = **started;
  const int status = exchange.head().status;
  switch (JudgeStatus(status)) {
    case HeadVerdict::kInvalid:
      // Nothing a client may be given (its connection is closed with the exchange).
      attempt.error = absl::UnavailableError(InvalidStatusMessage(backend, status));
      attempt.error_http = 502;
      attempt.retry = true;
      co_return attempt;
    case HeadVerdict::kFailed: {
      net::UpstreamResponseHead head = exchange.TakeHead();
      attempt.reply = net::ResponseHead{.status = head.status,
                                        .content_type = std::move(head.content_type),
                                        .headers = std::move(head.headers)};
      absl::StatusOr<std::string> body = co_await exchange.ReadAll(limits.max_error_bytes);
      if (body.ok()) attempt.body = std::move(*body);
      attempt.error = absl::UnavailableError(absl::StrCat("backend ", name, " answered ", status));
      attempt.retry = true;
      co_return attempt;
    }
    case HeadVerdict::kRelay:
      break;
  }
  if (status == 200 && IsEventStream(exchange.head().content_type)) {
    attempt.backend_ok = true;
    attempt.stream = true;
    attempt.exchange = std::move(*started);
    co_return attempt;
  }
  // Read whole before any byte is relayed: a body that breaks off can still go elsewhere.
  absl::StatusOr<std::string> body = co_await exchange.ReadAll(limits.max_response_bytes);
  if (body.ok()) {
    attempt.backend_ok = true;
    attempt.body = std::move(*body);
    attempt.exchange = std::move(*started);
    co_return attempt;
  }
  const std::string why(body.status().message());
  switch (body.status().code()) {
    case absl::StatusCode::kDeadlineExceeded:
      attempt.error = absl::DeadlineExceededError(
          absl::StrCat("the response of backend ", name, " stalled: ", why));
      break;
    case absl::StatusCode::kOutOfRange:
      attempt.backend_ok = true;  // a huge answer says nothing of the backend's health
      attempt.error = absl::UnavailableError(
          absl::StrCat("the response of backend ", name, " is too large: ", why));
      attempt.error_http = 502;
      break;
    default:
      attempt.error = absl::UnavailableError(
          absl::StrCat("the response of backend ", name, " broke off: ", why));
      attempt.retry = true;
  }
  co_return attempt;
}

}  // namespace warmroute::router
