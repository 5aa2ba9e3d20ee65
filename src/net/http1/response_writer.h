// How an HTTP handler answers (the request it gets is net/http1/http_request.h): a ResponseWriter,
// through which it answers either with one complete response or with a chunked stream (e.g.
// Server-Sent Events: StartStream, one WriteChunk per event batch, FinishStream).
//
// Usage (a handler coroutine):
//   Task<void> Handle(HttpRequest& request, ResponseWriter& writer) {
//     if (request.path != "/v1/models") {
//       co_await writer.ReplyError(absl::NotFoundError("no such route"));
//       co_return;
//     }
//     ResponseHead head;
//     head.content_type = "text/event-stream";
//     co_await writer.StartStream(std::move(head));
//     co_await writer.WriteChunk("data: {}\n\n");
//     co_await writer.FinishStream();
//   }
//
// Client disconnects: when the peer closes its connection while a handler runs, the server
// cancels the handler coroutine (its pending co_await completes with operation_aborted, which
// use_awaitable throws as boost::system::system_error). Handlers therefore release what they hold
// with RAII (destructors run as the exception unwinds the coroutine).
//
// Thread-safety: a ResponseWriter belongs to its connection; use it only from the handler
// coroutine it was given to (on the server's io_context thread).
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "net/http1/http_request.h"
#include "net/http1/response.h"
#include "net/task.h"

namespace warmroute::net {

// A failed write leaves the connection to be closed by the server once the handler returns, so a
// handler with nothing else to do after a reply discards the status: `(void)co_await
// writer.Reply(...)` (the cast is needed: clang diagnoses a dropped [[nodiscard]] co_await result).
class ResponseWriter {
 public:
  ResponseWriter() = default;
  ResponseWriter(const ResponseWriter&) = delete;
  ResponseWriter& operator=(const ResponseWriter&) = delete;
  virtual ~ResponseWriter() = default;

  // Sends a complete response with `body`. REQUIRES: !started().
  // Returns Unavailable when the client has gone away.
  virtual Task<absl::Status> Reply(ResponseHead head, std::string body) = 0;

  // Sends the head of a chunked response. REQUIRES: !started().
  virtual Task<absl::Status> StartStream(ResponseHead head) = 0;

  // Sends `data` as one chunk, flushed to the socket when this completes; empty `data` sends
  // nothing. REQUIRES: StartStream succeeded. Unavailable when the client has gone away.
  virtual Task<absl::Status> WriteChunk(std::string_view data) = 0;

  // Ends the chunked body. REQUIRES: StartStream succeeded.
  virtual Task<absl::Status> FinishStream() = 0;

  // True once a response head was sent (or a send was attempted).
  virtual bool started() const = 0;

  // Cuts the connection at once, without ending a chunked body: the client sees the response
  // break off (a proxy's upstream died mid-stream). Later writes fail.
  virtual void Abort() = 0;

  // Sends `response`. REQUIRES: !started().
  Task<absl::Status> Reply(Response response) {
    return Reply(std::move(response.head), std::move(response.body));
  }

  // Replies with ErrorResponse(status). REQUIRES: !status.ok(), !started().
  Task<absl::Status> ReplyError(const absl::Status& status);
};

// Answers 405 Method Not Allowed: an OpenAI error body whose type and code are a 405's, and the
// Allow header RFC 9110 asks for (`allow`: the methods the request's path takes, "GET, HEAD").
Task<void> ReplyMethodNotAllowed(ResponseWriter& writer, const HttpRequest& request,
                                 std::string allow);

}  // namespace warmroute::net
