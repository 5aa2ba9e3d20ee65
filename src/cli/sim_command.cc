// `warmroute sim`: runs routing policies side by side on a simulated fleet (src/sim), on the
// identical request stream, and prints one comparison table plus the pooled-cache and
// infinite-cache bounds of that stream. Optionally writes JSON (--json), Markdown (--markdown) and
// PNG plots (--plots). With --sweep-loads it runs the comparison at each load and reports TTFT p99
// per policy against load instead.
//
//   warmroute sim --workload support-bot --replicas 8 --profile llama-3.1-70b-tp4-h100
//                 --policies all --load 0.7 --requests 2000 --seed 1 --json out.json --plots plots/
//
// Workload shape: --workload-param KEY=VALUE (repeatable) overrides one of the workload's shape
// parameters (WorkloadOptions::params; each generator's .cc lists its keys), e.g.
// --workload support-bot --workload-param system_prompts=300.
// Arrival rate: --rate R (requests/s), or --load F (default 0.7, at most 100): F times the
// fleet's capacity, calibrated on this workload (sim/capacity.h). Trace workloads use their own
// timestamps (/ --trace-speed). A flag that does not apply to the run (--rate or --load with a
// trace, --trace-speed without one, --rate with --load, --profile with --replica-spec, ...) is
// refused rather than ignored, and output paths are checked before anything runs.
// Prefix mode: --prefix-mode approximate (default: text keys, the index learns from routing and
// reported cached tokens) or precise (token keys, the engines' KV events feed the index through
// kv_events::BackendEventFeed; --event-delay-ms, --event-loss, --event-replay, --key-max-tokens
// apply to it only); every output names the mode and each policy's index error.
// Wall-clock time is measured here only, to report simulated requests per second; the simulation
// itself runs on virtual time.
// Invalid flags exit 2 with a message on stderr; a failed run exits 1.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "cli/output_file.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/commands.h"
#include "cli/workload_flags.h"
#include "common/status.h"
#include "core/routing/policy_registry.h"
#include "core/workload/workload.h"
#include "sim/capacity.h"
#include "sim/comparison.h"
#include "sim/hit_rate_dip.h"
#include "sim/membership.h"
#include "sim/prewarm_spec.h"
#include "sim/plots.h"
#include "sim/replica_spec.h"
#include "sim/report.h"

namespace warmroute::cli {
namespace {

struct SimFlags {
  std::string workload = "support-bot";
  std::vector<std::string> workload_params;
  std::string model;
  int64_t requests = 2000;
  uint64_t seed = 1;
  int tenants = 1;
  double rate = 0;
  double load = 0.7;
  double trace_speed = 1.0;
  double trace_jitter_s = 0;
  std::string profile = "llama-3.1-70b-tp4-h100";
  int64_t replicas = 8;
  int64_t kv_capacity_tokens = 0;
  std::vector<std::string> replica_specs;
  std::string policies = "all";
  std::vector<std::string> policy_params;
  double network_delay_ms = 0.5;
  int gateways = 1;
  std::string gateway_assignment = "random";
  std::string gossip = "on";
  double gossip_interval_ms = 10;
  double gossip_loss = 0;
  std::string prefix_mode = "approximate";
  double event_delay_ms = 0;  // given: else the network delay
  double event_loss = 0;
  std::string event_replay = "on";
  double scrape_interval_ms = 200;
  double series_interval_s = 1;
  int64_t calibration_requests = 2048;
  bool no_bounds = false;
  int64_t key_max_chars = 0;   // 0: the whole prompt (PrefixKeyOptions' default)
  int64_t key_max_tokens = 0;  // 0: the whole prompt (PrefixKeyOptions' default)
  std::string membership;
  std::string prewarm;
  bool no_prewarm = false;
  double hit_window_s = 5;
  sim::DipOptions dip;
  std::string sweep_loads;
  std::string json;
  std::string markdown;
  std::string plots;
  std::set<std::string> given;  // the flags on the command line, e.g. "--rate"
};

// The loads --load and --sweep-loads accept: a fraction of the calibrated fleet capacity.
constexpr double kMaxLoad = 100;
// --calibration-requests: requests one calibration engine holds at once (2048 by default).
constexpr int64_t kMaxCalibrationRequests = 1'000'000;

// "placement gossip every 10 ms (warmroute)", or empty when off.
std::string GossipLabel(const sim::SimOptions& options) {
  if (!options.gossip) return "";
  const double loss = options.gossip->loss;
  return absl::StrFormat(
      "placement gossip every %g ms%s (warmroute)", ToSeconds(options.gossip->interval) * 1000,
      loss > 0 ? absl::StrFormat(", %g%% of messages lost", 100 * loss) : std::string());
}

// "gateway" or "4 gateways (random)": who routes, for the header lines.
std::string GatewaysLabel(const sim::SimOptions& options) {
  if (options.gateways == 1) return "gateway";
  return absl::StrCat(options.gateways, " gateways (",
                      std::string(sim::GatewayAssignmentName(options.gateway_assignment)),
                      ", each its own router", options.gossip ? "; " : "",
                      GossipLabel(options), ")");
}

int Fail(int code, std::string_view message) {
  std::cerr << "warmroute sim: " << message << "\n";
  return code;
}

int Fail(int code, const absl::Status& status) { return Fail(code, std::string(status.message())); }

// "name.key=value" overrides, per policy name. Each names a policy of `policies` (the ones that
// run) and a key at most once.
absl::StatusOr<std::map<std::string, routing::PolicyParams>> ParsePolicyParams(
    const std::vector<std::string>& flags, const std::vector<std::string>& policies) {
  std::map<std::string, routing::PolicyParams> out;
  for (const std::string& flag : flags) {
    const size_t dot = flag.find('.');
    const size_t eq = flag.find('=');
    double value = 0;
    if (dot == std::string::npos || eq == std::string::npos || eq < dot ||
        !absl::SimpleAtod(flag.substr(eq + 1), &value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--policy-param \"", flag, "\": expected POLICY.KEY=NUMBER, e.g. warmroute.x=1"));
    }
    const std::string policy = flag.substr(0, dot);
    const std::string key = flag.substr(dot + 1, eq - dot - 1);
    if (std::find(policies.begin(), policies.end(), policy) == policies.end()) {
      return absl::InvalidArgumentError(absl::StrCat("--policy-param \"", flag, "\": no policy \"",
                                                     policy, "\" runs; --policies runs ",
                                                     absl::StrJoin(policies, ", ")));
    }
    if (!out[policy].emplace(key, value).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--policy-param \"", flag, "\": ", policy, ".", key, " given twice"));
    }
  }
  return out;
}

// The flags that do not apply to this run, or contradict each other: a message naming them, or
// "" when they agree.
std::string ConflictingFlags(const SimFlags& flags, bool trace) {
  const auto given = [&flags](const char* flag) { return flags.given.contains(flag); };
  if (given("--replica-spec")) {
    for (const char* flag : {"--profile", "--replicas", "--kv-capacity-tokens"}) {
      if (given(flag)) {
        return absl::StrCat("--replica-spec describes the whole fleet and cannot be combined with ",
                            flag,
                            " (give the profile and kv in the spec: PROFILE[:count=N][:kv=N])");
      }
    }
  }
  if (trace) {
    for (const char* flag : {"--rate", "--load", "--sweep-loads", "--calibration-requests"}) {
      if (given(flag)) {
        return absl::StrCat(flag,
                            " does not apply to a trace workload, which arrives at its own "
                            "timestamps (scale them with --trace-speed)");
      }
    }
  }
  if (flags.prefix_mode != "precise") {
    for (const char* flag : {"--event-delay-ms", "--event-loss", "--event-replay"}) {
      if (given(flag)) {
        return absl::StrCat(flag, " applies only to --prefix-mode precise (the router gets KV "
                                  "events only there)");
      }
    }
  }
  if (trace) return "";
  for (const char* flag : {"--trace-speed", "--trace-jitter-s"}) {
    if (given(flag)) return absl::StrCat(flag, " applies only to a trace:FILE workload");
  }
  if (given("--rate")) {
    for (const char* flag : {"--load", "--sweep-loads", "--calibration-requests"}) {
      if (given(flag)) {
        return absl::StrCat("--rate and ", flag,
                            " cannot be combined: --rate sets the arrival rate itself, ", flag,
                            " applies when it comes from the calibrated capacity (--load)");
      }
    }
  }
  if (given("--sweep-loads") && given("--load")) {
    return "--sweep-loads and --load cannot be combined: the sweep runs at each of its loads";
  }
  return "";
}

// A load of --load or --sweep-loads: a finite fraction of capacity in (0, kMaxLoad].
absl::StatusOr<double> ParseLoad(std::string_view flag, std::string_view text) {
  double load = 0;
  if (!absl::SimpleAtod(std::string(text), &load) || !(load > 0 && load <= kMaxLoad)) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(flag), ": a load is a fraction of the fleet's calibrated capacity in (0, ",
        kMaxLoad, "], e.g. 0.7; got \"", std::string(text), "\""));
  }
  return load;
}

int RunSim(const SimFlags& flags) {
  const auto wall_start = std::chrono::steady_clock::now();
  const bool trace = flags.workload.rfind("trace:", 0) == 0;
  if (const std::string conflict = ConflictingFlags(flags, trace); !conflict.empty()) {
    return Fail(2, conflict);
  }
  sim::SimOptions options;
  options.seed = flags.seed;
  options.workload.name = flags.workload;
  options.workload.model = flags.model;
  options.workload.num_requests = flags.requests;
  options.workload.num_tenants = flags.tenants;
  options.workload.trace_speed = flags.trace_speed;
  options.workload.jitter_s = flags.trace_jitter_s;
  absl::StatusOr<workload::WorkloadParams> workload_params =
      ParseWorkloadParams(flags.workload_params);
  if (!workload_params.ok()) return Fail(2, workload_params.status());
  options.workload.params = *std::move(workload_params);
  if (flags.requests < 1) return Fail(2, "--requests must be at least 1");
  if (absl::Status s = workload::ValidateWorkloadOptions(options.workload); !s.ok()) {
    return Fail(2, WorkloadFlagError(s));
  }
  if (flags.given.contains("--rate")) {
    if (absl::Status s = CheckRateFlag("--rate", flags.rate, flags.requests); !s.ok()) {
      return Fail(2, s);
    }
  }
  const std::string workload_label = DescribeWorkload(options.workload);
  options.network_delay = FromSeconds(flags.network_delay_ms / 1000);
  options.scrape_interval = FromSeconds(flags.scrape_interval_ms / 1000);
  options.series_interval = FromSeconds(flags.series_interval_s);
  if (!(flags.network_delay_ms >= 0)) return Fail(2, "--network-delay-ms must not be negative");
  if (!(flags.scrape_interval_ms > 0)) return Fail(2, "--scrape-interval-ms must be positive");
  if (!(flags.series_interval_s > 0)) return Fail(2, "--series-interval-s must be positive");
  if (flags.gateways < 1 || flags.gateways > sim::kMaxSimGateways) {
    return Fail(2, absl::StrCat("--gateways must be in 1..", sim::kMaxSimGateways, ", got ",
                                flags.gateways));
  }
  options.gateways = flags.gateways;
  if (flags.gateway_assignment == "affinity") {
    options.gateway_assignment = sim::SimOptions::GatewayAssignment::kAffinity;
  } else if (flags.gateway_assignment != "random") {
    return Fail(2, absl::StrCat("--gateway-assignment must be random or affinity, got \"",
                                flags.gateway_assignment, "\""));
  }
  if (flags.gossip != "on" && flags.gossip != "off") {
    return Fail(2, absl::StrCat("--gossip must be on or off, got \"", flags.gossip, "\""));
  }
  if (!(flags.gossip_interval_ms > 0)) return Fail(2, "--gossip-interval-ms must be positive");
  if (!(flags.gossip_loss >= 0 && flags.gossip_loss <= 1)) {
    return Fail(2, "--gossip-loss must be in [0, 1]");
  }
  if (flags.gossip == "on" && options.gateways > 1) {
    options.gossip = sim::SimOptions::Gossip{
        .interval = FromSeconds(flags.gossip_interval_ms / 1000), .loss = flags.gossip_loss};
  }
  if (flags.prefix_mode == "precise") {
    options.prefix_mode = sim::SimOptions::PrefixMode::kPrecise;
  } else if (flags.prefix_mode != "approximate") {
    return Fail(2, absl::StrCat("--prefix-mode must be approximate or precise, got \"",
                                flags.prefix_mode, "\""));
  }
  if (flags.given.contains("--event-delay-ms")) {
    if (!(flags.event_delay_ms >= 0)) return Fail(2, "--event-delay-ms must not be negative");
    options.event_delay = FromSeconds(flags.event_delay_ms / 1000);
  }
  if (!(flags.event_loss >= 0 && flags.event_loss <= 1)) {
    return Fail(2, "--event-loss is a probability per message, in [0, 1]");
  }
  options.event_loss = flags.event_loss;
  if (flags.event_replay != "on" && flags.event_replay != "off") {
    return Fail(2, absl::StrCat("--event-replay must be on or off, got \"", flags.event_replay,
                                "\""));
  }
  options.event_replay = flags.event_replay == "on";
  options.hit_window = FromSeconds(flags.hit_window_s);
  if (!(flags.hit_window_s > 0)) return Fail(2, "--hit-window-s must be positive");
  if (!(flags.dip.baseline_s > 0)) return Fail(2, "--dip-baseline-s must be positive");
  if (!(flags.dip.tolerance_pp >= 0))
    return Fail(2, "--recovery-tolerance-pp must not be negative");
  if (flags.dip.hold_windows < 1) return Fail(2, "--recovery-windows must be at least 1");
  if (flags.calibration_requests < 1) return Fail(2, "--calibration-requests must be at least 1");

  // Arrival rate: --rate, the trace's timestamps, or --load / --sweep-loads times the calibrated
  // fleet capacity.
  std::vector<double> loads;
  if (flags.given.contains("--sweep-loads")) {
    const std::vector<std::string> items =
        absl::StrSplit(flags.sweep_loads, ',', absl::SkipEmpty());
    if (items.empty()) {
      return Fail(2, "--sweep-loads names no load; give comma-separated loads, e.g. 0.3,0.5,0.7");
    }
    for (const std::string& item : items) {
      absl::StatusOr<double> load = ParseLoad("--sweep-loads", item);
      if (!load.ok()) return Fail(2, load.status());
      loads.push_back(*load);
    }
  } else if (!trace && !flags.given.contains("--rate")) {
    absl::StatusOr<double> load = ParseLoad("--load", absl::StrCat(flags.load));
    if (!load.ok()) return Fail(2, load.status());
  }

  // Outputs are checked before the run, which may take long.
  if (flags.given.contains("--json")) {
    if (absl::Status s = CheckOutputFile("--json", flags.json); !s.ok()) return Fail(2, s);
  }
  if (flags.given.contains("--markdown")) {
    if (absl::Status s = CheckOutputFile("--markdown", flags.markdown); !s.ok()) return Fail(2, s);
  }
  if (flags.given.contains("--plots")) {
    if (absl::Status s = CheckOutputDir("--plots", flags.plots); !s.ok()) return Fail(2, s);
  }

  absl::StatusOr<std::vector<sim::ReplicaSpec>> fleet =
      flags.replica_specs.empty()
          ? sim::UniformFleet(flags.profile, flags.replicas, flags.kv_capacity_tokens)
          : sim::ParseReplicaSpecs(flags.replica_specs);
  if (!fleet.ok()) return Fail(2, fleet.status());
  options.replicas = *std::move(fleet);
  if (!flags.membership.empty()) {
    absl::StatusOr<sim::MembershipChange> change =
        sim::ParseMembershipChange(flags.membership, options.replicas.size(), flags.seed);
    if (!change.ok()) return Fail(2, change.status());
    options.membership = *change;
    if (!loads.empty()) return Fail(2, "--membership cannot be combined with --sweep-loads");
  }
  if (flags.no_prewarm && flags.given.contains("--prewarm")) {
    return Fail(2, "--prewarm and --no-prewarm exclude each other");
  }
  // On by default for warmroute (RunComparison drops it for the other policies); it acts only
  // on a membership change.
  if (!flags.no_prewarm && options.membership) {
    absl::StatusOr<routing::PrewarmOptions> prewarm = sim::ParsePrewarmSpec(flags.prewarm);
    if (!prewarm.ok()) return Fail(2, prewarm.status());
    options.prewarm = *prewarm;
  }
  if (flags.key_max_chars != 0 && (flags.key_max_chars < options.prefix_key.block_chars ||
                                   flags.key_max_chars > (1 << 24))) {
    return Fail(2, absl::StrCat("--key-max-chars must be 0 (the whole prompt) or in [",
                                options.prefix_key.block_chars, ", 16777216], got ",
                                flags.key_max_chars));
  }
  options.prefix_key.max_chars = flags.key_max_chars;
  if (flags.key_max_tokens != 0) {
    if (flags.prefix_mode != "precise") {
      return Fail(2, "--key-max-tokens applies only to --prefix-mode precise (token keys); "
                     "text keys are bounded by --key-max-chars");
    }
    if (flags.key_max_tokens < 16 || flags.key_max_tokens > (1 << 22)) {
      return Fail(2, absl::StrCat("--key-max-tokens must be in [16, 4194304], got ",
                                  flags.key_max_tokens));
    }
    options.prefix_key.max_tokens = flags.key_max_tokens;
  }

  std::vector<std::string> policies;
  if (flags.policies == "all") {
    policies = routing::PolicyNames();
  } else {
    policies = absl::StrSplit(flags.policies, ',', absl::SkipEmpty());
  }
  if (policies.empty()) return Fail(2, "--policies names no policy");
  absl::StatusOr<std::map<std::string, routing::PolicyParams>> params =
      ParsePolicyParams(flags.policy_params, policies);
  if (!params.ok()) return Fail(2, params.status());
  for (const std::string& name : policies) {  // unknown names and parameters are flag errors
    auto policy = routing::MakePolicy(name, (*params)[name]);
    if (!policy.ok()) {
      const bool bad_param = policy.status().code() == absl::StatusCode::kInvalidArgument;
      return Fail(2, absl::StrCat(bad_param ? "--policy-param: " : "--policies: ",
                                  policy.status().message()));
    }
  }

  // A trace is read and checked once up front: a missing or malformed file is bad input (exit 2,
  // as in bench), found before the header is printed.
  if (trace) {
    if (auto w = workload::MakeWorkload(options.workload, flags.seed); !w.ok()) {
      return Fail(2, WorkloadFlagError(w.status()));
    }
  }

  std::string arrivals;
  double capacity_req_s = 0;
  double per_arrival = 1;
  if (trace) {
    arrivals = absl::StrFormat("trace timestamps / %g", flags.trace_speed);
    if (flags.trace_jitter_s > 0) {
      absl::StrAppendFormat(&arrivals, ", each moved by U(0, %g) s", flags.trace_jitter_s);
    }
  } else if (flags.given.contains("--rate")) {
    // --rate is in requests; the workload's arrivals are sessions (multi-turn, agent), as in bench.
    per_arrival = workload::RequestsPerArrival(options.workload);
    options.workload.rate_per_s = flags.rate / per_arrival;
    arrivals = absl::StrFormat("Poisson %.3g req/s (--rate)", flags.rate);
    if (per_arrival != 1) {
      absl::StrAppendFormat(&arrivals, "; a session of %g requests per Poisson arrival",
                            per_arrival);
    }
  } else {
    options.workload.rate_per_s = 1;  // calibration ignores arrival times
    absl::StatusOr<sim::CapacityEstimate> capacity =
        sim::CalibrateCapacity(options, /*sample_requests=*/256, flags.calibration_requests);
    if (!capacity.ok()) {
      const bool bad_input = capacity.status().code() == absl::StatusCode::kInvalidArgument;
      return Fail(bad_input ? 2 : 1, capacity.status());
    }
    capacity_req_s = capacity->fleet_requests_per_s;
    per_arrival = workload::RequestsPerArrival(options.workload);
    for (double load : loads.empty() ? std::vector<double>{flags.load} : loads) {
      const double rate = load * capacity_req_s;
      const std::string what =
          absl::StrFormat("%s %g (%.3g requests/s at the calibrated capacity)",
                          loads.empty() ? "--load" : "--sweep-loads", load, rate);
      if (absl::Status s = CheckArrivalSpan(what, rate, flags.requests); !s.ok()) {
        return Fail(2, s);
      }
    }
    const double request_rate = flags.load * capacity_req_s;
    options.workload.rate_per_s = request_rate / per_arrival;
    arrivals = absl::StrFormat(
        "Poisson %.3g req/s = %.0f%% of fleet capacity %.3g req/s (calibrated: one replica "
        "given %d requests (%d distinct) of this workload at once, mean %.0f prompt + %.0f output "
        "tokens, prefix caching off: requests / time to drain)",
        request_rate, 100 * flags.load, capacity_req_s, capacity->saturation_requests,
        capacity->sample_requests, capacity->mean_prompt_tokens, capacity->mean_output_tokens);
    if (!loads.empty()) {
      arrivals =
          absl::StrFormat("Poisson, swept %s of fleet capacity %.3g req/s%s", flags.sweep_loads,
                          capacity_req_s, arrivals.substr(arrivals.find(" (calibrated")));
    }
    if (per_arrival != 1) {
      absl::StrAppendFormat(&arrivals, "; a session of %g requests per Poisson arrival",
                            per_arrival);
    }
  }

  // A change no earlier than the last arrival routes nothing after it; the simulation checks this
  // exactly (an InvalidArgument, exit 2), this catches the plain case before any run.
  if (options.membership && !trace) {
    const double span_s =
        static_cast<double>(flags.requests) /
        (options.workload.rate_per_s * workload::RequestsPerArrival(options.workload));
    if (ToSeconds(options.membership->at) >= span_s) {
      return Fail(2, absl::StrFormat("--membership %s: %g s is beyond the run: %lld requests "
                                     "arrive over about %.0f s at this rate",
                                     flags.membership, ToSeconds(options.membership->at),
                                     static_cast<long long>(flags.requests), span_s));
    }
  }

  std::printf("warmroute sim: workload %s, %s, %lld requests, seed %llu\n", workload_label.c_str(),
              sim::DescribeFleet(options.replicas).c_str(), static_cast<long long>(flags.requests),
              static_cast<unsigned long long>(flags.seed));
  std::printf("arrivals: %s\n", arrivals.c_str());
  const std::string gateways = GatewaysLabel(options);
  std::printf("%s: network delay %g ms each way, metrics scraped every %g ms\n", gateways.c_str(),
              flags.network_delay_ms, flags.scrape_interval_ms);
  std::string kv_events;
  if (options.prefix_mode == sim::SimOptions::PrefixMode::kPrecise) {
    kv_events = absl::StrFormat(
        "KV events delivered %g ms after each engine step, %g%% of messages lost, replay %s",
        ToSeconds(options.event_delay.value_or(options.network_delay)) * 1000,
        100 * options.event_loss, options.event_replay ? "on (10,000 steps buffered)" : "off");
  }
  std::printf("prefix mode: %s%s\n", std::string(sim::PrefixModeName(options.prefix_mode)).c_str(),
              kv_events.empty()
                  ? " (text keys; the index learns from routing and reported cached tokens)"
                  : absl::StrCat(" (token keys; ", kv_events, ")").c_str());
  if (options.membership) {
    std::printf("membership: %s (%s)\n", sim::DescribeMembershipChange(*options.membership).c_str(),
                options.membership->kind == sim::MembershipChange::Kind::kAdd
                    ? "the fleet starts without it"
                    : "in-flight requests finish on it, nothing new is sent");
    if (options.prewarm) {
      std::printf("prewarm (warmroute only): %zu hottest prefixes kept, at most %g prompt "
                  "tokens/s, %d in flight, target queue at most %lld prefill tokens\n",
                  options.prewarm->max_prefixes, options.prewarm->max_tokens_per_s,
                  options.prewarm->max_in_flight,
                  static_cast<long long>(options.prewarm->max_target_queue_tokens));
    } else {
      std::printf("prewarm: off\n");
    }
  }
  std::printf("\n");
  std::fflush(stdout);

  int64_t simulated = 0;
  auto t0 = std::chrono::steady_clock::now();
  const sim::RunCallback progress = [&simulated, &t0](const sim::RunResult& run) {
    const auto t1 = std::chrono::steady_clock::now();
    std::fprintf(stderr, "  %-20s %lld requests simulated in %.1f s\n", run.name.c_str(),
                 static_cast<long long>(run.arrived),
                 std::chrono::duration<double>(t1 - t0).count());
    simulated += run.arrived;
    t0 = t1;
  };
  const auto wall_since_start = [&wall_start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  };
  sim::ReportHeader header{.workload = workload_label,
                           .fleet = sim::DescribeFleet(options.replicas),
                           .requests = flags.requests,
                           .seed = flags.seed,
                           .arrivals = arrivals,
                           .network_delay_ms = flags.network_delay_ms,
                           .gateways = options.gateways,
                           .gateway_assignment =
                               std::string(sim::GatewayAssignmentName(options.gateway_assignment)),
                           .gossip = GossipLabel(options),
                           .scrape_interval_ms = flags.scrape_interval_ms,
                           .prefix_mode = std::string(sim::PrefixModeName(options.prefix_mode)),
                           .kv_events = kv_events,
                           .dip = flags.dip};
  const char* legend =
      "hit = engine-reported cached / prompt tokens; ttft/e2e measured at the gateway; pf-imb and "
      "busy-imb = max/mean over replicas of prefill tokens computed and busy time.\n";

  if (!loads.empty()) {
    std::vector<sim::SweepPoint> sweep;
    for (double load : loads) {
      const double request_rate = load * capacity_req_s;
      options.workload.rate_per_s = request_rate / per_arrival;
      std::fprintf(stderr, "load %.0f%%: %.3g req/s\n", 100 * load, request_rate);
      absl::StatusOr<sim::Comparison> c =
          sim::RunComparison(options, policies, *params, !flags.no_bounds, progress);
      if (!c.ok()) return Fail(1, c.status());
      sim::SweepPoint point;
      point.load = load;
      point.rate_per_s = request_rate;
      point.policies = policies;
      for (const sim::RunResult& run : c->runs) point.figures.push_back(sim::ComputeFigures(run));
      if (c->pooled) point.pooled_hit_rate = sim::ComputeFigures(*c->pooled).hit_rate;
      sweep.push_back(std::move(point));
    }
    header.wall_s = wall_since_start();
    header.simulated_requests = simulated;
    std::printf("%s", sim::FormatSweep(sweep, /*markdown=*/false).c_str());
    std::printf("\nsimulated %lld requests (all runs) in %.1f s wall: %.0f simulated requests/s\n",
                static_cast<long long>(simulated), header.wall_s,
                static_cast<double>(simulated) / header.wall_s);
    if (!flags.json.empty()) {
      if (absl::Status s = sim::WriteSweepJson(flags.json, header, sweep); !s.ok()) {
        return Fail(1, s);
      }
    }
    if (!flags.markdown.empty()) {
      const std::string md =
          absl::StrCat("Arrivals: ", arrivals, ".\n\n", sim::FormatSweep(sweep, /*markdown=*/true));
      if (absl::Status s = WriteTextFile(flags.markdown, md); !s.ok()) return Fail(1, s);
    }
    if (!flags.plots.empty()) {
      if (absl::Status s = sim::WriteSweepPlot(flags.plots, sweep); !s.ok()) return Fail(1, s);
    }
    return 0;
  }

  absl::StatusOr<sim::Comparison> c =
      sim::RunComparison(options, policies, *params, !flags.no_bounds, progress);
  if (!c.ok()) {  // invalid input found by the runs (e.g. a --membership time past a trace's end)
    return Fail(c.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1, c.status());
  }
  const sim::RunResult* pooled = c->pooled ? &*c->pooled : nullptr;
  header.wall_s = wall_since_start();
  header.simulated_requests = simulated;

  std::printf("%s", sim::FormatTable(c->runs, pooled).c_str());
  std::printf("\nsimulated %lld requests (all runs) in %.1f s wall: %.0f simulated requests/s\n",
              static_cast<long long>(simulated), header.wall_s,
              static_cast<double>(simulated) / header.wall_s);
  std::printf("%s", legend);
  std::printf("\n%s", sim::FormatIndexTable(c->runs, /*markdown=*/false).c_str());
  const std::string dip_table = sim::FormatDipTable(c->runs, flags.dip, /*markdown=*/false);
  if (!dip_table.empty()) std::printf("\n%s", dip_table.c_str());
  std::fflush(stdout);

  if (!flags.json.empty()) {
    if (absl::Status s = sim::WriteJson(flags.json, header, c->runs, pooled); !s.ok()) {
      return Fail(1, s);
    }
  }
  if (!flags.markdown.empty()) {
    std::string md = absl::StrCat(
        "Workload `", workload_label, "`, ", header.fleet, ", ", flags.requests, " requests, seed ",
        flags.seed, ". Arrivals: ", arrivals, ". ",
        options.gateways == 1 ? "" : absl::StrCat(gateways, ". "), "Prefix mode: ", header.prefix_mode,
        kv_events.empty() ? "" : absl::StrCat(" (", kv_events, ")"), ".\n\n",
        sim::FormatMarkdownTable(c->runs, pooled), "\n",
        sim::FormatIndexTable(c->runs, /*markdown=*/true));
    if (options.membership) {
      absl::StrAppendFormat(
          &md,
          "\nMembership change: %s. Hit rate per %g s window of arrivals; recovery (settled): the "
          "first window from which %d windows in a row are within %g pp of the hit rate before "
          "(after).\n\n%s",
          sim::DescribeMembershipChange(*options.membership), flags.hit_window_s,
          flags.dip.hold_windows, flags.dip.tolerance_pp,
          sim::FormatDipTable(c->runs, flags.dip, /*markdown=*/true));
    }
    if (absl::Status s = WriteTextFile(flags.markdown, md); !s.ok()) return Fail(1, s);
  }
  if (!flags.plots.empty()) {
    if (absl::Status s = sim::WritePlots(flags.plots, c->runs); !s.ok()) return Fail(1, s);
  }
  return 0;
}

}  // namespace

void AddSimCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<SimFlags>();
  CLI::App* cmd = app.add_subcommand(
      "sim",
      "discrete-event simulator: routing policies side by side on a simulated fleet, same stream");
  SimFlags& f = *flags;
  cmd->add_option("--workload", f.workload,
                  "support-bot, shared-prefix, llmd-73, multi-turn, agent, unique, or trace:FILE")
      ->capture_default_str();
  cmd->add_option("--workload-param", f.workload_params,
                  "workload shape override, repeatable: KEY=NUMBER, e.g. system_prompts=256 "
                  "(keys per workload: src/core/workload/<name>.cc)");
  cmd->add_option("--model", f.model, "model name on every request (default: the profile's)");
  cmd->add_option("--requests", f.requests, "requests per run (a trace: at most this many)")
      ->capture_default_str()
      ->check(WholeNumber(1, std::numeric_limits<int64_t>::max()));
  cmd->add_option("--seed", f.seed, "seed of the workload, engines and router")
      ->capture_default_str()
      ->check(SeedNumber());
  cmd->add_option("--tenants", f.tenants, "number of tenants")
      ->capture_default_str()
      ->check(WholeNumber(1, kMaxTenants));
  cmd->add_option("--rate", f.rate, "Poisson arrival rate, requests/s (instead of --load)");
  cmd->add_option("--load", f.load, "arrival rate as a fraction of the fleet's calibrated capacity")
      ->capture_default_str();
  cmd->add_option("--trace-jitter-s", f.trace_jitter_s,
                  "trace: each arrival moves by a uniform draw in [0, this] seconds (spreads "
                  "the requests a coarse trace gives one timestamp)")
      ->capture_default_str();
  cmd->add_option("--trace-speed", f.trace_speed, "trace: timestamps are divided by this")
      ->capture_default_str();
  cmd->add_option("--profile", f.profile, "timing profile of every replica")->capture_default_str();
  cmd->add_option("--replicas", f.replicas, "number of replicas")
      ->capture_default_str()
      ->check(WholeNumber(1, sim::kMaxReplicas));
  cmd->add_option("--kv-capacity-tokens", f.kv_capacity_tokens,
                  "KV capacity per replica in tokens (0: the profile's)")
      ->capture_default_str()
      ->check(WholeNumber(0, std::numeric_limits<int64_t>::max()));
  cmd->add_option("--replica-spec", f.replica_specs,
                  "heterogeneous fleet, repeatable: PROFILE[:count=N][:kv=TOKENS] "
                  "(replaces --profile/--replicas/--kv-capacity-tokens)");
  cmd->add_option("--policies", f.policies, "comma-separated policy names, or all")
      ->capture_default_str();
  cmd->add_option("--policy-param", f.policy_params,
                  "policy parameter override, repeatable: POLICY.KEY=NUMBER");
  cmd->add_option("--network-delay-ms", f.network_delay_ms, "gateway <-> replica delay, one way")
      ->capture_default_str();
  cmd->add_option("--gateways", f.gateways,
                  "gateway replicas in front of the fleet, each its own router (1..64)")
      ->capture_default_str();
  cmd->add_option("--gateway-assignment", f.gateway_assignment,
                  "how requests reach the gateways: random (per request) or affinity (a "
                  "session's turns to one gateway)")
      ->capture_default_str();
  cmd->add_option("--gossip", f.gossip,
                  "with several gateways: on (warmroute's gateways tell each other their "
                  "placements, docs/many-gateways.md) or off; peers' policies never gossip")
      ->capture_default_str();
  cmd->add_option("--gossip-interval-ms", f.gossip_interval_ms,
                  "how often each gateway sends the placements it made since its last message")
      ->capture_default_str();
  cmd->add_option("--gossip-loss", f.gossip_loss,
                  "probability that a gossip message never reaches one peer, in [0, 1]")
      ->capture_default_str();
  cmd->add_option("--prefix-mode", f.prefix_mode,
                  "approximate (text keys; the index learns from routing and reported cached "
                  "tokens) or precise (token keys; the engines' KV events feed the index, "
                  "docs/precise-mode.md)")
      ->capture_default_str();
  cmd->add_option("--event-delay-ms", f.event_delay_ms,
                  "precise: KV events reach the router this long after the engine step "
                  "(default: --network-delay-ms)");
  cmd->add_option("--event-loss", f.event_loss,
                  "precise: probability that a KV-event message is lost (the stream sees a gap)")
      ->capture_default_str();
  cmd->add_option("--event-replay", f.event_replay,
                  "precise: on (the engines' replay endpoints answer a gap from their last 10,000 "
                  "messages) or off (a gap clears and rebuilds the backend's slice)")
      ->capture_default_str();
  cmd->add_option("--scrape-interval-ms", f.scrape_interval_ms, "metrics scrape interval")
      ->capture_default_str();
  cmd->add_option("--series-interval-s", f.series_interval_s,
                  "resolution of the per-replica load series (JSON, plots)")
      ->capture_default_str();
  cmd->add_option("--calibration-requests", f.calibration_requests,
                  "requests given at once to one engine in the --load capacity calibration")
      ->capture_default_str()
      ->check(WholeNumber(1, kMaxCalibrationRequests));
  cmd->add_option("--key-max-chars", f.key_max_chars,
                  "match depth of the routers' prefix key in characters (default 0: the whole "
                  "prompt, as the gateway's prefix_key.max_chars)")
      ->check(WholeNumber(0, std::numeric_limits<int64_t>::max()));
  cmd->add_option("--key-max-tokens", f.key_max_tokens,
                  "precise: match depth of the token keys in tokens (default 0: the whole "
                  "prompt, as the gateway's precise keys)")
      ->check(WholeNumber(0, std::numeric_limits<int64_t>::max()));
  cmd->add_option("--membership", f.membership,
                  "add@SECONDS or remove@SECONDS: a replica (chosen by the seed) joins or leaves "
                  "the fleet that many simulated seconds into each run, through the gateway's "
                  "Router calls; reports the hit-rate dip and recovery");
  cmd->add_option("--prewarm", f.prewarm,
                  "--membership: prewarm and handoff options for warmroute, KEY=VALUE,... "
                  "(max_prefixes, max_tokens_per_s, max_in_flight, max_target_queue_tokens, "
                  "id_blocks, half_life_s, max_wait_s, max_fill_fraction, join_homes; default: "
                  "on with their defaults)");
  cmd->add_flag("--no-prewarm", f.no_prewarm,
                "--membership: no prewarm of a joining replica nor handoff from a leaving one");
  cmd->add_option("--hit-window-s", f.hit_window_s,
                  "window of the hit-rate series (JSON, plots, --membership figures)")
      ->capture_default_str();
  cmd->add_option("--dip-baseline-s", f.dip.baseline_s,
                  "--membership: the hit rate before the change is over this many seconds before "
                  "it (and the one after over the run's last as many)")
      ->capture_default_str();
  cmd->add_option("--recovery-tolerance-pp", f.dip.tolerance_pp,
                  "--membership: recovered = back within this many percentage points of before")
      ->capture_default_str();
  cmd->add_option("--recovery-windows", f.dip.hold_windows,
                  "--membership: ... for this many windows in a row")
      ->capture_default_str()
      ->check(WholeNumber(1, std::numeric_limits<int>::max()));
  cmd->add_flag("--no-bounds", f.no_bounds,
                "skip the pooled-cache and infinite-cache bounds (saves memory at scale)");
  cmd->add_option("--sweep-loads", f.sweep_loads,
                  "load sweep instead of one run: comma-separated loads, e.g. 0.3,0.5,0.7,0.9,1.1; "
                  "prints TTFT p99 per policy and load (plot: ttft_p99_vs_load.png)");
  cmd->add_option("--json", f.json, "write all figures, per-replica totals and series here");
  cmd->add_option("--markdown", f.markdown, "write the table as Markdown here (for docs)");
  cmd->add_option("--plots", f.plots, "write PNG plots (gnuplot) into this directory");
  cmd->callback([flags, exit_code, cmd] {
    for (const CLI::Option* option : cmd->get_options()) {
      if (option->count() > 0) flags->given.insert(option->get_name());
    }
    *exit_code = RunSim(*flags);
  });
}

}  // namespace warmroute::cli
