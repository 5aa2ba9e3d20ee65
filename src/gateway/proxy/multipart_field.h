// A form field of a multipart/form-data body (RFC 7578), found in the body's beginning: how the
// gateway learns the `model` of an audio upload that it streams to the engine without holding it
// whole (routes.h).
//
//   --BOUNDARY\r\n
//   Content-Disposition: form-data; name="model"\r\n
//   \r\n
//   whisper-large-v3\r\n
//   --BOUNDARY\r\n
//   Content-Disposition: form-data; name="file"; filename="a.mp3"\r\n
//   ...
//
// Usage:
//   absl::StatusOr<std::string> boundary = MultipartBoundary(request.Header("content-type"));
//   FormFieldSearch found = FindFormField(prefix_so_far, *boundary, "model");
//   if (found.state == FormFieldSearch::kFound) ... found.value ...
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace warmroute::gateway {

// The boundary of a `multipart/form-data; boundary=...` Content-Type (quoted or not).
// InvalidArgument for another content type or a missing or malformed boundary.
absl::StatusOr<std::string> MultipartBoundary(std::string_view content_type);

struct FormFieldSearch {
  enum State {
    kFound,     // `value` is the field's
    kMissing,   // the body ended (its closing delimiter is in the prefix) without the field
    kNeedMore,  // not in the prefix given: it may come later
  };
  State state = kNeedMore;
  std::string value;
};

// Looks for the form field `name` in `prefix`, the beginning of a multipart body with
// `boundary`. A field found is complete (its closing delimiter is in the prefix).
FormFieldSearch FindFormField(std::string_view prefix, std::string_view boundary,
                              std::string_view name);

}  // namespace warmroute::gateway
