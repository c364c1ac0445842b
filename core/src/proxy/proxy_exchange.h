// One proxied exchange (RFC 9110 §7.6): the request forwarded to an upstream of a `proxy:` route
// (HTTP/1.1 here, over TCP or TLS; HTTP/2 in h2_upstream.h), and its response streamed back to the
// downstream connection with backpressure.
#pragma once

#include <portico/config/config.h>
#include <portico/http/message.h>
#include <portico/http1/parser.h>
#include <portico/http1/response_parser.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

typedef struct ssl_st SSL;

namespace portico::proxy {

/// A TCP socket on a worker's io_context (the same type as the downstream connection's).
using UpstreamSocket =
    boost::asio::basic_stream_socket<boost::asio::ip::tcp, boost::asio::io_context::executor_type>;

/// Frees an OpenSSL connection (SSL_free).
struct SslFree {
    void operator()(SSL* ssl) const;
};
using SslPtr = std::unique_ptr<SSL, SslFree>;

/// What the downstream side (an HTTP/1.1 connection or an HTTP/2 stream) does with the upstream's
/// answer. Called on the worker thread, never after Exchange::cancel().
class Sink {
public:
    virtual ~Sink() = default;
    /// The response head. `fields` is "Name: value\r\n" lines without hop-by-hop fields and
    /// without Content-Length; `length` is the body length when the upstream gave one (also for a
    /// HEAD response), nullopt when the body runs until its end (chunked or close-delimited).
    virtual void onUpstreamHead(int status, std::string_view fields, std::optional<std::uint64_t> length) = 0;
    /// As onUpstreamHead, when body bytes (or the end) are already at hand and follow in this
    /// same call chain: the sink may hold the head back so head and first body bytes leave in one
    /// write. Default: onUpstreamHead.
    virtual void onUpstreamHeadBodyFollows(int status, std::string_view fields,
                                           std::optional<std::uint64_t> length) {
        onUpstreamHead(status, fields, length);
    }
    /// Body bytes (de-chunked). Return false when the downstream buffer is full: no more calls
    /// until Exchange::resume().
    virtual bool onUpstreamBody(std::string_view data) = 0;
    /// The whole response was delivered.
    virtual void onUpstreamEnd() = 0;
    /// Failure. Before the head: `status` is 502 (connect/reset/bad response) or 504 (timeout)
    /// and `message` says which upstream and why. After the head: `status` is 0 and the downstream
    /// must abort its response (the promised length cannot be kept).
    virtual void onUpstreamError(int status, const std::string& message) = 0;

    // HTTP/2 upstreams (h2_upstream.h) call these too; the defaults suit a downstream that has no
    // use for them (HTTP/1.1 drops trailers, a reset is an error).

    /// A connection to the upstream is ready for this request (capture's UpstreamConnected).
    virtual void onUpstreamConnected() {}
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
    /// `ws: true` routes: the HTTP/1.1 upstream answered an Upgrade request with 101 (RFC 9110
    /// §15.2.2). `fields` as for onUpstreamHead (Connection and Upgrade removed), `upstream` the
    /// connection, now the tunnel's, with its TLS state for an https:// upstream (`upstreamSsl`,
    /// else null), and `leftover` bytes it sent after the 101 head.
    virtual void onUpstreamUpgrade(std::string_view fields, UpstreamSocket upstream, SslPtr upstreamSsl,
                                   std::string_view leftover) {
        (void)fields;
        (void)upstream;
        (void)upstreamSsl;
        (void)leftover;
        onUpstreamError(502, "upstream switched protocols (not supported here)");
    }
    /// `n` bytes of a streamed request body (Forward::requestBody) went upstream: the downstream
    /// may accept that much more (HTTP/2 WINDOW_UPDATE).
    virtual void onRequestBodyConsumed(std::size_t n) { (void)n; }
};

/// A request being forwarded: the HTTP/1.1 Exchange below or an HTTP/2 upstream stream
/// (h2_upstream.h). Used on the worker thread only.
class Forward {
public:
    virtual ~Forward() = default;
    /// The downstream drained: deliver more body.
    virtual void resume() = 0;
    /// The downstream went away (or reset its stream): no more callbacks; an HTTP/2 upstream
    /// stream is reset with CANCEL (RFC 9113 §8.7), an HTTP/1.1 connection closed.
    virtual void cancel() = 0;
    /// Only for requests started with `bodyFollows`: more request body (de-chunked bytes), then
    /// `end` with the request's trailer fields (may be empty). The bytes are copied and held until
    /// the upstream takes them (an HTTP/2 upstream's flow-control window, an HTTP/1.1 upstream's
    /// socket); Sink::onRequestBodyConsumed() reports each bite, which is how the downstream bounds
    /// what waits here. Never calls the sink back from inside these calls.
    virtual void requestBody(std::string_view data) { (void)data; }
    virtual void requestEnd(std::span<const http::Header> trailers) { (void)trailers; }
};

/// Starts forwarding `req` on `action`'s upstreams: HTTP/1.1 (Exchange), HTTP/2 (h2c/h2) or
/// FastCGI. With `bodyFollows` (only where streamsRequestBody(action)) req.body is ignored and the
/// body comes through Forward::requestBody/requestEnd; its length is req's Content-Length field when
/// it has one (and no Transfer-Encoding), else unknown. Never calls `sink` before returning.
std::shared_ptr<Forward> forward(boost::asio::io_context& io, std::shared_ptr<void> owner,
                                 std::shared_ptr<const void> snapshot, const config::ProxyAction& action,
                                 const http::Request& req, bool tls, Sink* sink, bool bodyFollows = false);

/// True when `action` forwards request bodies as they arrive (`proxy:` and `grpc:` routes, HTTP/1.1
/// and HTTP/2 upstreams alike; not `fastcgi:`, whose CONTENT_LENGTH must be known up front), so a
/// downstream starts the exchange at the end of the request head and streams the body: uploads in
/// bounded memory, gRPC client-streaming and bidirectional calls.
bool streamsRequestBody(const config::ProxyAction& action);

namespace detail {

/// Is `token` one of the comma-separated elements of a field value ("close, X-Foo"), compared
/// case-insensitively with surrounding whitespace ignored (RFC 9110 §5.6.1)?
bool listHasToken(std::string_view list, std::string_view token);

/// RFC 9110 §7.6.1: fields that apply to one connection only and never cross a proxy
/// (Connection, Keep-Alive, Proxy-Connection, TE, Transfer-Encoding, Upgrade, Proxy-Authorization,
/// Proxy-Authenticate). Fields named in Connection are checked apart (listHasToken).
bool hopByHop(std::string_view name);

/// Round-robin over `upstreams` (non-empty), starting at `next` and skipping those `failed(u)`
/// says are marked failed; if all are, the next one anyway (a dead upstream is retried rather
/// than refusing every request). Advances `next` past the one chosen. Shared by the HTTP/1.1 and
/// HTTP/2 upstream pools (each keeps its own per-thread `next` and failure marks).
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
/// copy(name, value) for each field of `req` that is not hop-by-hop (`hopByHop(name)`), not named
/// in Connection, and not Host or a pseudo-field (the caller writes Host or :authority),
/// Content-Length (the caller frames the body), X-Forwarded-For or Via (addForwardingFields
/// extends them). Shared by the HTTP/1.1 and HTTP/2 upstreams.
template <class HopByHop, class Copy>
RequestFieldsSeen copyEndToEndFields(const http::Request& req, HopByHop&& hopByHop, Copy&& copy) {
    RequestFieldsSeen seen;
    std::string_view connection;
    for (const auto& h : req.headers)
        if (http::iequals(h.name, "connection")) connection = h.value;
    for (const auto& h : req.headers) {
        if (http::iequals(h.name, "te") && listHasToken(h.value, "trailers")) seen.teTrailers = true;
        if (hopByHop(h.name) || listHasToken(connection, h.name) || http::iequals(h.name, "host") ||
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

/// The fields the proxy adds, as add(name, pieces) calls in this order, each value given as the
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
/// `overrides`. Names compare case-insensitively (RFC 9110 §5.1).
template <class Fn> void mergeResponseFields(std::string_view upstream, std::string_view overrides, Fn&& fn) {
    http::forEachFieldLine(upstream, [&](std::string_view name, std::string_view value) {
        if (http::iequals(name, "date") || http::iequals(name, "server")) return;
        bool overridden = false;
        http::forEachFieldLine(overrides, [&](std::string_view mine, std::string_view) {
            overridden = overridden || http::iequals(mine, name);
        });
        if (!overridden) fn(name, value);
    });
    http::forEachFieldLine(overrides, fn);
}

/// A request already in HTTP/1.1 form, for an exchange that an HTTP/2 upstream stream hands over
/// when its `https://` upstream selected http/1.1 (or nothing) with ALPN (h2_upstream.cpp).
struct Http1Request {
    std::string head;         ///< request line and fields, framing field included, up to the blank line
    std::string body;         ///< the whole body, or with `streaming` the bytes received so far
    std::string trailerBlock; ///< `streaming`, `chunked` and `bodyEnded`: the last chunk's trailer lines
    bool streaming = false;   ///< the rest of the body comes through Forward::requestBody/requestEnd
    bool chunked = false;     ///< `streaming` with no Content-Length: sent chunked (RFC 9112 §7.1)
    bool bodyEnded = false;   ///< `streaming`: requestEnd() already came
    bool idempotent = false;  ///< RFC 9110 §9.2.2: may be retried on a stale keep-alive connection
    bool headRequest = false; ///< HEAD: the response has no body whatever its fields say
};

struct UpstreamPool; // proxy_exchange.cpp
class Deadlines;     // proxy_exchange.cpp

/// Closes the calling thread's pooled HTTP/1.1 upstream connections whose route's `idle_timeout`
/// has passed at `now`, and those the upstream closed or wrote to while they waited (a
/// recv(MSG_PEEK) for each one a read event reached, io::stillDrained). The worker calls it from
/// its tick (every 250 ms), so a pooled connection outlives its idle_timeout by at most a tick and
/// never sits in CLOSE_WAIT for longer.
void sweepIdleConnections(std::chrono::steady_clock::time_point now);

/// A request forwarded upstream. Start with start(); the sink then gets head, body and end (or an
/// error). An `https://` upstream is spoken to over TLS (ALPN http/1.1, the certificate not
/// verified, SNI for a name); forward() sends it here once that upstream was seen to select
/// http/1.1, else to the HTTP/2 client, which hands the request over (startPrepared) when it is. Upstream
/// connections are kept alive per worker thread and reused (at most the route's `keepalive` idle per upstream
/// address; sweepIdleConnections closes them). Upstreams are tried round-robin; one that refused a connection
/// is skipped for `fail_timeout`, and the next one is tried at once (nothing was sent). A request that fails
/// on a reused keep-alive connection before any response byte is retried once on a new connection if its
/// method is idempotent (RFC 9110 §9.2.2) and no byte of a streamed body was written yet.
///
/// A streamed body (`bodyFollows`) goes up with Content-Length when the request had one, else
/// chunked (RFC 9112 §7.1, trailers in the last chunk); at most one write is in flight, and the
/// bytes waiting for it are whatever the downstream handed over and was not yet told were consumed.
/// The response is read while the body is still going up; a response that ends before the whole
/// request was written leaves the upstream connection closed, not pooled.
class Exchange final : public Forward, public std::enable_shared_from_this<Exchange> {
public:
    using Socket = UpstreamSocket;

    /// Copies what it needs from `req` (the request views may die when this returns). `owner`
    /// is kept alive until the exchange ends or is cancelled (the downstream connection, and the
    /// config snapshot `action` lives in). `tls`: the downstream scheme for X-Forwarded-Proto.
    static std::shared_ptr<Exchange> start(boost::asio::io_context& io, std::shared_ptr<void> owner,
                                           std::shared_ptr<const void> snapshot,
                                           const config::ProxyAction& action, const http::Request& req,
                                           bool tls, Sink* sink, bool bodyFollows = false);

    /// As start(), for a request already in HTTP/1.1 form (an HTTP/2 upstream's handover).
    static std::shared_ptr<Exchange> startPrepared(boost::asio::io_context& io, std::shared_ptr<void> owner,
                                                   std::shared_ptr<const void> snapshot,
                                                   const config::ProxyAction& action, Http1Request&& req,
                                                   Sink* sink);

    /// The downstream drained: deliver more body.
    void resume() override;
    /// The downstream went away: no more callbacks; the upstream connection is closed.
    void cancel() override;
    void requestBody(std::string_view data) override;
    void requestEnd(std::span<const http::Header> trailers) override;

    Exchange(boost::asio::io_context& io, const config::ProxyAction& action);
    ~Exchange();

private:
    enum class Stage : std::uint8_t { Connecting, Sending, Head, Body, Done };
    void buildRequest(const http::Request& req, bool tls);
    void begin(); // choose the upstream, then a pooled connection at once or a new one from a handler
    // pick(): choose() the upstream (round-robin, skipping failed ones) and its pool, then
    // reusePooled() (sends on a pooled connection that is still good; false if none) or else
    // openNew() (connects a new one). The caller reads the clock once for both.
    void pick();
    void choose(std::chrono::steady_clock::time_point now);
    bool reusePooled(std::chrono::steady_clock::time_point now);
    void openNew();
    void connect();
    void startTls(); // https:// upstreams: the TLS handshake after connect, then send()
    void send();
    void sent(const boost::system::error_code& e);  // the request (no streamed body) was written
    void wrote(const boost::system::error_code& e); // a writeBody() write completed
    void afterRead(const boost::system::error_code& e, std::size_t n);
    void closeConnection(); // closes the socket, frees the TLS state, voids pending handlers
    void writeBody();
    void read();
    void onRead(std::size_t n);
    bool parseHead();
    bool deliver(std::string_view data);
    void finish(bool reusable);
    void fail(int status, const std::string& why, bool retryable);
    void arm(std::chrono::nanoseconds timeout); // the connect or response deadline, from now
    void disarm();
    void onTimeout();
    friend class Deadlines;

    boost::asio::io_context& io_;
    const config::ProxyAction& action_;
    std::shared_ptr<void> owner_;
    std::shared_ptr<const void> snapshot_;
    Sink* sink_ = nullptr;
    Socket socket_;
    SslPtr ssl_;                // https:// upstreams: the TLS connection on socket_
    std::uint32_t connGen_ = 0; // bumped by closeConnection(): TLS waits of an earlier socket end
    Deadlines& deadlines_;      // this io_context's (one timer for all exchanges)
    std::chrono::steady_clock::time_point deadline_{};
    Exchange* deadlinePrev_ = nullptr; // in deadlines_'s lane for the armed timeout
    Exchange* deadlineNext_ = nullptr;
    int deadlineLane_ = -1; // -1: not armed
    const config::Upstream* upstream_ = nullptr;
    UpstreamPool* pool_ = nullptr; // upstream_'s pool on this thread (set by pick)
    std::size_t tries_ = 0;
    std::string request_;            // serialised head + body
    std::unique_ptr<char[]> buffer_; // read buffer, kReadChunk bytes (from a per-worker pool)
    std::size_t buffered_ = 0;
    std::string head_;   // response head so far
    std::string fields_; // filtered fields for the sink
    std::string carry_;  // body bytes the parser could not use yet (a chunk-size line cut by a read)
    http1::ResponseParser parser_;
    int status_ = 0;
    Stage stage_ = Stage::Connecting;
    std::uint32_t served_ = 0; // responses the upstream connection carried before this one
    bool reused_ = false;      // the upstream connection came from the pool

    bool idempotent_ = false;
    bool headRequest_ = false;
    bool keepAlive_ = true; // the upstream allows reuse
    bool paused_ = false;
    bool cancelled_ = false;
    bool gotBytes_ = false; // any response byte arrived
    bool upgrade_ = false;  // a WebSocket Upgrade forwarded as such (`ws: true`)
    // A streamed request body (`bodyFollows`).
    bool streaming_ = false;
    bool chunkedUp_ = false;   // length unknown: chunked to the upstream
    bool headWritten_ = false; // request_ (the head) went into a write
    bool bodyEnded_ = false;   // requestEnd() came
    bool requestSent_ = false; // the whole request is written (or abandoned after the response head)
    bool writing_ = false;     // an async_write is in flight
    bool bodyStarted_ = false; // body bytes went into a write: never retried from then on
    std::string body_;         // body bytes waiting for the next write
    std::string wire_;         // the write in flight
    std::size_t wireBody_ = 0; // body bytes in wire_ (reported consumed once written)
    std::string trailerBlock_; // chunked: the trailer section of the last chunk
    boost::system::error_code writeError_; // a streamed body's write failed before the response head
};

} // namespace portico::proxy
