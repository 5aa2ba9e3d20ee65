// The subcommands of the `warmroute` binary. Each Add*Command registers one CLI11 subcommand
// whose callback runs the command and stores its process exit code in *exit_code.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace warmroute::cli {

// `warmroute engine`: the vLLM-compatible engine emulator (src/emulator).
void AddEngineCommand(CLI::App& app, int* exit_code);

// `warmroute sim`: routing policies side by side on a simulated fleet (src/sim).
void AddSimCommand(CLI::App& app, int* exit_code);

// `warmroute serve`: the gateway (src/router).
void AddServeCommand(CLI::App& app, int* exit_code);

// `warmroute analyze`: prefix sharing and prompt hygiene of a request file (src/analyze).
void AddAnalyzeCommand(CLI::App& app, int* exit_code);

// `warmroute bench`: load generator and trace replayer against an OpenAI endpoint (src/loadgen).
void AddBenchCommand(CLI::App& app, int* exit_code);

// `warmroute demo`: the routing policies side by side on a live emulated fleet (engine, gateway
// and load generator; the children are this binary).
void AddDemoCommand(CLI::App& app, int* exit_code);

// The --log-level option of a long-running command: one of spdlog's level names, checked when
// the command line is parsed (spdlog itself reads an unknown name as "off").
CLI::Option* AddLogLevelOption(CLI::App& command, std::string& level);

}  // namespace warmroute::cli
