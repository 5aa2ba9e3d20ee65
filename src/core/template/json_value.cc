#include "core/template/json_value.h"

#include <algorithm>
#include <cstdio>

#include "core/template/cat.h"
#include "core/template/py_text.h"
#include "simdjson.h"

namespace warmroute::jinja {
namespace {

using simdjson::dom::element;

absl::StatusOr<Value> FromElement(element e) {
  switch (e.type()) {
    case simdjson::dom::element_type::NULL_VALUE:
      return Value::None();
    case simdjson::dom::element_type::BOOL:
      return Value::Bool(e.get_bool().value_unsafe());
    case simdjson::dom::element_type::INT64:
      return Value::Int(e.get_int64().value_unsafe());
    case simdjson::dom::element_type::UINT64:
      return absl::InvalidArgumentError("JSON integer beyond 64 bits");
    case simdjson::dom::element_type::DOUBLE:
      return Value::Float(e.get_double().value_unsafe());
    case simdjson::dom::element_type::STRING:
      return Value::String(std::string(e.get_string().value_unsafe()));
    case simdjson::dom::element_type::ARRAY: {
      std::vector<Value> items;
      const simdjson::dom::array array = e.get_array().value_unsafe();
      for (element item : array) {
        absl::StatusOr<Value> v = FromElement(item);
        if (!v.ok()) return v.status();
        items.push_back(*std::move(v));
      }
      return Value::MakeList(std::move(items));
    }
    case simdjson::dom::element_type::OBJECT: {
      auto dict = std::make_shared<Dict>();
      const simdjson::dom::object object = e.get_object().value_unsafe();
      for (simdjson::dom::key_value_pair field : object) {
        absl::StatusOr<Value> v = FromElement(field.value);
        if (!v.ok()) return v.status();
        // A repeated key keeps its first place and its last value, as json.loads does.
        dict->Set(std::string(field.key), *std::move(v));
      }
      return Value::MakeDict(std::move(dict));
    }
  }
  return absl::InternalError("unknown JSON element type");
}

void AppendJsonString(std::string_view s, bool ensure_ascii, std::string& out) {
  out.push_back('"');
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    char buf[16];
    switch (c) {
      case '"':
        out.append("\\\"");
        continue;
      case '\\':
        out.append("\\\\");
        continue;
      case '\n':
        out.append("\\n");
        continue;
      case '\r':
        out.append("\\r");
        continue;
      case '\t':
        out.append("\\t");
        continue;
      case '\b':
        out.append("\\b");
        continue;
      case '\f':
        out.append("\\f");
        continue;
      default:
        break;
    }
    if (c < 0x20 || (ensure_ascii && c == 0x7F)) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out.append(buf);
    } else if (c < 0x80 || !ensure_ascii) {
      out.push_back(static_cast<char>(c));
    } else {
      // A multi-byte sequence: its code point as \uXXXX (a surrogate pair past the BMP).
      size_t len = c >= 0xF0 ? 4 : (c >= 0xE0 ? 3 : 2);
      const std::vector<char32_t> cp = DecodeUtf8(s.substr(i, len));
      i += len - 1;
      char32_t code = cp.empty() ? 0xFFFD : cp[0];
      if (code >= 0x10000) {
        code -= 0x10000;
        std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xD800 + (code >> 10),
                      0xDC00 + (code & 0x3FF));
      } else {
        std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(code));
      }
      out.append(buf);
    }
  }
  out.push_back('"');
}

class JsonWriter {
 public:
  JsonWriter(const JsonOptions& options, int max_depth)
      : options_(options),
        max_depth_(max_depth),
        item_sep_(options.item_separator.value_or(options.indent ? "," : ", ")),
        key_sep_(options.key_separator.value_or(": ")) {}

  absl::Status Write(const Value& v, int depth, std::string& out) {
    if (depth > max_depth_) {
      return absl::InvalidArgumentError("tojson: the value is nested too deeply");
    }
    switch (v.kind()) {
      case Value::Kind::kNone:
        out.append("null");
        return absl::OkStatus();
      case Value::Kind::kBool:
        out.append(v.bool_value() ? "true" : "false");
        return absl::OkStatus();
      case Value::Kind::kInt:
        out += Cat(v.int_value());
        return absl::OkStatus();
      case Value::Kind::kFloat: {
        const double f = v.float_value();
        if (f != f) {
          out.append("NaN");
        } else if (f == std::numeric_limits<double>::infinity()) {
          out.append("Infinity");
        } else if (f == -std::numeric_limits<double>::infinity()) {
          out.append("-Infinity");
        } else {
          out.append(PythonFloatRepr(f));
        }
        return absl::OkStatus();
      }
      case Value::Kind::kString:
        AppendJsonString(v.string_value(), options_.ensure_ascii, out);
        return absl::OkStatus();
      case Value::Kind::kList: {
        if (v.items().empty()) {
          out.append("[]");
          return absl::OkStatus();
        }
        out.push_back('[');
        for (size_t i = 0; i < v.items().size(); ++i) {
          if (i > 0) out.append(item_sep_);
          NewLine(depth + 1, out);
          absl::Status s = Write(v.items()[i], depth + 1, out);
          if (!s.ok()) return s;
        }
        NewLine(depth, out);
        out.push_back(']');
        return absl::OkStatus();
      }
      case Value::Kind::kDict: {
        if (v.is_namespace()) break;
        if (v.dict().size() == 0) {
          out.append("{}");
          return absl::OkStatus();
        }
        std::vector<const std::pair<std::string, Value>*> entries;
        for (const auto& entry : v.dict().entries()) entries.push_back(&entry);
        if (options_.sort_keys) {
          std::stable_sort(entries.begin(), entries.end(),
                           [](const auto* a, const auto* b) { return a->first < b->first; });
        }
        out.push_back('{');
        for (size_t i = 0; i < entries.size(); ++i) {
          if (i > 0) out.append(item_sep_);
          NewLine(depth + 1, out);
          AppendJsonString(entries[i]->first, options_.ensure_ascii, out);
          out.append(key_sep_);
          absl::Status s = Write(entries[i]->second, depth + 1, out);
          if (!s.ok()) return s;
        }
        NewLine(depth, out);
        out.push_back('}');
        return absl::OkStatus();
      }
      default:
        break;
    }
    return absl::InvalidArgumentError(
        Cat("Object of type ", TypeName(v), " is not JSON serializable"));
  }

 private:
  void NewLine(int depth, std::string& out) const {
    if (!options_.indent) return;
    out.push_back('\n');
    out.append(static_cast<size_t>(std::max(0, *options_.indent)) * depth, ' ');
  }

  const JsonOptions& options_;
  const int max_depth_;
  const std::string item_sep_;
  const std::string key_sep_;
};

}  // namespace

absl::StatusOr<Value> ValueFromJson(std::string_view text) {
  thread_local simdjson::dom::parser parser;
  element root;
  const simdjson::padded_string padded(text);
  if (const auto error = parser.parse(padded).get(root); error != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(Cat("invalid JSON: ", simdjson::error_message(error)));
  }
  return FromElement(root);
}

absl::StatusOr<std::string> ToJson(const Value& v, const JsonOptions& options, int max_depth) {
  std::string out;
  JsonWriter writer(options, max_depth);
  absl::Status s = writer.Write(v, 0, out);
  if (!s.ok()) return s;
  return out;
}

}  // namespace warmroute::jinja
