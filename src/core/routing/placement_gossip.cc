#include "core/routing/placement_gossip.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/routing/router.h"

namespace warmroute::routing {

namespace {

constexpr std::string_view kMagic = "wrg2";
constexpr size_t kHeaderBytes = 4 + 8 + 8 + 1 + 2;
constexpr size_t kMaxEntries = 0xFFFF;  // placements or load entries in one datagram
constexpr uint8_t kHasLoad = 1;
// How far behind a peer's newest message one of its datagrams may arrive and count as late (a
// duplicate, or reordered on the way); further behind, the peer restarted under the same id.
constexpr uint64_t kMaxReorder = 1024;

void PutLe(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

void PutU32(std::string& out, int64_t value) {
  PutLe(out, static_cast<uint64_t>(std::clamp<int64_t>(value, 0, 0xFFFFFFFF)), 4);
}

constexpr size_t kDomainBytes = 4 * 8;

size_t PlacementBytes(const PeerPlacement& p) {
  return 1 + p.backend.size() + 2 + 8 * p.chain.size() + 1 +
         (p.domain.first_block != 0 ? kDomainBytes : 0);
}
size_t LoadBytes(const PeerBackendLoad& l) { return 1 + l.backend.size() + 16; }

// Reads little-endian integers off the front of a datagram, failing once it runs out.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool Get(uint64_t& value, int bytes) {
    if (data_.size() < static_cast<size_t>(bytes)) return false;
    value = 0;
    for (int i = 0; i < bytes; ++i) {
      value |= static_cast<uint64_t>(static_cast<unsigned char>(data_[i])) << (8 * i);
    }
    data_.remove_prefix(static_cast<size_t>(bytes));
    return true;
  }
  bool GetInt(int64_t& value, int bytes) {
    uint64_t v = 0;
    if (!Get(v, bytes)) return false;
    value = static_cast<int64_t>(v);
    return true;
  }
  bool GetName(std::string& out) {
    uint64_t n = 0;
    if (!Get(n, 1) || data_.size() < n) return false;
    out.assign(data_.substr(0, n));
    data_.remove_prefix(n);
    return true;
  }
  size_t left() const { return data_.size(); }

 private:
  std::string_view data_;
};

BackendLoad& operator+=(BackendLoad& a, const BackendLoad& b) {
  a.in_flight += b.in_flight;
  a.outstanding_prefill_tokens += b.outstanding_prefill_tokens;
  a.running_decodes += b.running_decodes;
  a.decode_context_tokens += b.decode_context_tokens;
  return a;
}

BackendLoad& operator-=(BackendLoad& a, const BackendLoad& b) {
  a.in_flight -= b.in_flight;
  a.outstanding_prefill_tokens -= b.outstanding_prefill_tokens;
  a.running_decodes -= b.running_decodes;
  a.decode_context_tokens -= b.decode_context_tokens;
  return a;
}

bool IsZero(const BackendLoad& l) {
  return l.in_flight == 0 && l.outstanding_prefill_tokens == 0 && l.running_decodes == 0 &&
         l.decode_context_tokens == 0;
}

// The present backends of `router` by name.
absl::flat_hash_map<std::string_view, BackendId> PresentByName(const Router& router) {
  absl::flat_hash_map<std::string_view, BackendId> ids;
  const FleetView& fleet = router.fleet();
  for (BackendId b = 0; b < fleet.size(); ++b) {
    if (fleet.backend(b).present) ids[fleet.backend(b).name] = b;
  }
  return ids;
}

}  // namespace

std::vector<PeerBackendLoad> OwnLoad(const Router& router) {
  std::vector<PeerBackendLoad> table;
  for (const BackendState& state : router.fleet().backends()) {
    if (!state.present || state.name.empty() || state.name.size() > 0xFF) continue;
    const BackendLoad load = state.own_load();
    if (!IsZero(load)) table.push_back({.backend = state.name, .load = load});
  }
  return table;
}

void GossipOutbox::Add(std::string_view backend, std::span<const uint64_t> chain,
                       const DispatchDomain& domain) {
  if (backend.empty() || backend.size() > 0xFF) return;
  if (pending_.size() >= options_.max_pending) {
    ++dropped_;
    return;
  }
  // A placement must fit one datagram on its own.
  const size_t fixed =
      kHeaderBytes + 1 + backend.size() + 2 + 1 + (domain.first_block != 0 ? kDomainBytes : 0);
  const size_t room =
      (options_.max_message_bytes - std::min(options_.max_message_bytes, fixed)) / 8;
  const size_t blocks = std::min({chain.size(), options_.max_chain_blocks, room});
  PeerPlacement& p = pending_.emplace_back();
  p.backend.assign(backend);
  p.chain.assign(chain.begin(), chain.begin() + static_cast<std::ptrdiff_t>(blocks));
  p.domain = domain;
}

std::vector<std::string> GossipOutbox::Take(std::span<const PeerBackendLoad> load) {
  size_t load_bytes = 2;
  size_t load_entries = 0;
  while (load_entries < load.size() && load_entries < kMaxEntries &&
         kHeaderBytes + load_bytes + LoadBytes(load[load_entries]) <= options_.max_message_bytes) {
    load_bytes += LoadBytes(load[load_entries++]);
  }
  std::vector<std::string> messages;
  size_t i = 0;
  do {
    // The placements [i, end) that fit one datagram; the last datagram also holds the table.
    size_t bytes = kHeaderBytes;
    size_t end = i;
    while (end < pending_.size() && end - i < kMaxEntries &&
           bytes + PlacementBytes(pending_[end]) <= options_.max_message_bytes) {
      bytes += PlacementBytes(pending_[end++]);
    }
    // Add made each placement fit a datagram alone; one that does not (a max_message_bytes below
    // a header and a name) still goes, alone, rather than never.
    if (end == i && end < pending_.size()) bytes += PlacementBytes(pending_[end++]);
    // Last: every placement is in, and the table fits beside them or has this datagram alone.
    const bool last =
        end == pending_.size() && (end == i || bytes + load_bytes <= options_.max_message_bytes);
    std::string out;
    out.reserve(bytes + (last ? load_bytes : 0));
    out.append(kMagic);
    PutLe(out, sender_, 8);
    PutLe(out, next_sequence_++, 8);
    PutLe(out, last ? kHasLoad : 0, 1);
    PutLe(out, end - i, 2);
    for (; i < end; ++i) {
      const PeerPlacement& p = pending_[i];
      PutLe(out, p.backend.size(), 1);
      out.append(p.backend);
      PutLe(out, p.chain.size(), 2);
      for (uint64_t hash : p.chain) PutLe(out, hash, 8);
      const bool has_domain = p.domain.first_block != 0;
      PutLe(out, has_domain ? 1 : 0, 1);
      if (has_domain) {
        PutLe(out, p.domain.first_block, 8);
        PutLe(out, p.domain.record.root, 8);
        PutLe(out, p.domain.record.model_fp, 8);
        PutLe(out, p.domain.record.salt_fp, 8);
      }
    }
    if (last) {
      PutLe(out, load_entries, 2);
      for (size_t k = 0; k < load_entries; ++k) {
        const PeerBackendLoad& l = load[k];
        PutLe(out, l.backend.size(), 1);
        out.append(l.backend);
        PutU32(out, l.load.in_flight);
        PutU32(out, l.load.outstanding_prefill_tokens);
        PutU32(out, l.load.running_decodes);
        PutU32(out, l.load.decode_context_tokens);
      }
    }
    messages.push_back(std::move(out));
    if (last) break;
  } while (true);
  pending_.clear();
  return messages;
}

absl::StatusOr<GossipMessage> DecodeGossip(std::string_view datagram) {
  if (datagram.size() < kHeaderBytes || datagram.substr(0, 4) != kMagic) {
    return absl::InvalidArgumentError(absl::StrCat("not a warmroute gossip message (",
                                                   datagram.size(), " bytes, no \"",
                                                   std::string(kMagic), "\" header)"));
  }
  Reader in(datagram.substr(4));
  GossipMessage message;
  uint64_t flags = 0;
  uint64_t count = 0;
  in.Get(message.sender, 8);
  in.Get(message.sequence, 8);
  in.Get(flags, 1);
  in.Get(count, 2);
  // Each placement takes at least 4 bytes: a count beyond what is left is a truncation, found
  // below without reserving for it.
  message.placements.reserve(std::min<uint64_t>(count, in.left() / 4));
  for (uint64_t i = 0; i < count; ++i) {
    PeerPlacement& p = message.placements.emplace_back();
    uint64_t blocks = 0;
    if (!in.GetName(p.backend) || !in.Get(blocks, 2) || in.left() < 8 * blocks) {
      return absl::InvalidArgumentError(
          absl::StrCat("gossip message truncated in placement ", i + 1, " of ", count));
    }
    p.chain.resize(blocks);
    for (uint64_t& hash : p.chain) in.Get(hash, 8);
    uint64_t has_domain = 0;
    if (!in.Get(has_domain, 1) || has_domain > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gossip message has no valid domain flag in placement ", i + 1, " of ", count));
    }
    if (has_domain == 1 && (!in.Get(p.domain.first_block, 8) || !in.Get(p.domain.record.root, 8) ||
                            !in.Get(p.domain.record.model_fp, 8) ||
                            !in.Get(p.domain.record.salt_fp, 8) || p.domain.first_block == 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gossip message truncated in the domain of placement ", i + 1, " of ", count));
    }
  }
  message.has_load = (flags & kHasLoad) != 0;
  if (message.has_load) {
    uint64_t entries = 0;
    if (!in.Get(entries, 2)) {
      return absl::InvalidArgumentError("gossip message truncated before its load table");
    }
    message.load.reserve(std::min<uint64_t>(entries, in.left() / 17));
    for (uint64_t i = 0; i < entries; ++i) {
      PeerBackendLoad& l = message.load.emplace_back();
      if (!in.GetName(l.backend) || !in.GetInt(l.load.in_flight, 4) ||
          !in.GetInt(l.load.outstanding_prefill_tokens, 4) ||
          !in.GetInt(l.load.running_decodes, 4) || !in.GetInt(l.load.decode_context_tokens, 4)) {
        return absl::InvalidArgumentError(
            absl::StrCat("gossip message truncated in load entry ", i + 1, " of ", entries));
      }
    }
  }
  if (in.left() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("gossip message has ", in.left(), " bytes after its end"));
  }
  return message;
}

absl::Status GossipReceiver::OnDatagram(std::string_view datagram, TimePoint now, Router& router) {
  absl::StatusOr<GossipMessage> message = DecodeGossip(datagram);
  if (!message.ok()) {
    ++counters_.malformed;
    return message.status();
  }
  Apply(*std::move(message), now, router);
  return absl::OkStatus();
}

void GossipReceiver::Apply(GossipMessage message, TimePoint now, Router& router) {
  if (message.sender == self_) return;
  ++counters_.messages;
  auto [it, added] = peers_.try_emplace(message.sender);
  if (added) PublishPlace(router);
  Peer& peer = it->second;
  if (!added && message.sequence > peer.next_sequence) {
    counters_.lost += static_cast<int64_t>(message.sequence - peer.next_sequence);
  }
  // Behind a message applied already: a duplicate or a late datagram, whose placements still
  // count but whose table is older than the one in place. Far behind: the peer started over
  // under the same id, and is heard from its new sequence on.
  const bool late = !added && message.sequence < peer.next_sequence &&
                    peer.next_sequence - message.sequence <= kMaxReorder;
  if (!late) peer.next_sequence = message.sequence + 1;
  peer.last_heard = now;
  if (!message.placements.empty()) {
    const absl::flat_hash_map<std::string_view, BackendId> ids = PresentByName(router);
    for (const PeerPlacement& p : message.placements) {
      auto id = ids.find(p.backend);
      if (id == ids.end()) {
        ++counters_.unknown;
        continue;
      }
      router.ApplyPeerPlacement(id->second, p.chain, p.domain);
      ++counters_.placements;
    }
  }
  if (message.has_load && !late) ReplaceLoad(peer, std::move(message.load), router);
}

void GossipReceiver::ReplaceLoad(Peer& peer, std::vector<PeerBackendLoad> table, Router& router) {
  absl::flat_hash_map<std::string, BackendLoad> next;
  for (PeerBackendLoad& entry : table) next[std::move(entry.backend)] += entry.load;
  // Only the sums that changed reach the Router (a table differs from the last in a few
  // backends), unless the fleet changed: a backend added, or re-added under its name, since.
  std::vector<std::string> changed;
  for (const auto& [name, load] : peer.load) {
    auto now = next.find(name);
    if (now != next.end() && now->second == load) continue;
    sums_[name] -= load;
    if (now != next.end()) sums_[name] += now->second;
    changed.push_back(name);
  }
  for (const auto& [name, load] : next) {
    if (peer.load.contains(name)) continue;
    sums_[name] += load;
    changed.push_back(name);
  }
  peer.load = std::move(next);
  const bool fleet_changed = router.fleet().size() != published_fleet_size_;
  if (changed.empty() && !fleet_changed) return;
  const absl::flat_hash_map<std::string_view, BackendId> ids = PresentByName(router);
  auto publish = [&](const std::string& name) {
    auto sum = sums_.find(name);
    auto id = ids.find(name);
    if (id != ids.end())
      router.SetPeerLoad(id->second, sum == sums_.end() ? BackendLoad{} : sum->second);
    if (sum != sums_.end() && IsZero(sum->second)) sums_.erase(sum);
  };
  if (fleet_changed) {
    published_fleet_size_ = router.fleet().size();
    for (const auto& [name, id] : ids) publish(std::string(name));
  } else {
    for (const std::string& name : changed) publish(name);
  }
}

void GossipReceiver::Tick(TimePoint now, Router& router) {
  std::vector<uint64_t> silent;
  for (const auto& [sender, peer] : peers_) {
    if (now - peer.last_heard > options_.peer_expiry) silent.push_back(sender);
  }
  for (uint64_t sender : silent) {
    ReplaceLoad(peers_.at(sender), {}, router);
    peers_.erase(sender);
    ++counters_.expired;
  }
  if (!silent.empty()) PublishPlace(router);
}

GatewayPlace GossipReceiver::place() const {
  GatewayPlace place{.rank = 0, .count = static_cast<int>(peers_.size()) + 1};
  for (const auto& [sender, peer] : peers_) {
    if (sender < self_) ++place.rank;
  }
  return place;
}

void GossipReceiver::PublishPlace(Router& router) const { router.SetGatewayPlace(place()); }

}  // namespace warmroute::routing
