// The benchmark suite: eleven routes of the `bench-suite` demo vhost
// (resources/bench-suite/portico.yaml), run one after another with the same load options. The routes,
// results and their table and JSON; running the suite is load::runSuite (runner.h), which opens
// sockets, or engine::runLoadSuite (engine/jobs.h) in the desktop app.
#pragma once

#include <portico/load/options.h>
#include <portico/load/result.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace portico::load {

/// One route of the suite.
struct SuiteRoute {
    std::string name;        ///< short key, e.g. "plaintext", "path-param"; unique
    std::string description; ///< what it exercises, one line
    std::string target;      ///< path and query sent, e.g. "/users/42"
    std::string method = "GET";
    std::vector<std::pair<std::string, std::string>> headers; ///< extra request fields
    std::string body;                                         ///< request content, bytes
};

/// The eleven routes, in run order: plaintext, json, cached, file, path-param, query, compute,
/// headers, static, root, post-echo. Their answers come from resources/bench-suite/portico.yaml.
const std::vector<SuiteRoute>& suiteRoutes();

/// One route's run.
struct SuiteRun {
    SuiteRoute route;
    Result result;
    /// Completed requests whose status was not 2xx/3xx plus failed requests: a route that answers
    /// 404 is fast but not measured, so the table shows it.
    std::uint64_t bad() const;
};

/// A whole suite run.
struct SuiteResult {
    /// Non-empty when the suite could not run (bad base URL, or the first route's setup error, e.g.
    /// "cannot connect to 127.0.0.1:8090: Connection refused"); `runs` then holds what ran.
    std::string error;
    std::string baseUrl; ///< origin the routes were sent to, "http://127.0.0.1:8090"
    std::vector<SuiteRun> runs;
    bool ok() const { return error.empty(); }
    /// Geometric mean of the routes' requests per second (0 if a route completed nothing or none ran).
    double geometricMean() const;
};

/// Default base URL of the suite vhost (its config listens there).
inline constexpr const char* kSuiteDefaultUrl = "http://127.0.0.1:8090";

/// The table: one line per route (name, req/s, p50, p99, non-2xx/3xx + failed), then the geometric
/// mean of req/s.
std::string suiteTable(const SuiteResult& suite);

/// The suite as JSON (schema in docs/load-results.md, "kind": "suite"): base URL, geometric mean and
/// per route its name, target, method and the route's full result object (as `toJson`).
std::string suiteToJson(const SuiteResult& suite);

} // namespace portico::load
