// What the emulator's generating endpoints (chat and completions, the Responses API, embeddings)
// share on the way into the engine: the served-model check and the engine request of a prompt.
//
// Usage:
//   WR_RETURN_IF_ERROR(CheckModel(req.model, replica.options().model));
//   engine::EngineRequest r = MakeEngineRequest(replica, std::move(tokens), {
//       .max_tokens = 16, .model = "m", .cache_salt = "", .seed = std::nullopt});
//
// Thread-safety: call on the replica's thread (a request id is taken from it).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "core/engine/engine_core.h"
#include "emulator/replica.h"

namespace warmroute::emulator {

inline constexpr int64_t kDefaultMaxTokens = 16;  // vLLM's default for completions

// OK when `requested` is empty (the served model) or `served`; else NotFound "The model `x` does
// not exist." naming "model" (vLLM's 404).
absl::Status CheckModel(std::string_view requested, std::string_view served);

struct GenerationParams {
  int64_t max_tokens = kDefaultMaxTokens;  // exactly this many tokens are generated
  std::string_view model;                  // keys the prefix cache (with cache_salt)
  std::string_view cache_salt;
  std::optional<uint64_t> seed;  // the generated text's; unset: a hash of the prompt
  bool bare_start = false;       // the answer starts with a bare word (TokenGenerator)
};

// The engine request for `prompt_tokens`: a fresh id of `replica`, the root block hash of
// (model, cache_salt), and the seed given or, without one, a hash of the prompt, so that as with
// greedy decoding the same prompt gets the same answer on every replica.
engine::EngineRequest MakeEngineRequest(Replica& replica, std::vector<int32_t> prompt_tokens,
                                        const GenerationParams& params);

}  // namespace warmroute::emulator
