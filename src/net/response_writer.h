// What an HTTP handler sees: the request, parsed and with its whole body, and a ResponseWriter
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

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace warmroute::net {

// All network code runs on io_contexts with typed executors (cheaper than any_io_executor).
using Executor = boost::asio::io_context::executor_type;
template <typename T>
using Task = boost::asio::awaitable<T, Executor>;

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// Spare capacity HttpServer leaves after a non-empty request body (body.capacity() - body.size()
// at least this): a parser that reads past the end of its input (simdjson) parses it in place.
inline constexpr size_t kBodySpareCapacity = 64;

struct HttpRequest {
  std::string method;   // "GET", "POST", ... as sent
  std::string target;   // the request target as sent: path and query
  std::string path;     // target without the query string
  HttpHeaders headers;  // in the order received
  std::string body;
  bool keep_alive = true;
  bool http10 = false;  // an HTTP/1.0 client: no chunked responses

  // The first header called `name` (case-insensitive), or an empty view.
  std::string_view Header(std::string_view name) const;
  // The value of a field that may appear once (RFC 9110 5.3), such as Authorization: the one
  // header called `name`, an empty view when there is none, InvalidArgument (400) naming the
  // field when there are several (which of them counts is where a proxy in front and the
  // gateway could disagree).
  absl::StatusOr<std::string_view> SingleHeader(std::string_view name) const;
};

// True for the headers that concern one connection only (RFC 9110 §7.6.1: Connection,
// Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade, Proxy-Connection): a proxy never forwards
// them. Case-insensitive.
bool IsHopByHopHeader(std::string_view name);

// Header names compare case-insensitively (RFC 9110 5.1): ASCII folding, inline (not the locale's
// tolower, a library call per character; names are compared on every request's path).
inline bool HeaderNameIs(std::string_view name, std::string_view expected) {
  if (name.size() != expected.size()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char a = name[i] >= 'A' && name[i] <= 'Z' ? static_cast<char>(name[i] + 32) : name[i];
    const char b = expected[i] >= 'A' && expected[i] <= 'Z' ? static_cast<char>(expected[i] + 32)
                                                            : expected[i];
    if (a != b) return false;
  }
  return true;
}

struct ResponseHead {
  int status = 200;
  std::string content_type = "application/json";
  HttpHeaders headers;  // extra headers (no Content-Length / Transfer-Encoding / Connection)
};

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

  // Replies with net/openai_error.h's HTTP status and JSON body for `status`.
  // REQUIRES: !status.ok(), !started().
  Task<absl::Status> ReplyError(const absl::Status& status);
};

// Answers 405 Method Not Allowed: an OpenAI error body whose type and code are a 405's, and the
// Allow header RFC 9110 asks for (`allow`: the methods the request's path takes, "GET, HEAD").
Task<void> ReplyMethodNotAllowed(ResponseWriter& writer, const HttpRequest& request,
                                 std::string allow);

}  // namespace warmroute::net
