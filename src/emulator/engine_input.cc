#include "emulator/engine_input.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "common/status.h"
#include "core/request/block_hash.h"

namespace warmroute::emulator {
namespace {

// The root of the default generated-text seed (any constant).
constexpr uint64_t kTextSeedRoot = 0x746578745f736565ull;

}  // namespace

absl::Status CheckModel(std::string_view requested, std::string_view served) {
  if (requested.empty() || requested == served) return absl::OkStatus();
  return WithParam(
      absl::NotFoundError(absl::StrCat("The model `", AbslView(requested), "` does not exist.")),
      "model");
}

engine::EngineRequest MakeEngineRequest(Replica& replica, std::vector<int32_t> prompt_tokens,
                                        const GenerationParams& params) {
  engine::EngineRequest request;
  request.id = replica.NewRequestId();
  request.prompt_tokens = std::move(prompt_tokens);
  request.max_tokens = params.max_tokens;
  request.root_hash =
      request::RootBlockHash({.model = params.model, .lora = "", .cache_salt = params.cache_salt});
  request.seed =
      params.seed ? *params.seed : request::ChainBlockHash(kTextSeedRoot, request.prompt_tokens);
  request.bare_start = params.bare_start;
  return request;
}

}  // namespace warmroute::emulator
