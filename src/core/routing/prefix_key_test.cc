#include "core/routing/prefix_key.h"

#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/rng.h"
#include "core/request/block_hash.h"
#include "gtest/gtest.h"

namespace warmroute::routing {
namespace {

// Deterministic pseudo-text of `size` characters.
std::string Text(size_t size, uint64_t seed) {
  Rng rng(seed);
  std::string text(size, ' ');
  for (char& c : text) c = static_cast<char>('a' + rng.UniformInt(26));
  return text;
}

size_t CommonLeadingHashes(const PrefixKey& a, const PrefixKey& b) {
  size_t n = 0;
  while (n < a.block_hashes.size() && n < b.block_hashes.size() &&
         a.block_hashes[n] == b.block_hashes[n]) {
    ++n;
  }
  return n;
}

bool Disjoint(const PrefixKey& a, const PrefixKey& b) {
  for (uint64_t x : a.block_hashes) {
    for (uint64_t y : b.block_hashes) {
      if (x == y) return false;
    }
  }
  return true;
}

TEST(PrefixKeyTest, SharedPrefixGivesEqualLeadingHashes) {
  const std::string system = Text(64 * 10, 1);
  const PrefixKeyOptions options;
  const PrefixKey a = MakePrefixKeyFromText("m", "t", system + Text(64 * 5, 2), options);
  const PrefixKey b = MakePrefixKeyFromText("m", "t", system + Text(64 * 7, 3), options);
  ASSERT_EQ(a.block_hashes.size(), 15u);
  ASSERT_EQ(b.block_hashes.size(), 17u);
  EXPECT_EQ(CommonLeadingHashes(a, b), 10u);
}

TEST(PrefixKeyTest, IdenticalPromptsGiveIdenticalKeys) {
  const std::string prompt = Text(1000, 4);
  EXPECT_EQ(MakePrefixKeyFromText("m", "t", prompt, {}).block_hashes,
            MakePrefixKeyFromText("m", "t", prompt, {}).block_hashes);
}

TEST(PrefixKeyTest, ChangedCharacterChangesItsBlockAndEveryLaterOne) {
  const std::string prompt = Text(64 * 8, 5);
  const PrefixKey original = MakePrefixKeyFromText("m", "", prompt, {});
  for (size_t position : {size_t{0}, size_t{63}, size_t{64}, size_t{200}, size_t{511}}) {
    std::string changed = prompt;
    changed[position] = changed[position] == 'x' ? 'y' : 'x';
    const PrefixKey key = MakePrefixKeyFromText("m", "", changed, {});
    const size_t block = position / 64;
    ASSERT_EQ(key.block_hashes.size(), original.block_hashes.size());
    EXPECT_EQ(CommonLeadingHashes(original, key), block) << "position " << position;
    for (size_t i = block; i < key.block_hashes.size(); ++i) {
      EXPECT_NE(key.block_hashes[i], original.block_hashes[i]) << "block " << i;
    }
  }
}

TEST(PrefixKeyTest, DifferentModelTenantOrSaltGiveDisjointChains) {
  const std::string prompt = Text(64 * 16, 6);
  const PrefixKey base = MakePrefixKeyFromText("llama", "acme", prompt, {});
  EXPECT_TRUE(Disjoint(base, MakePrefixKeyFromText("qwen", "acme", prompt, {})));
  EXPECT_TRUE(Disjoint(base, MakePrefixKeyFromText("llama", "globex", prompt, {})));
  EXPECT_TRUE(Disjoint(base, MakePrefixKeyFromText("llama", "", prompt, {})));
  // Field boundaries are unambiguous: ("llama", "acme") is not ("llamaa", "cme").
  EXPECT_TRUE(Disjoint(base, MakePrefixKeyFromText("llamaa", "cme", prompt, {})));
}

TEST(PrefixKeyTest, CacheSaltIsCombinedWithTenant) {
  request::InferenceRequest request;
  request.endpoint = request::Endpoint::kCompletions;
  request.model = "m";
  request.prompt = Text(64 * 4, 7);
  const PrefixKey tenant_only = MakePrefixKey(request, "acme", {});
  EXPECT_EQ(tenant_only.block_hashes,
            MakePrefixKeyFromText("m", "acme", request.prompt, {}).block_hashes);

  request.cache_salt = "secret";
  const PrefixKey salted = MakePrefixKey(request, "acme", {});
  const PrefixKey salt_only = MakePrefixKey(request, "", {});
  EXPECT_TRUE(Disjoint(salted, tenant_only));
  EXPECT_TRUE(Disjoint(salted, salt_only));
  EXPECT_TRUE(Disjoint(salt_only, tenant_only));
  EXPECT_EQ(
      salted.block_hashes,
      MakePrefixKeyFromText("m", PrefixKeySalt("acme", "secret"), request.prompt, {}).block_hashes);
  EXPECT_EQ(salt_only.block_hashes,
            MakePrefixKeyFromText("m", "secret", request.prompt, {}).block_hashes);
}

TEST(PrefixKeyTest, OnlyFullBlocksAreHashed) {
  EXPECT_TRUE(MakePrefixKeyFromText("m", "", Text(63, 8), {}).block_hashes.empty());
  EXPECT_EQ(MakePrefixKeyFromText("m", "", Text(64, 8), {}).block_hashes.size(), 1u);
  EXPECT_EQ(MakePrefixKeyFromText("m", "", Text(64 * 3 - 1, 8), {}).block_hashes.size(), 2u);
  // A trailing partial block does not change the full blocks' hashes.
  const std::string prompt = Text(64 * 3, 9);
  EXPECT_EQ(MakePrefixKeyFromText("m", "", prompt + "tail", {}).block_hashes,
            MakePrefixKeyFromText("m", "", prompt, {}).block_hashes);
}

TEST(PrefixKeyTest, TheKeyCoversTheWholePromptUnlessMaxCharsCapsIt) {
  const std::string prompt = Text(100000, 10);
  const PrefixKey key = MakePrefixKeyFromText("m", "", prompt, {});
  EXPECT_EQ(key.block_hashes.size(), 100000u / 64);
  EXPECT_EQ(key.prompt_tokens, 25000);
  // What follows a long shared part is keyed too: two prompts that differ only after 90,000
  // characters share exactly the blocks before the difference.
  std::string other = prompt;
  other[90000] = other[90000] == 'a' ? 'b' : 'a';
  EXPECT_EQ(CommonLeadingHashes(key, MakePrefixKeyFromText("m", "", other, {})), 90000u / 64);

  PrefixKeyOptions options;
  options.block_chars = 32;
  options.max_chars = 1000;
  const PrefixKey small = MakePrefixKeyFromText("m", "", prompt, options);
  EXPECT_EQ(small.block_hashes.size(), 31u);
  EXPECT_DOUBLE_EQ(small.tokens_per_block, 8.0);
}

TEST(PrefixKeyTest, EstimatesPromptTokensRoundingUp) {
  EXPECT_EQ(MakePrefixKeyFromText("m", "", Text(9, 11), {}).prompt_tokens, 3);
  EXPECT_EQ(MakePrefixKeyFromText("m", "", Text(8, 11), {}).prompt_tokens, 2);
  EXPECT_EQ(MakePrefixKeyFromText("m", "", "", {}).prompt_tokens, 0);
  const PrefixKey key = MakePrefixKeyFromText("m", "", Text(64, 11), {});
  EXPECT_DOUBLE_EQ(key.tokens_per_block, 16.0);
}

std::vector<int32_t> Tokens(size_t size, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> tokens(size);
  for (int32_t& t : tokens) t = static_cast<int32_t>(rng.UniformInt(128000));
  return tokens;
}

TEST(PrefixKeyTest, TokenPromptsAreCutByTokens) {
  request::InferenceRequest request;
  request.endpoint = request::Endpoint::kCompletions;
  request.model = "m";
  request.has_token_prompt = true;
  request.prompt_token_ids = Tokens(16 * 5 + 3, 12);
  const PrefixKey key = MakePrefixKey(request, "", {});
  EXPECT_EQ(key.block_hashes.size(), 5u);
  EXPECT_EQ(key.prompt_tokens, 83);
  EXPECT_DOUBLE_EQ(key.tokens_per_block, 16.0);

  // Changing token 40 (block 2) keeps blocks 0 and 1.
  request.prompt_token_ids[40] += 1;
  const PrefixKey changed = MakePrefixKey(request, "", {});
  EXPECT_EQ(CommonLeadingHashes(key, changed), 2u);
}

TEST(PrefixKeyTest, TokenDepthIsTheWholePromptUnlessMaxTokensCapsIt) {
  PrefixKeyOptions options;
  options.max_tokens = 100;
  const std::vector<int32_t> tokens = Tokens(10000, 13);
  EXPECT_EQ(MakePrefixKeyFromTokens("m", "", tokens, options).block_hashes.size(), 6u);
  EXPECT_EQ(MakePrefixKeyFromTokens("m", "", tokens, {}).block_hashes.size(), 10000u / 16);
}

TEST(PrefixKeyTest, TokenPromptWithoutTenantReproducesEngineBlockHashes) {
  const std::vector<int32_t> tokens = Tokens(16 * 9, 14);
  const uint64_t root = request::RootBlockHash({.model = "m", .lora = "", .cache_salt = "s"});
  EXPECT_EQ(MakePrefixKeyFromTokens("m", "s", tokens, {}).block_hashes,
            request::HashFullBlocks(tokens, 16, root));
}

TEST(PrefixKeyTest, ChatRequestsAreKeyedByTheirRenderedPrompt) {
  request::InferenceRequest request;
  request.endpoint = request::Endpoint::kChatCompletions;
  request.model = "m";
  request.messages = {{.role = "system", .content = Text(2000, 15)},
                      {.role = "user", .content = "What is the refund policy?"}};
  const PrefixKey key = MakePrefixKey(request, "acme", {});
  EXPECT_EQ(key.block_hashes,
            MakePrefixKeyFromText("m", "acme", request::RenderPrompt(request), {}).block_hashes);
  EXPECT_GE(key.block_hashes.size(), 2000u / 64);

  // Another question after the same system prompt shares every block of the system prompt.
  request::InferenceRequest other = request;
  other.messages[1].content = "How do I reset my password?";
  const PrefixKey other_key = MakePrefixKey(other, "acme", {});
  EXPECT_GE(CommonLeadingHashes(key, other_key), 2000u / 64);
  EXPECT_LT(CommonLeadingHashes(key, other_key), key.block_hashes.size());
}

TEST(PrefixKeyTest, ResponsesRequestsAreKeyedByTheirRenderedPromptWithTools) {
  absl::StatusOr<request::InferenceRequest> request = request::ParseInferenceRequest(
      request::Endpoint::kResponses,
      absl::StrCat(R"({"model": "m", "instructions": ")", Text(1000, 3),
                   R"(", "tools": [{"type": "function", "name": "lookup"}], "input": "Hi"})"));
  ASSERT_TRUE(request.ok()) << request.status();
  const PrefixKey key = MakePrefixKey(*request, "acme", {});
  EXPECT_EQ(key.block_hashes,
            MakePrefixKeyFromText("m", "acme", request::RenderPrompt(*request), {}).block_hashes);
  request::InferenceRequest without_tools = *request;
  without_tools.tools.clear();
  EXPECT_NE(MakePrefixKey(without_tools, "acme", {}).block_hashes, key.block_hashes);
}

// A chat's key is hashed piece by piece as the template renders (no rendered copy): whatever
// the messages and the block size, it equals the key of the rendered text. Blocks cut across
// pieces of every length, span several pieces, lie inside one, and are over the 256 bytes the
// hasher stages on the stack.
TEST(PrefixKeyTest, ChatKeyEqualsTheKeyOfTheRenderedText) {
  Rng rng(77);
  for (int round = 0; round < 400; ++round) {
    request::InferenceRequest request;
    request.endpoint = request::Endpoint::kChatCompletions;
    request.model = "m";
    const int messages = static_cast<int>(rng.UniformInt(6));
    for (int i = 0; i < messages; ++i) {
      const size_t size = rng.UniformInt(4) == 0 ? rng.UniformInt(3) : rng.UniformInt(700);
      request.messages.push_back(
          {.role = i % 2 == 0 ? "user" : "assistant", .content = Text(size, rng.Next())});
    }
    PrefixKeyOptions options;
    constexpr int kBlocks[] = {1, 5, 19, 64, 100, 257, 1000};
    options.block_chars = kBlocks[rng.UniformInt(std::size(kBlocks))];
    options.max_chars = rng.UniformInt(3) == 0 ? static_cast<int64_t>(rng.UniformInt(600)) : 0;
    const PrefixKey key = MakePrefixKey(request, "t", options);
    const PrefixKey rendered =
        MakePrefixKeyFromText("m", "t", request::RenderPrompt(request), options);
    ASSERT_EQ(key.block_hashes, rendered.block_hashes)
        << "round " << round << ", block_chars " << options.block_chars;
    EXPECT_EQ(key.prompt_tokens, rendered.prompt_tokens);
    EXPECT_EQ(key.tokens_per_block, rendered.tokens_per_block);
  }
}

TEST(PrefixKeyTest, NonPositiveBlockSizeGivesEmptyChain) {
  PrefixKeyOptions options;
  options.block_chars = 0;
  options.block_tokens = -1;
  EXPECT_TRUE(MakePrefixKeyFromText("m", "", Text(500, 16), options).block_hashes.empty());
  EXPECT_TRUE(MakePrefixKeyFromTokens("m", "", Tokens(500, 16), options).block_hashes.empty());
}

}  // namespace
}  // namespace warmroute::routing
