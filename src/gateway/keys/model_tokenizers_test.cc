#include "gateway/keys/model_tokenizers.h"

#include <filesystem>

#include "gateway/keys/test_dirs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::gateway {
namespace {

using ::testing::HasSubstr;
using testing::Qwen3Copy;
using testing::Qwen3Dir;
using testing::ReadText;
using testing::WriteText;

const FixedWallClock kClock(std::chrono::system_clock::from_time_t(1700000000));

TEST(ModelTokenizersTest, LoadsAModelsFilesAndFindsItByName) {
  auto models = ModelTokenizers::Load(
      {{.name = "Qwen/Qwen3-8B", .tokenizer = Qwen3Dir(), .block_size = 16}, {.name = "plain", .tokenizer = "", .block_size = 16}},
      nullptr, kClock);
  ASSERT_TRUE(models.ok()) << models.status();
  const ModelKeying* qwen = (*models)->Find("Qwen/Qwen3-8B");
  ASSERT_NE(qwen, nullptr);
  ASSERT_NE(qwen->files(), nullptr);
  EXPECT_EQ(qwen->block_size(), 16);
  EXPECT_TRUE(qwen->parity_ok());
  EXPECT_EQ(qwen->files()->tokenizer->TokenId("<|im_start|>"), 151644);
  const ModelKeying* plain = (*models)->Find("plain");
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->files(), nullptr);
  EXPECT_EQ((*models)->Find("other"), nullptr);
}

TEST(ModelTokenizersTest, OneDirectoryIsLoadedOnceForEveryModelNamingIt) {
  auto models = ModelTokenizers::Load({{.name = "a", .tokenizer = Qwen3Dir(), .block_size = 16},
                                       {.name = "b", .tokenizer = Qwen3Dir(), .block_size = 32}},
                                      nullptr, kClock);
  ASSERT_TRUE(models.ok()) << models.status();
  EXPECT_EQ((*models)->loaded_dirs(), 1u);
  EXPECT_EQ((*models)->Find("a")->files(), (*models)->Find("b")->files());
  EXPECT_EQ((*models)->Find("b")->block_size(), 32);
}

TEST(ModelTokenizersTest, AReloadKeepsWhatIsUnchangedAndReloadsWhatChanged) {
  const std::string dir = Qwen3Copy();
  const std::vector<ModelConfig> config = {{.name = "a", .tokenizer = dir, .block_size = 16},
                                           {.name = "b", .tokenizer = dir, .block_size = 16}};
  auto first = ModelTokenizers::Load(config, nullptr, kClock);
  ASSERT_TRUE(first.ok()) << first.status();
  (*first)->Find("a")->set_parity_ok(false);

  // Same bytes: the same files and entries (the parity state goes on).
  std::vector<ModelConfig> next = config;
  next[1].block_size = 32;
  auto second = ModelTokenizers::Load(next, first->get(), kClock);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ((*second)->Find("a")->files(), (*first)->Find("a")->files());
  EXPECT_EQ((*second)->Find("a"), (*first)->Find("a"));
  EXPECT_FALSE((*second)->Find("a")->parity_ok());
  // A changed block size: a new entry on the same files.
  EXPECT_NE((*second)->Find("b"), (*first)->Find("b"));
  EXPECT_EQ((*second)->Find("b")->files(), (*first)->Find("b")->files());

  // Edited files: loaded anew, the parity state starts over.
  std::string tokenizer_config = ReadText(dir + "/tokenizer_config.json");
  tokenizer_config.insert(tokenizer_config.find('{') + 1, "\"x_edited\": true, ");
  WriteText(dir + "/tokenizer_config.json", tokenizer_config);
  auto third = ModelTokenizers::Load(next, second->get(), kClock);
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_NE((*third)->Find("a")->files(), (*second)->Find("a")->files());
  EXPECT_TRUE((*third)->Find("a")->parity_ok());
  std::filesystem::remove_all(dir);
}

TEST(ModelTokenizersTest, ErrorsNameTheModelTheFileAndTheProblem) {
  const std::string missing = testing::MakeTempDir();
  auto no_files = ModelTokenizers::Load(
      {{.name = "x", .tokenizer = "", .block_size = 16}, {.name = "m", .tokenizer = missing, .block_size = 16}}, nullptr, kClock);
  ASSERT_EQ(no_files.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(no_files.status().message(),
              HasSubstr("models[1] (m): " + missing +
                        "/tokenizer.json: cannot read: No such file or directory"));

  const std::string no_template = Qwen3Copy(R"({"bos_token": null, "eos_token": "<|im_end|>"})");
  auto refused = ModelTokenizers::Load({{.name = "m", .tokenizer = no_template, .block_size = 16}},
                                       nullptr, kClock);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("models[0] (m): " + no_template + "/tokenizer_config.json: "));
  EXPECT_THAT(refused.status().message(), HasSubstr("no chat_template"));

  const std::string bad_template =
      Qwen3Copy(R"({"chat_template": "{{ messages | wordwrap }}", "eos_token": "<|im_end|>"})");
  auto unsupported = ModelTokenizers::Load(
      {{.name = "m", .tokenizer = bad_template, .block_size = 16}}, nullptr, kClock);
  EXPECT_THAT(unsupported.status().message(), HasSubstr("unsupported filter 'wordwrap'"));

  const std::string bad_tokenizer = testing::MakeTempDir();
  WriteText(bad_tokenizer + "/tokenizer.json", R"({"model": {"type": "Unigram"}})");
  WriteText(bad_tokenizer + "/tokenizer_config.json", ReadText(Qwen3Dir() + "/tokenizer_config.json"));
  auto bad = ModelTokenizers::Load({{.name = "m", .tokenizer = bad_tokenizer, .block_size = 16}},
                                   nullptr, kClock);
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("models[0] (m): " + bad_tokenizer +
                                                "/tokenizer.json: "));
  for (const std::string& d : {missing, no_template, bad_template, bad_tokenizer}) {
    std::filesystem::remove_all(d);
  }
}

}  // namespace
}  // namespace warmroute::gateway
