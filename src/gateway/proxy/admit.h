// The admit stage: everything the gateway decides about a routed request (routes.h) before any
// byte of it goes upstream, in the order it runs:
//
//   tenant        with tenancy, the API key's tenant (tenants.h)           401, 400 two keys
//   normalize     a prompt route's body rewritten in place by the tenant's and model's
//                 normalize rules, when configured (normalize.h)
//   parse         a prompt route's body, once (core/request), in place;    400 naming the field,
//                 a model route's "model" (model_field.h)                  415 a compressed body
//   models        the tenant's allowed models                              404
//   prefix key    prompt routes, approximate mode: the rendered prompt's chained block hashes,
//                 keyed by the tenant's cache domain (else the x-warmroute-tenant header or
//                 cache_salt)
//   pin           a request about a stored response (previous_response_id, /v1/responses/{id})
//                 goes to the backend its id names (response_ids.h)        404 when it is gone
//   limits        the tenant's concurrency and token buckets (rate_limiter.h; cluster-wide in
//                 Redis when configured: redis_rate_store.h)               429 + Retry-After
//   admission     the gateway's in-flight bound, weighted-fair across tenants (admission.h)
//                                                                          429 queue full/timeout
//   route         the placement among the tenant's pools (Backends): the   404 unknown model,
//                 policy's, least work, or pinned                          503 no backend
//
// It ends in one value: an Admitted request (the routing decision, the body as each backend gets
// it, and what it holds until it ends: its concurrency slot, admission ticket and the Router's
// accounting), or one Refusal (the answer the client gets, and the rejection metric's label).
// Requests over the listener's size limits never get here: the HTTP parser refuses them first
// (413 for a body, 431 for a head: net/http1/request_parser.h).
//
// No I/O of its own: it waits only for the admission queue and, with cluster-wide limits, the
// worker's Redis connection, so it is unit-tested on an io_context without sockets.
//
// Thread-safety: a coroutine on the calling worker's thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "absl/status/status.h"
#include "core/request/inference_request.h"
#include "gateway/fleet/backends.h"
#include "gateway/proxy/call_record.h"
#include "gateway/proxy/forwarding.h"
#include "gateway/proxy/proxy_context.h"
#include "gateway/proxy/routed_request.h"
#include "gateway/proxy/routes.h"
#include "gateway/tenancy/admission.h"
#include "gateway/tenancy/rate_limiter.h"
#include "gateway/tenancy/redis_rate_store.h"
#include "gateway/tenancy/tenants.h"
#include "net/http1/http_request.h"
#include "net/http1/response_writer.h"
#include "net/task.h"
#include "net/usage_tap.h"

namespace warmroute::gateway {

struct Admitted {
  Dispatch dispatch;     // the backend chosen, why, and its predicted cached tokens
  const Tenant* tenant;  // null without tenancy
  UpstreamBody body;     // what each backend is sent
  // How the answer reports the prompt's usage, for the closed loop; none for a request that
  // prefills nothing (a stored response's retrieval).
  std::optional<net::UsageFormat> usage_format;
  // Held until the request ends.
  RoutedRequest routed;                        // the Router's accounting: Dispatched
  std::optional<ConcurrencySlot> concurrency;  // with a tenant's concurrency limit
  AdmissionGate::Ticket ticket;
};

struct Refusal {
  absl::Status error;
  int http_status = 0;                   // 0: the error code's own (net/openai_error.h)
  std::optional<int64_t> retry_after_s;  // a rate limit's Retry-After
  // warmroute_request_rejections_total's reason label (a string literal: it outlives the request).
  std::string_view rejection;
};

using AdmitResult = std::variant<Refusal, Admitted>;

// The response a client gets for `refusal`: the OpenAI error, and Retry-After when set.
net::Response ResponseOf(const Refusal& refusal);

// Runs the stage for `request` on `route` (REQUIRES: route.route), with the settings it arrived
// under; `redis` holds the worker's cluster-wide limit store (null: local limits only), read
// when the buckets are taken: a reload may replace or drop it while a streamed upload's
// beginning is read, and the store it held then is gone. Notes what
// it learns (model, stream, tenant, prompt, the decision) in `call`.
// A streamed route's body (an audio upload) is read only as far as its `model` form field, at
// most kModelLookaheadBytes: what was read moves into `request.body`, to be sent first, and the
// rest stays in `request.body_reader`. A model not found that far is unknown: the request is
// then placed among all backends (the engine answers for a model it does not serve).
inline constexpr size_t kModelLookaheadBytes = size_t{1} << 20;
net::Task<AdmitResult> Admit(const ProxyContext& context, const ProxySettings& settings,
                             const std::unique_ptr<RedisRateStore>& redis,
                             const RouteMatch& route, net::HttpRequest& request, Call& call);

}  // namespace warmroute::gateway
