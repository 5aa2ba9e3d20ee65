#include "analyze/prefix_hygiene.h"

#include <algorithm>
#include <map>
#include <regex>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "analyze/prefix_sharing.h"
#include "core/request/canonical_json.h"
#include "core/request/collapse_whitespace.h"
#include "xxhash.h"

namespace warmroute::analyze {
namespace {

constexpr size_t kLongLine = 32;
constexpr size_t kCandidateLines = 64;
constexpr size_t kExampleChars = 160;

struct Line {
  size_t begin, end;  // [begin, end) without the '\n'
  uint64_t hash;
};

std::vector<Line> LinesOf(std::string_view text) {
  std::vector<Line> lines;
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back({at, end, XXH3_64bits(text.data() + at, end - at)});
    if (end == text.size()) break;
    at = end + 1;
  }
  return lines;
}

size_t CommonPrefix(std::string_view a, std::string_view b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

// The index of the line of `lines` that holds offset `at`.
size_t LineAt(const std::vector<Line>& lines, size_t at) {
  const auto it = std::upper_bound(lines.begin(), lines.end(), at,
                                   [](size_t v, const Line& l) { return v < l.begin; });
  return it == lines.begin() ? 0 : static_cast<size_t>(it - lines.begin()) - 1;
}

std::string Clip(std::string_view s) {
  std::string out(s.substr(0, kExampleChars));
  if (s.size() > kExampleChars) out += "…";
  return out;
}

struct KindText {
  const char* kind;
  const char* what;
  const char* advice;
  const char* fixed_as = "with the span after the static part";
};

constexpr KindText kKinds[] = {
    {"tools_key_order", "tool definitions serialised with their keys in a different order",
     "serialise `tools` with a fixed key order (e.g. sorted keys) so that the same tools give the "
     "same text",
     "with the tools serialised one way"},
    {"uuid", "a UUID early in the prompt",
     "move the UUID out of the system prompt: after the static part, or out of the prompt"},
    {"timestamp", "a timestamp (a date with a time, or a time of day) early in the prompt",
     "put the current time at the end of the prompt (the last user message), or round it to the "
     "day and keep it after the static instructions"},
    {"date", "a date early in the prompt",
     "put the date after the static part of the prompt (e.g. at the start of the last user "
     "message)"},
    {"request_id", "a request or session id early in the prompt",
     "keep ids out of the prompt, or put them after the static part"},
    {"number", "a number that changes between requests early in the prompt",
     "move the changing number after the static part of the prompt"},
    {"per_user_text", "per-user text (a name, a greeting) before the shared instructions",
     "put the shared instructions first and the user's name or greeting after them"},
    {"whitespace",
     "whitespace that differs between requests (trailing spaces, doubled spaces or blank lines) "
     "early in the prompt",
     "build the static part of the prompt from one constant string, or strip trailing and "
     "repeated whitespace before sending; for clients that cannot change at once, the gateway's "
     "`normalize: collapse_whitespace` rule does it in system messages",
     "with whitespace made canonical"},
    {"varying_text", "the first lines of the prompt change while the rest stays the same",
     "order the prompt static-first: instructions, policies, documents and tool definitions "
     "before anything that changes per request"},
};

const KindText& KindOf(std::string_view kind) {
  for (const KindText& k : kKinds) {
    if (kind == k.kind) return k;
  }
  return kKinds[std::size(kKinds) - 1];
}

// The words (runs of letters, digits and _-:.) of `a` and `b` that differ, position by position.
std::pair<std::string, std::string> DifferingWords(const std::string& a, const std::string& b) {
  static const std::regex kWord("[A-Za-z0-9_:.\\-/]+");
  std::vector<std::string> wa, wb;
  for (auto it = std::sregex_iterator(a.begin(), a.end(), kWord); it != std::sregex_iterator();
       ++it) {
    wa.push_back(it->str());
  }
  for (auto it = std::sregex_iterator(b.begin(), b.end(), kWord); it != std::sregex_iterator();
       ++it) {
    wb.push_back(it->str());
  }
  std::string da, db;
  for (size_t i = 0; i < std::max(wa.size(), wb.size()); ++i) {
    const std::string x = i < wa.size() ? wa[i] : "";
    const std::string y = i < wb.size() ? wb[i] : "";
    if (x == y) continue;
    if (!da.empty()) da += ' ';
    if (!db.empty()) db += ' ';
    da += x;
    db += y;
  }
  return {da, db};
}

}  // namespace

std::string ClassifyDifference(const std::string& a, const std::string& b) {
  static const std::regex kUuid(
      "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
  static const std::regex kTimestamp(
      "\\d{4}-\\d{2}-\\d{2}[T ]\\d{1,2}:\\d{2}|\\b\\d{1,2}:\\d{2}(:\\d{2})?\\b");
  static const std::regex kDate(
      "\\d{4}-\\d{2}-\\d{2}|\\b\\d{1,2}/\\d{1,2}/\\d{2,4}\\b|"
      "\\b(Jan(uary)?|Feb(ruary)?|Mar(ch)?|Apr(il)?|May|June?|July?|Aug(ust)?|Sep(tember)?|"
      "Oct(ober)?|Nov(ember)?|Dec(ember)?)\\.? \\d{1,2}\\b|"
      "\\b(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\\b");
  static const std::regex kId(
      "\\b(?=[A-Za-z0-9_\\-]*\\d)[A-Za-z0-9_\\-]{12,}\\b|\\b[0-9a-fA-F]{8,}\\b|"
      "\\b(id|ID|Id)\\b[:=# ]");
  static const std::regex kDigits("[0-9 ]+");
  static const std::regex kName("[A-Z][a-z]+");
  static const std::regex kGreeting("^\\W*(Hello|Hi|Hey|Dear|Good (morning|afternoon|evening))\\b");
  // What varies is this request's side: a match in `a` that `b` does not contain.
  const auto varies = [&](const std::regex& re) {
    for (auto it = std::sregex_iterator(a.begin(), a.end(), re); it != std::sregex_iterator();
         ++it) {
      if (b.find(it->str()) == std::string::npos) return true;
    }
    return false;
  };
  // Only whitespace differs: the two are the same as the gateway's collapse_whitespace rule would
  // send them (runs of spaces and tabs made one, trailing ones and extra blank lines dropped).
  if (a != b && request::CollapseWhitespace(a) == request::CollapseWhitespace(b)) {
    return "whitespace";
  }
  const auto [da, db] = DifferingWords(a, b);
  if (varies(kUuid)) return "uuid";
  if (varies(kTimestamp)) return "timestamp";
  if (varies(kDate)) return "date";
  if (varies(kId)) return "request_id";
  if (!da.empty() && !db.empty() && std::regex_match(da, kDigits) &&
      std::regex_match(db, kDigits)) {
    return "number";
  }
  if (std::regex_match(da, kName) || std::regex_search(a, kGreeting)) return "per_user_text";
  return "varying_text";
}

std::vector<HygieneFinding> FindHygieneDefects(const PromptSet& set) {
  std::vector<HygieneFinding> out;
  if (set.format != "requests") return out;
  const size_t n = set.records.size();
  std::vector<std::vector<Line>> lines(n);
  absl::flat_hash_map<uint64_t, size_t> last_with_line;  // long line -> latest request
  std::vector<std::string> canonical_tools(n);
  struct Hit {
    size_t request, other;
    size_t begin, end;              // span in the request's text
    size_t other_begin, other_end;  // the same in the other's
    int64_t blocked;
    std::string replacement;  // the fix: this instead of the span (else the span moves to the end)
    bool other_same_kind = false;  // the other's span is of the same kind
  };
  // Per tenant and canonical tools, the serialisation most requests use (the earliest of the most
  // common), and the first request that uses it: the reference a reordered one is fixed to.
  for (size_t i = 0; i < n; ++i) {
    if (!set.records[i].tools.empty()) canonical_tools[i] = request::CanonicalJson(set.records[i].tools);
  }
  absl::flat_hash_map<std::string, size_t> reference;  // tenant + canonical -> request
  {
    absl::flat_hash_map<std::string, absl::flat_hash_map<std::string, std::pair<int64_t, size_t>>>
        variants;  // tenant + canonical -> raw -> (count, first request)
    for (size_t i = 0; i < n; ++i) {
      if (canonical_tools[i].empty()) continue;
      auto& v = variants[set.records[i].tenant + '\0' + canonical_tools[i]]
                    .try_emplace(set.records[i].tools, 0, i)
                    .first->second;
      ++v.first;
    }
    for (const auto& [group, raws] : variants) {
      std::pair<int64_t, size_t> best{0, n};
      for (const auto& [raw, v] : raws) {
        if (v.first > best.first || (v.first == best.first && v.second < best.second)) best = v;
      }
      reference[group] = best.second;
    }
  }
  std::map<std::string, std::vector<Hit>> by_kind;
  for (size_t i = 0; i < n; ++i) {
    const std::string& text = set.records[i].text;
    lines[i] = LinesOf(text);
    // The earlier request sharing the most long lines among this one's first lines.
    absl::flat_hash_map<size_t, int> votes;
    for (size_t k = 0; k < std::min(lines[i].size(), kCandidateLines); ++k) {
      const Line& l = lines[i][k];
      if (l.end - l.begin < kLongLine) continue;
      const auto it = last_with_line.find(l.hash);
      if (it != last_with_line.end()) ++votes[it->second];
    }
    size_t best = n;
    int best_votes = 0;
    for (const auto& [j, v] : votes) {
      if (v > best_votes || (v == best_votes && j > best)) {
        best = j;
        best_votes = v;
      }
    }
    for (const Line& l : lines[i]) {
      if (l.end - l.begin >= kLongLine) last_with_line[l.hash] = i;
    }
    // Tools that an earlier request serialised with their members in another order: the fix is
    // that request's serialisation (whatever follows the tools then matches again).
    if (!canonical_tools[i].empty()) {
      const size_t ref = reference[set.records[i].tenant + '\0' + canonical_tools[i]];
      const PromptRecord& first_r = set.records[ref];
      const PromptRecord& r = set.records[i];
      if (first_r.tools != r.tools) {
        const size_t at = text.find(r.tools);
        const size_t other_at = first_r.text.find(first_r.tools);
        if (at != std::string::npos && other_at != std::string::npos) {
          const size_t run =
              CommonPrefix(std::string_view(text).substr(at + r.tools.size()),
                           std::string_view(first_r.text).substr(other_at + first_r.tools.size()));
          by_kind["tools_key_order"].push_back({i, ref, at, at + r.tools.size(), other_at,
                                                other_at + first_r.tools.size(),
                                                static_cast<int64_t>(run), first_r.tools, false});
          continue;
        }
      }
    }
    if (best == n || set.records[best].tenant != set.records[i].tenant) continue;
    const std::string& other = set.records[best].text;
    const size_t part = CommonPrefix(text, other);
    if (part >= text.size() || part >= other.size()) continue;
    // Parting inside this request's tools, which are its group's usual serialisation: the other's
    // defect (found when the other was looked at), not this one's.
    if (!set.records[i].tools.empty()) {
      const size_t at = text.find(set.records[i].tools);
      if (at != std::string::npos && part >= at && part < at + set.records[i].tools.size()) {
        continue;
      }
    }
    // Where they agree again: a line of each from the parting line on, followed by a long run.
    // The other's lines from its parting line on (this one may have lines inserted before it).
    absl::flat_hash_map<uint64_t, size_t> other_lines;  // hash -> first such line
    const size_t other_first = LineAt(lines[best], part);
    for (size_t k = other_first; k < lines[best].size(); ++k) {
      const Line& l = lines[best][k];
      if (l.begin > part + kMaxSpanChars) break;
      other_lines.try_emplace(l.hash, k);
    }
    const size_t first = LineAt(lines[i], part);
    // This request's parting line agreeing with a later line of the other's: the other has lines
    // this one lacks, and this one has nothing to move.
    if (const auto it = other_lines.find(lines[i][first].hash); it != other_lines.end()) {
      const size_t run = CommonPrefix(std::string_view(text).substr(lines[i][first].begin),
                                      std::string_view(other).substr(lines[best][it->second].begin));
      if (static_cast<int64_t>(run) >= kMinResyncChars) continue;
    }
    for (size_t k = first + 1; k < lines[i].size(); ++k) {
      const Line& l = lines[i][k];
      if (l.begin > part + kMaxSpanChars) break;
      const auto it = other_lines.find(l.hash);
      if (it == other_lines.end()) continue;
      const size_t ob = lines[best][it->second].begin;
      const size_t run = CommonPrefix(std::string_view(text).substr(l.begin),
                                      std::string_view(other).substr(ob));
      if (static_cast<int64_t>(run) < kMinResyncChars) continue;
      const std::string a = text.substr(lines[i][first].begin, l.begin - lines[i][first].begin);
      const std::string b =
          other.substr(lines[best][other_first].begin, ob - lines[best][other_first].begin);
      // The span is whole lines: from the start of the parting line to where they agree again.
      const std::string kind = ClassifyDifference(a, b);
      by_kind[kind].push_back({i, best, lines[i][first].begin, l.begin,
                               lines[best][other_first].begin, ob, static_cast<int64_t>(run), "",
                               ClassifyDifference(b, a) == kind});
      break;
    }
  }
  if (by_kind.empty()) return out;

  // Infinite-cache hit rate over the texts, with the given requests' spans moved to the end; or,
  // with `collapse`, with every text's whitespace made canonical (a prompt's stray whitespace may
  // vary at more places than the first span found).
  const auto hit_rate = [&](const std::vector<const Hit*>& fixed, bool collapse) {
    absl::flat_hash_map<size_t, const Hit*> fix;
    for (const Hit* h : fixed) fix[h->request] = h;
    absl::flat_hash_set<uint64_t> seen;
    int64_t shared = 0, blocks = 0;
    for (size_t i = 0; i < n; ++i) {
      const PromptRecord& r = set.records[i];
      std::vector<uint64_t> b;
      const auto it = fix.find(i);
      if (collapse) {
        b = TextBlocks(r.model, r.tenant, request::CollapseWhitespace(r.text));
      } else if (it == fix.end()) {
        b = r.blocks;
      } else {
        const Hit& h = *it->second;
        const std::string fixed_text =
            h.replacement.empty()
                ? r.text.substr(0, h.begin) + r.text.substr(h.end) + "\n" +
                      r.text.substr(h.begin, h.end - h.begin)
                : r.text.substr(0, h.begin) + h.replacement + r.text.substr(h.end);
        b = TextBlocks(r.model, r.tenant, fixed_text);
      }
      shared += static_cast<int64_t>(ShareAndRemember(b, seen));
      blocks += static_cast<int64_t>(b.size());
    }
    return blocks > 0 ? static_cast<double>(shared) / static_cast<double>(blocks) : 0.0;
  };
  const double now = hit_rate({}, false);
  for (const auto& [kind, hits] : by_kind) {
    HygieneFinding f;
    const KindText& k = KindOf(kind);
    f.kind = k.kind;
    f.what = k.what;
    f.advice = k.advice;
    // A request counts once (the other of a pair may be a finding of its own).
    absl::flat_hash_set<size_t> affected;
    std::vector<int64_t> positions, spans;
    double blocked = 0;
    std::vector<const Hit*> fixed;
    for (const Hit& h : hits) {
      affected.insert(h.request);
      positions.push_back(static_cast<int64_t>(h.begin));
      spans.push_back(static_cast<int64_t>(h.end - h.begin));
      blocked += static_cast<double>(h.blocked);
      fixed.push_back(&h);
    }
    // The first request of a kind had nothing of its kind earlier to be compared with: fixing
    // the others alone would leave it apart, so it moves its span too (the pair's other side).
    std::vector<Hit> firsts;
    for (const Hit& h : hits) {
      if (h.other_same_kind && !affected.contains(h.other)) {
        affected.insert(h.other);
        firsts.push_back(
            {h.other, h.request, h.other_begin, h.other_end, h.begin, h.end, 0, "", true});
      }
    }
    for (const Hit& h : firsts) fixed.push_back(&h);
    std::sort(positions.begin(), positions.end());
    std::sort(spans.begin(), spans.end());
    f.requests = static_cast<int64_t>(affected.size());
    f.share = static_cast<double>(f.requests) / static_cast<double>(n);
    f.position_chars = positions[positions.size() / 2];
    f.span_chars = spans[spans.size() / 2];
    f.blocked_chars_mean = blocked / static_cast<double>(hits.size());
    const Hit& e = hits.front();
    const std::vector<Line>& li = lines[e.request];
    const std::vector<Line>& lo = lines[e.other];
    const std::string& ti = set.records[e.request].text;
    const std::string& to = set.records[e.other].text;
    const Line& fi = li[LineAt(li, e.begin)];
    const Line& fo = lo[LineAt(lo, e.other_begin)];
    f.example = Clip(std::string_view(ti).substr(fi.begin, e.end - fi.begin));
    f.example_other = Clip(std::string_view(to).substr(fo.begin, e.other_end - fo.begin));
    f.example_line = set.records[e.request].line;
    f.example_other_line = set.records[e.other].line;
    f.hit_rate_now = now;
    f.fixed_as = k.fixed_as;
    f.hit_rate_fixed = hit_rate(fixed, kind == "whitespace");
    out.push_back(std::move(f));
  }
  std::sort(out.begin(), out.end(), [](const HygieneFinding& a, const HygieneFinding& b) {
    return a.requests != b.requests ? a.requests > b.requests : a.kind < b.kind;
  });
  return out;
}

}  // namespace warmroute::analyze
