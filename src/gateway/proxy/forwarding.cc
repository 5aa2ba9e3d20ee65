#include "gateway/proxy/forwarding.h"

#include <utility>

#include "common/json_writer.h"
#include "gateway/config/tenancy_config.h"
#include "net/json_object_edit.h"

namespace warmroute::gateway {
namespace {

// Request headers that are not forwarded: the hop-by-hop ones (any Proxy-* too), and those the
// upstream connection sets itself (Host, Content-Length, Expect).
bool NotForwarded(std::string_view name) {
  return net::IsHopByHopHeader(name) || net::HeaderNameIs(name, "host") ||
         net::HeaderNameIs(name, "content-length") || net::HeaderNameIs(name, "expect") ||
         (name.size() >= 6 && net::HeaderNameIs(name.substr(0, 6), "proxy-"));
}

}  // namespace

void KeepForwardedHeaders(net::HttpHeaders& headers, bool strip_credentials) {
  std::erase_if(headers, [strip_credentials](const auto& header) {
    const std::string& name = header.first;
    return NotForwarded(name) || (strip_credentials && (net::HeaderNameIs(name, "authorization") ||
                                                        net::HeaderNameIs(name, kTenantHeader)));
  });
}

std::optional<std::string> WithIncludeUsage(const request::InferenceRequest& parsed,
                                            std::string_view body) {
  if (!parsed.stream || parsed.include_usage) return std::nullopt;
  if (body.find("\"stream_options\"") != std::string_view::npos) return std::nullopt;
  absl::StatusOr<std::string> out =
      net::InsertTopLevelMember(body, "stream_options", R"({"include_usage":true})");
  if (!out.ok()) return std::nullopt;  // not an object: parsing refused it
  return std::move(*out);
}

absl::StatusOr<std::string> WithCacheSalt(std::string_view body, std::string_view salt_json) {
  return net::SetTopLevelMember(body, "cache_salt", salt_json);
}

absl::StatusOr<UpstreamBody> UpstreamBody::Make(std::string_view client_body,
                                                std::optional<std::string> with_usage,
                                                std::string_view salt_json, bool response_ids) {
  UpstreamBody body(client_body, std::move(with_usage));
  body.response_ids_ = response_ids;
  if (!salt_json.empty()) {
    absl::StatusOr<std::string> salted = WithCacheSalt(body.unsalted(), salt_json);
    if (!salted.ok()) return salted.status();
    body.salted_ = std::move(*salted);
  }
  return body;
}

std::string_view UpstreamBody::For(EngineKind kind, std::string_view response_id) {
  const std::string_view body =
      salted_ && EngineSupportsCacheSalt(kind) ? std::string_view(*salted_) : unsalted();
  if (!response_ids_ || response_id.empty() || !TakesResponseIds(kind)) return body;
  absl::StatusOr<std::string> with_id =
      net::InsertTopLevelMember(body, "request_id", JsonString(response_id));
  if (!with_id.ok()) return body;  // not an object: the parse refused it already
  with_id_ = std::move(*with_id);
  return with_id_;
}

bool TakesResponseIds(EngineKind kind) { return kind == EngineKind::kVllm; }

}  // namespace warmroute::gateway
