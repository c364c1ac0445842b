// The YAML reader: text → Config plus a SourceMap, with reading errors only (syntax, unknown keys,
// wrong types, bad sizes, durations and enums). Checks that need other modules or the file system
// (route patterns, regexes, certificates, roots) are validate's (portico/validate/validate.h).
#pragma once

#include <portico/config/config.h>

#include <functional>
#include <map>
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

/// Where each value of a read config came from. Paths are written as in error messages:
/// "listen[0]", "vhosts[1].routes[3].path", "vhosts[0].routes[1].group.routes[0].respond.body".
/// A config built in code has an empty map; lookups then give a Location with line 0.
struct SourceMap {
    /// Where a flattened route came from (groups are flattened into their vhost's routes).
    struct RouteSource {
        std::string path;     ///< "vhosts[0].routes[1].group.routes[0]"
        std::string matchKey; ///< "path" or "location": the key holding the route's match
    };

    std::string file;                                    ///< as given to the reader
    std::map<std::string, Location, std::less<>> values; ///< path → where its value starts
    std::vector<std::string> listen;                     ///< Config::listen[i] → its path
    std::vector<std::vector<RouteSource>> routes;        ///< [vhost][route] → where it came from

    /// Where the value at `path` starts; {file, 0, 0} when the map does not know it.
    Location at(std::string_view path) const;
    /// The path of Config::vhosts[vhost].routes[route]: its source when known, else
    /// "vhosts[V].routes[R]".
    std::string routePath(std::size_t vhost, std::size_t route) const;
    /// The path of that route's match value ("….path" or "….location").
    std::string matchPath(std::size_t vhost, std::size_t route) const;
};

/// What the reader gives back: the config as read (relative paths made absolute against the base
/// directory, nothing checked on disk), where each value came from, and the reading errors sorted
/// by line and column. With errors the config is partial: values that did not read keep defaults.
struct ReadResult {
    std::shared_ptr<Config> config; ///< never null
    SourceMap map;
    std::vector<ConfigError> errors;
    bool ok() const { return errors.empty(); }
};

/// Reads YAML `text` as if from `fileName`; relative paths resolve against `baseDir` ("" = the
/// current directory). `sourcePath` is stored as Config::sourcePath.
ReadResult readConfigText(std::string_view text, const std::string& fileName, const std::string& baseDir,
                          const std::string& sourcePath);

/// The config `portico serve DIR` uses without a file: one listener, one default vhost serving
/// `dir` (index.html, directory listing on, live reload on).
std::shared_ptr<const Config> configForDirectory(const std::string& dir, const std::string& host,
                                                 std::uint16_t port);

/// Parses "16KiB", "10MiB", "512", "1GiB", "100KB" (decimal) into bytes; false on bad syntax.
bool parseSize(std::string_view text, std::uint64_t& bytes);
/// Parses "250ms", "10s", "2m", "1h", "500us" into nanoseconds; false on bad syntax.
bool parseDuration(std::string_view text, Duration& out);

} // namespace portico::config
