// Readers of request-body fields shared by the request parsers (core/request's: chat and
// completions in inference_request.cc, the Responses API in responses_request.cc, Anthropic's
// Messages API in messages_request.cc; and the engine emulator's bodies without a prompt to
// route, such as embeddings and tokenize). Each checks one field's JSON type and range and, when
// it is wrong, returns InvalidArgument naming the parameter (common/status.h InvalidParam), as
// vLLM words it where the APIs agree:
// - a null optional field is unset (its default);
// - integers must fit in 64 bits, integral floats such as 16.0 count as integers (pydantic's lax
//   mode), booleans are JSON booleans only.
//
// Usage (inside a parser walking a simdjson DOM object):
//   WR_RETURN_IF_ERROR(ParseBool(value, "stream", /*default_value=*/false, request.stream));
//   WR_RETURN_IF_ERROR(ParsePositiveCount(value, "max_tokens", request.max_tokens));
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "simdjson.h"

namespace warmroute::request {

// The root object of `body`, parsed by `parser` (whose memory it uses): InvalidArgument
// "Invalid JSON: …" or "The request body must be a JSON object, got …" (no parameter) otherwise.
absl::StatusOr<simdjson::dom::object> ParseJsonObject(simdjson::dom::parser& parser,
                                                      std::string_view body);

// "an array", "a string", ... for error messages.
std::string_view JsonTypeName(simdjson::dom::element_type type);

// "'param' must be <expected>, got <the value's type>", naming `param`.
absl::Status WrongType(std::string_view param, std::string_view expected,
                       simdjson::dom::element value);

// The integer value of `value` if it is a JSON integer (or an integral float) in int64 range.
std::optional<int64_t> AsInt64(simdjson::dom::element value);

bool IsJsonNumber(simdjson::dom::element value);

// A string, or null (empty).
absl::Status ParseString(simdjson::dom::element value, std::string_view param, std::string& out);

// A string, or null (unset).
absl::Status ParseOptionalString(simdjson::dom::element value, std::string_view param,
                                 std::optional<std::string>& out);

// A boolean, or null (`default_value`).
absl::Status ParseBool(simdjson::dom::element value, std::string_view param, bool default_value,
                       bool& out);

// An integer >= 1, or null (unset): max_tokens, max_completion_tokens, max_output_tokens, n.
absl::Status ParsePositiveCount(simdjson::dom::element value, std::string_view param,
                                std::optional<int64_t>& out);

// `seed`: an integer in the signed 64-bit range (kept as its two's complement), or null.
absl::Status ParseSeed(simdjson::dom::element value, std::optional<uint64_t>& out);

// A token id: an integer in [0, 2^31) (the range token ids have on the wire), or nullopt.
std::optional<int32_t> AsTokenId(simdjson::dom::element value);

// `cache_salt`: a non-empty string, or null (empty).
absl::Status ParseCacheSalt(simdjson::dom::element value, std::string& out);

// A `tools` list: an array of objects (or null: none), kept as its minified JSON text (empty
// when there are none). `param` names the field ("tools").
absl::Status ParseToolsJson(simdjson::dom::element value, std::string_view param, std::string& out);

}  // namespace warmroute::request
