// Loading a config file or text: read (config/reader.h), then validate (validate/validate.h).
#pragma once

#include <portico/config/config.h>
#include <portico/config/reader.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

// In portico::config, where callers have always found them; they live above config because
// validating calls routing, tls and capture.
namespace portico::config {

/// Result of loading: a config, or every error found (never both).
struct LoadResult {
    std::shared_ptr<const Config> config;
    std::vector<ConfigError> errors;
    bool ok() const { return config != nullptr; }
};

/// Parses and validates YAML `text` as if read from `fileName`; relative paths resolve against
/// `baseDir`. Refuses the whole config if anything is wrong, reporting all errors it can find, reading
/// and validation errors together sorted by line and column (unknown keys, wrong types, bad
/// sizes/durations, bad route patterns and regexes, missing roots).
LoadResult loadConfigText(std::string_view text, const std::string& fileName, const std::string& baseDir);

/// Reads and loads a file; an unreadable file is one error at line 0.
LoadResult loadConfigFile(const std::string& path);

} // namespace portico::config
