// `warmroute engine`: the vLLM-compatible engine emulator (src/emulator/fleet.h).
//
// On start it prints one machine-readable line per replica to stdout, then serves until SIGINT
// or SIGTERM (exit 0):
//   replica 0 listening on 127.0.0.1:8000
//   replica 0 kv-events on tcp://*:5557          (with --kv-events)
//   replica 0 kv-events-replay on tcp://*:5558   (with a replay_endpoint in --kv-events-config)
// and with --data-parallel-size D > 1, for each further rank r of the replica (here with a
// replay_endpoint of tcp://*:5567):
//   replica 0 rank 1 kv-events on tcp://*:5558
//   replica 0 rank 1 kv-events-replay on tcp://*:5568
// (the lines without "rank" are rank 0's; rank r of replica i binds the configured ports
// + i * D + r).
// Invalid flags exit 2 with a message on stderr (TLS files are read and checked at start:
// "--tls-cert: cannot read '/x': No such file or directory"); a port that cannot be bound exits 1.
// With --tls-cert/--tls-key every replica serves HTTPS (TLS >= 1.2), and with --tls-client-ca
// it requires client certificates signed by those CAs. With --tokenizer DIR every replica uses
// that model's chat template and tokenizer; a directory that cannot be used exits 2 naming the
// file and the problem ("--tokenizer: /m: /m/tokenizer.json: cannot read the file").
#include <spdlog/spdlog.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/workload_flags.h"
#include "common/status.h"
#include "common/wall_clock.h"
#include "emulator/fleet.h"
#include "emulator/kv_events_config.h"

namespace warmroute::cli {
namespace {

struct EngineFlags {
  emulator::FleetOptions fleet;
  std::string kv_events_encoding = "map";
  std::string kv_events_config;  // vLLM's --kv-events-config JSON
  bool kv_events_flags = false;  // --kv-events or --kv-events-endpoint given
  double body_limit_mb = 32;
  double responses_store_mb = 64;
  bool no_jitter = false;
  std::string log_level = "warn";
};

int RunEngine(EngineFlags flags) {
  spdlog::set_level(spdlog::level::from_str(flags.log_level));  // checked by CLI11
  if (flags.kv_events_encoding == "array") {
    flags.fleet.kv_events_encoding = emulator::KvEventEncoding::kArray;
  } else if (flags.kv_events_encoding == "map") {
    flags.fleet.kv_events_encoding = emulator::KvEventEncoding::kMap;
  } else if (flags.kv_events_encoding == "sglang") {
    flags.fleet.kv_events_encoding = emulator::KvEventEncoding::kSglang;
  } else {
    std::cerr << "warmroute engine: --kv-events-encoding must be 'array', 'map' or 'sglang', got '"
              << flags.kv_events_encoding << "'\n";
    return 2;
  }
  if (!flags.kv_events_config.empty()) {
    if (flags.kv_events_flags) {
      std::cerr << "warmroute engine: --kv-events-config replaces --kv-events and "
                   "--kv-events-endpoint; give one or the other\n";
      return 2;
    }
    if (absl::Status applied = emulator::ApplyKvEventsConfig(flags.kv_events_config, flags.fleet);
        !applied.ok()) {
      std::cerr << "warmroute engine: " << applied.message() << "\n";
      return 2;
    }
  }
  if (!(flags.body_limit_mb > 0) || flags.body_limit_mb > 1 << 20) {
    std::cerr << "warmroute engine: --body-limit-mb must be in (0, 1048576]\n";
    return 2;
  }
  flags.fleet.body_limit_bytes = static_cast<size_t>(flags.body_limit_mb * 1024 * 1024);
  if (!(flags.responses_store_mb >= 0) || flags.responses_store_mb > 1 << 20) {
    std::cerr << "warmroute engine: --responses-store-mb must be in [0, 1048576]\n";
    return 2;
  }
  flags.fleet.responses_store_bytes = static_cast<int64_t>(flags.responses_store_mb * 1024 * 1024);
  flags.fleet.jitter = !flags.no_jitter;
  static const SystemWallClock wall_clock;  // the chat template's strftime_now
  flags.fleet.clock = &wall_clock;

  absl::StatusOr<std::unique_ptr<emulator::Fleet>> fleet = emulator::Fleet::Create(flags.fleet);
  if (!fleet.ok()) {
    std::cerr << "warmroute engine: " << fleet.status().message() << "\n";
    const absl::StatusCode code = fleet.status().code();
    const bool bad_flag = code == absl::StatusCode::kInvalidArgument ||
                          code == absl::StatusCode::kNotFound ||
                          code == absl::StatusCode::kFailedPrecondition;
    return bad_flag ? 2 : 1;
  }
  for (const emulator::ReplicaEndpoint& r : (*fleet)->replicas()) {
    std::printf("replica %d listening on %s:%u\n", r.index, r.host.c_str(), r.port);
    if (!r.kv_events_endpoint.empty()) {
      std::printf("replica %d kv-events on %s\n", r.index, r.kv_events_endpoint.c_str());
    }
    if (!r.kv_events_replay_endpoint.empty()) {
      std::printf("replica %d kv-events-replay on %s\n", r.index,
                  r.kv_events_replay_endpoint.c_str());
    }
    for (size_t rank = 1; rank < r.ranks.size(); ++rank) {
      const emulator::RankKvEndpoints& e = r.ranks[rank];
      if (!e.kv_events_endpoint.empty()) {
        std::printf("replica %d rank %zu kv-events on %s\n", r.index, rank,
                    e.kv_events_endpoint.c_str());
      }
      if (!e.kv_events_replay_endpoint.empty()) {
        std::printf("replica %d rank %zu kv-events-replay on %s\n", r.index, rank,
                    e.kv_events_replay_endpoint.c_str());
      }
    }
  }
  std::fflush(stdout);
  (*fleet)->Run(/*handle_signals=*/true);
  return 0;
}

}  // namespace

void AddEngineCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<EngineFlags>();
  CLI::App* cmd =
      app.add_subcommand("engine",
                         "vLLM-compatible engine emulator: OpenAI API, prefix-caching KV cache, "
                         "continuous batching, calibrated GPU timing");
  emulator::FleetOptions& f = flags->fleet;
  cmd->add_option("--profile", f.profile, "timing profile (" + emulator::ProfileNames() + ")")
      ->capture_default_str();
  cmd->add_option("--model", f.model, "served model name (default: the profile's model)");
  cmd->add_option("--replicas", f.replicas, "number of replicas")->capture_default_str();
  cmd->add_option("--data-parallel-size", f.data_parallel_size,
                  "engine cores (data-parallel ranks) per replica behind its one API, as vLLM's "
                  "flag: each with its own KV cache, scheduler, metrics and KV events (rank r on "
                  "the replica's KV-event ports + r); a request goes to its X-data-parallel-rank "
                  "header's rank, else the least loaded")
      ->capture_default_str();
  cmd->add_option("--port", f.port,
                  "port of replica 0; replica i listens on port + i (0: ephemeral ports)")
      ->capture_default_str();
  cmd->add_option("--host", f.host, "listen address")->capture_default_str();
  cmd->add_option("--kv-capacity-tokens", f.kv_capacity_tokens,
                  "KV cache capacity in tokens (default: the profile's)");
  cmd->add_option("--max-num-batched-tokens", f.max_num_batched_tokens,
                  "token budget of one scheduler step (default 8192)");
  cmd->add_option("--max-num-seqs", f.max_num_seqs, "running sequences at most (default 256)");
  cmd->add_option("--max-model-len", f.max_model_len,
                  "prompt + output tokens at most (default: the profile's)");
  cmd->add_option("--time-scale", f.time_scale,
                  "wall seconds per emulated second (< 1 runs faster than real time)")
      ->capture_default_str();
  cmd->add_option("--seed", f.seed, "seed of step jitter and generated text")
      ->capture_default_str()
      ->check(SeedNumber());
  cmd->add_option("--threads", f.threads, "I/O threads (replicas are spread over them)")
      ->capture_default_str();
  CLI::Option* kv_events =
      cmd->add_flag("--kv-events", f.kv_events, "publish vLLM KV events over ZMQ");
  CLI::Option* kv_endpoint =
      cmd->add_option("--kv-events-endpoint", f.kv_events_endpoint,
                      "ZMQ PUB endpoint of replica 0; replica i binds port + i (rank r of "
                      "replica i with --data-parallel-size D: port + i * D + r)")
          ->capture_default_str();
  cmd->add_option(
      "--kv-events-config", flags->kv_events_config,
      "vLLM's KVEventsConfig JSON, e.g. '{\"enable_kv_cache_events\": true, "
      "\"endpoint\": \"tcp://*:5557\", \"replay_endpoint\": \"tcp://*:5558\"}' "
      "(instead of --kv-events and --kv-events-endpoint; replica i binds both ports + i, or "
      "+ i * D + r for rank r with --data-parallel-size D)");
  cmd->add_option("--kv-events-encoding", flags->kv_events_encoding,
                  "KV event encoding: map (vLLM's current form, the default) or array (the older "
                  "tagged-array form, vLLM <= 0.23) or sglang (SGLang's array form)")
      ->capture_default_str();
  cmd->add_option("--kv-events-drop-every", f.kv_events_drop_every,
                  "test-only: do not send every Nth KV-event message (still numbered and kept "
                  "for replay), as a PUB socket past its high-water mark drops it (0: none)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--tls-cert", f.tls.cert_file,
                  "PEM certificate chain: serve HTTPS with it (with --tls-key)");
  cmd->add_option("--tls-key", f.tls.key_file, "PEM private key of --tls-cert");
  cmd->add_option("--tls-client-ca", f.tls.client_ca_file,
                  "PEM CA certificates: require client certificates signed by them (mTLS)");
  cmd->add_flag("--no-jitter", flags->no_jitter, "no step-time jitter");
  cmd->add_option("--body-limit-mb", flags->body_limit_mb, "request body limit in MiB")
      ->capture_default_str();
  cmd->add_option("--responses-store-max", f.responses_store_max,
                  "stored Responses API responses per replica at most (the oldest evicted)")
      ->capture_default_str();
  cmd->add_option("--responses-store-mb", flags->responses_store_mb,
                  "MiB of stored Responses API responses per replica at most")
      ->capture_default_str();
  cmd->add_option("--embedding-dims", f.embedding_dims, "length of /v1/embeddings vectors")
      ->capture_default_str();
  cmd->add_option("--tokenizer", f.tokenizer_dir,
                  "Hugging Face model directory with tokenizer.json and tokenizer_config.json: "
                  "render chats with its chat template and tokenize with its tokenizer, as vLLM "
                  "does (default: the built-in Llama-3-style template and tokenizer)");
  AddLogLevelOption(*cmd, flags->log_level);
  cmd->callback([flags, exit_code, kv_events, kv_endpoint] {
    flags->kv_events_flags = kv_events->count() > 0 || kv_endpoint->count() > 0;
    *exit_code = RunEngine(*flags);
  });
}

}  // namespace warmroute::cli
