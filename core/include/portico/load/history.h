// Run history: load runs and suite runs saved as JSON files in a folder, listed and compared.
// The CLI (`portico bench --history`, `--compare A B`) and the GUI use this API.
#pragma once

#include <portico/load/result.h>
#include <portico/load/suite.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace portico::load {

/// A saved run as read back from its file (the figures compared; the file holds the whole result).
struct RunRecord {
    std::string id; ///< file name without ".json": "20261130-234512-plaintext" (UTC time, label slug)
    std::filesystem::path file; ///< the JSON file
    std::string kind;           ///< "run" (one load run, docs/load-results.md) or "suite" (a suite run)
    std::string label;          ///< given at save time, or derived: the first URL's path, or "suite"
    std::string savedAt;        ///< ISO 8601 UTC, "2026-11-30T23:45:12Z"
    std::string target;         ///< first URL of a run, base URL of a suite
    std::string protocol;       ///< "http/1.1" or "h2"
    std::string model;          ///< "closed" or "open"
    double rate = 0;            ///< open model: arrival rate, requests/s (0 in the closed model)
    unsigned connections = 0;
    unsigned threads = 0;
    double durationSeconds = 0;   ///< measured time (suite: sum over routes)
    double requestsPerSecond = 0; ///< suite: geometric mean over its routes
    std::uint64_t completed = 0;  ///< measured requests (suite: sum over routes)
    std::uint64_t failed = 0;
    std::uint64_t cancelled = 0;
    /// Run only: latency percentiles in nanoseconds, keyed "50", "75", "90", "99", "99.9", "99.99",
    /// "100" (max), in that order, as in the result JSON.
    std::vector<std::pair<std::string, std::uint64_t>> percentiles;
    /// Suite only: per route, in run order.
    struct Route {
        std::string name;
        double requestsPerSecond = 0;
        std::uint64_t p50 = 0, p99 = 0; ///< ns
    };
    std::vector<Route> routes;
};

/// `tls::defaultDataDir() / "bench-history"` ($PORTICO_DATA_DIR, else $XDG_DATA_HOME/portico, else
/// ~/.local/share/portico). Not created here.
std::filesystem::path defaultHistoryDir();

/// Saves `result` (which must be ok()) as `dir/ID.json`: its `toJson` object with "savedAt" and
/// "label" added. Creates `dir` (mode 0700 for new folders) if needed; the file is written to a
/// temporary name and renamed, so a listing never sees half a file. IDs are unique in `dir` (a
/// "-2", "-3" ... suffix when two saves share a second and label). `label`: free text; empty =
/// derived. On success fills `*saved` (if given) as `listRuns` would read it. False with `error`
/// ("PATH: reason") otherwise.
bool saveRun(const Result& result, const std::filesystem::path& dir, const std::string& label,
             RunRecord* saved, std::string& error);
/// The same for a suite run (its `suiteToJson` object, "kind": "suite").
bool saveSuite(const SuiteResult& suite, const std::filesystem::path& dir, const std::string& label,
               RunRecord* saved, std::string& error);

/// Every `*.json` run in `dir`, oldest first (by ID, which starts with the save time). A missing
/// folder is an empty history. Files that cannot be read or are not runs are skipped and named in
/// `error` ("PATH: reason; ..."), which is empty when all were read.
std::vector<RunRecord> listRuns(const std::filesystem::path& dir, std::string& error);

/// A `*.json` file of the history folder that could not be read as a run.
struct UnreadableRun {
    std::filesystem::path file;
    std::string
        reason; ///< without the path: "not a saved run (yaml-cpp's message)", "a run that did not take place"
};

/// A whole history folder: the runs, oldest first, and every file that is not a readable run.
struct HistoryListing {
    std::vector<RunRecord> runs;
    std::vector<UnreadableRun> unreadable; ///< in file-name order
    std::string error;                     ///< the folder itself cannot be read ("PATH: reason"); else empty
};

/// Reads every `*.json` in `dir` (hidden files, e.g. a save's temporary file, are skipped); a missing
/// folder is an empty listing. Never throws: each file's problem is reported in `unreadable`.
HistoryListing scanHistory(const std::filesystem::path& dir);

/// The latency histogram of a saved run file (or a `toJson` result file): its `latency.buckets`,
/// ascending, nanoseconds (a run that completed nothing has none: true with `out` empty). False with
/// `error` ("PATH: reason") when the file cannot be read or parsed, is a suite ("a suite has no
/// single latency distribution"), a run that did not take place, or a bucket is malformed.
bool loadLatencyBuckets(const std::filesystem::path& file, std::vector<stats::Histogram::Bucket>& out,
                        std::string& error);

/// Finds one run: `ref` is a path to a JSON file, an ID, a unique ID prefix, a 1-based index (up to 6 digits)
/// into `listRuns` (as `portico bench --history` numbers them), or "last". False with `error` when nothing or
/// more than one run matches, or the file cannot be read.
bool findRun(const std::filesystem::path& dir, const std::string& ref, RunRecord& out, std::string& error);

/// Reads one saved run file.
bool loadRun(const std::filesystem::path& file, RunRecord& out, std::string& error);

/// Two runs side by side: B relative to A.
struct Comparison {
    struct Row {
        std::string metric; ///< "req/s", "p50", ..., "failed", "plaintext req/s"
        std::string unit;   ///< "req/s", "ns" or "requests"
        double a = 0, b = 0;
        double ratio = 0;           ///< b / a; 0 when a is 0
        bool higherIsBetter = true; ///< req/s: yes; latencies and failures: no
    };
    RunRecord a, b;
    std::vector<Row> rows;
};

/// Rows: req/s, then for two runs the percentiles p50, p90, p99, p99.9, max and failed; for two
/// suites each route's req/s (routes present in both) and then p99 per route. A run compared with a
/// suite gets only req/s and failed.
Comparison compareRuns(const RunRecord& a, const RunRecord& b);

/// `portico bench --history`: one numbered line per run (ID, kind, label, target, protocol, req/s).
std::string historyText(const std::vector<RunRecord>& runs);
/// `portico bench --compare`: both runs' headers, then metric, A, B, B/A and whether B is better.
std::string comparisonText(const Comparison& comparison);

} // namespace portico::load
