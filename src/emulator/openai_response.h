// The bodies of vLLM's OpenAI-compatible responses, byte-shaped like vLLM's server output:
// complete chat / text completions, SSE stream chunks, the usage chunk, [DONE], and the model
// list. Pure string building (common/json_writer.h), no I/O.
//
// Streaming a chat completion, as vLLM does:
//   data: {"id":"chatcmpl-…","object":"chat.completion.chunk","created":…,"model":"m",
//          "choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,
//          "finish_reason":null}]}
//   data: {… "choices":[{"index":0,"delta":{"content":" mesa"},"logprobs":null,
//          "finish_reason":null}]}                                  one per token
//   data: {… "delta":{"content":" ok"},"logprobs":null,"finish_reason":"length",
//          "stop_reason":null}]}                                     the last token
//   data: {… "choices":[],"usage":{…}}                               if include_usage
//   data: [DONE]
// Completions stream {"object":"text_completion", "choices":[{"index":0,"text":…,
// "logprobs":null,"finish_reason":…,"stop_reason":null}]} the same way, without a role chunk.
//
// Usage:
//   StreamFormatter f({.chat = true, .id = "chatcmpl-1", .created = 1700000000, .model = "m"});
//   std::string out;
//   f.AppendRole(&out);
//   f.AppendToken(&out, " mesa", /*last=*/false);
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace warmroute::emulator {

struct ResponseInfo {
  bool chat = true;  // chat.completion(.chunk), else text_completion
  std::string id;    // "chatcmpl-…" / "cmpl-…"
  int64_t created = 0;
  std::string model;
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt_tokens_details.cached_tokens
};

// `prefix` followed by 32 lowercase hex digits of (a, b): the ids of OpenAI bodies ("resp_…",
// "msg_…", "embd-…").
std::string HexId(std::string_view prefix, uint64_t a, uint64_t b);

// "chatcmpl-" or "cmpl-" followed by 32 lowercase hex digits of (a, b).
std::string ResponseId(bool chat, uint64_t a, uint64_t b);

// SSE chunks of one streamed response; each Append* appends one complete "data: …\n\n" event.
class StreamFormatter {
 public:
  explicit StreamFormatter(const ResponseInfo& info);

  // Chat only: the first chunk, {"role":"assistant","content":""}.
  void AppendRole(std::string* out) const;
  // One generated token; `last` adds finish_reason "length".
  void AppendToken(std::string* out, std::string_view text, bool last) const;
  // The usage chunk ("choices":[]), sent before [DONE] when stream_options.include_usage.
  void AppendUsage(std::string* out, const Usage& usage) const;
  // "data: [DONE]\n\n".
  static void AppendDone(std::string* out);

 private:
  bool chat_;
  std::string prefix_;  // `data: {"id":…,"object":…,"created":…,"model":…,"choices":`
};

// The non-streamed response: the whole `text`, finish_reason "length", and usage.
std::string CompleteResponse(const ResponseInfo& info, std::string_view text, const Usage& usage);

// GET /v1/models: {"object":"list","data":[{"id":model,"object":"model",…}]}.
std::string ModelList(std::string_view model, int64_t created, int64_t max_model_len);

}  // namespace warmroute::emulator
