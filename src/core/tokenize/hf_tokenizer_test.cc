// HfTokenizer: what a file may hold (and how the rest is refused), robustness to malformed
// files and text, and that restarting from a remembered prefix gives a full encode's ids.
#include "core/tokenize/hf_tokenizer.h"

#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "core/tokenize/test_files.h"
#include "core/tokenize/utf8.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::tokenize {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

// A small byte-level file: "a", "b", "ab" and GPT-2's alphabet pieces it needs.
std::string SmallFile(std::string_view pre_tokenizer = R"({"type": "ByteLevel",
    "add_prefix_space": false, "trim_offsets": false, "use_regex": true})",
                      std::string_view normalizer = "null", std::string_view model_type = "BPE",
                      std::string_view decoder = R"({"type": "ByteLevel"})") {
  std::ostringstream out;
  out << R"({"version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 5, "content": "<|end|>", "single_word": false, "lstrip": false,
                      "rstrip": false, "normalized": false, "special": true}],
    "normalizer": )"
      << normalizer << R"(, "pre_tokenizer": )" << pre_tokenizer
      << R"(, "post_processor": null, "decoder": )" << decoder << R"(,
    "model": {"type": ")"
      << model_type << R"(", "dropout": null, "unk_token": null,
              "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġab": 4},
              "merges": ["a b", "Ġ ab"]}})";
  return out.str();
}

absl::StatusOr<std::unique_ptr<HfTokenizer>> Load(std::string_view json) {
  return HfTokenizer::FromJson(json, HfTokenizer::Options());
}

TEST(HfTokenizerTest, EncodesAndDecodesASmallFile) {
  absl::StatusOr<std::unique_ptr<HfTokenizer>> tok = Load(SmallFile());
  ASSERT_TRUE(tok.ok()) << tok.status();
  EXPECT_THAT((*tok)->Encode("ab abab<|end|>b"), ElementsAreArray({2, 4, 2, 5, 1}));
  EXPECT_EQ((*tok)->Decode({{2, 4, 5, 1}}, false), "ab ab<|end|>b");
  EXPECT_EQ((*tok)->Decode({{2, 4, 5, 1}}, true), "ab abb");
  EXPECT_EQ((*tok)->VocabSize(), 6);
  EXPECT_EQ((*tok)->TokenId("Ġab"), 4);
  EXPECT_EQ((*tok)->TokenId("<|end|>"), 5);
  EXPECT_EQ((*tok)->TokenId("zz"), std::nullopt);
  EXPECT_EQ((*tok)->TokenString(4), "Ġab");
  EXPECT_EQ((*tok)->TokenString(5), "<|end|>");
  EXPECT_EQ((*tok)->TokenString(6), std::nullopt);
  EXPECT_EQ((*tok)->TokenString(-1), std::nullopt);
}

TEST(HfTokenizerTest, RefusesWhatItDoesNotSupportNamingIt) {
  const struct {
    std::string json;
    std::string message;
  } cases[] = {
      {SmallFile(R"({"type": "UnicodeScripts"})"),
       "tokenizer.json: pre_tokenizer type 'UnicodeScripts' is not supported"},
      {SmallFile(R"({"type": "Sequence", "pretokenizers": [{"type": "Whitespace"}]})"),
       "tokenizer.json: pre_tokenizer.pretokenizers[0] type 'Whitespace' is not supported"},
      {SmallFile("null", R"({"type": "Sequence", "normalizers": [{"type": "NFC"},
          {"type": "BertNormalizer"}]})"),
       "tokenizer.json: normalizer.normalizers[1] type 'BertNormalizer' is not supported"},
      {SmallFile("null", "null", "WordPiece"),
       "tokenizer.json: model type 'WordPiece' is not supported"},
      {SmallFile("null", "null", "BPE", R"({"type": "CTC"})"),
       "tokenizer.json: decoder type 'CTC' is not supported"},
      {SmallFile(R"({"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated",
          "invert": false})"),
       "tokenizer.json: pre_tokenizer.pattern.Regex regex '(unclosed' does not compile"},
      {SmallFile(R"({"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Sideways",
          "invert": false})"),
       "tokenizer.json: pre_tokenizer.behavior behavior 'Sideways' is not supported"},
      {SmallFile(R"({"type": "Sequence", "pretokenizers": [{"type": "ByteLevel"},
          {"type": "Digits"}]})"),
       "has a stage after ByteLevel"},
      {"{\"model\": 3}", "tokenizer.json: model must be an object"},
      {"[1, 2]", "tokenizer.json must be a JSON object"},
      {"{\"model\": ", "tokenizer.json is not valid JSON"},
      {R"({"truncation": {"max_length": 5}, "model": {}})", "tokenizer.json: truncation is set"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<std::unique_ptr<HfTokenizer>> tok = Load(c.json);
    ASSERT_FALSE(tok.ok()) << c.message;
    EXPECT_EQ(tok.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(tok.status().message()), HasSubstr(c.message));
  }
}

TEST(HfTokenizerTest, RefusesAModelThatNamesMissingTokens) {
  std::string json = SmallFile();
  json.replace(json.find("\"a b\""), 5, "\"a z\"");
  absl::StatusOr<std::unique_ptr<HfTokenizer>> tok = Load(json);
  ASSERT_FALSE(tok.ok());
  EXPECT_THAT(std::string(tok.status().message()),
              HasSubstr("model.merges[0] names a token that is not in the vocab"));
}

TEST(HfTokenizerTest, ReportsAMissingFile) {
  EXPECT_EQ(HfTokenizer::FromFile("/nonexistent/tokenizer.json").status().code(),
            absl::StatusCode::kNotFound);
}

// Any byte of a file may be damaged: loading refuses or succeeds, and never crashes.
TEST(HfTokenizerTest, SurvivesDamagedFiles) {
  const std::string good = SmallFile();
  std::mt19937 rng(7);
  std::uniform_int_distribution<size_t> at(0, good.size() - 1);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int i = 0; i < 3000; ++i) {
    std::string damaged = good;
    for (int k = 0; k < 1 + i % 3; ++k) damaged[at(rng)] = static_cast<char>(byte(rng));
    absl::StatusOr<std::unique_ptr<HfTokenizer>> tok = Load(damaged);
    if (tok.ok()) (void)(*tok)->Encode("ab ab\xFF<|end|>");
  }
}

TEST(HfTokenizerTest, EncodesIllFormedUtf8AsReplacementCharacters) {
  absl::StatusOr<std::unique_ptr<HfTokenizer>> tok = Load(SmallFile());
  ASSERT_TRUE(tok.ok());
  std::vector<std::string_view> pieces;
  const std::string text = "ab\xC3(b";
  EXPECT_EQ((*tok)->Encode(text), (*tok)->Encode("ab\xEF\xBF\xBD(b"));
  (*tok)->Encode(text, &pieces);
  std::string joined;
  for (std::string_view p : pieces) joined += p;
  EXPECT_EQ(joined, text);
}

// The file at `path` twice: with the default caches, and with none (every encode a full one).
// Null where the file does not load.
struct CachedAndPlain {
  std::unique_ptr<HfTokenizer> cached;
  std::unique_ptr<HfTokenizer> plain;
};
CachedAndPlain LoadCachedAndPlain(const std::string& path) {
  HfTokenizer::Options no_cache;
  no_cache.prefix_cache_bytes = 0;
  no_cache.piece_cache_entries = 0;
  absl::StatusOr<std::unique_ptr<HfTokenizer>> cached = HfTokenizer::FromFile(path);
  absl::StatusOr<std::unique_ptr<HfTokenizer>> plain = HfTokenizer::FromFile(path, no_cache);
  return {cached.ok() ? *std::move(cached) : nullptr, plain.ok() ? *std::move(plain) : nullptr};
}

// Texts of random fragments, many sharing long beginnings: with the prefix cache (restarts),
// every text gets the ids of a tokenizer without caches.
TEST(HfTokenizerTest, RestartsFromRememberedPrefixesGiveFullEncodeIds) {
  const char* const fragments[] = {"The system prompt says: be helpful.",
                                   "\n",
                                   "\n\n",
                                   " ",
                                   "  ",
                                   "\t",
                                   "1234567",
                                   "x = f(y) + 42;",
                                   "\r\n",
                                   "<|im_start|>",
                                   "<|im_end|>",
                                   "<|eot_id|>",
                                   "东京は日本の首都です。",
                                   "It's",
                                   " don't",
                                   "Hello",
                                   "WORLD",
                                   "!!",
                                   "\n9 items",
                                   "\nabc",
                                   "café",
                                   "\u2581\u2581",
                                   "<start_of_turn>",
                                   "😀",
                                   "   \n   ",
                                   "\n- item",
                                   "\n| a |",
                                   "\n#",
                                   "\n\"q\"",
                                   "\n<"};
  for (const std::string name : {"qwen3", "llama3_1", "deepseek_v3", "gemma3"}) {
    const std::string path = testing::TokenizerPath(name);
    if (!testing::Exists(path)) continue;
    const auto [cached, plain] = LoadCachedAndPlain(path);
    ASSERT_TRUE(cached != nullptr && plain != nullptr);
    std::mt19937 rng(11);
    std::uniform_int_distribution<size_t> pick(0, std::size(fragments) - 1);
    std::vector<std::string> bases;
    for (int b = 0; b < 4; ++b) {
      std::string base;
      while (base.size() < 3000) base += fragments[pick(rng)];
      bases.push_back(base);
    }
    for (int i = 0; i < 120; ++i) {
      std::string text = bases[i % bases.size()];
      text.resize(std::uniform_int_distribution<size_t>(1000, text.size())(rng));
      text = RepairUtf8(text);
      for (int k = std::uniform_int_distribution<int>(0, 60)(rng); k > 0; --k) {
        text += fragments[pick(rng)];
      }
      ASSERT_EQ(cached->Encode(text), plain->Encode(text)) << name << ": " << text;
    }
    EXPECT_GT(cached->prefix_hits(), 60u) << name;
  }
}

// A chat that only adds a question to a remembered system prompt restarts from it and is not
// remembered itself (what it adds is under prefix_min_bytes): the prefix cache neither grows nor
// evicts per request. A text that adds at least prefix_min_bytes and a quarter of its length is
// remembered. Either way the ids are a full encode's.
TEST(HfTokenizerTest, RemembersOnlyTextsThatAddEnoughToARememberedOne) {
  const std::string path = testing::TokenizerPath("qwen3");
  if (!testing::Exists(path)) GTEST_SKIP() << path << " is not unpacked";
  const auto [cached, plain] = LoadCachedAndPlain(path);
  ASSERT_TRUE(cached != nullptr && plain != nullptr);
  std::string system = "<|im_start|>system\nYou are the support assistant.\n";
  for (int i = 0; system.size() < 11'500; ++i) {
    system += "Rule " + std::to_string(i) + ": answer politely, cite the policy section.\n";
  }
  system += "<|im_end|>\n<|im_start|>user\n";
  const auto chat = [&](int n, size_t question_bytes) {
    std::string question = "Ticket " + std::to_string(n) + ": ";
    while (question.size() < question_bytes) question += "My order arrived damaged. ";
    return system + question + "<|im_end|>\n<|im_start|>assistant\n";
  };
  ASSERT_EQ(cached->Encode(chat(0, 500)), plain->Encode(chat(0, 500)));
  const size_t remembered_bytes = cached->CacheBytes();
  const uint64_t hits = cached->prefix_hits();
  for (int n = 1; n <= 3; ++n) {
    const std::string text = chat(n, 500);
    HfTokenizer::Reuse reuse;
    std::vector<int32_t> ids = cached->EncodeAfterReuse(text, &reuse);
    ASSERT_NE(reuse.remembered, nullptr);
    ids.insert(ids.begin(), reuse.remembered->begin(),
               reuse.remembered->begin() + static_cast<ptrdiff_t>(reuse.ids));
    EXPECT_EQ(ids, plain->Encode(text)) << n;
  }
  EXPECT_EQ(cached->prefix_hits(), hits + 3);
  EXPECT_EQ(cached->CacheBytes(), remembered_bytes);  // nothing remembered
  // About 5,000 bytes added to a text of about 16,500: over 1,024 bytes and over a quarter.
  const std::string longer = chat(4, 5000);
  EXPECT_EQ(cached->Encode(longer), plain->Encode(longer));
  EXPECT_GT(cached->CacheBytes(), remembered_bytes);
}

}  // namespace
}  // namespace warmroute::tokenize
