#include "gateway/keys/parity_probe.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gateway/keys/test_dirs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::gateway {
namespace {

using ::testing::HasSubstr;

const FixedWallClock kClock(std::chrono::system_clock::from_time_t(1700000000));

std::string Answer(const std::vector<int32_t>& ids) {
  return absl::StrCat(R"({"count": )", ids.size(), R"(, "max_model_len": 40960, "tokens": [)",
                      absl::StrJoin(ids, ", "), "]}");
}

TEST(ParityProbeTest, TheBodiesAreVllmsTokenizeRequests) {
  EXPECT_THAT(ParityChatBody("m"), HasSubstr(R"({"model":"m","messages":[{"role":"system",)"));
  EXPECT_THAT(ParityChatBody("m"), HasSubstr(R"("add_generation_prompt":true})"));
  EXPECT_THAT(ParityTextBody("m"), HasSubstr(R"({"model":"m","prompt":"The naïve café)"));
  const request::InferenceRequest chat = ParityChatRequest("m");
  ASSERT_EQ(chat.messages.size(), 2u);
  EXPECT_EQ(chat.messages[1].content, kParityUser);
  EXPECT_EQ(ParityTextRequest("m").prompt, kParityText);
}

TEST(ParityProbeTest, ReadsTheTokensOfAnAnswer) {
  EXPECT_EQ(*ParseTokenizeAnswer(Answer({1, 2, 151644})), (std::vector<int32_t>{1, 2, 151644}));
  EXPECT_FALSE(ParseTokenizeAnswer("not json").ok());
  EXPECT_FALSE(ParseTokenizeAnswer(R"({"count": 2})").ok());
  EXPECT_FALSE(ParseTokenizeAnswer(R"({"tokens": ["a"]})").ok());
  EXPECT_FALSE(ParseTokenizeAnswer(R"({"tokens": [4294967296]})").ok());
}

TEST(ParityProbeTest, FirstDifference) {
  EXPECT_FALSE(FirstDifference(std::vector<int32_t>{1, 2}, std::vector<int32_t>{1, 2}));
  auto d = FirstDifference(std::vector<int32_t>{1, 2, 3}, std::vector<int32_t>{1, 5, 3});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->position, 1u);
  EXPECT_EQ(d->gateway, 2);
  EXPECT_EQ(d->backend, 5);
  d = FirstDifference(std::vector<int32_t>{1, 2}, std::vector<int32_t>{1, 2, 9});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->position, 2u);
  EXPECT_EQ(d->gateway, std::nullopt);
  EXPECT_EQ(d->backend, 9);
}

TEST(ParityProbeTest, JudgesAnswers) {
  const ParityExpectation expected{.chat = {10, 11, 12}, .text = {20, 21}};
  const TokenizeAnswer chat_ok{.status = 200, .body = Answer({10, 11, 12}), .error = ""};
  const TokenizeAnswer text_ok{.status = 200, .body = Answer({20, 21}), .error = ""};
  EXPECT_EQ(JudgeParity(expected, chat_ok, text_ok).verdict, ParityVerdict::kMatch);

  ParityResult r = JudgeParity(expected, {.status = 200, .body = Answer({10, 13, 12}), .error = ""},
                               text_ok);
  EXPECT_EQ(r.verdict, ParityVerdict::kMismatch);
  EXPECT_EQ(r.detail,
            "chat prompt: first difference at token 1 of 3 (backend 3): gateway id 11, backend "
            "id 13");
  r = JudgeParity(expected, chat_ok, {.status = 200, .body = Answer({20}), .error = ""});
  EXPECT_EQ(r.verdict, ParityVerdict::kMismatch);
  EXPECT_THAT(r.detail, HasSubstr("text prompt: first difference at token 1 of 2 (backend 1): "
                                  "gateway id 21, backend id (none: the list ends)"));

  r = JudgeParity(expected, {.status = 404, .body = "{}", .error = ""}, {});
  EXPECT_EQ(r.verdict, ParityVerdict::kNoEndpoint);
  r = JudgeParity(expected, {.status = 0, .body = "", .error = "connection refused"}, {});
  EXPECT_EQ(r.verdict, ParityVerdict::kFailed);
  EXPECT_THAT(r.detail, HasSubstr("connection refused"));
  r = JudgeParity(expected, {.status = 500, .body = "", .error = ""}, {});
  EXPECT_EQ(r.verdict, ParityVerdict::kFailed);
  r = JudgeParity(expected, {.status = 200, .body = "[]", .error = ""}, {});
  EXPECT_EQ(r.verdict, ParityVerdict::kFailed);
}

TEST(ParityProbeTest, ExpectsWhatTheModelsFilesGive) {
  auto models = ModelTokenizers::Load({{.name = "q", .tokenizer = testing::Qwen3Dir(),
                                        .block_size = 16}},
                                      nullptr, kClock);
  ASSERT_TRUE(models.ok()) << models.status();
  const TokenizerFiles& files = *(*models)->Find("q")->files();
  absl::StatusOr<ParityExpectation> expected = ExpectParity("q", files, kClock);
  ASSERT_TRUE(expected.ok()) << expected.status();
  // <|im_start|>system\n ... the generation prompt <|im_start|>assistant\n.
  ASSERT_GT(expected->chat.size(), 20u);
  EXPECT_EQ(expected->chat.front(), 151644);
  EXPECT_EQ(expected->chat[expected->chat.size() - 2], 77091);
  EXPECT_EQ(expected->text, files.tokenizer->EncodeWithSpecialTokens(kParityText));

  // A template that refuses the probe chat: the check cannot run.
  const std::string dir = testing::Qwen3Copy(
      R"({"chat_template": "{% if messages[0].role == 'system' %}{{ raise_exception('no system') }}{% endif %}"})");
  auto refusing = ModelTokenizers::Load({{.name = "r", .tokenizer = dir, .block_size = 16}},
                                        nullptr, kClock);
  ASSERT_TRUE(refusing.ok()) << refusing.status();
  absl::StatusOr<ParityExpectation> none =
      ExpectParity("r", *(*refusing)->Find("r")->files(), kClock);
  EXPECT_THAT(none.status().message(), HasSubstr("cannot render the probe chat"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace warmroute::gateway
