#include "loadgen/response_reader.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
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

}  // namespace

ResponseReader::ResponseReader(int status, std::string_view content_type)
    : status_(status),
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
  // The data lines of the event, joined by '\n' (SSE); other fields are ignored.
  std::string joined;
  std::string_view data;
  int lines = 0;
  size_t at = 0;
  while (at < event.size()) {
    size_t end = event.find('\n', at);
    if (end == std::string_view::npos) end = event.size();
    std::string_view line = event.substr(at, end - at);
    at = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.substr(0, 5) != "data:") continue;
    line.remove_prefix(5);
    if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (lines++ == 0) {
      data = line;
    } else {
      if (lines == 2) joined.assign(data);
      joined.append("\n").append(line);
      data = joined;
    }
  }
  if (lines > 0) Data(data, now_s);
}

void ResponseReader::Data(std::string_view data, double now_s) {
  if (!error_kind_.empty()) return;
  ++events_;
  if (data == "[DONE]") return;
  simdjson::dom::element root;
  if (parser.parse(data.data(), data.size()).get(root) != simdjson::SUCCESS || !root.is_object()) {
    Fail(error_kind::kBadResponse, absl::StrCat("SSE data is not a JSON object: ", Quote(data)));
    return;
  }
  if (!root["error"].error() && root["choices"].error()) {
    std::string message = ErrorMessageOf(root);
    Fail(error_kind::kBrokenStream,
         absl::StrCat("error event in the stream: ", message.empty() ? Quote(data) : message));
    return;
  }
  const std::string_view content = ContentOf(root);
  if (!content.empty()) {
    chunk_times_s_.push_back(now_s);
    answer_.append(content);
  }
  simdjson::dom::object usage;
  if (!usage_ && root["usage"].get_object().get(usage) == simdjson::SUCCESS) {
    usage_ = net::ReadUsage(data);
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
  if (root["choices"].error()) {
    std::string message = ErrorMessageOf(root);
    Fail(error_kind::kBadResponse,
         absl::StrCat("not an OpenAI response: no \"choices\"",
                      message.empty() ? "" : absl::StrCat(" (error: ", message, ")")));
    return;
  }
  const std::string_view content = ContentOf(root);
  answer_.assign(content);
  chunk_times_s_.push_back(now_s);
  usage_ = net::ReadUsage(buffer_);
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
