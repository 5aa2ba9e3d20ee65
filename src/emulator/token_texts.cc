#include "emulator/token_texts.h"

#include "absl/strings/str_cat.h"
#include "core/request/chat_template.h"
#include "core/request/tokenizer.h"

namespace warmroute::emulator {

TokenTexts::TokenTexts(const engine::TokenGenerator& generator) {
  using request::BuiltinTokenizer;
  texts_.emplace(BuiltinTokenizer::kBeginOfTextId, request::kBeginOfText);
  texts_.emplace(BuiltinTokenizer::kStartHeaderId, request::kStartHeader);
  texts_.emplace(BuiltinTokenizer::kEndHeaderId, request::kEndHeader);
  texts_.emplace(BuiltinTokenizer::kEndOfTurnId, request::kEndOfTurn);
  for (size_t i = 0; i < generator.num_words(); ++i) {
    texts_.emplace(generator.word_id(i), generator.word_text(i));
  }
}

void TokenTexts::Learn(std::span<const int32_t> ids, std::span<const std::string_view> pieces) {
  for (size_t i = 0; i < ids.size() && i < pieces.size(); ++i) {
    texts_.try_emplace(ids[i], pieces[i]);
  }
}

std::string TokenTexts::Text(int32_t id) const {
  const auto it = texts_.find(id);
  if (it != texts_.end()) return it->second;
  return absl::StrCat("<|token_", id, "|>");
}

std::string TokenTexts::Detokenize(std::span<const int32_t> ids) const {
  std::string text;
  for (int32_t id : ids) {
    const auto it = texts_.find(id);
    if (it != texts_.end()) {
      text.append(it->second);
    } else {
      absl::StrAppend(&text, "<|token_", id, "|>");
    }
  }
  return text;
}

}  // namespace warmroute::emulator
