// Request rewriting shared by the HTTP/1.1 and HTTP/2 upstreams (RFC 9110 §7.6; declared in
// proxy_exchange.h, namespace detail).
#include "proxy/proxy_exchange.h"

namespace portico::proxy {

namespace detail {

bool listHasToken(std::string_view list, std::string_view token) {
    while (!list.empty()) {
        auto comma = list.find(',');
        std::string_view element = list.substr(0, comma);
        while (!element.empty() && (element.front() == ' ' || element.front() == '\t'))
            element.remove_prefix(1);
        while (!element.empty() && (element.back() == ' ' || element.back() == '\t'))
            element.remove_suffix(1);
        if (http::iequals(element, token)) return true;
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
    }
    return false;
}

void appendUpstreamTarget(std::string& out, const config::ProxyAction& action, const http::Request& req) {
    std::string_view path = req.rawPath;
    if (!action.stripPrefix.empty() && path.starts_with(action.stripPrefix)) {
        path.remove_prefix(action.stripPrefix.size());
        if (!action.stripPrefix.ends_with('/') && !path.empty() && path.front() != '/') path = req.rawPath;
    }
    if (path.empty() || path.front() != '/') out.push_back('/');
    out.append(path);
    if (!req.query.empty()) {
        out.push_back('?');
        out.append(req.query);
    }
}

bool hopByHop(std::string_view name) {
    // By length first: every field of a request or response passes here, and most are none of these.
    switch (name.size()) {
    case 2:
        return http::iequals(name, "te");
    case 7:
        return http::iequals(name, "upgrade");
    case 10:
        return http::iequals(name, "connection") || http::iequals(name, "keep-alive");
    case 16:
        return http::iequals(name, "proxy-connection");
    case 17:
        return http::iequals(name, "transfer-encoding");
    case 18:
        return http::iequals(name, "proxy-authenticate");
    case 19:
        return http::iequals(name, "proxy-authorization");
    default:
        return false;
    }
}

} // namespace detail

} // namespace portico::proxy
