// `warmroute demo`: the routing policies side by side on a live emulated fleet — real processes,
// real HTTP, engine-reported cache hits — in about 2.5 minutes on a 2-core machine.
//
//   warmroute demo [--out demo-out] [--requests 1000] [--time-scale 0.5]
//                  [--policies round_robin,least_request,consistent_hash,warmroute]
//                  [--seed 1] [--load 0.7] [--api chat|completions|responses]
//
// For each policy in turn, on the identical request stream (same workload, seed and rate):
//   1. a fresh fleet: `warmroute engine` (this binary, /proc/self/exe) with 8 replicas of
//      llama-3.1-70b-tp4-h100, kKvCapacityTokens each (cold caches, fresh counters);
//   2. a gateway: `warmroute serve --policy P --backend <each replica>`;
//   3. the load, in process (loadgen::RunLoad): support-bot with kSystemPrompts prompts, Poisson
//      at --load of the fleet's capacity, the engines' /metrics scraped for the hit rate; sent
//      as chat requests, or with --api as that API's (loadgen/request_body.h: with responses,
//      the system prompt is the `instructions` and the question the one `input` item);
//   4. the results into OUT/P/ (results.json, report.md, plots), then gateway and fleet stopped.
// Then one table on stdout (hit rate, TTFT p50/p99, E2E p50, load imbalance per policy), and
// OUT/report.md, OUT/compare.txt (`bench compare` of the runs) and OUT/ttft_cdf_compare.png.
//
// The regime (why the policies differ): 100 system prompts x 3,000 tokens = 300k tokens of
// distinct prefixes. One replica caches 60k tokens (20 prompts), the fleet 480k: the prefixes fit
// the fleet only if each prompt keeps to one replica. Zipf 0.6 spreads popularity widely, so a
// policy that scatters prompts evicts them before they come back.
//
// Arrival rate: --load (0.7) times the fleet's capacity on this workload, calibrated in process
// as `warmroute sim --load` does (sim/capacity.h: one engine model saturated with the workload's
// requests, prefix caching off) — 70% of what the fleet serves with no cache hits at all.
//
// Time: the engines run with --time-scale (0.5: emulated GPU time runs 2x faster than wall
// time) and the arrival rate is scaled to match, so the emulated fleet sees the same load; the
// table shows wall-clock times as the client measured them (emulated time = wall / time-scale).
//
// Exit codes: 0 done; 1 a part failed (a process did not start or died, a run had more than
// kMaxFailedFraction failed requests or no engine metrics, results not writable); 2 bad flags;
// 130 / 143 stopped by SIGINT / SIGTERM. Every child is stopped on every path
// (cli/child_process.h).
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/child_process.h"
#include "cli/commands.h"
#include "cli/workload_flags.h"
#include "common/gnuplot.h"
#include "core/routing/policy_registry.h"
#include "core/workload/workload.h"
#include "loadgen/bench_result.h"
#include "loadgen/http_url.h"
#include "loadgen/load_driver.h"
#include "loadgen/plots.h"
#include "loadgen/report.h"
#include "loadgen/request_body.h"
#include "loadgen/results_json.h"
#include "loadgen/run_outputs.h"
#include "sim/capacity.h"
#include "sim/replica_spec.h"

namespace warmroute::cli {
namespace {

constexpr char kProfile[] = "llama-3.1-70b-tp4-h100";
constexpr int kReplicas = 8;
constexpr int64_t kKvCapacityTokens = 60'000;
constexpr int kSystemPrompts = 100;
constexpr int kSystemPromptTokens = 3'000;
constexpr double kZipfExponent = 0.6;
// A run with more failed requests than this fails the demo: the comparison would be unfair.
constexpr double kMaxFailedFraction = 0.02;
constexpr auto kStartTimeout = std::chrono::seconds(30);

struct DemoFlags {
  std::string out = "demo-out";
  // 1000 requests per policy: ~20 s of load each at the default rate and time scale, 4 x that
  // plus start-up within 3 minutes on 2 cores; enough for the caches to warm (100 prompts).
  int64_t requests = 1000;
  double time_scale = 0.5;
  std::string policies = "round_robin,least_request,consistent_hash,warmroute";
  uint64_t seed = 1;
  double load = 0.7;
  std::string api;         // --api
  bool api_given = false;  // else the workload's own API (chat)
};

int Fail(int code, absl::string_view message) {
  std::cerr << "warmroute demo: " << message << "\n";
  return code;
}

int ExitCodeForSignal(int signal) { return 128 + signal; }

void Progress(const std::string& line) {
  std::cerr << "warmroute demo: " << line << "\n";
  std::cerr.flush();
}

workload::WorkloadOptions DemoWorkload(int64_t requests) {
  workload::WorkloadOptions wo;
  wo.name = "support-bot";
  wo.num_requests = requests;
  wo.params = {{"system_prompts", kSystemPrompts},
               {"system_prompt_tokens", kSystemPromptTokens},
               {"zipf_exponent", kZipfExponent}};
  return wo;
}

// The fleet's capacity on the workload in emulated requests/s, as `warmroute sim` calibrates it.
absl::StatusOr<double> FleetCapacity(const workload::WorkloadOptions& wo, uint64_t seed) {
  sim::SimOptions options;
  options.seed = seed;
  options.workload = wo;
  options.workload.rate_per_s = 1;  // calibration ignores arrival times
  absl::StatusOr<std::vector<sim::ReplicaSpec>> fleet =
      sim::UniformFleet(kProfile, kReplicas, kKvCapacityTokens);
  if (!fleet.ok()) return fleet.status();
  options.replicas = *std::move(fleet);
  absl::StatusOr<sim::CapacityEstimate> capacity = sim::CalibrateCapacity(options);
  if (!capacity.ok()) return capacity.status();
  return capacity->fleet_requests_per_s;
}

// Reads the child's stdout until `count` lines match `pattern`; returns group 1 of each
// ("HOST:PORT"). Failure names `what`.
absl::StatusOr<std::vector<std::string>> AwaitListening(ChildProcess& child,
                                                        const std::string& what,
                                                        const std::regex& pattern, int count) {
  const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  std::vector<std::string> endpoints;
  while (static_cast<int>(endpoints.size()) < count) {
    absl::StatusOr<std::string> line = child.ReadLine(deadline);
    if (!line.ok()) {
      if (line.status().code() == absl::StatusCode::kCancelled) return line.status();
      return absl::Status(line.status().code(),
                          absl::StrCat(what, " did not start: ", line.status().message()));
    }
    std::smatch m;
    if (std::regex_search(*line, m, pattern)) endpoints.push_back(m[1].str());
  }
  return endpoints;
}

struct PolicyRun {
  loadgen::SavedRun saved;  // name = policy
  std::string dir;
};

// Runs one policy on a fresh fleet (steps 1-4 above). The children are stopped before it returns.
absl::StatusOr<PolicyRun> RunPolicy(const DemoFlags& flags, const std::string& policy,
                                    const workload::WorkloadOptions& wo,
                                    const loadgen::BodyOptions& body, double wall_rate) {
  absl::StatusOr<std::unique_ptr<ChildProcess>> engine = ChildProcess::Spawn(
      {"engine", "--replicas", std::to_string(kReplicas), "--port", "0", "--profile", kProfile,
       "--kv-capacity-tokens", std::to_string(kKvCapacityTokens), "--time-scale",
       absl::StrCat(flags.time_scale), "--seed", std::to_string(flags.seed)});
  if (!engine.ok()) return engine.status();
  static const std::regex kReplicaLine(R"(^replica \d+ listening on (\S+)$)");
  absl::StatusOr<std::vector<std::string>> replicas =
      AwaitListening(**engine, "the engine fleet", kReplicaLine, kReplicas);
  if (!replicas.ok()) return replicas.status();

  std::vector<std::string> serve_args = {"serve", "--port",       "0",   "--policy",
                                         policy,  "--access-log", "off", "--log-level",
                                         "warn",  "--threads",    "1"};
  std::vector<std::string> metrics_urls;
  for (const std::string& r : *replicas) {
    serve_args.push_back("--backend");
    serve_args.push_back(absl::StrCat("http://", r));
    metrics_urls.push_back(absl::StrCat("http://", r, "/metrics"));
  }
  absl::StatusOr<std::unique_ptr<ChildProcess>> gateway = ChildProcess::Spawn(serve_args);
  if (!gateway.ok()) return gateway.status();
  static const std::regex kServeLine(R"(^warmroute serve listening on (\S+) )");
  absl::StatusOr<std::vector<std::string>> listen =
      AwaitListening(**gateway, "the gateway", kServeLine, 1);
  if (!listen.ok()) return listen.status();
  const std::string gateway_url = absl::StrCat("http://", listen->front());
  Progress(absl::StrFormat(
      "%s: fleet of %d replicas and gateway (pid %d) up at %s; %d requests "
      "at %.1f req/s wall",
      policy, kReplicas, (*gateway)->pid(), gateway_url, flags.requests, wall_rate));

  loadgen::LoadOptions options;
  for (const std::string& url : std::vector<std::string>{gateway_url}) {
    absl::StatusOr<loadgen::HttpUrl> parsed = loadgen::ParseHttpUrl(url);
    if (!parsed.ok()) return parsed.status();
    options.urls.push_back(*std::move(parsed));
  }
  for (const std::string& url : metrics_urls) {
    absl::StatusOr<loadgen::HttpUrl> parsed = loadgen::ParseHttpUrl(url);
    if (!parsed.ok()) return parsed.status();
    options.engine_metrics.push_back(*std::move(parsed));
  }
  options.expected_requests = flags.requests;
  options.body = body;
  workload::WorkloadOptions run_wo = wo;
  run_wo.rate_per_s = wall_rate;
  absl::StatusOr<std::unique_ptr<workload::Workload>> workload =
      workload::MakeWorkload(run_wo, flags.seed);
  if (!workload.ok()) return workload.status();

  loadgen::BenchRun run;
  run.config = {.name = policy,
                .urls = {gateway_url},
                .workload = DescribeWorkload(wo),
                .requests = flags.requests,
                .rate = wall_rate,
                .concurrency = 0,
                .seed = flags.seed,
                .stream = body.stream,
                .model = "",
                .api = body.api ? std::string(loadgen::ApiName(*body.api)) : ""};
  // RunLoad handles SIGINT/SIGTERM itself (an Asio signal_set, which leaves the default
  // dispositions behind): a signal during the load comes back as Cancelled.
  absl::Status load = loadgen::RunLoad(**workload, options, &run);
  InstallStopHandler();
  if (PendingStopSignal() != 0) load = absl::CancelledError("interrupted");
  if (load.code() == absl::StatusCode::kCancelled) load = absl::CancelledError(run.stop_reason);
  const bool engine_alive = (*engine)->Running();
  const bool gateway_alive = (*gateway)->Running();
  (*gateway)->Stop();
  (*engine)->Stop();
  if (load.code() == absl::StatusCode::kCancelled) return load;

  const loadgen::Summary summary = loadgen::Summarize(run);
  PolicyRun result;
  result.dir = (std::filesystem::path(flags.out) / policy).string();
  absl::StatusOr<loadgen::RunOutputs> written =
      loadgen::WriteRunOutputs(result.dir, run, summary, /*plots=*/true);
  if (!written.ok()) return written.status();
  if (!written->plot_warning.empty()) Progress("warning: no plots: " + written->plot_warning);
  if (!load.ok()) return absl::UnavailableError(absl::StrCat(policy, ": ", load.message()));
  if (!engine_alive)
    return absl::InternalError(policy + ": the engine fleet exited during the run");
  if (!gateway_alive) return absl::InternalError(policy + ": the gateway exited during the run");
  if (summary.failed > kMaxFailedFraction * static_cast<double>(summary.requests)) {
    return absl::InternalError(absl::StrFormat(
        "%s: %d of %d requests failed (more than %.0f%%; see %s)", policy, summary.failed,
        summary.requests, 100 * kMaxFailedFraction, written->report_md));
  }
  if (!summary.engine_hit_rate) {
    return absl::InternalError(policy + ": no engine-reported hit rate (metrics scrapes failed)");
  }
  absl::StatusOr<loadgen::SavedRun> saved = loadgen::ReadResultsFile(written->results_json);
  if (!saved.ok()) return saved.status();
  result.saved = *std::move(saved);
  result.saved.name = policy;
  return result;
}

// One sentence on the regime, from the figures the demo runs with.
std::string Regime(const DemoFlags& flags, double capacity, double rate) {
  return absl::StrFormat(
      "Regime: %d system prompts x %d tokens = %dk tokens of distinct prefixes (Zipf %.1f) "
      "against %dk tokens of KV cache per replica (%dk across the %d replicas): they fit the "
      "fleet only if each prompt stays on one replica; load %.0f%% of the fleet's capacity "
      "(%.1f of %.1f req/s, calibrated with no cache hits).",
      kSystemPrompts, kSystemPromptTokens, kSystemPrompts * kSystemPromptTokens / 1000,
      kZipfExponent, kKvCapacityTokens / 1000, kReplicas * kKvCapacityTokens / 1000, kReplicas,
      100 * flags.load, rate, capacity);
}

std::string TimeNote(double time_scale) {
  return absl::StrFormat(
      "Engines run at --time-scale %g: emulated GPU time runs %gx faster than wall time (arrival "
      "rate scaled to match); times are wall-clock as the client measured them.",
      time_scale, 1 / time_scale);
}

int RunDemo(const DemoFlags& flags) {
  const auto wall_start = std::chrono::steady_clock::now();
  if (flags.requests < 1) return Fail(2, "--requests must be at least 1");
  if (!(flags.time_scale > 0) || flags.time_scale > 100) {
    return Fail(2, "--time-scale must be in (0, 100]");
  }
  if (!(flags.load > 0) || flags.load > 10) return Fail(2, "--load must be in (0, 10]");
  loadgen::BodyOptions body;
  if (flags.api_given) {
    absl::StatusOr<request::Endpoint> api = loadgen::ParseApiFlag("--api", flags.api);
    if (!api.ok()) return Fail(2, api.status().message());
    body.api = *api;
  }
  const std::vector<std::string> policies = absl::StrSplit(flags.policies, ',', absl::SkipEmpty());
  if (policies.empty()) return Fail(2, "--policies names no policy");
  for (const std::string& name : policies) {
    if (absl::StatusOr<std::unique_ptr<routing::Policy>> p = routing::MakePolicy(name, {});
        !p.ok()) {
      return Fail(2, absl::StrCat("--policies: ", p.status().message()));
    }
  }
  InstallStopHandler();

  const workload::WorkloadOptions wo = DemoWorkload(flags.requests);
  if (absl::Status s = workload::ValidateWorkloadOptions(wo); !s.ok()) return Fail(1, s.message());
  absl::StatusOr<double> capacity = FleetCapacity(wo, flags.seed);
  if (!capacity.ok()) return Fail(1, capacity.status().message());
  const double rate = flags.load * *capacity;        // emulated requests/s
  const double wall_rate = rate / flags.time_scale;  // what the client sends
  if (absl::Status s = gnuplot::MakeDir(flags.out); !s.ok()) return Fail(1, s.message());

  // Said only with --api: the default run's lines stay as they are.
  const std::string sent_to =
      body.api ? absl::StrCat(", sent to POST ", std::string(loadgen::RequestTarget(*body.api)))
               : "";
  std::printf(
      "warmroute demo: %d x %s (KV cache %lld tokens each), workload %s%s, %lld requests "
      "per policy, seed %llu\n",
      kReplicas, kProfile, static_cast<long long>(kKvCapacityTokens), DescribeWorkload(wo).c_str(),
      sent_to.c_str(), static_cast<long long>(flags.requests),
      static_cast<unsigned long long>(flags.seed));
  std::printf("%s\n%s\n\n", Regime(flags, *capacity, rate).c_str(),
              TimeNote(flags.time_scale).c_str());
  std::fflush(stdout);

  std::vector<loadgen::SavedRun> runs;
  std::vector<std::string> dirs;
  for (size_t i = 0; i < policies.size(); ++i) {
    if (const int signal = PendingStopSignal(); signal != 0) {
      Progress("interrupted");
      return ExitCodeForSignal(signal);
    }
    Progress(absl::StrFormat("[%d/%d] %s", i + 1, policies.size(), policies[i]));
    absl::StatusOr<PolicyRun> run = RunPolicy(flags, policies[i], wo, body, wall_rate);
    if (!run.ok()) {
      if (run.status().code() == absl::StatusCode::kCancelled) {
        Progress("interrupted: stopped the fleet and the gateway");
        // A signal during the load reached the load driver's handler, not ours.
        const int signal = PendingStopSignal() != 0 ? PendingStopSignal()
                           : absl::StrContains(run.status().message(), "SIGTERM") ? SIGTERM
                                                                                  : SIGINT;
        return ExitCodeForSignal(signal);
      }
      return Fail(1, run.status().message());
    }
    runs.push_back(run->saved);
    dirs.push_back(policies[i]);
  }

  const std::string table = loadgen::PolicyTable(runs, /*markdown=*/false);
  const std::string compare = loadgen::CompareTable(runs);
  const std::filesystem::path root(flags.out);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  std::printf("%s\n", table.c_str());
  std::printf(
      "hit rate = engine-reported cached / queried prompt tokens (vllm:prefix_cache_*); "
      "load imbalance = max / mean requests per replica.\n");

  std::string report = absl::StrCat(
      "# warmroute demo\n\n", kReplicas, " x `", kProfile, "` (KV cache ", kKvCapacityTokens,
      " tokens each), workload `", DescribeWorkload(wo), "`", sent_to, ", ", flags.requests,
      " requests per policy, seed ", flags.seed, ", each policy on a fresh fleet.\n\n",
      Regime(flags, *capacity, rate), "\n\n", TimeNote(flags.time_scale), "\n\n",
      loadgen::PolicyTable(runs, /*markdown=*/true),
      "\nhit rate = engine-reported cached / queried prompt tokens; load imbalance = max / mean "
      "requests per replica.\n\n## All figures\n\n```\n",
      compare, "```\n\n");
  absl::StatusOr<std::string> cdf = loadgen::WriteCompareCdf(flags.out, runs);
  if (cdf.ok()) {
    absl::StrAppend(&report, "![TTFT CDF](", std::filesystem::path(*cdf).filename().string(),
                    ")\n\n");
  } else {
    Progress(absl::StrCat("warning: no compare plot: ", cdf.status().message()));
  }
  report += "Per-policy results (results.json, report.md, plots): ";
  for (const std::string& d : dirs) absl::StrAppend(&report, "[", d, "](", d, "/report.md) ");
  absl::StrAppendFormat(&report, "\n\nWall time: %.0f s.\n", wall_s);
  for (const auto& [file, text] : {std::pair{"report.md", report}, {"compare.txt", compare}}) {
    if (absl::Status s = gnuplot::WriteFile(root / file, text); !s.ok()) {
      return Fail(1, s.message());
    }
  }
  std::printf("report: %s (per policy: %s/<policy>/), wall time %.0f s\n",
              (root / "report.md").c_str(), flags.out.c_str(), wall_s);
  std::fflush(stdout);
  return 0;
}

}  // namespace

void AddDemoCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<DemoFlags>();
  CLI::App* cmd = app.add_subcommand(
      "demo",
      "routing policies side by side on a live emulated fleet (engine + gateway + bench): hit "
      "rate, TTFT, load imbalance");
  cmd->add_option("--out", flags->out, "output directory")->capture_default_str();
  cmd->add_option("--requests", flags->requests, "requests per policy")->capture_default_str();
  cmd->add_option("--time-scale", flags->time_scale,
                  "engines' wall seconds per emulated second (< 1: faster than real time)")
      ->capture_default_str();
  cmd->add_option("--policies", flags->policies, "comma-separated routing policies, in order")
      ->capture_default_str();
  cmd->add_option("--seed", flags->seed, "seed of the workload and the engines")
      ->capture_default_str()
      ->check(SeedNumber());
  cmd->add_option("--load", flags->load, "arrival rate as a fraction of the fleet's capacity")
      ->capture_default_str();
  CLI::Option* api = cmd->add_option(
      "--api", flags->api,
      "chat, completions or responses: the API the load speaks (default: chat, the workload's "
      "own)");
  cmd->callback([flags, exit_code, api] {
    flags->api_given = api->count() > 0;
    *exit_code = RunDemo(*flags);
  });
}

}  // namespace warmroute::cli
