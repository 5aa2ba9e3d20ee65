#include "gateway/proxy/normalize.h"

#include <algorithm>
#include <utility>

#include "common/json_writer.h"
#include "core/request/canonical_json.h"
#include "core/request/collapse_whitespace.h"
#include "net/json_members.h"
#include "simdjson.h"

namespace warmroute::gateway {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

// A JSON string literal of the body, [begin, end) with its quotes, and its value.
struct TextSlot {
  size_t begin = 0;
  size_t end = 0;
  std::string text;  // the value; edited in place by the rules
  bool changed = false;
};

struct Message {
  bool system = false;  // role system or developer
  bool user = false;
  std::vector<TextSlot> slots;
};

// What the rules read and edit in a body.
struct BodyText {
  std::string model;
  std::vector<Message> messages;
  std::vector<std::pair<size_t, size_t>> tools;  // [begin, end) of `tools` and `functions` values
};

std::string_view TrimJsonSpace(std::string_view raw) {
  while (!raw.empty() &&
         (raw.back() == ' ' || raw.back() == '\t' || raw.back() == '\n' || raw.back() == '\r')) {
    raw.remove_suffix(1);
  }
  return raw;
}

// Calls read(key, member) for each member of `value` when it is an object (nothing for another
// type); the first error, the walk's or read's.
template <typename Read>
error_code ForEachMember(od::value value, Read&& read) {
  od::json_type type;
  if (error_code e = value.type().get(type)) return e;
  if (type != od::json_type::object) return simdjson::SUCCESS;
  od::object object;
  if (error_code e = value.get_object().get(object)) return e;
  error_code read_error = simdjson::SUCCESS;
  const error_code walk_error = net::ForEachMember(object, [&](std::string_view key, od::value v) {
    read_error = read(key, v);
    return read_error == simdjson::SUCCESS;
  });
  return read_error ? read_error : walk_error;
}

// String `value` copied into `out`.
error_code CopyString(od::value value, std::string& out) {
  std::string_view s;
  if (error_code e = value.get_string().get(s)) return e;
  out = std::string(s);
  return simdjson::SUCCESS;
}

// Reads string `value` into `slot`.
error_code ReadSlot(od::value value, const char* base, TextSlot& slot) {
  const std::string_view raw = value.raw_json_token();
  std::string_view text;
  if (error_code e = value.get_string().get(text)) return e;
  slot.begin = static_cast<size_t>(raw.data() - base);
  slot.end = slot.begin + TrimJsonSpace(raw).size();
  slot.text = std::string(text);
  return simdjson::SUCCESS;
}

// A message's content: a string, or parts of which those of type text / input_text have a text.
// Another type (null, an image part) gives no slot.
error_code ReadContent(od::value value, const char* base, std::vector<TextSlot>& slots) {
  od::json_type type;
  if (error_code e = value.type().get(type)) return e;
  if (type == od::json_type::string) {
    if (error_code e = ReadSlot(value, base, slots.emplace_back())) return e;
    return simdjson::SUCCESS;
  }
  if (type != od::json_type::array) return simdjson::SUCCESS;
  od::array parts;
  if (error_code e = value.get_array().get(parts)) return e;
  for (auto part_result : parts) {
    od::value part;
    if (error_code e = std::move(part_result).get(part)) return e;
    std::string kind;
    std::optional<TextSlot> slot;
    error_code e = ForEachMember(part, [&](std::string_view key, od::value v) {
      od::json_type t;
      if (error_code e = v.type().get(t)) return e;
      if (t != od::json_type::string) return simdjson::SUCCESS;
      if (key == "type") return CopyString(v, kind);
      if (key == "text") return ReadSlot(v, base, slot.emplace());
      return simdjson::SUCCESS;
    });
    if (e) return e;
    if (slot && (kind == "text" || kind == "input_text")) slots.push_back(std::move(*slot));
  }
  return simdjson::SUCCESS;
}

// One message object (a chat message, a Responses input item, an Anthropic message).
error_code ReadMessage(od::value value, const char* base, std::vector<Message>& messages) {
  Message message;
  std::string role;
  bool object = false;
  error_code e = ForEachMember(value, [&](std::string_view key, od::value v) {
    object = true;
    if (key == "role") return CopyString(v, role);
    if (key == "content") return ReadContent(v, base, message.slots);
    return simdjson::SUCCESS;
  });
  if (e || !object) return e;
  message.system = role == "system" || role == "developer";
  message.user = role == "user";
  messages.push_back(std::move(message));
  return simdjson::SUCCESS;
}

error_code ReadMessages(od::value value, const char* base, std::vector<Message>& messages) {
  od::array items;
  if (error_code e = value.get_array().get(items)) return e;
  for (auto item_result : items) {
    od::value item;
    if (error_code e = std::move(item_result).get(item)) return e;
    if (error_code e = ReadMessage(item, base, messages)) return e;
  }
  return simdjson::SUCCESS;
}

// A string, or (`blocks`) text parts, as a message of one role.
error_code ReadTextAs(od::value value, const char* base, bool system, bool user,
                      std::vector<Message>& messages) {
  Message message{.system = system, .user = user, .slots = {}};
  if (error_code e = ReadContent(value, base, message.slots)) return e;
  messages.push_back(std::move(message));
  return simdjson::SUCCESS;
}

error_code ReadSpan(od::value value, const char* base,
                    std::vector<std::pair<size_t, size_t>>& out) {
  od::json_type type;
  if (error_code e = value.type().get(type)) return e;
  std::string_view raw;
  if (type == od::json_type::array) {
    od::array a;
    if (error_code e = value.get_array().get(a)) return e;
    if (error_code e = a.raw_json().get(raw)) return e;
  } else if (type == od::json_type::object) {
    od::object o;
    if (error_code e = value.get_object().get(o)) return e;
    if (error_code e = o.raw_json().get(raw)) return e;
  } else {
    return simdjson::SUCCESS;
  }
  raw = TrimJsonSpace(raw);
  const size_t begin = static_cast<size_t>(raw.data() - base);
  out.emplace_back(begin, begin + raw.size());
  return simdjson::SUCCESS;
}

// The texts and tools of `json` (padded), a body of `endpoint`.
error_code ReadBody(request::Endpoint endpoint, const simdjson::padded_string& json,
                    BodyText& out) {
  // A thread keeps its parser's buffers (sized by the largest body it read) only for bodies up to
  // kKeptParserBytes; a larger body gets a parser of its own, freed on return.
  constexpr size_t kKeptParserBytes = size_t{1} << 20;
  thread_local od::parser kept;
  od::parser own;
  od::parser& parser = json.size() <= kKeptParserBytes ? kept : own;
  od::document doc;
  if (error_code e = parser.iterate(json).get(doc)) return e;
  od::value root;
  if (error_code e = doc.get_value().get(root)) return e;
  const char* base = json.data();
  const bool chat = endpoint == request::Endpoint::kChatCompletions;
  const bool responses = endpoint == request::Endpoint::kResponses;
  const bool messages = endpoint == request::Endpoint::kMessages;
  error_code e = ForEachMember(root, [&](std::string_view key, od::value v) {
    if (key == "model") return CopyString(v, out.model);
    if (key == "tools" || (chat && key == "functions")) return ReadSpan(v, base, out.tools);
    if ((chat || messages) && key == "messages") return ReadMessages(v, base, out.messages);
    if ((responses && key == "instructions") || (messages && key == "system")) {
      return ReadTextAs(v, base, /*system=*/true, /*user=*/false, out.messages);
    }
    if (responses && key == "input") {
      od::json_type type;
      if (error_code e = v.type().get(type)) return e;
      if (type == od::json_type::string) {
        return ReadTextAs(v, base, /*system=*/false, /*user=*/true, out.messages);
      }
      return ReadMessages(v, base, out.messages);
    }
    return simdjson::SUCCESS;
  });
  if (e) return e;
  const char* trailing = nullptr;  // found only when something follows the root object
  if (doc.current_location().get(trailing) == simdjson::SUCCESS) return simdjson::TRAILING_CONTENT;
  return simdjson::SUCCESS;
}

// The lines of `text` (split at '\n'; a final line break gives a last, empty line).
std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t at = 0;
  for (;;) {
    const size_t end = text.find('\n', at);
    if (end == std::string_view::npos) {
      lines.push_back(text.substr(at));
      return lines;
    }
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
}

// move_to_end on the system slots; true when lines moved.
bool MoveToEnd(const std::vector<const tokenize::Regex*>& patterns,
               std::vector<Message>& messages) {
  TextSlot* target = nullptr;
  for (Message& m : messages) {
    if (m.user && !m.slots.empty()) target = &m.slots.back();
  }
  if (target == nullptr) return false;
  std::vector<std::string> moved;
  for (Message& m : messages) {
    if (!m.system) continue;
    for (TextSlot& slot : m.slots) {
      const size_t before = moved.size();
      std::string kept = RemoveMatchingLines(slot.text, patterns, moved);
      if (moved.size() == before) continue;
      slot.text = std::move(kept);
      slot.changed = true;
    }
  }
  if (moved.empty()) return false;
  for (const std::string& line : moved) target->text.append("\n").append(line);
  target->changed = true;
  return true;
}

// collapse_whitespace on the system slots; true when a text changed.
bool CollapseSystemWhitespace(std::vector<Message>& messages) {
  bool any = false;
  for (Message& m : messages) {
    if (!m.system) continue;
    for (TextSlot& slot : m.slots) {
      std::string collapsed = request::CollapseWhitespace(slot.text);
      if (collapsed == slot.text) continue;
      slot.text = std::move(collapsed);
      slot.changed = any = true;
    }
  }
  return any;
}

struct Splice {
  size_t begin, end;
  std::string replacement;
};

std::string Spliced(std::string_view body, std::vector<Splice> splices) {
  std::sort(splices.begin(), splices.end(),
            [](const Splice& a, const Splice& b) { return a.begin < b.begin; });
  std::string out;
  out.reserve(body.size() + body.size() / 8);
  size_t at = 0;
  for (const Splice& s : splices) {
    out.append(body.substr(at, s.begin - at));
    out.append(s.replacement);
    at = s.end;
  }
  out.append(body.substr(at));
  return out;
}

}  // namespace

std::string_view NormalizeRuleName(NormalizeRule rule) {
  switch (rule) {
    case NormalizeRule::kCollapseWhitespace:
      return "collapse_whitespace";
    case NormalizeRule::kCanonicalTools:
      return "canonical_tools";
    case NormalizeRule::kMoveToEnd:
      return "move_to_end";
  }
  return "unknown";
}

bool MayNormalize(const NormalizeConfig& config, std::string_view tenant) {
  return std::any_of(config.entries.begin(), config.entries.end(),
                     [tenant](const auto& e) { return e.tenant.empty() || e.tenant == tenant; });
}

NormalizeRules RulesFor(const NormalizeConfig& config, std::string_view tenant,
                        std::string_view model) {
  NormalizeRules rules;
  for (const NormalizeEntry& e : config.entries) {
    if (!e.tenant.empty() && e.tenant != tenant) continue;
    if (!e.model.empty() && e.model != model) continue;
    rules.collapse_whitespace = rules.collapse_whitespace || e.collapse_whitespace;
    rules.canonical_tools = rules.canonical_tools || e.canonical_tools;
    for (const MoveToEndPattern& p : e.move_to_end) rules.move_to_end.push_back(p.regex.get());
  }
  return rules;
}

std::string RemoveMatchingLines(std::string_view text,
                                const std::vector<const tokenize::Regex*>& patterns,
                                std::vector<std::string>& moved) {
  std::string kept;
  kept.reserve(text.size());
  bool first = true;
  for (std::string_view line : SplitLines(text)) {
    const bool matches = std::any_of(patterns.begin(), patterns.end(),
                                     [line](const tokenize::Regex* p) { return p->Search(line); });
    if (matches) {
      moved.emplace_back(line);
      continue;
    }
    if (!first) kept.push_back('\n');
    kept.append(line);
    first = false;
  }
  return kept;
}

Normalized NormalizeBody(const NormalizeConfig& config, std::string_view tenant,
                         request::Endpoint endpoint, std::string_view body) {
  Normalized out;
  if (endpoint == request::Endpoint::kCompletions || !MayNormalize(config, tenant)) return out;
  const simdjson::padded_string json(body);
  BodyText text;
  if (ReadBody(endpoint, json, text) != simdjson::SUCCESS) return out;
  const NormalizeRules rules = RulesFor(config, tenant, text.model);
  if (!rules.any()) return out;

  std::vector<Splice> splices;
  if (!rules.move_to_end.empty() && MoveToEnd(rules.move_to_end, text.messages)) {
    out.applied[static_cast<size_t>(NormalizeRule::kMoveToEnd)] = true;
  }
  if (rules.collapse_whitespace && CollapseSystemWhitespace(text.messages)) {
    out.applied[static_cast<size_t>(NormalizeRule::kCollapseWhitespace)] = true;
  }
  for (const Message& m : text.messages) {
    for (const TextSlot& slot : m.slots) {
      if (slot.changed) splices.push_back({slot.begin, slot.end, JsonString(slot.text)});
    }
  }
  if (rules.canonical_tools) {
    for (const auto& [begin, end] : text.tools) {
      const std::string_view raw = body.substr(begin, end - begin);
      std::string canonical = request::CanonicalJson(raw);
      if (canonical.empty() || canonical == raw) continue;
      splices.push_back({begin, end, std::move(canonical)});
      out.applied[static_cast<size_t>(NormalizeRule::kCanonicalTools)] = true;
    }
  }
  if (!splices.empty()) out.body = Spliced(body, std::move(splices));
  return out;
}

}  // namespace warmroute::gateway
