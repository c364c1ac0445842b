#include <portico/http/ascii.h>
#include <portico/load/from_capture.h>

#include <algorithm>
#include <map>
#include <strings.h>
#include <tuple>

namespace portico::load {
namespace {

using http::iequals;
using http::lower;

// Tokens of a Connection field value, lower-cased.
void connectionTokens(std::string_view v, std::vector<std::string>& out) {
    while (!v.empty()) {
        auto comma = v.find(',');
        auto token = v.substr(0, comma);
        while (!token.empty() && (token.front() == ' ' || token.front() == '\t'))
            token.remove_prefix(1);
        while (!token.empty() && (token.back() == ' ' || token.back() == '\t'))
            token.remove_suffix(1);
        if (!token.empty()) out.push_back(lower(token));
        if (comma == std::string_view::npos) break;
        v.remove_prefix(comma + 1);
    }
}

bool dropped(std::string_view name, const std::vector<std::string>& named) {
    static constexpr std::string_view kDrop[] = {"host",       "content-length", "transfer-encoding",
                                                 "connection", "keep-alive",     "te",
                                                 "upgrade",    "expect",         "http2-settings"};
    if (name.empty() || name.front() == ':') return true;
    for (auto d : kDrop)
        if (iequals(name, d)) return true;
    if (name.size() >= 6 && iequals(name.substr(0, 6), "proxy-")) return true;
    const auto l = lower(name);
    return std::find(named.begin(), named.end(), l) != named.end();
}

std::string skipLine(const capture::Exchange& e, std::string_view why) {
    return "#" + std::to_string(e.id) + " " + e.method + " " + e.target + ": " + std::string(why);
}

} // namespace

CaptureRequests requestsFromCapture(const std::vector<capture::Exchange>& exchanges,
                                    std::string_view baseUrl) {
    CaptureRequests out;
    std::string base(baseUrl);
    while (!base.empty() && base.back() == '/')
        base.pop_back();
    if (!base.empty()) {
        Url u;
        std::string error;
        if (!parseUrl(base, u, error)) {
            out.error = error;
            return out;
        }
        if (u.target.find('?') != std::string::npos) {
            out.error = "bad URL '" + base + "': a base URL takes no query";
            return out;
        }
    }
    constexpr std::size_t kMaxDistinct = 100000;
    constexpr std::size_t kMaxReasons = 20;
    using Key =
        std::tuple<std::string, std::string, std::vector<std::pair<std::string, std::string>>, std::string>;
    std::map<Key, std::size_t> index; // -> position in out.requests
    std::string origin;
    auto skip = [&](const capture::Exchange& e, std::string_view why) {
        ++out.skipped;
        if (out.skippedReasons.size() < kMaxReasons) out.skippedReasons.push_back(skipLine(e, why));
    };
    for (const auto& e : exchanges) {
        if (e.protocol == capture::Protocol::WebSocket) {
            skip(e, "WebSocket session");
            continue;
        }
        if (e.protocol == capture::Protocol::Grpc) {
            skip(e, "gRPC call");
            continue;
        }
        if (e.method.empty() || e.target.empty() || e.target.front() != '/') {
            skip(e, "no method or origin-form target");
            continue;
        }
        if (e.flags & capture::kRequestBodyTruncated) {
            skip(e, "request body captured only in part");
            continue;
        }
        std::string url;
        if (base.empty()) {
            const std::string o = (e.scheme.empty() ? std::string("http") : e.scheme) + "://" + e.authority;
            if (e.authority.empty()) {
                skip(e, "no recorded authority (give a base URL)");
                continue;
            }
            if (origin.empty()) {
                origin = o;
            } else if (origin != o) {
                out.error = "the recording has several origins (" + origin + ", " + o +
                            "); give a base URL to send them all to one";
                return out;
            }
            url = o + e.target;
        } else {
            url = base + e.target;
        }
        std::vector<std::string> named;
        for (const auto& h : e.requestHeaders)
            if (iequals(h.name, "connection")) connectionTokens(h.value, named);
        std::vector<std::pair<std::string, std::string>> fields;
        std::string cookie;
        for (const auto& h : e.requestHeaders) {
            if (dropped(h.name, named)) continue;
            if (iequals(h.name, "cookie")) {
                cookie += cookie.empty() ? h.value : "; " + h.value;
                continue;
            }
            fields.emplace_back(h.name, h.value);
        }
        if (!cookie.empty()) fields.emplace_back("cookie", cookie);
        Key key{e.method, url, fields, e.requestBody};
        auto [it, inserted] = index.emplace(std::move(key), out.requests.size());
        if (inserted) {
            if (out.requests.size() == kMaxDistinct) {
                out.error = "more than " + std::to_string(kMaxDistinct) + " distinct requests";
                return out;
            }
            RequestSpec spec;
            spec.url = std::move(url);
            spec.method = e.method;
            spec.headers = std::move(fields);
            spec.body = e.requestBody;
            spec.weight = 0;
            out.requests.push_back(std::move(spec));
        }
        ++out.requests[it->second].weight;
        ++out.used;
    }
    if (out.requests.empty()) {
        out.error = exchanges.empty() ? "the recording holds no exchanges"
                                      : "none of the " + std::to_string(exchanges.size()) +
                                            " recorded exchanges can be sent as a request";
    }
    return out;
}

} // namespace portico::load
