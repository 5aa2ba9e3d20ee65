// The schema walker shared by every config section (config.cc, tenancy_config.cc): each section
// is read from a ConfigNode map by a MapReader, which records the keys asked for so that any
// other key is reported as unknown. Every value goes through one of the typed readers below,
// which leave the default in place when the key is absent (or null).
//
// Errors are InvalidArgument "<path>: <message> (line N)" with the key path attached as the
// status's param (common/status.h).
//
// Usage:
//   WR_RETURN_IF_ERROR(MapReader::CheckMap(node, "listen"));
//   MapReader map(node, "listen");
//   WR_RETURN_IF_ERROR(ReadSmallInt(map.Get("port"), map.PathOf("port"), 0, 65535, &port));
//   WR_RETURN_IF_ERROR(map.CheckNoUnknownKeys());
//
// Thread-safety: pure functions; a MapReader belongs to one parse.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "common/status.h"
#include "gateway/config/config_document.h"

namespace warmroute::gateway {

// "got" part of a message: strings quoted, other scalars as written, containers by type.
std::string Describe(const ConfigNode& node);

// InvalidArgument "<path>: <message> (line N)", with `path` attached as the offending param.
absl::Status KeyError(std::string_view path, const ConfigNode* node, std::string_view message);

// KeyError "expected <expected>, got <Describe(node)>".
absl::Status WrongType(std::string_view path, const ConfigNode& node, std::string_view expected);

// The message for `value` outside [min, max].
std::string RangeMessage(int64_t value, int64_t min, int64_t max);

// An integer in [min, max] (an integral float such as 8080.0 counts as an integer).
absl::Status ReadInt(const ConfigNode* node, std::string_view path, int64_t min, int64_t max,
                     int64_t* out);

template <typename T>
absl::Status ReadSmallInt(const ConfigNode* node, std::string_view path, int64_t min, int64_t max,
                          T* out) {
  int64_t value = static_cast<int64_t>(*out);
  WR_RETURN_IF_ERROR(ReadInt(node, path, min, max, &value));
  *out = static_cast<T>(value);
  return absl::OkStatus();
}

// Milliseconds in [min_ms, one day].
absl::Status ReadMillis(const ConfigNode* node, std::string_view path, int64_t min_ms,
                        std::chrono::milliseconds* out);

absl::Status ReadBool(const ConfigNode* node, std::string_view path, bool* out);

// A string; an unquoted YAML scalar counts as its text (`name: 123` is "123").
absl::Status ReadString(const ConfigNode* node, std::string_view path, std::string* out);

absl::Status ReadNonEmptyString(const ConfigNode* node, std::string_view path, std::string* out);

// A finite number.
absl::Status ReadDouble(const ConfigNode* node, std::string_view path, double* out);

// A printable ASCII word (no spaces or control characters): names and tokens that go into HTTP
// headers, metric labels and logs.
absl::Status CheckToken(const ConfigNode* node, std::string_view path, std::string_view value);

// A list of non-empty strings ("<path>[i]" in messages), appended to `out`.
absl::Status ReadStringList(const ConfigNode* node, std::string_view path,
                            std::vector<std::string>* out);

class MapReader;

// Reads list `key` of maps: read(i, map, item) for each item, `map` reading item i with the path
// "<key>[i]". WrongType for a value that is not a list, CheckMap's error for an item that is not a
// map; the first error of `read` as it is.
template <typename Read>
absl::Status ReadMapList(const ConfigNode& list, std::string_view key, Read&& read);

// Reads the entries of one map. REQUIRES: CheckMap(node) succeeded.
class MapReader {
 public:
  // `path`: the map's own key path ("" for the document root).
  MapReader(const ConfigNode& node, std::string path) : node_(node), path_(std::move(path)) {}

  // Verifies that `node` is a map without duplicate keys.
  static absl::Status CheckMap(const ConfigNode& node, std::string_view path);

  // The value of `key`, or nullptr when absent or null. Marks `key` as known.
  const ConfigNode* Get(std::string_view key);

  std::string PathOf(std::string_view key) const { return Join(path_, key); }

  // InvalidArgument for the first key no Get asked for, listing the known ones.
  absl::Status CheckNoUnknownKeys() const;

 private:
  static std::string Join(std::string_view path, std::string_view key);

  const ConfigNode& node_;
  std::string path_;
  std::vector<std::string> known_;
};

template <typename Read>
absl::Status ReadMapList(const ConfigNode& list, std::string_view key, Read&& read) {
  if (list.type != ConfigNode::Type::kList) return WrongType(key, list, "a list");
  for (size_t i = 0; i < list.items.size(); ++i) {
    const ConfigNode& item = list.items[i];
    std::string path(key);
    path.append("[").append(std::to_string(i)).append("]");
    WR_RETURN_IF_ERROR(MapReader::CheckMap(item, path));
    MapReader map(item, std::move(path));
    WR_RETURN_IF_ERROR(read(i, map, item));
  }
  return absl::OkStatus();
}

}  // namespace warmroute::gateway
