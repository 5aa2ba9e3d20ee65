// Tokenizer directories for the keys tests: the Qwen 3 files the build unpacks, and copies of
// them with an edited tokenizer_config.json in a temporary directory.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace warmroute::gateway::testing {

inline std::string Qwen3Dir() { return std::string(WARMROUTE_TOKENIZE_TESTDATA) + "/qwen3"; }

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void WriteText(const std::string& path, std::string_view text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A fresh directory under the system's temporary directory.
inline std::string MakeTempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "gwkeys-XXXXXX").string();
  return std::string(mkdtemp(pattern.data()));
}

// A copy of the Qwen 3 directory whose tokenizer_config.json is `config` (the original when
// empty).
inline std::string Qwen3Copy(std::string_view config = "") {
  const std::string dir = MakeTempDir();
  std::filesystem::copy_file(Qwen3Dir() + "/tokenizer.json", dir + "/tokenizer.json");
  WriteText(dir + "/tokenizer_config.json",
            config.empty() ? ReadText(Qwen3Dir() + "/tokenizer_config.json") : config);
  return dir;
}

}  // namespace warmroute::gateway::testing
