// The gateway's optional request sample (observability.sample_requests: {file, rate}): a share of
// the prompt requests written to a JSONL file as the client sent them, for `warmroute analyze`
// (core/workload/request_log.h reads it, as `trace:FILE` does). Off by default: prompts are
// sensitive, and the file holds them whole.
//
// A line is the request's body with two members put first: "timestamp" (seconds since the Unix
// epoch, when the gateway read it) and, with tenancy, "tenant" (the tenant's name, never its
// key); raw line breaks between the body's tokens become spaces (a JSON string cannot hold one),
// so each request is one line. Which requests are written is decided by their id (a hash against
// `rate`), so the sample does not depend on timing. Only chat and completions bodies are written.
//
// Usage:
//   if (sample.Takes(call.id)) log.WriteLine(RequestSampleLine(body, "acme", unix_s));
//
// Thread-safety: pure functions; the file is an AccessLog (thread-safe).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace warmroute::gateway {

// True for about `rate` (0..1) of request ids, the same ids every time.
bool SampleTakes(uint64_t request_id, double rate);

// The sample's line for `body` (a JSON object), or "" when `body` is not one.
std::string RequestSampleLine(std::string_view body, std::string_view tenant, double unix_s);

}  // namespace warmroute::gateway
