// What every HTTP client call in Portico shares, whatever protocol carries it: the Sink that gets
// the response, the Call handle its caller drives, the upstream choice among a route's upstreams.
// The HTTP/1.1 call (http1_call.h, RFC 9112, over TCP or TLS) and the HTTP/2 call (h2_client.h,
// RFC 9113, h2c or h2 over TLS) implement Call; the reverse proxy (proxy/forward.h) is their user
// today.
#pragma once

#include <portico/config/config.h>
#include <portico/http/message.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

typedef struct ssl_st SSL;

namespace portico::tls {
struct ClientTls;
}

namespace portico::client {

/// A TCP socket on a worker's io_context (the same type as a server connection's).
using UpstreamSocket =
    boost::asio::basic_stream_socket<boost::asio::ip::tcp, boost::asio::io_context::executor_type>;

/// Frees an OpenSSL connection (SSL_free).
struct SslFree {
    void operator()(SSL* ssl) const;
};
using SslPtr = std::unique_ptr<SSL, SslFree>;

/// What a caller may ask of a call beyond its route; the defaults are the reverse proxy's.
struct CallOptions {
    /// TLS for an https:// upstream (its ALPN list, verification and SNI; ClientTls::prepare is
    /// called on each connection). Null: the defaults (h2_client.h), which verify nothing.
    const tls::ClientTls* tls = nullptr;
    /// The upstream's addresses, resolved and checked by the caller, tried in order. Empty: the
    /// upstream's host is resolved at connect (client::resolve).
    std::vector<boost::asio::ip::tcp::endpoint> endpoints;
    /// HTTP/2 calls to an https:// upstream: one that does not select h2 with ALPN fails the call
    /// (502) instead of taking it as HTTP/1.1.
    bool http2Only = false;
    /// The response head's fields as received: hop-by-hop fields, those Connection names,
    /// Content-Length and Trailer kept (HTTP/2's pseudo-fields are still left out). For callers
    /// that record a response rather than pass it on.
    bool allFields = false;
    /// One exchange per connection: an HTTP/2 call handed over to HTTP/1.1 adds Connection: close
    /// (an HTTP/1.1 request made by the caller says so itself).
    bool closeAfter = false;
};

/// What the caller (a downstream HTTP/1.1 connection or HTTP/2 stream) does with the upstream's
/// answer. Called on the io_context's thread, never after Call::cancel().
class Sink {
public:
    virtual ~Sink() = default;
    /// The response head. `fields` is "Name: value\r\n" lines without hop-by-hop fields
    /// (http::isHopByHop, and those Connection names) and without Content-Length; `length` is the
    /// body length in bytes when the upstream gave one (also for a HEAD response), nullopt when the
    /// body runs until its end (chunked or close-delimited).
    virtual void onUpstreamHead(int status, std::string_view fields, std::optional<std::uint64_t> length) = 0;
    /// As onUpstreamHead, when body bytes (or the end) are already at hand and follow in this
    /// same call chain: the sink may hold the head back so head and first body bytes leave in one
    /// write. Default: onUpstreamHead.
    virtual void onUpstreamHeadBodyFollows(int status, std::string_view fields,
                                           std::optional<std::uint64_t> length) {
        onUpstreamHead(status, fields, length);
    }
    /// After onUpstreamHeadBodyFollows, when the bytes read so far held no body after all (an
    /// HTTP/2 upstream's HEADERS read without DATA): a held head leaves now. Default: nothing.
    virtual void onUpstreamHeadRelease() {}
    /// Body bytes (de-chunked). Return false when the downstream buffer is full: no more calls
    /// until Call::resume().
    virtual bool onUpstreamBody(std::string_view data) = 0;
    /// The whole response was delivered.
    virtual void onUpstreamEnd() = 0;
    /// Failure. Before the head: `status` is 502 (connect/reset/bad response) or 504 (timeout)
    /// and `message` says which upstream and why. After the head: `status` is 0 and the downstream
    /// must abort its response (the promised length cannot be kept).
    virtual void onUpstreamError(int status, const std::string& message) = 0;

    // HTTP/2 calls use these too; the defaults suit a downstream that has no use for them
    // (HTTP/1.1 drops trailers, a reset is an error).

    /// A connection to the upstream is ready for this request (capture's UpstreamConnected).
    virtual void onUpstreamConnected() {}
    /// This call opened a new upstream connection (not a pooled one); told before
    /// onUpstreamConnected. `resolvedNs`: the name's addresses were at hand (DNS done; at once for
    /// an IP literal), `tcpConnectedNs`: TCP connected (before any TLS handshake), both steady_clock
    /// nanoseconds since its epoch (capture's clock); `address` the peer connected, "127.0.0.1:8443"
    /// or "[::1]:8443".
    virtual void onUpstreamConnection(std::int64_t resolvedNs, std::int64_t tcpConnectedNs,
                                      std::string_view address) {
        (void)resolvedNs;
        (void)tcpConnectedNs;
        (void)address;
    }
    /// The TLS handshake with an https:// upstream completed, before onUpstreamConnected:
    /// `version` as OpenSSL names it ("TLSv1.3"), `alpn` the protocol selected ("" for none).
    virtual void onUpstreamTls(std::string_view version, std::string_view alpn) {
        (void)version;
        (void)alpn;
    }
    /// The whole request went to the socket (HTTP/1.1) or to the session (HTTP/2: its last frame
    /// queued for the connection's next write).
    virtual void onRequestSent() {}
    /// The first byte of this call's response arrived (HTTP/1.1: on its connection; HTTP/2: its
    /// first HEADERS frame).
    virtual void onUpstreamFirstByte() {}
    /// The response's trailer section, as "name: value\r\n" lines (lower-case names), before
    /// onUpstreamEnd(). RFC 9110 §6.5.
    virtual void onUpstreamTrailers(std::string_view fields) { (void)fields; }
    /// A response that is one HEADERS frame with END_STREAM (gRPC's Trailers-Only): no body, no
    /// trailers follow. The default delivers it as a head with length 0 and an end.
    virtual void onUpstreamHeadersOnly(int status, std::string_view fields) {
        onUpstreamHead(status, fields, 0);
        onUpstreamEnd();
    }
    /// The upstream reset the stream (RFC 9113 §6.4) with HTTP/2 error `code`. `headSent`: a head
    /// was delivered. The default: 502 before the head, an abort after it.
    virtual void onUpstreamReset(std::uint32_t code, bool headSent, const std::string& message) {
        (void)code;
        onUpstreamError(headSent ? 0 : 502, message);
    }
    /// An HTTP/1.1 request sent as a WebSocket Upgrade (Http1Request::upgrade) was answered with
    /// 101 (RFC 9110 §15.2.2). `fields` as for onUpstreamHead (Connection and Upgrade removed),
    /// `upstream` the connection, now the caller's, with its TLS state for an https:// upstream
    /// (`upstreamSsl`, else null), and `leftover` bytes it sent after the 101 head.
    virtual void onUpstreamUpgrade(std::string_view fields, UpstreamSocket upstream, SslPtr upstreamSsl,
                                   std::string_view leftover) {
        (void)fields;
        (void)upstream;
        (void)upstreamSsl;
        (void)leftover;
        onUpstreamError(502, "upstream switched protocols (not supported here)");
    }
    /// `n` bytes of a streamed request body (Call::requestBody) went upstream: the caller may
    /// accept that much more (HTTP/2 WINDOW_UPDATE).
    virtual void onRequestBodyConsumed(std::size_t n) { (void)n; }
};

/// A request in flight: an HTTP/1.1 call (http1_call.h) or an HTTP/2 stream (h2_client.h). Used on
/// its io_context's thread only.
class Call {
public:
    virtual ~Call() = default;
    /// The downstream drained: deliver more body.
    virtual void resume() = 0;
    /// The caller went away (or reset its stream): no more callbacks; an HTTP/2 stream is reset
    /// with CANCEL (RFC 9113 §8.7), an HTTP/1.1 connection closed.
    virtual void cancel() = 0;
    /// Only for requests whose body streams: more request body (de-chunked bytes), then `end`
    /// with the request's trailer fields (may be empty; hop-by-hop ones and Content-Length are
    /// dropped). The bytes are copied and held until the upstream takes them (an HTTP/2
    /// flow-control window, an HTTP/1.1 socket); Sink::onRequestBodyConsumed() reports each bite,
    /// which is how the caller bounds what waits here. Never calls the sink back from inside these.
    virtual void requestBody(std::string_view data) { (void)data; }
    virtual void requestEnd(std::span<const http::Header> trailers) { (void)trailers; }
};

/// Round-robin over `upstreams` (non-empty), starting at `next` and skipping those `failed(u)`
/// says are marked failed; if all are, the next one anyway (a dead upstream is retried rather
/// than refusing every request). Advances `next` past the one chosen. Shared by the HTTP/1.1 and
/// HTTP/2 calls (each keeps its own per-thread `next` and failure marks).
template <class Failed>
const config::Upstream& pickUpstream(const std::vector<config::Upstream>& upstreams, std::size_t& next,
                                     Failed&& failed) {
    for (std::size_t i = 0; i < upstreams.size(); ++i) {
        const auto& u = upstreams[(next + i) % upstreams.size()];
        if (!failed(u)) {
            next = (next + i + 1) % upstreams.size();
            return u;
        }
    }
    const auto& u = upstreams[next % upstreams.size()];
    next = (next + 1) % upstreams.size();
    return u;
}

} // namespace portico::client
