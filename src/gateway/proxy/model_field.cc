#include "gateway/proxy/model_field.h"

#include "common/status.h"
#include "simdjson.h"

namespace warmroute::gateway {

absl::StatusOr<std::string> ModelOfBody(std::string_view body) {
  // On demand: the object is walked to its "model" member and no further (the rest of a large
  // body, an embedding batch say, is not parsed). The input needs simdjson's padding: copied into
  // a per-thread buffer that keeps its memory.
  thread_local simdjson::ondemand::parser parser;
  thread_local std::string padded;
  padded.reserve(body.size() + simdjson::SIMDJSON_PADDING);
  padded.assign(body.data(), body.size());
  const absl::Status not_object =
      absl::InvalidArgumentError("the request body must be a JSON object");
  simdjson::ondemand::document doc;
  simdjson::ondemand::object object;
  if (parser.iterate(simdjson::padded_string_view(padded, padded.capacity())).get(doc) !=
          simdjson::SUCCESS ||
      doc.get_object().get(object) != simdjson::SUCCESS) {
    return not_object;
  }
  simdjson::ondemand::value model;
  const simdjson::error_code found = object["model"].get(model);
  if (found == simdjson::NO_SUCH_FIELD) return std::string();
  if (found != simdjson::SUCCESS) return not_object;
  bool null = false;
  if (model.is_null().get(null) == simdjson::SUCCESS && null) return std::string();
  std::string_view name;
  if (model.get_string().get(name) != simdjson::SUCCESS) {
    return InvalidParam("model", "model must be a string");
  }
  return std::string(name);
}

}  // namespace warmroute::gateway
