#include "net/usage_tap.h"

#include <algorithm>
#include <cstring>

#include "net/http1/sse.h"
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
  simdjson::ondemand::object usage;
  if (doc["usage"].get_object().get(usage) != simdjson::SUCCESS) {
    // A streamed Responses or Messages event: the usage of the object it carries.
    const char* holder = format == UsageFormat::kResponses  ? "response"
                         : format == UsageFormat::kMessages ? "message"
                                                            : nullptr;
    if (holder == nullptr ||
        doc[holder]["usage"].get_object().get(usage) != simdjson::SUCCESS) {
      return std::nullopt;
    }
  }
  Usage result;
  int64_t value = 0;
  const auto valid = [&value](auto&& field) {
    return field.get_int64().get(value) == simdjson::SUCCESS && value >= 0 &&
           value <= kMaxUsageTokens;
  };
  switch (format) {
    case UsageFormat::kChat:
      if (valid(usage["prompt_tokens"])) result.prompt_tokens = value;
      if (valid(usage["completion_tokens"])) result.completion_tokens = value;
      if (valid(usage["prompt_tokens_details"]["cached_tokens"])) result.cached_tokens = value;
      break;
    case UsageFormat::kResponses:
      if (valid(usage["input_tokens"])) result.prompt_tokens = value;
      if (valid(usage["output_tokens"])) result.completion_tokens = value;
      if (valid(usage["input_tokens_details"]["cached_tokens"])) result.cached_tokens = value;
      break;
    case UsageFormat::kMessages: {
      int64_t prompt = 0;
      if (valid(usage["input_tokens"])) prompt += value;
      if (valid(usage["cache_read_input_tokens"])) {
        prompt += value;
        result.cached_tokens = value;
      }
      if (valid(usage["cache_creation_input_tokens"])) prompt += value;
      result.prompt_tokens = std::min(prompt, kMaxUsageTokens);
      if (valid(usage["output_tokens"])) result.completion_tokens = value;
      break;
    }
  }
  return result;
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
    if (drop_usage_event_) {
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
