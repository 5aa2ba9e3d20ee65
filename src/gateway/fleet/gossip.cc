#include "gateway/fleet/gossip.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "net/detached.h"

namespace warmroute::gateway {
namespace {

namespace asio = boost::asio;
using Udp = asio::ip::udp;

constexpr size_t kMaxDatagram = 65'536;

}  // namespace

absl::StatusOr<std::unique_ptr<Gossip>> Gossip::Create(net::Executor executor, Backends& backends,
                                                       GatewayMetrics& metrics, const Clock& clock,
                                                       GossipConfig config, uint64_t sender) {
  std::unique_ptr<Gossip> gossip(
      new Gossip(executor, backends, metrics, clock, std::move(config), sender));
  const GossipConfig& c = gossip->config_;
  boost::system::error_code ec;
  const asio::ip::address address = asio::ip::make_address(c.host, ec);
  const auto fail = [&](const std::string& why) {
    return absl::InvalidArgumentError(
        absl::StrCat("gossip: cannot listen on ", c.host, ":", c.port, ": ", why));
  };
  if (ec) return fail("host must be an IP address");
  const Udp::endpoint local(address, c.port);
  gossip->socket_.open(local.protocol(), ec);
  if (!ec) gossip->socket_.bind(local, ec);
  if (!ec) gossip->socket_.non_blocking(true, ec);
  if (ec) return fail(ec.message());
  return gossip;
}

Gossip::Gossip(net::Executor executor, Backends& backends, GatewayMetrics& metrics,
               const Clock& clock, GossipConfig config, uint64_t sender)
    : executor_(executor),
      backends_(backends),
      metrics_(metrics),
      clock_(clock),
      config_(std::move(config)),
      socket_(executor),
      send_timer_(executor),
      resolve_timer_(executor),
      outbox_(sender, routing::GossipOptions{}),
      receiver_(sender, routing::GossipReceiverOptions{}) {}

Gossip::~Gossip() = default;

uint16_t Gossip::port() const {
  boost::system::error_code ec;
  const Udp::endpoint local = socket_.local_endpoint(ec);
  return ec ? 0 : local.port();
}

void Gossip::Start() {
  backends_.WithRouter([this](routing::Router& router) {
    router.SetPlacementObserver([this, &router](routing::BackendId backend,
                                                std::span<const uint64_t> chain,
                                                const routing::DispatchDomain& domain) {
      std::lock_guard lock(outbox_mu_);
      outbox_.Add(router.fleet().backend(backend).name, chain, domain);
    });
  });
  spdlog::info("gossip: UDP {}:{}, {} peer name(s), every {} ms", config_.host, port(),
               config_.peer_addresses.size(), config_.interval.count());
  const auto log = [](std::exception_ptr e) { net::LogIfDetachedFailed("gossip", e); };
  asio::co_spawn(executor_, ResolveLoop(), log);
  asio::co_spawn(executor_, SendLoop(), log);
  asio::co_spawn(executor_, ReceiveLoop(), log);
}

void Gossip::Stop() {
  stopped_ = true;
  backends_.WithRouter([](routing::Router& router) { router.SetPlacementObserver(nullptr); });
  send_timer_.cancel();
  resolve_timer_.cancel();
  boost::system::error_code ec;
  socket_.close(ec);
}

net::Task<void> Gossip::ResolveLoop() {
  while (!stopped_) {
    co_await ResolveOnce();
    if (stopped_) break;
    resolve_timer_.expires_after(config_.resolve_interval);
    co_await resolve_timer_.async_wait(asio::as_tuple(asio::use_awaitable_t<net::Executor>{}));
  }
}

net::Task<void> Gossip::ResolveOnce() {
  asio::ip::basic_resolver<Udp, net::Executor> resolver(executor_);
  resolved_.resize(config_.peer_addresses.size());
  for (size_t i = 0; i < config_.peer_addresses.size(); ++i) {
    const GossipPeer& peer = config_.peer_addresses[i];
    auto [ec, results] =
        co_await resolver.async_resolve(peer.host, std::to_string(peer.port),
                                        asio::as_tuple(asio::use_awaitable_t<net::Executor>{}));
    if (stopped_) co_return;
    const std::string& name = config_.peers[i];
    Resolved& r = resolved_[i];
    const bool ok = !ec && !results.empty();
    if (r.ok != ok) {
      if (ok) {
        spdlog::info("gossip: peer {} resolves to {} address(es)", name, results.size());
      } else {
        spdlog::warn("gossip: peer {} does not resolve ({}); keeping its last addresses", name,
                     ec ? ec.message() : "no address");
      }
      r.ok = ok;
    }
    if (!ok) continue;
    r.addresses.clear();
    for (const auto& entry : results) r.addresses.push_back(entry.endpoint());
  }
  UpdatePeers();
}

void Gossip::UpdatePeers() {
  peers_.clear();
  for (const Resolved& r : resolved_) {
    for (const Udp::endpoint& e : r.addresses) {
      if (std::find(peers_.begin(), peers_.end(), e) == peers_.end()) peers_.push_back(e);
    }
  }
}

net::Task<void> Gossip::SendLoop() {
  while (!stopped_) {
    send_timer_.expires_after(config_.interval);
    co_await send_timer_.async_wait(asio::as_tuple(asio::use_awaitable_t<net::Executor>{}));
    if (stopped_) break;
    SendOnce();
  }
}

void Gossip::SendOnce() {
  std::vector<routing::PeerBackendLoad> load;
  backends_.WithRouter([&](routing::Router& router) {
    receiver_.Tick(clock_.Now(), router);
    load = routing::OwnLoad(router);
  });
  std::vector<std::string> datagrams;
  {
    std::lock_guard lock(outbox_mu_);
    datagrams = outbox_.Take(load);
    pending_.queue_full += outbox_.dropped() - reported_dropped_;
    reported_dropped_ = outbox_.dropped();
  }
  for (const std::string& datagram : datagrams) {
    for (const Udp::endpoint& peer : peers_) {
      boost::system::error_code ec;
      socket_.send_to(asio::buffer(datagram), peer, 0, ec);
      if (ec) {
        ++pending_.send_failed;
      } else {
        ++pending_.sent;
      }
    }
  }
  Report();
}

net::Task<void> Gossip::ReceiveLoop() {
  std::vector<char> buffer(kMaxDatagram);
  Udp::endpoint from;
  while (!stopped_) {
    auto [ec, n] = co_await socket_.async_receive_from(
        asio::buffer(buffer), from, asio::as_tuple(asio::use_awaitable_t<net::Executor>{}));
    if (stopped_ || ec == asio::error::operation_aborted) break;
    if (ec) continue;  // e.g. an ICMP port unreachable from a peer not up yet
    OnDatagram(std::string_view(buffer.data(), n), from);
  }
}

void Gossip::OnDatagram(std::string_view datagram, const Udp::endpoint& from) {
  const bool from_peer = std::any_of(peers_.begin(), peers_.end(), [&](const Udp::endpoint& e) {
    return e.address() == from.address();
  });
  if (!from_peer) {
    ++pending_.not_a_peer;
    return;
  }
  absl::StatusOr<routing::GossipMessage> message = routing::DecodeGossip(datagram);
  if (!message.ok()) {
    ++pending_.malformed;
    if (!malformed_logged_) {
      malformed_logged_ = true;
      spdlog::warn("gossip: dropped a datagram from {}: {}", from.address().to_string(),
                   std::string(message.status().message()));
    }
    return;
  }
  if (message->sender == outbox_.sender()) return;  // its own, from a peer list that names it
  ++pending_.received;
  backends_.WithRouter(
      [&](routing::Router& router) { receiver_.Apply(*std::move(message), clock_.Now(), router); });
}

void Gossip::Report() {
  const routing::GossipReceiveCounters& now = receiver_.counters();
  pending_.lost += now.lost - reported_.lost;
  pending_.placements += now.placements - reported_.placements;
  pending_.unknown_backend += now.unknown - reported_.unknown;
  reported_ = now;
  metrics_.OnGossip(pending_, static_cast<int64_t>(receiver_.peers()), receiver_.place().rank);
  pending_ = GossipCounts{};
}

}  // namespace warmroute::gateway
