// warmroute: one binary, one subcommand per tool (docs/architecture.md): `engine` (the vLLM
// emulator), `serve` (the gateway), `sim` (the fleet simulator), `analyze` (prefix sharing and
// prompt hygiene of a request file), `bench` (the load generator) and `demo`; `warmroute --version` names the version and the commit it was built from.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include "cli/build_info.h"
#include "cli/commands.h"

int main(int argc, char** argv) {
  // Logs go to stderr: stdout carries each command's machine-readable output (listening lines,
  // tables, JSON).
  spdlog::set_default_logger(spdlog::stderr_color_mt("warmroute"));
  CLI::App app{"warmroute: a prefix-aware router for LLM inference fleets"};
  app.set_version_flag("--version", warmroute::cli::VersionLine());
  app.require_subcommand(1);
  int exit_code = 0;
  warmroute::cli::AddEngineCommand(app, &exit_code);
  warmroute::cli::AddSimCommand(app, &exit_code);
  warmroute::cli::AddAnalyzeCommand(app, &exit_code);
  warmroute::cli::AddServeCommand(app, &exit_code);
  warmroute::cli::AddBenchCommand(app, &exit_code);
  warmroute::cli::AddDemoCommand(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every malformed command line exits 2 (a usage error).
    return app.exit(e) == 0 ? 0 : 2;
  }
  return exit_code;
}
