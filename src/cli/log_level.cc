// The --log-level option shared by the long-running commands (commands.h).
#include <string>

#include "cli/commands.h"

namespace warmroute::cli {

CLI::Option* AddLogLevelOption(CLI::App& command, std::string& level) {
  return command.add_option("--log-level", level, "trace, debug, info, warn, error, critical, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
}

}  // namespace warmroute::cli
