// Checks and wording shared by every `portico` subcommand, so that a usage error reads the same
// wherever it happens and always exits 2 (docs/cli.md, "Exit codes").
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace portico::app {

/// A whole number from `lo` to `hi` (inclusive). The error names the range as people write it:
/// "'abc' is not a whole number (expected 1 to 100000)", "0 is out of range (expected 1 to
/// 100000)"; with `hi` = UINT64_MAX "(expected 1 or more)".
CLI::Validator wholeNumber(std::uint64_t lo, std::uint64_t hi = UINT64_MAX);

/// A number (decimals allowed) from `lo` to `hi`, printed without trailing zeros
/// ("expected 0.001 to 100000000").
CLI::Validator number(double lo, double hi);

/// An existing file (not a folder). The one wording for every missing input file:
/// "PATH: no such file" (a folder: "PATH: is a folder, not a file").
CLI::Validator existingFile();

/// An existing folder: "PATH: no such folder" / "PATH: is a file, not a folder".
CLI::Validator existingFolder();

/// A client network as `forward_proxy.allow` takes it ("192.168.1.0/24", "10.1.2.3", "fd00::/8";
/// config::parseNetwork's error otherwise).
CLI::Validator clientNetwork();

/// A `hosts:` entry as NAME=ADDR ("api.example.test=127.0.0.1", "*.dev.test=::1"): the error
/// names what is wrong, and says so for curl's --resolve form (NAME:PORT:ADDR).
CLI::Validator hostMapping();

/// Splits a value hostMapping() accepted into the lower-case name and the address (no brackets).
std::pair<std::string, std::string> splitHostMapping(const std::string& text);

/// The command line names a subcommand that does not exist (`portico frobnicate`,
/// `portico cert bogus`) or stops where one is required (`portico cert`): the message
/// ("portico cert: unknown subcommand 'bogus'; one of: ca, export, install, uninstall" and a
/// line naming `portico help cert`), else "".
/// Words after the first option are not looked at.
std::string subcommandProblem(CLI::App& app, int argc, char** argv);

/// The subcommand a `portico help WORDS...` topic names (`help har export`), or nullptr with
/// `error` set ("portico help: unknown subcommand 'x'; one of: ...").
CLI::App* helpTopic(CLI::App& app, const std::vector<std::string>& words, std::string& error);

/// What to say when `--filter EXPR` chose none of the `recorded` exchanges of `file`:
/// "no exchange in FILE matches --filter 'EXPR' (N recorded)" ("FILE holds no exchanges" when
/// there were none to choose from).
std::string nothingMatches(const std::string& file, const std::string& filter, std::size_t recorded);

/// CLI11's failure message for every parse error: "portico: MESSAGE" and where to read more.
std::string failureMessage(const CLI::App* app, const CLI::Error& e);

} // namespace portico::app
