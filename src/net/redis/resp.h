// RESP2, the Redis wire protocol, without I/O: a parser for one reply at the front of a buffer
// and an encoder for commands (arrays of bulk strings). The Redis client (net/redis/redis_connection.h)
// feeds it what the socket delivered; tests feed it strings.
//
// Usage:
//   std::string out;
//   AppendRespCommand(out, {"EVALSHA", sha, "2", key1, key2});   // bytes to send
//   ...
//   RespValue reply;
//   absl::StatusOr<size_t> used = ParseResp(buffer, reply);
//   if (!used.ok()) ...;          // malformed input: the connection cannot be trusted any more
//   else if (*used == 0) ...;     // only part of a reply so far: read more, call again
//   else buffer.erase(0, *used);  // `reply` holds one whole reply
//
// Limits (untrusted input never crashes the process nor makes it allocate what the peer claims):
// nesting depth kMaxRespDepth, bulk strings up to kMaxRespBulkBytes, arrays up to
// kMaxRespArrayElements, header lines up to kMaxRespLineBytes. Beyond them: InvalidArgument.
//
// Thread-safety: stateless functions; RespValue is a plain value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace warmroute::net {

inline constexpr int kMaxRespDepth = 8;
inline constexpr size_t kMaxRespBulkBytes = size_t{64} << 20;
inline constexpr int64_t kMaxRespArrayElements = 1 << 20;
inline constexpr size_t kMaxRespLineBytes = 64 * 1024;

struct RespValue {
  enum class Kind {
    kSimpleString,  // +OK
    kError,         // -NOSCRIPT No matching script...   (`text` is the message without '-')
    kInteger,       // :42
    kBulkString,    // $3 foo
    kNull,          // $-1 or *-1
    kArray,         // *2 ...
  };
  Kind kind = Kind::kNull;
  int64_t integer = 0;              // kInteger
  std::string text;                 // kSimpleString, kError, kBulkString
  std::vector<RespValue> elements;  // kArray

  bool is_error() const { return kind == Kind::kError; }
  // The first word of an error reply ("NOSCRIPT", "ERR", "WRONGTYPE"), else empty.
  std::string_view error_code() const;
};

// Parses the reply at the start of `input`. Returns the bytes it spans and sets `value`, or 0
// when `input` holds only a prefix of a reply (then `value` is unspecified), or InvalidArgument
// when the input is not RESP2 or exceeds the limits above.
// Cost: a partial reply is parsed again from its start on the next call (replies here are small).
absl::StatusOr<size_t> ParseResp(std::string_view input, RespValue& value);

// Appends `args` as one command (an array of bulk strings) to `out`.
void AppendRespCommand(std::string& out, const std::vector<std::string_view>& args);
void AppendRespCommand(std::string& out, std::initializer_list<std::string_view> args);

// A short human-readable rendering of a reply, for error messages and logs.
std::string DescribeResp(const RespValue& value);

}  // namespace warmroute::net
