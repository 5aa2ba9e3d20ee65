#include "emulator/tokenize.h"

#include <string>
#include <vector>

#include "common/status.h"
#include "core/engine/token_generator.h"
#include "core/request/tokenizer.h"
#include "emulator/token_texts.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simdjson.h"

namespace warmroute::emulator {
namespace {

using ::testing::ElementsAre;

TEST(TokenizeRequestTest, ReadsAPromptOrMessages) {
  absl::StatusOr<TokenizeRequest> req =
      ParseTokenizeRequest(R"({"model": "m", "prompt": "Hello", "return_token_strs": true})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_FALSE(req->chat);
  EXPECT_EQ(req->model, "m");
  EXPECT_EQ(req->prompt, "Hello");
  EXPECT_TRUE(req->return_token_strs);
  EXPECT_TRUE(req->add_special_tokens);  // TokenizeCompletionRequest's default

  req = ParseTokenizeRequest(
      R"({"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": false,
          "tools": [{"type": "function", "function": {"name": "f"}}]})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_TRUE(req->chat);
  EXPECT_EQ(req->chat_request.messages, (std::vector<request::ChatMessage>{{"user", "Hi"}}));
  EXPECT_FALSE(req->chat_request.add_generation_prompt);
  EXPECT_EQ(req->chat_request.tools, R"([{"type":"function","function":{"name":"f"}}])");
  EXPECT_FALSE(req->add_special_tokens);  // TokenizeChatRequest's default
  EXPECT_FALSE(req->return_token_strs);
}

TEST(TokenizeRequestTest, AddSpecialTokensOverridesEitherDefault) {
  absl::StatusOr<TokenizeRequest> req =
      ParseTokenizeRequest(R"({"prompt": "Hello", "add_special_tokens": false})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_FALSE(req->add_special_tokens);
  req = ParseTokenizeRequest(
      R"({"messages": [{"role": "user", "content": "Hi"}], "add_special_tokens": true})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_TRUE(req->add_special_tokens);
  req = ParseTokenizeRequest(R"({"prompt": "Hello", "add_special_tokens": null})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_TRUE(req->add_special_tokens);
  req = ParseTokenizeRequest(R"({"prompt": "Hello", "add_special_tokens": 0})");
  ASSERT_FALSE(req.ok());
  EXPECT_EQ(ParamOf(req.status()), "add_special_tokens");
}

TEST(TokenizeRequestTest, RejectsBadBodies) {
  const auto param = [](std::string body) {
    absl::StatusOr<TokenizeRequest> req = ParseTokenizeRequest(body);
    EXPECT_FALSE(req.ok()) << body;
    return req.ok() ? std::string("ok") : ParamOf(req.status()).value_or("none");
  };
  EXPECT_EQ(param(R"({"model": "m"})"), "prompt");
  EXPECT_EQ(param(R"({"prompt": "a", "messages": []})"), "messages");
  EXPECT_EQ(param(R"({"prompt": [1, 2]})"), "prompt");
  EXPECT_EQ(param(R"({"messages": []})"), "messages");
  EXPECT_EQ(param(R"({"prompt": "a", "return_token_strs": "yes"})"), "return_token_strs");
  EXPECT_EQ(param("[]"), "none");
}

TEST(TokenizeResponseTest, IsVllmShaped) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  const std::vector<int32_t> ids = {1, 300};
  ASSERT_EQ(parser.parse(TokenizeResponse(ids, 4096, nullptr)).get(doc), simdjson::SUCCESS);
  EXPECT_EQ(int64_t(doc["count"]), 2);
  EXPECT_EQ(int64_t(doc["max_model_len"]), 4096);
  EXPECT_EQ(int64_t(doc["tokens"].at(1)), 300);
  EXPECT_TRUE(doc["token_strs"].is_null());
  const std::vector<std::string> strs = {"<|begin_of_text|>", " hi"};
  ASSERT_EQ(parser.parse(TokenizeResponse(ids, 4096, &strs)).get(doc), simdjson::SUCCESS);
  EXPECT_EQ(std::string_view(doc["token_strs"].at(1)), " hi");
}

TEST(DetokenizeRequestTest, ReadsTokenIds) {
  absl::StatusOr<DetokenizeRequest> req = ParseDetokenizeRequest(R"({"tokens": [1, 2, 300]})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_THAT(req->tokens, ElementsAre(1, 2, 300));
  for (const char* body :
       {R"({})", R"({"tokens": "1"})", R"({"tokens": [-1]})", R"({"tokens": [1.5]})"}) {
    absl::StatusOr<DetokenizeRequest> bad = ParseDetokenizeRequest(body);
    ASSERT_FALSE(bad.ok()) << body;
    EXPECT_EQ(ParamOf(bad.status()), "tokens") << body;
  }
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(DetokenizeResponse("a \"b\"")).get(doc), simdjson::SUCCESS);
  EXPECT_EQ(std::string_view(doc["prompt"]), "a \"b\"");
}

TEST(TokenTextsTest, DetokenizesWhatItLearnedTheGeneratedWordsAndSpecialTokens) {
  request::BuiltinTokenizer tokenizer;
  engine::TokenGenerator generator(tokenizer);
  TokenTexts texts(generator);
  const std::string text = "Hello, world! Supercalifragilistic 123456 don't.";
  std::vector<std::string_view> pieces;
  const std::vector<int32_t> ids = tokenizer.Encode(text, &pieces);
  EXPECT_NE(texts.Detokenize(ids), text);
  texts.Learn(ids, pieces);
  EXPECT_EQ(texts.Detokenize(ids), text);
  EXPECT_EQ(texts.Text(request::BuiltinTokenizer::kEndOfTurnId), "<|eot_id|>");
  EXPECT_EQ(texts.Text(generator.Token(7, 3)), generator.Text(7, 3));
  EXPECT_EQ(texts.Text(0), "<|token_0|>");
  const size_t known = texts.size();
  texts.Learn(ids, pieces);  // nothing new
  EXPECT_EQ(texts.size(), known);
}

}  // namespace
}  // namespace warmroute::emulator
