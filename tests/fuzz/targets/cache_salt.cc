// The tenant's cache_salt on the way upstream (gateway/proxy/forwarding.h), a security boundary:
// whatever body a client sends, if the gateway accepts it (ParseInferenceRequest), every
// top-level member that a JSON parser reads as "cache_salt" in what a vLLM engine is sent is the
// gateway's salt, there is at least one, and the body still parses. Duplicated keys, escaped
// keys ("cache\u005fsalt"), nested objects named cache_salt and the include_usage and request_id
// edits are all in the search. The first byte chooses the endpoint and the edits.
#include <string>

#include "gateway/proxy/forwarding.h"
#include "request_input.h"
#include "simdjson.h"

namespace {

constexpr std::string_view kSalt = "gw-salt-7f3a";
constexpr std::string_view kSaltJson = "\"gw-salt-7f3a\"";

void CheckSalted(std::string_view upstream) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(upstream);
  simdjson::dom::element root;
  FUZZ_CHECK(parser.parse(padded).get(root) == simdjson::SUCCESS);
  simdjson::dom::object object;
  FUZZ_CHECK(root.get_object().get(object) == simdjson::SUCCESS);
  int salts = 0;
  for (simdjson::dom::key_value_pair member : object) {
    if (member.key != "cache_salt") continue;
    ++salts;
    std::string_view value;
    FUZZ_CHECK(member.value.get_string().get(value) == simdjson::SUCCESS);
    FUZZ_CHECK(value == kSalt);
  }
  FUZZ_CHECK(salts >= 1);
}

}  // namespace

WARMROUTE_FUZZ_TARGET(cache_salt) {
  const warmroute::fuzz::RequestInput input = warmroute::fuzz::ReadRequestInput(data, size);
  if (!input.parsed.ok()) return 0;  // refused with a 400: nothing goes upstream
  const std::string& body = input.body;
  std::optional<std::string> with_usage =
      warmroute::gateway::WithIncludeUsage(*input.parsed, body);
  const bool response_ids = (input.choice / 4) % 2 == 1;
  absl::StatusOr<warmroute::gateway::UpstreamBody> upstream =
      warmroute::gateway::UpstreamBody::Make(body, std::move(with_usage), kSaltJson, response_ids);
  FUZZ_CHECK(upstream.ok());  // a parsed request is a JSON object
  CheckSalted(upstream->For(warmroute::gateway::EngineKind::kVllm));
  CheckSalted(upstream->For(warmroute::gateway::EngineKind::kVllm, "resp_0123456789abcdef"));
  return 0;
}
