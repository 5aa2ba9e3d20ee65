// Reads an engine's answer to GET /v1/models (OpenAI's list:
// {"object": "list", "data": [{"id": "llama-3-8b", "object": "model", ...}, ...]}) into the model
// names the gateway routes by.
//
// An entry whose id is missing, not a string, or empty is ignored and counted: a model named ""
// would be taken for the backend's whole model list, and every request naming a model would then
// get 404.
//
// Usage:
//   absl::StatusOr<ModelList> models = ParseModelList(body);
//   if (models.ok() && models->ignored > 0) ... warn ...;
//
// Thread-safety: pure function.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace warmroute::gateway {

struct ModelList {
  std::vector<std::string> ids;  // in the engine's order
  int ignored = 0;               // entries without a usable id
};

// InvalidArgument when `body` is not JSON or has no "data" array.
absl::StatusOr<ModelList> ParseModelList(std::string_view body);

}  // namespace warmroute::gateway
