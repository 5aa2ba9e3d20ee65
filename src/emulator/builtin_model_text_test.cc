#include "emulator/builtin_model_text.h"

#include <string>
#include <vector>

#include "core/request/chat_template.h"
#include "gtest/gtest.h"

namespace warmroute::emulator {
namespace {

request::InferenceRequest Chat(std::string_view body) {
  absl::StatusOr<request::InferenceRequest> r =
      request::ParseInferenceRequest(request::Endpoint::kChatCompletions, body);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : request::InferenceRequest{};
}

TEST(BuiltinModelTextTest, RendersTheLlama3StyleTemplateAndTheBuiltinTokenizer) {
  BuiltinModelText model;
  const request::InferenceRequest chat = Chat(R"({"messages": [
      {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
      "tools": [{"type": "function", "function": {"name": "f"}}]})");
  const absl::StatusOr<std::string> text = model.RenderChat(chat);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, request::RenderChat(chat.messages, chat.tools, true));
  request::BuiltinTokenizer tokenizer;
  EXPECT_EQ(model.Encode(*text, false), tokenizer.Encode(*text));
  // No special tokens of its own: the template writes <|begin_of_text|>.
  EXPECT_EQ(model.Encode(*text, true), tokenizer.Encode(*text));
  EXPECT_EQ(model.vocab_size(), request::BuiltinTokenizer::kVocabSize);
  EXPECT_FALSE(model.bare_chat_start());
}

TEST(BuiltinModelTextTest, DecodesWhatTokenizeReturnedAndTheGeneratedWords) {
  BuiltinModelText model;
  const std::string text = "Hello, world! Supercalifragilistic 123456.";
  const std::vector<int32_t> ids = model.Encode(text, false);
  EXPECT_NE(model.Decode(ids), text);
  const ModelText::Tokens tokens = model.Tokenize(text, false, true);
  EXPECT_EQ(tokens.ids, ids);
  std::string joined;
  for (const std::string& s : tokens.strs) joined += s;
  EXPECT_EQ(joined, text);
  EXPECT_EQ(model.Decode(ids), text);
  const int32_t word = model.generator().Token(3, 2);
  EXPECT_EQ(model.Decode({{word}}), model.generator().Text(3, 2));
}

}  // namespace
}  // namespace warmroute::emulator
