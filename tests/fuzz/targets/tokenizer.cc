// The tokenizer (core/tokenize/hf_tokenizer.h) with Qwen 3's tokenizer.json on text from a
// client: any bytes, invalid UTF-8 and added-token look-alikes included. Properties: every id is
// in the vocabulary; encoding is deterministic (a second encode, which the prefix cache may
// serve, gives the same ids); an encode with the special tokens holds the plain one's ids.
#include <algorithm>
#include <memory>
#include <string>

#include "core/tokenize/hf_tokenizer.h"
#include "fuzz_target.h"

namespace {

const warmroute::tokenize::HfTokenizer& Qwen3() {
  static const std::unique_ptr<warmroute::tokenize::HfTokenizer> tokenizer = [] {
    auto loaded = warmroute::tokenize::HfTokenizer::FromFile(
        std::string(WARMROUTE_TOKENIZE_TESTDATA) + "/qwen3/tokenizer.json");
    if (!loaded.ok()) {
      std::fprintf(stderr, "fuzz target tokenizer: %s\n", loaded.status().ToString().c_str());
      std::abort();
    }
    return std::move(*loaded);
  }();
  return *tokenizer;
}

}  // namespace

WARMROUTE_FUZZ_TARGET(tokenizer) {
  const std::string_view text = warmroute::fuzz::AsText(data, size);
  const auto& tokenizer = Qwen3();
  const std::vector<int32_t> ids = tokenizer.Encode(text);
  for (int32_t id : ids) FUZZ_CHECK(id >= 0 && id < 151669);  // Qwen 3: 151,643 + 26 added
  FUZZ_CHECK(tokenizer.Encode(text) == ids);
  const std::vector<int32_t> with_special = tokenizer.EncodeWithSpecialTokens(text);
  FUZZ_CHECK(ids.empty() || std::search(with_special.begin(), with_special.end(), ids.begin(),
                                        ids.end()) != with_special.end());
  return 0;
}
