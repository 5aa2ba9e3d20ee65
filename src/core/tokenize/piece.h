// A piece of text on its way through the tokenizer's pipeline (added tokens, normalizer,
// pre-tokenizer, model), with the span of the original text it stands for.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

namespace warmroute::tokenize {

struct Piece {
  std::string_view text;    // into the original text or into an Arena
  uint32_t orig_begin = 0;  // the original text's bytes [orig_begin, orig_end) it came from
  uint32_t orig_end = 0;
  // True when `text` is exactly those original bytes (no normalizer or pre-tokenizer changed
  // them); then a sub-piece's span is exact too. Otherwise the first sub-piece of a split gets
  // the whole span and the others an empty span at its end.
  bool exact = true;

  // The sub-piece text[begin, end), with its span.
  Piece Slice(size_t begin, size_t end) const {
    Piece p;
    p.text = text.substr(begin, end - begin);
    p.exact = exact;
    if (exact) {
      p.orig_begin = orig_begin + static_cast<uint32_t>(begin);
      p.orig_end = orig_begin + static_cast<uint32_t>(end);
    } else {
      p.orig_begin = begin == 0 ? orig_begin : orig_end;
      p.orig_end = orig_end;
    }
    return p;
  }
};

// Storage for the texts that normalization and pre-tokenization make during one encode: the
// views into it stay valid while it lives (a deque never moves its elements).
using Arena = std::deque<std::string>;

}  // namespace warmroute::tokenize
