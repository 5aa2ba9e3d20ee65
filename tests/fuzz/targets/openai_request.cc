// The OpenAI request parser (core/request/inference_request.h) on a client's body for each API
// (the first byte chooses it), then what the gateway derives from an accepted request: the
// rendered prompt and the approximate prefix key. Must not crash, hang or read out of bounds.
#include <string>

#include "core/routing/prefix_key.h"
#include "request_input.h"

WARMROUTE_FUZZ_TARGET(openai_request) {
  warmroute::fuzz::RequestInput input = warmroute::fuzz::ReadRequestInput(data, size);
  absl::StatusOr<warmroute::request::InferenceRequest>& parsed = input.parsed;
  if (!parsed.ok()) {
    FUZZ_CHECK(!parsed.status().message().empty());  // the client is told what is wrong
    return 0;
  }
  if (!parsed->has_token_prompt) (void)warmroute::request::RenderPrompt(*parsed);
  warmroute::routing::PrefixKeyOptions options;
  options.block_chars = 16;
  (void)warmroute::routing::MakePrefixKey(*parsed, "tenant", options);
  return 0;
}
