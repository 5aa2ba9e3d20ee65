#include "gateway/proxy/response_ids.h"

#include "core/routing/policies/policy_util.h"

namespace warmroute::gateway {
namespace {

constexpr char kHex[] = "0123456789abcdef";
constexpr size_t kHashDigits = 16;
constexpr size_t kRandomDigits = 24;

void AppendHex(std::string& out, uint64_t value, size_t digits) {
  for (size_t i = digits; i-- > 0;) out.push_back(kHex[(value >> (4 * i)) & 0xf]);
}

}  // namespace

std::string NewResponseId(std::string_view backend_name, Rng& rng) {
  std::string id(kResponseIdPrefix);
  id.reserve(kResponseIdPrefix.size() + kHashDigits + kRandomDigits);
  AppendHex(id, routing::NameHash(backend_name), kHashDigits);
  AppendHex(id, rng.Next(), 16);
  AppendHex(id, rng.Next(), kRandomDigits - 16);
  return id;
}

std::optional<uint64_t> BackendHashOfResponseId(std::string_view id) {
  if (!id.starts_with(kResponseIdPrefix) ||
      id.size() != kResponseIdPrefix.size() + kHashDigits + kRandomDigits) {
    return std::nullopt;
  }
  uint64_t hash = 0;
  for (char c : id.substr(kResponseIdPrefix.size())) {
    const bool digit = c >= '0' && c <= '9';
    const bool letter = c >= 'a' && c <= 'f';
    if (!digit && !letter) return std::nullopt;
  }
  for (char c : id.substr(kResponseIdPrefix.size(), kHashDigits)) {
    hash = hash << 4 | static_cast<uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
  }
  return hash;
}

}  // namespace warmroute::gateway
