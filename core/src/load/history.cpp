// Run history: JSON files in a folder (written atomically), read back with yaml-cpp (JSON is YAML
// flow syntax), listed and compared.
#include <portico/load/history.h>
#include <portico/tls/local_ca.h>

#include "json_text.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include <sys/stat.h>
#include <unistd.h>

namespace portico::load {

namespace fs = std::filesystem;

namespace {

std::string slug(const std::string& label) {
    std::string s;
    for (unsigned char c : label) {
        if (std::isalnum(c))
            s += static_cast<char>(std::tolower(c));
        else if (!s.empty() && s.back() != '-')
            s += '-';
        if (s.size() >= 40) break;
    }
    while (!s.empty() && s.back() == '-')
        s.pop_back();
    return s.empty() ? "run" : s;
}

std::string nowIso(std::string& compact) {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char iso[32], c[32];
    std::strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tm);
    std::strftime(c, sizeof c, "%Y%m%d-%H%M%S", &tm);
    compact = c;
    return iso;
}

// Writes `json` (an object "{...}") with savedAt/label added as dir/ID.json.
bool saveJson(const std::string& json, const fs::path& dir, const std::string& label, RunRecord* saved,
              std::string& error) {
    std::error_code ec;
    if (!fs::exists(dir, ec)) {
        fs::create_directories(dir, ec);
        if (ec) {
            error = dir.string() + ": " + ec.message();
            return false;
        }
        ::chmod(dir.c_str(), 0700);
    }
    std::string compact;
    const std::string savedAt = nowIso(compact);
    const std::string base = compact + "-" + slug(label);
    std::string id = base;
    for (int n = 2; fs::exists(dir / (id + ".json"), ec); ++n)
        id = base + "-" + std::to_string(n);
    std::string head = "{\"savedAt\":";
    detail::appendJsonString(head, savedAt);
    head += ",\"label\":";
    detail::appendJsonString(head, label);
    head += ',';
    const std::string body = head + json.substr(1);
    const fs::path file = dir / (id + ".json");
    const fs::path tmp = dir / ("." + id + ".json.tmp");
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << body;
        out.flush();
        if (!out) {
            error = tmp.string() + ": cannot write";
            fs::remove(tmp, ec);
            return false;
        }
    }
    fs::rename(tmp, file, ec);
    if (ec) {
        error = file.string() + ": " + ec.message();
        fs::remove(tmp, ec);
        return false;
    }
    if (saved) return loadRun(file, *saved, error);
    return true;
}

std::string str(const YAML::Node& n, const std::string& fallback = {}) {
    return n && n.IsScalar() ? n.Scalar() : fallback;
}
double dbl(const YAML::Node& n) {
    if (!n || !n.IsScalar()) return 0;
    try {
        return n.as<double>();
    } catch (const YAML::Exception&) {
        return 0;
    }
}
std::uint64_t u64(const YAML::Node& n) {
    const double d = dbl(n);
    return d > 0 ? static_cast<std::uint64_t>(d) : 0;
}

std::string fmtNs(double ns) {
    char buf[32];
    if (ns < 1e6)
        std::snprintf(buf, sizeof buf, "%.1fus", ns / 1e3);
    else if (ns < 1e9)
        std::snprintf(buf, sizeof buf, "%.2fms", ns / 1e6);
    else
        std::snprintf(buf, sizeof buf, "%.2fs", ns / 1e9);
    return buf;
}

} // namespace

fs::path defaultHistoryDir() { return tls::defaultDataDir() / "bench-history"; }

bool saveRun(const Result& result, const fs::path& dir, const std::string& label, RunRecord* saved,
             std::string& error) {
    if (!result.ok()) {
        error = "a run that did not take place is not saved: " + result.error;
        return false;
    }
    std::string l = label;
    if (l.empty() && !result.options.requests.empty()) {
        Url u;
        std::string ignored;
        l = parseUrl(result.options.requests.front().url, u, ignored) ? u.target : "run";
    }
    return saveJson(toJson(result), dir, l, saved, error);
}

bool saveSuite(const SuiteResult& suite, const fs::path& dir, const std::string& label, RunRecord* saved,
               std::string& error) {
    return saveJson(suiteToJson(suite), dir, label.empty() ? "suite" : label, saved, error);
}

namespace {

std::string modelText(const RunRecord& r) {
    if (r.model != "open") return r.model.empty() ? std::string("unknown") : r.model;
    char buf[64];
    std::snprintf(buf, sizeof buf, "open at %g req/s", r.rate);
    return buf;
}

bool readRecord(const YAML::Node& doc, const fs::path& file, RunRecord& out, std::string& error) {
    // A history entry (savedAt) or what `portico bench --json` wrote (docs/load-results.md).
    if (!doc.IsMap() || !doc["schema"] || (!doc["savedAt"] && str(doc["tool"]) != "portico bench")) {
        error = file.string() + ": not a saved run or a `portico bench --json` result";
        return false;
    }
    RunRecord r;
    r.id = file.stem().string();
    r.file = file;
    r.kind = str(doc["kind"], "run");
    r.label = str(doc["label"]);
    r.savedAt = str(doc["savedAt"], "-");
    auto readRun = [](const YAML::Node& run, RunRecord& into) {
        const auto opts = run["options"];
        into.protocol = str(opts["protocol"], "http/1.1");
        into.model = str(opts["model"]);
        into.rate = dbl(opts["rate"]);
        into.connections = static_cast<unsigned>(u64(opts["connections"]));
        into.threads = static_cast<unsigned>(u64(opts["threads"]));
    };
    if (r.kind == "suite") {
        r.target = str(doc["baseUrl"]);
        r.requestsPerSecond = dbl(doc["geometricMeanRequestsPerSecond"]);
        const auto routes = doc["routes"];
        if (routes && routes.IsSequence()) {
            for (const auto& route : routes) {
                const auto res = route["result"];
                if (r.routes.empty()) readRun(res, r);
                RunRecord::Route rr;
                rr.name = str(route["name"]);
                rr.requestsPerSecond = dbl(res["requestsPerSecond"]);
                rr.p50 = u64(res["latency"]["percentiles"]["50"]);
                rr.p99 = u64(res["latency"]["percentiles"]["99"]);
                r.durationSeconds += dbl(res["measuredSeconds"]);
                r.completed += u64(res["requests"]["completed"]);
                r.failed += u64(res["requests"]["failed"]);
                r.cancelled += u64(res["requests"]["cancelled"]);
                r.routes.push_back(std::move(rr));
            }
        }
    } else {
        if (doc["error"]) {
            error = file.string() + ": a run that did not take place";
            return false;
        }
        const auto reqs = doc["target"]["requests"];
        if (reqs && reqs.IsSequence() && reqs.size()) r.target = str(reqs[0]["url"]);
        readRun(doc, r);
        r.durationSeconds = dbl(doc["measuredSeconds"]);
        r.requestsPerSecond = dbl(doc["requestsPerSecond"]);
        r.completed = u64(doc["requests"]["completed"]);
        r.failed = u64(doc["requests"]["failed"]);
        r.cancelled = u64(doc["requests"]["cancelled"]);
        for (const char* p : {"50", "75", "90", "99", "99.9", "99.99", "100"})
            r.percentiles.emplace_back(p, u64(doc["latency"]["percentiles"][p]));
    }
    out = std::move(r);
    return true;
}

// Reads a saved run's YAML; false with "FILE: not a saved run (why)" when it does not parse.
bool loadDocument(const fs::path& file, YAML::Node& doc, std::string& error) {
    try {
        doc = YAML::LoadFile(file.string());
    } catch (const YAML::Exception& e) {
        error = file.string() + ": not a saved run (" + e.msg + ")";
        return false;
    }
    return true;
}

} // namespace

bool loadRun(const fs::path& file, RunRecord& out, std::string& error) {
    YAML::Node doc;
    if (!loadDocument(file, doc, error)) return false;
    // A well-formed file of the wrong shape ("options": 5, "routes": [1]) makes yaml-cpp throw on
    // subscripts; such a file is bad input, reported like any other.
    try {
        return readRecord(doc, file, out, error);
    } catch (const std::exception& e) {
        error = file.string() + ": not a saved run (" + e.what() + ")";
        return false;
    }
}

HistoryListing scanHistory(const fs::path& dir) {
    HistoryListing listing;
    std::vector<fs::path> files;
    std::error_code ec;
    if (!fs::exists(dir, ec)) return listing;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const auto& p = it->path();
        if (p.extension() == ".json" && p.filename().string().front() != '.') files.push_back(p);
    }
    if (ec) {
        listing.error = dir.string() + ": " + ec.message();
        return listing;
    }
    // By ID: "...-json" before "...-json-2" (the file names would sort the other way round).
    std::sort(files.begin(), files.end(),
              [](const fs::path& x, const fs::path& y) { return x.stem() < y.stem(); });
    for (const auto& f : files) {
        RunRecord r;
        std::string e;
        if (loadRun(f, r, e)) {
            listing.runs.push_back(std::move(r));
        } else {
            const std::string prefix = f.string() + ": ";
            if (e.compare(0, prefix.size(), prefix) == 0) e.erase(0, prefix.size());
            listing.unreadable.push_back({f, std::move(e)});
        }
    }
    return listing;
}

std::vector<RunRecord> listRuns(const fs::path& dir, std::string& error) {
    HistoryListing listing = scanHistory(dir);
    error = listing.error;
    for (const auto& u : listing.unreadable)
        error += (error.empty() ? "" : "; ") + u.file.string() + ": " + u.reason;
    return std::move(listing.runs);
}

bool loadLatencyBuckets(const fs::path& file, std::vector<stats::Histogram::Bucket>& out,
                        std::string& error) {
    out.clear();
    YAML::Node doc;
    if (!loadDocument(file, doc, error)) return false;
    try {
        if (!doc.IsMap() || !doc["schema"]) {
            error = file.string() + ": not a saved run";
            return false;
        }
        if (str(doc["kind"]) == "suite") {
            error = file.string() + ": a suite has no single latency distribution";
            return false;
        }
        if (doc["error"]) {
            error = file.string() + ": a run that did not take place";
            return false;
        }
        const auto buckets = doc["latency"]["buckets"];
        if (!buckets) return true;
        if (!buckets.IsSequence()) {
            error = file.string() + ": latency.buckets is not a list";
            return false;
        }
        for (const auto& b : buckets) {
            if (!b.IsSequence() || b.size() != 3) {
                error = file.string() + ": latency.buckets: expected [lowestNs, highestNs, count]";
                out.clear();
                return false;
            }
            const stats::Histogram::Bucket bucket{b[0].as<std::uint64_t>(), b[1].as<std::uint64_t>(),
                                                  b[2].as<std::uint64_t>()};
            if (bucket.highestNs < bucket.lowestNs ||
                (!out.empty() && bucket.lowestNs <= out.back().highestNs)) {
                error = file.string() + ": latency.buckets: not ascending";
                out.clear();
                return false;
            }
            out.push_back(bucket);
        }
    } catch (const std::exception& e) {
        error = file.string() + ": not a saved run (" + e.what() + ")";
        out.clear();
        return false;
    }
    return true;
}

bool findRun(const fs::path& dir, const std::string& ref, RunRecord& out, std::string& error) {
    std::error_code ec;
    if (ref.size() > 5 && ref.compare(ref.size() - 5, 5, ".json") == 0 && fs::is_regular_file(ref, ec))
        return loadRun(ref, out, error);
    std::string listError;
    auto runs = listRuns(dir, listError);
    if (runs.empty()) {
        error = "no saved runs in " + dir.string();
        return false;
    }
    if (ref == "last") {
        out = runs.back();
        return true;
    }
    if (!ref.empty() && std::all_of(ref.begin(), ref.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
        ref.size() <= 6) {
        const auto n = std::stoul(ref);
        if (n >= 1 && n <= runs.size()) {
            out = runs[n - 1];
            return true;
        }
        error = "no run number " + ref + " (the history has " + std::to_string(runs.size()) + ")";
        return false;
    }
    const RunRecord* found = nullptr;
    int matches = 0;
    for (const auto& r : runs) {
        if (r.id == ref) {
            out = r;
            return true;
        }
        if (r.id.compare(0, ref.size(), ref) == 0) {
            found = &r;
            ++matches;
        }
    }
    if (matches == 1) {
        out = *found;
        return true;
    }
    error = matches ? "'" + ref + "' matches " + std::to_string(matches) + " runs; give more of the ID"
                    : "no saved run '" + ref + "' in " + dir.string();
    return false;
}

Comparison compareRuns(const RunRecord& a, const RunRecord& b) {
    Comparison c{a, b, {}};
    auto row = [&](std::string metric, std::string unit, double x, double y, bool higher) {
        c.rows.push_back({std::move(metric), std::move(unit), x, y, x != 0 ? y / x : 0.0, higher});
    };
    row(a.kind == "suite" && b.kind == "suite" ? "req/s (geo. mean)" : "req/s", "req/s", a.requestsPerSecond,
        b.requestsPerSecond, true);
    if (a.kind == "run" && b.kind == "run") {
        for (const char* p : {"50", "90", "99", "99.9", "100"}) {
            auto find = [&](const RunRecord& r) {
                for (const auto& [k, v] : r.percentiles)
                    if (k == p) return static_cast<double>(v);
                return 0.0;
            };
            row(std::string(p) == "100" ? "max" : "p" + std::string(p), "ns", find(a), find(b), false);
        }
    } else if (a.kind == "suite" && b.kind == "suite") {
        for (const auto& ra : a.routes)
            for (const auto& rb : b.routes)
                if (ra.name == rb.name)
                    row(ra.name + " req/s", "req/s", ra.requestsPerSecond, rb.requestsPerSecond, true);
        for (const auto& ra : a.routes)
            for (const auto& rb : b.routes)
                if (ra.name == rb.name)
                    row(ra.name + " p99", "ns", static_cast<double>(ra.p99), static_cast<double>(rb.p99),
                        false);
    }
    row("failed", "requests", static_cast<double>(a.failed), static_cast<double>(b.failed), false);
    return c;
}

std::string historyText(const std::vector<RunRecord>& runs) {
    if (runs.empty()) return "No saved runs.\n";
    std::string s;
    char line[512];
    std::snprintf(line, sizeof line, "%4s  %-36s %-5s %-8s %14s  %s\n", "#", "ID", "kind", "protocol",
                  "req/s", "target");
    s += line;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const auto& r = runs[i];
        std::snprintf(line, sizeof line, "%4zu  %-36s %-5s %-8s %14.1f  %s%s%s\n", i + 1, r.id.c_str(),
                      r.kind.c_str(), r.protocol.c_str(), r.requestsPerSecond, r.target.c_str(),
                      r.label.empty() ? "" : "  ", r.label.c_str());
        s += line;
    }
    return s;
}

std::string comparisonText(const Comparison& c) {
    std::string s;
    char line[512];
    auto head = [&](const char* tag, const RunRecord& r) {
        std::snprintf(line, sizeof line, "%s: %s  %s %s, %s, %u connection(s), %s model, saved %s\n", tag,
                      r.id.c_str(), r.kind.c_str(), r.target.c_str(), r.protocol.c_str(), r.connections,
                      r.model.c_str(), r.savedAt.c_str());
        s += line;
    };
    head("A", c.a);
    head("B", c.b);
    // A closed run measures service time at full speed, an open one latency at a set arrival rate
    // (different rates too): their figures are not better or worse than each other.
    const bool sameModel = c.a.model == c.b.model && (c.a.model != "open" || c.a.rate == c.b.rate);
    if (!sameModel) {
        std::snprintf(
            line, sizeof line,
            "  The runs used different load models (A: %s, B: %s): the figures are shown side by side, "
            "without better/worse.\n",
            modelText(c.a).c_str(), modelText(c.b).c_str());
        s += line;
    }
    std::snprintf(line, sizeof line, "  %-22s %14s %14s %8s\n", "metric", "A", "B", "B/A");
    s += line;
    for (const auto& r : c.rows) {
        auto fmt = [&](double v) {
            char buf[32];
            if (r.unit == "ns") return fmtNs(v);
            std::snprintf(buf, sizeof buf, r.unit == "req/s" ? "%.1f" : "%.0f", v);
            return std::string(buf);
        };
        std::string verdict;
        if (sameModel && r.a != 0 && r.ratio != 1) {
            const bool better = r.higherIsBetter ? r.ratio > 1 : r.ratio < 1;
            verdict = better ? "  better" : "  worse";
        }
        char ratio[32];
        if (r.a != 0)
            std::snprintf(ratio, sizeof ratio, "%.3fx", r.ratio);
        else
            std::snprintf(ratio, sizeof ratio, "-");
        std::snprintf(line, sizeof line, "  %-22s %14s %14s %8s%s\n", r.metric.c_str(), fmt(r.a).c_str(),
                      fmt(r.b).c_str(), ratio, verdict.c_str());
        s += line;
    }
    return s;
}

} // namespace portico::load
