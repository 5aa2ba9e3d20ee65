#include "sim/replica_spec.h"

#include <algorithm>
#include <charconv>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status.h"
#include "core/engine/engine_core.h"

namespace warmroute::sim {
namespace {

std::string ProfileList() {
  std::vector<std::string> names;
  for (const engine::TimingProfile& p : engine::TimingProfiles()) names.emplace_back(p.name);
  return absl::StrJoin(names, ", ");
}

absl::StatusOr<const engine::TimingProfile*> FindProfile(std::string_view name,
                                                         std::string_view param) {
  const engine::TimingProfile* profile = engine::FindTimingProfile(name);
  if (profile == nullptr) {
    return InvalidParam(
        param, absl::StrCat("--", std::string(param), ": unknown profile \"", std::string(name),
                            "\"; expected one of ", ProfileList()));
  }
  return profile;
}

bool ParseInt(std::string_view text, int64_t* value) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return ec == std::errc() && ptr == end && !text.empty();
}

}  // namespace

absl::StatusOr<std::vector<ReplicaSpec>> UniformFleet(std::string_view profile_name,
                                                      int64_t replicas,
                                                      int64_t kv_capacity_tokens) {
  WR_ASSIGN_OR_RETURN(const engine::TimingProfile* profile, FindProfile(profile_name, "profile"));
  if (replicas < 1 || replicas > kMaxReplicas) {
    return InvalidParam(
        "replicas", absl::StrCat("--replicas must be in [1, ", kMaxReplicas, "], got ", replicas));
  }
  if (kv_capacity_tokens < 0 || kv_capacity_tokens > engine::kMaxKvCapacityTokens) {
    return InvalidParam(
        "kv-capacity-tokens",
        absl::StrCat("--kv-capacity-tokens must be in [0, ", engine::kMaxKvCapacityTokens,
                     "] (0: the profile's), got ", kv_capacity_tokens));
  }
  const int64_t kv = kv_capacity_tokens > 0 ? kv_capacity_tokens : profile->default_capacity_tokens;
  return std::vector<ReplicaSpec>(static_cast<size_t>(replicas), ReplicaSpec{profile, kv});
}

absl::StatusOr<std::vector<ReplicaSpec>> ParseReplicaSpecs(const std::vector<std::string>& specs) {
  std::vector<ReplicaSpec> fleet;
  for (const std::string& spec : specs) {
    const std::vector<std::string> parts = absl::StrSplit(spec, ':');
    const auto bad = [&spec](std::string_view why) {
      return InvalidParam("replica-spec",
                          absl::StrCat("--replica-spec \"", spec, "\": ", std::string(why),
                                       " (syntax: PROFILE[:count=N][:kv=TOKENS])"));
    };
    WR_ASSIGN_OR_RETURN(const engine::TimingProfile* profile,
                        FindProfile(parts[0], "replica-spec"));
    int64_t count = 1;
    int64_t kv = profile->default_capacity_tokens;
    std::vector<std::string_view> keys;
    for (size_t i = 1; i < parts.size(); ++i) {
      const std::string_view part = parts[i];
      const size_t eq = part.find('=');
      if (eq == std::string_view::npos) return bad("expected key=value");
      const std::string_view key = part.substr(0, eq);
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) {
        return bad(absl::StrCat(std::string(key), " given twice"));
      }
      keys.push_back(key);
      int64_t value = 0;
      if (!ParseInt(part.substr(eq + 1), &value)) return bad("expected an integer value");
      if (key == "count") {
        if (value < 1 || value > kMaxReplicas) return bad("count must be in [1, 100000]");
        count = value;
      } else if (key == "kv") {
        if (value < 1 || value > engine::kMaxKvCapacityTokens) {
          return bad(absl::StrCat("kv must be in [1, ", engine::kMaxKvCapacityTokens, "] tokens"));
        }
        kv = value;
      } else {
        return bad("unknown key (expected count or kv)");
      }
    }
    if (static_cast<int64_t>(fleet.size()) + count > kMaxReplicas) {
      return bad("more than 100000 replicas in all");
    }
    fleet.insert(fleet.end(), static_cast<size_t>(count), ReplicaSpec{profile, kv});
  }
  if (fleet.empty()) return InvalidParam("replica-spec", "the fleet has no replicas");
  return fleet;
}

std::string DescribeFleet(const std::vector<ReplicaSpec>& fleet) {
  std::vector<std::string> groups;
  size_t i = 0;
  while (i < fleet.size()) {
    size_t j = i;
    while (j < fleet.size() && fleet[j] == fleet[i]) ++j;
    groups.push_back(absl::StrCat(j - i, " x ", std::string(fleet[i].profile->name), " (kv ",
                                  fleet[i].kv_capacity_tokens, " tokens)"));
    i = j;
  }
  return absl::StrJoin(groups, " + ");
}

}  // namespace warmroute::sim
