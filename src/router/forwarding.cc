#include "router/forwarding.h"

namespace warmroute::router {
namespace {

// Request headers that are not forwarded: the hop-by-hop ones (any Proxy-* too), and those the
// upstream connection sets itself (Host, Content-Length, Expect).
bool NotForwarded(std::string_view name) {
  return net::IsHopByHopHeader(name) || net::HeaderNameIs(name, "host") ||
         net::HeaderNameIs(name, "content-length") || net::HeaderNameIs(name, "expect") ||
         (name.size() >= 6 && net::HeaderNameIs(name.substr(0, 6), "proxy-"));
}

}  // namespace

net::HttpHeaders ForwardHeaders(const net::HttpHeaders& client_headers) {
  net::HttpHeaders out;
  out.reserve(client_headers.size());
  for (const auto& [name, value] : client_headers) {
    if (!NotForwarded(name)) out.emplace_back(name, value);
  }
  return out;
}

std::optional<std::string> WithIncludeUsage(const request::InferenceRequest& parsed,
                                            std::string_view body) {
  if (!parsed.stream || parsed.include_usage) return std::nullopt;
  if (body.find("\"stream_options\"") != std::string_view::npos) return std::nullopt;
  const size_t open = body.find('{');
  if (open == std::string_view::npos) return std::nullopt;  // not an object: parsing refused it
  constexpr std::string_view kField = "\"stream_options\":{\"include_usage\":true}";
  size_t next = open + 1;
  while (next < body.size() && (body[next] == ' ' || body[next] == '\n' || body[next] == '\r' ||
                                body[next] == '\t')) {
    ++next;
  }
  const bool empty_object = next < body.size() && body[next] == '}';
  std::string out;
  out.reserve(body.size() + kField.size() + 1);
  out.append(body.substr(0, open + 1));
  out.append(kField);
  if (!empty_object) out.push_back(',');
  out.append(body.substr(open + 1));
  return out;
}

}  // namespace warmroute::router
