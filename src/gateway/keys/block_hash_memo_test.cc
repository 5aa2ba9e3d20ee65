#include "gateway/keys/block_hash_memo.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gateway/keys/test_dirs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::gateway {
namespace {

using ::testing::ElementsAreArray;
using Reuse = tokenize::HfTokenizer::Reuse;

routing::PrefixKeyOptions Blocks(int block_tokens) {
  routing::PrefixKeyOptions options;
  options.block_tokens = block_tokens;
  options.max_tokens = 0;
  return options;
}

std::vector<int32_t> Ids(size_t n, int32_t first) {
  std::vector<int32_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = first + static_cast<int32_t>(i * 7 % 1000);
  return ids;
}

// The key MakeKey must give: the one of a full hash.
std::vector<uint64_t> Full(std::string_view salt, const std::vector<int32_t>& ids, int block) {
  return routing::MakePrefixKeyFromTokens("m", salt, ids, Blocks(block)).block_hashes;
}

TEST(BlockHashMemoTest, GivesTheFullHashesWithAndWithoutReuse) {
  BlockHashMemo memo;
  auto remembered = std::make_shared<const std::vector<int32_t>>(Ids(100, 1));
  std::vector<int32_t> prompt(remembered->begin(), remembered->begin() + 70);  // parts at 70
  for (int32_t id : Ids(45, 5000)) prompt.push_back(id);

  const routing::PrefixKey none = memo.MakeKey("m", "", Reuse(), prompt, Blocks(16));
  EXPECT_THAT(none.block_hashes, ElementsAreArray(Full("", prompt, 16)));
  EXPECT_EQ(memo.size(), 0u);

  for (int round = 0; round < 2; ++round) {
    const routing::PrefixKey key =
        memo.MakeKey("m", "", Reuse{remembered, 70}, std::span(prompt).subspan(70), Blocks(16));
    EXPECT_THAT(key.block_hashes, ElementsAreArray(Full("", prompt, 16)));
    EXPECT_EQ(key.prompt_tokens, 115);
    EXPECT_EQ(key.tokens_per_block, 16);
  }
  EXPECT_EQ(memo.misses(), 1u);
  EXPECT_EQ(memo.hits(), 1u);
}

TEST(BlockHashMemoTest, KeysItsEntriesBySaltModelAndBlockSize) {
  BlockHashMemo memo;
  auto remembered = std::make_shared<const std::vector<int32_t>>(Ids(64, 1));
  std::vector<int32_t> prompt = *remembered;
  prompt.push_back(42);
  const Reuse reuse{remembered, 64};
  const std::vector<int32_t> rest = {42};
  EXPECT_THAT(memo.MakeKey("m", "a", reuse, rest, Blocks(16)).block_hashes,
              ElementsAreArray(Full("a", prompt, 16)));
  EXPECT_THAT(memo.MakeKey("m", "b", reuse, rest, Blocks(16)).block_hashes,
              ElementsAreArray(Full("b", prompt, 16)));
  EXPECT_THAT(memo.MakeKey("m", "b", reuse, rest, Blocks(4)).block_hashes,
              ElementsAreArray(Full("b", prompt, 4)));
  EXPECT_THAT(memo.MakeKey("other", "b", reuse, rest, Blocks(4)).block_hashes,
              ElementsAreArray(
                  routing::MakePrefixKeyFromTokens("other", "b", prompt, Blocks(4)).block_hashes));
  EXPECT_EQ(memo.hits(), 0u);
}

// A remembered vector that is freed, and another one allocated (most likely at the same address)
// with other ids: the memo must not give the first one's hashes for it.
TEST(BlockHashMemoTest, ANewVectorAtAFreedOnesAddressIsHashedAgain) {
  BlockHashMemo memo;
  std::shared_ptr<const std::vector<int32_t>> first(new std::vector<int32_t>(Ids(64, 1)));
  const std::vector<int32_t>* address = first.get();
  std::vector<int32_t> prompt = *first;
  EXPECT_THAT(memo.MakeKey("m", "", Reuse{first, 64}, {}, Blocks(16)).block_hashes,
              ElementsAreArray(Full("", prompt, 16)));
  first.reset();
  std::shared_ptr<const std::vector<int32_t>> second(new std::vector<int32_t>(Ids(64, 9000)));
  std::vector<int32_t> other = *second;
  EXPECT_THAT(memo.MakeKey("m", "", Reuse{second, 64}, {}, Blocks(16)).block_hashes,
              ElementsAreArray(Full("", other, 16)));
  EXPECT_EQ(memo.hits(), 0u) << "same address: " << (second.get() == address);
}

TEST(BlockHashMemoTest, DropsTheOldestEntryWhenFull) {
  BlockHashMemo memo;
  std::vector<std::shared_ptr<const std::vector<int32_t>>> texts;
  for (size_t i = 0; i <= BlockHashMemo::kEntries; ++i) {
    texts.push_back(std::make_shared<const std::vector<int32_t>>(Ids(32, static_cast<int32_t>(i))));
    memo.MakeKey("m", "", Reuse{texts.back(), 32}, {}, Blocks(16));
  }
  EXPECT_EQ(memo.size(), BlockHashMemo::kEntries);
  memo.MakeKey("m", "", Reuse{texts.back(), 32}, {}, Blocks(16));
  EXPECT_EQ(memo.hits(), 1u);
  EXPECT_THAT(memo.MakeKey("m", "", Reuse{texts.front(), 32}, {}, Blocks(16)).block_hashes,
              ElementsAreArray(Full("", *texts.front(), 16)));
  EXPECT_EQ(memo.hits(), 1u);  // the first text was dropped: hashed again
}

// With the tokenizer: a prompt that restarts from a remembered system prompt is returned after
// the ids it reused, which are the remembered ones, and its key is the full key.
TEST(BlockHashMemoTest, KeysAPromptThatReusedARememberedSystemPrompt) {
  absl::StatusOr<std::unique_ptr<tokenize::HfTokenizer>> tok =
      tokenize::HfTokenizer::FromFile(testing::Qwen3Dir() + "/tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status();
  // The expected ids, from a tokenizer that remembers nothing.
  absl::StatusOr<std::unique_ptr<tokenize::HfTokenizer>> plain = tokenize::HfTokenizer::FromFile(
      testing::Qwen3Dir() + "/tokenizer.json", {.prefix_cache_bytes = 0});
  ASSERT_TRUE(plain.ok()) << plain.status();
  std::string system = "<|im_start|>system\n";
  for (int i = 0; system.size() < 4000; ++i) {
    absl::StrAppend(&system, "Rule ", i, ": answer politely and cite the policy.\n");
  }
  absl::StrAppend(&system, "<|im_end|>\n");
  Reuse reuse;
  const std::string first = system + "<|im_start|>user\nHello<|im_end|>\n";
  EXPECT_THAT((*tok)->EncodeAfterReuse(first, &reuse), ElementsAreArray((*plain)->Encode(first)));
  EXPECT_EQ(reuse.ids, 0u);  // nothing remembered yet: all of it returned
  const std::string text = system + "<|im_start|>user\nWhere is my order?<|im_end|>\n";
  const std::vector<int32_t> rest = (*tok)->EncodeAfterReuse(text, &reuse);
  ASSERT_NE(reuse.remembered, nullptr);
  ASSERT_GT(reuse.ids, 64u);
  ASSERT_LE(reuse.ids, reuse.remembered->size());
  std::vector<int32_t> ids(reuse.remembered->begin(),
                           reuse.remembered->begin() + static_cast<ptrdiff_t>(reuse.ids));
  ids.insert(ids.end(), rest.begin(), rest.end());
  EXPECT_THAT(ids, ElementsAreArray((*plain)->Encode(text)));
  BlockHashMemo memo;
  for (int round = 0; round < 2; ++round) {
    EXPECT_THAT(memo.MakeKey("m", "s", reuse, rest, Blocks(16)).block_hashes,
                ElementsAreArray(Full("s", ids, 16)));
  }
  EXPECT_EQ(memo.hits(), 1u);
}

}  // namespace
}  // namespace warmroute::gateway
