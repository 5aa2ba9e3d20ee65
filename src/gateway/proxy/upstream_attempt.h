// One dispatch of a routed request to one backend, up to the moment the gateway knows whether the
// client gets this backend's answer — before any byte of it reached the client, so that a failure
// can still be retried on another backend (proxy.h).
//
//   what the backend did                          result
//   connect refused/failed, reset or closed       failed, retried
//     before a response head
//   no response head within first_byte            failed, not retried (it may be working on it)
//   a head with an invalid status (101, 600+)     failed, retried; 502 if it is the last attempt
//   a 5xx head                                    failed, retried; its response (the body shaped
//                                                 by engine_answer.h) relayed if it is the last
//   200 text/event-stream                         relayed: the exchange, its body still to read
//   any other head: its body is read whole        relayed: the whole response, a 4xx's body
//                                                 shaped by engine_answer.h
//     ... the body breaks off (reset, early close,  failed, retried
//         bad chunk)
//     ... no body bytes for idle_stream            failed, not retried (it may be working on it)
//     ... more than max_response_bytes             failed, not retried (another backend would
//                                                 send as much): 502
// An error body (4xx, 5xx) is read up to max_error_bytes (what is past that is left unread),
// waiting at most 1 s (or idle_stream if shorter) for each piece: an engine sends its error whole,
// and a 5xx whose body stalls is retried without waiting idle_stream for it. An event-stream
// error body is not read at all: an engine may keep one open for ever.
//
// Usage:
//   Attempt a = co_await TryBackend(pool, request, timeouts, "r0", AttemptLimits{});
//   backends.OnUpstreamResult(id, a.backend_ok);
//   if (a.exchange) ... relay (a.stream ? the exchange's body : *a.reply and a.body) ...
//   else if (a.retry) ... the next alternate ...
//
// Thread-safety: a coroutine on the pool's thread.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "net/http1/http_client.h"

namespace warmroute::gateway {

struct Attempt {
  // Set when this backend's answer goes to the client: with `stream`, an SSE body still to relay
  // (its head too); else the response is `reply` and `body`, read whole.
  std::unique_ptr<net::UpstreamExchange> exchange;
  bool stream = false;
  std::optional<net::ResponseHead> reply;
  std::string body;
  // For Backends::OnUpstreamResult (passive health): false for a failure of the backend.
  bool backend_ok = false;
  // When `exchange` is null: why the attempt failed, whether another backend may be tried, and
  // what the client gets when no other one is: `reply` with `body` when set (the engine's 5xx),
  // else an OpenAI error of `error` with HTTP status `error_http` (0: the status code's own).
  absl::Status error;
  int error_http = 0;
  bool retry = false;
};

struct AttemptLimits {
  size_t max_response_bytes = size_t{256} << 20;  // a non-streaming body
  size_t max_error_bytes = size_t{1} << 20;       // an error body kept to relay
};

// Sends `request` to `pool`'s backend (named `backend` in messages) and reads its answer as far
// as the table above says.
net::Task<Attempt> TryBackend(net::UpstreamPool& pool, const net::UpstreamRequest& request,
                              const net::UpstreamTimeouts& timeouts, std::string_view backend,
                              const AttemptLimits& limits);

}  // namespace warmroute::gateway
