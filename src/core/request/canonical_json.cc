#include "core/request/canonical_json.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/json_writer.h"
#include "simdjson.h"

namespace warmroute::request {
namespace {

void WriteCanonical(const simdjson::dom::element& e, JsonWriter& w) {
  switch (e.type()) {
    case simdjson::dom::element_type::OBJECT: {
      std::vector<std::pair<std::string_view, simdjson::dom::element>> members;
      for (auto field : simdjson::dom::object(e)) members.emplace_back(field.key, field.value);
      std::stable_sort(members.begin(), members.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      w.BeginObject();
      for (const auto& [key, value] : members) {
        w.Key(key);
        WriteCanonical(value, w);
      }
      w.EndObject();
      break;
    }
    case simdjson::dom::element_type::ARRAY:
      w.BeginArray();
      for (simdjson::dom::element v : simdjson::dom::array(e)) WriteCanonical(v, w);
      w.EndArray();
      break;
    case simdjson::dom::element_type::STRING:
      w.String(std::string_view(e));
      break;
    case simdjson::dom::element_type::INT64:
      w.Int(int64_t(e));
      break;
    case simdjson::dom::element_type::UINT64:
      w.Uint(uint64_t(e));
      break;
    case simdjson::dom::element_type::DOUBLE:
      w.Double(double(e));
      break;
    case simdjson::dom::element_type::BOOL:
      w.Bool(bool(e));
      break;
    case simdjson::dom::element_type::NULL_VALUE:
      w.Null();
      break;
  }
}

}  // namespace

std::string CanonicalJson(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(simdjson::padded_string(json)).get(doc) != simdjson::SUCCESS) return "";
  std::string out;
  JsonWriter w(&out);
  WriteCanonical(doc, w);
  return out;
}

}  // namespace warmroute::request
