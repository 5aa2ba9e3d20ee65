#include "sim/prepared_request.h"

#include <utility>

#include "common/rng.h"
#include "core/request/block_hash.h"
#include "core/request/inference_request.h"

namespace warmroute::sim {

RequestPreparer::RequestPreparer(const request::Tokenizer& tokenizer,
                                 routing::PrefixKeyOptions key_options, std::string default_model,
                                 uint64_t seed, int token_block_size)
    : tokenizer_(tokenizer),
      key_options_(key_options),
      default_model_(std::move(default_model)),
      seed_(seed),
      token_block_size_(token_block_size) {}

uint64_t RequestPreparer::GenerationSeed(uint64_t id) const {
  return Mix64(seed_ ^ Mix64(id ^ 0x67656e5f73656564ull));
}

PreparedRequest RequestPreparer::Prepare(const workload::WorkloadRequest& w) const {
  request::InferenceRequest req;
  req.endpoint = w.endpoint;
  req.model = w.model.empty() ? default_model_ : w.model;
  req.messages = w.messages;
  req.prompt = w.prompt;
  req.max_tokens = w.max_tokens;
  req.stream = true;

  PreparedRequest out;
  out.engine.id = w.id;
  out.engine.prompt_tokens = tokenizer_.Encode(request::RenderPrompt(req));
  out.engine.max_tokens = w.max_tokens;
  out.engine.root_hash = request::RootBlockHash({.model = req.model, .lora = "", .cache_salt = ""});
  out.engine.seed = GenerationSeed(w.id);

  routing::RoutingRequest& r = out.routing;
  r.id = w.id;
  r.model = req.model;
  r.tenant = w.tenant;
  if (token_block_size_ > 0) {
    routing::PrefixKeyOptions options = key_options_;
    options.block_tokens = token_block_size_;
    r.key = routing::MakePrefixKeyFromTokens(req.model, w.tenant, out.engine.prompt_tokens, options);
  } else {
    r.key = routing::MakePrefixKey(req, w.tenant, key_options_);
  }
  r.prompt_tokens = r.key.prompt_tokens;  // text keys: the gateway's estimate
  r.max_tokens = w.max_tokens;
  r.stream = true;
  return out;
}

std::string AnswerText(const engine::TokenGenerator& generator, uint64_t seed, int64_t num_tokens) {
  std::string text;
  text.reserve(static_cast<size_t>(num_tokens) * 5);
  for (int64_t i = 0; i < num_tokens; ++i) text.append(generator.Text(seed, i));
  return text;
}

}  // namespace warmroute::sim
