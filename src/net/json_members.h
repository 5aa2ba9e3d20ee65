// A forward walk over a JSON object's members with simdjson's on-demand parser, for readers of
// untrusted bodies (an engine's usage, a client's prompt). The on-demand parser does not
// validate a document before it is read: after a syntax error its iterator is in a broken state,
// and going on (the next member, a lookup by key, which goes round the object again) crashed on
// garbled input (tests/fuzz: sse_usage). This walk stops at the first error and returns it.
//
// Usage:
//   simdjson::ondemand::object usage = ...;
//   std::optional<int64_t> prompt;
//   simdjson::error_code e = ForEachMember(usage, [&](std::string_view key,
//                                                     simdjson::ondemand::value value) {
//     if (key == "prompt_tokens") prompt = ...;
//     return !prompt.has_value();  // false: stop here
//   });
//
// Thread-safety: as the object's parser (one thread).
#pragma once

#include <string_view>
#include <utility>

#include "simdjson.h"

namespace warmroute::net {

// Calls visit(key, value) for each member of `object`, in order, while visit returns true. Returns
// the walk's own first error (a malformed key or member; the walk stops there), else SUCCESS. A
// visitor keeps its own errors in its captures, and returns false to stop the walk on them.
template <typename Visit>
simdjson::error_code ForEachMember(simdjson::ondemand::object& object, Visit&& visit) {
  for (auto member : object) {
    simdjson::ondemand::field field;
    if (simdjson::error_code e = std::move(member).get(field)) return e;
    std::string_view key;
    if (simdjson::error_code e = field.unescaped_key().get(key)) return e;
    if (!visit(key, field.value())) break;
  }
  return simdjson::SUCCESS;
}

}  // namespace warmroute::net
