// Subcommands of the `portico` executable. Each family lives in its own file and registers itself
// on the CLI11 app; `run` is set to the function main() calls when that subcommand was parsed.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace portico::app {

// Exit codes (docs/cli.md): 0 ok, 1 bad config or runtime failure, 2 bad command line, 3 a load
// run that took place but breached a threshold (`portico bench --threshold`).
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
constexpr int kExitThreshold = 3;

/// A registered subcommand: main() runs `run` when `cmd->parsed()`.
struct Command {
    CLI::App* cmd = nullptr;
    std::function<int()> run;
};

/// `portico cert ca|export|install|uninstall` (app/cert_command.cpp).
Command addCertCommand(CLI::App& app);
/// `portico bench URL...`: the load generator (app/bench_command.cpp, docs/cli.md).
Command addBenchCommand(CLI::App& app);
/// `portico har export FILE.db OUT.har` / `portico har import IN.har FILE.db` (app/har_command.cpp).
Command addHarCommand(CLI::App& app);
/// `portico replay FILE.db|IN.har --target URL [--filter EXPR]` (app/replay_command.cpp).
Command addReplayCommand(CLI::App& app);

} // namespace portico::app
