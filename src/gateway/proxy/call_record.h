// The record of one proxied request — what it was, where it went, how it ended — filled in by the
// stages as the request runs (admit.h, forward.h, relay.h) and written, as the request's last
// step, to the gateway's metrics and access log (RecordCall). A request whose handler was
// cancelled (the client went away) is recorded with nginx's 499 "client closed request".
//
// Usage (proxy.cc):
//   Call call = NewCall(context);
//   ... the stages fill call ...
//   RecordCall(context, call, request);
//
// Thread-safety: a Call belongs to its request's handler; RecordCall is thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "core/routing/policy.h"
#include "gateway/fleet/backends.h"
#include "gateway/proxy/proxy_context.h"
#include "net/http1/http_request.h"
#include "net/usage_tap.h"

namespace warmroute::gateway {

inline constexpr int kClientClosedRequest = 499;

struct Call {
  uint64_t id = 0;
  TimePoint start{};
  std::string_view route;  // routes.h's name (a string literal)
  bool generates = false;  // a prompt route: its first byte is a first token (TTFT)
  // What the request is (admit).
  std::string model;
  bool stream = false;
  std::string tenant;  // with tenancy
  std::string prompt;  // observability.log_prompts only
  // Where it went (admit's routing decision; forward's reroutes).
  std::shared_ptr<const BackendTarget> target;
  routing::Reason reason = routing::Reason::kLeastLoad;
  bool dispatched = false;
  int64_t predicted_cached_tokens = 0;
  // How its prefix key was made (gateway/keys/request_key.h; string literals, empty: no key).
  std::string_view key_mode;
  std::string_view key_reason;
  // The normalize rules that changed its body (normalize.h's names; empty slots unused).
  std::array<std::string_view, 3> normalized{};
  int retries = 0;
  // How it ended.
  int status = 0;  // the HTTP status the client got; 0 until an answer was given
  std::optional<TimePoint> first_byte;
  std::optional<net::Usage> usage;
  std::string error;           // why it failed, if it did
  std::string_view rejection;  // the rejection metric's label when refused (a string literal)
};

// A new call: the next request id, started now.
Call NewCall(const ProxyContext& context);

// Counts the call in the gateway's metrics and writes its access-log line. A call without a
// status (the handler was cancelled) counts as 499.
void RecordCall(const ProxyContext& context, const Call& call, const net::HttpRequest& request);

}  // namespace warmroute::gateway
