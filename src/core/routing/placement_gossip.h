// Placement gossip: what several gateway replicas in front of one fleet tell each other so that
// each routes as one gateway would (docs/many-gateways.md says why this and not a shared store).
//
// A gateway that routes only its share of the traffic sees only its share of the placements and
// of the load: at N replicas, a prefix another replica warmed on backend b is cold in this one's
// index, and the prefill others queued on b is invisible to its TTFT estimate and its in-flight
// bound. So every `interval` each replica sends the others
//   - every placement it made since its last message: the backend's name and the request's
//     prefix chain (the block hashes of its key, the same on every replica with the same
//     config), which a receiver inserts into that backend's slice as a speculative insert
//     (Router::ApplyPeerPlacement); in precise mode also the dispatch's domain
//     (DispatchDomain), which the receiver records as its own dispatches' are, so that the
//     engine's KV events for that request, answer blocks included, are attributed and indexed
//     there too (domain_attribution.h);
//   - its own load on each backend (BackendLoad: in flight, outstanding prefill tokens, running
//     decodes): a receiver keeps each peer's latest table and gives the Router the sum over its
//     peers (Router::SetPeerLoad). A peer silent for GossipReceiverOptions::peer_expiry (stopped,
//     partitioned) no longer counts.
// Nothing is acknowledged or retried: a lost message costs what having no gossip costs for its
// placements until the next one, the next table replaces the load, and the closed loop on
// reported cached tokens corrects the index either way.
//
// Sans-I/O: GossipOutbox encodes datagrams, GossipReceiver decodes and applies them. The live
// transport (UDP, gateway/fleet/gossip.h) and the simulator (sim/simulation.cc, with delay and
// loss) carry the very same bytes.
//
// Wire format (little-endian), one datagram:
//   "wrg2"                 magic and version
//   u64 sender             random per gateway process: a receiver drops its own messages
//   u64 sequence           per sender, from 0: a receiver counts gaps as lost messages, and
//                          applies the placements but not the load table of a message behind
//                          one it applied (a duplicate, or overtaken on the way)
//   u8 flags               bit 0: a load table follows the placements
//   u16 count              placements that follow
//   count x { u8 name length, name bytes, u16 blocks, blocks x u64 hash, u8 has domain,
//             [has domain: u64 first block, u64 root, u64 model fingerprint, u64 salt
//              fingerprint] }
//   [u16 entries, entries x { u8 name length, name bytes, u32 in flight, u32 outstanding prefill
//    tokens, u32 running decodes, u32 decode context tokens }]
// A chain longer than GossipOptions::max_chain_blocks is cut to its first blocks (the shared
// part of a prompt comes first); a placement never spans two datagrams; the load table rides in
// the last datagram of a flush, and lists the backends with any load (absent: none).
//
// Thread-safety: none; one owner each.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "core/routing/domain_attribution.h"
#include "core/routing/fleet_view.h"
#include "core/routing/policy.h"

namespace warmroute::routing {

class Router;

struct GossipOptions {
  // Upper bound of one datagram's size (UDP's payload limit is 65,507 bytes).
  size_t max_message_bytes = 32 * 1024;
  // Blocks of a chain sent at most (16 KB of hashes).
  size_t max_chain_blocks = 2048;
  // Placements queued at most between two Takes (a stalled sender drops the newest beyond it).
  size_t max_pending = 65536;
};

struct PeerPlacement {
  std::string backend;          // the backend's name
  std::vector<uint64_t> chain;  // block hashes, parent first
  DispatchDomain domain{};      // precise mode's dispatch domain; first_block 0: none
};

struct PeerBackendLoad {
  std::string backend;
  BackendLoad load;
};

struct GossipMessage {
  uint64_t sender = 0;
  uint64_t sequence = 0;
  std::vector<PeerPlacement> placements;
  bool has_load = false;
  std::vector<PeerBackendLoad> load;  // has_load: the sender's whole table
};

// The sender's own load table: every present backend of `router` with any load of its own.
std::vector<PeerBackendLoad> OwnLoad(const Router& router);

class GossipOutbox {
 public:
  GossipOutbox(uint64_t sender, GossipOptions options) : sender_(sender), options_(options) {}

  // Queues one placement, with its dispatch domain when it has one (first_block != 0). A
  // backend name longer than 255 bytes is not sent (names are short), nor a placement beyond
  // max_pending (counted in dropped()).
  void Add(std::string_view backend, std::span<const uint64_t> chain,
           const DispatchDomain& domain = {});
  size_t pending() const { return pending_.size(); }
  int64_t dropped() const { return dropped_; }
  // Encodes every queued placement, and `load` (OwnLoad) in the last datagram, into as few
  // datagrams as fit max_message_bytes (at least one), each with the next sequence number, and
  // empties the queue. Load entries beyond what one datagram holds are left out.
  std::vector<std::string> Take(std::span<const PeerBackendLoad> load);

  uint64_t sender() const { return sender_; }

 private:
  uint64_t sender_;
  GossipOptions options_;
  uint64_t next_sequence_ = 0;
  std::vector<PeerPlacement> pending_;
  int64_t dropped_ = 0;
};

// InvalidArgument, naming what is wrong, for a datagram that is not a whole gossip message.
absl::StatusOr<GossipMessage> DecodeGossip(std::string_view datagram);

struct GossipReceiverOptions {
  // A peer that has sent nothing for this long is forgotten: its load no longer counts.
  Duration peer_expiry = std::chrono::seconds(2);
};

struct GossipReceiveCounters {
  int64_t messages = 0;    // applied
  int64_t lost = 0;        // gaps in the peers' sequence numbers
  int64_t malformed = 0;   // dropped: not a whole gossip message
  int64_t placements = 0;  // applied to the index
  int64_t unknown = 0;     // placements naming a backend this gateway does not have
  int64_t expired = 0;     // peers forgotten after peer_expiry of silence
};

class GossipReceiver {
 public:
  // `self`: this gateway's own sender id, whose messages (a multicast echo) are ignored.
  GossipReceiver(uint64_t self, GossipReceiverOptions options) : self_(self), options_(options) {}

  // Decodes one datagram and applies it to `router`: its placements, and its load table in
  // place of the sender's previous one. InvalidArgument (counted as malformed, nothing applied)
  // when it is not a whole gossip message.
  absl::Status OnDatagram(std::string_view datagram, TimePoint now, Router& router);
  // The same for a message decoded already (DecodeGossip), e.g. outside the caller's lock.
  void Apply(GossipMessage message, TimePoint now, Router& router);
  // Forgets the peers silent for longer than peer_expiry (their load no longer counts).
  void Tick(TimePoint now, Router& router);

  size_t peers() const { return peers_.size(); }
  // This gateway among itself and the peers it hears: count = peers + 1, rank = the peers whose
  // sender id is below this one's. Every replica that hears the same peers numbers them alike;
  // the Router is given it (Router::SetGatewayPlace) whenever a peer is first heard or forgotten.
  GatewayPlace place() const;
  const GossipReceiveCounters& counters() const { return counters_; }

 private:
  struct Peer {
    uint64_t next_sequence = 0;
    TimePoint last_heard{};
    absl::flat_hash_map<std::string, BackendLoad> load;
  };
  // Replaces `peer`'s table with `table` in the sums, and gives the Router the sums that changed.
  void ReplaceLoad(Peer& peer, std::vector<PeerBackendLoad> table, Router& router);
  void PublishPlace(Router& router) const;

  uint64_t self_;
  GossipReceiverOptions options_;
  absl::flat_hash_map<uint64_t, Peer> peers_;
  absl::flat_hash_map<std::string, BackendLoad> sums_;  // by backend name, over the peers
  size_t published_fleet_size_ = 0;  // the Router's fleet size when every sum was last given
  GossipReceiveCounters counters_;
};

}  // namespace warmroute::routing
