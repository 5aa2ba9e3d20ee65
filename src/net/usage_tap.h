// Reads the engine's `usage` out of a response on its way to the client, for the closed loop: the
// prompt's tokens and how many of them were cached, as each API names them (UsageFormat; vLLM
// reports cached tokens with --enable-prompt-tokens-details; our emulator always does).
//
// Non-streaming: ReadUsage(body) on the whole JSON body.
// Streaming (SSE): an SseUsageTap sees the body piece by piece as it arrives and returns what to
// pass on. It forwards every complete event at once (the engines send whole events per write,
// so nothing is held back in practice) and keeps only an incomplete trailing event until its end
// arrives. The usage event is the chunk whose `usage` is an object (OpenAI and vLLM send it last,
// with "choices": [], when stream_options.include_usage is set). When the gateway itself added
// include_usage upstream (the client did not ask for usage), `drop_usage_event` removes that
// event so the client sees exactly the stream it asked for.
//
// Usage:
//   SseUsageTap tap(/*drop_usage_event=*/true);
//   std::string_view out = tap.Feed(piece);     // valid until the next Feed/Finish
//   writer.WriteChunk(out);
//   ...
//   std::string_view rest = tap.Finish();       // an unterminated last event, passed on as is
//   tap.usage();                                // set once the usage event went by
//
// Thread-safety: none; one response.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace warmroute::net {

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  std::optional<int64_t> cached_tokens;  // cached prompt tokens, when reported
};

// Where an API reports usage, and what it calls the counts.
enum class UsageFormat {
  // OpenAI chat and completions: usage.prompt_tokens, .completion_tokens,
  // .prompt_tokens_details.cached_tokens; streamed in the last chunk (with include_usage).
  kChat,
  // OpenAI Responses: usage.input_tokens, .output_tokens, .input_tokens_details.cached_tokens; a
  // stream carries it in the response.completed event's `response`.
  kResponses,
  // Anthropic Messages: usage.input_tokens (the uncached part), .cache_read_input_tokens,
  // .cache_creation_input_tokens, .output_tokens: the prompt is the sum of the three input
  // counts, the cached part the reads. A stream carries the input counts in message_start's
  // `message`.
  kMessages,
};

// The `usage` object of a JSON response body (or of one SSE event's data), if it has one. The
// engine's counts are not trusted: one that is not an integer in [0, kMaxUsageTokens] is read as
// not reported (a count of 0, cached_tokens absent), so that no sum or difference the router
// makes of them can overflow.
inline constexpr int64_t kMaxUsageTokens = (int64_t{1} << 31) - 1;
std::optional<Usage> ReadUsage(std::string_view json, UsageFormat format = UsageFormat::kChat);

class SseUsageTap {
 public:
  // `drop_usage_event`: with UsageFormat::kChat only.
  explicit SseUsageTap(bool drop_usage_event, UsageFormat format = UsageFormat::kChat)
      : drop_usage_event_(drop_usage_event), format_(format) {}

  // Takes the next piece of the body; returns the bytes to pass on now.
  std::string_view Feed(std::string_view piece);
  // The end of the body: whatever incomplete event is still held, to pass on.
  std::string_view Finish();

  const std::optional<Usage>& usage() const { return usage_; }
  // True once the stream carried output — its first token, for TTFT and the Router: with kChat
  // any byte (chat and completions chunks are tokens); with kResponses and kMessages the first
  // complete event that is not the answer's announcement (response.created, .in_progress,
  // .queued; message_start, ping), which an engine sends before it has computed anything.
  bool output_started() const { return output_started_; }
  // Events passed on so far that carried data (for "did the client see anything").
  int64_t events() const { return events_; }

 private:
  // Handles one complete event (including its blank-line terminator); appends it to out_ unless
  // it is the usage event to drop.
  void Event(std::string_view event);

  const bool drop_usage_event_;
  const UsageFormat format_;
  std::string pending_;  // an incomplete event
  std::string out_;
  std::optional<Usage> usage_;
  int64_t events_ = 0;
  bool output_started_ = false;
};

}  // namespace warmroute::net
