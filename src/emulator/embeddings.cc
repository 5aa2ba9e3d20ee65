#include "emulator/embeddings.h"

#include <bit>
#include <cmath>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/json_writer.h"
#include "common/rng.h"
#include "common/status.h"
#include "core/request/json_fields.h"
#include "simdjson.h"

namespace warmroute::emulator {
namespace {

using request::JsonTypeName;
using request::WrongType;
using simdjson::dom::element;

// Token ids, or one id's error naming `param`.
absl::Status ParseTokenIds(simdjson::dom::array items, std::string_view param,
                           std::vector<int32_t>& out) {
  size_t index = 0;
  for (element item : items) {
    const std::optional<int32_t> id = request::AsTokenId(item);
    if (!id) {
      return InvalidParam(param, absl::StrCat(std::string(param), "[", index,
                                              "] is not a token id in [0, 2^31), got ",
                                              std::string(JsonTypeName(item.type()))));
    }
    out.push_back(*id);
    ++index;
  }
  return absl::OkStatus();
}

EmbeddingInput TextInput(std::string_view text) {
  EmbeddingInput input;
  input.text.assign(text);
  return input;
}

EmbeddingInput TokensInput() {
  EmbeddingInput input;
  input.is_tokens = true;
  return input;
}

absl::Status ParseInput(element value, std::vector<EmbeddingInput>& out) {
  constexpr std::string_view kEmpty = "The input cannot be empty.";
  if (value.is_string()) {
    if (value.get_string().value_unsafe().empty()) return InvalidParam("input", kEmpty);
    out.push_back(TextInput(value.get_string().value_unsafe()));
    return absl::OkStatus();
  }
  if (!value.is_array()) {
    return WrongType("input", "a string, an array of strings or an array of token ids", value);
  }
  const simdjson::dom::array items = value.get_array().value_unsafe();
  if (items.size() == 0) return InvalidParam("input", kEmpty);
  const element first = items.at(0).value_unsafe();
  if (request::IsJsonNumber(first)) {  // one token-id input
    EmbeddingInput input = TokensInput();
    WR_RETURN_IF_ERROR(ParseTokenIds(items, "input", input.tokens));
    out.push_back(std::move(input));
    return absl::OkStatus();
  }
  if (items.size() > kMaxEmbeddingInputs) {
    return InvalidParam("input", absl::StrCat("at most ", kMaxEmbeddingInputs,
                                              " inputs per request, got ", items.size()));
  }
  const bool texts = first.is_string();
  size_t index = 0;
  for (element item : items) {
    const std::string name = absl::StrCat("input[", index, "]");
    if (texts && item.is_string()) {
      if (item.get_string().value_unsafe().empty()) return InvalidParam("input", kEmpty);
      out.push_back(TextInput(item.get_string().value_unsafe()));
    } else if (!texts && item.is_array()) {
      const simdjson::dom::array ids = item.get_array().value_unsafe();
      if (ids.size() == 0) return InvalidParam("input", kEmpty);
      EmbeddingInput input = TokensInput();
      WR_RETURN_IF_ERROR(ParseTokenIds(ids, name, input.tokens));
      out.push_back(std::move(input));
    } else {
      return InvalidParam(
          "input", absl::StrCat(name, " must be ", texts ? "a string" : "an array of token ids",
                                " like input[0], got ", std::string(JsonTypeName(item.type()))));
    }
    ++index;
  }
  return absl::OkStatus();
}

absl::Status ParseEncodingFormat(element value, bool& base64) {
  base64 = false;
  if (value.is_null()) return absl::OkStatus();
  if (value.is_string()) {
    const std::string_view format = value.get_string().value_unsafe();
    if (format == "float" || format == "base64") {
      base64 = format == "base64";
      return absl::OkStatus();
    }
  }
  return InvalidParam("encoding_format", "'encoding_format' must be 'float' or 'base64'");
}

}  // namespace

absl::StatusOr<EmbeddingsRequest> ParseEmbeddingsRequest(std::string_view body) {
  simdjson::dom::parser parser;
  WR_ASSIGN_OR_RETURN(const simdjson::dom::object fields, request::ParseJsonObject(parser, body));
  EmbeddingsRequest request;
  std::optional<element> input;
  std::string user;
  for (simdjson::dom::key_value_pair field : fields) {
    const std::string_view key = field.key;
    if (key == "model") {
      WR_RETURN_IF_ERROR(request::ParseString(field.value, "model", request.model));
    } else if (key == "input") {
      input = field.value;
    } else if (key == "encoding_format") {
      WR_RETURN_IF_ERROR(ParseEncodingFormat(field.value, request.base64));
    } else if (key == "dimensions") {
      WR_RETURN_IF_ERROR(
          request::ParsePositiveCount(field.value, "dimensions", request.dimensions));
    } else if (key == "user") {
      WR_RETURN_IF_ERROR(request::ParseString(field.value, "user", user));
    }
  }
  if (!input) return InvalidParam("input", "'input' is required");
  WR_RETURN_IF_ERROR(ParseInput(*input, request.inputs));
  return request;
}

std::vector<float> EmbeddingOf(std::span<const int32_t> tokens, int dims) {
  std::vector<double> sum(static_cast<size_t>(dims), 0.0);
  for (int32_t token : tokens) {
    Rng rng(Mix64(static_cast<uint64_t>(token) ^ 0x656d6265645f7631ull));
    for (double& x : sum) x += 2.0 * rng.Uniform() - 1.0;
  }
  double norm = 0;
  for (double x : sum) norm += x * x;
  norm = std::sqrt(norm);
  std::vector<float> vector(sum.size(), 0.0f);
  if (norm > 0) {
    for (size_t i = 0; i < sum.size(); ++i) vector[i] = static_cast<float>(sum[i] / norm);
  }
  return vector;
}

std::string Base64Floats(std::span<const float> vector) {
  std::string bytes;
  bytes.reserve(vector.size() * 4);
  for (float x : vector) {
    const uint32_t bits = std::bit_cast<uint32_t>(x);
    for (int shift = 0; shift < 32; shift += 8) bytes.push_back(static_cast<char>(bits >> shift));
  }
  return absl::Base64Escape(bytes);
}

std::string EmbeddingsResponse(const EmbeddingsInfo& info,
                               const std::vector<std::vector<float>>& vectors, bool base64,
                               int64_t prompt_tokens) {
  std::string out;
  out.reserve(256 + vectors.size() * (vectors.empty() ? 0 : vectors[0].size()) * 12);
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("id").String(info.id);
  w.Key("object").String("list");
  w.Key("created").Int(info.created);
  w.Key("model").String(info.model);
  w.Key("data").BeginArray();
  for (size_t i = 0; i < vectors.size(); ++i) {
    w.BeginObject();
    w.Key("index").Int(static_cast<int64_t>(i));
    w.Key("object").String("embedding");
    w.Key("embedding");
    if (base64) {
      w.String(Base64Floats(vectors[i]));
    } else {
      w.BeginArray();
      for (float x : vectors[i]) w.Float(x);
      w.EndArray();
    }
    w.EndObject();
  }
  w.EndArray();
  w.Key("usage").BeginObject();
  w.Key("prompt_tokens").Int(prompt_tokens);
  w.Key("total_tokens").Int(prompt_tokens);
  w.Key("completion_tokens").Int(0);
  w.Key("prompt_tokens_details").Null();
  w.EndObject();
  w.EndObject();
  return out;
}

}  // namespace warmroute::emulator
