#include "core/request/tokenizer.h"

#include <algorithm>
#include <array>

#define XXH_INLINE_ALL  // pieces are a few bytes: an inlined XXH3 beats a library call
#include "xxhash.h"

namespace warmroute::request {
namespace {

// Byte classes of the pre-tokenizer. Every byte >= 0x80 (any part of a non-ASCII UTF-8
// character) counts as a letter, so non-Latin words stay whole pieces.
enum class ByteClass : uint8_t { kLetter, kDigit, kSpace, kNewline, kPunct };

constexpr std::array<ByteClass, 256> MakeClassTable() {
  std::array<ByteClass, 256> table{};
  for (int c = 0; c < 256; ++c) {
    ByteClass cls = ByteClass::kPunct;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80) {
      cls = ByteClass::kLetter;
    } else if (c >= '0' && c <= '9') {
      cls = ByteClass::kDigit;
    } else if (c == ' ' || c == '\t' || c == '\v' || c == '\f') {
      cls = ByteClass::kSpace;
    } else if (c == '\n' || c == '\r') {
      cls = ByteClass::kNewline;
    }
    table[c] = cls;
  }
  return table;
}

constexpr std::array<ByteClass, 256> kClass = MakeClassTable();

struct SpecialToken {
  std::string_view text;
  int32_t id;
};

constexpr std::array<SpecialToken, 4> kSpecialTokens = {{
    {"<|begin_of_text|>", BuiltinTokenizer::kBeginOfTextId},
    {"<|start_header_id|>", BuiltinTokenizer::kStartHeaderId},
    {"<|end_header_id|>", BuiltinTokenizer::kEndHeaderId},
    {"<|eot_id|>", BuiltinTokenizer::kEndOfTurnId},
}};

constexpr int kMaxDigits = 3;

// Scans one text left to right, appending ids (and, when `pieces` is not null, the text of
// each). Positions are byte offsets.
class Scanner {
 public:
  Scanner(std::string_view text, std::vector<int32_t>& out,
          std::vector<std::string_view>* pieces = nullptr)
      : text_(text), out_(out), pieces_(pieces) {}

  void Run() {
    size_t pos = 0;
    while (pos < text_.size()) pos = Next(pos);
  }

 private:
  ByteClass ClassAt(size_t pos) const { return kClass[static_cast<unsigned char>(text_[pos])]; }

  // The id of the special token starting at `pos`, or -1.
  int32_t SpecialAt(size_t pos) const {
    if (text_[pos] != '<' || pos + 1 >= text_.size() || text_[pos + 1] != '|') return -1;
    for (const SpecialToken& special : kSpecialTokens) {
      if (text_.compare(pos, special.text.size(), special.text) == 0) return special.id;
    }
    return -1;
  }

  // Length of an English contraction ('s 't 'm 'd 're 've 'll, any case) at `pos`, or 0.
  size_t ContractionAt(size_t pos) const {
    if (text_[pos] != '\'' || pos + 1 >= text_.size()) return 0;
    const char a = static_cast<char>(text_[pos + 1] | 0x20);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (pos + 2 >= text_.size()) return 0;
    const char b = static_cast<char>(text_[pos + 2] | 0x20);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
  }

  // True when a piece that may take one leading space (a word or a punctuation run) starts at
  // `pos`.
  bool TakesLeadingSpace(size_t pos) const {
    if (pos >= text_.size()) return false;
    const ByteClass cls = ClassAt(pos);
    if (cls == ByteClass::kLetter) return true;
    return cls == ByteClass::kPunct && SpecialAt(pos) < 0 && ContractionAt(pos) == 0;
  }

  size_t RunEnd(size_t pos, ByteClass cls) const {
    while (pos < text_.size() && ClassAt(pos) == cls) ++pos;
    return pos;
  }

  size_t PunctEnd(size_t pos) const {
    while (pos < text_.size() && ClassAt(pos) == ByteClass::kPunct && SpecialAt(pos) < 0) ++pos;
    return pos;
  }

  // Emits the piece at `pos` and returns where the next one starts.
  size_t Next(size_t pos) {
    const ByteClass cls = ClassAt(pos);
    switch (cls) {
      case ByteClass::kLetter:
        return Emit(pos, RunEnd(pos, ByteClass::kLetter));
      case ByteClass::kDigit: {
        size_t end = pos;
        while (end < text_.size() && end - pos < kMaxDigits && ClassAt(end) == ByteClass::kDigit) {
          ++end;
        }
        return Emit(pos, end);
      }
      case ByteClass::kNewline:
        return Emit(pos, RunEnd(pos, ByteClass::kNewline));
      case ByteClass::kSpace: {
        if (text_[pos] == ' ' && TakesLeadingSpace(pos + 1)) return Word(pos, pos + 1);
        size_t end = RunEnd(pos, ByteClass::kSpace);
        // As in GPT-style pre-tokenizers, the last space of a run goes with the next word.
        if (end - pos > 1 && text_[end - 1] == ' ' && TakesLeadingSpace(end)) --end;
        return Emit(pos, end);
      }
      case ByteClass::kPunct: {
        if (const int32_t special = SpecialAt(pos); special >= 0) {
          for (const SpecialToken& token : kSpecialTokens) {
            if (token.id == special) return Add(special, pos, token.text.size());
          }
        }
        if (const size_t len = ContractionAt(pos); len > 0) return Emit(pos, pos + len);
        return Emit(pos, PunctEnd(pos));
      }
    }
    return Emit(pos, pos + 1);  // unreachable: every class is handled above
  }

  // A piece of one leading space at `space` followed by a word or punctuation run at `body`.
  size_t Word(size_t space, size_t body) {
    const size_t end =
        ClassAt(body) == ByteClass::kLetter ? RunEnd(body, ByteClass::kLetter) : PunctEnd(body);
    return Emit(space, end);
  }

  // Maps text_[begin, end) to ids, cutting it into chunks when it is long; returns `end`.
  size_t Emit(size_t begin, size_t end) {
    if (end - begin <= static_cast<size_t>(BuiltinTokenizer::kMaxPieceChars)) {
      return Add(PieceId(begin, end - begin), begin, end - begin);
    }
    for (size_t at = begin; at < end; at += BuiltinTokenizer::kChunkChars) {
      const size_t size = std::min<size_t>(BuiltinTokenizer::kChunkChars, end - at);
      Add(PieceId(at, size), at, size);
    }
    return end;
  }

  // Appends `id`, standing for text_[begin, begin + size); returns where the next piece starts.
  size_t Add(int32_t id, size_t begin, size_t size) {
    out_.push_back(id);
    if (pieces_ != nullptr) pieces_->push_back(text_.substr(begin, size));
    return begin + size;
  }

  int32_t PieceId(size_t begin, size_t size) const {
    constexpr uint64_t kRange = BuiltinTokenizer::kVocabSize - BuiltinTokenizer::kNumSpecialTokens;
    const uint64_t hash = XXH3_64bits(text_.data() + begin, size);
    return BuiltinTokenizer::kNumSpecialTokens + static_cast<int32_t>(hash % kRange);
  }

  std::string_view text_;
  std::vector<int32_t>& out_;
  std::vector<std::string_view>* pieces_;
};

}  // namespace

std::vector<int32_t> BuiltinTokenizer::Encode(std::string_view text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  Scanner(text, ids).Run();
  return ids;
}

std::vector<int32_t> BuiltinTokenizer::Encode(std::string_view text,
                                              std::vector<std::string_view>* pieces) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  pieces->clear();
  pieces->reserve(ids.capacity());
  Scanner(text, ids, pieces).Run();
  return ids;
}

}  // namespace warmroute::request
