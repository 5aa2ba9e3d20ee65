// Opt-in prompt normalisation: rewrites of a prompt-bearing request body, made before the gateway
// keys and forwards it, so that requests whose clients break a shared prefix share it again. The
// prefix key is computed from the rewritten body, so routing sees what the engine will see.
// Configured per tenant and/or model (config/normalize_config.h); every rule is off by default.
//
// The rules, and exactly what each changes in what the model sees:
//   collapse_whitespace  in system and developer messages only (string content and text parts,
//                        each on its own): within a line, every run of spaces and tabs after the
//                        line's indentation becomes one space (indentation is kept, so code and
//                        nested lists keep their shape); trailing spaces, tabs and carriage returns
//                        of every line are removed; three or more line breaks in a row become two
//                        (at most one empty line); trailing whitespace of the text is removed.
//   canonical_tools      the `tools` value (and chat's legacy `functions`) is re-serialised in
//                        canonical form (core/request/canonical_json.h): every object's keys
//                        sorted by name at every depth, array order kept, no whitespace. The model
//                        sees the same definitions with their keys in alphabetical order.
//   move_to_end          each line of the system prompt (system and developer messages) that a
//                        configured pattern matches (an Oniguruma search, tokenize/regex.h, on
//                        the line alone, without its line break) is removed from it, and the removed lines, in order, are
//                        appended to the last user message's last text, each after a line break.
//                        Without a user message with text, nothing moves.
// They run in that order on the same text: move_to_end, then collapse_whitespace; canonical_tools
// on its own members.
//
// Endpoints: chat completions (`messages`, `tools`, `functions`), the Responses API
// (`instructions` and `input` items of role system/developer are the system prompt, a string
// `input` or the last `input` item of role user is the user message; `tools`) and the Messages
// API (`system` string or text blocks, `messages`, `tools`). Legacy completions have one prompt
// string with no system part and are never rewritten.
//
// Everything else in the body keeps its bytes: only the JSON string literals of edited texts and
// the `tools`/`functions` values are replaced (an edited text is written back with
// JsonString's escaping). A body this cannot read (not JSON, a field of an unexpected type) is
// left as it came — never an error here: the request parser answers for bad bodies.
//
// Cost: a request that some entry may apply to (MayNormalize: its tenant's, or any model's
// entry) is read once more — a copy of the body and an on-demand JSON pass — before it is parsed;
// other requests pay nothing.
//
// Usage:
//   Normalized n = NormalizeBody(config, tenant_name, request::Endpoint::kChatCompletions, body);
//   if (n.body) body = std::move(*n.body);
//   for (size_t i = 0; i < kNormalizeRuleCount; ++i) {
//     if (n.applied[i]) Count(NormalizeRuleName(kNormalizeRules[i]));
//   }
//
// Thread-safety: pure functions (each thread keeps its own JSON parser).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/request/inference_request.h"
#include "gateway/config/normalize_config.h"

namespace warmroute::gateway {

enum class NormalizeRule : uint8_t { kCollapseWhitespace, kCanonicalTools, kMoveToEnd };
inline constexpr NormalizeRule kNormalizeRules[] = {
    NormalizeRule::kCollapseWhitespace, NormalizeRule::kCanonicalTools, NormalizeRule::kMoveToEnd};
inline constexpr size_t kNormalizeRuleCount = std::size(kNormalizeRules);

// "collapse_whitespace", "canonical_tools", "move_to_end": the config keys and metric labels.
std::string_view NormalizeRuleName(NormalizeRule rule);

// The rules one request gets.
struct NormalizeRules {
  bool collapse_whitespace = false;
  bool canonical_tools = false;
  std::vector<const tokenize::Regex*> move_to_end;  // owned by the config
  bool any() const { return collapse_whitespace || canonical_tools || !move_to_end.empty(); }
};

// True when some entry of `config` may apply to `tenant`'s requests ("" without tenancy): the
// body needs reading.
bool MayNormalize(const NormalizeConfig& config, std::string_view tenant);

// The union of the entries of `config` that match `tenant` and `model`.
NormalizeRules RulesFor(const NormalizeConfig& config, std::string_view tenant,
                        std::string_view model);

struct Normalized {
  std::optional<std::string> body;                  // the rewritten body; nullopt: unchanged
  std::array<bool, kNormalizeRuleCount> applied{};  // by rule: it changed the body
};

// `body`, a request of `endpoint` from `tenant`, rewritten by the rules RulesFor gives it.
Normalized NormalizeBody(const NormalizeConfig& config, std::string_view tenant,
                         request::Endpoint endpoint, std::string_view body);

// `text` without its lines that one of `patterns` matches; those lines appended to `moved`.
std::string RemoveMatchingLines(std::string_view text,
                                const std::vector<const tokenize::Regex*>& patterns,
                                std::vector<std::string>& moved);

}  // namespace warmroute::gateway
