// What the gateway changes in a request on its way upstream, and nothing more: the original body
// bytes are forwarded unchanged unless the gateway has to edit them.
//
// - Headers: hop-by-hop headers (Connection, Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade,
//   Proxy-*), Host, Content-Length and Expect are the upstream connection's own business and are
//   not copied; everything else (Authorization, Content-Type, OpenAI-* ...) is — except, when
//   the gateway authenticates clients itself (tenancy), their Authorization and the
//   x-warmroute-tenant header: a tenant's API key never reaches a backend.
// - Body: a streaming request that did not ask for usage gets "stream_options":
//   {"include_usage": true} added, so the engine reports cached tokens in its last chunk (the
//   closed loop needs them); the relay then drops that chunk (net/usage_tap.h). A body that
//   mentions stream_options at all is left alone (the client chose). With tenancy, `cache_salt` is
//   set to the tenant's salt (tenants.h), overwriting the client's, on engines that honour it.
//
// UpstreamBody holds the body in the forms the backends of one request may get: the client's bytes
// (or the include_usage edit of them), and that with the tenant's cache_salt for engines that
// honour it. A retry may move the request to an engine of another kind, so both are kept.
//
// Thread-safety: pure functions; an UpstreamBody belongs to its request.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/request/inference_request.h"
#include "gateway/fleet/engine_metrics.h"
#include "net/http1/http_request.h"

namespace warmroute::gateway {

// Without configured tenants, the header a client may set to name its tenant (keys its prefix
// chain: tenants never share a predicted hit). With tenants it is ignored and not forwarded: the
// API key decides.
inline constexpr std::string_view kTenantHeader = "x-warmroute-tenant";

// Keeps, in order, those of the client's headers that are sent upstream; `strip_credentials`
// drops Authorization and x-warmroute-tenant too. (In place: the list is the connection's, which
// keeps its memory for the next request.)
void KeepForwardedHeaders(net::HttpHeaders& headers, bool strip_credentials);

// The body with include_usage added, when the gateway must add it (see above); nullopt when the
// body is forwarded as is.
std::optional<std::string> WithIncludeUsage(const request::InferenceRequest& parsed,
                                            std::string_view body);

// `body` with its top-level cache_salt set to `salt_json` (a JSON string literal).
// InvalidArgument if `body` is not a JSON object (the caller parsed it already).
absl::StatusOr<std::string> WithCacheSalt(std::string_view body, std::string_view salt_json);

class UpstreamBody {
 public:
  // `client_body` as sent (it must outlive this), `with_usage` WithIncludeUsage's edit of it,
  // and `salt_json` the tenant's cache_salt literal ("" without tenancy). InvalidArgument when
  // the salt cannot be set (the body is not a JSON object).
  // `response_ids`: a Responses API request without a request_id of its own, whose engines are
  // given the id of the response they store (response_ids.h).
  static absl::StatusOr<UpstreamBody> Make(std::string_view client_body,
                                           std::optional<std::string> with_usage,
                                           std::string_view salt_json, bool response_ids = false);

  // What an engine of `kind` is sent; with `response_id` (when issues_response_ids() and the
  // engine TakesResponseIds), `request_id` set to it. The view lives until the next call.
  std::string_view For(EngineKind kind, std::string_view response_id = {});

  // True when the gateway added include_usage (the relay then drops the usage chunk).
  bool usage_added() const { return with_usage_.has_value(); }
  bool issues_response_ids() const { return response_ids_; }

 private:
  UpstreamBody(std::string_view client_body, std::optional<std::string> with_usage)
      : client_body_(client_body), with_usage_(std::move(with_usage)) {}
  std::string_view unsalted() const { return with_usage_ ? *with_usage_ : client_body_; }

  std::string_view client_body_;
  std::optional<std::string> with_usage_;
  std::optional<std::string> salted_;  // set with tenancy
  bool response_ids_ = false;
  std::string with_id_;  // the last body For built with a response id
};

// True for engines whose Responses API gives a response the id its request_id asks for (vLLM).
bool TakesResponseIds(EngineKind kind);

}  // namespace warmroute::gateway
