#include "emulator/fleet.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <charconv>
#include <csignal>
#include <thread>
#include <utility>
#include <zmq.hpp>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "core/engine/engine_core.h"
#include "core/engine/timing_model.h"
#include "emulator/api.h"
#include "emulator/builtin_model_text.h"
#include "emulator/hf_model_text.h"
#include "emulator/replica.h"
#include "net/http1/http_server.h"

namespace warmroute::emulator {
namespace {

namespace asio = boost::asio;

constexpr int kMaxReplicas = 1024;  // also the most engine cores (replicas x ranks)
constexpr int kMaxDataParallelSize = 256;
constexpr int64_t kMaxFleetKvTokens = int64_t{1} << 30;  // KV capacity of all replicas
constexpr int64_t kMaxStoredResponses = 10'000'000;      // per replica
constexpr int64_t kMaxStoreBytes = int64_t{1} << 40;     // per replica (1 TiB: no real bound)
constexpr int kMaxEmbeddingDims = 65536;

absl::Status Validate(const FleetOptions& o) {
  if (o.replicas < 1 || o.replicas > kMaxReplicas) {
    return InvalidParam("replicas", absl::StrCat("--replicas must be in [1, ", kMaxReplicas,
                                                 "], got ", o.replicas));
  }
  if (o.data_parallel_size < 1 || o.data_parallel_size > kMaxDataParallelSize) {
    return InvalidParam("data-parallel-size",
                        absl::StrCat("--data-parallel-size must be in [1, ", kMaxDataParallelSize,
                                     "], got ", o.data_parallel_size));
  }
  if (o.replicas * o.data_parallel_size > kMaxReplicas) {
    return InvalidParam(
        "data-parallel-size",
        absl::StrCat("--replicas ", o.replicas, " x --data-parallel-size ", o.data_parallel_size,
                     " is over ", kMaxReplicas, " engine cores"));
  }
  if (o.port < 0 || o.port > 65535) {
    return InvalidParam("port", absl::StrCat("--port must be in [0, 65535], got ", o.port));
  }
  if (o.port > 0 && o.port + o.replicas - 1 > 65535) {
    return InvalidParam("port", absl::StrCat("--port ", o.port, " with ", o.replicas,
                                             " replicas runs past port 65535"));
  }
  if (!(o.time_scale > 0) || o.time_scale > 1e6) {
    return InvalidParam("time-scale",
                        absl::StrCat("--time-scale must be in (0, 1e6], got ", o.time_scale));
  }
  if (o.threads < 1 || o.threads > 256) {
    return InvalidParam("threads", absl::StrCat("--threads must be in [1, 256], got ", o.threads));
  }
  // 0: the profile's (or vLLM's) default.
  const struct {
    const char* flag;
    int64_t value;
    int64_t max;
  } limits[] = {{"kv-capacity-tokens", o.kv_capacity_tokens, engine::kMaxKvCapacityTokens},
                {"max-num-batched-tokens", o.max_num_batched_tokens, engine::kMaxNumBatchedTokens},
                {"max-num-seqs", o.max_num_seqs, engine::kMaxNumSeqs},
                {"max-model-len", o.max_model_len, engine::kMaxModelLen}};
  for (const auto& limit : limits) {
    if (limit.value < 0 || limit.value > limit.max) {
      return InvalidParam(limit.flag, absl::StrCat("--", limit.flag, " must be in [0, ", limit.max,
                                                   "] (0: the default), got ", limit.value));
    }
  }
  if (o.responses_store_max < 0 || o.responses_store_max > kMaxStoredResponses) {
    return InvalidParam("responses-store-max",
                        absl::StrCat("--responses-store-max must be in [0, ", kMaxStoredResponses,
                                     "], got ", o.responses_store_max));
  }
  if (o.responses_store_bytes < 0 || o.responses_store_bytes > kMaxStoreBytes) {
    return InvalidParam("responses-store-mb",
                        absl::StrCat("--responses-store-mb must be in [0, ", kMaxStoreBytes >> 20,
                                     "], got ", o.responses_store_bytes >> 20));
  }
  if (o.embedding_dims < 1 || o.embedding_dims > kMaxEmbeddingDims) {
    return InvalidParam("embedding-dims",
                        absl::StrCat("--embedding-dims must be in [1, ", kMaxEmbeddingDims,
                                     "], got ", o.embedding_dims));
  }
  if (o.body_limit_bytes == 0) {
    return InvalidParam("body-limit-mb", "--body-limit-mb must be positive");
  }
  if (o.host.empty()) return InvalidParam("host", "--host must not be empty");
  return absl::OkStatus();
}

// The KV-event endpoint of replica `index`: a numeric TCP port is offset by the index, a "*"
// port kept; other transports get a "-<index>" suffix when there are several replicas. `flag`
// names the setting in errors.
absl::StatusOr<std::string> KvEndpointFor(const std::string& base, int index, int replicas,
                                          std::string_view flag = "kv-events-endpoint") {
  const size_t colon = base.rfind(':');
  if (base.rfind("tcp://", 0) == 0 && colon != std::string::npos && colon > 5) {
    const std::string port_text = base.substr(colon + 1);
    if (port_text == "*") return base;
    int port = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 1 ||
        port + index > 65535) {
      return InvalidParam(flag, absl::StrCat("--", std::string(flag),
                                             " must look like tcp://HOST:PORT with "
                                             "room for ",
                                             replicas, " ports, got ", base));
    }
    return absl::StrCat(base.substr(0, colon + 1), port + index);
  }
  if (replicas == 1) return base;
  return absl::StrCat(base, "-", index);
}

// The name of engine `e` in messages: "replica 3", or "replica 1 rank 1" with ranks.
std::string EngineName(int e, int data_parallel_size) {
  if (data_parallel_size == 1) return absl::StrCat("replica ", e);
  return absl::StrCat("replica ", e / data_parallel_size, " rank ", e % data_parallel_size);
}

// Every engine's publisher options (engine e = replica * data_parallel_size + rank);
// InvalidArgument when an endpoint is malformed or two sockets would share one (a replay port
// within the publishers' port range).
absl::StatusOr<std::vector<KvEventPublisherOptions>> KvPublisherOptions(const FleetOptions& o) {
  const int engines = o.replicas * o.data_parallel_size;
  std::vector<KvEventPublisherOptions> all;
  absl::flat_hash_map<std::string, int> owner;  // endpoint -> engine
  for (int e = 0; e < engines; ++e) {
    KvEventPublisherOptions p;
    p.topic = o.kv_events_topic;
    p.encoding = o.kv_events_encoding;
    p.buffer_steps = o.kv_events_buffer_steps;
    p.hwm = o.kv_events_hwm;
    p.drop_every = o.kv_events_drop_every;
    p.data_parallel_rank = e % o.data_parallel_size;
    WR_ASSIGN_OR_RETURN(p.endpoint, KvEndpointFor(o.kv_events_endpoint, e, engines));
    if (!o.kv_events_replay_endpoint.empty()) {
      WR_ASSIGN_OR_RETURN(p.replay_endpoint, KvEndpointFor(o.kv_events_replay_endpoint, e, engines,
                                                           "kv-events-config"));
    }
    for (const std::string* endpoint : {&p.endpoint, &p.replay_endpoint}) {
      if (endpoint->empty() || endpoint->ends_with(":*")) continue;
      auto [it, inserted] = owner.try_emplace(*endpoint, e);
      if (!inserted) {
        const std::string count = o.data_parallel_size == 1
                                      ? absl::StrCat(o.replicas, " replicas")
                                      : absl::StrCat(engines, " engine cores");
        return InvalidParam(
            "kv-events-config",
            absl::StrCat(EngineName(e, o.data_parallel_size), " would bind ", *endpoint, ", which ",
                         EngineName(it->second, o.data_parallel_size), " binds too: with ", count,
                         " each takes a port from the "
                         "endpoint's and one from replay_endpoint's, so they must be ",
                         engines, " or more apart"));
      }
    }
    all.push_back(std::move(p));
  }
  return all;
}

// The TLS context of every replica's server (null without --tls-cert/--tls-key/--tls-client-ca);
// errors name the flag at fault.
absl::StatusOr<std::shared_ptr<net::TlsContext>> TlsContextOf(const net::TlsServerOptions& tls) {
  if (tls.cert_file.empty() && tls.key_file.empty() && tls.client_ca_file.empty()) {
    return std::shared_ptr<net::TlsContext>();
  }
  absl::StatusOr<std::shared_ptr<net::TlsContext>> context = net::MakeTlsServerContext(tls);
  if (context.ok()) return context;
  const std::string option = ParamOf(context.status()).value_or("");
  const std::string flag = option == "cert_file"  ? "tls-cert"
                           : option == "key_file" ? "tls-key"
                                                  : "tls-client-ca";
  return InvalidParam(flag, absl::StrCat("--", flag, ": ", context.status().message()));
}

// The model text of every replica: the built-in one, or the --tokenizer directory's.
absl::StatusOr<std::unique_ptr<ModelText>> LoadModelText(const FleetOptions& o) {
  if (o.tokenizer_dir.empty()) return std::make_unique<BuiltinModelText>();
  absl::StatusOr<std::unique_ptr<HfModelText>> model =
      HfModelText::FromDirectory(o.tokenizer_dir, o.clock);
  if (!model.ok()) {
    return WithParam(absl::Status(model.status().code(),
                                  absl::StrCat("--tokenizer: ", model.status().message())),
                     "tokenizer");
  }
  spdlog::info("tokenizer {}: vocabulary of {} ids, {} generated words ({} bare)", o.tokenizer_dir,
               (*model)->vocab_size(), (*model)->generator().num_words(),
               (*model)->generator().num_bare_words());
  return std::unique_ptr<ModelText>(*std::move(model));
}

}  // namespace

std::string ProfileNames() {
  std::string names;
  for (const engine::TimingProfile& p : engine::TimingProfiles()) {
    if (!names.empty()) names += ", ";
    names += std::string(p.name);
  }
  return names;
}

class Fleet::Impl {
 public:
  absl::Status Build(const FleetOptions& o) {
    WR_RETURN_IF_ERROR(Validate(o));
    WR_ASSIGN_OR_RETURN(const std::shared_ptr<net::TlsContext> tls, TlsContextOf(o.tls));
    const engine::TimingProfile* profile = engine::FindTimingProfile(o.profile);
    if (profile == nullptr) {
      return WithParam(absl::NotFoundError(absl::StrCat("unknown profile '", o.profile,
                                                        "'; profiles: ", ProfileNames())),
                       "profile");
    }
    engine::TimingProfile timing = *profile;
    if (!o.jitter) timing.jitter_stddev_frac = 0;
    engine::EngineConfig config = engine::DefaultEngineConfig(timing, o.kv_capacity_tokens);
    if (o.max_num_batched_tokens > 0) config.max_num_batched_tokens = o.max_num_batched_tokens;
    if (o.max_num_seqs > 0) config.max_num_seqs = o.max_num_seqs;
    if (o.max_model_len > 0) config.max_model_len = o.max_model_len;
    // Each engine's KV tables are allocated up front (one engine of kMaxKvCapacityTokens took
    // 161 MB): a fleet past this total would exhaust memory instead of starting.
    const int engines = o.replicas * o.data_parallel_size;
    const int64_t fleet_tokens = config.num_gpu_blocks * config.block_size * engines;
    if (fleet_tokens > kMaxFleetKvTokens) {
      const std::string count = o.data_parallel_size == 1 ? absl::StrCat("--replicas ", o.replicas)
                                                          : absl::StrCat("--replicas ", o.replicas,
                                                                         " x --data-parallel-size ",
                                                                         o.data_parallel_size);
      return InvalidParam(
          "kv-capacity-tokens",
          absl::StrCat(count, " x ", config.num_gpu_blocks * config.block_size,
                       " KV tokens each is ", fleet_tokens, " tokens, over the fleet's limit of ",
                       kMaxFleetKvTokens, " (use fewer replicas or --kv-capacity-tokens)"));
    }
    const std::string model = o.model.empty() ? std::string(timing.model) : o.model;
    WR_ASSIGN_OR_RETURN(model_text_, LoadModelText(o));

    const int threads = std::min(o.threads, o.replicas);
    for (int t = 0; t < threads; ++t) ios_.push_back(std::make_unique<asio::io_context>(1));
    std::vector<KvEventPublisherOptions> kv_options;
    if (o.kv_events) {
      WR_ASSIGN_OR_RETURN(kv_options, KvPublisherOptions(o));
      zmq_ = std::make_unique<zmq::context_t>(1);
    }

    for (int i = 0; i < o.replicas; ++i) {
      asio::io_context& io = *ios_[static_cast<size_t>(i % threads)];
      Served& served = served_.emplace_back();
      ReplicaEndpoint endpoint;
      endpoint.index = i;
      endpoint.host = o.host;
      std::vector<Replica*> ranks;
      for (int r = 0; r < o.data_parallel_size; ++r) {
        const int e = i * o.data_parallel_size + r;
        std::unique_ptr<KvEventPublisher> publisher;
        std::string replay_endpoint;
        if (o.kv_events) {
          WR_ASSIGN_OR_RETURN(publisher,
                              KvEventPublisher::Create(*zmq_, io.get_executor(), kv_options[e]));
          replay_endpoint = publisher->replay_endpoint();
        }
        ReplicaOptions ro;
        ro.index = e;
        ro.model = model;
        ro.config = config;
        ro.profile = timing;
        ro.time_scale = o.time_scale;
        ro.seed = Mix64(o.seed + static_cast<uint64_t>(e));
        served.ranks.push_back(std::make_unique<Replica>(
            io.get_executor(), ro, model_text_->generator(), std::move(publisher)));
        ranks.push_back(served.ranks.back().get());
        endpoint.ranks.push_back({.kv_events_endpoint = served.ranks.back()->kv_events_endpoint(),
                                  .kv_events_replay_endpoint = replay_endpoint});
      }
      const EngineApiOptions api_options{
          .responses = {.max_responses = static_cast<size_t>(o.responses_store_max),
                        .max_bytes = static_cast<size_t>(o.responses_store_bytes)},
          .embedding_dims = o.embedding_dims};
      served.api = std::make_unique<EngineApi>(std::move(ranks), *model_text_, api_options);

      net::HttpServerOptions so;
      so.host = o.host;
      so.port = o.port == 0 ? 0 : static_cast<uint16_t>(o.port + i);
      so.body_limit_bytes = o.body_limit_bytes;
      so.tls = tls;
      EngineApi* api = served.api.get();
      WR_ASSIGN_OR_RETURN(
          served.server,
          net::HttpServer::Create(io, so, [api](net::HttpRequest& r, net::ResponseWriter& w) {
            return api->Handle(r, w);
          }));
      endpoint.port = served.server->port();
      endpoint.kv_events_endpoint = endpoint.ranks.front().kv_events_endpoint;
      endpoint.kv_events_replay_endpoint = endpoint.ranks.front().kv_events_replay_endpoint;
      endpoints_.push_back(std::move(endpoint));
    }
    return absl::OkStatus();
  }

  void Run(bool handle_signals) {
    for (Served& served : served_) {
      for (const std::unique_ptr<Replica>& rank : served.ranks) rank->Start();
      served.server->Start();
    }
    if (handle_signals) {
      signals_ = std::make_unique<asio::signal_set>(*ios_[0], SIGINT, SIGTERM);
      signals_->async_wait([this](const boost::system::error_code& ec, int signal) {
        if (ec) return;
        spdlog::info("signal {}: shutting down", signal);
        Stop();
      });
    }
    std::vector<std::thread> threads;
    for (size_t t = 1; t < ios_.size(); ++t) {
      threads.emplace_back([io = ios_[t].get()] { io->run(); });
    }
    ios_[0]->run();
    for (std::thread& thread : threads) thread.join();
  }

  void Stop() {
    if (stopping_.exchange(true)) return;
    for (size_t t = 0; t < ios_.size(); ++t) {
      asio::post(*ios_[t], [this, t] {
        for (size_t i = t; i < served_.size(); i += ios_.size()) {
          served_[i].server->Stop();
          for (const std::unique_ptr<Replica>& rank : served_[i].ranks) rank->Stop();
        }
        if (t == 0 && signals_) signals_->cancel();
      });
    }
  }

  const std::vector<ReplicaEndpoint>& endpoints() const { return endpoints_; }

 private:
  // Destroyed in reverse order: servers, APIs and replicas (served_) before the zmq context and
  // the io_contexts they use.
  std::vector<std::unique_ptr<asio::io_context>> ios_;
  std::unique_ptr<asio::signal_set> signals_;
  std::unique_ptr<ModelText> model_text_;  // every replica's
  std::unique_ptr<zmq::context_t> zmq_;
  // One served replica: its ranks, the API over them and its server (destroyed in that order
  // reversed: server, API, ranks).
  struct Served {
    std::vector<std::unique_ptr<Replica>> ranks;
    std::unique_ptr<EngineApi> api;
    std::unique_ptr<net::HttpServer> server;
  };

  std::vector<Served> served_;
  std::vector<ReplicaEndpoint> endpoints_;
  std::atomic<bool> stopping_{false};
};

absl::StatusOr<std::unique_ptr<Fleet>> Fleet::Create(const FleetOptions& options) {
  auto impl = std::make_unique<Impl>();
  WR_RETURN_IF_ERROR(impl->Build(options));
  return std::unique_ptr<Fleet>(new Fleet(std::move(impl)));
}

Fleet::Fleet(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Fleet::~Fleet() = default;
const std::vector<ReplicaEndpoint>& Fleet::replicas() const { return impl_->endpoints(); }
void Fleet::Run(bool handle_signals) { impl_->Run(handle_signals); }
void Fleet::Stop() { impl_->Stop(); }

}  // namespace warmroute::emulator
