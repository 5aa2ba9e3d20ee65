// Test helpers for the emulator's response bodies: SSE streams cut into events, JSON parsed.
// For tests only.
#pragma once

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "simdjson.h"

namespace warmroute::emulator::testing {

// The events of an SSE stream (each without its terminating blank line); fails the test on an
// unterminated event.
inline std::vector<std::string> SseEvents(const std::string& stream) {
  std::vector<std::string> events;
  size_t pos = 0;
  while (pos < stream.size()) {
    const size_t end = stream.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos) << "unterminated event";
    if (end == std::string::npos) break;
    events.push_back(stream.substr(pos, end - pos));
    pos = end + 2;
  }
  return events;
}

inline simdjson::dom::element ParseJson(simdjson::dom::parser& parser, const std::string& json) {
  simdjson::dom::element doc;
  EXPECT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  return doc;
}

}  // namespace warmroute::emulator::testing
