#include "sim/membership.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/rng.h"
#include "common/status.h"

namespace warmroute::sim {
namespace {

constexpr std::string_view kParam = "membership";
// Distinguishes this choice from the other seeds derived from the run's seed ("membr").
constexpr uint64_t kChoiceSalt = 0x6d656d6272ull;
// One simulated year: far beyond any run, and well inside Duration's range.
constexpr double kMaxSeconds = 365.0 * 24 * 3600;

absl::Status SyntaxError(std::string_view spec, std::string_view why) {
  return InvalidParam(kParam,
                      absl::StrCat("--membership \"", std::string(spec), "\": ", std::string(why),
                                   "; expected add@SECONDS or remove@SECONDS, e.g. "
                                   "remove@60"));
}

}  // namespace

std::string_view MembershipKindName(MembershipChange::Kind kind) {
  return kind == MembershipChange::Kind::kAdd ? "add" : "remove";
}

std::string DescribeMembershipChange(const MembershipChange& change) {
  return absl::StrFormat("%s r%d at %g s", MembershipKindName(change.kind), change.replica,
                         ToSeconds(change.at));
}

uint32_t ChooseMembershipReplica(uint64_t seed, size_t replicas) {
  if (replicas == 0) return 0;
  return static_cast<uint32_t>(Mix64(seed ^ kChoiceSalt) % replicas);
}

absl::StatusOr<MembershipChange> ParseMembershipChange(std::string_view spec, size_t replicas,
                                                       uint64_t seed) {
  const size_t at = spec.find('@');
  if (at == std::string_view::npos) return SyntaxError(spec, "no '@'");
  const std::string_view kind = spec.substr(0, at);
  MembershipChange change;
  if (kind == "add") {
    change.kind = MembershipChange::Kind::kAdd;
  } else if (kind == "remove") {
    change.kind = MembershipChange::Kind::kRemove;
  } else {
    return SyntaxError(spec, absl::StrCat("unknown change \"", std::string(kind), "\""));
  }
  double seconds = 0;
  if (!absl::SimpleAtod(std::string(spec.substr(at + 1)), &seconds) || !std::isfinite(seconds)) {
    return SyntaxError(spec, "the time is not a number of seconds");
  }
  if (!(seconds > 0) || seconds > kMaxSeconds) {
    return InvalidParam(kParam, absl::StrCat("--membership \"", std::string(spec),
                                             "\": the time must be a positive number of seconds "
                                             "after the start of the run, at most a year"));
  }
  if (replicas < 2) {
    return InvalidParam(
        kParam,
        absl::StrCat("--membership \"", std::string(spec),
                     "\" needs a fleet of at least 2 "
                     "replicas, got ",
                     replicas,
                     change.kind == MembershipChange::Kind::kRemove
                         ? ": removing the only replica leaves nothing to route to"
                         : ": the fleet starts one replica short and must not start empty"));
  }
  change.at = FromSeconds(seconds);
  change.replica = ChooseMembershipReplica(seed, replicas);
  return change;
}

}  // namespace warmroute::sim
