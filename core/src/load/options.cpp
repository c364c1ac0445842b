// URL parsing and option checks for load runs.
#include <portico/load/options.h>

#include <portico/http/message.h>
#include <portico/http/url.h>

#include <cmath>

namespace portico::load {

namespace {

bool isFieldValue(std::string_view s) {
    for (unsigned char c : s)
        if ((c < 32 && c != '\t') || c == 127) return false;
    return true;
}

} // namespace

bool validate(const Options& o, std::string& error) {
    if (o.requests.empty()) {
        error = "no request to send";
        return false;
    }
    for (const auto& r : o.requests) {
        if (!http::isToken(r.method)) {
            error = "bad method '" + r.method + "'";
            return false;
        }
        if (r.weight == 0) {
            error = "request weights must be at least 1";
            return false;
        }
        for (const auto& [name, value] : r.headers) {
            if (!http::isToken(name) || !isFieldValue(value)) {
                error = "bad header '" + name + ": " + value + "'";
                return false;
            }
            if (http::iequals(name, "content-length") || http::iequals(name, "transfer-encoding")) {
                error = "header '" + name + "' is set by the load generator from the body";
                return false;
            }
        }
    }
    if (o.connections < 1 || o.connections > 100000) {
        error = "connections must be 1..100000";
        return false;
    }
    if (o.threads < 1 || o.threads > 256) {
        error = "threads must be 1..256";
        return false;
    }
    if (o.pipeline < 1 || o.pipeline > 1024) {
        error = "pipeline depth must be 1..1024";
        return false;
    }
    if (o.streams < 1 || o.streams > 1024) {
        error = "streams per connection must be 1..1024";
        return false;
    }
    if (o.protocol == Protocol::Http2 && o.pipeline != 1) {
        error = "pipelining is HTTP/1.1 only; HTTP/2 keeps several requests in flight with streams";
        return false;
    }
    if (o.duration.count() < 0 || o.warmup.count() < 0) {
        error = "durations must not be negative";
        return false;
    }
    if (o.duration.count() == 0 && o.count == 0) {
        error = "a run must be bounded: give a duration, a request count or both";
        return false;
    }
    if (!std::isfinite(o.rate) || o.rate < 0 || o.rate > 1e8) {
        error = "rate must be 0 (closed model) or 0 < rate ≤ 1e8 requests/s";
        return false;
    }
    if (o.timeout.count() <= 0 || o.stopGrace.count() < 0) {
        error = "timeout must be positive and the stop grace not negative";
        return false;
    }
    if (o.startAt != std::chrono::system_clock::time_point{} &&
        o.startAt > std::chrono::system_clock::now() + std::chrono::hours(24)) {
        error = "the start time is more than 24 hours ahead";
        return false;
    }
    if (!o.proxy.empty()) {
        http::Url u;
        std::string why;
        // The port must be written: a forward proxy has no default one (Squid 3128, mitmproxy 8080).
        const bool port =
            http::parseUrl(o.proxy, u, why) && u.authority.ends_with(":" + std::to_string(u.port));
        if (!port || u.scheme != "http" || (u.target != "/" && !u.target.empty())) {
            error = "proxy '" + o.proxy + "': expected http://HOST:PORT (an HTTP/1.1 forward proxy)";
            return false;
        }
    }
    return true;
}

} // namespace portico::load
