#include "core/tokenize/bpe_model.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/tokenize/json_fields.h"
#include "core/tokenize/utf8.h"

namespace warmroute::tokenize {
namespace {

struct ByteAlphabet {
  std::array<std::string, 256> chars;
  absl::flat_hash_map<char32_t, uint8_t> bytes;
  ByteAlphabet() {
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
      AppendUtf8(cp, &chars[b]);
      bytes[cp] = static_cast<uint8_t>(b);
    }
  }
};

const ByteAlphabet& Alphabet() {
  static const ByteAlphabet* const alphabet = new ByteAlphabet();
  return *alphabet;
}

// The bytes that `token` stands for in the byte alphabet, or nullopt when a character of it is
// not in the alphabet.
std::optional<std::string> UnmapByteLevel(std::string_view token) {
  std::string raw;
  raw.reserve(token.size());
  size_t i = 0;
  while (i < token.size()) {
    const size_t start = i;
    DecodeUtf8(token, &i);
    const std::optional<uint8_t> b = ByteLevelByte(token.substr(start, i - start));
    if (!b.has_value()) return std::nullopt;
    raw.push_back(static_cast<char>(*b));
  }
  return raw;
}

}  // namespace

const std::string& ByteLevelChar(uint8_t b) { return Alphabet().chars[b]; }

std::optional<uint8_t> ByteLevelByte(std::string_view ch) {
  if (ch.empty() || !IsWellFormedUtf8(ch)) return std::nullopt;
  size_t i = 0;
  const char32_t cp = DecodeUtf8(ch, &i);
  if (i != ch.size()) return std::nullopt;
  const auto& bytes = Alphabet().bytes;
  const auto it = bytes.find(cp);
  if (it == bytes.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<BpeModel> BpeModel::FromJson(simdjson::dom::element json, bool byte_level) {
  absl::StatusOr<simdjson::dom::object> object = ObjectAt(json, "model");
  if (!object.ok()) return object.status();
  absl::StatusOr<std::string_view> type = StringMember(*object, "type", "model", "BPE");
  if (!type.ok()) return type.status();
  if (*type != "BPE") return Unsupported("model", *type);
  BpeModel model;
  model.byte_level_ = byte_level;
  simdjson::dom::element dropout;
  if ((*object)["dropout"].get(dropout) == simdjson::SUCCESS && !dropout.is_null()) {
    double p = 0;
    if (dropout.get_double().get(p) != simdjson::SUCCESS || p != 0.0) {
      return FileError("model.dropout", "is not supported (encoding would not be deterministic)");
    }
  }
  for (auto [key, field] : {std::pair{"ignore_merges", &model.ignore_merges_},
                            std::pair{"byte_fallback", &model.byte_fallback_},
                            std::pair{"fuse_unk", &model.fuse_unk_}}) {
    absl::StatusOr<bool> value = BoolMember(*object, key, "model", false);
    if (!value.ok()) return value.status();
    *field = *value;
  }
  for (auto [key, field] : {std::pair{"continuing_subword_prefix", &model.prefix_},
                            std::pair{"end_of_word_suffix", &model.suffix_}}) {
    absl::StatusOr<std::optional<std::string>> value = OptionalStringMember(*object, key, "model");
    if (!value.ok()) return value.status();
    *field = value->value_or("");
  }
  if (byte_level && (!model.prefix_.empty() || !model.suffix_.empty())) {
    return FileError("model",
                     "with a ByteLevel pre-tokenizer and a continuing_subword_prefix or "
                     "end_of_word_suffix is not supported");
  }

  // The vocabulary, keyed by its text as written in the file.
  simdjson::dom::object vocab_json;
  if ((*object)["vocab"].get_object().get(vocab_json) != simdjson::SUCCESS) {
    return FileError("model.vocab", "must be an object");
  }
  StringMap<int32_t> by_text;
  by_text.reserve(vocab_json.size());
  for (auto [token, value] : vocab_json) {
    int64_t id = -1;
    if (value.get_int64().get(id) != simdjson::SUCCESS || id < 0 || id >= (1 << 30)) {
      return FileError(Cat("model.vocab[\"", token, "\"]"),
                       "must be a non-negative integer below 2^30");
    }
    by_text[std::string(token)] = static_cast<int32_t>(id);
    if (static_cast<size_t>(id) >= model.id_to_token_.size()) model.id_to_token_.resize(id + 1);
    model.id_to_token_[id] = std::string(token);
  }

  // The merges: "a b" or ["a", "b"].
  simdjson::dom::array merges_json;
  if ((*object)["merges"].get_array().get(merges_json) != simdjson::SUCCESS) {
    return FileError("model.merges", "must be an array");
  }
  model.merges_.reserve(merges_json.size());
  uint32_t rank = 0;
  for (simdjson::dom::element merge : merges_json) {
    std::string_view a, b, line;
    simdjson::dom::array pair;
    if (merge.get_string().get(line) == simdjson::SUCCESS) {
      if (line.starts_with("#version")) continue;
      const size_t space = line.find(' ');
      if (space == std::string_view::npos || line.find(' ', space + 1) != std::string_view::npos) {
        return FileError(Element("model.merges", rank), "must be two tokens separated by a space");
      }
      a = line.substr(0, space);
      b = line.substr(space + 1);
    } else if (merge.get_array().get(pair) == simdjson::SUCCESS && pair.size() == 2 &&
               pair.at(0).get_string().get(a) == simdjson::SUCCESS &&
               pair.at(1).get_string().get(b) == simdjson::SUCCESS) {
    } else {
      return FileError(Element("model.merges", rank), "must be \"a b\" or [\"a\", \"b\"]");
    }
    const auto ia = by_text.find(a), ib = by_text.find(b);
    if (ia == by_text.end() || ib == by_text.end()) {
      return FileError(Element("model.merges", rank), "names a token that is not in the vocab");
    }
    if (b.size() < model.prefix_.size()) {
      return FileError(Element("model.merges", rank), "is shorter than its subword prefix");
    }
    const std::string merged = Cat(a, b.substr(model.prefix_.size()));
    const auto im = by_text.find(merged);
    if (im == by_text.end()) {
      return FileError(Element("model.merges", rank),
                       Cat("merges into '", merged, "', which is not in the vocab"));
    }
    const uint64_t key =
        (static_cast<uint64_t>(ia->second) << 32) | static_cast<uint32_t>(ib->second);
    model.merges_[key] = (static_cast<uint64_t>(rank) << 32) | static_cast<uint32_t>(im->second);
    ++rank;
  }

  absl::StatusOr<std::optional<std::string>> unk =
      OptionalStringMember(*object, "unk_token", "model");
  if (!unk.ok()) return unk.status();
  if (unk->has_value()) {
    const auto it = by_text.find(**unk);
    if (it == by_text.end()) return FileError("model.unk_token", "is not in the vocab");
    model.unk_id_ = it->second;
  }
  for (int b = 0; b < 256; ++b) {
    const auto it = by_text.find(absl::StrFormat("<0x%02X>", b));
    model.fallback_id_[b] = it == by_text.end() ? -1 : it->second;
    model.byte_char_[b] = ByteLevelChar(static_cast<uint8_t>(b));
    const auto ic = by_text.find(model.byte_char_[b]);
    model.byte_id_[b] = ic == by_text.end() ? -1 : ic->second;
  }
  constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581
  model.split_words_ =
      !byte_level && model.prefix_.empty() && model.suffix_.empty() && by_text.contains(kSpace);
  if (model.split_words_) {
    for (const auto& [text, id] : by_text) {
      for (size_t at = text.find(kSpace, 1); at != std::string::npos;
           at = text.find(kSpace, at + 1)) {
        if (IsWellFormedUtf8(std::string_view(text).substr(0, at))) {
          model.joins_space_.insert(DecodeUtf8Before(text, at));
        }
      }
    }
  }
  if (!byte_level) {
    model.vocab_ = std::move(by_text);
  } else {
    model.vocab_.reserve(by_text.size());
    for (auto& [text, id] : by_text) {
      std::optional<std::string> raw = UnmapByteLevel(text);
      if (raw.has_value()) model.vocab_.emplace(std::move(*raw), id);
    }
  }
  return model;
}

void BpeModel::SplitWord(std::string_view piece, std::vector<std::string_view>* parts) const {
  parts->clear();
  constexpr std::string_view kSpace = "\xE2\x96\x81";
  if (!split_words_ || (ignore_merges_ && vocab_.contains(piece))) {
    parts->push_back(piece);
    return;
  }
  size_t begin = 0;
  for (size_t at = piece.find(kSpace, 1); at != std::string_view::npos;
       at = piece.find(kSpace, at + kSpace.size())) {
    if (joins_space_.contains(DecodeUtf8Before(piece, at))) continue;
    parts->push_back(piece.substr(begin, at - begin));
    begin = at;
  }
  parts->push_back(piece.substr(begin));
}

std::optional<int32_t> BpeModel::TokenId(std::string_view token) const {
  if (!byte_level_) {
    const auto it = vocab_.find(token);
    if (it == vocab_.end()) return std::nullopt;
    return it->second;
  }
  std::optional<std::string> raw = UnmapByteLevel(token);
  if (!raw.has_value()) return std::nullopt;
  const auto it = vocab_.find(*raw);
  if (it == vocab_.end() || id_to_token_[it->second] != token) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::TokenText(int32_t id) const {
  if (id < 0 || id >= size() || (id_to_token_[id].empty())) return nullptr;
  return &id_to_token_[id];
}

int32_t BpeModel::CharId(std::string_view ch, bool first, bool last) const {
  if (prefix_.empty() && suffix_.empty()) {
    const auto it = vocab_.find(ch);
    return it == vocab_.end() ? -1 : it->second;
  }
  std::string s;
  if (!first) s += prefix_;
  s += ch;
  if (last) s += suffix_;
  const auto it = vocab_.find(s);
  return it == vocab_.end() ? -1 : it->second;
}

void BpeModel::InitialSymbols(std::string_view piece, std::vector<Symbol>* symbols) const {
  symbols->clear();
  int32_t unk_len = 0;  // > 0: an unknown run waiting to be added
  const auto add = [&](int32_t id, uint32_t len) {
    const auto n = static_cast<int32_t>(symbols->size());
    symbols->push_back({id, n - 1, n + 1, len});
  };
  const auto flush_unk = [&] {
    if (unk_len > 0) add(unk_id_, static_cast<uint32_t>(unk_len));
    unk_len = 0;
  };
  size_t i = 0;
  while (i < piece.size()) {
    const size_t start = i;
    std::string_view ch;  // the character as the vocabulary spells it
    int32_t id;
    if (byte_level_) {
      const auto b = static_cast<uint8_t>(piece[i++]);
      id = byte_id_[b];
      ch = byte_char_[b];
    } else {
      i += Utf8SequenceLength(static_cast<unsigned char>(piece[i]));
      ch = piece.substr(start, i - start);
      id = CharId(ch, start == 0, i == piece.size());
    }
    const auto len = static_cast<uint32_t>(i - start);
    if (id >= 0) {
      flush_unk();
      add(id, len);
      continue;
    }
    if (byte_fallback_) {
      std::string spelled;
      if (!byte_level_ && !prefix_.empty() && start != 0) spelled += prefix_;
      spelled += ch;
      if (!byte_level_ && !suffix_.empty() && i == piece.size()) spelled += suffix_;
      bool all = true;
      for (const char c : spelled) all &= fallback_id_[static_cast<uint8_t>(c)] >= 0;
      if (all) {
        for (size_t k = 0; k < spelled.size(); ++k) {
          add(fallback_id_[static_cast<uint8_t>(spelled[k])], 1);
        }
        continue;
      }
    }
    if (unk_id_ >= 0) {
      if (unk_len > 0 && !fuse_unk_) flush_unk();
      unk_len += static_cast<int32_t>(len);
    }
  }
  flush_unk();
  if (!symbols->empty()) symbols->back().next = -1;
}

void BpeModel::MergeAll(std::vector<Symbol>* symbols) const {
  struct Candidate {
    uint32_t rank;
    int32_t pos;
    int32_t new_id;
  };
  // A min-heap on (rank, pos).
  const auto later = [](const Candidate& x, const Candidate& y) {
    return x.rank != y.rank ? x.rank > y.rank : x.pos > y.pos;
  };
  thread_local std::vector<Candidate> heap;
  heap.clear();
  std::vector<Symbol>& s = *symbols;
  const auto lookup = [&](int32_t left, int32_t right, uint64_t* value) {
    const auto it =
        merges_.find((static_cast<uint64_t>(left) << 32) | static_cast<uint32_t>(right));
    if (it == merges_.end()) return false;
    *value = it->second;
    return true;
  };
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    uint64_t v;
    if (lookup(s[i].id, s[i + 1].id, &v)) {
      heap.push_back({static_cast<uint32_t>(v >> 32), static_cast<int32_t>(i),
                      static_cast<int32_t>(v & 0xFFFFFFFF)});
    }
  }
  std::make_heap(heap.begin(), heap.end(), later);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const Candidate top = heap.back();
    heap.pop_back();
    Symbol& left = s[top.pos];
    if (left.len == 0 || left.next == -1) continue;
    const int32_t next_pos = left.next;
    const Symbol right = s[next_pos];
    uint64_t v;
    if (!lookup(left.id, right.id, &v) || static_cast<int32_t>(v & 0xFFFFFFFF) != top.new_id) {
      continue;
    }
    left.id = top.new_id;
    left.len += right.len;
    left.next = right.next;
    s[next_pos].len = 0;
    if (right.next >= 0 && static_cast<size_t>(right.next) < s.size()) s[right.next].prev = top.pos;
    if (left.prev >= 0 && lookup(s[left.prev].id, left.id, &v)) {
      heap.push_back(
          {static_cast<uint32_t>(v >> 32), left.prev, static_cast<int32_t>(v & 0xFFFFFFFF)});
      std::push_heap(heap.begin(), heap.end(), later);
    }
    if (left.next >= 0 && lookup(left.id, s[left.next].id, &v)) {
      heap.push_back(
          {static_cast<uint32_t>(v >> 32), top.pos, static_cast<int32_t>(v & 0xFFFFFFFF)});
      std::push_heap(heap.begin(), heap.end(), later);
    }
  }
}

void BpeModel::Encode(std::string_view piece, std::vector<int32_t>* ids,
                      std::vector<uint32_t>* lengths) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    const auto it = vocab_.find(piece);
    if (it != vocab_.end()) {
      ids->push_back(it->second);
      if (lengths != nullptr) lengths->push_back(static_cast<uint32_t>(piece.size()));
      return;
    }
  }
  thread_local std::vector<Symbol> symbols;
  InitialSymbols(piece, &symbols);
  MergeAll(&symbols);
  for (const Symbol& sym : symbols) {
    if (sym.len == 0) continue;  // merged into the symbol before it
    ids->push_back(sym.id);
    if (lengths != nullptr) lengths->push_back(sym.len);
  }
}

size_t BpeModel::MemoryBytes() const {
  size_t bytes = sizeof(*this);
  for (const auto& [key, id] : vocab_) bytes += key.capacity() > 15 ? key.capacity() + 1 : 0;
  bytes += vocab_.capacity() * (sizeof(std::string) + sizeof(int32_t) + 1);
  for (const std::string& t : id_to_token_) bytes += t.capacity() > 15 ? t.capacity() + 1 : 0;
  bytes += id_to_token_.capacity() * sizeof(std::string);
  bytes += merges_.capacity() * (2 * sizeof(uint64_t) + 1);
  return bytes;
}

}  // namespace warmroute::tokenize
