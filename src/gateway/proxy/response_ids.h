// The ids of responses the engines store (OpenAI's Responses API), issued by the gateway so that
// any gateway replica can send a follow-up — previous_response_id, GET, DELETE or cancel of
// /v1/responses/{id} — to the backend that holds the response, with no state shared between
// gateway replicas and none kept in any of them.
//
// vLLM stores a response in the memory of the replica that produced it, under the id the request
// asked for in `request_id` (vLLM's extension of the API; a random id without one). The gateway
// sets `request_id`, unless the client did, to
//
//   resp_wr1 <16 hex digits: XXH3-64 of the backend's name> <24 hex digits: random>
//
// so the id the engine gives the response — and the client sees, byte for byte — names the
// backend. The backend's name, not its address or position, because every gateway replica of a
// fleet has the same names (the same config, or names derived from the same discovered
// addresses). The random part comes from a per-worker generator seeded from the operating system,
// so ids do not repeat across workers, replicas or restarts.
//
// An id the gateway did not issue (the client chose request_id, or the engine ignores it) names
// no backend: its follow-ups are placed like requests without one.
//
// Usage:
//   std::string id = NewResponseId(target.name, rng);                 // in the upstream body
//   std::optional<uint64_t> backend = BackendHashOfResponseId(id);    // on the follow-up
//
// Thread-safety: pure functions (the Rng is the caller's).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/rng.h"

namespace warmroute::gateway {

inline constexpr std::string_view kResponseIdPrefix = "resp_wr1";

// A new response id for a response that `backend_name` will store.
std::string NewResponseId(std::string_view backend_name, Rng& rng);

// The name hash (routing::NameHash) of the backend that a gateway-issued id names; nullopt for
// any other id.
std::optional<uint64_t> BackendHashOfResponseId(std::string_view id);

}  // namespace warmroute::gateway
