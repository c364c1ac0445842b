// A benchmark suite written by the user (`portico bench --suite-file FILE.yaml`): its routes, the
// thresholds each is judged by and the load options it asks for, read from YAML with every error
// located. resources/bench-suite/suite.yaml is the built-in suite (suiteRoutes()) written this way.
#pragma once

#include <portico/config/reader.h>
#include <portico/load/options.h>
#include <portico/load/suite.h>
#include <portico/load/thresholds.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace portico::load {

/// One route of a suite file and the thresholds written under it.
struct SuiteFileRoute {
    SuiteRoute route;                  ///< name, description, target (`path:`), method, headers, body
    std::vector<Threshold> thresholds; ///< this route's own `thresholds:`, in file order
    int line = 0;                      ///< 1-based line where the route's map starts
};

/// A read suite file. The optional load options are those the file sets; the command line wins
/// over each (see applySuiteFile).
struct SuiteFile {
    std::string file; ///< the name it was read as (in messages)
    std::string base; ///< `base:`, an origin "http[s]://HOST[:PORT]"; "" if absent
    std::optional<std::chrono::nanoseconds> duration; ///< `duration:` per route, > 0
    std::optional<unsigned> connections;              ///< `connections:`, 1..100000 (as -c)
    std::optional<unsigned> threads;                  ///< `threads:`, 1..256 (as -t)
    std::optional<unsigned> pipeline;                 ///< `pipeline:`, 1..1024 (as -p, HTTP/1.1 only)
    std::vector<Threshold> thresholds;                ///< `thresholds:` judged on every route
    std::vector<SuiteFileRoute> routes;               ///< in file order, at least one, names unique

    /// The routes as runSuite takes them, in file order.
    std::vector<SuiteRoute> suiteRoutes() const;
};

/// The keys a suite file takes: at the top, and in each item of `routes:`.
/// Top: `base`, `duration`, `connections`, `threads`, `pipeline`, `thresholds`, `routes` (required).
/// Route: `name` (required, unique, no control characters), `path` (required: path and query
/// starting with "/", no spaces or control characters), `method` (an RFC 9110 token, default GET),
/// `headers` (a map of field name → value), `body`, `description`, `thresholds`.
/// `thresholds` is a list of expressions in parseThreshold's grammar (or one expression).
///
/// Parses `text` as the suite file `fileName` into `out`. Every problem is appended to `errors`
/// ("FILE:LINE:COLUMN: PATH: message", ConfigError::toString, sorted by position): YAML syntax,
/// more than one document, a top level that is not a map, an unknown key (with "did you mean" when
/// one key is within two edits), a duplicate key, a wrong type ("expected a list, got a map"), a
/// number out of range, a duration without a unit or not above 0, a base URL that is not an origin,
/// a threshold that does not parse (parseThreshold's message), no `routes:` or an empty list, a
/// route without `name` or `path`, a duplicate route name, a bad path, method or field. Returns true
/// when there was none; `out` is then complete (on false it holds what did read). Never throws.
bool parseSuiteFile(std::string_view text, const std::string& fileName, SuiteFile& out,
                    std::vector<config::ConfigError>& errors);

/// Reads the file at `path` and parses it (named by `path` as given). A file that cannot be read is
/// one error without a position: "FILE: cannot read (No such file or directory)". Files over 16 MiB
/// are refused the same way.
bool readSuiteFile(const std::filesystem::path& path, SuiteFile& out,
                   std::vector<config::ConfigError>& errors);

/// Which load options the command line set: those win over the file's.
struct SuiteFileOverrides {
    std::string baseUrl;      ///< the BASE_URL argument; "" when not given
    bool bounds = false;      ///< -d or -n was given (then the file's `duration` is not used)
    bool connections = false; ///< -c
    bool threads = false;     ///< -t
    bool pipeline = false;    ///< -p
};

/// Fills `options` (already holding the command line's values and defaults) from `file` where the
/// command line did not set them, and sets `baseUrl` to the command line's, else the file's `base`,
/// else kSuiteDefaultUrl. Without -d, -n or a file `duration`, each route runs 3 s (`duration` set,
/// `count` 0). False with `error` set when the file's `pipeline` (above 1) meets HTTP/2 options.
bool applySuiteFile(const SuiteFile& file, const SuiteFileOverrides& given, Options& options,
                    std::string& baseUrl, std::string& error);

/// Judges each run of `suite` by `extra` (the command line's --threshold), then the file's
/// `thresholds`, then its route's (matched by name; an expression already judged on that route is
/// not judged again) and stores the outcomes in the run's `result.thresholds` (judgeAll). Returns
/// true when every run met all of them (also when there are none).
bool judgeSuiteFile(const SuiteFile& file, const std::vector<Threshold>& extra, SuiteResult& suite);

} // namespace portico::load
