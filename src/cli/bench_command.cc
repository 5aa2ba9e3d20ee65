// `warmroute bench`: a load generator and trace replayer against any OpenAI-compatible endpoint
// (the gateway, one engine, or several engines round-robin), measuring what users of an LLM
// fleet feel (TTFT, inter-token latency, end-to-end latency, throughput) and what prefix-aware
// routing is for (prompt-token hit rate, per-backend load skew).
//
//   warmroute bench --url http://127.0.0.1:8000 --workload support-bot --requests 500 --rate 20
//                   [--seed 1] [--model M] [--workload-param KEY=NUMBER ...]
//                   [--concurrency N] [--trace-speed X] [--trace-jitter-s S]
//                   [--stream | --no-stream]
//                   [--engine-metrics http://ENGINE:PORT/metrics ...] [--out DIR]
//                   [--timeout-s 60] [--name LABEL] [--ignore-eos] [--no-plots] [--api-key KEY]
//                   [--api chat|completions|responses]
//   warmroute bench compare a/results.json b/results.json ... [--out DIR]
//
// Contract:
//   - Requests come from the workload (core/workload: support-bot, shared-prefix, multi-turn,
//     agent, unique, trace:FILE); multi-turn sends each session's next turn with the real answer.
//     Open loop by default: request i is sent at start + its arrival (Poisson at --rate; a
//     trace's timestamps / --trace-speed). --concurrency N: closed loop, N in flight.
//   - Each request goes to its workload's endpoint (chat or completions), or with --api every
//     request to that API's (POST /v1/chat/completions, /v1/completions, /v1/responses), its
//     body carried over as loadgen/request_body.h says (the Responses API: the system message as
//     `instructions`, the other messages as `input` items, the whole history every turn,
//     store false).
//   - Streaming with stream_options.include_usage (so each answer reports prompt, completion and
//     cached tokens; a Responses stream reports them in response.completed); --no-stream asks
//     for whole JSON answers.
//   - --url may be repeated: requests go round-robin over the URLs (e.g. engines without a
//     gateway). --engine-metrics (repeatable) scrapes each engine's /metrics every second.
//   - Writes into --out (default ./bench-out): results.json (every request and the summary,
//     loadgen/results_json.h), report.md, and PNG plots (loadgen/plots.h; skipped with a warning
//     when gnuplot is missing); prints the summary table on stdout and live progress on stderr.
//     The files are written whatever happens, also after SIGINT or an unreachable URL.
//   - compare: one table with a column per results.json (labelled by its --name, else by its
//     file name) on stdout, and ttft_cdf_compare.png in --out (default ./bench-out).
// Exit codes: 0 done (failed requests are data: see "errors" in the summary); 1 the run could
// not complete (a URL refused connections, SIGINT, results not writable); 2 bad flags, a bad
// workload or trace file (the message names file:line), or an unreadable compare input.
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/workload_flags.h"
#include "common/status.h"
#include "core/workload/workload.h"
#include "loadgen/bench_result.h"
#include "loadgen/http_url.h"
#include "loadgen/load_driver.h"
#include "loadgen/plots.h"
#include "loadgen/report.h"
#include "loadgen/request_body.h"
#include "loadgen/results_json.h"
#include "loadgen/run_outputs.h"

namespace warmroute::cli {
namespace {

struct BenchFlags {
  std::vector<std::string> urls;
  std::string workload = "support-bot";
  std::vector<std::string> workload_params;
  int64_t requests = 500;
  double rate = 20;
  uint64_t seed = 1;
  std::string model;
  int tenants = 1;
  int64_t concurrency = 0;
  double trace_speed = 1.0;
  double trace_jitter_s = 0;
  bool stream = true;
  bool ignore_eos = false;
  std::vector<std::string> engine_metrics;
  std::string out = "bench-out";
  double timeout_s = 60;
  std::string api_key;
  std::string name;
  bool no_plots = false;
  std::string api;              // --api, when given
  std::set<std::string> given;  // the flags on the command line, e.g. "--rate"
};

// --timeout-s: a bound on one network wait. Below a millisecond nothing answers; a day is far
// beyond any wait worth measuring, and keeps the milliseconds well inside chrono's range.
constexpr double kMinTimeoutS = 0.001;
constexpr double kMaxTimeoutS = 86'400;

struct CompareFlags {
  std::vector<std::string> files;
  std::string out = "bench-out";
};

// Debian's Abseil has its own string_view: messages come as absl::string_view.
int Fail(int code, absl::string_view message) {
  std::cerr << "warmroute bench: " << message << "\n";
  return code;
}

// Writes results.json, report.md and the plots; prints the summary. False when the results
// could not be written.
bool WriteOutputs(const BenchFlags& flags, const loadgen::BenchRun& run) {
  const loadgen::Summary summary = loadgen::Summarize(run);
  absl::StatusOr<loadgen::RunOutputs> out =
      loadgen::WriteRunOutputs(flags.out, run, summary, /*plots=*/!flags.no_plots);
  if (!out.ok()) {
    Fail(1, out.status().message());
    return false;
  }
  if (!out->plot_warning.empty()) {
    std::cerr << "warmroute bench: warning: no plots: " << out->plot_warning << "\n";
  }
  std::cout << loadgen::SummaryTable(run.config.name, summary);
  std::cout << "results: " << out->results_json << "\nreport:  " << out->report_md << "\n";
  std::cout.flush();
  return true;
}

int RunBench(const BenchFlags& flags) {
  if (flags.urls.empty()) return Fail(2, "--url is required (http://HOST:PORT)");
  loadgen::LoadOptions options;
  for (const std::string& url : flags.urls) {
    absl::StatusOr<loadgen::HttpUrl> parsed = loadgen::ParseHttpUrl(url);
    if (!parsed.ok()) return Fail(2, absl::StrCat("--url: ", parsed.status().message()));
    options.urls.push_back(*std::move(parsed));
  }
  for (const std::string& url : flags.engine_metrics) {
    absl::StatusOr<loadgen::HttpUrl> parsed = loadgen::ParseHttpUrl(url);
    if (!parsed.ok()) return Fail(2, absl::StrCat("--engine-metrics: ", parsed.status().message()));
    options.engine_metrics.push_back(*std::move(parsed));
  }
  const bool trace = flags.workload.rfind("trace:", 0) == 0;
  if (trace && flags.given.contains("--rate")) {
    return Fail(2,
                "--rate does not apply to a trace workload, which arrives at its own timestamps "
                "(scale them with --trace-speed)");
  }
  for (const char* flag : {"--trace-speed", "--trace-jitter-s"}) {
    if (!trace && flags.given.contains(flag)) {
      return Fail(2, absl::StrCat(flag, " applies only to a trace:FILE workload"));
    }
  }
  if (flags.requests < 0) return Fail(2, "--requests must not be negative");
  if (absl::Status s = CheckRateFlag("--rate", flags.rate, flags.requests); !s.ok()) {
    return Fail(2, s.message());
  }
  if (flags.concurrency < 0) return Fail(2, "--concurrency must not be negative");
  if (!(flags.timeout_s >= kMinTimeoutS && flags.timeout_s <= kMaxTimeoutS)) {
    return Fail(2, absl::StrCat("--timeout-s must be in [", kMinTimeoutS, ", ", kMaxTimeoutS,
                                "] seconds, got ", flags.timeout_s));
  }
  if (flags.given.contains("--api")) {
    absl::StatusOr<request::Endpoint> api = loadgen::ParseApiFlag("--api", flags.api);
    if (!api.ok()) return Fail(2, api.status().message());
    options.body.api = *api;
  }
  if (absl::Status s = CheckOutputDir("--out", flags.out); !s.ok()) return Fail(2, s.message());
  options.api_key = flags.api_key;
  if (const char* env = std::getenv("WARMROUTE_API_KEY"); options.api_key.empty() && env) {
    options.api_key = env;
  }

  workload::WorkloadOptions wo;
  wo.name = flags.workload;
  wo.model = flags.model;
  wo.num_requests = flags.requests;
  wo.num_tenants = flags.tenants;
  wo.trace_speed = flags.trace_speed;
  wo.jitter_s = flags.trace_jitter_s;
  absl::StatusOr<workload::WorkloadParams> params = ParseWorkloadParams(flags.workload_params);
  if (!params.ok()) return Fail(2, params.status().message());
  wo.params = *std::move(params);
  if (absl::Status s = workload::ValidateWorkloadOptions(wo); !s.ok()) {
    return Fail(2, WorkloadFlagError(s));
  }
  // The rate is in requests; the workload's arrivals are sessions (multi-turn, agent).
  wo.rate_per_s = flags.rate / workload::RequestsPerArrival(wo);
  absl::StatusOr<std::unique_ptr<workload::Workload>> workload =
      workload::MakeWorkload(wo, flags.seed);
  if (!workload.ok()) return Fail(2, workload.status().message());

  options.concurrency = flags.concurrency;
  options.timeout = std::chrono::milliseconds(std::llround(flags.timeout_s * 1000));
  options.body.stream = flags.stream;
  options.body.ignore_eos = flags.ignore_eos;
  options.expected_requests = flags.requests;

  loadgen::BenchRun run;
  run.config = {.name = flags.name.empty() ? DescribeWorkload(wo) : flags.name,
                .urls = flags.urls,
                .workload = DescribeWorkload(wo),
                .requests = flags.requests,
                .rate = flags.rate,
                .concurrency = flags.concurrency,
                .seed = flags.seed,
                .stream = flags.stream,
                .model = flags.model,
                .api = options.body.api ? std::string(loadgen::ApiName(*options.body.api)) : ""};
  const absl::Status status = loadgen::RunLoad(**workload, options, &run);
  const bool written = WriteOutputs(flags, run);
  if (!status.ok()) return Fail(1, status.message());
  return written ? 0 : 1;
}

int RunCompare(const CompareFlags& flags) {
  if (flags.files.empty()) return Fail(2, "compare: give one or more results.json files");
  std::vector<loadgen::SavedRun> runs;
  for (const std::string& file : flags.files) {
    absl::StatusOr<loadgen::SavedRun> run = loadgen::ReadResultsFile(file);
    if (!run.ok()) return Fail(2, absl::StrCat("compare: ", run.status().message()));
    if (run->name.empty()) {
      // "a/results.json" -> "a"; "x.json" -> "x".
      const std::filesystem::path path(file);
      run->name = path.filename() == "results.json" && path.has_parent_path()
                      ? path.parent_path().filename().string()
                      : path.stem().string();
    }
    runs.push_back(*std::move(run));
  }
  std::cout << loadgen::CompareTable(runs);
  absl::StatusOr<std::string> png = loadgen::WriteCompareCdf(flags.out, runs);
  if (png.ok()) {
    std::cout << "plot: " << *png << "\n";
  } else {
    std::cerr << "warmroute bench: warning: no plot: " << png.status().message() << "\n";
  }
  return 0;
}

}  // namespace

void AddBenchCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Load generator and trace replayer against an OpenAI endpoint: TTFT/ITL/E2E, "
      "hit rate, load skew; JSON, Markdown and plots");
  cmd->add_option("--url", flags->urls,
                  "target http://HOST:PORT (repeat for round-robin over several)");
  cmd->add_option("--workload", flags->workload,
                  "support-bot, shared-prefix, llmd-73, multi-turn, agent, unique, or trace:FILE")
      ->capture_default_str();
  cmd->add_option("--workload-param", flags->workload_params,
                  "KEY=NUMBER shape override of the workload (repeatable)");
  cmd->add_option("--requests", flags->requests, "requests to send (a trace: at most; 0 = all)")
      ->capture_default_str()
      ->check(WholeNumber(0, std::numeric_limits<int64_t>::max()));
  cmd->add_option("--rate", flags->rate, "Poisson arrival rate, requests/s (open loop)")
      ->capture_default_str();
  cmd->add_option("--seed", flags->seed, "workload seed")
      ->capture_default_str()
      ->check(SeedNumber());
  cmd->add_option("--model", flags->model, "model name for every request (default: server's)");
  cmd->add_option("--tenants", flags->tenants, "tenants t0..tN-1")
      ->capture_default_str()
      ->check(WholeNumber(1, kMaxTenants));
  cmd->add_option("--concurrency", flags->concurrency,
                  "closed loop: keep N requests in flight (0 = open loop)")
      ->capture_default_str()
      ->check(WholeNumber(0, std::numeric_limits<int64_t>::max()));
  cmd->add_option("--trace-speed", flags->trace_speed, "trace timestamps are divided by this")
      ->capture_default_str();
  cmd->add_option("--trace-jitter-s", flags->trace_jitter_s,
                  "trace: each arrival moves by a uniform draw in [0, this] seconds")
      ->capture_default_str();
  cmd->add_flag("--stream,!--no-stream", flags->stream,
                "stream answers (SSE, default) or ask for whole JSON answers");
  cmd->add_flag("--ignore-eos", flags->ignore_eos,
                "ask the engine to generate exactly max_tokens (vLLM extension)");
  cmd->add_option("--engine-metrics", flags->engine_metrics,
                  "an engine's http://HOST:PORT/metrics to scrape (repeatable)");
  cmd->add_option("--out", flags->out, "output directory")->capture_default_str();
  cmd->add_option("--api-key", flags->api_key,
                  "API key sent as `Authorization: Bearer KEY` (default: $WARMROUTE_API_KEY)");
  cmd->add_option("--timeout-s", flags->timeout_s,
                  "bound on each network wait of a request (head, gap between pieces)")
      ->capture_default_str();
  cmd->add_option("--name", flags->name, "label of this run (reports, bench compare)");
  cmd->add_flag("--no-plots", flags->no_plots, "skip the PNG plots");
  cmd->add_option("--api", flags->api,
                  "chat, completions or responses: send every request to that API (default: "
                  "each request to its workload's endpoint)");

  auto compare_flags = std::make_shared<CompareFlags>();
  CLI::App* compare =
      cmd->add_subcommand("compare", "Side-by-side table and TTFT CDF of results.json files");
  compare->add_option("files", compare_flags->files, "results.json files")->required();
  compare->add_option("--out", compare_flags->out, "directory for ttft_cdf_compare.png")
      ->capture_default_str();
  compare->callback([compare_flags, exit_code] { *exit_code = RunCompare(*compare_flags); });
  cmd->require_subcommand(0, 1);
  cmd->callback([flags, exit_code, compare, cmd] {
    if (compare->parsed()) return;
    for (const CLI::Option* option : cmd->get_options()) {
      if (option->count() > 0) flags->given.insert(option->get_name());
    }
    *exit_code = RunBench(*flags);
  });
}

}  // namespace warmroute::cli
