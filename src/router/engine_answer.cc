#include "router/engine_answer.h"

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"

namespace warmroute::router {

HeadVerdict JudgeStatus(int status) {
  if (status >= 200 && status < 500) return HeadVerdict::kRelay;
  if (status >= 500 && status < 600) return HeadVerdict::kFailed;
  return HeadVerdict::kInvalid;
}

bool IsEventStream(std::string_view content_type) {
  return content_type.substr(0, 17) == "text/event-stream";
}

std::string InvalidStatusMessage(std::string_view backend, int status) {
  if (status == 101) {
    return absl::StrCat("backend ", AbslView(backend),
                        " answered 101 Switching Protocols to a request that asked for no upgrade");
  }
  return absl::StrCat("backend ", AbslView(backend), " answered with the invalid HTTP status ", status);
}

}  // namespace warmroute::router
