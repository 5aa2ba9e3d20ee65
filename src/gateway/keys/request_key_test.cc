#include "gateway/keys/request_key.h"

#include <filesystem>
#include <string>
#include <vector>

#include "core/request/block_hash.h"
#include "gateway/keys/test_dirs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::gateway {
namespace {

using ::testing::ElementsAreArray;
using request::Endpoint;

const FixedWallClock kClock(std::chrono::system_clock::from_time_t(1700000000));

// The Rust tokenizers library's ids (tests/tokenizers/golden/qwen3.json, and @anush008/tokenizers
// for the chat).
const std::vector<int32_t> kHelloIds = {9707, 11, 1879, 0, 2585, 525, 498, 3730, 3351, 30};
const std::vector<int32_t> kChatHiIds = {151644, 872, 198, 13048, 151645, 198, 151644, 77091, 198};

request::InferenceRequest Parse(Endpoint endpoint, const std::string& body) {
  absl::StatusOr<request::InferenceRequest> r = request::ParseInferenceRequest(endpoint, body);
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

class RequestKeyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    raise_dir_ = new std::string(testing::Qwen3Copy(
        R"({"chat_template": "{{ raise_exception('System role not supported') }}"})"));
    empty_dir_ = new std::string(testing::Qwen3Copy(R"({"chat_template": "{% if false %}x{% endif %}"})"));
    auto models = ModelTokenizers::Load(
        {{.name = "qwen", .tokenizer = testing::Qwen3Dir(), .block_size = 4},
         {.name = "qwen16", .tokenizer = testing::Qwen3Dir(), .block_size = 16},
         {.name = "raises", .tokenizer = *raise_dir_, .block_size = 4},
         {.name = "empty", .tokenizer = *empty_dir_, .block_size = 4},
         {.name = "plain", .tokenizer = "", .block_size = 16}},
        nullptr, kClock);
    ASSERT_TRUE(models.ok()) << models.status();
    models_ = new std::shared_ptr<const ModelTokenizers>(*models);
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*raise_dir_);
    std::filesystem::remove_all(*empty_dir_);
    delete models_;
    delete raise_dir_;
    delete empty_dir_;
  }

  RequestKey Key(const request::InferenceRequest& r, const std::string& body,
                 PrefixKeyMode mode = PrefixKeyMode::kAuto, std::string_view salt = "") {
    return MakeRequestKey(r, {.body = body,
                              .tenant = "",
                              .precise_salt = salt,
                              .options = &options_,
                              .mode = mode,
                              .models = models_->get()});
  }

  static std::vector<uint64_t> EngineHashes(std::string_view model, std::string_view salt,
                                            const std::vector<int32_t>& ids, int block) {
    return request::HashFullBlocks(
        ids, block, request::RootBlockHash({.model = model, .lora = "", .cache_salt = salt}));
  }

  routing::PrefixKeyOptions options_;
  static inline std::shared_ptr<const ModelTokenizers>* models_ = nullptr;
  static inline std::string* raise_dir_ = nullptr;
  static inline std::string* empty_dir_ = nullptr;
};

TEST_F(RequestKeyTest, ACompletionPromptIsKeyedByItsIdsInTheEnginesBlocks) {
  const std::string body = R"({"model": "qwen", "prompt": "Hello, world! How are you doing today?"})";
  const RequestKey key = Key(Parse(Endpoint::kCompletions, body), body);
  EXPECT_TRUE(key.precise);
  EXPECT_EQ(key.reason, "tokenized");
  EXPECT_EQ(key.key.prompt_tokens, 10);
  EXPECT_EQ(key.key.tokens_per_block, 4);
  EXPECT_EQ(key.key.block_hashes,
            routing::MakePrefixKeyFromTokens("qwen", "", kHelloIds,
                                             {.block_tokens = 4, .max_tokens = 1 << 20})
                .block_hashes);
  EXPECT_THAT(key.key.block_hashes, ElementsAreArray(EngineHashes("qwen", "", kHelloIds, 4)));
}

TEST_F(RequestKeyTest, AChatIsRenderedWithTheModelsTemplateAndEncodedWithoutSpecialTokens) {
  const std::string body = R"({"model": "qwen", "messages": [{"role": "user", "content": "Hi"}]})";
  const RequestKey key = Key(Parse(Endpoint::kChatCompletions, body), body, PrefixKeyMode::kPrecise,
                             "salt-1");
  EXPECT_TRUE(key.precise);
  EXPECT_EQ(key.key.prompt_tokens, 9);
  EXPECT_THAT(key.key.block_hashes,
              ElementsAreArray(EngineHashes("qwen", "salt-1", kChatHiIds, 4)));
  // Another salt, another chain.
  const RequestKey other = Key(Parse(Endpoint::kChatCompletions, body), body,
                               PrefixKeyMode::kPrecise, "salt-2");
  EXPECT_NE(other.key.block_hashes.front(), key.key.block_hashes.front());
}

TEST_F(RequestKeyTest, ResponsesAndMessagesRequestsAreKeyedAsTheSameChat) {
  const std::string chat = R"({"model": "qwen", "messages": [
      {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there"}]})";
  const std::string responses = R"({"model": "qwen", "instructions": "Be brief.",
                                     "input": "Hi there"})";
  const std::string messages = R"({"model": "qwen", "max_tokens": 8, "system": "Be brief.",
      "messages": [{"role": "user", "content": "Hi there"}]})";
  const RequestKey from_chat = Key(Parse(Endpoint::kChatCompletions, chat), chat);
  const RequestKey from_responses = Key(Parse(Endpoint::kResponses, responses), responses);
  const RequestKey from_messages = Key(Parse(Endpoint::kMessages, messages), messages);
  ASSERT_TRUE(from_chat.precise);
  EXPECT_TRUE(from_responses.precise);
  EXPECT_TRUE(from_messages.precise);
  EXPECT_EQ(from_responses.key.block_hashes, from_chat.key.block_hashes);
  EXPECT_EQ(from_messages.key.block_hashes, from_chat.key.block_hashes);
  // Their tools are not rendered as vLLM would: approximate.
  const std::string with_tools = R"({"model": "qwen", "input": "Hi",
      "tools": [{"type": "function", "name": "f", "parameters": {}}]})";
  const RequestKey tools = Key(Parse(Endpoint::kResponses, with_tools), with_tools);
  EXPECT_FALSE(tools.precise);
  EXPECT_EQ(tools.reason, "unsupported_request");
}

TEST_F(RequestKeyTest, TokenPromptsUseTheModelsBlockSizeOverTheWholePrompt) {
  std::string body = R"({"model": "qwen16", "prompt": [)";
  std::vector<int32_t> ids;
  for (int i = 0; i < 10000; ++i) {
    ids.push_back(i % 5000);
    body += (i ? "," : "") + std::to_string(i % 5000);
  }
  body += "]}";
  const RequestKey key = Key(Parse(Endpoint::kCompletions, body), body);
  EXPECT_TRUE(key.precise);
  EXPECT_EQ(key.reason, "token_prompt");
  EXPECT_EQ(key.key.block_hashes.size(), 625u);  // no max_tokens (4096) cut
  EXPECT_THAT(key.key.block_hashes, ElementsAreArray(EngineHashes("qwen16", "", ids, 16)));
}

TEST_F(RequestKeyTest, ALongChatIsKeyedWhole) {
  std::string text;
  for (int i = 0; i < 4000; ++i) text += "word" + std::to_string(i) + " ";
  const std::string body = R"({"model": "qwen16", "messages": [{"role": "user", "content": ")" +
                           text + R"("}]})";
  const RequestKey key = Key(Parse(Endpoint::kChatCompletions, body), body);
  ASSERT_TRUE(key.precise);
  EXPECT_EQ(key.key.block_hashes.size(), static_cast<size_t>(key.key.prompt_tokens / 16));
  EXPECT_GT(key.key.block_hashes.size(), 16384u / 64);  // beyond the approximate max_chars
}

// Chats that share a long system prompt: from the second one on, the encode restarts from the
// remembered system prompt and the key reuses its block hashes (block_hash_memo.h). Every key,
// its token count and its domain must be those of the chat's full ids, whatever the salt.
TEST_F(RequestKeyTest, ChatsThatShareASystemPromptAreKeyedByTheirFullIds) {
  std::string system;
  for (int i = 0; system.size() < 6000; ++i) {
    system += "Rule " + std::to_string(i) + ": answer politely, cite the policy section.\\n";
  }
  for (const std::string salt : {"", "", "tenant-a", "", "tenant-a"}) {
    for (int n = 0; n < 3; ++n) {
      const std::string body =
          R"({"model": "qwen16", "messages": [{"role": "system", "content": ")" + system +
          R"("}, {"role": "user", "content": "Ticket )" + std::to_string(n) + salt +
          R"(: where is my order?"}]})";
      const request::InferenceRequest r = Parse(Endpoint::kChatCompletions, body);
      const RequestKey key = Key(r, body, PrefixKeyMode::kPrecise, salt);
      ASSERT_TRUE(key.precise) << key.reason;
      absl::StatusOr<std::vector<int32_t>> ids =
          EnginePromptIds(r, *(*models_)->Find("qwen16")->files(), kClock);
      ASSERT_TRUE(ids.ok()) << ids.status();
      EXPECT_EQ(key.key.prompt_tokens, static_cast<int64_t>(ids->size()));
      EXPECT_THAT(key.key.block_hashes, ElementsAreArray(EngineHashes("qwen16", salt, *ids, 16)));
      const routing::DispatchDomain domain =
          routing::DomainOfTokenPrompt("qwen16", "", salt, *ids, 16);
      EXPECT_EQ(key.domain.first_block, domain.first_block);
      EXPECT_EQ(key.domain.record.root, domain.record.root);
    }
  }
}

TEST_F(RequestKeyTest, FallsBackToTheApproximateKeyWithItsReason) {
  const auto expect_fallback = [&](const std::string& model, Endpoint endpoint,
                                   const std::string& rest, std::string_view reason,
                                   PrefixKeyMode mode = PrefixKeyMode::kAuto) {
    const std::string body = R"({"model": ")" + model + "\", " + rest + "}";
    const request::InferenceRequest r = Parse(endpoint, body);
    const RequestKey key = Key(r, body, mode);
    EXPECT_FALSE(key.precise) << body;
    EXPECT_EQ(key.reason, reason) << body;
    EXPECT_EQ(key.key.block_hashes, routing::MakePrefixKey(r, "", options_).block_hashes) << body;
  };
  const std::string chat = R"("messages": [{"role": "system", "content": "Be brief."},
                                          {"role": "user", "content": "Hi"}])";
  expect_fallback("qwen", Endpoint::kChatCompletions, chat, "configured",
                  PrefixKeyMode::kApproximate);
  expect_fallback("other", Endpoint::kChatCompletions, chat, "no_tokenizer");
  expect_fallback("plain", Endpoint::kChatCompletions, chat, "no_tokenizer",
                  PrefixKeyMode::kPrecise);
  expect_fallback("raises", Endpoint::kChatCompletions, chat, "template_error");
  expect_fallback("empty", Endpoint::kChatCompletions, chat, "empty_prompt");
  expect_fallback("qwen", Endpoint::kChatCompletions,
                  chat + R"(, "continue_final_message": true, "add_generation_prompt": false)",
                  "unsupported_request");
  expect_fallback("qwen", Endpoint::kChatCompletions, chat + R"(, "chat_template": "{{ 1 }}")",
                  "unsupported_request");
  expect_fallback("qwen", Endpoint::kCompletions, R"("prompt": "Hi", "add_special_tokens": false)",
                  "unsupported_request");

  (*models_)->Find("qwen")->set_parity_ok(false);
  expect_fallback("qwen", Endpoint::kChatCompletions, chat, "parity_mismatch");
  (*models_)->Find("qwen")->set_parity_ok(true);
}

TEST_F(RequestKeyTest, EnginePromptIdsAreTheParityProbesExpectation) {
  const std::string body = R"({"model": "qwen", "messages": [{"role": "user", "content": "Hi"}]})";
  absl::StatusOr<std::vector<int32_t>> ids = EnginePromptIds(
      Parse(Endpoint::kChatCompletions, body), *(*models_)->Find("qwen")->files(), kClock);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(*ids, kChatHiIds);
}

}  // namespace
}  // namespace warmroute::gateway
