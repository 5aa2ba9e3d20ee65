#include "core/tokenize/post_processor.h"

#include "absl/strings/str_cat.h"
#include "core/tokenize/json_fields.h"

namespace warmroute::tokenize {

absl::StatusOr<PostProcessor> PostProcessor::FromJson(simdjson::dom::element json,
                                                      std::string_view where) {
  PostProcessor processor;
  if (json.is_null()) return processor;
  absl::Status status = AddTemplate(json, where, &processor);
  if (!status.ok()) return status;
  return processor;
}

absl::Status PostProcessor::AddTemplate(simdjson::dom::element json, std::string_view where,
                                        PostProcessor* out) {
  return ForEachComponent(
      json, where, "processors",
      [&](simdjson::dom::object object, std::string_view type,
          std::string_view where) -> absl::Status {
        if (type == "ByteLevel") return absl::OkStatus();
        if (type != "TemplateProcessing") return Unsupported(where, type);
        if (out->has_template_)
          return FileError(where, "has two templates, which is not supported");
        out->has_template_ = true;
        simdjson::dom::object specials;
        if (object["special_tokens"].get_object().get(specials) != simdjson::SUCCESS) {
          return FileError(Member(where, "special_tokens"), "must be an object");
        }
        simdjson::dom::array single;
        if (object["single"].get_array().get(single) != simdjson::SUCCESS) {
          return FileError(Member(where, "single"), "must be an array");
        }
        bool seen_sequence = false;
        size_t index = 0;
        for (simdjson::dom::element item : single) {
          const std::string at = Element(Member(where, "single"), index++);
          simdjson::dom::object piece;
          if (item.get_object().get(piece) != simdjson::SUCCESS || piece.size() != 1) {
            return FileError(at, "must be {\"SpecialToken\": ...} or {\"Sequence\": ...}");
          }
          const auto [kind, value] = *piece.begin();
          simdjson::dom::object body;
          if (value.get_object().get(body) != simdjson::SUCCESS) {
            return FileError(Member(at, kind), "must be an object");
          }
          absl::StatusOr<std::string_view> id = StringMember(body, "id", Member(at, kind));
          if (!id.ok()) return id.status();
          if (kind == "Sequence") {
            if (*id != "A" || seen_sequence) return FileError(at, "must be sequence A, once");
            seen_sequence = true;
            continue;
          }
          if (kind != "SpecialToken") return FileError(at, Cat("kind '", kind, "' is unknown"));
          simdjson::dom::array ids;
          if (specials[*id]["ids"].get_array().get(ids) != simdjson::SUCCESS) {
            return FileError(Member(where, "special_tokens"), Cat("has no ids for '", *id, "'"));
          }
          for (simdjson::dom::element v : ids) {
            int64_t n = -1;
            if (v.get_int64().get(n) != simdjson::SUCCESS || n < 0 || n > INT32_MAX) {
              return FileError(Member(where, "special_tokens"),
                               "ids must be non-negative integers");
            }
            (seen_sequence ? out->after_ : out->before_).push_back(static_cast<int32_t>(n));
          }
        }
        if (!seen_sequence) return FileError(Member(where, "single"), "has no sequence A");
        return absl::OkStatus();
      });
}

std::vector<int32_t> PostProcessor::Apply(const std::vector<int32_t>& ids) const {
  std::vector<int32_t> out;
  out.reserve(before_.size() + ids.size() + after_.size());
  out.insert(out.end(), before_.begin(), before_.end());
  out.insert(out.end(), ids.begin(), ids.end());
  out.insert(out.end(), after_.begin(), after_.end());
  return out;
}

}  // namespace warmroute::tokenize
