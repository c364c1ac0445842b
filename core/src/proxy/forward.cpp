// The reverse proxy's front: which client a route's request goes to (forward), the request as
// rewritten for an HTTP/1.1 or HTTP/2 upstream, whether its body can stream, and gRPC's timeout
// header.
#include "proxy/forward.h"

#include "client/h2_client.h"
#include "client/http1_call.h"
#include "proxy/fastcgi.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <memory>

namespace portico::proxy {
namespace asio = boost::asio;

std::optional<std::chrono::nanoseconds> parseGrpcTimeout(std::string_view value) {
    if (value.size() < 2 || value.size() > 9) return std::nullopt;
    std::uint64_t n = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size() - 1, n);
    if (ec != std::errc{} || p != value.data() + value.size() - 1) return std::nullopt;
    using namespace std::chrono;
    switch (value.back()) {
    case 'H':
        return duration_cast<nanoseconds>(hours(n));
    case 'M':
        return duration_cast<nanoseconds>(minutes(n));
    case 'S':
        return duration_cast<nanoseconds>(seconds(n));
    case 'm':
        return duration_cast<nanoseconds>(milliseconds(n));
    case 'u':
        return duration_cast<nanoseconds>(microseconds(n));
    case 'n':
        return nanoseconds(n);
    default:
        return std::nullopt;
    }
}

namespace detail {

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

} // namespace detail

bool streamsRequestBody(const config::ProxyAction& action) {
    return action.fastcgi.address.empty() && !action.upstreams.empty();
}

namespace {

// Proxy-Authorization, Proxy-Connection and other fields addressed to the proxy (RFC 9110 §11.7).
bool isProxyField(std::string_view name) {
    return name.size() > 6 && http::iequals(name.substr(0, 6), "proxy-");
}

bool idempotent(http::Method m) {
    return m == http::Method::Get || m == http::Method::Head || m == http::Method::Options ||
           m == http::Method::Put || m == http::Method::Delete || m == http::Method::Trace;
}

// RFC 9110 §8.6: a request without a body but with a method that defines one says so with
// Content-Length: 0.
bool sendsLength(const http::Request& req) {
    return !req.body.empty() || (req.method != http::Method::Get && req.method != http::Method::Head &&
                                 req.method != http::Method::Options && req.method != http::Method::Delete);
}

// `req` rewritten for an HTTP/1.1 upstream into `out` (RFC 9112; RFC 9110 §7.6).
void buildHttp1(client::Http1Request& out, const config::ProxyAction& action, const http::Request& req,
                bool tls, bool bodyFollows) {
    out.streaming = bodyFollows;
    out.headRequest = req.method == http::Method::Head;
    out.idempotent = idempotent(req.method);
    if (action.ws && req.versionMajor == 1) {
        // RFC 6455 §4.1: GET with Upgrade: websocket and Connection: upgrade.
        bool upgrade = false, connection = false;
        for (const auto& h : req.headers) {
            if (http::iequals(h.name, "upgrade") && http::listHasToken(h.value, "websocket")) upgrade = true;
            if (http::iequals(h.name, "connection") && http::listHasToken(h.value, "upgrade"))
                connection = true;
        }
        out.upgrade = upgrade && connection && req.method == http::Method::Get;
    }
    std::string& r = out.head;
    r.reserve(512 + req.body.size());
    r.append(req.methodToken);
    r.push_back(' ');
    detail::appendUpstreamTarget(r, action, req);
    r.append(" HTTP/1.1\r\n");
    auto line = [&r](std::string_view name, std::string_view value) {
        r.append(name);
        r.append(": ");
        r.append(value);
        r.append("\r\n");
    };
    const detail::RequestFieldsSeen seen = detail::copyEndToEndFields(
        req,
        [&action](std::string_view name) {
            return http::isHopByHop(name) || (action.transparent && isProxyField(name));
        },
        line);
    if (seen.teTrailers) r.append("TE: trailers\r\n"); // TE: trailers is end-to-end in meaning (§7.6.1)
    if (out.upgrade) r.append("Connection: Upgrade\r\nUpgrade: websocket\r\n");
    line("Host", action.changeOrigin || req.host.empty()
                     ? std::string_view(action.upstreams.front().authority)
                     : req.host);
    detail::addForwardingFields(req, tls, action, seen, false,
                                [&r](std::string_view name, std::initializer_list<std::string_view> pieces) {
                                    r.append(name);
                                    r.append(": ");
                                    for (std::string_view p : pieces)
                                        r.append(p);
                                    r.append("\r\n");
                                });
    if (bodyFollows) {
        // RFC 9112 §6.1-6.3: the length the client declared, else chunked. A request with both
        // fields never gets here (the HTTP/1.1 parser refuses it, HTTP/2 has no Transfer-Encoding).
        std::string_view length;
        bool te = false;
        for (const auto& h : req.headers) {
            if (http::iequals(h.name, "content-length")) length = h.value;
            if (http::iequals(h.name, "transfer-encoding")) te = true;
        }
        std::uint64_t n = 0;
        auto [end, err] = std::from_chars(length.data(), length.data() + length.size(), n);
        out.chunked = te || length.empty() || err != std::errc{} || end != length.data() + length.size();
        r.append(out.chunked ? std::string_view("Transfer-Encoding: chunked\r\n")
                             : std::string_view("Content-Length: "));
        if (!out.chunked) {
            r.append(length);
            r.append("\r\n");
        }
    } else if (sendsLength(req)) {
        char n[24];
        auto e = std::to_chars(n, n + sizeof n, req.body.size());
        r.append("Content-Length: ");
        r.append(n, static_cast<std::size_t>(e.ptr - n));
        r.append("\r\n");
    }
    r.append("\r\n");
    r.append(req.body); // the body follows the head in one write
}

// `req` rewritten for an HTTP/2 upstream (RFC 9113 §8.3; RFC 9110 §7.6), with gRPC's grpc-timeout
// capped by grpc_timeout_max.
client::H2Request buildH2(const config::ProxyAction& action, const http::Request& req, bool tls,
                          bool bodyFollows) {
    client::H2Request out;
    const bool h2 = action.upstreams.front().protocol == config::Upstream::Protocol::H2;
    out.bodyFollows = bodyFollows;
    out.headRequest = req.method == http::Method::Head;
    out.idempotent = idempotent(req.method);
    out.bodyWasEmpty = !bodyFollows && req.body.empty();
    out.arena.reserve(512);
    out.add(":method", req.methodToken);
    out.add(":scheme", h2 ? "https" : "http");
    out.add(":authority", action.changeOrigin || req.host.empty()
                              ? std::string_view(action.upstreams.front().authority)
                              : req.host);
    std::string path;
    detail::appendUpstreamTarget(path, action, req);
    out.add(":path", path);
    const detail::RequestFieldsSeen seen = detail::copyEndToEndFields(
        req,
        [&action](std::string_view name) {
            return client::isH2HopByHop(name) || (action.transparent && isProxyField(name));
        },
        [&](std::string_view name, std::string_view value) {
            if (http::iequals(name, "content-type") && value.starts_with("application/grpc")) out.grpc = true;
            if (http::iequals(name, "grpc-timeout")) {
                out.grpcTimeout = parseGrpcTimeout(value);
                if (action.grpcTimeoutMax.count() > 0 && out.grpcTimeout &&
                    *out.grpcTimeout > action.grpcTimeoutMax)
                    return; // replaced by the cap below
            }
            out.add(name, value);
        });
    if (action.grpcTimeoutMax.count() > 0 && (out.grpc || out.grpcTimeout) &&
        (!out.grpcTimeout || *out.grpcTimeout > action.grpcTimeoutMax)) {
        out.grpcTimeout = action.grpcTimeoutMax;
        // gRPC allows at most 8 digits: milliseconds, or seconds past that.
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(action.grpcTimeoutMax).count();
        std::string v = ms < 100000000 ? std::to_string(std::max<long long>(ms, 1)) + "m"
                                       : std::to_string(ms / 1000) + "S";
        out.add("grpc-timeout", v);
    }
    if (seen.teTrailers) out.add("te", "trailers");
    std::string value;
    detail::addForwardingFields(req, tls, action, seen, true,
                                [&](std::string_view name, std::initializer_list<std::string_view> pieces) {
                                    value.clear();
                                    for (std::string_view p : pieces)
                                        value.append(p);
                                    out.add(name, value);
                                });
    if (bodyFollows) {
        if (!seen.contentLength.empty()) out.add("content-length", seen.contentLength);
    } else {
        out.body.assign(req.body);
        if (sendsLength(req)) out.add("content-length", std::to_string(req.body.size()));
        for (const auto& t : req.trailers)
            if (!client::isH2HopByHop(t.name) && !http::iequals(t.name, "content-length"))
                out.addTrailer(t.name, t.value);
    }
    return out;
}

// Whether `action`'s requests go to the HTTP/2 client (the upstreams are all of one scheme):
// h2c:// always; https:// unless the route forwards WebSocket upgrades (an HTTP/1.1 affair) or
// every upstream was seen to select http/1.1 on this io_context, and always for gRPC (whose 502
// then says why). http:// never.
bool viaHttp2(asio::io_context& io, const config::ProxyAction& action, const client::CallOptions* options) {
    if (action.upstreams.empty()) return false;
    switch (action.upstreams.front().protocol) {
    case config::Upstream::Protocol::Http1:
        return false;
    case config::Upstream::Protocol::H2c:
        return true;
    case config::Upstream::Protocol::H2:
        break;
    }
    if (action.grpc) return true;
    if (action.ws) return false;
    return !std::all_of(action.upstreams.begin(), action.upstreams.end(),
                        [&](const config::Upstream& u) { return client::speaksHttp1(io, u, options); });
}

} // namespace

std::shared_ptr<client::Call> forward(asio::io_context& io, std::shared_ptr<void> owner,
                                      std::shared_ptr<const void> snapshot, const config::ProxyAction& action,
                                      const http::Request& req, bool tls, client::Sink* sink,
                                      bool bodyFollows, const client::CallOptions* options,
                                      const config::HostOverrides* hosts) {
    if (!action.fastcgi.address.empty())
        return startFastCgi(io, std::move(owner), std::move(snapshot), action, req, tls, sink, hosts);
    if (viaHttp2(io, action, options))
        return client::startH2(io, std::move(owner), std::move(snapshot), action,
                               buildH2(action, req, tls, bodyFollows), sink, options, hosts);
    auto call = client::Http1Call::create(io, action);
    buildHttp1(call->request(), action, req, tls, bodyFollows);
    call->start(std::move(owner), std::move(snapshot), sink, options, hosts);
    return call;
}

} // namespace portico::proxy
