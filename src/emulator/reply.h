// What the emulator's HTTP handlers share when they answer: response heads and the Unix time
// their bodies carry.
//
// Thread-safety: pure functions (UnixTime reads the system clock).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include "net/http1/response.h"

namespace warmroute::emulator {

inline constexpr char kJsonType[] = "application/json";
inline constexpr char kEventStreamType[] = "text/event-stream; charset=utf-8";

// A 200 head with `content_type`.
inline net::ResponseHead Head(std::string content_type) {
  net::ResponseHead head;
  head.content_type = std::move(content_type);
  return head;
}

// Seconds since the Unix epoch (the `created` of OpenAI bodies).
inline int64_t UnixTime() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace warmroute::emulator
