#include "core/routing/domain_attribution.h"

#include <algorithm>

#include "core/request/block_hash.h"
#include "core/routing/prefix_key.h"

namespace warmroute::routing {

uint64_t ModelFingerprint(std::string_view model) {
  return request::RootBlockHash({.model = model, .lora = "", .cache_salt = ""});
}

uint64_t SaltFingerprint(std::string_view cache_salt) {
  if (cache_salt.empty()) return 0;
  const uint64_t fp = request::RootBlockHash({.model = "", .lora = "", .cache_salt = cache_salt});
  return fp == 0 ? 1 : fp;
}

uint64_t FirstBlockContentHash(std::span<const int32_t> block_tokens) {
  // A root no request has (its model field is not a model name), so that this hash never equals
  // a chain's first block hash.
  static const uint64_t kContentRoot = request::RootBlockHash(
      {.model = "warmroute/first-block-content", .lora = "", .cache_salt = ""});
  return request::ChainBlockHash(kContentRoot, block_tokens);
}

DispatchDomain DomainOfTokenPrompt(std::string_view model, std::string_view tenant,
                                   std::string_view cache_salt, std::span<const int32_t> tokens,
                                   int block_tokens) {
  DispatchDomain d;
  if (block_tokens <= 0 || tokens.size() < static_cast<size_t>(block_tokens)) return d;
  const std::string salt = PrefixKeySalt(tenant, cache_salt);
  d.first_block = FirstBlockContentHash(tokens.first(static_cast<size_t>(block_tokens)));
  d.record = {.root = request::RootBlockHash({.model = model, .lora = "", .cache_salt = salt}),
              .model_fp = ModelFingerprint(model),
              .salt_fp = SaltFingerprint(cache_salt),
              .refs = 0};
  return d;
}

DomainAttribution::DomainAttribution(DomainAttributionOptions options)
    : options_(options) {
  if (options_.records_per_backend == 0) options_.records_per_backend = 1;
}

void DomainAttribution::AddRef(Domains& domains, const DomainRecord& record) {
  for (DomainRecord& r : domains) {
    if (r.root == record.root) {
      ++r.refs;
      r.model_fp = record.model_fp;
      r.salt_fp = record.salt_fp;
      return;
    }
  }
  DomainRecord added = record;
  added.refs = 1;
  domains.push_back(added);
}

void DomainAttribution::DropRef(absl::flat_hash_map<uint64_t, Domains>& by_block,
                                uint64_t first_block, uint64_t root) {
  auto it = by_block.find(first_block);
  if (it == by_block.end()) return;
  Domains& domains = it->second;
  for (size_t i = 0; i < domains.size(); ++i) {
    if (domains[i].root != root) continue;
    if (--domains[i].refs == 0) domains.erase(domains.begin() + static_cast<std::ptrdiff_t>(i));
    break;
  }
  if (domains.empty()) by_block.erase(it);
}

void DomainAttribution::Record(BackendId backend, uint64_t first_block,
                               const DomainRecord& record) {
  if (first_block == 0) return;
  if (backend >= backends_.size()) backends_.resize(size_t{backend} + 1);
  Backend& state = backends_[backend];
  if (state.ring.size() == options_.records_per_backend) {
    const auto [old_block, old_root] = state.ring[state.next];
    Release(state, old_block, old_root);
    state.ring[state.next] = {first_block, record.root};
    state.next = (state.next + 1) % state.ring.size();
  } else {
    state.ring.emplace_back(first_block, record.root);
  }
  AddRef(state.by_block[first_block], record);
  AddRef(fleet_[first_block], record);
  if (record.salt_fp == 0) {
    auto [it, added] = unsalted_.try_emplace(record.root, record);
    if (added) it->second.refs = 0;
    it->second.model_fp = record.model_fp;
    ++it->second.refs;
  }
}

void DomainAttribution::Release(Backend& state, uint64_t first_block, uint64_t root) {
  DropRef(state.by_block, first_block, root);
  DropRef(fleet_, first_block, root);
  DropUnsalted(root);
}

void DomainAttribution::DropUnsalted(uint64_t root) {
  auto it = unsalted_.find(root);
  if (it != unsalted_.end() && --it->second.refs == 0) unsalted_.erase(it);
}

std::span<const DomainRecord> DomainAttribution::Candidates(BackendId backend,
                                                            uint64_t first_block) const {
  if (backend >= backends_.size()) return {};
  const auto& by_block = backends_[backend].by_block;
  auto it = by_block.find(first_block);
  if (it == by_block.end()) return {};
  return std::span<const DomainRecord>(it->second.data(), it->second.size());
}

std::vector<DomainRecord> DomainAttribution::UnsaltedDomains() const {
  std::vector<DomainRecord> domains;
  domains.reserve(unsalted_.size());
  for (const auto& [root, record] : unsalted_) domains.push_back(record);
  return domains;
}

std::span<const DomainRecord> DomainAttribution::FleetCandidates(uint64_t first_block) const {
  auto it = fleet_.find(first_block);
  if (it == fleet_.end()) return {};
  return std::span<const DomainRecord>(it->second.data(), it->second.size());
}

void DomainAttribution::Forget(BackendId backend) {
  if (backend >= backends_.size()) return;
  Backend& state = backends_[backend];
  for (const auto& [first_block, root] : state.ring) {
    DropRef(fleet_, first_block, root);
    DropUnsalted(root);
  }
  state = Backend{};
}

size_t DomainAttribution::records(BackendId backend) const {
  return backend < backends_.size() ? backends_[backend].ring.size() : 0;
}

size_t DomainAttribution::MemoryBytes() const {
  size_t bytes = sizeof(*this) + backends_.capacity() * sizeof(Backend);
  for (const Backend& b : backends_) {
    bytes += b.ring.capacity() * sizeof(b.ring[0]);
    bytes += b.by_block.capacity() * (sizeof(std::pair<uint64_t, Domains>) + 1);
  }
  bytes += fleet_.capacity() * (sizeof(std::pair<uint64_t, Domains>) + 1);
  bytes += unsalted_.capacity() * (sizeof(std::pair<uint64_t, DomainRecord>) + 1);
  return bytes;
}

}  // namespace warmroute::routing
