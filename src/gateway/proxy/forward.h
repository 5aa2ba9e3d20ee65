// The forward stage: an admitted request sent to its backend and, while no byte of an answer has
// reached the client, retried on the routing decision's alternates (Backends::Reroute), at most
// `retries` times. Each dispatch is one upstream attempt (upstream_attempt.h has the table of
// what is retried); each failure counts against the backend's health (outlier ejection).
//
// The client's headers are filtered in place for the upstream (forwarding.h); each backend gets
// the body its engine kind takes (UpstreamBody: the tenant's cache_salt only where honoured). A
// streamed body (an audio upload) goes on as it arrives, and is retried elsewhere only when the
// connection to the first backend failed before anything was sent.
//
// It ends in the answer the client gets:
//   an SSE stream      `stream`, its head in `response`: relay.h passes the body on as it arrives
//   a whole response   the backend's (any status the upstream-attempt table relays)
//   every attempt      no `exchange`: the last engine 5xx as it sent it, 502 after an invalid
//   failed             status, 504 after a timeout, else 503 (FailureResponse, the one place)
//
// Thread-safety: a coroutine on the worker's thread (its UpstreamPools).
#pragma once

#include <memory>
#include <string>

#include "common/rng.h"
#include "gateway/proxy/admit.h"
#include "gateway/proxy/call_record.h"
#include "gateway/proxy/proxy_context.h"
#include "gateway/proxy/upstream_attempt.h"
#include "gateway/proxy/upstream_pools.h"
#include "net/http1/http_client.h"
#include "net/http1/http_request.h"
#include "net/http1/response_writer.h"
#include "net/task.h"

namespace warmroute::gateway {

struct Forwarded {
  net::Response response;  // the head, and the whole body unless `stream`
  // The exchange whose answer the client gets (null: every attempt failed); with `stream` its
  // body is still to read.
  std::unique_ptr<net::UpstreamExchange> exchange;
  bool stream = false;
};

// The answer to a client when the last attempt failed with `attempt` (no exchange).
net::Response FailureResponse(Attempt attempt);

// Forwards `request` as `admitted` decided; `ids` draws the response ids the gateway issues
// (response_ids.h). Records reroutes, retries and failures in `call`.
net::Task<Forwarded> Forward(const ProxyContext& context, const ProxySettings& settings,
                             UpstreamPools& pools, Rng& ids, Admitted& admitted,
                             net::HttpRequest& request, Call& call);

}  // namespace warmroute::gateway
