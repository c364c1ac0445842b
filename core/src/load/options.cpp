// URL parsing and option checks for load runs.
#include <portico/load/options.h>

#include <portico/http/message.h>

#include <cmath>

namespace portico::load {

namespace {

bool isToken(std::string_view s) {
    if (s.empty()) return false;
    for (unsigned char c : s)
        if (c <= 32 || c >= 127 ||
            std::string_view("\"(),/:;<=>?@[\\]{}").find(static_cast<char>(c)) != std::string_view::npos)
            return false;
    return true;
}

bool isFieldValue(std::string_view s) {
    for (unsigned char c : s)
        if ((c < 32 && c != '\t') || c == 127) return false;
    return true;
}

} // namespace

bool parseUrl(std::string_view text, Url& out, std::string& error) {
    auto bad = [&](const char* why) {
        error = "bad URL '" + std::string(text) + "': " + why;
        return false;
    };
    for (unsigned char c : text)
        if (c <= 32 || c == 127) return bad("contains whitespace or control characters");
    Url u;
    auto sep = text.find("://");
    if (sep == std::string_view::npos) return bad("expected http://HOST[:PORT]/PATH");
    std::string scheme(text.substr(0, sep));
    for (auto& c : scheme)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (scheme != "http" && scheme != "https") return bad("scheme must be http or https");
    u.scheme = scheme;
    std::string_view rest = text.substr(sep + 3);
    if (rest.find('#') != std::string_view::npos) return bad("fragments (#...) are not sent to servers");
    auto authEnd = rest.find_first_of("/?");
    std::string_view authority = rest.substr(0, authEnd);
    std::string_view target = authEnd == std::string_view::npos ? std::string_view() : rest.substr(authEnd);
    if (authority.find('@') != std::string_view::npos) return bad("userinfo (user@) is not supported");
    std::string_view host, port;
    if (!authority.empty() && authority.front() == '[') {
        auto close = authority.find(']');
        if (close == std::string_view::npos) return bad("unterminated IPv6 literal");
        host = authority.substr(1, close - 1);
        std::string_view after = authority.substr(close + 1);
        if (!after.empty()) {
            if (after.front() != ':') return bad("unexpected characters after the IPv6 literal");
            port = after.substr(1);
            if (port.empty()) return bad("empty port");
        }
    } else {
        auto colon = authority.rfind(':');
        host = authority.substr(0, colon);
        if (colon != std::string_view::npos) {
            port = authority.substr(colon + 1);
            if (port.empty()) return bad("empty port");
        }
    }
    if (host.empty()) return bad("no host");
    u.host = std::string(host);
    if (port.empty()) {
        u.port = u.scheme == "https" ? 443 : 80;
    } else {
        unsigned v = 0;
        for (char c : port) {
            if (c < '0' || c > '9' || v > 65535) return bad("port must be a number 1..65535");
            v = v * 10 + static_cast<unsigned>(c - '0');
        }
        if (v == 0 || v > 65535) return bad("port must be a number 1..65535");
        u.port = static_cast<std::uint16_t>(v);
    }
    u.authority = std::string(authority);
    if (target.empty())
        u.target = "/";
    else if (target.front() == '?')
        u.target = "/" + std::string(target);
    else
        u.target = std::string(target);
    out = std::move(u);
    return true;
}

bool validate(const Options& o, std::string& error) {
    if (o.requests.empty()) {
        error = "no request to send";
        return false;
    }
    for (const auto& r : o.requests) {
        if (!isToken(r.method)) {
            error = "bad method '" + r.method + "'";
            return false;
        }
        if (r.weight == 0) {
            error = "request weights must be at least 1";
            return false;
        }
        for (const auto& [name, value] : r.headers) {
            if (!isToken(name) || !isFieldValue(value)) {
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
    return true;
}

} // namespace portico::load
