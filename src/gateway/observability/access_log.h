// One JSON line per request (the gateway's access log): when it arrived, the route, the backend
// and why it was chosen, predicted vs engine-reported cached tokens, TTFT and E2E measured at the
// gateway, status, retries and the error, if any; the tenant when tenancy is on (never its key).
// Prompt text only when observability.log_prompts is on ("prompt": the rendered prompt, at most
// 4096 characters).
//
//   {"ts":"2026-11-29T21:14:11.123Z","id":42,"method":"POST","path":"/v1/chat/completions",
//    "route":"chat","model":"m","stream":true,"status":200,"backend":"r3","reason":"cache_hit",
//    "prompt_tokens":3050,"predicted_cached_tokens":2992,"cached_tokens":2992,
//    "ttft_ms":41.2,"e2e_ms":380.5,"retries":0,"prefix_key":"precise"}
// A prompt request's line says how its prefix key was made ("prefix_key": precise or
// approximate) and, for an approximate one, why ("prefix_key_reason": gateway/keys/request_key.h).
//
// Destinations: "stderr", "off", or a file path (appended to). Lines are written whole under a
// lock; a file's are flushed by a Write a second or more after the last flush, by Flush (which
// the gateway calls every second, so that an idle gateway's last lines reach the file too), and
// on destruction. stderr is flushed at each line.
//
// Thread-safety: Write is thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace warmroute::gateway {

struct AccessRecord {
  uint64_t id = 0;
  std::string_view method;
  std::string_view path;
  std::string_view route;  // gateway/proxy/routes.h's name; empty: not logged
  std::string_view model;
  bool stream = false;
  int status = 0;
  std::string_view backend;
  std::string_view reason;
  std::optional<int64_t> prompt_tokens;
  int64_t predicted_cached_tokens = 0;
  std::optional<int64_t> cached_tokens;
  std::optional<double> ttft_ms;
  double e2e_ms = 0;
  int retries = 0;
  std::string_view error;
  std::string_view tenant;  // empty: not logged
  std::string_view prompt;  // empty: not logged
  std::string_view key_mode;    // empty: not logged
  std::string_view key_reason;  // logged with an approximate key_mode
};

class AccessLog {
 public:
  // InvalidArgument when the file cannot be opened (the message names it).
  static absl::StatusOr<std::unique_ptr<AccessLog>> Open(const std::string& destination);
  ~AccessLog();
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  bool enabled() const { return file_ != nullptr; }
  void Write(const AccessRecord& record);
  // Writes `line` (without its newline) as one line, as Write does (the request sample,
  // request_sample.h, is such a file of lines).
  void WriteLine(std::string_view line);
  // Writes out the lines Write has buffered since the last flush, if any.
  void Flush();

  // The line Write would write, without the newline (for tests).
  static std::string Format(const AccessRecord& record, int64_t unix_ms);

 private:
  AccessLog(std::FILE* file, bool owned) : file_(file), owned_(owned) {}
  std::mutex mu_;
  std::FILE* file_;
  bool owned_;
  int64_t last_flush_ms_ = 0;
  bool unflushed_ = false;  // lines written since the last flush
};

}  // namespace warmroute::gateway
