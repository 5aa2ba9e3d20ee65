// Reads one OpenAI response as it arrives, for the load generator: the time of every content
// chunk (for TTFT and inter-token latency), the answer text (multi-turn workloads send it back
// in the next turn), the `usage` (prompt, completion and cached tokens) and, when the response
// is not a usable OpenAI answer, an error kind and reason. The reader is told the API the
// request was sent to (chat and completions answer alike; the Responses API its own way).
//
// Accepted, chat and completions:
//   - HTTP 200 text/event-stream: SSE events "data: {chat.completion.chunk}" ... "data: [DONE]".
//     A content chunk is an event whose choices[0].delta.content (chat) or choices[0].text
//     (completions) is a non-empty string; the usage chunk is the event with a "usage" object
//     (net/usage_tap.h ReadUsage). An event {"error": {...}} mid-stream is a broken_stream error.
//   - HTTP 200 with any other content type: one JSON body (choices[0].message.content or
//     choices[0].text, and usage); its only "chunk" is the whole body, at its end.
// Accepted, Responses (POST /v1/responses):
//   - HTTP 200 text/event-stream: named events ("event: <type>" then "data: {...}"; an event
//     without an event line is named by its data's "type"). A content chunk is a
//     response.output_text.delta event whose "delta" is a non-empty string; the usage is
//     response.completed's (or response.incomplete's) response.usage (ReadUsage with
//     UsageFormat::kResponses). An `error` event or a response.failed event is a broken_stream
//     error carrying its message. Other events (response.created, ...) and a "[DONE]" are
//     passed over.
//   - HTTP 200 with any other content type: one response object; the answer is the text of
//     every output[].content[] part, in order, its only "chunk" the whole body, at its end; the
//     usage its `usage`. A response with "status": "failed" is a bad_response carrying
//     error.message.
// Either API, any other status: an error "http_<status>" whose reason is the body's
// error.message when it is OpenAI-style JSON, else the start of the body.
// Errors of kind bad_response: SSE data or a body that is not JSON (e.g. an HTML page; the
// reason names the content type and quotes the start), JSON without "choices" (Responses:
// without an "output" list), an SSE stream with no data event.
//
// Usage:
//   ResponseReader reader(head.status, head.content_type, request::Endpoint::kResponses);
//   reader.Feed(piece, seconds_since_send);   // for every piece of the body
//   reader.Finish(seconds_since_send);
//   reader.chunk_times_s(); reader.answer(); reader.usage(); reader.error_kind();
//
// Thread-safety: none; one response.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/request/inference_request.h"
#include "net/usage_tap.h"

namespace warmroute::loadgen {

class ResponseReader {
 public:
  // `api`: the endpoint the request was sent to; kMessages is not supported.
  ResponseReader(int status, std::string_view content_type,
                 request::Endpoint api = request::Endpoint::kChatCompletions);

  // The next piece of the body, arrived `now_s` seconds after the request was sent.
  void Feed(std::string_view piece, double now_s);
  // The end of the body.
  void Finish(double now_s);

  // When each content chunk arrived (seconds since send), in order.
  const std::vector<double>& chunk_times_s() const { return chunk_times_s_; }
  const std::string& answer() const { return answer_; }
  const std::optional<net::Usage>& usage() const { return usage_; }
  // "" while the response is fine.
  const std::string& error_kind() const { return error_kind_; }
  const std::string& error() const { return error_; }

 private:
  void Event(std::string_view event, double now_s);
  // One event's data (its data lines joined) and name ("" without an event line).
  void Data(std::string_view name, std::string_view data, double now_s);
  void WholeBody(double now_s);
  void Fail(std::string_view kind, std::string reason);

  const int status_;
  const bool responses_;  // the Responses API, else chat or completions
  const std::string content_type_;
  const bool sse_;
  std::string buffer_;  // SSE: an incomplete event; otherwise the whole body (bounded)
  bool truncated_ = false;
  int64_t events_ = 0;
  std::vector<double> chunk_times_s_;
  std::string answer_;
  std::optional<net::Usage> usage_;
  std::string error_kind_;
  std::string error_;
};

}  // namespace warmroute::loadgen
