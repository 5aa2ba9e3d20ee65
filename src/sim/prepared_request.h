// A workload request made ready for the simulated fleet, split into what each side may see:
// the gateway side (RoutingRequest: model, tenant, the text-derived prefix key and an estimated
// prompt length — what the live gateway computes from the HTTP body in approximate mode) and the
// engine side (EngineRequest: the tokenized prompt and root hash — what the engine computes).
//
// The prompt is rendered as the engine would (request::RenderPrompt: the chat template for chat
// requests) and tokenized with the BuiltinTokenizer. The engine's root hash is keyed by the model
// only (lora "", cache_salt ""): vLLM shares its prefix cache across tenants unless a request
// carries a cache_salt, and workloads set none. The router's prefix key is
// routing::MakePrefixKey on the same request and its tenant. In precise mode (a preparer built
// with token_block_size > 0) the router's key is the exact token ids instead, as a gateway with
// the model's tokenizer computes it: routing::MakePrefixKeyFromTokens(model, tenant, tokens,
// block_tokens = token_block_size), with the exact prompt length.
//
// Usage:
//   RequestPreparer preparer(tokenizer, options.prefix_key, /*default_model=*/"m", seed);
//   PreparedRequest p = preparer.Prepare(workload_request);
//
// Thread-safety: Prepare is const; the tokenizer must outlive the preparer.
#pragma once

#include <cstdint>
#include <string>

#include "core/engine/engine_core.h"
#include "core/engine/token_generator.h"
#include "core/request/tokenizer.h"
#include "core/routing/policy.h"
#include "core/routing/prefix_key.h"
#include "core/workload/workload.h"

namespace warmroute::sim {

struct PreparedRequest {
  routing::RoutingRequest routing;  // for the router (gateway's knowledge only)
  engine::EngineRequest engine;     // for the replica's engine
};

class RequestPreparer {
 public:
  // `default_model` names requests whose workload model is "" (the fleet's served model).
  // `seed` derives each request's generation seed (the same for every run of the same seed).
  // `token_block_size` > 0: keys by token ids in blocks of that many tokens (precise mode).
  RequestPreparer(const request::Tokenizer& tokenizer, routing::PrefixKeyOptions key_options,
                  std::string default_model, uint64_t seed, int token_block_size = 0);

  PreparedRequest Prepare(const workload::WorkloadRequest& request) const;

  // The generation seed of request `id` (TokenGenerator): a pure function of (seed, id).
  uint64_t GenerationSeed(uint64_t id) const;

 private:
  const request::Tokenizer& tokenizer_;
  const routing::PrefixKeyOptions key_options_;
  const std::string default_model_;
  const uint64_t seed_;
  const int token_block_size_;
};

// The answer text of a request that generated `num_tokens` tokens with `seed`: the tokens'
// texts concatenated, as the engine emulator streams them.
std::string AnswerText(const engine::TokenGenerator& generator, uint64_t seed, int64_t num_tokens);

}  // namespace warmroute::sim
