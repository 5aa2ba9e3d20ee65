#include "core/workload/text.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <iterator>

#include "core/request/tokenizer.h"

namespace warmroute::workload {
namespace {

// Common English words of 1 to 5 letters: each is one BuiltinTokenizer token with its leading
// space (and one without it, capitalised, at a line start).
constexpr std::string_view kWords[] = {
    "a",     "about", "after", "again", "all",   "also",  "age",   "an",    "and",   "any",
    "are",   "as",    "ask",   "at",    "away",  "back",  "bank",  "be",    "been",  "bid",
    "best",  "bill",  "both",  "box",   "but",   "buy",   "by",    "call",  "can",   "card",
    "case",  "cash",  "check", "claim", "clear", "close", "code",  "come",  "cost",  "could",
    "count", "cover", "data",  "date",  "day",   "days",  "deal",  "do",    "does",  "done",
    "down",  "due",   "each",  "early", "email", "end",   "even",  "every", "fee",   "fees",
    "field", "file",  "find",  "first", "fix",   "for",   "form",  "free",  "from",  "full",
    "fund",  "get",   "give",  "go",    "good",  "great", "group", "had",   "has",   "have",
    "help",  "her",   "here",  "high",  "his",   "hold",  "home",  "hour",  "how",   "if",
    "in",    "into",  "is",    "issue", "it",    "item",  "its",   "just",  "keep",  "key",
    "kind",  "know",  "large", "last",  "late",  "later", "least", "leave", "left",  "less",
    "let",   "level", "limit", "line",  "link",  "list",  "local", "log",   "long",  "look",
    "lost",  "low",   "made",  "mail",  "main",  "make",  "many",  "may",   "more",  "most",
    "move",  "much",  "must",  "my",    "name",  "need",  "never", "new",   "next",  "no",
    "not",   "note",  "now",   "of",    "off",   "offer", "old",   "on",    "once",  "one",
    "only",  "open",  "or",    "order", "other", "our",   "out",   "over",  "own",   "page",
    "paid",  "part",  "pay",   "phone", "place", "plan",  "point", "price", "print", "proof",
    "put",   "quick", "rate",  "read",  "ready", "real",  "reply", "right", "rule",  "safe",
    "same",  "save",  "say",   "see",   "send",  "sent",  "set",   "ship",  "short", "shop",
    "show",  "sign",  "since", "site",  "small", "so",    "some",  "soon",  "start", "state",
    "still", "stock", "store", "such",  "sure",  "take",  "team",  "tell",  "terms", "than",
    "that",  "the",   "their", "them",  "then",  "there", "these", "they",  "thing", "this",
    "time",  "to",    "today", "too",   "total", "track", "try",   "two",   "type",  "under",
    "until", "up",    "us",    "use",   "used",  "user",  "valid", "value", "very",  "view",
    "visit", "wait",  "want",  "was",   "way",   "we",    "week",  "well",  "were",  "what",
    "when",  "where", "which", "while", "who",   "why",   "will",  "with",  "work",  "would",
    "write", "year",  "yes",   "yet",   "you",   "your",
};

// Sentence length in words: 6 + U[0, 14).
constexpr uint64_t kMinSentenceWords = 6;
constexpr uint64_t kSentenceWordSpread = 14;
// A comma follows a word (after the third of a sentence) with probability 1/kCommaOneIn.
constexpr uint64_t kCommaOneIn = 12;
// Documents: 2 + U[0, 4) sentences per paragraph; half the paragraphs are numbered rules.
constexpr uint64_t kMinParagraphSentences = 2;
constexpr uint64_t kParagraphSentenceSpread = 4;
constexpr int kMaxRuleNumber = 999;  // 3 digits: one token

size_t WordIndex(uint64_t bits) {
  return static_cast<size_t>(((bits & 0xffffffffULL) * std::size(kWords)) >> 32);
}

// Every word with its leading space, padded to 8 bytes so one fixed-size copy writes it.
struct SpacedWord {
  char bytes[8];
  uint8_t size;  // with the space
};

constexpr auto MakeSpacedWords() {
  std::array<SpacedWord, std::size(kWords)> table{};
  for (size_t i = 0; i < std::size(kWords); ++i) {
    table[i].bytes[0] = ' ';
    for (size_t c = 0; c < kWords[i].size(); ++c) table[i].bytes[c + 1] = kWords[i][c];
    table[i].size = static_cast<uint8_t>(kWords[i].size() + 1);
  }
  return table;
}

constexpr auto kSpacedWords = MakeSpacedWords();

// The most bytes one token takes here (" " and 5 letters), plus slack for the 8-byte copies.
constexpr size_t kMaxTokenBytes = 6;
constexpr size_t kSlackBytes = 8;

// The state machine behind AppendProse and Document: one Rng draw and one token per step,
// written through a cursor into space reserved up front.
class Writer {
 public:
  Writer(Rng& rng, bool document) : rng_(rng), document_(document) {}

  // Appends `tokens` tokens to `out`; `first_leading_space`: whether the first word carries
  // its leading space.
  void Write(int64_t tokens, bool first_leading_space, std::string* out) {
    if (tokens <= 0) return;
    const size_t start = out->size();
    out->resize(start + static_cast<size_t>(tokens) * kMaxTokenBytes + kSlackBytes);
    cursor_ = out->data() + start;
    StartSentence(rng_.Next());
    Capitalised(rng_.Next(), first_leading_space);
    state_ = State::kWord;
    words_ = 1;
    for (int64_t t = 1; t < tokens; ++t) Step(rng_.Next());
    out->resize(static_cast<size_t>(cursor_ - out->data()));
  }

 private:
  enum class State { kWord, kComma, kSentenceEnd, kBreak, kNumber, kNumberDot };

  void Word(uint64_t bits) {
    const SpacedWord& word = kSpacedWords[WordIndex(bits)];
    std::memcpy(cursor_, word.bytes, sizeof(word.bytes));
    cursor_ += word.size;
  }

  void Capitalised(uint64_t bits, bool leading_space) {
    const SpacedWord& word = kSpacedWords[WordIndex(bits)];
    const size_t skip = leading_space ? 0 : 1;
    std::memcpy(cursor_, word.bytes + skip, sizeof(word.bytes) - 1);
    cursor_[1 - skip] = static_cast<char>(cursor_[1 - skip] - 'a' + 'A');
    cursor_ += word.size - skip;
  }

  void Put(char c) { *cursor_++ = c; }

  void StartSentence(uint64_t bits) {
    sentence_words_ = kMinSentenceWords + (bits >> 40) % kSentenceWordSpread;
    words_ = 0;
  }

  void NewSentence(uint64_t bits, bool leading_space) {
    StartSentence(bits);
    Capitalised(bits, leading_space);
    words_ = 1;
    state_ = State::kWord;
  }

  void Step(uint64_t bits) {
    switch (state_) {
      case State::kWord:
        if (words_ >= sentence_words_) {
          Put('.');
          ++sentences_;
          state_ = State::kSentenceEnd;
        } else if (words_ >= 3 && (bits >> 32) % kCommaOneIn == 0) {
          Put(',');
          state_ = State::kComma;
        } else {
          Word(bits);
          ++words_;
        }
        return;
      case State::kComma:
        Word(bits);
        ++words_;
        state_ = State::kWord;
        return;
      case State::kSentenceEnd:
        if (document_ && sentences_ >= paragraph_sentences_) {
          Put('\n');
          Put('\n');
          sentences_ = 0;
          paragraph_sentences_ = kMinParagraphSentences + (bits >> 40) % kParagraphSentenceSpread;
          state_ = State::kBreak;
          return;
        }
        NewSentence(bits, /*leading_space=*/true);
        return;
      case State::kBreak:
        if ((bits >> 36) & 1) {
          rule_ = rule_ >= kMaxRuleNumber ? 1 : rule_ + 1;
          const std::string number = std::to_string(rule_);
          std::memcpy(cursor_, number.data(), number.size());
          cursor_ += number.size();
          state_ = State::kNumber;
          return;
        }
        NewSentence(bits, /*leading_space=*/false);
        return;
      case State::kNumber:
        Put('.');
        state_ = State::kNumberDot;
        return;
      case State::kNumberDot:
        NewSentence(bits, /*leading_space=*/true);
        return;
    }
  }

  Rng& rng_;
  const bool document_;
  char* cursor_ = nullptr;
  State state_ = State::kWord;
  uint64_t words_ = 0;
  uint64_t sentence_words_ = kMinSentenceWords;
  uint64_t sentences_ = 0;
  uint64_t paragraph_sentences_ = 1;  // the title: one sentence, then a break
  int rule_ = 0;
};

}  // namespace

void AppendProse(Rng& rng, int64_t tokens, std::string* out) {
  Writer(rng, /*document=*/false).Write(tokens, /*first_leading_space=*/true, out);
}

std::string Prose(Rng& rng, int64_t tokens) {
  std::string out;
  Writer(rng, /*document=*/false).Write(tokens, /*first_leading_space=*/false, &out);
  return out;
}

std::string Document(Rng& rng, int64_t tokens) {
  std::string out;
  Writer(rng, /*document=*/true).Write(tokens, /*first_leading_space=*/false, &out);
  return out;
}

std::string_view RandomWord(Rng& rng) { return kWords[WordIndex(rng.Next())]; }

std::string IdWord(uint64_t id) {
  std::string word;
  // Bijective base 26 of id + 1; id + 1 may wrap for the largest id, so count from id itself.
  uint64_t n = id;
  while (true) {
    word.push_back(static_cast<char>('a' + n % 26));
    if (n < 26) break;
    n = n / 26 - 1;
  }
  std::reverse(word.begin(), word.end());
  return word;
}

int64_t SpacedWordTokens(size_t letters) {
  const size_t piece = letters + 1;
  using request::BuiltinTokenizer;
  if (piece <= static_cast<size_t>(BuiltinTokenizer::kMaxPieceChars)) return 1;
  return static_cast<int64_t>((piece + BuiltinTokenizer::kChunkChars - 1) /
                              BuiltinTokenizer::kChunkChars);
}

}  // namespace warmroute::workload
