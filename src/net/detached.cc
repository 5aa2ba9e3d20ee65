#include "net/detached.h"

#include <spdlog/spdlog.h>

namespace warmroute::net {

void LogIfDetachedFailed(std::string_view what, std::exception_ptr e) {
  if (!e) return;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    spdlog::error("{} failed: {}", what, ex.what());
  } catch (...) {
    spdlog::error("{} failed with a non-standard exception", what);
  }
}

}  // namespace warmroute::net
