// Server-Sent Events framing, shared by everything that reads an event stream as it arrives
// (the gateway's usage tap, the load generator's response reader).
//
// An event ends with a blank line: "\n\n" or "\n\r\n" (a CRLF line ending before it is part of
// the last line).
//
// Usage:
//   for (size_t end = SseEventEnd(text, 0); end != npos; end = SseEventEnd(text, done)) {
//     Event(text.substr(done, end - done));
//     done = end;
//   }
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string_view>

namespace warmroute::net {

// The end (one past the blank line) of the first complete event in text[from:], or npos.
size_t SseEventEnd(std::string_view text, size_t from);

}  // namespace warmroute::net
