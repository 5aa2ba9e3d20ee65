#include "gateway/config/normalize_config.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace warmroute::gateway {
namespace {

using Type = ConfigNode::Type;

absl::Status ReadPattern(const ConfigNode& node, const std::string& path,
                         std::vector<MoveToEndPattern>* out) {
  MoveToEndPattern pattern;
  WR_RETURN_IF_ERROR(ReadNonEmptyString(&node, path, &pattern.text));
  absl::StatusOr<std::unique_ptr<tokenize::Regex>> regex = tokenize::Regex::Compile(pattern.text);
  if (!regex.ok()) {
    return KeyError(path, &node,
                    absl::StrCat("not a valid regular expression: ", regex.status().message(),
                                 ", got ", Describe(node)));
  }
  pattern.regex = std::shared_ptr<const tokenize::Regex>(std::move(*regex));
  out->push_back(std::move(pattern));
  return absl::OkStatus();
}

absl::Status ReadPatterns(const ConfigNode* node, const std::string& path,
                          std::vector<MoveToEndPattern>* out) {
  if (node == nullptr) return absl::OkStatus();
  if (node->type != Type::kList) return ReadPattern(*node, path, out);
  for (size_t i = 0; i < node->items.size(); ++i) {
    WR_RETURN_IF_ERROR(ReadPattern(node->items[i], absl::StrCat(path, "[", i, "]"), out));
  }
  return absl::OkStatus();
}

// An optional non-empty string.
absl::Status ReadName(MapReader& map, std::string_view key, std::string* out) {
  const ConfigNode* node = map.Get(key);
  if (node == nullptr) return absl::OkStatus();
  return ReadNonEmptyString(node, map.PathOf(key), out);
}

}  // namespace

absl::Status ParseNormalize(MapReader& root, NormalizeConfig* out) {
  const ConfigNode* node = root.Get("normalize");
  if (node == nullptr) return absl::OkStatus();
  return ReadMapList(*node, "normalize", [out](size_t i, MapReader& map, const ConfigNode& item) {
    NormalizeEntry entry;
    WR_RETURN_IF_ERROR(ReadName(map, "tenant", &entry.tenant));
    WR_RETURN_IF_ERROR(ReadName(map, "model", &entry.model));
    WR_RETURN_IF_ERROR(ReadBool(map.Get("collapse_whitespace"), map.PathOf("collapse_whitespace"),
                                &entry.collapse_whitespace));
    WR_RETURN_IF_ERROR(ReadBool(map.Get("canonical_tools"), map.PathOf("canonical_tools"),
                                &entry.canonical_tools));
    WR_RETURN_IF_ERROR(
        ReadPatterns(map.Get("move_to_end"), map.PathOf("move_to_end"), &entry.move_to_end));
    WR_RETURN_IF_ERROR(map.CheckNoUnknownKeys());
    if (!entry.collapse_whitespace && !entry.canonical_tools && entry.move_to_end.empty()) {
      return KeyError(absl::StrCat("normalize[", i, "]"), &item,
                      "enables no rule (set collapse_whitespace, canonical_tools or move_to_end)");
    }
    out->entries.push_back(std::move(entry));
    return absl::OkStatus();
  });
}

absl::Status ValidateNormalizeTenants(const NormalizeConfig& config, const TenancyConfig& tenancy) {
  for (size_t i = 0; i < config.entries.size(); ++i) {
    const std::string& name = config.entries[i].tenant;
    if (name.empty()) continue;
    bool found = false;
    for (const TenantConfig& t : tenancy.tenants) found = found || t.name == name;
    if (!found) {
      return KeyError(absl::StrCat("normalize[", i, "].tenant"), nullptr,
                      absl::StrCat("no tenant named '", name, "' in tenants"));
    }
  }
  return absl::OkStatus();
}

void WriteNormalizeConfig(const NormalizeConfig& config, JsonWriter& w) {
  if (!config.enabled()) return;
  w.Key("normalize").BeginArray();
  for (const NormalizeEntry& e : config.entries) {
    w.BeginObject();
    if (!e.tenant.empty()) w.Key("tenant").String(e.tenant);
    if (!e.model.empty()) w.Key("model").String(e.model);
    w.Key("collapse_whitespace").Bool(e.collapse_whitespace);
    w.Key("canonical_tools").Bool(e.canonical_tools);
    w.Key("move_to_end").BeginArray();
    for (const MoveToEndPattern& p : e.move_to_end) w.String(p.text);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
}

}  // namespace warmroute::gateway
