// HTTP/2 upstreams of proxy and grpc routes (RFC 9113): h2c with prior knowledge and h2 over TLS
// (ALPN), one multiplexed client session per upstream per worker thread.
#pragma once

#include "proxy/proxy_exchange.h"

#include <openssl/ssl.h>

namespace portico::tls {
struct ClientTls;
}

namespace portico::proxy {

/// Forwards `req` as one stream on an HTTP/2 connection to one of `action`'s upstreams (all h2c://
/// or all https://). The worker keeps one connection per upstream and opens every request on it
/// as a stream (RFC 9113 §5); nghttp2 queues streams past the upstream's
/// SETTINGS_MAX_CONCURRENT_STREAMS. A connection that received GOAWAY takes no new streams.
///
/// Request: pseudo-header fields from the request (`:authority` the client's host, or the
/// upstream's with change_origin; `:path` minus strip_prefix), the same end-to-end fields and
/// X-Forwarded-*/Via/Forwarded as for HTTP/1.1 upstreams, `te: trailers` kept, trailers passed.
/// With `bodyFollows` the body streams (Forward::requestBody) and is paced by the upstream's
/// flow-control window: Sink::onRequestBodyConsumed() reports what left.
///
/// Response: head, body (paced by the sink: bytes not yet taken are not acknowledged with
/// WINDOW_UPDATE, so at most one stream window, 1 MiB, waits per stream), trailers; a single
/// HEADERS frame with END_STREAM (gRPC Trailers-Only) reaches Sink::onUpstreamHeadersOnly.
///
/// Errors: connect failure or refusal → the next upstream, then 502; connect_timeout or no head
/// within response_timeout → 504; a connection lost before the head → 502; after it → abort
/// (status 0); an upstream RST_STREAM → Sink::onUpstreamReset with its error code (gRPC's
/// PROTOCOL-HTTP2.md maps it to a status at the client). A request with `grpc-timeout`
/// (capped by grpc_timeout_max) that outlives it is reset upstream (CANCEL) and answered
/// DEADLINE_EXCEEDED (grpc-status 4) when no head was sent yet.
std::shared_ptr<Forward> startH2(boost::asio::io_context& io, std::shared_ptr<void> owner,
                                 std::shared_ptr<const void> snapshot, const config::ProxyAction& action,
                                 const http::Request& req, bool tls, Sink* sink, bool bodyFollows);

/// The TLS client context of https:// upstreams' first connection, one per worker thread (freed
/// when the thread ends): TLS 1.2+, ALPN "h2" then "http/1.1", certificates not verified (a dev
/// server's upstreams use local or self-signed ones). An upstream that selects http/1.1, or no
/// protocol (RFC 7301 §3.2), is noted (speaksHttp1) and the requests waiting for it, and all later
/// ones, go to the HTTP/1.1 client (Exchange over TLS); a `grpc:` route's get 502.
SSL_CTX* h2UpstreamTlsContext();

/// The TLS client context of an https:// upstream that speaks HTTP/1.1, for `host`, one per worker
/// thread and host: ALPN http/1.1 only, certificates not verified, SNI for a name (ClientTls::
/// prepare). Null with `error` when OpenSSL cannot make it.
const tls::ClientTls* http1UpstreamTls(const std::string& host, std::string& error);

/// Whether `upstream` (https://) selected http/1.1 or no ALPN protocol on this worker thread.
bool speaksHttp1(const config::Upstream& upstream);

/// Parses a gRPC `grpc-timeout` value ("1-8 digits" + H, M, S, m, u or n); nullopt if invalid.
std::optional<std::chrono::nanoseconds> parseGrpcTimeout(std::string_view value);

} // namespace portico::proxy
