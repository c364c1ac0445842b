// The benchmark suite's routes, runner, table and JSON.
#include <portico/load/runner.h>
#include <portico/load/suite.h>

#include "json_text.h"

#include <cmath>
#include <cstdio>

namespace portico::load {

namespace {

std::string ms(std::uint64_t ns) {
    char buf[32];
    if (ns < 1'000'000)
        std::snprintf(buf, sizeof buf, "%.1fus", static_cast<double>(ns) / 1e3);
    else if (ns < 1'000'000'000)
        std::snprintf(buf, sizeof buf, "%.2fms", static_cast<double>(ns) / 1e6);
    else
        std::snprintf(buf, sizeof buf, "%.2fs", static_cast<double>(ns) / 1e9);
    return buf;
}

} // namespace

const std::vector<SuiteRoute>& suiteRoutes() {
    static const std::vector<SuiteRoute> routes = [] {
        std::vector<SuiteRoute> r;
        auto get = [](std::string name, std::string description, std::string target) {
            SuiteRoute route;
            route.name = std::move(name);
            route.description = std::move(description);
            route.target = std::move(target);
            return route;
        };
        r.push_back(get("plaintext", "the smallest response: 13 bytes of text", "/plaintext"));
        r.push_back(get("json", "a small JSON object", "/json"));
        r.push_back(get("cached", "a response with ETag and Cache-Control max-age", "/cached"));
        r.push_back(get("file", "a 3.5 KiB body read from a file", "/file"));
        r.push_back(get("path-param", "a path parameter in the body", "/users/42"));
        r.push_back(get("query", "six query parameters parsed into a JSON list",
                        "/query?a=red&b=green&c=blue&d=cyan&e=magenta&page=2"));
        r.push_back(
            get("compute", "a 5 KiB template with 256 substitutions rendered per request", "/compute/7"));
        SuiteRoute headers = get("headers", "four request fields echoed", "/headers");
        headers.headers = {{"User-Agent", "portico-bench-suite/1"},
                           {"Accept", "application/json"},
                           {"Accept-Language", "en-GB,en;q=0.8"},
                           {"X-Token", "3f2b9c1d"}};
        r.push_back(std::move(headers));
        r.push_back(get("static", "a 6 KiB static CSS file", "/static/style.css"));
        r.push_back(get("root", "the root page (static index.html)", "/"));
        SuiteRoute echo = get("post-echo", "a 256-byte JSON body posted and echoed", "/echo");
        echo.method = "POST";
        echo.headers = {{"Content-Type", "application/json"}};
        echo.body = "{\"id\":42,\"name\":\"portico\",\"tags\":[\"bench\",\"suite\",\"echo\"],\"payload\":\"";
        echo.body.append(256 - echo.body.size() - 2, 'x');
        echo.body += "\"}";
        r.push_back(std::move(echo));
        return r;
    }();
    return routes;
}

std::uint64_t SuiteRun::bad() const {
    std::uint64_t n = result.requests.failed;
    for (const auto& [status, count] : result.statuses)
        if (status < 200 || status >= 400) n += count;
    return n;
}

double SuiteResult::geometricMean() const {
    if (runs.empty()) return 0;
    double logSum = 0;
    for (const auto& run : runs) {
        const double rps = run.result.requestsPerSecond();
        if (!(rps > 0)) return 0;
        logSum += std::log(rps);
    }
    return std::exp(logSum / static_cast<double>(runs.size()));
}

SuiteResult runSuite(const std::string& baseUrl, const Options& base, const std::atomic<bool>* abort,
                     const std::function<void(std::size_t, const SuiteRun&)>& progress) {
    return runSuite(baseUrl, suiteRoutes(), base, abort, progress);
}

SuiteResult runSuite(const std::string& baseUrl, const std::vector<SuiteRoute>& routes, const Options& base,
                     const std::atomic<bool>* abort,
                     const std::function<void(std::size_t, const SuiteRun&)>& progress) {
    SuiteResult suite;
    Url url;
    if (!parseUrl(baseUrl, url, suite.error)) return suite;
    if (url.target != "/") {
        suite.error = "bad suite URL '" + baseUrl + "': give only the origin, e.g. " + kSuiteDefaultUrl;
        return suite;
    }
    suite.baseUrl = url.origin();
    if (routes.empty()) {
        suite.error = "no routes to run";
        return suite;
    }
    for (std::size_t i = 0; i < routes.size(); ++i) {
        if (abort && abort->load()) break;
        const SuiteRoute& route = routes[i];
        Options o = base;
        RequestSpec spec;
        spec.url = suite.baseUrl + route.target;
        spec.method = route.method;
        spec.headers = route.headers;
        spec.body = route.body;
        o.requests = {std::move(spec)};
        SuiteRun run{route, load::run(o, abort)};
        if (!run.result.ok()) {
            suite.error = route.name + ": " + run.result.error;
            suite.runs.push_back(std::move(run));
            return suite;
        }
        suite.runs.push_back(std::move(run));
        if (progress) progress(i, suite.runs.back());
    }
    return suite;
}

std::string suiteTable(const SuiteResult& suite) {
    std::string s;
    char line[256];
    std::snprintf(line, sizeof line, "Benchmark suite @ %s\n", suite.baseUrl.c_str());
    s += line;
    // "Errors" as in the desktop app: answers other than 2xx/3xx plus failed requests (SuiteRun::bad).
    std::snprintf(line, sizeof line, "  %-12s %14s %11s %11s %10s\n", "Route", "Requests/sec", "p50", "p99",
                  "Errors");
    s += line;
    for (const auto& run : suite.runs) {
        const auto& r = run.result;
        if (!r.ok() || !r.latency) {
            std::snprintf(line, sizeof line, "  %-12s error: %s\n", run.route.name.c_str(), r.error.c_str());
            s += line;
            continue;
        }
        // No completion: no latency to show (an empty histogram's percentiles read 0).
        const bool any = r.requests.completed > 0;
        std::snprintf(line, sizeof line, "  %-12s %14.1f %11s %11s %10llu\n", run.route.name.c_str(),
                      r.requestsPerSecond(), any ? ms(r.latency->valueAtPercentile(50)).c_str() : "-",
                      any ? ms(r.latency->valueAtPercentile(99)).c_str() : "-",
                      static_cast<unsigned long long>(run.bad()));
        s += line;
    }
    std::snprintf(line, sizeof line, "  %-12s %14.1f\n", "geo. mean", suite.geometricMean());
    s += line;
    return s;
}

std::string suiteToJson(const SuiteResult& suite) {
    using detail::appendJsonString;
    std::string out = "{\"schema\":1,\"kind\":\"suite\",\"tool\":\"portico bench --suite\",\"version\":";
    appendJsonString(out, PORTICO_VERSION);
    out += ",\"baseUrl\":";
    appendJsonString(out, suite.baseUrl);
    if (!suite.ok()) {
        out += ",\"error\":";
        appendJsonString(out, suite.error);
    }
    out += ",\"geometricMeanRequestsPerSecond\":" + detail::jsonNumber(suite.geometricMean());
    out += ",\"routes\":[";
    for (std::size_t i = 0; i < suite.runs.size(); ++i) {
        const auto& run = suite.runs[i];
        if (i) out += ',';
        out += "{\"name\":";
        appendJsonString(out, run.route.name);
        out += ",\"target\":";
        appendJsonString(out, run.route.target);
        out += ",\"method\":";
        appendJsonString(out, run.route.method);
        if (!run.route.description.empty()) {
            out += ",\"description\":";
            appendJsonString(out, run.route.description);
        }
        out += ",\"result\":";
        std::string r = toJson(run.result);
        while (!r.empty() && (r.back() == '\n' || r.back() == ' '))
            r.pop_back();
        out += r + "}";
    }
    out += "]}\n";
    return out;
}

} // namespace portico::load
