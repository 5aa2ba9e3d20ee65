// A real model's text for the emulator (model_text.h), from the files of a Hugging Face model
// directory: `warmroute engine --tokenizer DIR` with DIR/tokenizer.json and
// DIR/tokenizer_config.json (its `chat_template` and special tokens).
//
// What vLLM does, and so what this does:
//   - chat, Responses and Messages requests render with the model's Jinja template as vLLM hands
//     it a request (jinja::RenderChatPrompt: core/template/chat_prompt.h, docs/templates.md),
//     strftime_now reading the wall clock in the local time zone (transformers' datetime.now());
//   - text is encoded by tokenize::HfTokenizer: the Rust tokenizers library's ids; with
//     add_special_tokens, the post-processor's tokens too (EncodeWithSpecialTokens);
//   - /tokenize's token_strs are transformers' convert_ids_to_tokens ("Ġworld"), as vLLM's
//     OpenAIServingTokenization.create_tokenize reports them;
//   - /detokenize is transformers' decode(ids) with its defaults: special tokens kept, and with
//     `clean_up_tokenization_spaces: true` in tokenizer_config.json, clean_up_tokenization
//     (" ." -> "." and the like: CleanUpTokenizationSpaces below);
//   - answers start with a bare word (bare_chat_start()).
//
// Usage:
//   absl::StatusOr<std::unique_ptr<HfModelText>> model =
//       HfModelText::FromDirectory("/models/qwen3", &wall_clock);
//   absl::StatusOr<std::string> prompt = (*model)->RenderChat(chat_request);
//
// Thread-safety: every method may run on many threads at once.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "common/wall_clock.h"
#include "core/engine/token_generator.h"
#include "core/template/model_template.h"
#include "core/tokenize/hf_tokenizer.h"
#include "emulator/model_text.h"

namespace warmroute::emulator {

class HfModelText final : public ModelText {
 public:
  struct Files {
    std::string_view tokenizer_json;         // tokenizer.json's text
    std::string_view tokenizer_config_json;  // tokenizer_config.json's text
  };

  // From the files' text. InvalidArgument naming the file ("tokenizer_config.json: ...") for a
  // tokenizer.json HfTokenizer does not support, a config without a chat_template or whose
  // template does not parse; FailedPrecondition when no generated word is a single token of the
  // vocabulary. `clock` (strftime_now's; nullptr makes strftime_now an error) must outlive it.
  static absl::StatusOr<std::unique_ptr<HfModelText>> Create(
      const Files& files, const WallClock* clock, absl::TimeZone time_zone = absl::UTCTimeZone());

  // Reads DIR/tokenizer.json and DIR/tokenizer_config.json; strftime_now in the local time zone.
  // NotFound for a missing directory or file; every message names the path.
  static absl::StatusOr<std::unique_ptr<HfModelText>> FromDirectory(const std::string& dir,
                                                                     const WallClock* clock);

  absl::StatusOr<std::string> RenderChat(const request::InferenceRequest& request) const override;
  std::vector<int32_t> Encode(std::string_view text, bool add_special_tokens) const override;
  Tokens Tokenize(std::string_view text, bool add_special_tokens, bool token_strs) const override;
  std::string Decode(std::span<const int32_t> ids) const override;
  int32_t vocab_size() const override { return tokenizer_->VocabSize(); }
  const engine::TokenGenerator& generator() const override { return *generator_; }
  bool bare_chat_start() const override { return true; }

  const tokenize::HfTokenizer& tokenizer() const { return *tokenizer_; }

 private:
  HfModelText(std::unique_ptr<tokenize::HfTokenizer> tokenizer, jinja::ModelTemplate chat_template,
              std::unique_ptr<engine::TokenGenerator> generator, bool clean_up_spaces,
              const WallClock* clock, absl::TimeZone time_zone);

  std::unique_ptr<tokenize::HfTokenizer> tokenizer_;
  jinja::ModelTemplate template_;
  std::unique_ptr<engine::TokenGenerator> generator_;
  bool clean_up_spaces_;
  const WallClock* clock_;
  absl::TimeZone time_zone_;
};

// transformers' PreTrainedTokenizerBase.clean_up_tokenization: removes the space before
// ".", "?", "!", ",", "n't", "'m", "'s", "'ve", "'re" and around a lone "'", one Python
// str.replace after another, in that order.
std::string CleanUpTokenizationSpaces(std::string text);

}  // namespace warmroute::emulator
