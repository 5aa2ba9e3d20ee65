#include "gateway/fleet/model_list.h"

#include "simdjson.h"

namespace warmroute::gateway {

absl::StatusOr<ModelList> ParseModelList(std::string_view body) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(body.data(), body.size()).get(root) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("the model list is not JSON");
  }
  simdjson::dom::array data;
  if (root["data"].get_array().get(data) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("the model list has no \"data\" array");
  }
  ModelList list;
  for (simdjson::dom::element model : data) {
    std::string_view id;
    if (model["id"].get_string().get(id) == simdjson::SUCCESS && !id.empty()) {
      list.ids.emplace_back(id);
    } else {
      ++list.ignored;
    }
  }
  return list;
}

}  // namespace warmroute::gateway
