// Opt-in normalisation (gateway/proxy/normalize.h) of a client's body with every rule on:
// collapse_whitespace, canonical_tools and move_to_end with a `.*` pattern. Whatever the body,
// the rewrite ends (long lines included: the pattern search is Oniguruma's, bounded), and a body
// the request parser accepts is still accepted after the rewrite, with the same model.
#include <memory>
#include <string>

#include "gateway/proxy/normalize.h"
#include "request_input.h"

namespace {

using warmroute::gateway::NormalizeConfig;

const NormalizeConfig& Config() {
  static const NormalizeConfig config = [] {
    warmroute::gateway::NormalizeEntry entry;
    entry.collapse_whitespace = true;
    entry.canonical_tools = true;
    for (const char* text : {"^Current time: .*$", "(?i)request[ _-]?id"}) {
      entry.move_to_end.push_back(
          {text, std::shared_ptr<const warmroute::tokenize::Regex>(
                     warmroute::tokenize::Regex::Compile(text).value())});
    }
    NormalizeConfig c;
    c.entries.push_back(std::move(entry));
    return c;
  }();
  return config;
}

}  // namespace

WARMROUTE_FUZZ_TARGET(normalize) {
  const warmroute::fuzz::RequestInput input = warmroute::fuzz::ReadRequestInput(data, size);
  const warmroute::gateway::Normalized normalized =
      warmroute::gateway::NormalizeBody(Config(), "", input.endpoint, input.body);
  if (!normalized.body || !input.parsed.ok()) return 0;
  absl::StatusOr<warmroute::request::InferenceRequest> again =
      warmroute::request::ParseInferenceRequest(input.endpoint, *normalized.body);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->model == input.parsed->model);
  return 0;
}
