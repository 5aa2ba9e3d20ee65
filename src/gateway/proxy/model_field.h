// The model a request body names, for the routes whose body the gateway does not otherwise read
// (embeddings, rerank, score, pooling, classify, tokenize, detokenize: routes.h).
//
// The body must be a JSON object; its top-level "model", when present and not null, a string.
// Nothing else is looked at or validated: the engine does that, and answers in its own words.
//
// Usage:
//   absl::StatusOr<std::string> model = ModelOfBody(request.body);   // "" when absent
//   if (!model.ok()) reply 400;
//
// Thread-safety: thread-safe (a per-thread parser).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace warmroute::gateway {

// The body's "model" ("" when absent or null). InvalidArgument when the body is not a JSON object
// (malformed, or another value), or names a model that is not a string (param "model").
absl::StatusOr<std::string> ModelOfBody(std::string_view body);

}  // namespace warmroute::gateway
