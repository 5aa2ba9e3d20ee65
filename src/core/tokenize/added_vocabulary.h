// The added tokens of a tokenizer.json ("added_tokens"): strings that are cut out of the text as
// single tokens before the model sees it, as the Rust `tokenizers` library cuts them — the
// leftmost match first, the longest at that position; `single_word` tokens only between
// non-word characters; `lstrip`/`rstrip` tokens swallow the whitespace before/after them.
// Tokens with `normalized: false` are matched in the original text, the others in each
// normalized piece between those (with their content normalized the same way).
//
// Usage:
//   absl::StatusOr<AddedVocabulary> added = AddedVocabulary::FromJson(json["added_tokens"], n);
//   std::vector<AddedVocabulary::Span> spans;
//   added->Find(text, /*normalized=*/false, &spans);   // text and token spans, in order
//
// Thread-safety: const methods are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/tokenize/normalizer.h"
#include "simdjson.h"

namespace warmroute::tokenize {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool normalized = true;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
};

class AddedVocabulary {
 public:
  // A span of the searched text: an added token (id >= 0) or text between tokens (id < 0).
  struct Span {
    int32_t id;
    uint32_t begin;
    uint32_t end;
  };

  // InvalidArgument naming the entry of "added_tokens" at fault.
  static absl::StatusOr<AddedVocabulary> FromJson(simdjson::dom::element json,
                                                  const Normalizer& normalizer);

  // Replaces `spans` with the non-empty spans of `text`: the `normalized` tokens (matched in
  // normalized text) or the others, and the text between them. REQUIRES: well-formed UTF-8.
  void Find(std::string_view text, bool normalized, std::vector<Span>* spans) const;

  const std::vector<AddedToken>& tokens() const { return tokens_; }
  // The token with this id, or null.
  const AddedToken* ById(int32_t id) const;
  bool empty() const { return tokens_.empty(); }
  // The longest pattern in bytes (0 when none).
  size_t max_length() const { return max_length_; }
  // How many bytes past `cut` a token of the first kind (normalized: false) that begins before
  // `cut` in `text` could reach: 0 unless text[s, cut) begins such a token for some s < cut.
  size_t ReachPast(std::string_view text, size_t cut) const;
  // True when a token strips the whitespace before it (cuts inside text are then unsafe).
  bool any_lstrip() const { return any_lstrip_; }
  // True when a normalized token's pattern contains "\n" (cuts after "\n" are then unsafe).
  bool normalized_newline() const { return normalized_newline_; }
  size_t MemoryBytes() const;

 private:
  // A byte trie of one set of patterns.
  struct Trie {
    std::vector<int32_t> token_at;                    // per node: token index, or -1
    std::vector<uint32_t> below;                      // per node: longest pattern below it
    absl::flat_hash_map<uint64_t, int32_t> children;  // node << 8 | byte -> node
    bool first_byte[256] = {};
    // The one byte every pattern starts with ('<' for "<|im_end|>", "<think>", ...), or -1:
    // then a search skips to its next occurrence with memchr instead of testing every byte.
    int only_first_byte = -1;
    void Add(std::string_view pattern, int32_t token_index);
    // The end of the longest pattern at `at`, with *token its token index; 0 when none.
    size_t LongestAt(std::string_view text, size_t at, int32_t* token) const;
    // The node that text[begin, end) leads to from the root, or -1.
    int32_t Walk(std::string_view text, size_t begin, size_t end) const;
  };

  std::vector<AddedToken> tokens_;
  absl::flat_hash_map<int32_t, size_t> by_id_;
  Trie raw_;
  Trie normalized_;
  size_t max_length_ = 0;
  bool any_lstrip_ = false;
  bool normalized_newline_ = false;
};

}  // namespace warmroute::tokenize
