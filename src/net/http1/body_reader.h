// A request body read as it arrives, for a handler that passes it on without holding it whole
// (HttpServerOptions::stream_body: an audio upload, say) — and what the upstream client sends a
// streamed body from (UpstreamRequest::body_stream).
//
// Usage (a handler):
//   for (;;) {
//     absl::StatusOr<std::string_view> piece = co_await request.body_reader->ReadSome();
//     if (!piece.ok()) ... the client's body failed ...;
//     if (piece->empty()) break;   // the end of the body
//     ... use *piece before the next call ...
//   }
//
// Thread-safety: belongs to its request; use on the connection's thread.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "net/task.h"

namespace warmroute::net {

class BodyReader {
 public:
  BodyReader() = default;
  BodyReader(const BodyReader&) = delete;
  BodyReader& operator=(const BodyReader&) = delete;
  virtual ~BodyReader() = default;

  // The next piece of the body (chunked transfer coding removed), valid until the next call; an
  // empty view at the end of the body. Unavailable: the client closed, reset or sent nothing for
  // the body timeout; InvalidArgument: a malformed body; OutOfRange: a body over the limit.
  virtual Task<absl::StatusOr<std::string_view>> ReadSome() = 0;

  // True once the whole body was read.
  virtual bool done() const = 0;
};

}  // namespace warmroute::net
