// The HTTP/2 client call (RFC 9113): h2c with prior knowledge and h2 over TLS (ALPN), one
// multiplexed nghttp2 client session per upstream per io_context, each request one stream.
#pragma once

#include "client/call.h"

#include <portico/config/config.h>
#include <portico/http/message.h>

#include <boost/asio/io_context.hpp>

#include <openssl/ssl.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace portico::tls {
struct ClientTls;
}

namespace portico::client {

/// A request in HTTP/2 form, as the caller wrote it: field names lower-case (RFC 9113 §8.2.1),
/// pseudo-fields (:method, :scheme, :authority, :path) first, names and values back to back in one
/// arena.
struct H2Request {
    struct Span {
        std::uint32_t name, nameLen, value, valueLen; ///< offsets and lengths in bytes
    };
    std::string arena;
    std::vector<Span> head; ///< the header section
    /// The whole body (`bodyFollows` false), or what arrived of it before start.
    std::string body;
    std::string trailerArena;
    std::vector<Span> trailers; ///< sent after the body (RFC 9110 §6.5); only without `bodyFollows`
    /// gRPC: the call's deadline (from grpc-timeout, capped): reset upstream with CANCEL when it
    /// passes, and answered DEADLINE_EXCEEDED (grpc-status 4) when no head was delivered yet.
    std::optional<std::chrono::nanoseconds> grpcTimeout;
    bool bodyFollows = false;  ///< the body comes through Call::requestBody/requestEnd
    bool grpc = false;         ///< content-type application/grpc*: no handover to HTTP/1.1
    bool headRequest = false;  ///< HEAD: the response has no body whatever its fields say
    bool idempotent = false;   ///< RFC 9110 §9.2.2: may be retried on a new connection
    bool bodyWasEmpty = false; ///< no body at all (END_STREAM on HEADERS)

    /// Appends a field to `head` (`name` lower-cased as it is copied).
    void add(std::string_view name, std::string_view value) { append(arena, head, name, value); }
    /// Appends a trailer field.
    void addTrailer(std::string_view name, std::string_view value) {
        append(trailerArena, trailers, name, value);
    }

private:
    static void append(std::string& arena, std::vector<Span>& spans, std::string_view name,
                       std::string_view value);
};

/// RFC 9110 §7.6.1 and RFC 9113 §8.2.2: fields that never cross an HTTP/2 hop (http::isHopByHop,
/// and HTTP2-Settings).
inline bool isH2HopByHop(std::string_view name) {
    return http::isHopByHop(name) || http::iequals(name, "http2-settings");
}

/// Sends `req` as one stream on an HTTP/2 connection to one of `action`'s upstreams (all h2c:// or
/// all https://). Each io_context keeps one connection per upstream and opens every request on it as a
/// stream (RFC 9113 §5); nghttp2 queues streams past the upstream's
/// SETTINGS_MAX_CONCURRENT_STREAMS. A connection that received GOAWAY takes no new streams. An
/// https:// upstream that selects http/1.1 (or no protocol) with ALPN gets this request and later
/// ones as HTTP/1.1 calls (http1_call.h; speaksHttp1 then says so); a gRPC request gets 502.
///
/// With `req.bodyFollows` the body streams (Call::requestBody) and is paced by the upstream's
/// flow-control window: Sink::onRequestBodyConsumed() reports what left.
///
/// Response: head, body (paced by the sink: bytes not yet taken are not acknowledged with
/// WINDOW_UPDATE, so at most one stream window, 1 MiB, waits per stream), trailers; a single
/// HEADERS frame with END_STREAM (gRPC Trailers-Only) reaches Sink::onUpstreamHeadersOnly.
///
/// Errors: connect failure or refusal → the next upstream, then 502; connect_timeout or no head
/// within response_timeout → 504; a connection lost before the head → 502; after it → abort
/// (status 0); an upstream RST_STREAM → Sink::onUpstreamReset with its error code (gRPC's
/// PROTOCOL-HTTP2.md maps it to a status at the client). Never calls `sink` before returning.
/// `options` (null: the defaults) must outlive the call; calls on one io_context to one upstream
/// share its connection, made with the first one's options and its `hosts` (the config's `hosts:`
/// overrides of the upstream's address, client::resolve; null: none; `snapshot` keeps them).
std::shared_ptr<Call> startH2(boost::asio::io_context& io, std::shared_ptr<void> owner,
                              std::shared_ptr<const void> snapshot, const config::ProxyAction& action,
                              H2Request&& req, Sink* sink, const CallOptions* options = nullptr,
                              const config::HostOverrides* hosts = nullptr);

/// The TLS client context of https:// upstreams' first connection, one per thread (freed when the
/// thread ends): TLS 1.2+, ALPN "h2" then "http/1.1", certificates not verified (a dev server's
/// upstreams use local or self-signed ones).
SSL_CTX* h2UpstreamTlsContext();

/// The TLS client context of an https:// upstream that speaks HTTP/1.1, for `host`, one per thread
/// and host: ALPN http/1.1 only, certificates not verified, SNI for a name (ClientTls::prepare),
/// a close without close_notify read as the end. Null with `error` when OpenSSL cannot make it.
const tls::ClientTls* http1UpstreamTls(const std::string& host, std::string& error);

/// Whether `upstream` (https://) selected http/1.1 or no ALPN protocol on a connection made from `io`
/// with `options`' TLS (CallOptions::tls; null: the default context).
bool speaksHttp1(boost::asio::io_context& io, const config::Upstream& upstream,
                 const CallOptions* options = nullptr);

} // namespace portico::client
