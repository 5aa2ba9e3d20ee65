#include "gateway/proxy/upstream_attempt.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "gateway/proxy/engine_answer.h"

namespace warmroute::gateway {
namespace {

// The longest wait for each piece of an error body (idle_stream if shorter). Engines send an
// error whole with its head; one whose body stalls is not worth a generation's patience.
constexpr std::chrono::milliseconds kErrorBodyWait{1000};

// An error body, read up to `limit` bytes (the rest is left unread).
struct ErrorBody {
  std::string bytes;
  bool complete = false;  // the whole body
  absl::Status status;    // how reading it failed (not for a body over the limit)
};

// An event stream is not read at all: an engine may keep it open for ever.
net::Task<ErrorBody> ReadErrorBody(net::UpstreamExchange& exchange, bool event_stream,
                                   size_t limit) {
  ErrorBody out;
  if (event_stream) co_return out;
  for (;;) {
    absl::StatusOr<std::string_view> piece = co_await exchange.ReadSome();
    if (!piece.ok()) {
      out.status = piece.status();
      co_return out;
    }
    if (piece->empty()) {
      out.complete = true;
      co_return out;
    }
    const size_t room = limit - out.bytes.size();
    out.bytes.append(piece->substr(0, room));
    if (piece->size() > room) co_return out;
  }
}

}  // namespace

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
  const HeadVerdict verdict = JudgeStatus(status);
  if (verdict == HeadVerdict::kInvalid) {
    // Nothing a client may be given (its connection is closed with the exchange).
    attempt.error = absl::UnavailableError(InvalidStatusMessage(backend, status));
    attempt.error_http = 502;
    attempt.retry = true;
    co_return attempt;
  }
  if (verdict == HeadVerdict::kRelay && status == 200 &&
      IsEventStream(exchange.head().content_type)) {
    attempt.backend_ok = true;
    attempt.stream = true;
    attempt.exchange = std::move(*started);
    co_return attempt;
  }
  // Read whole before any byte is relayed: a body that breaks off can still go elsewhere.
  net::UpstreamResponseHead head = exchange.TakeHead();
  net::ResponseHead reply{.status = status,
                          .content_type = std::move(head.content_type),
                          .headers = std::move(head.headers)};
  absl::Status read;
  if (status >= 400) {
    exchange.set_idle_stream(std::min(timeouts.idle_stream, kErrorBodyWait));
    ErrorBody error =
        co_await ReadErrorBody(exchange, IsEventStream(reply.content_type), limits.max_error_bytes);
    read = error.status;
    attempt.body = std::move(error.bytes);
    ShapeEngineError(backend, error.complete, reply, attempt.body);
  } else {
    absl::StatusOr<std::string> body = co_await exchange.ReadAll(limits.max_response_bytes);
    read = body.status();
    if (body.ok()) attempt.body = std::move(*body);
  }
  if (verdict == HeadVerdict::kFailed) {  // whatever its body did
    attempt.reply = std::move(reply);
    attempt.error = absl::UnavailableError(absl::StrCat("backend ", name, " answered ", status));
    attempt.retry = true;
    co_return attempt;
  }
  if (read.ok()) {
    attempt.backend_ok = true;
    attempt.reply = std::move(reply);
    attempt.exchange = std::move(*started);
    co_return attempt;
  }
  attempt.body.clear();
  const std::string why(read.message());
  switch (read.code()) {
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

}  // namespace warmroute::gateway
