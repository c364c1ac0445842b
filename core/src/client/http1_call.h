// The HTTP/1.1 client call (RFC 9112): one request to one of a route's upstreams over TCP or TLS,
// on a per-thread pool of keep-alive connections, its response streamed to a Sink with
// backpressure.
#pragma once

#include "client/call.h"

#include <portico/config/config.h>
#include <portico/http/message.h>
#include <portico/http1/response_parser.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace portico::client {

/// A request in HTTP/1.1 form (RFC 9112 §3-§7), as the caller wrote it: the proxy's rewritten
/// request (proxy/forward.h), or an HTTP/2 call's when its `https://` upstream selected http/1.1
/// (or nothing) with ALPN.
struct Http1Request {
    /// The request line and fields, framing field (Content-Length or Transfer-Encoding: chunked)
    /// included, and the blank line. Without `streaming` the body may already follow it here.
    std::string head;
    std::string body;         ///< the body (or the rest of it), or with `streaming` the bytes received so far
    std::string trailerBlock; ///< `streaming`, `chunked` and `bodyEnded`: the last chunk's trailer lines
    bool streaming = false;   ///< the rest of the body comes through Call::requestBody/requestEnd
    bool chunked = false;     ///< `streaming` with no Content-Length: sent chunked (RFC 9112 §7.1)
    bool bodyEnded = false;   ///< `streaming`: requestEnd() already came
    bool idempotent = false;  ///< RFC 9110 §9.2.2: may be retried on a stale keep-alive connection
    bool headRequest = false; ///< HEAD: the response has no body whatever its fields say
    /// A WebSocket opening handshake (RFC 6455 §4.1; the head carries Connection: Upgrade and
    /// Upgrade: websocket): a 101 hands the connection to Sink::onUpstreamUpgrade.
    bool upgrade = false;
};

struct UpstreamPool; // http1_call.cpp
class Deadlines;     // http1_call.cpp

/// Closes `io`'s pooled HTTP/1.1 upstream connections whose route's `idle_timeout` has passed at
/// `now`, and those the upstream closed or wrote to while they waited (a
/// recv(MSG_PEEK) for each one a read event reached, io::stillDrained). The worker calls it from
/// its tick (every 250 ms), so a pooled connection outlives its idle_timeout by at most a tick and
/// never sits in CLOSE_WAIT for longer.
void sweepIdleConnections(boost::asio::io_context& io, std::chrono::steady_clock::time_point now);

/// Puts a connection another call made to `upstream` (`https://`) into `io`'s HTTP/1.1 pool: an
/// HTTP/2 call's TLS connection whose upstream selected http/1.1 (or nothing) with ALPN. The next
/// HTTP/1.1 call to that upstream takes it as it is (no probe, no second connect and handshake);
/// `idleTimeout` later the sweep closes it if none did. `tls` is the TLS the connection was made with
/// (CallOptions::tls, null for the default): only calls with the same one take it.
void adoptConnection(boost::asio::io_context& io, const config::Upstream& upstream, const tls::ClientTls* tls,
                     UpstreamSocket&& socket, SslPtr ssl, std::chrono::nanoseconds idleTimeout);

/// One request to one of `action`'s upstreams (`http://`, or `https://` once that upstream was
/// seen to select http/1.1: h2_client.h hands such requests over). Make it with create(), write
/// the request into request(), then start(); the sink then gets head, body and end (or an error).
/// An `https://` upstream is spoken to over TLS (ALPN http/1.1, the certificate not verified, SNI
/// for a name). Upstream connections are kept alive per io_context and reused (at most the route's
/// `keepalive` idle per upstream address; sweepIdleConnections closes them). Upstreams are tried
/// round-robin; one that refused a connection is skipped for `fail_timeout`, and the next one is
/// tried at once (nothing was sent). A request that fails on a reused keep-alive connection before
/// any response byte is retried once on a new connection if it is idempotent (RFC 9110 §9.2.2) and
/// no byte of a streamed body was written yet. Errors reach Sink::onUpstreamError: 502 when no
/// upstream could be connected to or the response was bad, 504 past `connect_timeout` (connect and
/// TLS handshake) or `response_timeout` (until the head, and between body reads), status 0 (abort)
/// for anything after the head.
///
/// A streamed body (Http1Request::streaming) goes up as the head declared it (Content-Length, or
/// chunked with trailers in the last chunk, RFC 9112 §7.1); at most one write is in flight, and
/// the bytes waiting for it are whatever the caller handed over and was not yet told were
/// consumed. The response is read while the body is still going up; a response that ends before
/// the whole request was written leaves the connection closed, not pooled.
class Http1Call final : public Call, public std::enable_shared_from_this<Http1Call> {
public:
    using Socket = UpstreamSocket;

    /// A call on `io` (this thread's) to `action`'s upstreams; `action` must outlive it (the
    /// `snapshot` given to start() keeps it).
    static std::shared_ptr<Http1Call> create(boost::asio::io_context& io, const config::ProxyAction& action);
    /// The request to send, written by the caller before start() (its strings come from a
    /// per-thread pool: appending does not allocate in steady state).
    Http1Request& request() { return pending_; }
    /// Sends request(). `owner` and `snapshot` are kept alive until the call ends or is
    /// cancelled. `options` (null: the defaults) must outlive the call; so must `hosts` (the
    /// config's `hosts:` overrides of the upstream's address, client::resolve; null: none), which
    /// `snapshot` normally keeps. Never calls `sink` before returning but for onUpstreamConnected.
    void start(std::shared_ptr<void> owner, std::shared_ptr<const void> snapshot, Sink* sink,
               const CallOptions* options = nullptr, const config::HostOverrides* hosts = nullptr);

    /// create(), request() = `req`, start().
    static std::shared_ptr<Http1Call> startPrepared(boost::asio::io_context& io, std::shared_ptr<void> owner,
                                                    std::shared_ptr<const void> snapshot,
                                                    const config::ProxyAction& action, Http1Request&& req,
                                                    Sink* sink, const CallOptions* options = nullptr,
                                                    const config::HostOverrides* hosts = nullptr);

    /// The downstream drained: deliver more body.
    void resume() override;
    /// The downstream went away: no more callbacks; the upstream connection is closed.
    void cancel() override;
    void requestBody(std::string_view data) override;
    void requestEnd(std::span<const http::Header> trailers) override;

    Http1Call(boost::asio::io_context& io, const config::ProxyAction& action);
    ~Http1Call();

private:
    enum class Stage : std::uint8_t { Connecting, Sending, Head, Body, Done };
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
    const CallOptions* options_ = nullptr; // null: the defaults
    const tls::ClientTls* callerTls() const { return options_ ? options_->tls : nullptr; }
    const config::HostOverrides* hosts_ = nullptr; // `hosts:` (snapshot_ keeps it); null: none
    Socket socket_;
    SslPtr ssl_;                // https:// upstreams: the TLS connection on socket_
    std::uint32_t connGen_ = 0; // bumped by closeConnection(): TLS waits of an earlier socket end
    // A connection this call opened (Sink::onUpstreamConnection, told once in send()): steady ns.
    std::int64_t resolvedNs_ = -1;
    std::int64_t tcpConnectedNs_ = -1;
    std::string connectedTo_;
    bool tlsToldThisCall_ = false; // startTls told the sink already (send() tells it for pooled ones)
    Deadlines& deadlines_;         // this io_context's (one timer for all exchanges)
    std::chrono::steady_clock::time_point deadline_{};
    Http1Call* deadlinePrev_ = nullptr; // in deadlines_'s lane for the armed timeout
    Http1Call* deadlineNext_ = nullptr;
    int deadlineLane_ = -1; // -1: not armed
    const config::Upstream* upstream_ = nullptr;
    UpstreamPool* pool_ = nullptr; // upstream_'s pool on this thread (set by pick)
    std::size_t tries_ = 0;
    Http1Request pending_;           // until start()
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
    bool gotBytes_ = false;  // any response byte arrived
    bool shortRead_ = false; // the last read returned less than asked (cleartext): nothing left unread
    bool upgrade_ = false;   // a WebSocket Upgrade (Http1Request::upgrade)
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

} // namespace portico::client
