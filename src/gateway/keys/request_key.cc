#include "gateway/keys/request_key.h"

#include <algorithm>
#include <span>
#include <utility>

#include "absl/time/time.h"
#include "core/template/chat_prompt.h"
#include "gateway/keys/block_hash_memo.h"

namespace warmroute::gateway {
namespace {

RequestKey Approximate(const request::InferenceRequest& request, const KeyInputs& inputs,
                       std::string_view reason) {
  return RequestKey{.key = routing::MakePrefixKey(request, inputs.tenant, *inputs.options),
                    .precise = false,
                    .reason = reason};
}

// A member of the request body the parsed request does not keep, which changes the prompt's ids
// (a false positive, such a string inside a text, only costs a precise key).
bool HasUnmodelledField(std::string_view body) {
  // One pass over the body's quotes, for both names (a body is mostly message text, with few).
  for (size_t at = body.find('"'); at != std::string_view::npos; at = body.find('"', at + 1)) {
    const std::string_view rest = body.substr(at);
    if (rest.starts_with("\"chat_template\"") || rest.starts_with("\"add_special_tokens\"")) {
      return true;
    }
  }
  return false;
}

// EnginePromptIds, the ids split as HfTokenizer::EncodeAfterReuse splits them when `reuse` is not
// null (for a chat; nothing is reused for the other prompts).
absl::StatusOr<std::vector<int32_t>> PromptIds(const request::InferenceRequest& request,
                                               const TokenizerFiles& files, const WallClock& clock,
                                               tokenize::HfTokenizer::Reuse* reuse) {
  if (reuse != nullptr) *reuse = tokenize::HfTokenizer::Reuse();
  if (request.has_token_prompt) return request.prompt_token_ids;
  if (request.endpoint == request::Endpoint::kCompletions) {
    if (request.prompt.size() > kMaxPreciseBytes) {
      return absl::ResourceExhaustedError("prompt_too_long");
    }
    return files.tokenizer->EncodeWithSpecialTokens(request.prompt);
  }
  // transformers renders strftime_now in the server's local time.
  static const absl::TimeZone kLocal = absl::LocalTimeZone();
  absl::StatusOr<std::string> text = jinja::RenderChatPrompt(
      request, *files.chat_template, {.clock = &clock, .time_zone = kLocal});
  if (!text.ok()) {
    return absl::Status(text.status().code(), text.status().code() == absl::StatusCode::kUnimplemented
                                                  ? "unsupported_request"
                                                  : "template_error");
  }
  if (text->size() > kMaxPreciseBytes) return absl::ResourceExhaustedError("prompt_too_long");
  return reuse != nullptr ? files.tokenizer->EncodeAfterReuse(*text, reuse)
                          : files.tokenizer->Encode(*text);
}

// The first `n` ids (fewer when there are fewer) of the reused ids followed by `rest`.
std::vector<int32_t> FirstIds(const tokenize::HfTokenizer::Reuse& reuse,
                              std::span<const int32_t> rest, size_t n) {
  std::vector<int32_t> first;
  first.reserve(n);
  if (reuse.remembered != nullptr) {
    const size_t k = std::min({n, reuse.ids, reuse.remembered->size()});
    first.assign(reuse.remembered->begin(), reuse.remembered->begin() + static_cast<ptrdiff_t>(k));
  }
  const size_t more = std::min(n - first.size(), rest.size());
  first.insert(first.end(), rest.begin(), rest.begin() + static_cast<ptrdiff_t>(more));
  return first;
}

}  // namespace

absl::StatusOr<std::vector<int32_t>> EnginePromptIds(const request::InferenceRequest& request,
                                                     const TokenizerFiles& files,
                                                     const WallClock& clock) {
  return PromptIds(request, files, clock, nullptr);
}

RequestKey MakeRequestKey(const request::InferenceRequest& request, const KeyInputs& inputs) {
  if (inputs.mode == PrefixKeyMode::kApproximate) return Approximate(request, inputs, "configured");
  const ModelKeying* model = inputs.models != nullptr ? inputs.models->Find(request.model) : nullptr;
  if (model == nullptr || model->files() == nullptr) {
    return Approximate(request, inputs, "no_tokenizer");
  }
  if (!model->parity_ok()) return Approximate(request, inputs, "parity_mismatch");
  if (HasUnmodelledField(inputs.body)) return Approximate(request, inputs, "unsupported_request");
  // The ids after those reused from the tokenizer's prefix cache (`reuse`).
  tokenize::HfTokenizer::Reuse reuse;
  absl::StatusOr<std::vector<int32_t>> ids =
      PromptIds(request, *model->files(), inputs.models->clock(), &reuse);
  if (!ids.ok()) {
    // The message is the reason; keep the label a string literal.
    const std::string_view why(ids.status().message().data(), ids.status().message().size());
    if (why == "prompt_too_long") return Approximate(request, inputs, "prompt_too_long");
    if (why == "unsupported_request") return Approximate(request, inputs, "unsupported_request");
    return Approximate(request, inputs, "template_error");
  }
  const size_t prompt_tokens = reuse.ids + ids->size();
  if (prompt_tokens == 0) return Approximate(request, inputs, "empty_prompt");
  routing::PrefixKeyOptions options = *inputs.options;
  options.block_tokens = model->block_size();
  options.max_tokens = static_cast<int64_t>(prompt_tokens);
  thread_local BlockHashMemo memo;
  return RequestKey{
      .key = memo.MakeKey(request.model, inputs.precise_salt, reuse, *ids, options),
      .precise = true,
      .reason = request.has_token_prompt ? "token_prompt" : "tokenized",
      // The domain reads the first block only (its length tells whether there is one).
      .domain = routing::DomainOfTokenPrompt(
          request.model, "", inputs.precise_salt,
          FirstIds(reuse, *ids, static_cast<size_t>(model->block_size())), model->block_size())};
}

}  // namespace warmroute::gateway
