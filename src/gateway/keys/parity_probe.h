// The parity self-test's probe and its judgement, without I/O: a fixed chat (a system and a user
// message with non-ASCII text) and a fixed text prompt, which the gateway encodes as its precise
// keys do (request_key.h EnginePromptIds) and a backend encodes on POST /tokenize, vLLM's shape:
//   {"model": M, "messages": [...], "add_generation_prompt": true}  (chat: no special tokens)
//   {"model": M, "prompt": "..."}                                    (text: add_special_tokens)
//   -> 200 {"tokens": [ids...], "count": N, ...}
// Any difference in the ids means the gateway's keys are not the engine's blocks (another
// tokenizer revision, an edited chat template, another date in strftime_now...).
//
// Usage (the prober, parity_prober.h):
//   absl::StatusOr<ParityExpectation> expected = ExpectParity(model, files, clock);
//   ... POST ParityChatBody(model) and ParityTextBody(model) to /tokenize ...
//   ParityResult r = JudgeParity(*expected, {chat_status, chat_body}, {text_status, text_body});
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/wall_clock.h"
#include "core/request/inference_request.h"
#include "gateway/keys/model_tokenizers.h"

namespace warmroute::gateway {

inline constexpr std::string_view kParitySystem =
    "You are a helpful assistant. Réponds brièvement; 回答要简洁.";
inline constexpr std::string_view kParityUser =
    "Grüße aus Zürich! Сколько стоит 東京 → 大阪? ½ price, naïve café 🙂\n\tTabs and  spaces.";
inline constexpr std::string_view kParityText =
    "The naïve café — 東京タワー, Ünïcödé and emoji 🙂.\nSecond line:  indented\ttext.";

// The probes as requests (what the gateway renders) and as /tokenize bodies.
request::InferenceRequest ParityChatRequest(std::string_view model);
request::InferenceRequest ParityTextRequest(std::string_view model);
std::string ParityChatBody(std::string_view model);
std::string ParityTextBody(std::string_view model);

// The gateway's ids for both probes.
struct ParityExpectation {
  std::vector<int32_t> chat;
  std::vector<int32_t> text;
};
// InvalidArgument when the model's own template cannot render the probe chat (then the check
// cannot run; the message says why).
absl::StatusOr<ParityExpectation> ExpectParity(std::string_view model, const TokenizerFiles& files,
                                               const WallClock& clock);

// The ids of a /tokenize answer's body ("tokens": a list of integers); InvalidArgument otherwise.
absl::StatusOr<std::vector<int32_t>> ParseTokenizeAnswer(std::string_view body);

// Where two id lists first differ; nullopt when equal. An id past a list's end is nullopt.
struct IdDifference {
  size_t position = 0;
  std::optional<int32_t> gateway;
  std::optional<int32_t> backend;
};
std::optional<IdDifference> FirstDifference(std::span<const int32_t> gateway,
                                            std::span<const int32_t> backend);

enum class ParityVerdict {
  kMatch,       // both probes' ids are equal
  kMismatch,    // some id differs
  kNoEndpoint,  // a 404: the backend does not serve /tokenize (for this model)
  kFailed,      // no answer, another status, or an answer without ids: asked again later
};
std::string_view ParityVerdictName(ParityVerdict verdict);  // match, mismatch, no_endpoint, failed

// One exchange: the HTTP status (0: no answer) and the body, or why it failed.
struct TokenizeAnswer {
  int status = 0;
  std::string body;
  std::string error;  // with status 0
};

struct ParityResult {
  ParityVerdict verdict = ParityVerdict::kFailed;
  // kMismatch: "chat prompt: first difference at token 5 of 31 (backend 33): gateway id 13048,
  // backend id 9707"; kFailed / kNoEndpoint: what happened.
  std::string detail;
};
ParityResult JudgeParity(const ParityExpectation& expected, const TokenizeAnswer& chat,
                         const TokenizeAnswer& text);

}  // namespace warmroute::gateway
