#include "gateway/proxy/engine_answer.h"

#include <algorithm>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "common/status.h"
#include "net/openai_error.h"
#include "simdjson.h"

namespace warmroute::gateway {
namespace {

constexpr size_t kMediaTypeBytes = 64;  // of an engine's Content-Type quoted in a message

// The media type of a Content-Type: lower case, without parameters, at most kMediaTypeBytes.
std::string MediaType(std::string_view content_type) {
  const absl::string_view type =
      absl::StripAsciiWhitespace(AbslView(content_type.substr(0, content_type.find(';'))));
  return absl::AsciiStrToLower(type.substr(0, kMediaTypeBytes));
}

bool IsText(std::string_view media_type) {
  return media_type.empty() || media_type.substr(0, 5) == "text/" ||
         media_type.find("json") != std::string_view::npos ||
         media_type.find("xml") != std::string_view::npos;
}

// Whether the response header `name` describes the body it came with (Content-Type aside, which
// the head keeps apart): wrong for a body the gateway wrote instead.
bool DescribesBody(std::string_view name) {
  const absl::string_view n = AbslView(name);
  return absl::StartsWithIgnoreCase(n, "content-") || absl::EqualsIgnoreCase(n, "etag") ||
         absl::EqualsIgnoreCase(n, "last-modified") || absl::EqualsIgnoreCase(n, "digest");
}

// When `body` (the whole of it) is JSON, whether it already is an OpenAI error, or else the
// message and param of vLLM's older error shape {"object": "error", "message", "param", ...}.
struct JsonError {
  bool openai = false;
  std::string message;
  std::optional<std::string> param;
};
JsonError ReadJsonError(std::string_view body) {
  JsonError out;
  if (body.empty()) return out;  // (and simdjson's parse must not be given a null pointer)
  simdjson::dom::parser parser;
  simdjson::dom::object root;
  if (parser.parse(body.data(), body.size()).get_object().get(root) != simdjson::SUCCESS) {
    return out;
  }
  if (root["error"].error() == simdjson::SUCCESS) {
    out.openai = true;
    return out;
  }
  std::string_view object;
  std::string_view message;
  if (root["object"].get_string().get(object) == simdjson::SUCCESS && object == "error" &&
      root["message"].get_string().get(message) == simdjson::SUCCESS) {
    out.message = message;
    std::string_view param;
    if (root["param"].get_string().get(param) == simdjson::SUCCESS) out.param = param;
  }
  return out;
}

}  // namespace

HeadVerdict JudgeStatus(int status) {
  if (status >= 200 && status < 500) return HeadVerdict::kRelay;
  if (status >= 500 && status < 600) return HeadVerdict::kFailed;
  return HeadVerdict::kInvalid;
}

bool IsEventStream(std::string_view content_type) {
  return content_type.substr(0, 17) == "text/event-stream";
}

std::string InvalidStatusMessage(std::string_view backend, int status) {
  if (status == 101) {
    return absl::StrCat("backend ", AbslView(backend),
                        " answered 101 Switching Protocols to a request that asked for no upgrade");
  }
  return absl::StrCat("backend ", AbslView(backend), " answered with the invalid HTTP status ",
                      status);
}

std::string BodyExcerpt(std::string_view content_type, std::string_view body, bool complete) {
  const std::string media = MediaType(content_type);
  if (!IsText(media)) return {};
  const bool html = media.find("html") != std::string::npos;
  std::string out;
  bool space = false;  // white space (or a tag) since the last character kept
  bool in_tag = false;
  size_t i = 0;
  // One character past the limit tells a cut from a body that ends there.
  for (; i < body.size() && out.size() <= kExcerptBytes; ++i) {
    const unsigned char c = static_cast<unsigned char>(body[i]);
    if (html && (in_tag || c == '<')) {
      in_tag = c != '>';
      space = true;
      continue;
    }
    if (c <= ' ' || c == 0x7f) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out.push_back(' ');
    space = false;
    out.push_back(static_cast<char>(c));
  }
  bool cut = !complete;
  if (out.size() > kExcerptBytes) {
    size_t end = kExcerptBytes;
    while (end > 0 && (static_cast<unsigned char>(out[end]) & 0xC0) == 0x80) --end;
    out.resize(end);
    cut = true;
  }
  if (cut && !out.empty()) out.append("…");
  return out;
}

void ShapeEngineError(std::string_view backend, bool complete, net::ResponseHead& head,
                      std::string& body) {
  const bool event_stream = IsEventStream(head.content_type);
  JsonError json;
  if (complete && !event_stream) json = ReadJsonError(body);
  if (json.openai) return;
  std::string message = std::move(json.message);
  if (message.empty()) {
    message = absl::StrCat("backend ", AbslView(backend), " answered ", head.status);
    const std::string media = MediaType(head.content_type);
    if (event_stream) {
      message.append(" with an event stream");
    } else if (body.empty() && complete) {
      message.append(" with an empty body");
    } else if (!IsText(media)) {
      absl::StrAppend(&message, " with a body of type ", media);
    } else if (std::string excerpt = BodyExcerpt(head.content_type, body, complete);
               !excerpt.empty()) {
      absl::StrAppend(&message, ": ", excerpt);
    }
  }
  absl::Status status = absl::UnknownError(message);
  if (json.param) status = WithParam(std::move(status), *json.param);
  net::HttpError error = net::ToHttpError(status, head.status);
  body = std::move(error.body);
  head.content_type = "application/json";
  std::erase_if(head.headers, [](const auto& header) { return DescribesBody(header.first); });
}

}  // namespace warmroute::gateway
