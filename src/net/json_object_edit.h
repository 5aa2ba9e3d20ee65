// Edits the top-level members of a JSON object in place, leaving every other byte as the client
// wrote it (the gateway forwards original bodies; it only adds or overwrites what it must).
//
// Keys are matched after unescaping, as a JSON parser reads them: a client writing
// "cache\u005fsalt" names the member "cache_salt" for the engine, so it does here too. When a key
// appears more than once, every occurrence is rewritten (parsers differ on which one wins).
//
// Usage:
//   absl::StatusOr<std::string> out = SetTopLevelMember(R"({"a":1,"b":2})", "b", "\"x\"");
//   // *out == R"({"a":1,"b":"x"})"
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace warmroute::net {

// `object` with member `key` set to `raw_value` (JSON text, inserted verbatim): each existing
// top-level member `key` gets the new value; without one the member is inserted first.
// InvalidArgument when `object` is not a well-formed JSON object (the caller parsed it already;
// this is a guard, not a validator: it checks structure, not every literal).
absl::StatusOr<std::string> SetTopLevelMember(std::string_view object, std::string_view key,
                                              std::string_view raw_value);

// `object` with member `key` inserted first, unchecked for an existing one.
// REQUIRES: `object` is a JSON object.
absl::StatusOr<std::string> InsertTopLevelMember(std::string_view object, std::string_view key,
                                                 std::string_view raw_value);

}  // namespace warmroute::net
