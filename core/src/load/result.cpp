// Result derived figures, the JSON writer (schema in docs/load-results.md) and the text summary.
#include <portico/load/result.h>
#include <portico/load/thresholds.h>

#include "json_text.h"

#include <portico/http/json_text.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>

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

void appendErrors(std::string& out, const ErrorCounts& e, bool withConnect) {
    out += "{";
    if (withConnect) out += "\"connect\":" + num(e.connect) + ",";
    out += "\"reset\":" + num(e.reset) + ",\"timeout\":" + num(e.timeout) +
           ",\"protocol\":" + num(e.protocol) + "}";
}

void appendStatuses(std::string& out, const std::map<int, std::uint64_t>& statuses) {
    out += "{";
    bool first = true;
    for (const auto& [status, count] : statuses) {
        if (!first) out += ',';
        first = false;
        appendString(out, std::to_string(status));
        out += ':' + num(count);
    }
    out += "}";
}

std::string duration(double ns) { return detail::durationText(ns); }

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
std::string durationText(double ns) {
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

} // namespace detail

std::string isoTime(std::chrono::system_clock::time_point t) {
    if (t == std::chrono::system_clock::time_point{}) return {};
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
    const std::time_t secs = static_cast<std::time_t>(us >= 0 ? us / 1'000'000 : (us - 999'999) / 1'000'000);
    const long frac = static_cast<long>(us - static_cast<std::int64_t>(secs) * 1'000'000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[64];
    const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(buf + n, sizeof buf - n, ".%06ldZ", frac);
    return buf;
}

bool parseIsoTime(std::string_view text, std::chrono::system_clock::time_point& out) {
    using namespace std::chrono;
    // Seconds of 2200-01-01T00:00:00Z: later times are refused (nanoseconds since the epoch in an
    // int64 end in 2262).
    constexpr std::int64_t kEndSeconds = 7'258'118'400;
    auto digits = [&](std::size_t at, std::size_t n, int& v) {
        if (at + n > text.size()) return false;
        v = 0;
        for (std::size_t i = at; i < at + n; ++i) {
            if (text[i] < '0' || text[i] > '9') return false;
            v = v * 10 + (text[i] - '0');
        }
        return true;
    };
    // The fraction of a second after a '.', up to nanoseconds (more digits are read and dropped).
    auto fraction = [&](std::size_t& at, std::int64_t& ns) {
        ns = 0;
        if (at >= text.size() || text[at] != '.') return true;
        ++at;
        std::size_t n = 0;
        std::int64_t scale = 100'000'000;
        while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
            ns += (text[at] - '0') * scale;
            scale /= 10;
            ++at;
            ++n;
        }
        return n > 0;
    };
    if (!text.empty() && text.front() == '@') {
        std::size_t at = 1;
        std::int64_t secs = 0;
        std::size_t n = 0;
        while (at < text.size() && text[at] >= '0' && text[at] <= '9' && n < 12) {
            secs = secs * 10 + (text[at] - '0');
            ++at;
            ++n;
        }
        std::int64_t ns = 0;
        if (n == 0 || !fraction(at, ns) || at != text.size() || secs >= kEndSeconds) return false;
        out = system_clock::time_point(
            duration_cast<system_clock::duration>(std::chrono::seconds(secs) + nanoseconds(ns)));
        return true;
    }
    int y, mo, d, h, mi, s;
    if (!digits(0, 4, y) || text.size() < 19 || text[4] != '-' || !digits(5, 2, mo) || text[7] != '-' ||
        !digits(8, 2, d) || (text[10] != 'T' && text[10] != 't' && text[10] != ' ') || !digits(11, 2, h) ||
        text[13] != ':' || !digits(14, 2, mi) || text[16] != ':' || !digits(17, 2, s))
        return false;
    if (y < 1970 || y > 2199 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
        return false;
    std::size_t at = 19;
    std::int64_t ns = 0;
    if (!fraction(at, ns) || at >= text.size()) return false;
    int offsetMinutes = 0;
    if (text[at] == 'Z' || text[at] == 'z') {
        ++at;
    } else if (text[at] == '+' || text[at] == '-') {
        int oh, om;
        if (!digits(at + 1, 2, oh) || at + 3 >= text.size() || text[at + 3] != ':' ||
            !digits(at + 4, 2, om) || oh > 23 || om > 59)
            return false;
        offsetMinutes = (oh * 60 + om) * (text[at] == '-' ? -1 : 1);
        at += 6;
    } else {
        return false;
    }
    if (at != text.size()) return false;
    std::tm tm{};
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = s;
    const std::time_t t = timegm(&tm);
    std::tm back{};
    gmtime_r(&t, &back);
    if (back.tm_mday != d || back.tm_mon != mo - 1) return false; // 2026-02-30 does not exist
    out = system_clock::time_point(duration_cast<system_clock::duration>(
        std::chrono::seconds(static_cast<std::int64_t>(t)) - minutes(offsetMinutes) + nanoseconds(ns)));
    return true;
}

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
    out.reserve(4096 + r.perSlot.size() * 8 + r.samples.size() * 192);
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
               ",\"bodyBytes\":" + num(std::uint64_t{q.body.size()});
        if (!q.headers.empty()) { // the fields given for it (-H, a suite, --from), as given
            out += ",\"headers\":[";
            for (std::size_t j = 0; j < q.headers.size(); ++j) {
                if (j) out += ',';
                out += '[';
                appendJsonString(out, q.headers[j].first, http::JsonBytes::Ascii);
                out += ',';
                appendJsonString(out, q.headers[j].second, http::JsonBytes::Ascii);
                out += ']';
            }
            out += ']';
        }
        out += '}';
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
           ",\"samples\":" + (o.samples ? "true" : "false") +
           ",\"requestId\":" + (o.requestId ? "true" : "false");
    if (!o.proxy.empty()) {
        out += ",\"proxy\":";
        appendString(out, o.proxy);
    }
    out += "},\"startedAt\":";
    appendString(out, isoTime(r.startedAt));
    out += ",\"measuredSeconds\":" + num(seconds(r.measured)) + ",\"requests\":";
    appendCounts(out, r.requests);
    out += ",\"warmup\":";
    appendCounts(out, r.warmup);
    out += ",\"requestsPerSecond\":" + num(r.requestsPerSecond());
    out += ",\"missedArrivals\":" + num(r.missedArrivals);
    out += ",\"errors\":";
    appendErrors(out, r.errors, true);
    out += ",\"statuses\":";
    appendStatuses(out, r.statuses);
    out += ",\"bytes\":{\"read\":" + num(r.bytesRead) + ",\"written\":" + num(r.bytesWritten) +
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
        appendLatency(out, *r.serviceTime, o.model() == Model::Open); // buckets when it differs
    else
        out += "null";
    out += ",\"byRequest\":[";
    for (std::size_t i = 0; i < r.byRequest.size(); ++i) {
        const auto& k = r.byRequest[i];
        if (i) out += ',';
        out += "{\"index\":" + num(std::uint64_t{i}) + ",\"method\":";
        appendString(out, i < o.requests.size() ? o.requests[i].method : "");
        out += ",\"url\":";
        appendString(out, i < o.requests.size() ? o.requests[i].url : "");
        out += ",\"requests\":";
        appendCounts(out, k.requests);
        out += ",\"requestsPerSecond\":" +
               num(seconds(r.measured) > 0 ? static_cast<double>(k.requests.completed) / seconds(r.measured)
                                           : 0.0);
        out += ",\"errors\":";
        appendErrors(out, k.errors, false);
        out += ",\"statuses\":";
        appendStatuses(out, k.statuses);
        out += ",\"latency\":";
        if (k.latency)
            appendLatency(out, *k.latency, true);
        else
            out += "null";
        out += ",\"seriesCompleted\":[";
        for (std::size_t s = 0; s < k.perSlot.size(); ++s) {
            if (s) out += ',';
            out += num(k.perSlot[s]);
        }
        out += "]}";
    }
    out += "]";
    if (!r.thresholds.empty()) {
        out += ",\"thresholds\":[";
        for (std::size_t i = 0; i < r.thresholds.size(); ++i) {
            const auto& t = r.thresholds[i];
            if (i) out += ',';
            out += "{\"expr\":";
            appendString(out, t.expr);
            out += ",\"value\":" + detail::jsonNumber(t.value) + ",\"unit\":";
            appendString(out, t.unit);
            out += std::string(",\"ok\":") + (t.ok ? "true" : "false") + "}";
        }
        out += "]";
    }
    out += ",\"samples\":[";
    for (std::size_t i = 0; i < r.samples.size(); ++i) {
        static constexpr const char* kFailure[] = {"null", "\"reset\"", "\"timeout\"", "\"protocol\""};
        const auto& x = r.samples[i];
        if (i) out += ',';
        out += "{\"request\":" + num(std::uint64_t{x.request}) + ",\"status\":" + std::to_string(x.status) +
               ",\"failure\":" + kFailure[x.failure < 4 ? x.failure : 3] +
               ",\"intendedNs\":" + std::to_string(x.intendedNs) + ",\"sentNs\":" + std::to_string(x.sentNs) +
               ",\"doneNs\":" + std::to_string(x.doneNs) +
               (x.firstByteNs >= 0 ? ",\"firstByteNs\":" + std::to_string(x.firstByteNs) : std::string()) +
               ",\"latencyNs\":" + num(x.latencyNs) + ",\"connection\":" + num(std::uint64_t{x.connection}) +
               ",\"sequence\":" + num(std::uint64_t{x.sequence}) +
               ",\"localPort\":" + num(std::uint64_t{x.localPort});
        if (!x.requestId.empty()) {
            out += ",\"requestId\":";
            appendJsonString(out, x.requestId, http::JsonBytes::Ascii);
        }
        if (x.responseHeaders) {
            out += ",\"responseHeaders\":[";
            for (std::size_t j = 0; j < x.responseHeaders->size(); ++j) {
                if (j) out += ',';
                out += '[';
                // Bytes from the wire, which need not be UTF-8: those ≥ 0x7F as \u00XX.
                appendJsonString(out, (*x.responseHeaders)[j].first, http::JsonBytes::Ascii);
                out += ',';
                appendJsonString(out, (*x.responseHeaders)[j].second, http::JsonBytes::Ascii);
                out += ']';
            }
            out += ']';
        }
        out += '}';
    }
    out += "]";
    out +=
        ",\"series\":{\"slotMilliseconds\":" + num(std::uint64_t{Result::kSlot.count()}) + ",\"completed\":[";
    for (std::size_t i = 0; i < r.perSlot.size(); ++i) {
        if (i) out += ',';
        out += num(r.perSlot[i]);
    }
    out += "]";
    // Only a known series (a run's; a merge of runs that all had one): a Result read from a file
    // written before it existed, or made by hand without it, has none.
    if (r.failedPerSlot.size() == r.perSlot.size()) {
        out += ",\"failed\":[";
        for (std::size_t i = 0; i < r.failedPerSlot.size(); ++i) {
            if (i) out += ',';
            out += num(r.failedPerSlot[i]);
        }
        out += "]";
    }
    out += "},\"cpu\":{\"userSeconds\":" + num(r.cpuUserSeconds) +
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

std::string byRequestText(const Result& r) {
    std::string s =
        "  By request                                   Count      Req/s      p50       p90       "
        "p99       Max  Errors  Statuses\n";
    char line[512];
    const double secs = seconds(r.measured);
    for (std::size_t i = 0; i < r.byRequest.size(); ++i) {
        const auto& k = r.byRequest[i];
        std::string name;
        if (i < r.options.requests.size()) {
            const auto& q = r.options.requests[i];
            Url u;
            std::string urlError;
            std::string target = parseUrl(q.url, u, urlError) ? u.target : q.url;
            name = q.method + " " + target;
        }
        if (name.size() > 40) name = name.substr(0, 37) + "...";
        auto at = [&](double p) {
            return k.requests.completed && k.latency
                       ? duration(static_cast<double>(k.latency->valueAtPercentile(p)))
                       : std::string("-");
        };
        std::string codes;
        for (const auto& [status, count] : k.statuses)
            codes += (codes.empty() ? "" : " ") + std::to_string(status) + ":" + std::to_string(count);
        if (codes.empty()) codes = "-";
        std::snprintf(line, sizeof line, "    %-40s %9llu %10.1f %9s %9s %9s %9s %7llu  %s\n", name.c_str(),
                      static_cast<unsigned long long>(k.requests.completed),
                      secs > 0 ? static_cast<double>(k.requests.completed) / secs : 0.0, at(50).c_str(),
                      at(90).c_str(), at(99).c_str(), at(100).c_str(),
                      static_cast<unsigned long long>(k.requests.failed), codes.c_str());
        s += line;
    }
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
    if (r.byRequest.size() > 1) s += byRequestText(r);
    std::snprintf(
        line, sizeof line, "Requests/sec: %.2f\nTransfer/sec: %s\n", r.requestsPerSecond(),
        bytes(seconds(r.measured) > 0 ? static_cast<double>(r.measuredBytesRead) / seconds(r.measured) : 0)
            .c_str());
    s += line;
    std::snprintf(line, sizeof line, "Generator CPU: %.2fs user, %.2fs system (%.0f%% of %u thread(s))%s\n",
                  r.cpuUserSeconds, r.cpuSystemSeconds, r.cpuShare() * 100, threads,
                  r.cpuShare() > 0.9 ? " - the generator may be the bottleneck" : "");
    s += line;
    s += thresholdsText(r);
    return s;
}

} // namespace portico::load
