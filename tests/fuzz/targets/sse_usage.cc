// The usage tap (net/usage_tap.h) on an engine's response stream, and ReadUsage on a whole body.
// Properties: without dropping, the tap passes on exactly the bytes it was given; with or without
// dropping, what it passes on, the usage it reads and the events it counts do not depend on how
// the stream was split into pieces (the first byte chooses the piece size and the API format);
// usage counts are always in [0, kMaxUsageTokens].
#include <string>

#include "fuzz_target.h"
#include "net/usage_tap.h"

namespace {

using warmroute::net::SseUsageTap;
using warmroute::net::Usage;
using warmroute::net::UsageFormat;

struct Outcome {
  std::string out;
  std::optional<Usage> usage;
  int64_t events = 0;
  bool output_started = false;
  bool operator==(const Outcome& o) const {
    const bool same_usage =
        usage.has_value() == o.usage.has_value() &&
        (!usage || (usage->prompt_tokens == o.usage->prompt_tokens &&
                    usage->completion_tokens == o.usage->completion_tokens &&
                    usage->cached_tokens == o.usage->cached_tokens));
    return out == o.out && same_usage && events == o.events && output_started == o.output_started;
  }
};

void CheckUsage(const std::optional<Usage>& usage) {
  if (!usage) return;
  using warmroute::net::kMaxUsageTokens;
  FUZZ_CHECK(usage->prompt_tokens >= 0 && usage->prompt_tokens <= kMaxUsageTokens);
  FUZZ_CHECK(usage->completion_tokens >= 0 && usage->completion_tokens <= kMaxUsageTokens);
  FUZZ_CHECK(!usage->cached_tokens ||
             (*usage->cached_tokens >= 0 && *usage->cached_tokens <= kMaxUsageTokens));
}

Outcome Tap(std::string_view input, size_t piece, bool drop, UsageFormat format) {
  SseUsageTap tap(drop, format);
  Outcome outcome;
  for (size_t at = 0; at < input.size(); at += piece) outcome.out += tap.Feed(input.substr(at, piece));
  outcome.out += tap.Finish();
  outcome.usage = tap.usage();
  outcome.events = tap.events();
  outcome.output_started = tap.output_started();
  CheckUsage(outcome.usage);
  return outcome;
}

}  // namespace

WARMROUTE_FUZZ_TARGET(sse_usage) {
  const uint8_t choice = warmroute::fuzz::TakeByte(data, size);
  const std::string_view input = warmroute::fuzz::AsText(data, size);
  const UsageFormat format = choice % 3 == 0   ? UsageFormat::kChat
                             : choice % 3 == 1 ? UsageFormat::kResponses
                                               : UsageFormat::kMessages;
  const size_t piece = 1 + choice / 3 % 16;
  CheckUsage(warmroute::net::ReadUsage(input, format));

  const Outcome whole = Tap(input, input.size() + 1, /*drop=*/false, format);
  FUZZ_CHECK(whole.out == input);
  FUZZ_CHECK(Tap(input, piece, /*drop=*/false, format) == whole);
  if (format == UsageFormat::kChat) {
    FUZZ_CHECK(Tap(input, input.size() + 1, /*drop=*/true, format) ==
               Tap(input, piece, /*drop=*/true, format));
  }
  return 0;
}
