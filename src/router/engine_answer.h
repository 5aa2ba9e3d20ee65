// What the gateway makes of an engine's answer before any byte of it reaches the client: whether
// a response head is relayed, or is a failed dispatch (retried on an alternate), and the message
// of a head no client may be given.
//
//   status                         verdict    when no alternate is left
//   200..499 but 101               kRelay     relayed
//   500..599                       kFailed    the last one relayed
//   101, 600..999                  kInvalid   502, an OpenAI error naming backend and status
//
// 101 Switching Protocols is invalid because the gateway never asks an engine to upgrade (it
// forwards no Upgrade header), and no status of 600 or above exists (RFC 9110 15). Interim 1xx
// responses never get here: the response parser skips them.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace warmroute::router {

enum class HeadVerdict {
  kRelay,    // passed on to the client
  kFailed,   // a 5xx: counts against the backend, retried
  kInvalid,  // not a valid final answer to this request: counts against the backend, retried
};

HeadVerdict JudgeStatus(int status);

// Whether a Content-Type is an SSE stream's (text/event-stream, parameters aside).
bool IsEventStream(std::string_view content_type);

// The error message for a kInvalid `status` from `backend`, e.g. "backend r0 answered with the
// invalid HTTP status 999".
std::string InvalidStatusMessage(std::string_view backend, int status);

}  // namespace warmroute::router
