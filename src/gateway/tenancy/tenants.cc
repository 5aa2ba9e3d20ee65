#include "gateway/tenancy/tenants.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace warmroute::gateway {
namespace {

constexpr std::string_view kBearer = "bearer ";

std::string Hex(const unsigned char* bytes, size_t size) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * size);
  for (size_t i = 0; i < size; ++i) {
    out.push_back(kHex[bytes[i] >> 4]);
    out.push_back(kHex[bytes[i] & 15]);
  }
  return out;
}

// HMAC-SHA256(secret, domain), first 128 bits in hex: collisions across domains are out of
// reach, and vLLM hashes the salt into the first block anyway.
std::string SaltOf(std::string_view secret, std::string_view domain) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(domain.data()), domain.size(), mac, &length);
  return Hex(mac, std::min<unsigned>(length, 16));
}

std::string_view StripSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool StartsWithBearer(std::string_view s) {
  if (s.size() <= kBearer.size()) return false;
  for (size_t i = 0; i < kBearer.size(); ++i) {
    const char c = s[i] >= 'A' && s[i] <= 'Z' ? static_cast<char>(s[i] - 'A' + 'a') : s[i];
    if (c != kBearer[i]) return false;
  }
  return true;
}

absl::Status BadKey(std::string_view why) {
  return absl::UnauthenticatedError(absl::StrCat(
      std::string(why), " You can find your API key with your gateway operator; send it as "
           "`Authorization: Bearer <key>`."));
}

}  // namespace

bool Tenant::AllowsModel(std::string_view model) const {
  if (config.models.empty()) return true;
  return std::find(config.models.begin(), config.models.end(), model) != config.models.end();
}

KeyDigest Sha256(std::string_view data) {
  KeyDigest digest{};
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest.data(), &length, EVP_sha256(), nullptr);
  return digest;
}

std::string HexOf(const KeyDigest& digest) {
  return Hex(digest.data(), digest.size());
}

Tenants::Tenants(const TenancyConfig& config) {
  for (const TenantConfig& t : config.tenants) {
    auto tenant = std::make_unique<Tenant>();
    tenant->config = t;
    tenant->cache_domain = t.shared_group.empty() ? absl::StrCat("tenant:", t.name)
                                                  : absl::StrCat("group:", t.shared_group);
    tenant->cache_salt_json =
        absl::StrCat("\"", SaltOf(config.salt_secret, tenant->cache_domain), "\"");
    for (const KeyDigest& digest : t.api_key_digests) {
      keys_.push_back({.digest = digest, .tenant = tenants_.size()});
    }
    if (t.name == config.anonymous_tenant) anonymous_ = tenant.get();
    tenants_.push_back(std::move(tenant));
  }
}

absl::StatusOr<const Tenant*> Tenants::Authenticate(std::string_view authorization) const {
  authorization = StripSpaces(authorization);
  if (authorization.empty()) {
    if (anonymous_ != nullptr) return anonymous_;
    return BadKey("Missing API key.");
  }
  if (!StartsWithBearer(authorization)) {
    return BadKey("The Authorization header must be `Bearer <key>`.");
  }
  const std::string_view key = StripSpaces(authorization.substr(kBearer.size()));
  const KeyDigest digest = Sha256(key);
  // Every entry is compared; the match is selected without a data-dependent branch.
  size_t found = tenants_.size();
  for (const KeyEntry& entry : keys_) {
    const size_t equal =
        static_cast<size_t>(CRYPTO_memcmp(entry.digest.data(), digest.data(), digest.size()) == 0);
    found = equal * entry.tenant + (1 - equal) * found;
  }
  if (found == tenants_.size()) return BadKey("Incorrect API key provided.");
  return tenants_[found].get();
}

}  // namespace warmroute::gateway
