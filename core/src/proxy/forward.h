// The reverse proxy (RFC 9110 §7.6): which client a `proxy:`, `grpc:` or `fastcgi:` route's request
// goes to (forward), the request as rewritten for the upstream (hop-by-hop fields dropped,
// X-Forwarded-*, Via, Forwarded added, strip_prefix, change_origin) and the response fields as
// merged for the downstream. The calls themselves are client/'s (HTTP/1.1 and HTTP/2) and
// fastcgi.h's.
#pragma once

#include "client/call.h"

#include <portico/config/config.h>
#include <portico/http/message.h>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace portico::proxy {

using client::Sink;

/// Starts forwarding `req` on `action`'s upstreams: HTTP/1.1 (Exchange), HTTP/2 (h2c/h2) or
/// FastCGI. With `bodyFollows` (only where streamsRequestBody(action)) req.body is ignored and the
/// body comes through Call::requestBody/requestEnd; its length is req's Content-Length field when
/// it has one (and no Transfer-Encoding), else unknown. Never calls `sink` before returning.
/// `options` (an intercepted tunnel's origin: its verifying TLS context) goes to the client call
/// and must outlive it; null: the reverse proxy's defaults. `hosts` (the config's `hosts:`, which
/// `snapshot` keeps; null: none) gives an upstream name a fixed address; the name is still what
/// the request, SNI and the certificate check use.
std::shared_ptr<client::Call> forward(boost::asio::io_context& io, std::shared_ptr<void> owner,
                                      std::shared_ptr<const void> snapshot, const config::ProxyAction& action,
                                      const http::Request& req, bool tls, client::Sink* sink,
                                      bool bodyFollows = false, const client::CallOptions* options = nullptr,
                                      const config::HostOverrides* hosts = nullptr);

/// True when `action` forwards request bodies as they arrive (`proxy:` and `grpc:` routes, HTTP/1.1
/// and HTTP/2 upstreams alike; not `fastcgi:`, whose CONTENT_LENGTH must be known up front), so a
/// downstream starts the exchange at the end of the request head and streams the body: uploads in
/// bounded memory, gRPC client-streaming and bidirectional calls.
bool streamsRequestBody(const config::ProxyAction& action);

namespace detail {

/// Appends the request-target sent upstream: the path as received (still percent-encoded) minus
/// the route's strip_prefix (kept whole when the prefix does not end at a segment boundary), always
/// starting with '/', then '?' and the query if there is one.
void appendUpstreamTarget(std::string& out, const config::ProxyAction& action, const http::Request& req);

/// What copyEndToEndFields saw of the fields it does not copy.
struct RequestFieldsSeen {
    std::string_view contentLength; ///< the Content-Length value ("" without one)
    std::string_view xForwardedFor; ///< the received X-Forwarded-For list ("" without one)
    std::string_view via;           ///< the received Via list ("" without one)
    bool teTrailers = false;        ///< TE lists "trailers" (end-to-end in meaning: gRPC needs it)
};

/// The request fields a reverse proxy passes on as received (RFC 9110 §7.6): calls
/// copy(name, value) for each field of `req` that is not hop-by-hop (`hopByHop(name)`: http::isHopByHop, plus
/// HTTP2-Settings for HTTP/2), not named in Connection, and not Host or a pseudo-field (the caller writes
/// Host or :authority), Content-Length (the caller frames the body), X-Forwarded-For or Via
/// (addForwardingFields extends them). Shared by the HTTP/1.1 and HTTP/2 upstreams.
template <class HopByHop, class Copy>
RequestFieldsSeen copyEndToEndFields(const http::Request& req, HopByHop&& hopByHop, Copy&& copy) {
    RequestFieldsSeen seen;
    std::string_view connection;
    for (const auto& h : req.headers)
        if (http::iequals(h.name, "connection")) connection = h.value;
    for (const auto& h : req.headers) {
        if (http::iequals(h.name, "te") && http::listHasToken(h.value, "trailers")) seen.teTrailers = true;
        if (hopByHop(h.name) || http::listHasToken(connection, h.name) || http::iequals(h.name, "host") ||
            (!h.name.empty() && h.name.front() == ':'))
            continue;
        if (http::iequals(h.name, "content-length"))
            seen.contentLength = h.value;
        else if (http::iequals(h.name, "x-forwarded-for"))
            seen.xForwardedFor = h.value;
        else if (http::iequals(h.name, "via"))
            seen.via = h.value;
        else
            copy(h.name, h.value);
    }
    return seen;
}

/// The fields the proxy adds (none for a `transparent` action, which only writes back the received
/// X-Forwarded-For and Via lists), as add(name, pieces) calls in this order, each value given as the
/// pieces to write one after another (no allocation here): X-Forwarded-For (the received list,
/// then the client's address or "unknown"), X-Forwarded-Proto, X-Forwarded-Host (when the request
/// named a host), Via (the received list, then this hop: "1.1 portico", "1.0 portico" or
/// "2 portico", RFC 9110 §7.6.3) and, with `action.forwarded`, Forwarded (RFC 7239 §4; an IPv6
/// address quoted and bracketed). Names are lower-case when `lowerCaseNames` (HTTP/2), else
/// written as nginx writes them.
template <class Add>
void addForwardingFields(const http::Request& req, bool tls, const config::ProxyAction& action,
                         const RequestFieldsSeen& seen, bool lowerCaseNames, Add&& add) {
    using Pieces = std::initializer_list<std::string_view>;
    if (action.transparent) { // a forward proxy passes the request on as it came
        if (!seen.xForwardedFor.empty())
            add(lowerCaseNames ? "x-forwarded-for" : "X-Forwarded-For", Pieces{seen.xForwardedFor});
        if (!seen.via.empty()) add(lowerCaseNames ? "via" : "Via", Pieces{seen.via});
        return;
    }
    const std::string_view proto = tls ? "https" : "http";
    const std::string_view client =
        req.clientAddress.empty() ? std::string_view("unknown") : req.clientAddress;
    const std::string_view hop =
        req.versionMajor == 2 ? "2 portico" : (req.versionMinor == 0 ? "1.0 portico" : "1.1 portico");
    const std::string_view xff = lowerCaseNames ? "x-forwarded-for" : "X-Forwarded-For";
    const std::string_view via = lowerCaseNames ? "via" : "Via";
    if (seen.xForwardedFor.empty())
        add(xff, Pieces{client});
    else
        add(xff, Pieces{seen.xForwardedFor, ", ", client});
    add(lowerCaseNames ? "x-forwarded-proto" : "X-Forwarded-Proto", Pieces{proto});
    if (!req.host.empty()) add(lowerCaseNames ? "x-forwarded-host" : "X-Forwarded-Host", Pieces{req.host});
    if (seen.via.empty())
        add(via, Pieces{hop});
    else
        add(via, Pieces{seen.via, ", ", hop});
    if (!action.forwarded) return;
    const bool v6 = req.clientAddress.find(':') != std::string_view::npos;
    const std::string_view forwarded = lowerCaseNames ? "forwarded" : "Forwarded";
    if (req.host.empty())
        add(forwarded, Pieces{"for=", v6 ? "\"[" : "", req.clientAddress, v6 ? "]\"" : "", ";proto=", proto});
    else
        add(forwarded, Pieces{"for=", v6 ? "\"[" : "", req.clientAddress, v6 ? "]\"" : "", ";proto=", proto,
                              ";host=\"", req.host, "\""});
}

} // namespace detail

/// The fields a proxied response carries downstream, as fn(name, value) calls: the upstream's
/// (`upstream`, as given to Sink::onUpstreamHead) without Date and Server (the downstream writes
/// its own) and without any name `overrides` (the vhost's and route's `headers`) sets, then
/// `overrides`. Names compare case-insensitively (RFC 9110 §5.1). `transparent` (a forward
/// proxy's answer from an origin): the upstream's Date and Server are kept (the downstream writes
/// neither of its own).
template <class Fn>
void mergeResponseFields(std::string_view upstream, std::string_view overrides, Fn&& fn,
                         bool transparent = false) {
    http::forEachFieldLine(upstream, [&](std::string_view name, std::string_view value) {
        if (!transparent && (http::iequals(name, "date") || http::iequals(name, "server"))) return;
        bool overridden = false;
        http::forEachFieldLine(overrides, [&](std::string_view mine, std::string_view) {
            overridden = overridden || http::iequals(mine, name);
        });
        if (!overridden) fn(name, value);
    });
    http::forEachFieldLine(overrides, fn);
}

/// Parses a gRPC `grpc-timeout` value ("1-8 digits" + H, M, S, m, u or n); nullopt if invalid.
std::optional<std::chrono::nanoseconds> parseGrpcTimeout(std::string_view value);

} // namespace portico::proxy
