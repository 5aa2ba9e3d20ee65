// Small helpers for writing JSON text without a DOM: string escaping and a streaming writer that
// places commas and colons. Response bodies on hot paths (one SSE chunk per generated token) are
// built by appending into a std::string, so these never allocate beyond the output string.
//
// Usage:
//   std::string out;
//   JsonWriter w(&out);
//   w.BeginObject();
//   w.Key("model").String("llama");
//   w.Key("choices").BeginArray().EndArray();
//   w.Key("usage").Null();
//   w.EndObject();                        // {"model":"llama","choices":[],"usage":null}
//
//   AppendJsonString(&out, "a \"quoted\" word");   // appends "a \"quoted\" word"
//
// Invalid UTF-8 in input strings becomes U+FFFD, so the output is always valid JSON.
// Thread-safety: a JsonWriter is used by one thread; the free functions are pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace warmroute {

// Appends `s` as a quoted JSON string: `"` and `\` escaped, control characters as \n, \t, ... or
// \u00XX, invalid UTF-8 bytes as \ufffd.
void AppendJsonString(std::string* out, std::string_view s);

// `s` as a quoted JSON string.
std::string JsonString(std::string_view s);

// Appends JSON values in order. The caller nests Begin/End calls correctly and writes a Key
// before every value inside an object; the writer only inserts separators.
class JsonWriter {
 public:
  explicit JsonWriter(std::string* out) : out_(out) {}
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Uint(uint64_t value);
  // Finite values as the shortest round-trip text; NaN and infinities as null.
  JsonWriter& Double(double value);
  // Finite values as the shortest text that reads back as the same float; else null.
  JsonWriter& Float(float value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  // Appends `json`, which must be one complete JSON value, as the next value.
  JsonWriter& Raw(std::string_view json);

 private:
  void BeforeValue();
  // `value` as std::to_chars writes it (integers; the shortest round-trip text of a float).
  template <typename T>
  JsonWriter& Number(T value);

  std::string* out_;
  bool need_comma_ = false;  // a value was written at the current nesting level
  bool after_key_ = false;   // the next value follows a key: no comma
};

}  // namespace warmroute
