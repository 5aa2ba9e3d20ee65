// The admin API under /admin, enabled when the config sets admin.token; every call must carry
// "Authorization: Bearer <token>" (compared in constant time) or gets 401. Without a token the
// API does not exist (404). Nothing it returns contains a secret.
//
//   GET    /admin/backends               every backend: state, load, index entries, metrics,
//                                        kv_events (its config, the stream's state and counts)
//   POST   /admin/backends               add one: a JSON backend entry as in the config
//                                        ({"url": "http://10.0.0.5:8000", "name": ...}) → 201
//   DELETE /admin/backends/{name}        remove: nothing new is sent, in-flight requests finish
//   POST   /admin/backends/{name}/drain  stop sending new requests (in-flight ones finish)
//   POST   /admin/backends/{name}/undrain
//   GET    /admin/config                 the effective config (the token redacted)
//
// Errors are OpenAI-style bodies: 400 for a bad backend entry (naming the key), 404 for an
// unknown backend, 409 for a duplicate name or address, 501 for a method a route does not have.
//
// Thread-safety: thread-safe (Backends is).
#pragma once

#include <functional>
#include <string>

#include "gateway/fleet/backends.h"
#include "gateway/fleet/prewarmer.h"
#include "net/http1/response_writer.h"

namespace warmroute::gateway {

class AdminApi {
 public:
  // `effective_config` returns the current effective config JSON (it changes on reload);
  // `token` is the bearer token (empty: the API is disabled); `check_backend` vets a backend to
  // add against the rest of the config (tenancy's pool isolation), InvalidArgument naming why;
  // `prewarmer` (null: prewarm off) is told of every backend added (prewarm), drained or removed
  // (handoff).
  AdminApi(Backends& backends, std::function<std::string()> effective_config,
           std::function<std::string()> token,
           std::function<absl::Status(const BackendConfig&)> check_backend,
           Prewarmer* prewarmer = nullptr);

  // Answers a request whose path starts with /admin.
  net::Task<void> Handle(net::HttpRequest& request, net::ResponseWriter& writer);

  // The JSON of GET /admin/backends.
  std::string BackendsJson() const;

 private:
  Backends& backends_;
  std::function<std::string()> effective_config_;
  std::function<std::string()> token_;
  std::function<absl::Status(const BackendConfig&)> check_backend_;
  Prewarmer* prewarmer_;
};

// True when `a` equals `b`, in time that depends only on their lengths.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// OK when `request` carries "Authorization: Bearer <token>" (the scheme case-insensitive, the
// token compared in constant time); else the error to answer (401, or 400 for two headers).
// REQUIRES: !token.empty().
absl::Status CheckBearerToken(const net::HttpRequest& request, std::string_view token);

}  // namespace warmroute::gateway
