#include "core/tokenize/added_vocabulary.h"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "core/tokenize/char_classes.h"
#include "core/tokenize/json_fields.h"
#include "core/tokenize/string_map.h"
#include "core/tokenize/utf8.h"

namespace warmroute::tokenize {
namespace {

bool EndsWithWord(std::string_view text) {
  if (text.empty()) return false;
  return CharClasses::Get().Is(DecodeUtf8Before(text, text.size()), CharClasses::kWord);
}

bool StartsWithWord(std::string_view text) {
  if (text.empty()) return false;
  size_t i = 0;
  return CharClasses::Get().Is(DecodeUtf8(text, &i), CharClasses::kWord);
}

// The start of the whitespace that ends `text`.
size_t TrailingSpaceStart(std::string_view text) {
  size_t at = text.size();
  while (at > 0) {
    size_t start = at - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    size_t i = start;
    if (!CharClasses::Get().Is(DecodeUtf8(text, &i), CharClasses::kSpace)) break;
    at = start;
  }
  return at;
}

// The length of the whitespace that starts `text`.
size_t LeadingSpaceLength(std::string_view text) {
  size_t at = 0;
  while (at < text.size()) {
    size_t next = at;
    if (!CharClasses::Get().Is(DecodeUtf8(text, &next), CharClasses::kSpace)) break;
    at = next;
  }
  return at;
}

}  // namespace

void AddedVocabulary::Trie::Add(std::string_view pattern, int32_t token_index) {
  if (token_at.empty()) {
    token_at.push_back(-1);
    below.push_back(0);
  }
  int32_t node = 0;
  for (size_t depth = 0; depth < pattern.size(); ++depth) {
    below[node] = std::max<uint32_t>(below[node], static_cast<uint32_t>(pattern.size() - depth));
    const uint64_t key =
        (static_cast<uint64_t>(node) << 8) | static_cast<unsigned char>(pattern[depth]);
    auto [it, inserted] = children.try_emplace(key, static_cast<int32_t>(token_at.size()));
    if (inserted) {
      token_at.push_back(-1);
      below.push_back(0);
    }
    node = it->second;
  }
  token_at[node] = token_index;
  const auto first = static_cast<unsigned char>(pattern[0]);
  const bool first_pattern = std::count(std::begin(first_byte), std::end(first_byte), true) == 0;
  if (first_pattern) {
    only_first_byte = first;
  } else if (only_first_byte != first) {
    only_first_byte = -1;
  }
  first_byte[first] = true;
}

size_t AddedVocabulary::Trie::LongestAt(std::string_view text, size_t at, int32_t* token) const {
  int32_t node = 0;
  size_t best = 0;
  for (size_t i = at; i < text.size(); ++i) {
    const uint64_t key = (static_cast<uint64_t>(node) << 8) | static_cast<unsigned char>(text[i]);
    const auto it = children.find(key);
    if (it == children.end()) break;
    node = it->second;
    if (token_at[node] >= 0) {
      best = i + 1;
      *token = token_at[node];
    }
  }
  return best;
}

int32_t AddedVocabulary::Trie::Walk(std::string_view text, size_t begin, size_t end) const {
  if (token_at.empty()) return -1;
  int32_t node = 0;
  for (size_t i = begin; i < end; ++i) {
    const auto it =
        children.find((static_cast<uint64_t>(node) << 8) | static_cast<unsigned char>(text[i]));
    if (it == children.end()) return -1;
    node = it->second;
  }
  return node;
}

size_t AddedVocabulary::ReachPast(std::string_view text, size_t cut) const {
  size_t reach = 0;
  const size_t from = cut >= max_length_ ? cut - max_length_ + 1 : 0;
  for (size_t s = from; s < cut; ++s) {
    if (!raw_.first_byte[static_cast<unsigned char>(text[s])]) continue;
    const int32_t node = raw_.Walk(text, s, cut);
    if (node >= 0) reach = std::max<size_t>(reach, raw_.below[node]);
  }
  return reach;
}

absl::StatusOr<AddedVocabulary> AddedVocabulary::FromJson(simdjson::dom::element json,
                                                          const Normalizer& normalizer) {
  AddedVocabulary vocab;
  if (json.is_null()) return vocab;
  simdjson::dom::array items;
  if (json.get_array().get(items) != simdjson::SUCCESS) {
    return FileError("added_tokens", "must be an array");
  }
  // A later entry with the same content replaces an earlier one, as in the Rust library.
  StringMap<size_t> by_content;
  size_t index = 0;
  for (simdjson::dom::element item : items) {
    const std::string where = Element("added_tokens", index++);
    absl::StatusOr<simdjson::dom::object> object = ObjectAt(item, where);
    if (!object.ok()) return object.status();
    AddedToken token;
    int64_t id = -1;
    if ((*object)["id"].get_int64().get(id) != simdjson::SUCCESS || id < 0 || id > INT32_MAX) {
      return FileError(Member(where, "id"), "must be a non-negative integer");
    }
    token.id = static_cast<int32_t>(id);
    absl::StatusOr<std::string_view> content = StringMember(*object, "content", where);
    if (!content.ok()) return content.status();
    token.content = std::string(*content);
    for (auto [key, field, fallback] :
         {std::tuple{"special", &token.special, false},
          std::tuple{"normalized", &token.normalized, true},
          std::tuple{"lstrip", &token.lstrip, false}, std::tuple{"rstrip", &token.rstrip, false},
          std::tuple{"single_word", &token.single_word, false}}) {
      absl::StatusOr<bool> value = BoolMember(*object, key, where, fallback);
      if (!value.ok()) return value.status();
      *field = *value;
    }
    if (token.content.empty()) continue;  // the Rust library ignores empty tokens
    if (auto it = by_content.find(token.content); it != by_content.end()) {
      vocab.tokens_[it->second] = std::move(token);
      continue;
    }
    by_content.emplace(token.content, vocab.tokens_.size());
    vocab.tokens_.push_back(std::move(token));
  }
  for (size_t i = 0; i < vocab.tokens_.size(); ++i) {
    const AddedToken& token = vocab.tokens_[i];
    vocab.by_id_[token.id] = i;
    vocab.any_lstrip_ |= token.lstrip;
    if (!token.normalized) {
      vocab.raw_.Add(token.content, static_cast<int32_t>(i));
      vocab.max_length_ = std::max(vocab.max_length_, token.content.size());
      continue;
    }
    std::string normalized;
    std::string_view pattern = token.content;
    if (normalizer.Apply(token.content, true, &normalized)) pattern = normalized;
    if (pattern.empty()) continue;
    vocab.normalized_.Add(pattern, static_cast<int32_t>(i));
    vocab.max_length_ = std::max(vocab.max_length_, pattern.size());
    vocab.normalized_newline_ |= pattern.find('\n') != std::string_view::npos;
  }
  return vocab;
}

const AddedToken* AddedVocabulary::ById(int32_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

void AddedVocabulary::Find(std::string_view text, bool normalized, std::vector<Span>* spans) const {
  spans->clear();
  const Trie& trie = normalized ? normalized_ : raw_;
  size_t start_offset = 0;
  if (!trie.token_at.empty()) {
    size_t at = 0;
    while (at < text.size()) {
      if (trie.only_first_byte >= 0) {
        const void* next = std::memchr(text.data() + at, trie.only_first_byte, text.size() - at);
        if (next == nullptr) break;
        at = static_cast<size_t>(static_cast<const char*>(next) - text.data());
      } else if (!trie.first_byte[static_cast<unsigned char>(text[at])]) {
        ++at;
        continue;
      }
      int32_t index = -1;
      const size_t end = trie.LongestAt(text, at, &index);
      if (end == 0) {
        ++at;
        continue;
      }
      const AddedToken& token = tokens_[index];
      size_t start = at, stop = end;
      at = end;  // the next search starts after this match, kept or not
      if (token.single_word) {
        const bool start_space = start == 0 || !EndsWithWord(text.substr(0, start));
        const bool stop_space = stop == text.size() || !StartsWithWord(text.substr(stop));
        if (!start_space || !stop_space) continue;
      }
      if (token.lstrip) start = std::max(TrailingSpaceStart(text.substr(0, start)), start_offset);
      if (token.rstrip) stop += LeadingSpaceLength(text.substr(stop));
      if (start_offset < start) {
        spans->push_back({-1, static_cast<uint32_t>(start_offset), static_cast<uint32_t>(start)});
      }
      spans->push_back({token.id, static_cast<uint32_t>(start), static_cast<uint32_t>(stop)});
      start_offset = stop;
    }
  }
  if (start_offset < text.size()) {
    spans->push_back({-1, static_cast<uint32_t>(start_offset), static_cast<uint32_t>(text.size())});
  }
}

size_t AddedVocabulary::MemoryBytes() const {
  size_t bytes = tokens_.capacity() * sizeof(AddedToken) + by_id_.capacity() * 16;
  for (const AddedToken& t : tokens_) bytes += t.content.capacity();
  for (const Trie* trie : {&raw_, &normalized_}) {
    bytes += trie->token_at.capacity() * 8 + trie->children.capacity() * 13;
  }
  return bytes;
}

}  // namespace warmroute::tokenize
