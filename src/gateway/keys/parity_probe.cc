#include "gateway/keys/parity_probe.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "common/json_writer.h"
#include "gateway/keys/request_key.h"
#include "simdjson.h"

namespace warmroute::gateway {
namespace {

std::string OptionalId(const std::optional<int32_t>& id) {
  return id ? absl::StrCat(*id) : std::string("(none: the list ends)");
}

// A /tokenize answer's ids, or why there are none (kFailed / kNoEndpoint with `result` set).
std::optional<std::vector<int32_t>> IdsOf(std::string_view what, const TokenizeAnswer& answer,
                                          ParityResult* result) {
  if (answer.status == 404) {
    *result = {.verdict = ParityVerdict::kNoEndpoint,
               .detail = absl::StrCat("POST /tokenize (", AbslView(what), ") answered 404")};
    return std::nullopt;
  }
  if (answer.status != 200) {
    *result = {.verdict = ParityVerdict::kFailed,
               .detail = answer.status == 0
                             ? absl::StrCat("POST /tokenize (", AbslView(what), "): ", answer.error)
                             : absl::StrCat("POST /tokenize (", AbslView(what), ") answered ",
                                            answer.status)};
    return std::nullopt;
  }
  absl::StatusOr<std::vector<int32_t>> ids = ParseTokenizeAnswer(answer.body);
  if (!ids.ok()) {
    *result = {.verdict = ParityVerdict::kFailed,
               .detail = absl::StrCat("POST /tokenize (", AbslView(what), "): ", ids.status().message())};
    return std::nullopt;
  }
  return std::move(*ids);
}

}  // namespace

std::string ParityChatBody(std::string_view model) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("model").String(model);
  w.Key("messages").BeginArray();
  w.BeginObject().Key("role").String("system").Key("content").String(kParitySystem).EndObject();
  w.BeginObject().Key("role").String("user").Key("content").String(kParityUser).EndObject();
  w.EndArray();
  w.Key("add_generation_prompt").Bool(true);
  w.EndObject();
  return out;
}

std::string ParityTextBody(std::string_view model) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("model").String(model);
  w.Key("prompt").String(kParityText);
  w.EndObject();
  return out;
}

// The requests are the bodies parsed, so the gateway renders exactly what the backend is sent.
request::InferenceRequest ParityChatRequest(std::string_view model) {
  return *request::ParseInferenceRequest(request::Endpoint::kChatCompletions,
                                         ParityChatBody(model));
}

request::InferenceRequest ParityTextRequest(std::string_view model) {
  return *request::ParseInferenceRequest(request::Endpoint::kCompletions, ParityTextBody(model));
}

absl::StatusOr<ParityExpectation> ExpectParity(std::string_view model, const TokenizerFiles& files,
                                               const WallClock& clock) {
  ParityExpectation out;
  absl::StatusOr<std::vector<int32_t>> chat =
      EnginePromptIds(ParityChatRequest(model), files, clock);
  if (!chat.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the chat template cannot render the probe chat (", chat.status().message(),
                     ")"));
  }
  out.chat = std::move(*chat);
  absl::StatusOr<std::vector<int32_t>> text =
      EnginePromptIds(ParityTextRequest(model), files, clock);
  if (!text.ok()) return text.status();
  out.text = std::move(*text);
  return out;
}

absl::StatusOr<std::vector<int32_t>> ParseTokenizeAnswer(std::string_view body) {
  simdjson::ondemand::parser parser;
  simdjson::padded_string padded(body);
  simdjson::ondemand::document doc;
  if (parser.iterate(padded).get(doc) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("the answer is not JSON");
  }
  simdjson::ondemand::object object;
  if (doc.get_object().get(object) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("the answer is not a JSON object");
  }
  simdjson::ondemand::array tokens;
  if (object.find_field_unordered("tokens").get_array().get(tokens) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("the answer has no \"tokens\" list");
  }
  std::vector<int32_t> ids;
  for (auto element : tokens) {
    int64_t id = 0;
    if (element.get_int64().get(id) != simdjson::SUCCESS || id < INT32_MIN || id > INT32_MAX) {
      return absl::InvalidArgumentError("\"tokens\" holds something else than token ids");
    }
    ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

std::optional<IdDifference> FirstDifference(std::span<const int32_t> gateway,
                                            std::span<const int32_t> backend) {
  const size_t common = std::min(gateway.size(), backend.size());
  for (size_t i = 0; i < common; ++i) {
    if (gateway[i] != backend[i]) return IdDifference{i, gateway[i], backend[i]};
  }
  if (gateway.size() == backend.size()) return std::nullopt;
  IdDifference d{.position = common, .gateway = std::nullopt, .backend = std::nullopt};
  if (common < gateway.size()) d.gateway = gateway[common];
  if (common < backend.size()) d.backend = backend[common];
  return d;
}

std::string_view ParityVerdictName(ParityVerdict verdict) {
  switch (verdict) {
    case ParityVerdict::kMatch:
      return "match";
    case ParityVerdict::kMismatch:
      return "mismatch";
    case ParityVerdict::kNoEndpoint:
      return "no_endpoint";
    case ParityVerdict::kFailed:
      return "failed";
  }
  return "failed";
}

ParityResult JudgeParity(const ParityExpectation& expected, const TokenizeAnswer& chat,
                         const TokenizeAnswer& text) {
  ParityResult result;
  const std::pair<std::string_view, std::pair<const std::vector<int32_t>*, const TokenizeAnswer*>>
      probes[] = {{"chat prompt", {&expected.chat, &chat}}, {"text prompt", {&expected.text, &text}}};
  for (const auto& [what, pair] : probes) {
    const auto& [gateway, answer] = pair;
    std::optional<std::vector<int32_t>> backend = IdsOf(what, *answer, &result);
    if (!backend) return result;
    if (std::optional<IdDifference> d = FirstDifference(*gateway, *backend)) {
      return {.verdict = ParityVerdict::kMismatch,
              .detail = absl::StrCat(AbslView(what), ": first difference at token ", d->position, " of ",
                                     gateway->size(), " (backend ", backend->size(),
                                     "): gateway id ", OptionalId(d->gateway), ", backend id ",
                                     OptionalId(d->backend))};
    }
  }
  return {.verdict = ParityVerdict::kMatch, .detail = ""};
}

}  // namespace warmroute::gateway
