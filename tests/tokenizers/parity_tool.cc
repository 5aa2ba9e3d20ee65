// tokenize_parity_tool: the ids warmroute's HfTokenizer gives for each text of a JSON array, one
// line per text (ids separated by commas), for parity.mjs to compare with the Rust library's.
//
//   tokenize_parity_tool TOKENIZER_JSON TEXTS_JSON
#include <cstdio>
#include <string>

#include "core/tokenize/hf_tokenizer.h"
#include "simdjson.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s TOKENIZER_JSON TEXTS_JSON\n", argv[0]);
    return 2;
  }
  absl::StatusOr<std::unique_ptr<warmroute::tokenize::HfTokenizer>> tok =
      warmroute::tokenize::HfTokenizer::FromFile(argv[1]);
  if (!tok.ok()) {
    std::fprintf(stderr, "%s\n", std::string(tok.status().message()).c_str());
    return 1;
  }
  simdjson::dom::parser parser;
  simdjson::dom::array texts;
  if (parser.load(argv[2]).get_array().get(texts) != simdjson::SUCCESS) {
    std::fprintf(stderr, "cannot read a JSON array of strings from %s\n", argv[2]);
    return 1;
  }
  std::string out;
  for (simdjson::dom::element text : texts) {
    std::string_view s;
    if (text.get_string().get(s) != simdjson::SUCCESS) return 1;
    bool first = true;
    for (const int32_t id : (*tok)->Encode(s)) {
      if (!first) out.push_back(',');
      out += std::to_string(id);
      first = false;
    }
    out.push_back('\n');
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}
