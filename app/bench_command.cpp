// `portico bench`: the load generator on the command line (wrk-like summary, optional JSON result).
#include "cli_checks.h"
#include "commands.h"

#include <portico/capture/filter.h>
#include <portico/capture/session_file.h>
#include <portico/load/from_capture.h>
#include <portico/load/hdr_output.h>
#include <portico/load/history.h>
#include <portico/load/merge.h>
#include <portico/load/report.h>
#include <portico/load/runner.h>
#include <portico/load/suite.h>
#include <portico/load/suite_file.h>
#include <portico/load/thresholds.h>
#include <portico/validate/load.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <strings.h>
#include <thread>
#include <unistd.h>

namespace portico::app {

namespace {

struct BenchOptions {
    std::vector<std::string> urls;
    std::vector<unsigned> weights;
    unsigned connections = 10;
    unsigned threads = 1;
    std::string duration;
    std::uint64_t count = 0;
    double rate = 0;
    unsigned pipeline = 1;
    bool h2 = false;
    unsigned streams = 0;
    std::vector<std::string> headers;
    std::string method = "GET";
    std::string bodyFile;
    std::string jsonFile;
    std::string warmup;
    std::string timeout = "10s";
    bool allowRemote = false;
    bool insecure = false;
    std::string caFile;
    bool suite = false;
    std::string suiteFile; // --suite-file FILE.yaml
    bool history = false;
    std::vector<std::string> compare;
    bool noSave = false;
    std::string label;
    std::string from;                    // --from FILE.db|IN.har: replay a recorded set as load
    std::string filter;                  // --filter EXPR with --from
    std::vector<std::string> thresholds; // --threshold EXPR (repeatable)
    std::string hgrmFile;                // --hgrm FILE
    std::string hdrLogFile;              // --hdr-log FILE
    std::string reportFile;              // --report FILE.html
    std::vector<std::string> merge;      // --merge A.json B.json ...
    std::string startAt;                 // --start-at TIME
    bool startAtGiven = false;           // --start-at was given (even as '')
    bool noSamples = false;              // --no-samples
    bool requestId = false;              // --request-id
    std::string proxy;                   // --proxy
    bool proxyGiven = false;             // --proxy given (an empty URL is a usage error)
    // Set on the command line (a suite file's values fill only the others).
    bool connectionsGiven = false, threadsGiven = false, pipelineGiven = false;
};

/// An output file named on the command line, checked before the run (opened for appending, so an
/// unwritable path is said at once, not after a long run, and an existing file is not emptied),
/// replaced when written. "-" is stdout. A file the check created and nothing was written to is
/// removed again (`discard`).
struct OutputFile {
    std::string option; // "--json"
    std::string path;
    bool created = false;

    bool open() {
        if (path.empty() || path == "-") return true;
        std::error_code ec;
        const bool existed = std::filesystem::exists(path, ec);
        std::ofstream probe(path, std::ios::binary | std::ios::app);
        if (!probe) {
            std::cerr << "portico bench: " << option << " " << path << ": cannot write ("
                      << std::strerror(errno) << ")\n";
            return false;
        }
        created = !existed;
        return true;
    }
    bool write(const std::string& text) {
        if (path.empty()) return true;
        if (path == "-") {
            std::cout << text << std::flush;
            return true;
        }
        created = false;
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out << text << std::flush;
        if (out) return true;
        std::cerr << "portico bench: " << option << " " << path << ": cannot write\n";
        return false;
    }
    void discard() {
        std::error_code ec;
        if (created) std::filesystem::remove(path, ec);
        created = false;
    }
};

/// The outputs that every single run (and a merge) may write besides the text summary.
struct RunOutputs {
    OutputFile json{"--json", {}, {}}, hgrm{"--hgrm", {}, {}}, hdrLog{"--hdr-log", {}, {}},
        report{"--report", {}, {}};

    explicit RunOutputs(const BenchOptions& b) {
        json.path = b.jsonFile;
        hgrm.path = b.hgrmFile;
        hdrLog.path = b.hdrLogFile;
        report.path = b.reportFile;
    }
    /// Checks every path; two outputs naming one file are a usage error (false, `usage` set).
    bool open(bool& usage) {
        usage = false;
        const OutputFile* all[] = {&json, &hgrm, &hdrLog, &report};
        for (std::size_t i = 0; i < 4; ++i)
            for (std::size_t j = i + 1; j < 4; ++j)
                if (!all[i]->path.empty() && all[i]->path != "-" && all[i]->path == all[j]->path) {
                    std::cerr << "portico bench: " << all[i]->option << " and " << all[j]->option
                              << " name the same file " << all[i]->path << "\n";
                    usage = true;
                    return false;
                }
        return json.open() && hgrm.open() && hdrLog.open() && report.open();
    }
    bool toStdout() const {
        return json.path == "-" || hgrm.path == "-" || hdrLog.path == "-" || report.path == "-";
    }
    /// A failed run: its JSON ({"error": ...}, as docs/load-results.md says) and a report page
    /// with the error; the histogram files are left as they were.
    bool write(const load::Result& r) {
        if (!r.ok()) {
            hgrm.discard();
            hdrLog.discard();
            return json.write(load::toJson(r)) && (report.path.empty() || report.write(load::htmlReport(r)));
        }
        bool ok = json.write(load::toJson(r));
        if (!hgrm.path.empty() && r.latency) ok = hgrm.write(load::percentileDistribution(*r.latency)) && ok;
        if (!hdrLog.path.empty()) ok = hdrLog.write(load::intervalLog(r)) && ok;
        if (!report.path.empty()) ok = report.write(load::htmlReport(r)) && ok;
        return ok;
    }
};

bool parseThresholds(const BenchOptions& b, std::vector<load::Threshold>& out) {
    for (const auto& expr : b.thresholds) {
        std::string error;
        auto t = load::parseThreshold(expr, error);
        if (!t) {
            std::cerr << "portico bench: --threshold: " << error << "\n";
            return false;
        }
        out.push_back(std::move(*t));
    }
    return true;
}

std::atomic<bool> g_abort{false};
extern "C" void onSignal(int) { g_abort.store(true); }

bool parseDurationOption(const std::string& name, const std::string& text, std::chrono::nanoseconds& out) {
    if (text.empty()) return true;
    if (!portico::config::parseDuration(text, out)) {
        std::cerr << "portico bench: " << name << " '" << text
                  << "': expected a duration with a unit, e.g. 10s, 500ms, 2m\n";
        return false;
    }
    return true;
}

// Saves a run or suite in the history folder unless --no-save; a failure to save is reported, not fatal.
template <class Save> void saveToHistory(const BenchOptions& b, Save&& save) {
    if (b.noSave) return;
    load::RunRecord saved;
    std::string error;
    std::string label = b.label;
    if (label.empty() && !b.from.empty())
        label = "replay " + std::filesystem::path(b.from).filename().string();
    if (label.empty() && !b.suiteFile.empty()) label = std::filesystem::path(b.suiteFile).filename().string();
    if (save(load::defaultHistoryDir(), label, &saved, error))
        std::cerr << "Saved as " << saved.id << " (" << saved.file.string() << ")\n";
    else
        std::cerr << "portico bench: not saved in the history: " << error << "\n";
}

// `--suite` and `--suite-file`: the routes one after another with `o`'s options, then the table,
// each route's thresholds (`judge` stores them and says whether all were met), the JSON and the
// history. `command` names the option in messages.
int runSuiteRoutes(const BenchOptions& b, const load::Options& o, const std::string& base,
                   const std::vector<load::SuiteRoute>& routes, const std::string& command,
                   const std::function<bool(load::SuiteResult&)>& judge) {
    OutputFile json{"--json", b.jsonFile, false};
    if (!json.open()) return kExitFailure; // an unwritable path is said before the run, not after it
    std::ostream& text = json.path == "-" ? std::cerr : std::cout;
    g_abort.store(false);
    auto oldInt = std::signal(SIGINT, onSignal);
    auto oldTerm = std::signal(SIGTERM, onSignal);
    const auto total = routes.size();
    auto suite = load::runSuite(base, routes, o, &g_abort, [total](std::size_t i, const load::SuiteRun& run) {
        std::fprintf(stderr, "[%zu/%zu] %-11s %12.1f req/s\n", i + 1, total, run.route.name.c_str(),
                     run.result.requestsPerSecond());
    });
    std::signal(SIGINT, oldInt);
    std::signal(SIGTERM, oldTerm);
    if (!suite.ok()) {
        // What ran is kept: the table of the routes before the one that could not start, and the
        // JSON with `error` (docs/load-results.md); nothing is saved in the history.
        if (!suite.runs.empty()) text << load::suiteTable(suite) << std::flush;
        std::cerr << "portico bench " << command << ": " << suite.error << "\n";
        json.write(load::suiteToJson(suite));
        return kExitFailure;
    }
    if (g_abort.load() && suite.runs.size() < total)
        std::cerr << "portico bench " << command << ": stopped by a signal after " << suite.runs.size()
                  << " of " << total << " routes (not saved in the history)\n";
    const bool met = judge(suite);
    text << load::suiteTable(suite) << std::flush;
    for (const auto& run : suite.runs)
        if (!run.result.thresholds.empty())
            text << run.route.name << ": " << load::thresholdsText(run.result) << std::flush;
    if (!json.write(load::suiteToJson(suite))) return kExitFailure;
    if (!g_abort.load())
        saveToHistory(b, [&](const auto& dir, const auto& label, auto* saved, auto& error) {
            return load::saveSuite(suite, dir, label, saved, error);
        });
    return met ? kExitOk : kExitThreshold;
}

int showHistory() {
    std::string error;
    const auto dir = load::defaultHistoryDir();
    const auto runs = load::listRuns(dir, error);
    std::cout << "History: " << dir.string() << "\n" << load::historyText(runs);
    if (!error.empty()) std::cerr << "portico bench: skipped: " << error << "\n";
    return kExitOk;
}

int compareRuns(const BenchOptions& b) {
    const auto dir = load::defaultHistoryDir();
    load::RunRecord a, c;
    std::string error;
    if (!load::findRun(dir, b.compare[0], a, error) || !load::findRun(dir, b.compare[1], c, error)) {
        std::cerr << "portico bench: --compare: " << error << "\n";
        return kExitFailure;
    }
    std::cout << load::comparisonText(load::compareRuns(a, c));
    return kExitOk;
}

std::string ms(std::uint64_t ns) {
    char buf[32];
    if (ns >= 1'000'000'000)
        std::snprintf(buf, sizeof buf, "%.2fs", static_cast<double>(ns) / 1e9);
    else
        std::snprintf(buf, sizeof buf, "%.2fms", static_cast<double>(ns) / 1e6);
    return buf;
}

// "  3.2s / 10.0s  12345 req/s now  p50 1.20ms  p99 3.40ms  errors 0" (warm-up included in the time).
std::string liveLine(const load::Options& o, const load::Live::Totals& t, double rateNow) {
    char buf[256];
    const double elapsed = std::chrono::duration<double>(t.elapsed).count();
    std::string progress;
    if (o.duration.count() > 0) {
        std::snprintf(buf, sizeof buf, "%.1fs / %.1fs", elapsed,
                      std::chrono::duration<double>(o.duration + o.warmup).count());
        progress = buf;
    } else {
        std::snprintf(buf, sizeof buf, "%.1fs, %llu / %llu requests", elapsed,
                      static_cast<unsigned long long>(t.completed), static_cast<unsigned long long>(o.count));
        progress = buf;
    }
    std::snprintf(buf, sizeof buf, "  %s  %.0f req/s now  p50 %s  p99 %s  errors %llu", progress.c_str(),
                  rateNow, t.completed ? ms(t.p50Ns).c_str() : "-", t.completed ? ms(t.p99Ns).c_str() : "-",
                  static_cast<unsigned long long>(t.failed));
    return buf;
}

// `--merge A.json B.json ...`: the runs of several generators as one (merge.h).
int mergeRuns(const BenchOptions& b, const std::vector<load::Threshold>& thresholds) {
    if (!b.urls.empty() || b.suite || !b.suiteFile.empty() || !b.from.empty() || !b.hdrLogFile.empty()) {
        std::cerr
            << "portico bench --merge: takes result files only (no URL, --suite, --suite-file, --from or "
               "--hdr-log)\n";
        return kExitUsage;
    }
    std::vector<load::Result> runs;
    std::vector<std::filesystem::path> seen;
    for (const auto& file : b.merge) {
        std::error_code ec;
        auto canonical = std::filesystem::weakly_canonical(file, ec);
        if (ec) canonical = file;
        if (std::find(seen.begin(), seen.end(), canonical) != seen.end()) {
            std::cerr << "portico bench --merge: " << file << " is given twice: each run is merged once\n";
            return kExitUsage;
        }
        seen.push_back(canonical);
        std::ifstream in(file, std::ios::binary);
        std::ostringstream text;
        text << in.rdbuf();
        if (!in) {
            std::cerr << "portico bench --merge: " << file << ": cannot read\n";
            return kExitFailure;
        }
        load::Result r;
        std::string error;
        if (!load::resultFromJson(text.str(), r, error)) {
            std::cerr << "portico bench --merge: " << file << ": " << error << "\n";
            return kExitFailure;
        }
        runs.push_back(std::move(r));
    }
    load::Result merged;
    std::string error;
    if (!load::mergeResults(runs, merged, error)) {
        std::cerr << "portico bench --merge: " << error << "\n";
        return kExitFailure;
    }
    RunOutputs outputs(b);
    bool usage = false;
    if (!outputs.open(usage)) return usage ? kExitUsage : kExitFailure;
    const bool met = load::judgeAll(thresholds, merged);
    std::string summary = "Merged " + std::to_string(runs.size()) +
                          (runs.size() == 1 ? " run\n" : " runs\n") + load::summaryText(merged);
    (outputs.toStdout() ? std::cerr : std::cout) << summary << std::flush;
    if (!outputs.write(merged)) return kExitFailure;
    return met ? kExitOk : kExitThreshold;
}

int runBench(const BenchOptions& b) {
    if (b.history) return showHistory();
    if (!b.compare.empty()) return compareRuns(b);
    std::vector<load::Threshold> thresholds;
    if (!parseThresholds(b, thresholds)) return kExitUsage;
    if (!b.merge.empty()) return mergeRuns(b, thresholds);
    if (!b.from.empty() &&
        (b.suite || b.urls.size() > 1 || !b.weights.empty() || !b.bodyFile.empty() || b.method != "GET")) {
        std::cerr << "portico bench --from: takes at most one base URL, and no --suite, --weights, "
                     "--body or --method (they come from the recording)\n";
        return kExitUsage;
    }
    if (b.from.empty() && !b.filter.empty()) {
        std::cerr << "portico bench: --filter needs --from\n";
        return kExitUsage;
    }
    if (b.urls.empty() && !b.suite && b.suiteFile.empty() && b.from.empty()) {
        std::cerr << "portico bench: a URL is required (or --from, --suite, --suite-file, --history, "
                     "--compare A B)\n";
        return kExitUsage;
    }
    // A suite file is read, and refused whole, before anything is sent.
    load::SuiteFile suiteFile;
    if (!b.suiteFile.empty()) {
        if (b.suite || !b.from.empty() || b.urls.size() > 1 || !b.weights.empty() || !b.bodyFile.empty() ||
            b.method != "GET" || !b.hgrmFile.empty() || !b.hdrLogFile.empty() || !b.reportFile.empty()) {
            std::cerr
                << "portico bench --suite-file: takes at most one base URL, and no --suite, --from, "
                   "--weights, --body or --method (the routes come from the file) nor --hgrm, --hdr-log "
                   "or --report (use --json)\n";
            return kExitUsage;
        }
        std::vector<config::ConfigError> errors;
        if (!load::readSuiteFile(b.suiteFile, suiteFile, errors)) {
            for (const auto& e : errors)
                std::cerr << e.toString() << "\n";
            std::cerr << "portico bench --suite-file: " << b.suiteFile << " refused (" << errors.size()
                      << (errors.size() == 1 ? " error" : " errors") << "); nothing was sent\n";
            return kExitUsage;
        }
    }
    load::Options o;
    if (b.h2 || b.streams) {
        o.protocol = load::Protocol::Http2;
        o.streams = b.streams ? b.streams : 1;
        if (b.pipeline != 1) {
            std::cerr << "portico bench: --pipeline is HTTP/1.1 only; with --h2 use --streams\n";
            return kExitUsage;
        }
    }
    o.insecure = b.insecure;
    o.caFile = b.caFile;
    o.connections = b.connections;
    o.threads = b.threads;
    o.count = b.count;
    o.rate = b.rate;
    o.pipeline = b.pipeline;
    o.allowRemote = b.allowRemote;
    o.latencyIntervals = !b.hdrLogFile.empty();
    o.samples = !b.noSamples;
    o.requestId = b.requestId;
    o.proxy = b.proxy;
    if (b.proxyGiven && o.proxy.empty()) {
        std::cerr << "portico bench: --proxy needs a URL, http://HOST:PORT\n";
        return kExitUsage;
    }
    if (b.startAtGiven) {
        if (!load::parseIsoTime(b.startAt, o.startAt)) {
            std::cerr << "portico bench: --start-at '" << b.startAt
                      << "': expected an RFC 3339 time such as 2026-12-06T09:30:00Z, or @UNIXSECONDS\n";
            return kExitUsage;
        }
        const auto now = std::chrono::system_clock::now();
        if (o.startAt > now + std::chrono::hours(24)) {
            std::cerr << "portico bench: --start-at '" << b.startAt << "': more than 24 hours ahead\n";
            return kExitUsage;
        }
        if (o.startAt <= now)
            std::cerr << "portico bench: --start-at " << load::isoTime(o.startAt)
                      << " has passed: starting now (workers started with it are not aligned)\n";
    }
    if (!parseDurationOption("--duration", b.duration, o.duration) ||
        !parseDurationOption("--warmup", b.warmup, o.warmup) ||
        !parseDurationOption("--timeout", b.timeout, o.timeout))
        return kExitUsage;
    if (!b.duration.empty() && o.duration.count() == 0) {
        std::cerr << "portico bench: --duration '" << b.duration
                  << "': must be more than 0 (or leave it out: -n alone stops by count, neither runs 10s)\n";
        return kExitUsage;
    }
    if (o.duration.count() == 0 && o.count == 0)
        o.duration =
            std::chrono::seconds(b.suite || !b.suiteFile.empty() ? 3 : 10); // wrk's; per route for suites
    if (!b.weights.empty() && b.weights.size() != b.urls.size()) {
        std::cerr << "portico bench: --weights needs one weight per URL (" << b.urls.size() << ")\n";
        return kExitUsage;
    }
    std::string body;
    if (!b.bodyFile.empty()) {
        std::ifstream in(b.bodyFile, std::ios::binary);
        if (!in) {
            std::cerr << "portico bench: --body " << b.bodyFile << ": cannot read\n";
            return kExitFailure;
        }
        std::ostringstream ss;
        ss << in.rdbuf();
        body = ss.str();
    }
    std::vector<std::pair<std::string, std::string>> headers;
    for (const auto& h : b.headers) {
        auto colon = h.find(':');
        if (colon == std::string::npos || colon == 0) {
            std::cerr << "portico bench: -H '" << h << "': expected 'Name: value'\n";
            return kExitUsage;
        }
        // The field value without the whitespace around it (RFC 9110 §5.5; HTTP/2 forbids it,
        // RFC 9113 §8.2.1).
        std::string value = h.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
            value.erase(0, 1);
        while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
            value.pop_back();
        headers.emplace_back(h.substr(0, colon), value);
    }
    // -H replaces a suite route's field of that name, or adds it.
    auto withHeaders = [&](std::vector<load::SuiteRoute> routes) {
        for (auto& route : routes)
            for (const auto& field : headers) {
                std::erase_if(route.headers, [&](const auto& h) {
                    return strcasecmp(h.first.c_str(), field.first.c_str()) == 0;
                });
                route.headers.push_back(field);
            }
        return routes;
    };
    if (b.suite) {
        if (b.urls.size() > 1 || !b.weights.empty() || !b.bodyFile.empty() || b.method != "GET" ||
            !b.hgrmFile.empty() || !b.hdrLogFile.empty() || !b.reportFile.empty()) {
            std::cerr
                << "portico bench --suite: takes at most one base URL, and no --weights, --body or "
                   "--method (the routes are the suite's) nor --hgrm, --hdr-log or --report (use --json)\n";
            return kExitUsage;
        }
        const std::string base = b.urls.empty() ? load::kSuiteDefaultUrl : b.urls.front();
        return runSuiteRoutes(b, o, base, withHeaders(load::suiteRoutes()), "--suite",
                              [&](load::SuiteResult& suite) {
                                  bool met = true;
                                  for (auto& run : suite.runs)
                                      met = load::judgeAll(thresholds, run.result) && met;
                                  return met;
                              });
    }
    if (!b.suiteFile.empty()) {
        std::string base, error;
        load::SuiteFileOverrides given;
        given.baseUrl = b.urls.empty() ? std::string() : b.urls.front();
        given.bounds = !b.duration.empty() || b.count > 0;
        given.connections = b.connectionsGiven;
        given.threads = b.threadsGiven;
        given.pipeline = b.pipelineGiven;
        if (!load::applySuiteFile(suiteFile, given, o, base, error)) {
            std::cerr << "portico bench --suite-file: " << error << "\n";
            return kExitUsage;
        }
        return runSuiteRoutes(
            b, o, base, withHeaders(suiteFile.suiteRoutes()), "--suite-file",
            [&](load::SuiteResult& suite) { return load::judgeSuiteFile(suiteFile, thresholds, suite); });
    }
    if (!b.from.empty()) {
        std::string error;
        auto filter = capture::Filter::parse(b.filter, error);
        if (!filter) {
            std::cerr << "portico bench: --filter: " << error << "\n";
            return kExitUsage;
        }
        auto all = capture::loadSessionFile(b.from, error);
        if (!error.empty()) {
            std::cerr << "portico bench: --from: " << error << "\n";
            return kExitFailure;
        }
        std::vector<capture::Exchange> chosen;
        for (auto& e : all)
            if (filter->matches(e)) chosen.push_back(std::move(e));
        if (chosen.empty() && !filter->empty()) {
            std::cerr << "portico bench: --from " << nothingMatches(b.from, b.filter, all.size()) << "\n";
            return kExitFailure;
        }
        auto recorded = load::requestsFromCapture(chosen, b.urls.empty() ? std::string() : b.urls.front());
        if (!recorded.ok()) {
            std::cerr << "portico bench: --from " << b.from << ": " << recorded.error << "\n";
            return kExitFailure;
        }
        std::cerr << "Replaying " << recorded.used << " recorded request(s) as load ("
                  << recorded.requests.size() << " distinct)";
        if (recorded.skipped) std::cerr << "; skipped " << recorded.skipped;
        std::cerr << "\n";
        for (const auto& why : recorded.skippedReasons)
            std::cerr << "  skipped " << why << "\n";
        for (auto& spec : recorded.requests) {
            for (const auto& field : headers) { // -H replaces a recorded field of that name
                std::erase_if(spec.headers, [&](const auto& h) {
                    return strcasecmp(h.first.c_str(), field.first.c_str()) == 0;
                });
                spec.headers.push_back(field);
            }
            o.requests.push_back(std::move(spec));
        }
    }
    for (std::size_t i = 0; i < b.urls.size() && b.from.empty(); ++i) {
        load::RequestSpec spec;
        spec.url = b.urls[i];
        spec.method = b.method;
        spec.headers = headers;
        spec.body = body;
        spec.weight = b.weights.empty() ? 1 : b.weights[i];
        o.requests.push_back(std::move(spec));
    }

    // The output files are opened before the run: an unwritable path is said at once, not after it.
    RunOutputs outputs(b);
    bool usage = false;
    if (!outputs.open(usage)) return usage ? kExitUsage : kExitFailure;
    const bool jsonToStdout = outputs.toStdout();

    g_abort.store(false);
    auto oldInt = std::signal(SIGINT, onSignal);
    auto oldTerm = std::signal(SIGTERM, onSignal);
    // Said once a signal would end the wait cleanly (a script that stops it on this line gets exit 1).
    if (o.startAt > std::chrono::system_clock::now())
        std::cerr << "Waiting until " << load::isoTime(o.startAt) << " to start\n";
    // On a terminal: the header as soon as the run starts, then a live line (oha's way) until the
    // summary replaces it. Nothing extra when stdout is a file or a pipe.
    const bool live = !jsonToStdout && ::isatty(STDOUT_FILENO);
    load::Live progress;
    load::Result r;
    bool headerShown = false;
    if (live) {
        std::atomic<bool> done{false};
        std::thread runner([&] {
            r = load::run(o, &g_abort, &progress);
            done = true;
        });
        std::uint64_t lastCompleted = 0;
        auto lastAt = std::chrono::steady_clock::now();
        while (!done) {
            std::this_thread::sleep_for(std::chrono::milliseconds(250));
            if (done) break;
            const auto t = progress.totals();
            if (!t.started) continue;
            if (!headerShown) {
                std::cout << load::headerText(o, t.address);
                headerShown = true;
                lastCompleted = t.completed;
                lastAt = std::chrono::steady_clock::now();
                continue;
            }
            const auto now = std::chrono::steady_clock::now();
            const double dt = std::chrono::duration<double>(now - lastAt).count();
            const double rateNow = dt > 0 ? static_cast<double>(t.completed - lastCompleted) / dt : 0;
            lastCompleted = t.completed;
            lastAt = now;
            std::cout << "\r\033[K" << liveLine(o, t, rateNow) << std::flush;
        }
        runner.join();
        if (headerShown) std::cout << "\r\033[K" << std::flush;
    } else {
        r = load::run(o, &g_abort);
    }
    std::signal(SIGINT, oldInt);
    std::signal(SIGTERM, oldTerm);

    if (!r.ok()) {
        std::cerr << "portico bench: " << r.error << "\n";
        outputs.write(r); // {"error": ...}, as docs/load-results.md says
        return kExitFailure;
    }
    const bool met = load::judgeAll(thresholds, r);
    std::string summary = load::summaryText(r);
    if (headerShown) summary.erase(0, load::headerText(o, r.address).size()); // already on the screen
    (jsonToStdout ? std::cerr : std::cout) << summary << std::flush;
    if (!outputs.write(r)) return kExitFailure;
    saveToHistory(b, [&](const auto& dir, const auto& label, auto* saved, auto& error) {
        return load::saveRun(r, dir, label, saved, error);
    });
    return met ? kExitOk : kExitThreshold;
}

} // namespace

Command addBenchCommand(CLI::App& app) {
    auto b = std::make_shared<BenchOptions>();
    auto* cmd = app.add_subcommand("bench", "Load-test an HTTP server (loopback only unless --allow-remote)");
    cmd->add_option("url", b->urls,
                    "Target URL(s), http[s]://HOST[:PORT]/PATH; several share one origin. With --suite: the "
                    "suite vhost's base URL (default http://127.0.0.1:8090); with --suite-file: the origin "
                    "its paths go to (default: the file's base)");
    auto* connections =
        cmd->add_option("-c,--connections", b->connections, "Connections to keep open (default 10)")
            ->check(wholeNumber(1, 100000));
    auto* threads =
        cmd->add_option("-t,--threads", b->threads, "Threads, each with its own event loop (default 1)")
            ->check(wholeNumber(1, 256));
    auto* d =
        cmd->add_option("-d,--duration", b->duration,
                        "Measured duration with a unit (10s, 500ms, 2m); default 10s unless -n is given");
    cmd->add_option("-n,--requests", b->count, "Measured requests to send (with -d: whichever comes first)")
        ->check(wholeNumber(1, 1000000000000));
    (void)d;
    cmd->add_option("-R,--rate", b->rate,
                    "Open model: fixed arrival rate, requests/s over all connections; latency from intended "
                    "send times (coordinated omission corrected)")
        ->check(number(0.001, 1e8));
    auto* pipeline = cmd->add_option("-p,--pipeline", b->pipeline,
                                     "Requests in flight per connection (HTTP/1.1 pipelining)")
                         ->check(wholeNumber(1, 1024));
    cmd->add_flag("--h2", b->h2, "HTTP/2: h2 by ALPN over https, h2c with prior knowledge over http");
    cmd->add_option("--streams", b->streams,
                    "HTTP/2 concurrent streams per connection (default 1; implies --h2)")
        ->check(wholeNumber(1, 1024));
    cmd->add_flag("-k,--insecure", b->insecure, "https: do not verify the server's certificate");
    cmd->add_option("--cacert", b->caFile,
                    "https: also trust the CA certificates in this PEM file (e.g. from portico cert export)")
        ->check(existingFile());
    cmd->add_option("-H,--header", b->headers, "Request header 'Name: value' (repeatable)");
    cmd->add_option("-m,--method", b->method, "Request method (default GET)");
    cmd->add_option("--body", b->bodyFile, "File whose bytes are sent as the request body")
        ->check(existingFile());
    cmd->add_option("--weights", b->weights, "Relative frequency of each URL, e.g. --weights 3 1")
        ->check(wholeNumber(1, 1000000));
    cmd->add_option("--json", b->jsonFile,
                    "Write the result as JSON to FILE (- = stdout; docs/load-results.md)");
    cmd->add_option("--warmup", b->warmup,
                    "Warm-up before measuring, with a unit (e.g. 2s); not in the results");
    cmd->add_option("--timeout", b->timeout, "Per-request timeout, with a unit (default 10s)");
    cmd->add_flag("--allow-remote", b->allowRemote, "Allow targets that are not loopback addresses");
    cmd->add_flag("--suite", b->suite,
                  "Run the benchmark suite's eleven routes one after another (serve "
                  "resources/bench-suite/portico.yaml); -d is per route (default 3s)");
    cmd->add_option("--suite-file", b->suiteFile,
                    "Run the routes of a YAML suite file one after another, each judged by the file's "
                    "thresholds (format: resources/bench-suite/suite.yaml, docs/cli.md); -c, -t, -p, -d and "
                    "the URL override the file's; a bad file exits 2 with FILE:LINE:COLUMN")
        ->check(existingFile());
    cmd->add_flag("--history", b->history, "List the saved runs (in $PORTICO_DATA_DIR/bench-history)");
    cmd->add_option("--compare", b->compare,
                    "Compare two saved runs: ID, ID prefix, number from --history, "
                    "'last' or a JSON file")
        ->expected(2);
    cmd->add_flag("--no-save", b->noSave, "Do not save this run in the history");
    cmd->add_flag("--no-samples", b->noSamples, "Keep no drill-down sample of exchanges (JSON `samples`)");
    cmd->add_option_function<std::string>(
        "--proxy",
        [b](const std::string& url) {
            b->proxy = url;
            b->proxyGiven = true;
        },
        "Send the load through a forward proxy http://HOST:PORT: http targets over HTTP/1.1 in "
        "absolute-form, "
        "https (HTTP/1.1 or h2) and h2c through one CONNECT tunnel per connection; loopback only unless "
        "--allow-remote");
    cmd->add_flag("--request-id", b->requestId,
                  "Send x-request-id: RUN-CONNECTION.PORT.N with every request; each sample names its id "
                  "(JSON `samples[].requestId`), to find it in the server's log or capture");
    cmd->add_option("--from", b->from,
                    "Replay a recorded set as load: the requests of a session file (serve --record) or HAR, "
                    "weighted by how often each was recorded; the URL, if given, is the base to send them to")
        ->check(existingFile());
    cmd->add_option("--filter", b->filter,
                    "With --from: only matching exchanges (e.g. 'method:GET path:/api')");
    cmd->add_option("--threshold", b->thresholds,
                    "Pass/fail criterion, repeatable: p50|p90|p99|p99.9|max<DURATION, rps>N, errors<N%, "
                    "status:5xx<N% (also <=, >, >=); a breach exits 3")
        ->allow_extra_args(false);
    cmd->add_option("--hgrm", b->hgrmFile,
                    "Write the latency percentile distribution in HdrHistogram's .hgrm format (ms) to FILE");
    cmd->add_option("--hdr-log", b->hdrLogFile,
                    "Write one latency histogram per second as an HdrHistogram interval log (v1.3) to FILE");
    cmd->add_option("--report", b->reportFile,
                    "Write a self-contained HTML report (tables and plots, no network) to FILE.html");
    cmd->add_option("--merge", b->merge,
                    "Merge the JSON results of several generators run at the same time (exact: histograms "
                    "added); with --json/--report/--hgrm for the merged result")
        ->expected(1, -1);
    cmd->add_option_function<std::string>(
        "--start-at",
        [b](const std::string& v) {
            b->startAt = v;
            b->startAtGiven = true;
        },
        "Wait until this wall-clock time before starting (RFC 3339, e.g. 2026-12-06T09:30:00Z, "
        "or @UNIXSECONDS): workers on several machines measure the same interval");
    cmd->add_option("--label", b->label,
                    "Label for the saved run (default: the URL's path, 'suite', 'replay FILE' or the suite "
                    "file's name)");
    return Command{cmd, [b, connections, threads, pipeline] {
                       b->connectionsGiven = connections->count() > 0;
                       b->threadsGiven = threads->count() > 0;
                       b->pipelineGiven = pipeline->count() > 0;
                       return runBench(*b);
                   }};
}

} // namespace portico::app
