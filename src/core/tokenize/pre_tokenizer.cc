#include "core/tokenize/pre_tokenizer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/tokenize/char_classes.h"
#include "core/tokenize/json_fields.h"
#include "core/tokenize/split_matcher.h"
#include "core/tokenize/utf8.h"

namespace warmroute::tokenize {
namespace {

// The regex that ByteLevel splits with when `use_regex` is true (GPT-2's).
constexpr std::string_view kByteLevelRegex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

absl::StatusOr<SplitBehavior> ParseBehavior(std::string_view name, std::string_view where) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return FileError(where, Cat("behavior '", name, "' is not supported"));
}

// A run of the piece: bytes [begin, end), and whether a match.
struct Run {
  uint32_t begin;
  uint32_t end;
  bool match;
};

// The runs of `text` between and at `matches` (Rust's Pattern::find_matches for a regex).
void RunsOf(std::string_view text, const std::vector<Match>& matches, bool invert,
            std::vector<Run>* runs) {
  runs->clear();
  uint32_t prev = 0;
  for (const Match& m : matches) {
    if (prev != m.begin) runs->push_back({prev, m.begin, invert});
    runs->push_back({m.begin, m.end, !invert});
    prev = m.end;
  }
  if (prev != text.size()) runs->push_back({prev, static_cast<uint32_t>(text.size()), invert});
}

// Emits the pieces that `behavior` makes of `runs` (Rust's NormalizedString::split).
void EmitRuns(const Piece& piece, const std::vector<Run>& runs, SplitBehavior behavior,
              std::vector<Piece>* out) {
  const auto emit = [&](uint32_t begin, uint32_t end) {
    if (end > begin) out->push_back(piece.Slice(begin, end));
  };
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (const Run& r : runs) emit(r.begin, r.end);
      return;
    case SplitBehavior::kRemoved:
      for (const Run& r : runs) {
        if (!r.match) emit(r.begin, r.end);
      }
      return;
    case SplitBehavior::kContiguous:
    case SplitBehavior::kMergedWithPrevious: {
      std::vector<std::pair<uint32_t, uint32_t>> spans;
      bool previous_match = false;
      for (const Run& r : runs) {
        const bool merge = behavior == SplitBehavior::kContiguous ? r.match == previous_match
                                                                  : r.match && !previous_match;
        if (merge && !spans.empty()) {
          spans.back().second = r.end;
        } else {
          spans.push_back({r.begin, r.end});
        }
        previous_match = r.match;
      }
      for (const auto& [b, e] : spans) emit(b, e);
      return;
    }
    case SplitBehavior::kMergedWithNext: {
      std::vector<std::pair<uint32_t, uint32_t>> spans;
      bool previous_match = false;
      for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
        if (it->match && !previous_match && !spans.empty()) {
          spans.back().first = it->begin;
        } else {
          spans.push_back({it->begin, it->end});
        }
        previous_match = it->match;
      }
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) emit(it->first, it->second);
      return;
    }
  }
}

// Runs of numeric and other characters (Rust's split on char::is_numeric).
void DigitRuns(std::string_view text, std::vector<Run>* runs) {
  runs->clear();
  const CharClasses& classes = CharClasses::Get();
  size_t i = 0;
  uint32_t last = 0;
  while (i < text.size()) {
    const size_t begin = i;
    const char32_t cp = DecodeUtf8(text, &i);
    if (classes.Is(cp, CharClasses::kNumber)) {
      if (last < begin) runs->push_back({last, static_cast<uint32_t>(begin), false});
      runs->push_back({static_cast<uint32_t>(begin), static_cast<uint32_t>(i), true});
      last = static_cast<uint32_t>(i);
    }
  }
  if (last < text.size()) runs->push_back({last, static_cast<uint32_t>(text.size()), false});
}

}  // namespace

absl::StatusOr<PreTokenizer> PreTokenizer::FromJson(simdjson::dom::element json,
                                                    std::string_view where) {
  PreTokenizer pre;
  if (json.is_null()) return pre;
  absl::Status status = AddStages(json, where, &pre.stages_);
  if (!status.ok()) return status;
  for (size_t i = 0; i < pre.stages_.size(); ++i) {
    if (pre.stages_[i].kind != Kind::kByteLevel) continue;
    if (i + 1 != pre.stages_.size()) {
      return FileError(where, "has a stage after ByteLevel, which is not supported");
    }
    pre.byte_level_ = true;
  }
  // A ByteLevel stage without its regex or prefix space leaves the text as it is (the model maps
  // the bytes): drop it.
  if (!pre.stages_.empty() && pre.stages_.back().kind == Kind::kByteLevel &&
      !pre.stages_.back().use_regex && !pre.stages_.back().add_prefix_space) {
    pre.stages_.pop_back();
  }
  return pre;
}

absl::Status PreTokenizer::AddStages(simdjson::dom::element json, std::string_view where,
                                     std::vector<Stage>* stages) {
  return ForEachComponent(
      json, where, "pretokenizers",
      [&](simdjson::dom::object object, std::string_view type,
          std::string_view where) -> absl::Status {
        Stage stage;
        if (type == "Split") {
          absl::StatusOr<Pattern> pattern = Pattern::FromMember(object, where);
          if (!pattern.ok()) return pattern.status();
          absl::StatusOr<std::string_view> behavior = StringMember(object, "behavior", where);
          if (!behavior.ok()) return behavior.status();
          absl::StatusOr<SplitBehavior> parsed =
              ParseBehavior(*behavior, Member(where, "behavior"));
          if (!parsed.ok()) return parsed.status();
          absl::StatusOr<bool> invert = BoolMember(object, "invert", where, false);
          if (!invert.ok()) return invert.status();
          stage.kind = Kind::kSplit;
          if (!pattern->is_literal()) stage.matcher = SplitMatcher::ForRegex(pattern->source());
          stage.pattern = std::make_shared<const Pattern>(std::move(*pattern));
          stage.behavior = *parsed;
          stage.invert = *invert;
        } else if (type == "ByteLevel") {
          absl::StatusOr<bool> prefix = BoolMember(object, "add_prefix_space", where, true);
          if (!prefix.ok()) return prefix.status();
          absl::StatusOr<bool> use_regex = BoolMember(object, "use_regex", where, true);
          if (!use_regex.ok()) return use_regex.status();
          stage.kind = Kind::kByteLevel;
          stage.add_prefix_space = *prefix;
          stage.use_regex = *use_regex;
          if (*use_regex) {
            absl::StatusOr<Pattern> pattern = Pattern::FromRegex(kByteLevelRegex);
            if (!pattern.ok()) return pattern.status();
            stage.matcher = SplitMatcher::ForRegex(kByteLevelRegex);
            stage.pattern = std::make_shared<const Pattern>(std::move(*pattern));
          }
        } else if (type == "Metaspace") {
          absl::StatusOr<std::string_view> replacement =
              StringMember(object, "replacement", where, "\xE2\x96\x81");
          if (!replacement.ok()) return replacement.status();
          size_t end = 0;
          if (replacement->empty() || !IsWellFormedUtf8(*replacement) ||
              (DecodeUtf8(*replacement, &end), end != replacement->size())) {
            return FileError(Member(where, "replacement"), "must be one character");
          }
          absl::StatusOr<std::string_view> scheme =
              StringMember(object, "prepend_scheme", where, "always");
          if (!scheme.ok()) return scheme.status();
          absl::StatusOr<bool> prefix = BoolMember(object, "add_prefix_space", where, true);
          if (!prefix.ok()) return prefix.status();
          absl::StatusOr<bool> split = BoolMember(object, "split", where, true);
          if (!split.ok()) return split.status();
          stage.kind = Kind::kMetaspace;
          stage.replacement = std::string(*replacement);
          if (*scheme == "always") {
            stage.prepend = Prepend::kAlways;
          } else if (*scheme == "first") {
            stage.prepend = Prepend::kFirst;
          } else if (*scheme == "never") {
            stage.prepend = Prepend::kNever;
          } else {
            return FileError(Member(where, "prepend_scheme"),
                             Cat("'", *scheme, "' is not supported"));
          }
          if (!*prefix) {
            if (stage.prepend != Prepend::kNever && !IsAbsentOrNull(object, "prepend_scheme")) {
              return FileError(where, "add_prefix_space does not match prepend_scheme");
            }
            stage.prepend = Prepend::kNever;
          }
          stage.split = *split;
        } else if (type == "Digits") {
          absl::StatusOr<bool> individual = BoolMember(object, "individual_digits", where, false);
          if (!individual.ok()) return individual.status();
          stage.kind = Kind::kDigits;
          stage.individual_digits = *individual;
        } else {
          return Unsupported(where, type);
        }
        stages->push_back(std::move(stage));
        return absl::OkStatus();
      });
}

void PreTokenizer::Split(const Piece& piece, Arena* arena, std::vector<Piece>* out) const {
  if (piece.text.empty()) return;
  if (stages_.empty()) {
    out->push_back(piece);
    return;
  }
  thread_local std::vector<Piece> current, next;
  current.assign(1, piece);
  for (size_t s = 0; s < stages_.size(); ++s) {
    std::vector<Piece>* target = s + 1 == stages_.size() ? out : &next;
    if (target == &next) next.clear();
    for (const Piece& p : current) ApplyStage(stages_[s], p, arena, target);
    if (target == &next) current.swap(next);
  }
}

void PreTokenizer::ApplyStage(const Stage& stage, const Piece& piece, Arena* arena,
                              std::vector<Piece>* out) {
  thread_local std::vector<Match> matches;
  thread_local std::vector<Run> runs;
  switch (stage.kind) {
    case Kind::kSplit:
      if (stage.matcher != nullptr) {
        stage.matcher->FindAll(piece.text, &matches);
      } else {
        stage.pattern->FindAll(piece.text, &matches);
      }
      RunsOf(piece.text, matches, stage.invert, &runs);
      EmitRuns(piece, runs, stage.behavior, out);
      return;
    case Kind::kByteLevel: {
      Piece p = piece;
      if (stage.add_prefix_space && p.text.front() != ' ') {
        arena->push_back(Cat(" ", p.text));
        p.text = arena->back();
        p.exact = false;
      }
      if (!stage.use_regex) {
        out->push_back(p);
        return;
      }
      if (stage.matcher != nullptr) {
        stage.matcher->FindAll(p.text, &matches);
      } else {
        stage.pattern->FindAll(p.text, &matches);
      }
      RunsOf(p.text, matches, false, &runs);
      EmitRuns(p, runs, SplitBehavior::kIsolated, out);
      return;
    }
    case Kind::kMetaspace: {
      Piece p = piece;
      std::string text;
      bool changed = false;
      for (const char c : p.text) {
        if (c == ' ') {
          text.append(stage.replacement);
          changed = true;
        } else {
          text.push_back(c);
        }
      }
      const bool starts = text.starts_with(stage.replacement);
      if (!starts && (stage.prepend == Prepend::kAlways ||
                      (stage.prepend == Prepend::kFirst && p.orig_begin == 0))) {
        text.insert(0, stage.replacement);
        changed = true;
      }
      if (changed) {
        arena->push_back(std::move(text));
        p.text = arena->back();
        p.exact = false;
      }
      if (!stage.split) {
        out->push_back(p);
        return;
      }
      matches.clear();
      size_t from = 0;
      while ((from = p.text.find(stage.replacement, from)) != std::string_view::npos) {
        matches.push_back(
            {static_cast<uint32_t>(from), static_cast<uint32_t>(from + stage.replacement.size())});
        from += stage.replacement.size();
      }
      RunsOf(p.text, matches, false, &runs);
      EmitRuns(p, runs, SplitBehavior::kMergedWithNext, out);
      return;
    }
    case Kind::kDigits:
      DigitRuns(piece.text, &runs);
      EmitRuns(piece, runs,
               stage.individual_digits ? SplitBehavior::kIsolated : SplitBehavior::kContiguous,
               out);
      return;
  }
}

CutKind PreTokenizer::CutAfterNewline(char after) const {
  for (const Stage& stage : stages_) {
    const CutKind kind = StageCut(stage, after);
    if (kind != CutKind::kNeutral) return kind;
  }
  return CutKind::kNeutral;
}

CutKind PreTokenizer::StageCut(const Stage& stage, char after) {
  switch (stage.kind) {
    case Kind::kSplit:
      if (stage.pattern->is_literal()) {
        // A literal without "\n" cannot match across the cut: the runs before it, and the start
        // of the run that holds it, do not depend on what follows.
        return stage.pattern->source().find('\n') == std::string::npos ? CutKind::kNeutral
                                                                       : CutKind::kUnsafe;
      }
      if (stage.matcher == nullptr || stage.invert) return CutKind::kUnsafe;
      if (stage.behavior != SplitBehavior::kIsolated && stage.behavior != SplitBehavior::kRemoved) {
        return CutKind::kUnsafe;
      }
      return stage.matcher->CutAfterNewline(after);
    case Kind::kByteLevel:
      if (stage.add_prefix_space) return CutKind::kUnsafe;
      if (!stage.use_regex) return CutKind::kNeutral;
      return stage.matcher != nullptr ? stage.matcher->CutAfterNewline(after) : CutKind::kUnsafe;
    case Kind::kMetaspace:
      // A part after a cut does not start the text: only "always" prepends to it.
      return stage.prepend == Prepend::kAlways ? CutKind::kUnsafe : CutKind::kNeutral;
    case Kind::kDigits:
      return after >= '0' && after <= '9' ? CutKind::kHard : CutKind::kNeutral;
  }
  return CutKind::kUnsafe;
}

}  // namespace warmroute::tokenize
