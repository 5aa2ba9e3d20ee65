#include "net/usage_tap.h"

#include <algorithm>
#include <cstring>

#include "net/http1/sse.h"
#include "net/json_members.h"
#include "simdjson.h"

namespace warmroute::net {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// True when `text` has a "usage" key whose value is an object (not null): the cheap test run on
// every event before any JSON parsing.
bool HasUsageObject(std::string_view text) {
  constexpr std::string_view kKey = "\"usage\"";
  // memmem, not string_view::find: find stops at every '"' of the text (a JSON body is full of
  // them) to compare the rest of the key; memmem skips ahead.
  auto find = [text, kKey](size_t from) -> size_t {
    // Not with fewer bytes than the key: an empty view's data() may be null, and memmem's
    // arguments must not be (UBSan, tests/fuzz: sse_usage).
    if (text.size() - from < kKey.size()) return std::string_view::npos;
    const void* hit = memmem(text.data() + from, text.size() - from, kKey.data(), kKey.size());
    return hit == nullptr ? std::string_view::npos
                          : static_cast<size_t>(static_cast<const char*>(hit) - text.data());
  };
  for (size_t at = find(0); at != std::string_view::npos; at = find(at + kKey.size())) {
    size_t i = at + kKey.size();
    while (i < text.size() && IsSpace(text[i])) ++i;
    if (i >= text.size() || text[i] != ':') continue;
    ++i;
    while (i < text.size() && IsSpace(text[i])) ++i;
    if (i < text.size() && text[i] == '{') return true;
  }
  return false;
}

// The payload of an event's first "data:" line.
std::string_view DataOf(std::string_view event) {
  size_t at = 0;
  while (at < event.size()) {
    size_t end = event.find('\n', at);
    if (end == std::string_view::npos) end = event.size();
    std::string_view line = event.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.substr(0, 5) == "data:") {
      line.remove_prefix(5);
      if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
      return line;
    }
    at = end + 1;
  }
  return {};
}

// The type of an event: its `event:` line's, else the first "type" member of its data.
std::string_view EventType(std::string_view event) {
  std::string_view rest = event;
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.starts_with("event:")) {
      line.remove_prefix(6);
      while (!line.empty() && IsSpace(line.front())) line.remove_prefix(1);
      return line;
    }
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  constexpr std::string_view kType = "\"type\":\"";
  const size_t at = event.find(kType);
  if (at == std::string_view::npos) return {};
  const size_t begin = at + kType.size();
  const size_t end = event.find('"', begin);
  return end == std::string_view::npos ? std::string_view() : event.substr(begin, end - begin);
}

// True for the events an API sends before any output: the answer's announcement.
bool AnnouncesOnly(UsageFormat format, std::string_view event) {
  const std::string_view type = EventType(event);
  switch (format) {
    case UsageFormat::kResponses:
      return type == "response.created" || type == "response.in_progress" ||
             type == "response.queued";
    case UsageFormat::kMessages:
      return type == "message_start" || type == "ping";
    case UsageFormat::kChat:
      return false;
  }
  return false;
}

// True when the chunk's "choices" is an empty array: the usage-only chunk.
bool HasNoChoices(simdjson::dom::element root) {
  simdjson::dom::array choices;
  if (root["choices"].get_array().get(choices) != simdjson::SUCCESS) return true;
  return choices.size() == 0;
}

// Walks `object` with net::ForEachMember, setting `malformed` on a syntax error of the walk; the
// visitor stops the walk when `malformed` is set (by Count) or it returns false.
template <typename Visit>
void ForEachMember(simdjson::ondemand::object& object, bool& malformed, Visit&& visit) {
  if (net::ForEachMember(object, [&](std::string_view key, simdjson::ondemand::value value) {
        return visit(key, value) && !malformed;
      }) != simdjson::SUCCESS) {
    malformed = true;
  }
}

// A token count: set when it is an integer in [0, kMaxUsageTokens] (an engine's counts are not
// trusted: see ReadUsage). A value that is not an integer or out of range is skipped; any other
// error is a syntax error.
std::optional<int64_t> Count(simdjson::ondemand::value value, bool& malformed) {
  int64_t n = 0;
  const simdjson::error_code error = value.get_int64().get(n);
  if (error == simdjson::SUCCESS) {
    if (n >= 0 && n <= kMaxUsageTokens) return n;
    return std::nullopt;
  }
  if (error != simdjson::INCORRECT_TYPE && error != simdjson::NUMBER_OUT_OF_RANGE) {
    malformed = true;
  }
  return std::nullopt;
}

// The counts of a `usage` value, as `format` names them; nullopt when it is not an object.
std::optional<Usage> ReadCounts(simdjson::ondemand::value value, UsageFormat format,
                                bool& malformed) {
  simdjson::ondemand::object usage;
  if (value.get_object().get(usage) != simdjson::SUCCESS) return std::nullopt;
  const bool chat = format == UsageFormat::kChat;
  const std::string_view prompt_key = chat ? "prompt_tokens" : "input_tokens";
  const std::string_view completion_key = chat ? "completion_tokens" : "output_tokens";
  const std::string_view details_key = chat ? "prompt_tokens_details" : "input_tokens_details";
  Usage result;
  int64_t uncached = 0, cache_read = 0, cache_creation = 0;  // kMessages
  ForEachMember(usage, malformed, [&](std::string_view key, simdjson::ondemand::value v) {
    if (key == prompt_key) {
      if (std::optional<int64_t> n = Count(v, malformed)) {
        (format == UsageFormat::kMessages ? uncached : result.prompt_tokens) = *n;
      }
    } else if (key == completion_key) {
      if (std::optional<int64_t> n = Count(v, malformed)) result.completion_tokens = *n;
    } else if (format == UsageFormat::kMessages && key == "cache_read_input_tokens") {
      if (std::optional<int64_t> n = Count(v, malformed)) {
        cache_read = *n;
        result.cached_tokens = *n;
      }
    } else if (format == UsageFormat::kMessages && key == "cache_creation_input_tokens") {
      if (std::optional<int64_t> n = Count(v, malformed)) cache_creation = *n;
    } else if (format != UsageFormat::kMessages && key == details_key) {
      simdjson::ondemand::object details;
      if (v.get_object().get(details) != simdjson::SUCCESS) return true;
      ForEachMember(details, malformed, [&](std::string_view inner, simdjson::ondemand::value c) {
        if (inner == "cached_tokens") result.cached_tokens = Count(c, malformed);
        return true;
      });
    }
    return true;
  });
  if (format == UsageFormat::kMessages) {
    result.prompt_tokens = std::min(uncached + cache_read + cache_creation, kMaxUsageTokens);
  }
  return result;
}

}  // namespace

std::optional<Usage> ReadUsage(std::string_view json, UsageFormat format) {
  if (!HasUsageObject(json)) return std::nullopt;
  // On-demand: only the path to "usage" is parsed (a DOM parse built the whole response's tape,
  // once per proxied request). The input is copied into a per-thread buffer with the padding
  // simdjson reads past the end.
  thread_local simdjson::ondemand::parser parser;
  thread_local std::string padded;
  if (padded.capacity() < json.size() + simdjson::SIMDJSON_PADDING) {
    padded.reserve(json.size() + simdjson::SIMDJSON_PADDING);
  }
  padded.assign(json.data(), json.size());
  simdjson::ondemand::document doc;
  if (parser.iterate(simdjson::padded_string_view(padded, padded.capacity())).get(doc) !=
      simdjson::SUCCESS) {
    return std::nullopt;
  }
  // One forward pass over the members, stopping at the first syntax error. The on-demand parser
  // does not validate a document before it is read: lookups by key (which go round an object
  // again from its start) went on after a malformed part and crashed on an engine's truncated
  // or garbled event (tests/fuzz, sse_usage).
  // A streamed Responses or Messages event carries the usage of the object it holds.
  const std::string_view holder = format == UsageFormat::kResponses  ? "response"
                                  : format == UsageFormat::kMessages ? "message"
                                                                     : "";
  simdjson::ondemand::object root;
  if (doc.get_object().get(root) != simdjson::SUCCESS) return std::nullopt;
  // A top-level usage object wins over the held object's.
  std::optional<Usage> top;
  std::optional<Usage> held;
  bool malformed = false;
  ForEachMember(root, malformed, [&](std::string_view key, simdjson::ondemand::value value) {
    if (key == "usage") {
      top = ReadCounts(value, format, malformed);
    } else if (!holder.empty() && key == holder && !held) {
      simdjson::ondemand::object object;
      if (value.get_object().get(object) != simdjson::SUCCESS) return true;
      ForEachMember(object, malformed, [&](std::string_view inner, simdjson::ondemand::value v) {
        if (inner == "usage") held = ReadCounts(v, format, malformed);
        return !held.has_value();
      });
    }
    return !top.has_value();
  });
  if (malformed) return std::nullopt;
  return top ? top : held;
}

std::string_view SseUsageTap::Feed(std::string_view piece) {
  out_.clear();
  if (format_ == UsageFormat::kChat && !piece.empty()) output_started_ = true;
  if (pending_.empty()) {
    // Pass complete events straight from `piece`, unless one must be dropped.
    size_t done = 0;
    for (size_t end = SseEventEnd(piece, 0); end != std::string_view::npos;
         end = SseEventEnd(piece, done)) {
      const std::string_view event = piece.substr(done, end - done);
      if (drop_usage_event_ && HasUsageObject(event)) break;  // slow path from here
      if (!usage_ && HasUsageObject(event)) usage_ = ReadUsage(DataOf(event), format_);
      if (!output_started_ && !AnnouncesOnly(format_, event)) output_started_ = true;
      ++events_;
      done = end;
    }
    if (done == piece.size()) return piece;
    if (SseEventEnd(piece, done) == std::string_view::npos) {
      pending_.assign(piece.substr(done));
      return piece.substr(0, done);
    }
    out_.assign(piece.substr(0, done));
    piece.remove_prefix(done);
  }
  pending_.append(piece);
  size_t done = 0;
  for (size_t end = SseEventEnd(pending_, 0); end != std::string_view::npos;
       end = SseEventEnd(pending_, done)) {
    Event(std::string_view(pending_).substr(done, end - done));
    done = end;
  }
  pending_.erase(0, done);
  return out_;
}

std::string_view SseUsageTap::Finish() {
  out_.swap(pending_);
  pending_.clear();
  return out_;
}

void SseUsageTap::Event(std::string_view event) {
  if (!output_started_ && !AnnouncesOnly(format_, event)) output_started_ = true;
  if (HasUsageObject(event)) {
    const std::string_view data = DataOf(event);
    if (!usage_) usage_ = ReadUsage(data, format_);
    // An event without data is not the usage-only chunk (and an empty view's data() may be null,
    // which simdjson's parse must not be given: UBSan, tests/fuzz: sse_usage).
    if (drop_usage_event_ && !data.empty()) {
      thread_local simdjson::dom::parser parser;
      simdjson::dom::element root;
      if (parser.parse(data.data(), data.size()).get(root) == simdjson::SUCCESS &&
          HasNoChoices(root)) {
        return;  // the usage-only chunk the gateway asked for: the client did not
      }
    }
  }
  ++events_;
  out_.append(event);
}

}  // namespace warmroute::net
