// What the gateway makes of an engine's answer before any byte of it reaches the client: whether
// a response head is relayed, or is a failed dispatch (retried on an alternate), the message of a
// head no client may be given, and the error body a client gets.
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
// Error bodies (an engine's 4xx, or its 5xx when no alternate is left): a body that already is an
// OpenAI error — JSON whose top level has an "error" member — is relayed unchanged (clients rely
// on vLLM's messages). vLLM's older shape, {"object": "error", "message": ..., "param": ...}, gets
// the OpenAI shape around its own message and param. Anything else — not JSON, JSON without
// "error", over the gateway's error-body limit, an event stream (not read: it may never end) — is
// wrapped into an OpenAI error with the engine's status, whose message names the backend and the
// status and quotes a short excerpt of a text body:
//
//   {"error": {"message": "backend r0 answered 500: Internal Server Error oops",
//              "type": "InternalServerError", "param": null, "code": 500}}
//
// The excerpt (at most kExcerptBytes) is sanitized: HTML tags dropped, control characters and
// runs of white space made one space, cut at a character boundary (… marks a cut).
//
// Usage:
//   switch (JudgeStatus(head.status)) { ... }
//   ShapeEngineError("r0", /*complete=*/true, reply_head, body);   // a 4xx or 5xx to relay
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "net/http1/response_writer.h"

namespace warmroute::gateway {

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

constexpr size_t kExcerptBytes = 200;

// Makes an engine's error response (`head`, status 400..599, and `body`) what the client gets, as
// above: unchanged, or `body` replaced by an OpenAI error (Content-Type application/json, the
// headers that described the engine's body dropped). `complete`: `body` is the whole body (false:
// cut at the gateway's limit, or not read).
void ShapeEngineError(std::string_view backend, bool complete, net::ResponseHead& head,
                      std::string& body);

// A short excerpt of an engine's body for an error message, sanitized as above; empty when the
// body is empty or not text (by its Content-Type). `complete`: false marks the end as cut.
std::string BodyExcerpt(std::string_view content_type, std::string_view body, bool complete);

}  // namespace warmroute::gateway
