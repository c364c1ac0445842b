// Result derived figures, the JSON writer (schema in docs/load-results.md) and the text summary.
#include <portico/load/result.h>

#include "json_text.h"

#include <portico/http/json_text.h>

#include <charconv>
#include <cmath>
#include <cstdio>

namespace portico::load {

namespace {

constexpr double kPercentiles[] = {50, 75, 90, 99, 99.9, 99.99, 100};

std::string num(double v) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}
std::string num(std::uint64_t v) { return std::to_string(v); }

// Percentile keys as JSON object names: "50", "99.9", "99.99", "100".
std::string percentileKey(double p) { return num(p); }

using http::appendJsonString;
constexpr auto appendString = [](std::string& out, std::string_view s) { appendJsonString(out, s); };

bool isTls(const Options& o) {
    return !o.requests.empty() && o.requests.front().url.size() >= 6 &&
           (o.requests.front().url.compare(0, 6, "https:") == 0 ||
            o.requests.front().url.compare(0, 6, "HTTPS:") == 0);
}

// "pipeline 4" / "h2, 10 stream(s) per connection", with " over TLS" for https.
std::string protocolText(const Options& o) {
    std::string s =
        o.protocol == Protocol::Http2
            ? (isTls(o) ? "h2, " : "h2c, ") + std::to_string(o.streams) + " stream(s) per connection"
            : "HTTP/1.1, pipeline " + std::to_string(o.pipeline);
    if (isTls(o)) s += o.insecure ? " over TLS (not verified)" : " over TLS";
    return s;
}

double seconds(std::chrono::nanoseconds d) { return static_cast<double>(d.count()) / 1e9; }

void appendCounts(std::string& out, const RequestCounts& c) {
    out += "{\"started\":" + num(c.started) + ",\"completed\":" + num(c.completed) +
           ",\"failed\":" + num(c.failed) + ",\"cancelled\":" + num(c.cancelled) + "}";
}

void appendLatency(std::string& out, const stats::Histogram& h, bool withBuckets) {
    out += "{\"unit\":\"ns\",\"count\":" + num(h.count()) + ",\"min\":" + num(h.min()) +
           ",\"max\":" + num(h.max()) + ",\"mean\":" + num(h.mean()) + ",\"stddev\":" + num(h.stddev()) +
           ",\"percentiles\":{";
    bool first = true;
    for (double p : kPercentiles) {
        if (!first) out += ',';
        first = false;
        appendString(out, percentileKey(p));
        out += ':' + num(h.valueAtPercentile(p));
    }
    out += "}";
    if (withBuckets) {
        out += ",\"buckets\":[";
        first = true;
        h.forEachBucket([&](const stats::Histogram::Bucket& b) {
            if (!first) out += ',';
            first = false;
            out += '[' + num(b.lowestNs) + ',' + num(b.highestNs) + ',' + num(b.count) + ']';
        });
        out += "]";
    }
    out += "}";
}

std::string duration(double ns) {
    char buf[32];
    if (ns < 1e3)
        std::snprintf(buf, sizeof buf, "%.0fns", ns);
    else if (ns < 1e6)
        std::snprintf(buf, sizeof buf, "%.2fus", ns / 1e3);
    else if (ns < 1e9)
        std::snprintf(buf, sizeof buf, "%.2fms", ns / 1e6);
    else
        std::snprintf(buf, sizeof buf, "%.2fs", ns / 1e9);
    return buf;
}

std::string bytes(double b) {
    char buf[32];
    if (b < 1024)
        std::snprintf(buf, sizeof buf, "%.0fB", b);
    else if (b < 1024 * 1024)
        std::snprintf(buf, sizeof buf, "%.2fKiB", b / 1024);
    else if (b < 1024.0 * 1024 * 1024)
        std::snprintf(buf, sizeof buf, "%.2fMiB", b / (1024 * 1024));
    else
        std::snprintf(buf, sizeof buf, "%.2fGiB", b / (1024.0 * 1024 * 1024));
    return buf;
}

} // namespace

namespace detail {
std::string jsonNumber(double v) { return std::isfinite(v) ? num(v) : std::string("0"); }
} // namespace detail

double Result::requestsPerSecond() const {
    const double s = seconds(measured);
    return s > 0 ? static_cast<double>(requests.completed) / s : 0.0;
}

double Result::cpuShare() const {
    const double s = seconds(measured) * std::max(1u, std::min(options.threads, options.connections));
    return s > 0 ? (cpuUserSeconds + cpuSystemSeconds) / s : 0.0;
}

std::string toJson(const Result& r) {
    const Options& o = r.options;
    std::string out;
    out.reserve(4096 + r.perSlot.size() * 8);
    out += "{\"schema\":1,\"tool\":\"portico bench\",\"version\":";
    appendString(out, PORTICO_VERSION);
    if (!r.ok()) {
        out += ",\"error\":";
        appendString(out, r.error);
        out += "}\n";
        return out;
    }
    out += ",\"target\":{\"address\":";
    appendString(out, r.address);
    out += ",\"requests\":[";
    for (std::size_t i = 0; i < o.requests.size(); ++i) {
        const auto& q = o.requests[i];
        if (i) out += ',';
        out += "{\"url\":";
        appendString(out, q.url);
        out += ",\"method\":";
        appendString(out, q.method);
        out += ",\"weight\":" + num(std::uint64_t{q.weight}) +
               ",\"bodyBytes\":" + num(std::uint64_t{q.body.size()}) + "}";
    }
    out += "]},\"options\":{\"model\":";
    appendString(out, o.model() == Model::Open ? "open" : "closed");
    out += ",\"connections\":" + num(std::uint64_t{o.connections}) +
           ",\"threads\":" + num(std::uint64_t{o.threads}) +
           ",\"pipeline\":" + num(std::uint64_t{o.pipeline}) +
           ",\"protocol\":" + (o.protocol == Protocol::Http2 ? "\"h2\"" : "\"http/1.1\"") +
           ",\"streams\":" + num(std::uint64_t{o.protocol == Protocol::Http2 ? o.streams : 0u}) +
           ",\"tls\":" + (isTls(o) ? "true" : "false") + ",\"insecure\":" + (o.insecure ? "true" : "false") +
           ",\"durationSeconds\":" + num(seconds(o.duration)) + ",\"count\":" + num(o.count) +
           ",\"rate\":" + num(o.rate) + ",\"warmupSeconds\":" + num(seconds(o.warmup)) +
           ",\"timeoutSeconds\":" + num(seconds(o.timeout)) +
           ",\"stopGraceSeconds\":" + num(seconds(o.stopGrace)) +
           "},\"measuredSeconds\":" + num(seconds(r.measured)) + ",\"requests\":";
    appendCounts(out, r.requests);
    out += ",\"warmup\":";
    appendCounts(out, r.warmup);
    out += ",\"requestsPerSecond\":" + num(r.requestsPerSecond());
    out += ",\"missedArrivals\":" + num(r.missedArrivals);
    out += ",\"errors\":{\"connect\":" + num(r.errors.connect) + ",\"reset\":" + num(r.errors.reset) +
           ",\"timeout\":" + num(r.errors.timeout) + ",\"protocol\":" + num(r.errors.protocol) + "}";
    out += ",\"statuses\":{";
    bool first = true;
    for (const auto& [status, count] : r.statuses) {
        if (!first) out += ',';
        first = false;
        appendString(out, std::to_string(status));
        out += ':' + num(count);
    }
    out += "},\"bytes\":{\"read\":" + num(r.bytesRead) + ",\"written\":" + num(r.bytesWritten) +
           ",\"measuredRead\":" + num(r.measuredBytesRead) +
           ",\"measuredWritten\":" + num(r.measuredBytesWritten) + "}";
    out += ",\"latency\":";
    if (r.latency)
        appendLatency(out, *r.latency, true);
    else
        out += "null";
    out += ",\"latencyCorrected\":";
    out += o.model() == Model::Open ? "true" : "false";
    out += ",\"serviceTime\":";
    if (r.serviceTime)
        appendLatency(out, *r.serviceTime, false);
    else
        out += "null";
    out +=
        ",\"series\":{\"slotMilliseconds\":" + num(std::uint64_t{Result::kSlot.count()}) + ",\"completed\":[";
    for (std::size_t i = 0; i < r.perSlot.size(); ++i) {
        if (i) out += ',';
        out += num(r.perSlot[i]);
    }
    out += "]},\"cpu\":{\"userSeconds\":" + num(r.cpuUserSeconds) +
           ",\"systemSeconds\":" + num(r.cpuSystemSeconds) + ",\"share\":" + num(r.cpuShare()) + "}}\n";
    return out;
}

std::string headerText(const Options& o, const std::string& address) {
    std::string s;
    char line[256];
    const std::string url = o.requests.empty() ? "" : o.requests.front().url;
    std::snprintf(line, sizeof line, "Running %s test @ %s (%s)%s\n",
                  o.duration.count() ? duration(static_cast<double>(o.duration.count())).c_str()
                                     : (std::to_string(o.count) + " request").c_str(),
                  url.c_str(), address.c_str(), o.requests.size() > 1 ? " and other URLs" : "");
    s += line;
    const unsigned threads = std::min(o.threads, o.connections);
    if (o.model() == Model::Open)
        std::snprintf(line, sizeof line,
                      "  %u thread(s) and %u connection(s), open model at %.6g req/s, %s\n"
                      "  latency from intended send times (coordinated omission corrected)\n",
                      threads, o.connections, o.rate, protocolText(o).c_str());
    else
        std::snprintf(line, sizeof line, "  %u thread(s) and %u connection(s), closed model, %s\n", threads,
                      o.connections, protocolText(o).c_str());
    s += line;
    return s;
}

std::string summaryText(const Result& r) {
    if (!r.ok()) return "error: " + r.error + "\n";
    const Options& o = r.options;
    std::string s = headerText(o, r.address);
    char line[256];
    const unsigned threads = std::min(o.threads, o.connections);
    const auto& h = *r.latency;
    if (r.requests.completed == 0) {
        // No response, no latency: a table of zeros would read as an instant server.
        s += "  No measured request completed: no latency to report\n";
    } else {
        s += "  Latency      Avg        Stdev      Min        Max\n";
        std::snprintf(line, sizeof line, "           %-10s %-10s %-10s %-10s\n", duration(h.mean()).c_str(),
                      duration(h.stddev()).c_str(), duration(static_cast<double>(h.min())).c_str(),
                      duration(static_cast<double>(h.max())).c_str());
        s += line;
        s += "  Latency Distribution\n";
        for (double p : kPercentiles) {
            std::snprintf(line, sizeof line, "    %7s%%  %s\n", num(p).c_str(),
                          duration(static_cast<double>(h.valueAtPercentile(p))).c_str());
            s += line;
        }
        if (o.model() == Model::Open) {
            std::snprintf(line, sizeof line, "  Uncorrected (from actual send): p50 %s, p99 %s, max %s\n",
                          duration(static_cast<double>(r.serviceTime->valueAtPercentile(50))).c_str(),
                          duration(static_cast<double>(r.serviceTime->valueAtPercentile(99))).c_str(),
                          duration(static_cast<double>(r.serviceTime->max())).c_str());
            s += line;
        }
    }
    std::snprintf(line, sizeof line, "  %llu requests in %.2fs, %s read, %s written\n",
                  static_cast<unsigned long long>(r.requests.completed), seconds(r.measured),
                  bytes(static_cast<double>(r.measuredBytesRead)).c_str(),
                  bytes(static_cast<double>(r.measuredBytesWritten)).c_str());
    s += line;
    std::snprintf(line, sizeof line,
                  "  Requests: %llu started = %llu completed + %llu failed + %llu cancelled",
                  static_cast<unsigned long long>(r.requests.started),
                  static_cast<unsigned long long>(r.requests.completed),
                  static_cast<unsigned long long>(r.requests.failed),
                  static_cast<unsigned long long>(r.requests.cancelled));
    s += line;
    if (r.warmup.started) {
        std::snprintf(line, sizeof line, " (+%llu in warm-up)",
                      static_cast<unsigned long long>(r.warmup.started));
        s += line;
    }
    s += "\n  Status codes:";
    for (const auto& [status, count] : r.statuses) {
        std::snprintf(line, sizeof line, " %d: %llu", status, static_cast<unsigned long long>(count));
        s += line;
    }
    if (r.statuses.empty()) s += " none";
    s += "\n";
    if (r.missedArrivals) {
        std::snprintf(
            line, sizeof line,
            "  Rate not met: sent %llu of %llu arrivals (%llu found no free connection; counted in the "
            "latency with the time they had waited)\n",
            static_cast<unsigned long long>(r.requests.started),
            static_cast<unsigned long long>(r.requests.started + r.missedArrivals),
            static_cast<unsigned long long>(r.missedArrivals));
        s += line;
    }
    const auto& e = r.errors;
    if (e.connect || e.reset || e.timeout || e.protocol) {
        std::snprintf(line, sizeof line, "  Errors: connect %llu, reset %llu, timeout %llu, protocol %llu\n",
                      static_cast<unsigned long long>(e.connect), static_cast<unsigned long long>(e.reset),
                      static_cast<unsigned long long>(e.timeout),
                      static_cast<unsigned long long>(e.protocol));
        s += line;
    }
    std::snprintf(
        line, sizeof line, "Requests/sec: %.2f\nTransfer/sec: %s\n", r.requestsPerSecond(),
        bytes(seconds(r.measured) > 0 ? static_cast<double>(r.measuredBytesRead) / seconds(r.measured) : 0)
            .c_str());
    s += line;
    std::snprintf(line, sizeof line, "Generator CPU: %.2fs user, %.2fs system (%.0f%% of %u thread(s))%s\n",
                  r.cpuUserSeconds, r.cpuSystemSeconds, r.cpuShare() * 100, threads,
                  r.cpuShare() > 0.9 ? " - the generator may be the bottleneck" : "");
    s += line;
    return s;
}

} // namespace portico::load
