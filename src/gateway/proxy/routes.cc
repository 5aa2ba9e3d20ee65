#include "gateway/proxy/routes.h"

#include <array>

namespace warmroute::gateway {
namespace {

using request::Endpoint;

constexpr Route Prompt(std::string_view name, Endpoint endpoint) {
  return Route{name, RouteBody::kPrompt, endpoint, false};
}
constexpr Route Model(std::string_view name) {
  return Route{name, RouteBody::kModel, Endpoint::kChatCompletions, false};
}

constexpr Route kChat = Prompt("chat", Endpoint::kChatCompletions);
constexpr Route kCompletions = Prompt("completions", Endpoint::kCompletions);
constexpr Route kResponses = Prompt("responses", Endpoint::kResponses);
constexpr Route kMessages = Prompt("messages", Endpoint::kMessages);
constexpr Route kStoredResponse{"responses", RouteBody::kNone, Endpoint::kResponses, true};
constexpr Route kAudio{"audio", RouteBody::kStream, Endpoint::kChatCompletions, false};

struct ModelRoute {
  std::string_view path;
  Route route;
};
constexpr std::array kModelRoutes{
    ModelRoute{"/v1/embeddings", Model("embeddings")},
    ModelRoute{"/v1/rerank", Model("rerank")},
    ModelRoute{"/rerank", Model("rerank")},
    ModelRoute{"/v1/score", Model("score")},
    ModelRoute{"/score", Model("score")},
    ModelRoute{"/pooling", Model("pooling")},
    ModelRoute{"/classify", Model("classify")},
    ModelRoute{"/tokenize", Model("tokenize")},
    ModelRoute{"/detokenize", Model("detokenize")},
};

constexpr std::string_view kResponsesPrefix = "/v1/responses/";

RouteMatch Only(std::string_view method, std::string_view allowed, const Route& route) {
  RouteMatch match;
  if (method == allowed) {
    match.route = &route;
  } else {
    match.allow = allowed;
  }
  return match;
}

// /v1/responses/{id}, /v1/responses/{id}/cancel, /v1/responses/{id}/input_items.
RouteMatch MatchStoredResponse(std::string_view method, std::string_view rest) {
  const size_t slash = rest.find('/');
  const std::string_view id = rest.substr(0, slash);
  if (id.empty()) return {};
  const std::string_view action = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
  RouteMatch match;
  if (action.empty()) {
    if (method == "GET" || method == "DELETE") {
      match.route = &kStoredResponse;
    } else {
      match.allow = "GET, DELETE";
    }
  } else if (action == "cancel") {
    match = Only(method, "POST", kStoredResponse);
  } else if (action == "input_items") {
    match = Only(method, "GET", kStoredResponse);
  } else {
    return {};
  }
  if (match.route != nullptr) match.response_id = id;
  return match;
}

}  // namespace

RouteMatch MatchRoute(std::string_view method, std::string_view path) {
  if (path == "/v1/chat/completions") return Only(method, "POST", kChat);
  if (path == "/v1/completions") return Only(method, "POST", kCompletions);
  if (path == "/v1/responses") return Only(method, "POST", kResponses);
  if (path == "/v1/messages") return Only(method, "POST", kMessages);
  if (path == "/v1/audio/transcriptions" || path == "/v1/audio/translations") {
    return Only(method, "POST", kAudio);
  }
  if (path.starts_with(kResponsesPrefix)) {
    return MatchStoredResponse(method, path.substr(kResponsesPrefix.size()));
  }
  for (const ModelRoute& r : kModelRoutes) {
    if (path == r.path) return Only(method, "POST", r.route);
  }
  return {};
}

}  // namespace warmroute::gateway
