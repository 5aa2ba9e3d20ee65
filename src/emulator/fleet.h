// `warmroute engine` as a library: N emulated replicas (EngineApi + HttpServer each, over one
// Replica per data-parallel rank) served from one process, replica i on port + i (or each on an
// ephemeral port), spread over `threads` io_contexts (replica i and all its ranks on io_context
// i % threads, one thread each, so a replica, its ranks and its connections share one thread and
// need no locks).
//
// Data parallelism (`--data-parallel-size D`, vLLM's flag): each replica runs D engine cores
// behind its one API (data_parallel_ranks.h). Rank r of replica i is engine i * D + r: its
// metrics' engine label, and the offset of its KV-event and replay ports from the configured
// ones, so that replica i's ranks publish on consecutive ports from port + i * D, as
// `vllm serve --data-parallel-size D` offsets rank r's endpoints by r. D = 1 is the emulator
// without ranks: replica i is engine i.
//
// Usage:
//   FleetOptions options;
//   options.profile = "tiny";
//   options.port = 0;
//   absl::StatusOr<std::unique_ptr<Fleet>> fleet = Fleet::Create(options);
//   for (const auto& r : (*fleet)->replicas()) printf("%s:%d\n", r.host.c_str(), r.port);
//   (*fleet)->Run(/*handle_signals=*/true);   // until SIGINT/SIGTERM or Stop()
//
// Thread-safety: Create, replicas and Run from one thread; Stop from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/wall_clock.h"
#include "emulator/kv_event_publisher.h"
#include "net/tls/tls.h"

namespace warmroute::emulator {

struct FleetOptions {
  std::string profile = "llama-3.1-8b-h100";  // core/engine/timing_model.h profile name
  std::string model;                          // served model name; empty: the profile's
  int replicas = 1;
  int data_parallel_size = 1;  // engine cores (ranks) per replica, vLLM's --data-parallel-size
  std::string host = "127.0.0.1";
  int port = 8000;  // replica i listens on port + i; 0: every replica on an ephemeral port
  // Engine limits; 0 means the profile's / vLLM's default.
  int64_t kv_capacity_tokens = 0;
  int64_t max_num_batched_tokens = 0;
  int64_t max_num_seqs = 0;
  int64_t max_model_len = 0;
  double time_scale = 1.0;  // wall seconds per emulated second (< 1: faster than real time)
  uint64_t seed = 0;
  int threads = 1;
  bool jitter = true;  // the profile's step-time jitter
  bool kv_events = false;
  // Engine e (rank r of replica i: e = i * data_parallel_size + r) binds the port + e (a "*"
  // port: an ephemeral port each); so does the replay endpoint (empty: no replay), whose ports
  // must not meet the publishers'.
  std::string kv_events_endpoint = "tcp://*:5557";
  std::string kv_events_replay_endpoint;
  std::string kv_events_topic;
  size_t kv_events_buffer_steps = 10'000;  // messages kept for replay, per replica
  int kv_events_hwm = 100'000;             // PUB send high-water mark
  int kv_events_drop_every = 0;            // test-only: KvEventPublisherOptions::drop_every
  KvEventEncoding kv_events_encoding = KvEventEncoding::kArray;
  size_t body_limit_bytes = size_t{32} << 20;
  // The Responses API's stored responses, per replica: at most this many, and this many bytes
  // (the oldest evicted first).
  int64_t responses_store_max = 10000;
  int64_t responses_store_bytes = int64_t{64} << 20;
  int embedding_dims = 256;  // the length of /v1/embeddings vectors
  // A Hugging Face model directory (tokenizer.json, tokenizer_config.json): every replica
  // renders and tokenizes with that model's chat template and tokenizer (hf_model_text.h).
  // Empty: the built-in template and tokenizer (builtin_model_text.h).
  std::string tokenizer_dir;
  // The chat template's strftime_now reads it (nullptr: strftime_now is an error); it must
  // outlive the fleet.
  const WallClock* clock = nullptr;
  // tls.cert_file set: every replica serves HTTPS (--tls-cert, --tls-key), and with
  // tls.client_ca_file requires client certificates (--tls-client-ca).
  net::TlsServerOptions tls;
};

// The KV-event endpoints of one engine core (a data-parallel rank), as bound.
struct RankKvEndpoints {
  std::string kv_events_endpoint;         // empty without KV events
  std::string kv_events_replay_endpoint;  // empty without replay
};

struct ReplicaEndpoint {
  int index = 0;
  std::string host;
  uint16_t port = 0;
  std::string kv_events_endpoint;         // rank 0's; empty without KV events
  std::string kv_events_replay_endpoint;  // rank 0's; empty without replay
  std::vector<RankKvEndpoints> ranks;     // every rank's, rank 0 first
};

// The names of the built-in timing profiles, comma-separated (for messages).
std::string ProfileNames();

class Fleet {
 public:
  // Validates `options` (InvalidArgument naming the flag; NotFound for an unknown profile),
  // loads the tokenizer directory (NotFound, InvalidArgument or FailedPrecondition naming
  // "tokenizer", the file and the problem), builds the replicas and binds their ports
  // (Unavailable when a port is taken).
  static absl::StatusOr<std::unique_ptr<Fleet>> Create(const FleetOptions& options);
  ~Fleet();
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  const std::vector<ReplicaEndpoint>& replicas() const;

  // Serves until Stop() (or SIGINT/SIGTERM when handle_signals), then returns once every
  // connection and request has ended. Call once.
  void Run(bool handle_signals);

  // Stops accepting, closes connections, aborts requests. Idempotent; any thread.
  void Stop();

 private:
  class Impl;
  explicit Fleet(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace warmroute::emulator
