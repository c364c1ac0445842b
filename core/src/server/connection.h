// One HTTP/1.1 connection: reads, parses pipelined requests, dispatches, writes (RFC 9112).
#pragma once

#include "io/io_buffer.h"
#include "io/session.h"
#include "proxy/forward.h"
#include "proxy/origin.h"
#include "serve/breakpoint.h"
#include "serve/serve.h"

#include <portico/http/message.h>
#include <portico/http1/parser.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

typedef struct ssl_st SSL;

namespace portico::ws {
struct Accepted;
}
namespace portico::capture {
struct ConnCapture;
struct WsCapture;
struct WsCaptureDeleter;
} // namespace portico::capture

namespace portico::server {

struct Snapshot;

class Worker;

class Connection final : public io::Session,
                         public client::Sink,
                         public std::enable_shared_from_this<Connection> {
public:
    using Socket = io::Socket;

    /// A connection accepted on the listener bound to `localPort`. From the front door
    /// (front_door.h) after a TLS handshake: `ssl` (owned from now on) and the connection's
    /// capture, when capture was on at accept.
    Connection(Worker& worker, Socket socket, std::uint16_t localPort, SSL* ssl = nullptr,
               std::unique_ptr<capture::ConnCapture> cap = nullptr);
    ~Connection();

    void start();
    /// Before start(): this connection is an intercepted tunnel's inside (front_door.h).
    void setOrigin(std::shared_ptr<const proxy::InterceptedOrigin> origin) {
        extra().origin = std::move(origin);
    }
    /// Called by the worker's ticker: enforce the deadline of the current phase.
    void checkDeadline(Clock::time_point now) override;
    /// Called when the worker starts draining: idle connections close now, busy ones after the exchange.
    void onDrain() override;
    /// Closes at once (drain timeout passed). A parked connection may be destroyed when this returns.
    void abort() override;
    /// Worker::park's callback: the parked socket has input (or the client closed it).
    void unparked() override;
    void releaseParked() override;

    // client::Sink: the upstream's response of a `proxy:` route, streamed to the client.
    void onUpstreamHead(int status, std::string_view fields, std::optional<std::uint64_t> length) override;
    void onUpstreamHeadRelease() override { pumpProxy(); }
    void onUpstreamHeadBodyFollows(int status, std::string_view fields,
                                   std::optional<std::uint64_t> length) override;
    bool onUpstreamBody(std::string_view data) override;
    void onUpstreamEnd() override;
    void onUpstreamError(int status, const std::string& message) override;
    void onUpstreamTrailers(std::string_view fields) override;
    void onUpstreamConnected() override;
    void onUpstreamConnection(std::int64_t resolvedNs, std::int64_t tcpConnectedNs,
                              std::string_view address) override;
    void onUpstreamTls(std::string_view version, std::string_view alpn) override;
    void onRequestSent() override;
    void onUpstreamUpgrade(std::string_view fields, client::UpstreamSocket upstream,
                           client::SslPtr upstreamSsl, std::string_view leftover) override;
    void onRequestBodyConsumed(std::size_t n) override;

private:
    enum class Phase : std::uint8_t { Idle, Head, Body, Write, Delay, Proxy, Closing };
    /// flushNow's outcome. Paced: a rule's throttle holds the rest back for now (waitPace()).
    enum class Flush : std::uint8_t { Done, Blocked, Failed, Paced };

    /// Appends "HTTP/1.1 STATUS REASON", the Date line and, with `serverHeader`, Server to out_.
    void appendStatusLines(int status, bool serverHeader);
    // serve::ResponseWriter for this connection's current request (connection.cpp).
    struct Writer;
    void respond(const http::Request& req, http::Response& res);
    bool upgrade(const http::Request& req, http::Response& res, const serve::Routed& routed);
    serve::ForwardTarget forwardTo(http::Request& req, const http::Response& res, bool bodyFollows);
    void forwarding(std::shared_ptr<client::Call> call);
    /// A rule's breakpoint holds the current exchange (serve/breakpoint.h): no further request is
    /// read until resumePaused() carries out the decision.
    bool pause(serve::Paused& paused);
    void resumePaused();
    /// While held: a client that closes its side ends the exchange (it leaves the Paused queue).
    void watchWhileHeld();
    /// The decision on an upstream's answer paused at a response-stage breakpoint (onUpstreamEnd).
    void resumeAnswer();
    /// Writes a gathered answer (Rare::ProxyRewrite) with its own length, then ends the exchange.
    void sendGathered();
    void endProxied();
    // Request bodies of proxied routes stream upstream as they arrive (uploads).
    bool proxiesBody();
    bool startUpload(std::size_t headBytes);
    void giveUpload(std::string_view data);
    void feedUpload();
    void pumpUpload();
    void waitUpload();
    void endUpload(std::span<const http::Header> trailers);
    void failUpload(int status, std::string_view why);
    void stopUpload();
    void answerProxied(int status, const std::string& message);
    bool pumpProxy();
    bool startH2(std::string_view received);
    void startConnectTunnel(std::string toClient, client::UpstreamSocket upstream);
    bool intercept(const http::Request& req, std::string_view host, std::uint16_t port);
    void startIntercept();
    void startWebSocket();
    void waitRead();
    bool park();
    std::shared_ptr<Connection> leavePark();
    void waitWrite();
    void onReadable(const boost::system::error_code& ec);
    void onRead(const boost::system::error_code& ec, std::size_t n);
    void drive();
    void parseAndHandle();
    void handle(std::string_view body, std::span<const http::Header> trailers, bool bodyFollows = false);
    bool answerBeforeBody();
    void serialize(const http::Request& req, http::Response& res);
    void logExchange(const http::Request& req, const http::Response& res);
    // Capture (connection_capture.cpp); only called when cap_ is set.
    void captureStart();
    void captureExchange(const http::Request& req, const http::Response& res, std::size_t headStart,
                         std::string_view error);
    void addServerTiming(http::Response& res);
    // Access log + capture of a proxied exchange; `ws` (a 101 to be tunnelled, capture on): the
    // record becomes the WebSocket session's (capture::wsBegin) instead of being published.
    void finishProxied(std::string_view error,
                       std::unique_ptr<capture::WsCapture, capture::WsCaptureDeleter>* ws = nullptr);
    /// Answers `status` and closes; `head` (when the request line was read) names the request in
    /// the log and the record.
    void queueError(int status, const http1::RequestHead* head = nullptr);
    Flush flushNow();
    /// A rule's throttle (http::Response::throttle) on the exchange now being written: the bytes
    /// queued before it leave freely, then nothing before the throttle's latency (plus the request
    /// body's time at its `up` rate, `upBytes` bytes) and from there `down` bytes per second.
    void startPace(const http::Response::Throttle& t, std::uint64_t upBytes);
    /// How many bytes the throttle lets leave now (all when none is on).
    std::uint64_t paceAllowance(Clock::time_point now) const;
    void paceWrote(std::uint64_t n);
    /// Flush::Paced: a timer resumes drive() when the throttle lets the next bytes go.
    void waitPace();
    void lingeringClose();
    /// Fault injection's reset (Fate::Drop) once the answers queued before it have left: waits
    /// for the kernel's send queue to empty (a reset discards what it holds), at most write_timeout.
    void resetWhenSent(bool first);
    void releaseBuffers();
    void resetBodyState();
    void setPhase(Phase p, std::chrono::nanoseconds timeout);

    /// State that only some exchanges need (chunked bodies, large files, mock latency). Allocated
    /// on first use and then kept, so the common connection stays small (memory per idle
    /// connection is a benchmark target).
    struct Rare {
        std::shared_ptr<const http::FileHandle> file;
        std::uint64_t fileOffset = 0;
        std::uint64_t fileLeft = 0;
        http1::ChunkedDecoder chunked;
        std::string chunkBody;
        std::size_t chunkPos = 0; // raw bytes after the head already fed to the decoder
        bool chunkActive = false;
        std::optional<boost::asio::steady_timer> delayTimer;
        // A proxied exchange in progress (`proxy:` routes).
        std::shared_ptr<client::Call> proxy;
        std::string proxyTrailers; // an HTTP/2 upstream's trailers, for the last chunk
        /// The proxied request as the access log and capture need it after the request's views
        /// are gone, and what came back.
        struct ProxyRecord {
            std::string method, target, host, referer, userAgent;
            std::vector<std::pair<std::string, std::string>> headers; // capture only
            std::string body;                                         // capture only: a prefix
            std::uint64_t bodySize = 0;
            int status = 0;
            std::string responseHead; // capture only: as written
            std::string responseBody; // capture only: a prefix
            std::uint64_t responseBytes = 0;
            std::int64_t upstreamNs = -1, upstreamByteNs = -1;
            std::int64_t resolvedNs = -1, tcpNs = -1, sentNs = -1;  // capture only
            std::string upstreamAddress, upstreamTls, upstreamAlpn; // capture only
            // The rules that touched the exchange and the fields before they did (Response's).
            std::string ruleNames, originalRequestFields, originalResponseFields;
            // Capture only: the bodies before a replace_body rewrote them ("" when none did); the
            // request's a prefix (capture.body_bytes and one byte more, so the record sees the cut),
            // the response's whole (at most limits.max_rewrite_body).
            std::string originalRequestBody, originalResponseBody;
        } proxyRecord;
        std::string proxyFields; // vhost/route headers for the upstream's response
        // The response-stage rules the request selected (Response::pendingRules) and the snapshot
        // whose RuleSet they index; empty / null when none.
        std::vector<std::uint64_t> proxyRules;
        std::shared_ptr<const Snapshot> proxyRulesSnapshot;
        // A response-stage replace_body on the upstream's response (connection_proxy.cpp): while
        // `active` the head is held back and the body gathered whole (up to limits.max_rewrite_body),
        // then the rewritten body goes out with its own Content-Length; past the limit the head goes
        // out with the upstream's framing, then what was gathered, and the rest streams as usual.
        // Allocated by the first exchange that needs it.
        struct ProxyRewrite {
            bool active = false;
            int status = 0;
            std::optional<std::uint64_t> length; // the upstream's Content-Length
            std::string fields;                  // the head's fields as they go out
            std::string body;                    // gathered so far
            std::vector<rules::BodyEdit> edits;  // into `snapshot`'s RuleSet
            std::shared_ptr<const Snapshot> snapshot;
            // A response-stage breakpoint: once whole (and rewritten), the answer pauses
            // (Rare::paused) until resumeAnswer().
            rules::BreakpointHit hit;
        };
        std::unique_ptr<ProxyRewrite> proxyRewrite;
        int proxyMinor = 1;
        bool proxyHead = false;
        bool proxyKeep = true;
        bool proxyChunked = false;
        bool proxyHeadSent = false;
        bool proxyPaused = false;
        bool proxyConnect = false;     // a forward proxy's CONNECT: the upstream's socket becomes a tunnel
        bool proxyTransparent = false; // a forward proxy's origin: its Date and Server pass unchanged
        bool proxyServerHeader = true;
        std::string clientAddress; // the peer's address for X-Forwarded-For, read once per connection
        // A request body streaming to the proxied exchange: Content-Length bytes still to come
        // (uploadLeft) or chunked (the decoder above, chunkActive), bytes handed to the exchange
        // and not yet written upstream (uploadHeld; reading pauses at kUploadHighWater), the
        // deadline of the next client read (limits.body_timeout).
        bool uploading = false;
        bool uploadPaused = false;
        std::uint64_t uploadLeft = 0;
        std::size_t uploadHeld = 0;
        Clock::time_point uploadDeadline = Clock::time_point::max();
        std::chrono::nanoseconds delay{0};
        // A rule's throttle on the exchange being written (startPace): the first `paceSkip` bytes
        // of out_ (earlier answers) leave freely; then nothing before `paceStart`, and from there
        // `paceRate` bytes per second (0: no limit), `paceSent` bytes written so far.
        bool pacing = false;
        bool paceWaiting = false; // paceTimer is armed
        std::uint64_t paceSkip = 0;
        std::uint64_t paceRate = 0;
        std::uint64_t paceSent = 0;
        Clock::time_point paceStart{};
        std::optional<boost::asio::steady_timer> paceTimer;
        std::unique_ptr<ws::Accepted> upgrade; // a WebSocket handshake answered with 101
        // Held at a rule's breakpoint (pause()), with the snapshot it paused in (the Paused points
        // into its RuleSet).
        std::shared_ptr<const Snapshot> pausedSnapshot; // declared first: outlives `paused`
        std::shared_ptr<serve::Paused> paused;
        // A CONNECT to intercept (Writer::intercept): once this request is done, the socket goes to
        // a TLS handshake with a leaf for `interceptHost` (server::startIntercepted).
        std::string interceptHost;
        std::uint16_t interceptPort = 0;
    };
    /// What only TLS, capture or the rare features need, behind one pointer: a plaintext
    /// connection without capture holds none of it (memory per idle connection).
    struct Extra {
        SSL* ssl = nullptr;                        // TLS (transport.h); null on cleartext
        std::unique_ptr<capture::ConnCapture> cap; // null unless capture was on at accept
        std::unique_ptr<Rare> rare;
        // An intercepted CONNECT tunnel's inside: every request goes there (serve::Context::origin).
        std::shared_ptr<const proxy::InterceptedOrigin> origin;
    };
    Extra& extra();
    Rare& rare();
    Rare* rareIf() const { return extra_ ? extra_->rare.get() : nullptr; }
    SSL* ssl() const { return extra_ ? extra_->ssl : nullptr; }
    capture::ConnCapture* cap() const { return extra_ ? extra_->cap.get() : nullptr; }
    const proxy::InterceptedOrigin* origin() const { return extra_ ? extra_->origin.get() : nullptr; }
    bool sendingFile() const { return rareIf() && rareIf()->fileLeft > 0; }
    bool delayed() const { return rareIf() && rareIf()->delay.count() > 0; }
    bool proxying() const { return rareIf() && rareIf()->proxy; }
    bool holding() const { return rareIf() && rareIf()->paused; } // at a breakpoint
    bool paced() const { return rareIf() && rareIf()->pacing; }
    bool uploading() const { return rareIf() && rareIf()->uploading; }

    Worker& worker_;
    Socket socket_;
    io::IoBuffer in_;
    io::IoBuffer out_;
    std::unique_ptr<Extra> extra_;
    Clock::time_point deadline_ = Clock::time_point::max();
    Clock::time_point requestStart_;
    // While parked (Worker::park) no operation holds this object: this reference does.
    std::shared_ptr<Connection> parkedSelf_;
    std::uint32_t readAsked_ = 0; // the room of the read in flight (a shorter read drained the socket)
    std::uint16_t localPort_;
    Phase phase_ = Phase::Idle;
    // Flags in two bytes (memory per idle connection is a benchmark target).
    bool closeAfterWrite_ : 1 = false;
    bool sentContinue_ : 1 = false;
    bool moreBuffered_ : 1 = false; // a complete request may still be waiting in in_
    bool closed_ : 1 = false;
    bool parking_ : 1 = false;         // the buffered read was cancelled to give the buffer back
    bool parked_ : 1 = false;          // in the worker's park set, no read pending (park())
    bool servedAny_ : 1 = false;       // a request was answered (the h2c preface only counts before that)
    bool writeWaiting_ : 1 = false;    // an async_wait for writability is pending
    bool forwardProxy_ : 1 = false;    // the listener is also a forward proxy (serve::Context::forwardProxy)
    bool resetAfterWrite_ : 1 = false; // a dropped exchange (Fate::Drop): reset, not close, after the write
    bool holdAfterWrite_ : 1 = false;  // Fate::Hold: no answer; read and drop until idle_timeout
};

} // namespace portico::server
