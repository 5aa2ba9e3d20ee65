#include "gateway/keys/request_key.h"

#include <utility>

#include "absl/time/time.h"
#include "core/template/chat_prompt.h"

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
  return body.find("\"chat_template\"") != std::string_view::npos ||
         body.find("\"add_special_tokens\"") != std::string_view::npos;
}

}  // namespace

absl::StatusOr<std::vector<int32_t>> EnginePromptIds(const request::InferenceRequest& request,
                                                     const TokenizerFiles& files,
                                                     const WallClock& clock) {
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
  return files.tokenizer->Encode(*text);
}

RequestKey MakeRequestKey(const request::InferenceRequest& request, const KeyInputs& inputs) {
  if (inputs.mode == PrefixKeyMode::kApproximate) return Approximate(request, inputs, "configured");
  const ModelKeying* model = inputs.models != nullptr ? inputs.models->Find(request.model) : nullptr;
  if (model == nullptr || model->files() == nullptr) {
    return Approximate(request, inputs, "no_tokenizer");
  }
  if (!model->parity_ok()) return Approximate(request, inputs, "parity_mismatch");
  if (HasUnmodelledField(inputs.body)) return Approximate(request, inputs, "unsupported_request");
  absl::StatusOr<std::vector<int32_t>> ids =
      EnginePromptIds(request, *model->files(), inputs.models->clock());
  if (!ids.ok()) {
    // The message is the reason; keep the label a string literal.
    const std::string_view why(ids.status().message().data(), ids.status().message().size());
    if (why == "prompt_too_long") return Approximate(request, inputs, "prompt_too_long");
    if (why == "unsupported_request") return Approximate(request, inputs, "unsupported_request");
    return Approximate(request, inputs, "template_error");
  }
  if (ids->empty()) return Approximate(request, inputs, "empty_prompt");
  routing::PrefixKeyOptions options = *inputs.options;
  options.block_tokens = model->block_size();
  options.max_tokens = static_cast<int64_t>(ids->size());
  return RequestKey{
      .key = routing::MakePrefixKeyFromTokens(request.model, inputs.precise_salt, *ids, options),
      .precise = true,
      .reason = request.has_token_prompt ? "token_prompt" : "tokenized",
      .domain = routing::DomainOfTokenPrompt(request.model, "", inputs.precise_salt, *ids,
                                             model->block_size())};
}

}  // namespace warmroute::gateway
