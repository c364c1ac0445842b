// YAML config loading with located errors (yaml-cpp), and the no-config "serve a folder" config.
#pragma once

#include <portico/config/config.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace portico::config {

/// One problem in a config file: "file:line:column: path: message".
struct ConfigError {
    Location where;
    std::string path; ///< e.g. "vhosts[1].routes[3].path"
    std::string message;
    /// The "file:line:column: path: message" form.
    std::string toString() const;
};

/// Result of loading: a config, or every error found (never both).
struct LoadResult {
    std::shared_ptr<const Config> config;
    std::vector<ConfigError> errors;
    bool ok() const { return config != nullptr; }
};

/// Parses and validates YAML `text` as if read from `fileName`; relative paths resolve against
/// `baseDir`. Refuses the whole config if anything is wrong, reporting all errors it can find
/// (unknown keys, wrong types, bad sizes/durations, bad route patterns and regexes, missing roots).
LoadResult loadConfigText(std::string_view text, const std::string& fileName, const std::string& baseDir);

/// Reads and loads a file; an unreadable file is one error at line 0.
LoadResult loadConfigFile(const std::string& path);

/// The config `portico serve DIR` uses without a file: one listener, one default vhost serving
/// `dir` (index.html, directory listing on, live reload on).
std::shared_ptr<const Config> configForDirectory(const std::string& dir, const std::string& host,
                                                 std::uint16_t port);

/// Parses "16KiB", "10MiB", "512", "1GiB", "100KB" (decimal) into bytes; false on bad syntax.
bool parseSize(std::string_view text, std::uint64_t& bytes);
/// Parses "250ms", "10s", "2m", "1h", "500us" into nanoseconds; false on bad syntax.
bool parseDuration(std::string_view text, Duration& out);

} // namespace portico::config
