// The `normalize:` section of the gateway's configuration: opt-in rewrites of prompt-bearing
// request bodies that make requests share a prefix which their clients break (the rules, what
// each changes in what the model sees, and the endpoints they apply to: gateway/proxy/normalize.h,
// docs/gateway.md). Every rule is off unless an entry turns it on.
//
//   normalize:               list of entries; a request gets every rule of every entry that
//                            matches it (the union)
//     - tenant:              the tenant's requests (a name in `tenants`; needs tenancy)
//       model:               requests for this model (the body's `model`, exactly)
//                            (neither: every request; both: that tenant's requests for that model)
//       collapse_whitespace: true | false (default false)
//       canonical_tools:     true | false (default false)
//       move_to_end:         a regular expression (Oniguruma's Ruby syntax, as tokenizer.json
//                            regexes: core/tokenize/regex.h), or a list of them, searched for
//                            in each line of the system prompt
//
// Errors name the key: "normalize[1].tenant: no tenant named 'acme' in tenants",
// "normalize[0].move_to_end: not a valid regular expression: ...", "normalize[2]: enables no rule
// (set collapse_whitespace, canonical_tools or move_to_end)".
//
// Thread-safety: immutable values and pure functions.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "common/json_writer.h"
#include "core/tokenize/regex.h"
#include "gateway/config/config_reader.h"
#include "gateway/config/tenancy_config.h"

namespace warmroute::gateway {

struct MoveToEndPattern {
  std::string text;                         // as configured
  std::shared_ptr<const tokenize::Regex> regex;  // compiled once, shared by every request
};

struct NormalizeEntry {
  std::string tenant;  // "": any tenant
  std::string model;   // "": any model
  bool collapse_whitespace = false;
  bool canonical_tools = false;
  std::vector<MoveToEndPattern> move_to_end;
};

struct NormalizeConfig {
  std::vector<NormalizeEntry> entries;  // empty: no request is rewritten
  bool enabled() const { return !entries.empty(); }
};

// The section `normalize` of the root map (absent: no entries).
absl::Status ParseNormalize(MapReader& root, NormalizeConfig* out);

// Every entry's tenant must be one of `tenancy`'s.
absl::Status ValidateNormalizeTenants(const NormalizeConfig& config, const TenancyConfig& tenancy);

// Writes "normalize": [...] with the YAML's keys; nothing without entries.
void WriteNormalizeConfig(const NormalizeConfig& config, JsonWriter& w);

}  // namespace warmroute::gateway
