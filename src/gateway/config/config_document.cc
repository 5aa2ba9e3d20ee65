#include "gateway/config/config_document.h"

#include <charconv>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "simdjson.h"
#include "yaml-cpp/depthguard.h"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/yaml.h"

namespace warmroute::gateway {
namespace {

constexpr int kMaxDepth = 64;
constexpr int64_t kMaxNodes = 100'000;

absl::Status TooDeep() {
  return absl::InvalidArgumentError(
      absl::StrCat("document nested deeper than ", kMaxDepth, " levels"));
}

absl::Status TooLarge() {
  return absl::InvalidArgumentError(
      absl::StrCat("document has more than ", kMaxNodes, " values (after expanding aliases)"));
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// [-+]?[0-9]+
bool LooksLikeInt(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsDigit(c)) return false;
  }
  return true;
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool LooksLikeFloat(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  size_t digits = 0;
  while (i < s.size() && IsDigit(s[i])) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && IsDigit(s[i])) ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    size_t exponent_digits = 0;
    while (i < s.size() && IsDigit(s[i])) ++i, ++exponent_digits;
    if (exponent_digits == 0) return false;
  }
  return i == s.size();
}

// A YAML 1.2 core-schema plain scalar as a typed node (null is resolved by yaml-cpp already).
void ResolvePlainScalar(ConfigNode* node) {
  const std::string& s = node->text;
  node->plain = true;
  if (s == "true" || s == "True" || s == "TRUE" || s == "false" || s == "False" || s == "FALSE") {
    node->type = ConfigNode::Type::kBool;
    node->bool_value = s[0] == 't' || s[0] == 'T';
    return;
  }
  // from_chars takes a leading '-' but not '+'.
  const std::string_view number =
      !s.empty() && s[0] == '+' ? std::string_view(s).substr(1) : std::string_view(s);
  const char* end = number.data() + number.size();
  if (LooksLikeInt(s)) {
    int64_t value = 0;
    const auto [ptr, ec] = std::from_chars(number.data(), end, value);
    if (ec == std::errc() && ptr == end) {
      node->type = ConfigNode::Type::kInt;
      node->int_value = value;
      return;
    }
    // Beyond int64: read as a double below, which no integer field accepts.
  }
  if (LooksLikeFloat(s)) {
    node->type = ConfigNode::Type::kDouble;
    double value = 0;
    const auto [ptr, ec] = std::from_chars(number.data(), end, value, std::chars_format::general);
    // Out of range: strtod gives the overflow's infinity or the underflow's zero.
    node->double_value = ec == std::errc() && ptr == end ? value : std::strtod(s.c_str(), nullptr);
    return;
  }
  std::string_view body = s;
  const bool negative = !body.empty() && body[0] == '-';
  if (!body.empty() && (body[0] == '-' || body[0] == '+')) body.remove_prefix(1);
  if (body == ".inf" || body == ".Inf" || body == ".INF") {
    node->type = ConfigNode::Type::kDouble;
    node->double_value = negative ? -std::numeric_limits<double>::infinity()
                                  : std::numeric_limits<double>::infinity();
    return;
  }
  if (s == ".nan" || s == ".NaN" || s == ".NAN") {
    node->type = ConfigNode::Type::kDouble;
    node->double_value = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  node->type = ConfigNode::Type::kString;
}

class YamlConverter {
 public:
  absl::Status Convert(const YAML::Node& in, int depth, ConfigNode* out) {
    if (depth > kMaxDepth) return TooDeep();
    if (++nodes_ > kMaxNodes) return TooLarge();
    const YAML::Mark mark = in.Mark();
    out->line = mark.line >= 0 ? mark.line + 1 : 0;
    switch (in.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        out->type = ConfigNode::Type::kNull;
        out->text = "null";
        return absl::OkStatus();
      case YAML::NodeType::Scalar: {
        out->text = in.Scalar();
        const std::string& tag = in.Tag();
        if (tag == "!" || tag == "tag:yaml.org,2002:str") {
          out->type = ConfigNode::Type::kString;
        } else {
          ResolvePlainScalar(out);
        }
        return absl::OkStatus();
      }
      case YAML::NodeType::Sequence:
        out->type = ConfigNode::Type::kList;
        for (const YAML::Node& item : in) {
          ConfigNode& converted = out->items.emplace_back();
          if (absl::Status s = Convert(item, depth + 1, &converted); !s.ok()) return s;
        }
        return absl::OkStatus();
      case YAML::NodeType::Map:
        out->type = ConfigNode::Type::kMap;
        for (auto it = in.begin(); it != in.end(); ++it) {
          if (!it->first.IsScalar()) {
            const YAML::Mark key_mark = it->first.Mark();
            return absl::InvalidArgumentError(
                absl::StrCat("line ", key_mark.line + 1, ": map keys must be strings"));
          }
          auto& [key, value] = out->entries.emplace_back();
          key = it->first.Scalar();
          if (absl::Status s = Convert(it->second, depth + 1, &value); !s.ok()) return s;
        }
        return absl::OkStatus();
    }
    return absl::InternalError("unknown YAML node type");
  }

 private:
  int64_t nodes_ = 0;
};

class JsonConverter {
 public:
  absl::Status Convert(simdjson::dom::element in, int depth, ConfigNode* out) {
    if (depth > kMaxDepth) return TooDeep();
    if (++nodes_ > kMaxNodes) return TooLarge();
    switch (in.type()) {
      case simdjson::dom::element_type::NULL_VALUE:
        out->type = ConfigNode::Type::kNull;
        out->text = "null";
        return absl::OkStatus();
      case simdjson::dom::element_type::BOOL:
        out->type = ConfigNode::Type::kBool;
        out->bool_value = in.get_bool().value_unsafe();
        out->text = out->bool_value ? "true" : "false";
        return absl::OkStatus();
      case simdjson::dom::element_type::INT64:
        out->type = ConfigNode::Type::kInt;
        out->int_value = in.get_int64().value_unsafe();
        out->text = absl::StrCat(out->int_value);
        return absl::OkStatus();
      case simdjson::dom::element_type::UINT64:
        out->type = ConfigNode::Type::kDouble;
        out->double_value = static_cast<double>(in.get_uint64().value_unsafe());
        out->text = absl::StrCat(in.get_uint64().value_unsafe());
        return absl::OkStatus();
      case simdjson::dom::element_type::DOUBLE:
        out->type = ConfigNode::Type::kDouble;
        out->double_value = in.get_double().value_unsafe();
        out->text = absl::StrCat(out->double_value);
        return absl::OkStatus();
      case simdjson::dom::element_type::STRING:
        out->type = ConfigNode::Type::kString;
        out->text = std::string(in.get_string().value_unsafe());
        return absl::OkStatus();
      case simdjson::dom::element_type::ARRAY: {
        out->type = ConfigNode::Type::kList;
        const simdjson::dom::array array = in.get_array().value_unsafe();
        for (simdjson::dom::element item : array) {
          ConfigNode& converted = out->items.emplace_back();
          if (absl::Status s = Convert(item, depth + 1, &converted); !s.ok()) return s;
        }
        return absl::OkStatus();
      }
      case simdjson::dom::element_type::OBJECT: {
        out->type = ConfigNode::Type::kMap;
        const simdjson::dom::object object = in.get_object().value_unsafe();
        for (simdjson::dom::key_value_pair field : object) {
          auto& [key, value] = out->entries.emplace_back();
          key = std::string(field.key);
          if (absl::Status s = Convert(field.value, depth + 1, &value); !s.ok()) return s;
        }
        return absl::OkStatus();
      }
    }
    return absl::InternalError("unknown JSON element type");
  }

 private:
  int64_t nodes_ = 0;
};

}  // namespace

std::string_view TypeName(ConfigNode::Type type) {
  switch (type) {
    case ConfigNode::Type::kNull:
      return "null";
    case ConfigNode::Type::kBool:
      return "a boolean";
    case ConfigNode::Type::kInt:
      return "an integer";
    case ConfigNode::Type::kDouble:
      return "a number";
    case ConfigNode::Type::kString:
      return "a string";
    case ConfigNode::Type::kList:
      return "a list";
    case ConfigNode::Type::kMap:
      return "a map";
  }
  return "an unknown value";
}

// More documents than a config file has, even with a few empty ones (`---` alone).
constexpr int kMaxYamlDocuments = 16;

// Where a YAML document's root node is and whether it is null (an empty document), from the
// parser's events.
class DocumentStart final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    start = mark;  // until the root's
    root_seen_ = false;
    root_null = true;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Root(mark, true); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Root(mark, false); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    Root(mark, false);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Root(mark, false);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Root(mark, false);
  }
  void OnMapEnd() override {}

  YAML::Mark start;
  bool root_null = true;

 private:
  void Root(const YAML::Mark& mark, bool null) {
    if (root_seen_) return;
    root_seen_ = true;
    start = mark;
    root_null = null;
  }
  bool root_seen_ = false;
};

absl::StatusOr<ConfigNode> ParseYamlDocument(std::string_view yaml) {
  // yaml-cpp reports errors as exceptions: they stop here.
  try {
    // Every document counts: a file whose second document (after `---`) went unnoticed would
    // silently lose its keys. The documents are counted from the parser's events rather than
    // with YAML::LoadAll: on a file that is or starts with a stray ',' (tests/fuzz, config_yaml)
    // yaml-cpp 0.7's parser yields empty documents for ever without reading on, and LoadAll
    // collects them until memory runs out. Hence at most kMaxYamlDocuments documents, empty
    // ones included.
    std::istringstream in{std::string(yaml)};
    YAML::Parser parser(in);
    DocumentStart document;
    int documents = 0;
    for (int calls = 0; parser.HandleNextDocument(document); ++calls) {
      if (calls == kMaxYamlDocuments) {
        return absl::InvalidArgumentError(absl::StrCat(
            "line ", document.start.line + 1, ", column ", document.start.column + 1,
            ": YAML error: the parser makes no progress here (a stray ',' or an unclosed bracket?)"));
      }
      if (document.root_null) continue;  // an empty document: `---` alone
      if (calls > 0) {  // (YAML::Load below reads the first document only)
        return absl::InvalidArgumentError(absl::StrCat("line ", document.start.line + 1,
                                                       ": a second YAML document (after '---' or "
                                                       "'...'); a config is one document"));
      }
      ++documents;
    }
    ConfigNode out;
    if (documents == 0) return out;
    if (absl::Status s = YamlConverter().Convert(YAML::Load(std::string(yaml)), 0, &out);
        !s.ok()) {
      return s;
    }
    return out;
  } catch (const YAML::DeepRecursion& e) {
    // (yaml-cpp's own message for it is "bad file")
    return absl::InvalidArgumentError(absl::StrCat("line ", e.mark.line + 1, ", column ",
                                                   e.mark.column + 1,
                                                   ": YAML error: nested too deeply"));
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) return absl::InvalidArgumentError(absl::StrCat("YAML error: ", e.msg));
    return absl::InvalidArgumentError(absl::StrCat("line ", e.mark.line + 1, ", column ",
                                                   e.mark.column + 1, ": YAML error: ", e.msg));
  }
}

absl::StatusOr<ConfigNode> ParseJsonDocument(std::string_view json) {
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(json.data(), json.size());
  simdjson::dom::element root;
  if (const simdjson::error_code error = parser.parse(padded).get(root); error) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid JSON: ", std::string(simdjson::error_message(error))));
  }
  ConfigNode out;
  if (absl::Status s = JsonConverter().Convert(root, 0, &out); !s.ok()) return s;
  return out;
}

}  // namespace warmroute::gateway
