#include "core/tokenize/hf_tokenizer.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/tokenize/json_fields.h"
#include "core/tokenize/utf8.h"

namespace warmroute::tokenize {

// What one encode collects. One per thread, reused: its buffers keep their storage from one
// encode to the next, so that an encode allocates little more than the ids it returns.
struct HfTokenizer::Sink {
  std::vector<int32_t> ids;
  std::vector<uint32_t>* starts = nullptr;  // per id, its pre-token's start in the text
  std::vector<PrefixCache::Checkpoint>* checkpoints = nullptr;
  PieceCache* cache = nullptr;
  Arena arena;
  std::vector<Piece> pre_tokens;
  std::vector<std::string_view> words;
  std::vector<uint32_t> lengths;
  std::vector<uint64_t> hashes;  // PieceCache::Hash of each pre-token
  std::vector<PrefixCache::Checkpoint> cuts;       // the encode's checkpoints
  std::vector<AddedVocabulary::Span> range_spans;  // EncodeRange's
  std::vector<AddedVocabulary::Span> part_spans;   // EncodePart's

  // Ready for a new encode. What a huge text grew is not kept: a buffer over kKeptElements is
  // freed, so that a thread holds at most a few hundred KB between encodes.
  void Reset() {
    ids.clear();
    starts = nullptr;
    checkpoints = nullptr;
    cache = nullptr;
    arena.clear();
    Clear(pre_tokens);
    Clear(words);
    Clear(lengths);
    Clear(hashes);
    Clear(cuts);
    Clear(range_spans);
    Clear(part_spans);
  }
  static constexpr size_t kKeptElements = size_t{1} << 14;
  template <typename T>
  static void Clear(std::vector<T>& v) {
    if (v.capacity() > kKeptElements) {
      std::vector<T>().swap(v);
    } else {
      v.clear();
    }
  }

  void Checkpoint(size_t cut, bool in_segment) {
    if (checkpoints != nullptr) {
      checkpoints->push_back(
          {static_cast<uint32_t>(cut), static_cast<uint32_t>(ids.size()), in_segment});
    }
  }
  void AddToken(int32_t id, uint32_t start) {
    ids.push_back(id);
    if (starts != nullptr) starts->push_back(start);
  }
};

absl::StatusOr<std::unique_ptr<HfTokenizer>> HfTokenizer::FromFile(const std::string& path,
                                                                   Options options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(Cat("cannot read ", path));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (!in && !in.eof()) return absl::NotFoundError(Cat("cannot read ", path));
  return FromJson(contents.str(), options);
}

absl::StatusOr<std::unique_ptr<HfTokenizer>> HfTokenizer::FromJson(std::string_view json,
                                                                   Options options) {
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(json);
  simdjson::dom::element root;
  if (const auto error = parser.parse(padded).get(root); error != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(
        Cat("tokenizer.json is not valid JSON: ", simdjson::error_message(error)));
  }
  simdjson::dom::object object;
  if (root.get_object().get(object) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("tokenizer.json must be a JSON object");
  }
  for (const char* key : {"truncation", "padding"}) {
    if (!IsAbsentOrNull(object, key)) {
      return FileError(key, "is set, which is not supported (ids would depend on it)");
    }
  }
  std::unique_ptr<HfTokenizer> tok(new HfTokenizer());
  tok->options_ = options;
  // What an absent member reads as.
  simdjson::dom::element null_json;
  simdjson::dom::parser null_parser;
  if (null_parser.parse(simdjson::padded_string(std::string_view("null"))).get(null_json) !=
      simdjson::SUCCESS) {
    return absl::InternalError("simdjson cannot parse null");
  }
  const auto field = [&](std::string_view key) {
    simdjson::dom::element value;
    return object.at_key(key).get(value) == simdjson::SUCCESS ? value : null_json;
  };

  absl::StatusOr<Normalizer> normalizer = Normalizer::FromJson(field("normalizer"));
  if (!normalizer.ok()) return normalizer.status();
  tok->normalizer_ = std::move(*normalizer);
  absl::StatusOr<PreTokenizer> pre = PreTokenizer::FromJson(field("pre_tokenizer"));
  if (!pre.ok()) return pre.status();
  tok->pre_tokenizer_ = std::move(*pre);
  if (field("model").is_null()) return FileError("model", "is missing");
  absl::StatusOr<BpeModel> model =
      BpeModel::FromJson(field("model"), tok->pre_tokenizer_.byte_level());
  if (!model.ok()) return model.status();
  tok->model_.emplace(std::move(*model));
  absl::StatusOr<AddedVocabulary> added =
      AddedVocabulary::FromJson(field("added_tokens"), tok->normalizer_);
  if (!added.ok()) return added.status();
  tok->added_ = std::move(*added);
  absl::StatusOr<PostProcessor> post = PostProcessor::FromJson(field("post_processor"));
  if (!post.ok()) return post.status();
  tok->post_processor_ = std::move(*post);
  absl::StatusOr<Decoder> decoder = Decoder::FromJson(field("decoder"));
  if (!decoder.ok()) return decoder.status();
  tok->decoder_ = std::move(*decoder);

  tok->vocab_size_ = tok->model_->size();
  for (const AddedToken& t : tok->added_.tokens()) {
    tok->vocab_size_ = std::max(tok->vocab_size_, t.id + 1);
  }
  const bool cuts = !tok->added_.any_lstrip() && !tok->added_.normalized_newline();
  for (char c = 0x21; c < 0x7F; ++c) {
    tok->cut_before_[c] = cuts && tok->normalizer_.CutsAfterNewline(c) &&
                          tok->pre_tokenizer_.CutAfterNewline(c) == CutKind::kHard;
    tok->any_cut_ |= tok->cut_before_[c];
  }
  if (options.prefix_cache_bytes > 0) {
    tok->prefix_cache_ = std::make_unique<PrefixCache>(PrefixCache::Options{
        .max_bytes = options.prefix_cache_bytes, .min_bytes = options.prefix_min_bytes});
  }
  return tok;
}

std::vector<int32_t> HfTokenizer::Encode(std::string_view text) const {
  return EncodeImpl(text, nullptr);
}

std::vector<int32_t> HfTokenizer::Encode(std::string_view text,
                                         std::vector<std::string_view>* pieces) const {
  return EncodeImpl(text, pieces);
}

std::vector<int32_t> HfTokenizer::EncodeAfterReuse(std::string_view text, Reuse* reuse) const {
  return EncodeImpl(text, nullptr, reuse);
}

std::vector<int32_t> HfTokenizer::EncodeWithSpecialTokens(std::string_view text) const {
  return post_processor_.Apply(EncodeImpl(text, nullptr));
}

std::vector<int32_t> HfTokenizer::EncodeImpl(std::string_view text,
                                             std::vector<std::string_view>* pieces,
                                             Reuse* reuse) const {
  if (reuse != nullptr) *reuse = Reuse();
  thread_local Sink sink;  // an encode never runs inside another on its thread
  sink.Reset();
  std::vector<uint32_t> starts;
  if (pieces != nullptr) sink.starts = &starts;
  std::vector<PrefixCache::Checkpoint>& checkpoints = sink.cuts;
  size_t start = 0;
  bool continuation = false;
  const bool cache =
      prefix_cache_ != nullptr && pieces == nullptr && text.size() >= options_.prefix_min_bytes;
  std::optional<PrefixCache::Hit> hit;
  if (cache) hit = prefix_cache_->Find(text);
  // A remembered text is well-formed: so is the new one up to the cut, a character boundary.
  std::string repaired;
  std::string_view input = text;
  if (!IsWellFormedUtf8(text.substr(hit.has_value() ? hit->checkpoint.cut : 0))) {
    hit.reset();
    repaired = RepairUtf8(text);
    input = repaired;
  }
  if (cache) {
    if (hit.has_value()) {
      start = hit->checkpoint.cut;
      continuation = hit->checkpoint.in_segment;
      checkpoints.push_back(hit->checkpoint);
    }
    // A text is remembered when it was new, or when what it added to a remembered one is at least
    // a quarter of it: a chat that grows turn by turn re-encodes at most that much, and a prompt
    // that only adds a short message to a shared system prompt costs no copy.
    const size_t added = input.size() - start;
    if (added >= options_.prefix_min_bytes && (start == 0 || added * 4 >= input.size())) {
      sink.checkpoints = &checkpoints;
    }
    if (hit.has_value()) {
      // Room for the rest (an id per 2 bytes, more than most text needs).
      const size_t rest = (input.size() - start) / 2 + 16;
      if (reuse != nullptr && sink.checkpoints == nullptr) {
        // The caller reads the reused ids where they are remembered: they are not copied.
        *reuse = Reuse{hit->ids, hit->checkpoint.ids};
        sink.ids.reserve(rest);
      } else {
        // Reserved first, so that appending the rest does not copy the prefix's ids again.
        sink.ids.reserve(hit->checkpoint.ids + rest);
        sink.ids.assign(hit->ids->begin(), hit->ids->begin() + hit->checkpoint.ids);
      }
    }
  }
  if (options_.piece_cache_entries > 0) {
    piece_caches_.WithLocal([&](PieceCache& piece_cache) {
      if (piece_cache.capacity() != options_.piece_cache_entries) {
        piece_cache.set_capacity(options_.piece_cache_entries);
      }
      sink.cache = &piece_cache;
      EncodeRange(input, start, continuation, sink);
    });
  } else {
    EncodeRange(input, start, continuation, sink);
  }
  if (sink.checkpoints != nullptr) {
    // The bytes past a cut that decide it: the character after it, and what an added token that
    // begins before it could reach.
    const auto window = [&](size_t cut) { return added_.ReachPast(input, cut) + 4; };
    prefix_cache_->Remember(input, sink.ids, checkpoints, window);
  }
  if (pieces != nullptr) {
    pieces->clear();
    const size_t n = sink.ids.size();
    if (!repaired.empty()) {
      for (size_t i = 0; i < n; ++i) pieces->push_back(i == 0 ? text : text.substr(text.size()));
    } else {
      size_t begin = 0;
      for (size_t i = 0; i < n; ++i) {
        size_t end = i + 1 < n ? std::max<size_t>(starts[i + 1], begin) : text.size();
        end = std::min(end, text.size());
        pieces->push_back(text.substr(begin, end - begin));
        begin = end;
      }
    }
  }
  return std::move(sink.ids);
}

void HfTokenizer::EncodeRange(std::string_view text, size_t start, bool continuation,
                              Sink& sink) const {
  std::vector<AddedVocabulary::Span>& spans = sink.range_spans;
  added_.Find(text.substr(start), /*normalized=*/false, &spans);
  for (const AddedVocabulary::Span& span : spans) {
    const size_t begin = start + span.begin, end = start + span.end;
    if (span.id >= 0) {
      sink.AddToken(span.id, static_cast<uint32_t>(begin));
      sink.Checkpoint(end, false);
    } else {
      EncodePiece(text, begin, end, continuation && begin == start, sink);
    }
  }
}

void HfTokenizer::EncodePiece(std::string_view text, size_t begin, size_t end, bool continuation,
                              Sink& sink) const {
  size_t part = begin;
  if (any_cut_) {
    const char* data = text.data();
    size_t at = begin;
    while (at + 1 < end) {
      const void* found = std::memchr(data + at, '\n', end - 1 - at);
      if (found == nullptr) break;
      const size_t cut = static_cast<const char*>(found) - data + 1;
      at = cut;
      const auto c = static_cast<unsigned char>(text[cut]);
      if (c < 0x80 && cut_before_[c]) {
        EncodePart(text, part, cut, part == begin && !continuation, sink);
        sink.Checkpoint(cut, true);
        part = cut;
      }
    }
  }
  EncodePart(text, part, end, part == begin && !continuation, sink);
}

void HfTokenizer::EncodePart(std::string_view text, size_t begin, size_t end, bool at_piece_start,
                             Sink& sink) const {
  Piece piece{text.substr(begin, end - begin), static_cast<uint32_t>(begin),
              static_cast<uint32_t>(end), true};
  sink.arena.clear();
  std::string normalized;
  if (!normalizer_.empty() && normalizer_.Apply(piece.text, at_piece_start, &normalized)) {
    sink.arena.push_back(std::move(normalized));
    piece.text = sink.arena.back();
    piece.exact = false;
  }
  const auto encode_pre_tokens = [&](const Piece& p) {
    sink.pre_tokens.clear();
    pre_tokenizer_.Split(p, &sink.arena, &sink.pre_tokens);
    // Most pre-tokens are one word: their cache slots are loaded all at once first.
    const bool prefetch = sink.cache != nullptr && sink.starts == nullptr;
    if (prefetch) {
      sink.hashes.clear();
      for (const Piece& pre : sink.pre_tokens) {
        sink.hashes.push_back(PieceCache::Hash(pre.text));
        sink.cache->Prefetch(sink.hashes.back());
      }
    }
    const bool split_words = model_->may_split_words();
    for (size_t k = 0; k < sink.pre_tokens.size(); ++k) {
      const Piece& pre = sink.pre_tokens[k];
      if (split_words) {
        model_->SplitWord(pre.text, &sink.words);
      } else {
        sink.words.assign(1, pre.text);
      }
      for (const std::string_view word : sink.words) {
        if (sink.starts != nullptr) {
          sink.lengths.clear();
          const size_t first = sink.ids.size();
          model_->Encode(word, &sink.ids, &sink.lengths);
          const auto offset = static_cast<uint32_t>(word.data() - pre.text.data());
          uint32_t at = pre.orig_begin + offset;
          for (size_t i = first; i < sink.ids.size(); ++i) {
            sink.starts->push_back(
                pre.exact ? std::min(at, pre.orig_end)
                          : (i == first && offset == 0 ? pre.orig_begin : pre.orig_end));
            at += sink.lengths[i - first];
          }
          continue;
        }
        if (sink.cache != nullptr && (prefetch && word.size() == pre.text.size()
                                          ? sink.cache->Lookup(word, sink.hashes[k], &sink.ids)
                                          : sink.cache->Lookup(word, &sink.ids))) {
          continue;
        }
        const size_t first = sink.ids.size();
        model_->Encode(word, &sink.ids, nullptr);
        if (sink.cache != nullptr) {
          sink.cache->Insert(
              word, std::span<const int32_t>(sink.ids.data() + first, sink.ids.size() - first));
        }
      }
    }
  };
  if (added_.empty()) {
    encode_pre_tokens(piece);
    return;
  }
  std::vector<AddedVocabulary::Span>& spans = sink.part_spans;
  added_.Find(piece.text, /*normalized=*/true, &spans);
  for (const AddedVocabulary::Span& span : spans) {
    const Piece sub = piece.Slice(span.begin, span.end);
    if (span.id >= 0) {
      sink.AddToken(span.id, sub.orig_begin);
    } else {
      encode_pre_tokens(sub);
    }
  }
}

std::string HfTokenizer::Decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const int32_t id : ids) {
    if (const AddedToken* added = added_.ById(id)) {
      if (skip_special_tokens && added->special) continue;
      tokens.push_back(added->content);
      continue;
    }
    if (const std::string* text = model_->TokenText(id)) tokens.push_back(*text);
  }
  return decoder_.Decode(std::move(tokens));
}

std::optional<int32_t> HfTokenizer::TokenId(std::string_view token) const {
  for (const AddedToken& t : added_.tokens()) {
    if (t.content == token) return t.id;
  }
  return model_->TokenId(token);
}

std::optional<std::string> HfTokenizer::TokenString(int32_t id) const {
  if (const AddedToken* added = added_.ById(id)) return added->content;
  if (const std::string* text = model_->TokenText(id)) return *text;
  return std::nullopt;
}

size_t HfTokenizer::MemoryBytes() const {
  return sizeof(*this) + model_->MemoryBytes() + added_.MemoryBytes();
}

size_t HfTokenizer::CacheBytes() const {
  size_t bytes = prefix_cache_ != nullptr ? prefix_cache_->MemoryBytes() : 0;
  piece_caches_.ForEach([&](PieceCache& cache) { bytes += cache.MemoryBytes(); });
  return bytes;
}

}  // namespace warmroute::tokenize
