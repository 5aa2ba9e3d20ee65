#include "emulator/hf_model_text.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "common/status.h"
#include "core/template/chat_prompt.h"
#include "simdjson.h"

namespace warmroute::emulator {
namespace {

// tokenizer_config.json's clean_up_tokenization_spaces; without it, transformers' default:
// false. A file that is not a JSON object was refused by ModelTemplate already.
bool CleanUpSpaces(std::string_view config_json) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(config_json.data(), config_json.size()).get(root) != simdjson::SUCCESS) {
    return false;
  }
  bool clean_up = false;
  if (root["clean_up_tokenization_spaces"].get(clean_up) != simdjson::SUCCESS) return false;
  return clean_up;
}

// The whole text of `path`; NotFound naming it when it cannot be read.
absl::StatusOr<std::string> ReadText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path.string(), ": cannot read the file"));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::NotFoundError(absl::StrCat(path.string(), ": cannot read the file"));
  return std::move(text).str();
}

absl::Status Prefixed(const absl::Status& status, std::string_view prefix) {
  return absl::Status(status.code(), absl::StrCat(AbslView(prefix), ": ", status.message()));
}

}  // namespace

std::string CleanUpTokenizationSpaces(std::string text) {
  constexpr std::pair<std::string_view, std::string_view> kReplacements[] = {
      {" .", "."},   {" ?", "?"},     {" !", "!"},     {" ,", ","},     {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kReplacements) {
    // Python's str.replace: every non-overlapping occurrence, left to right.
    size_t at = text.find(from);
    if (at == std::string::npos) continue;
    std::string out;
    size_t done = 0;
    for (; at != std::string::npos; at = text.find(from, done)) {
      out.append(text, done, at - done).append(to);
      done = at + from.size();
    }
    out.append(text, done);
    text = std::move(out);
  }
  return text;
}

absl::StatusOr<std::unique_ptr<HfModelText>> HfModelText::Create(const Files& files,
                                                                  const WallClock* clock,
                                                                  absl::TimeZone time_zone) {
  absl::StatusOr<std::unique_ptr<tokenize::HfTokenizer>> tokenizer =
      tokenize::HfTokenizer::FromJson(files.tokenizer_json, tokenize::HfTokenizer::Options());
  // HfTokenizer's messages start "tokenizer.json"; name the file where they do not.
  if (!tokenizer.ok()) {
    if (absl::StartsWith(tokenizer.status().message(), "tokenizer.json")) {
      return tokenizer.status();
    }
    return Prefixed(tokenizer.status(), "tokenizer.json");
  }
  absl::StatusOr<jinja::ModelTemplate> chat_template =
      jinja::ModelTemplate::FromTokenizerConfig(files.tokenizer_config_json);
  if (!chat_template.ok()) return Prefixed(chat_template.status(), "tokenizer_config.json");
  absl::StatusOr<std::unique_ptr<engine::TokenGenerator>> generator =
      engine::TokenGenerator::Create(**tokenizer);
  if (!generator.ok()) return Prefixed(generator.status(), "tokenizer.json");
  return std::unique_ptr<HfModelText>(new HfModelText(
      *std::move(tokenizer), *std::move(chat_template), *std::move(generator),
      CleanUpSpaces(files.tokenizer_config_json), clock, time_zone));
}

absl::StatusOr<std::unique_ptr<HfModelText>> HfModelText::FromDirectory(const std::string& dir,
                                                                         const WallClock* clock) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    return absl::NotFoundError(absl::StrCat(dir, ": not a directory"));
  }
  const std::filesystem::path base(dir);
  WR_ASSIGN_OR_RETURN(const std::string tokenizer_json, ReadText(base / "tokenizer.json"));
  WR_ASSIGN_OR_RETURN(const std::string config_json, ReadText(base / "tokenizer_config.json"));
  absl::StatusOr<std::unique_ptr<HfModelText>> model =
      Create({.tokenizer_json = tokenizer_json, .tokenizer_config_json = config_json}, clock,
             absl::LocalTimeZone());
  // The messages name the file; give its whole path.
  if (!model.ok()) return Prefixed(model.status(), dir);
  return model;
}

HfModelText::HfModelText(std::unique_ptr<tokenize::HfTokenizer> tokenizer,
                         jinja::ModelTemplate chat_template,
                         std::unique_ptr<engine::TokenGenerator> generator, bool clean_up_spaces,
                         const WallClock* clock, absl::TimeZone time_zone)
    : tokenizer_(std::move(tokenizer)),
      template_(std::move(chat_template)),
      generator_(std::move(generator)),
      clean_up_spaces_(clean_up_spaces),
      clock_(clock),
      time_zone_(time_zone) {}

absl::StatusOr<std::string> HfModelText::RenderChat(
    const request::InferenceRequest& request) const {
  absl::StatusOr<std::string> text = jinja::RenderChatPrompt(
      request, template_, {.clock = clock_, .time_zone = time_zone_});
  // A template past its limits is the request's fault, as any other template error (vLLM
  // answers 400 for a template error), not a rate limit.
  if (text.status().code() == absl::StatusCode::kResourceExhausted) {
    return absl::InvalidArgumentError(text.status().message());
  }
  return text;
}

std::vector<int32_t> HfModelText::Encode(std::string_view text, bool add_special_tokens) const {
  return add_special_tokens ? tokenizer_->EncodeWithSpecialTokens(text) : tokenizer_->Encode(text);
}

ModelText::Tokens HfModelText::Tokenize(std::string_view text, bool add_special_tokens,
                                        bool token_strs) const {
  Tokens tokens;
  tokens.ids = Encode(text, add_special_tokens);
  if (token_strs) {
    tokens.strs.reserve(tokens.ids.size());
    for (int32_t id : tokens.ids) tokens.strs.push_back(tokenizer_->TokenString(id).value_or(""));
  }
  return tokens;
}

std::string HfModelText::Decode(std::span<const int32_t> ids) const {
  std::string text = tokenizer_->Decode(ids, /*skip_special_tokens=*/false);
  return clean_up_spaces_ ? CleanUpTokenizationSpaces(std::move(text)) : text;
}

}  // namespace warmroute::emulator
