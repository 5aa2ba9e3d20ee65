#include "loadgen/response_reader.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "loadgen/bench_result.h"
#include "net/http1/sse.h"
#include "simdjson.h"

namespace warmroute::loadgen {
namespace {

constexpr size_t kMaxBody = 64u << 20;  // a non-streamed answer larger than this is an error
constexpr size_t kQuoteChars = 80;

// The start of `text`, printable, for an error message.
std::string Quote(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, kQuoteChars)) {
    out += std::isprint(static_cast<unsigned char>(c)) ? c : ' ';
  }
  if (text.size() > kQuoteChars) out += "...";
  return absl::StrCat("\"", out, "\"");
}

thread_local simdjson::dom::parser parser;

// choices[0].delta.content, choices[0].message.content or choices[0].text, if a string.
std::string_view ContentOf(simdjson::dom::element root) {
  simdjson::dom::array choices;
  if (root["choices"].get_array().get(choices) != simdjson::SUCCESS) return {};
  for (simdjson::dom::element choice : choices) {
    std::string_view text;
    if (choice["delta"]["content"].get_string().get(text) == simdjson::SUCCESS) return text;
    if (choice["message"]["content"].get_string().get(text) == simdjson::SUCCESS) return text;
    if (choice["text"].get_string().get(text) == simdjson::SUCCESS) return text;
    break;
  }
  return {};
}

// error.message of an OpenAI error body, or "".
std::string ErrorMessageOf(simdjson::dom::element root) {
  std::string_view message;
  if (root["error"]["message"].get_string().get(message) == simdjson::SUCCESS) {
    return std::string(message);
  }
  if (root["error"].get_string().get(message) == simdjson::SUCCESS) return std::string(message);
  if (root["message"].get_string().get(message) == simdjson::SUCCESS) return std::string(message);
  return "";
}

// When `line` is the SSE field `field` ("data:"), sets `value` to its value (one leading space
// dropped) and returns true.
bool FieldValue(std::string_view line, std::string_view field, std::string_view& value) {
  if (line.substr(0, field.size()) != field) return false;
  line.remove_prefix(field.size());
  if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  value = line;
  return true;
}

// What one SSE event says.
struct Reading {
  std::string_view content;  // a content chunk's text; "" when the event is none
  bool usage = false;        // it carries the usage
  std::string_view error_kind;
  std::string error;
};

Reading Content(std::string_view text) {
  Reading reading;
  reading.content = text;
  return reading;
}

Reading UsageEvent() {
  Reading reading;
  reading.usage = true;
  return reading;
}

// An error event of stream `what` ("error", "response.failed") and its message, if any.
Reading ErrorEvent(std::string_view what, std::string_view message, std::string_view data) {
  Reading reading;
  reading.error_kind = error_kind::kBrokenStream;
  reading.error =
      absl::StrCat(AbslView(what),
                   " event in the stream: ", message.empty() ? Quote(data) : std::string(message));
  return reading;
}

// A chat or completions chunk.
Reading ReadChatEvent(simdjson::dom::element root, std::string_view data) {
  if (!root["error"].error() && root["choices"].error()) {
    return ErrorEvent("error", ErrorMessageOf(root), data);
  }
  simdjson::dom::object usage;
  Reading reading = Content(ContentOf(root));
  reading.usage = root["usage"].get_object().get(usage) == simdjson::SUCCESS;
  return reading;
}

// A Responses stream event named `name` (else by its "type").
Reading ReadResponsesEvent(std::string_view name, simdjson::dom::element root,
                           std::string_view data) {
  std::string_view type = name;
  if (type.empty() && root["type"].get_string().get(type) != simdjson::SUCCESS) return {};
  if (type == "response.output_text.delta") {
    std::string_view delta;
    if (root["delta"].get_string().get(delta) != simdjson::SUCCESS) return {};
    return Content(delta);
  }
  if (type == "response.completed" || type == "response.incomplete") return UsageEvent();
  if (type == "error") return ErrorEvent(type, ErrorMessageOf(root), data);
  if (type == "response.failed") {
    std::string_view message;
    if (root["response"]["error"]["message"].get_string().get(message) != simdjson::SUCCESS) {
      message = {};
    }
    return ErrorEvent(type, message, data);
  }
  return {};
}

// The text of every output[].content[] part of a response object, in order.
std::string OutputTextOf(simdjson::dom::array output) {
  std::string text;
  for (simdjson::dom::element item : output) {
    simdjson::dom::array content;
    if (item["content"].get_array().get(content) != simdjson::SUCCESS) continue;
    for (simdjson::dom::element part : content) {
      std::string_view piece;
      if (part["text"].get_string().get(piece) == simdjson::SUCCESS) text.append(piece);
    }
  }
  return text;
}

}  // namespace

ResponseReader::ResponseReader(int status, std::string_view content_type, request::Endpoint api)
    : status_(status),
      responses_(api == request::Endpoint::kResponses),
      content_type_(content_type),
      sse_(status == 200 &&
           absl::StartsWithIgnoreCase(absl::StripLeadingAsciiWhitespace(content_type_),
                                      "text/event-stream")) {}

void ResponseReader::Fail(std::string_view kind, std::string reason) {
  if (!error_kind_.empty()) return;
  error_kind_ = std::string(kind);
  error_ = std::move(reason);
}

void ResponseReader::Feed(std::string_view piece, double now_s) {
  if (!sse_) {
    if (buffer_.size() + piece.size() > kMaxBody) {
      truncated_ = true;
      return;
    }
    buffer_.append(piece);
    return;
  }
  if (!error_kind_.empty()) return;  // the rest of a broken stream is of no interest
  // Events straight from `piece` when nothing is pending; the tail is kept.
  std::string_view text = piece;
  if (!buffer_.empty()) {
    buffer_.append(piece);
    text = buffer_;
  }
  size_t done = 0;
  for (size_t end = net::SseEventEnd(text, 0); end != std::string_view::npos;
       end = net::SseEventEnd(text, done)) {
    Event(text.substr(done, end - done), now_s);
    done = end;
  }
  if (text.data() == buffer_.data()) {
    buffer_.erase(0, done);
  } else {
    buffer_.assign(text.substr(done));
  }
}

void ResponseReader::Event(std::string_view event, double now_s) {
  // The data lines of the event, joined by '\n' (SSE), and its name; other fields are ignored.
  std::string joined;
  std::string_view data;
  std::string_view name;
  int lines = 0;
  size_t at = 0;
  while (at < event.size()) {
    size_t end = event.find('\n', at);
    if (end == std::string_view::npos) end = event.size();
    std::string_view line = event.substr(at, end - at);
    at = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (FieldValue(line, "event:", name)) continue;
    if (!FieldValue(line, "data:", line)) continue;
    if (lines++ == 0) {
      data = line;
    } else {
      if (lines == 2) joined.assign(data);
      joined.append("\n").append(line);
      data = joined;
    }
  }
  if (lines > 0) Data(name, data, now_s);
}

void ResponseReader::Data(std::string_view name, std::string_view data, double now_s) {
  if (!error_kind_.empty()) return;
  ++events_;
  if (data == "[DONE]") return;
  simdjson::dom::element root;
  if (parser.parse(data.data(), data.size()).get(root) != simdjson::SUCCESS || !root.is_object()) {
    Fail(error_kind::kBadResponse, absl::StrCat("SSE data is not a JSON object: ", Quote(data)));
    return;
  }
  Reading reading = responses_ ? ReadResponsesEvent(name, root, data) : ReadChatEvent(root, data);
  if (!reading.error_kind.empty()) {
    Fail(reading.error_kind, std::move(reading.error));
    return;
  }
  if (!reading.content.empty()) {
    chunk_times_s_.push_back(now_s);
    answer_.append(reading.content);
  }
  if (!usage_ && reading.usage) {
    usage_ =
        net::ReadUsage(data, responses_ ? net::UsageFormat::kResponses : net::UsageFormat::kChat);
  }
}

void ResponseReader::WholeBody(double now_s) {
  const std::string type = content_type_.empty() ? "none" : content_type_;
  if (truncated_) {
    Fail(status_ == 200 ? error_kind::kBadResponse : HttpErrorKind(status_),
         absl::StrCat("response body larger than ", kMaxBody, " bytes"));
    return;
  }
  simdjson::dom::element root;
  const bool json = parser.parse(buffer_.data(), buffer_.size()).get(root) == simdjson::SUCCESS &&
                    root.is_object();
  if (status_ != 200) {
    std::string message = json ? ErrorMessageOf(root) : "";
    Fail(HttpErrorKind(status_),
         absl::StrCat("HTTP ", status_, ": ", message.empty() ? Quote(buffer_) : message));
    return;
  }
  if (!json) {
    Fail(error_kind::kBadResponse, absl::StrCat("not an OpenAI response (content-type ", type,
                                                "): not a JSON object: ", Quote(buffer_)));
    return;
  }
  std::string_view status;
  if (responses_ && root["status"].get_string().get(status) == simdjson::SUCCESS &&
      status == "failed") {
    const std::string message = ErrorMessageOf(root);
    Fail(error_kind::kBadResponse,
         absl::StrCat("the response failed: ", message.empty() ? Quote(buffer_) : message));
    return;
  }
  simdjson::dom::array output;
  const bool answer = responses_ ? root["output"].get_array().get(output) == simdjson::SUCCESS
                                 : !root["choices"].error();
  if (!answer) {
    std::string message = ErrorMessageOf(root);
    Fail(error_kind::kBadResponse,
         absl::StrCat(responses_ ? "not an OpenAI Responses answer: no \"output\" list"
                                 : "not an OpenAI response: no \"choices\"",
                      message.empty() ? "" : absl::StrCat(" (error: ", message, ")")));
    return;
  }
  if (responses_) {
    answer_ = OutputTextOf(output);
  } else {
    answer_.assign(ContentOf(root));
  }
  chunk_times_s_.push_back(now_s);
  usage_ =
      net::ReadUsage(buffer_, responses_ ? net::UsageFormat::kResponses : net::UsageFormat::kChat);
}

void ResponseReader::Finish(double now_s) {
  if (!sse_) {
    WholeBody(now_s);
    buffer_.clear();
    return;
  }
  if (!absl::StripAsciiWhitespace(buffer_).empty()) {
    const std::string rest = std::move(buffer_);
    Event(rest, now_s);
  }
  buffer_.clear();
  if (error_kind_.empty() && events_ == 0) {
    Fail(error_kind::kBadResponse, "empty event stream: no data events");
  }
}

}  // namespace warmroute::loadgen
