// The prefix key the admit stage routes a prompt request with: precise (the engine's token ids,
// cut into the engine's KV blocks) when it can be, else approximate (routing::MakePrefixKey's
// character blocks of the rendered text), and why.
//
// Precise keys. With prefix_key.mode precise or auto, a request for a model configured with a
// tokenizer (model_tokenizers.h) whose parity self-test has not failed is rendered and encoded as
// vLLM does:
//   chat (and Responses and Messages requests, read into messages): jinja::RenderChatPrompt with
//     the model's chat template, encoded without special tokens (vLLM's chat default,
//     add_special_tokens=False: BOS comes from the template);
//   completions with a text prompt: encoded with the post-processor's special tokens (vLLM's
//     completions default, add_special_tokens=True);
//   completions with token ids: the ids as given.
// The ids are cut into blocks of the model's block_size and chained from request::RootBlockHash
// ({model, lora = "", cache_salt}) (routing::MakePrefixKeyFromTokens), over the whole prompt: no
// max_chars or max_tokens cut. The cache_salt is what the engine gets: the tenant's (the gateway
// overwrites the client's: tenants.h), else the client's, with the x-warmroute-tenant header
// folded in as routing::PrefixKeySalt does when one is given. So a request whose upstream
// cache_salt is S hashes exactly as the engine's own blocks do (request::HashFullBlocks with the
// root of {model, "", S}). A LoRA adapter is named by the request's model, which keys the root.
// Cost: rendering plus one HfTokenizer encode; a prompt that begins with a text the tokenizer saw
// before (a shared system prompt) costs only its new part (hf_tokenizer.h), and so does hashing
// its ids (block_hash_memo.h, one memo per thread): the reused ids are neither copied nor
// hashed. Prompts whose rendered text exceeds kMaxPreciseBytes fall back, so no request costs
// more than that.
//
// Fallback (never an error to the client: the request goes upstream unchanged, the engine decides
// what is valid), with its reason:
//   configured          prefix_key.mode approximate
//   no_tokenizer        the model is not configured with a tokenizer
//   parity_mismatch     a backend's /tokenize disagrees with the gateway's ids (parity_schedule.h)
//   template_error      the template refuses the chat (raise_exception, a type error, a limit)
//   unsupported_request what the gateway does not render as vLLM would: continue_final_message,
//                       tools of a Responses or Messages request, a request's own chat_template
//                       or add_special_tokens
//   empty_prompt        no tokens (the engine refuses it)
//   prompt_too_long     rendered text over kMaxPreciseBytes
// A precise key's reason is "tokenized" (the gateway encoded the text) or "token_prompt".
//
// Thread-safety: pure function of its arguments (the tokenizer's caches are thread-safe).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/request/inference_request.h"
#include "core/routing/domain_attribution.h"
#include "core/routing/prefix_key.h"
#include "gateway/config/config.h"
#include "gateway/keys/model_tokenizers.h"

namespace warmroute::gateway {

inline constexpr size_t kMaxPreciseBytes = size_t{4} << 20;

struct RequestKey {
  routing::PrefixKey key;
  bool precise = false;
  // warmroute_prefix_key_total's reason label (a string literal).
  std::string_view reason;
  // Precise keys: the dispatch's domain, for KV-event attribution (Router::SetDispatchDomain;
  // routing/domain_attribution.h). Its salt fingerprint is the precise key's cache_salt, which
  // is the engine's except when an x-warmroute-tenant header is folded in without tenancy.
  routing::DispatchDomain domain{};
};

// What the key of `request` is built from besides the request. `body`: the request's JSON, for
// the fields the parsed request does not keep (chat_template, add_special_tokens).
struct KeyInputs {
  std::string_view body;
  // The approximate key's tenant (routing::MakePrefixKey's): the tenant's cache domain, else the
  // x-warmroute-tenant header.
  std::string_view tenant;
  // The precise key's cache_salt (see above).
  std::string_view precise_salt;
  const routing::PrefixKeyOptions* options = nullptr;
  PrefixKeyMode mode = PrefixKeyMode::kAuto;
  const ModelTokenizers* models = nullptr;  // null: no model configured
};

RequestKey MakeRequestKey(const request::InferenceRequest& request, const KeyInputs& inputs);

// The token ids the engine computes for `request`'s prompt with `model`'s files (REQUIRES:
// model.files()), as above; the status says why not (its message is the fallback reason for
// Unimplemented / InvalidArgument / ResourceExhausted). Also the parity self-test's expectation.
absl::StatusOr<std::vector<int32_t>> EnginePromptIds(const request::InferenceRequest& request,
                                                     const TokenizerFiles& files,
                                                     const WallClock& clock);

// "mode" label of a key.
inline std::string_view KeyModeName(bool precise) { return precise ? "precise" : "approximate"; }

}  // namespace warmroute::gateway
