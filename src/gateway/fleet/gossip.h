// Placement gossip's I/O (config section `gossip`, gateway/config/gossip_config.h; what is sent
// and why: core/routing/placement_gossip.h; docs/many-gateways.md). On the gateway's control
// io_context, one UDP socket bound to gossip.host:port:
//   - every interval_ms: expires silent peers, takes the placements the Router made since the
//     last message (its placement observer queues them as requests are dispatched) with this
//     gateway's load per backend, and sends the datagrams to every peer address;
//   - receives peers' datagrams: only from the addresses the peers resolve to (others are
//     dropped, counted as not_a_peer), decoded off the routing lock, applied under it;
//   - resolves the peers' names every resolve_interval_ms (the system resolver: /etc/hosts,
//     then DNS); a name that fails keeps its last addresses and says so once per transition.
// Sends never block: a datagram the socket cannot take now is dropped (send_failed).
//
// Thread-safety: Create, Start and Stop on the control thread (or before it runs); the placement
// observer runs on the workers' threads under the routing lock and takes only the outbox's own
// lock.
#pragma once

#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "core/routing/placement_gossip.h"
#include "gateway/config/gossip_config.h"
#include "gateway/fleet/backends.h"
#include "gateway/observability/gateway_metrics.h"
#include "net/task.h"

namespace warmroute::gateway {

class Gossip {
 public:
  // InvalidArgument naming gossip.host:port when the socket cannot be bound. `sender`: this
  // process's random sender id.
  static absl::StatusOr<std::unique_ptr<Gossip>> Create(net::Executor executor, Backends& backends,
                                                        GatewayMetrics& metrics, const Clock& clock,
                                                        GossipConfig config, uint64_t sender);
  Gossip(const Gossip&) = delete;
  Gossip& operator=(const Gossip&) = delete;
  ~Gossip();

  // Starts the loops and the Router's placement observer; Stop ends them and removes it.
  void Start();
  void Stop();

  uint16_t port() const;

 private:
  using Udp = boost::asio::ip::udp;
  using Socket = boost::asio::basic_datagram_socket<Udp, net::Executor>;
  using Timer =
      boost::asio::basic_waitable_timer<std::chrono::steady_clock,
                                        boost::asio::wait_traits<std::chrono::steady_clock>,
                                        net::Executor>;

  Gossip(net::Executor executor, Backends& backends, GatewayMetrics& metrics, const Clock& clock,
         GossipConfig config, uint64_t sender);
  net::Task<void> SendLoop();
  net::Task<void> ReceiveLoop();
  net::Task<void> ResolveLoop();
  net::Task<void> ResolveOnce();
  void SendOnce();
  void OnDatagram(std::string_view datagram, const Udp::endpoint& from);
  // The peers' current addresses, from every name's last good resolution.
  void UpdatePeers();
  void Report();

  net::Executor executor_;
  Backends& backends_;
  GatewayMetrics& metrics_;
  const Clock& clock_;
  const GossipConfig config_;
  Socket socket_;
  Timer send_timer_;
  Timer resolve_timer_;
  bool stopped_ = false;

  std::mutex outbox_mu_;
  routing::GossipOutbox outbox_;  // guarded by outbox_mu_
  // Applied under the routing lock (Backends::WithRouter).
  routing::GossipReceiver receiver_;
  routing::GossipReceiveCounters reported_{};  // receiver_'s counters at the last Report
  int64_t reported_dropped_ = 0;               // outbox_.dropped() at the last send

  // Control thread only.
  // Per entry of config_.peers: its last good addresses, and whether its last resolution
  // worked (unset before the first: every transition is logged once).
  struct Resolved {
    std::vector<Udp::endpoint> addresses;
    std::optional<bool> ok;
  };
  std::vector<Resolved> resolved_;
  std::vector<Udp::endpoint> peers_;
  GossipCounts pending_{};         // since the last Report
  bool malformed_logged_ = false;  // the first malformed datagram is logged, the rest counted
};

}  // namespace warmroute::gateway
