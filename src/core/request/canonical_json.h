// The canonical form of a JSON value: every object's members sorted by name (a stable sort, so
// duplicate names keep their order), arrays in their order, minified. Two serialisations of the
// same value that differ only in member order or whitespace have the same canonical form — what
// `warmroute analyze` compares tool definitions by (analyze/prefix_hygiene.h) and what the
// gateway's canonical_tools rule sends upstream (gateway/proxy/normalize.h).
//
// Usage:
//   CanonicalJson(R"({"b":1,"a":[{"y":1,"x":2}]})");  // {"a":[{"x":2,"y":1}],"b":1}
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace warmroute::request {

// `json` in canonical form; "" when it is not valid JSON.
std::string CanonicalJson(std::string_view json);

}  // namespace warmroute::request
