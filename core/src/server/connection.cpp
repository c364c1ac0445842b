// HTTP/1.1 connection state machine: non-blocking reads, pipelined dispatch, batched writes, sendfile.
#include "server/connection.h"
#include "io/drained.h"

#include "capture/hooks.h"
#include "io/transport.h"
#include "proxy/tunnel.h"
#include "serve/serve.h"
#include "server/h2_connection.h"
#include "server/worker.h"
#include "ws/session.h"

#include <portico/handlers/dispatch.h>
#include <portico/http/path.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <linux/sockios.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::server {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {
constexpr std::size_t kMaxBatchBytes = 256 * 1024;    // flush pipelined output once this much is queued
constexpr std::uint64_t kInlineFileBytes = 16 * 1024; // smaller file bodies are copied, not sendfile'd
constexpr auto kLingerTime = std::chrono::seconds(2);
constexpr auto kParkAfter = io::kReleaseIdleAfter; // idle this long → buffers back to the pool
constexpr std::string_view kH2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"; // RFC 9113 §3.4
constexpr std::size_t kTlsFileChunk = 64 * 1024; // file bytes read per TLS write (sendfile needs cleartext)

// Bound on raw bytes held for one request: the head, a body, and chunk framing around it.
// Saturating, so a huge configured max_body_bytes does not wrap around to a small bound.
std::uint64_t maxBufferedBytes(const config::Limits& l) {
    constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
    if (l.maxBodyBytes > (kMax - 65536) / 2) return kMax;
    const std::uint64_t total = 2 * l.maxBodyBytes + 65536;
    return total > kMax - l.maxHeaderBytes ? kMax : total + l.maxHeaderBytes;
}

http1::ParserLimits parserLimits(const config::Limits& l) {
    http1::ParserLimits p;
    p.maxRequestLineBytes = l.maxRequestLineBytes;
    p.maxHeaderBytes = l.maxHeaderBytes;
    p.maxHeaderCount = std::min<std::uint64_t>(l.maxHeaderCount, http1::kMaxHeaders);
    p.maxBodyBytes = l.maxBodyBytes;
    return p;
}
} // namespace

Connection::Connection(Worker& worker, Socket socket, std::uint16_t localPort, SSL* ssl,
                       std::unique_ptr<capture::ConnCapture> cap)
    : worker_(worker), socket_(std::move(socket)), localPort_(localPort) {
    worker_.link(this);
    forwardProxy_ = worker_.snapshot().forwardProxyPorts.contains(localPort);
    if (ssl || cap) {
        extra().ssl = ssl;
        extra().cap = std::move(cap);
    }
}

Connection::~Connection() {
    worker_.unlink(this);
    if (ssl()) SSL_free(ssl());
    worker_.buffers().release(in_);
    worker_.buffers().release(out_);
}

void Connection::start() {
    const Snapshot& snap = worker_.snapshot();
    if (!cap() && snap.config->capture.enabled) captureStart();
    setPhase(Phase::Idle, snap.config->limits.headerTimeout);
    waitRead();
}

void Connection::appendStatusLines(int status, bool serverHeader) {
    static constexpr std::string_view kServer = "Server: Portico/" PORTICO_VERSION "\r\n";
    const std::string_view line = http::statusLine11(status);
    const std::string_view date = worker_.dateLine();
    const std::size_t n = line.size() + date.size() + (serverHeader ? kServer.size() : 0);
    out_.ensureRoom(n); // one bounds check and three copies of known size
    std::size_t room = 0;
    char* p = out_.writable(room);
    std::memcpy(p, line.data(), line.size());
    std::memcpy(p + line.size(), date.data(), date.size());
    if (serverHeader) std::memcpy(p + line.size() + date.size(), kServer.data(), kServer.size());
    out_.commit(n);
}

bool Connection::startH2(std::string_view received) {
    // The socket (and TLS state) move to an HTTP/2 session; this object is finished.
    auto h2 = std::make_shared<H2Connection>(worker_, std::move(socket_), ssl(), localPort_, received);
    if (extra_) extra_->ssl = nullptr;
    closed_ = true;
    deadline_ = Clock::time_point::max();
    releaseBuffers();
    if (cap()) h2->adoptCapture(std::move(extra_->cap));
    h2->start();
    return true;
}

void Connection::startWebSocket() {
    // The socket (and TLS state) move to a WebSocket session with the queued 101 and whatever the
    // client sent after its upgrade request; this object is finished. Records of responses queued
    // before the 101 (pipelined) are published now: their bytes go out first, with the 101.
    if (cap()) {
        capture::h1BeforeFlush(*cap());
        capture::h1Flushed(*cap());
    }
    ws::startSession(worker_, std::move(socket_), ssl(), std::move(rareIf()->upgrade), out_.unread(),
                     in_.unread());
    if (extra_) extra_->ssl = nullptr;
    closed_ = true;
    deadline_ = Clock::time_point::max();
    releaseBuffers();
}

void Connection::setPhase(Phase p, std::chrono::nanoseconds timeout) {
    // The exact clock, not the worker's 250 ms tick, so a timeout never fires early.
    const auto now = Clock::now();
    if (p == Phase::Head && phase_ == Phase::Idle) requestStart_ = now; // first byte of a request
    phase_ = p;
    deadline_ = now + timeout;
}

// Two ways to wait for input. An active connection keeps its pooled buffer and reads with
// async_read_some: Asio then keeps the descriptor's epoll registration as it is, so a keep-alive
// request costs one recv and one send. A connection idle for a tick is parked (see checkDeadline):
// its buffers go back to the pool and it waits with async_wait, which costs an epoll_ctl per wait
// but keeps an idle connection down to the socket and this object.
void Connection::waitRead() {
    if (ssl() && phase_ != Phase::Closing) {
        // TLS: OpenSSL reads the socket itself. Decrypted bytes it still holds would never make
        // the socket readable, so they are taken at once.
        if (io::transportPending(ssl())) {
            asio::post(worker_.io(), [self = shared_from_this()] { self->onReadable({}); });
            return;
        }
        if (in_.empty()) worker_.buffers().release(in_); // nothing to park later
        socket_.async_wait(
            Socket::wait_read,
            [self = shared_from_this()](const boost::system::error_code& ec) { self->onReadable(ec); });
        return;
    }
    if (in_.allocated() && phase_ != Phase::Closing) {
        std::size_t room = 0;
        char* p = in_.readRoom(room);
        room = std::min<std::size_t>(room, std::numeric_limits<std::uint32_t>::max());
        readAsked_ = static_cast<std::uint32_t>(room);
        socket_.async_read_some(asio::buffer(p, room),
                                [self = shared_from_this()](const boost::system::error_code& ec,
                                                            std::size_t n) { self->onRead(ec, n); });
        return;
    }
    socket_.async_wait(Socket::wait_read, [self = shared_from_this()](const boost::system::error_code& ec) {
        self->onReadable(ec);
    });
}

// Idle for a tick with its buffers back in the pool: wait in the worker's park set, holding no
// Asio operation (Worker::park). Cleartext only: TLS keeps its async_wait (OpenSSL may hold bytes
// the socket's readiness would not show).
bool Connection::park() {
    if (ssl() || phase_ != Phase::Idle || in_.allocated() || !worker_.park(socket_.native_handle(), this))
        return false;
    parked_ = true;
    parkedSelf_ = shared_from_this();
    return true;
}

// Out of the park set; returns the reference that kept this object alive while parked (null if
// it was not parked): whoever holds it decides when this object may be freed.
std::shared_ptr<Connection> Connection::leavePark() {
    if (!parked_) return nullptr;
    worker_.unpark(socket_.native_handle());
    parked_ = false;
    return std::move(parkedSelf_);
}

void Connection::unparked() {
    const auto self = leavePark(); // alive until the read below has started its wait
    onReadable({});
}

void Connection::releaseParked() { leavePark(); } // may free this object

void Connection::onRead(const boost::system::error_code& ec, std::size_t n) {
    if (closed_) return;
    worker_.refreshSnapshot(); // an event entering the worker (see Worker::refreshSnapshot)
    if (ec == asio::error::operation_aborted && parking_) {
        parking_ = false;
        if (in_.empty()) {
            releaseBuffers();
            if (park()) return;
        }
        waitRead();
        return;
    }
    parking_ = false;
    if (ec) { // eof, reset
        abort();
        return;
    }
    in_.commit(n);
    if (n < readAsked_) io::markDrained(socket_); // the next read waits for the client (drained.h)
    worker_.beginTurn(); // the requests read in this turn of the event loop share file lookups
    const auto& limits = worker_.snapshot().config->limits;
    if (in_.size() > maxBufferedBytes(limits)) {
        queueError(413);
        drive();
        return;
    }
    if (phase_ == Phase::Idle)
        setPhase(Phase::Head, limits.headerTimeout);
    else if (phase_ == Phase::Body)
        setPhase(Phase::Body, limits.bodyTimeout);
    drive();
}

void Connection::waitWrite() {
    setPhase(Phase::Write, worker_.snapshot().config->limits.writeTimeout);
    if (writeWaiting_) return;
    writeWaiting_ = true;
    socket_.async_wait(Socket::wait_write, [self = shared_from_this()](const boost::system::error_code& ec) {
        self->writeWaiting_ = false;
        if (ec || self->closed_) return;
        self->drive();
    });
}

void Connection::onReadable(const boost::system::error_code& ec) {
    if (ec || closed_) return;
    worker_.refreshSnapshot(); // an event entering the worker (see Worker::refreshSnapshot)
    if (phase_ == Phase::Closing) {
        // Lingering close: discard what the client still sends until it closes or time runs out.
        if (io::discardUnread(socket_.native_handle()) == io::Linger::Wait)
            waitRead();
        else
            abort();
        return;
    }
    // A parked connection woke up: it holds no buffer (parking needs an empty one), so take a
    // fresh one, read once, and continue as a buffered read would.
    if (!in_.allocated()) in_ = worker_.buffers().acquire();
    std::size_t room = 0;
    char* p = in_.readRoom(room);
    room = std::min<std::size_t>(room, std::numeric_limits<std::uint32_t>::max());
    readAsked_ = static_cast<std::uint32_t>(room);
    io::IoResult r = io::transportRead(socket_.native_handle(), ssl(), p, room);
    switch (r.status) {
    case io::IoStatus::Ok:
        onRead({}, r.n);
        return;
    case io::IoStatus::WantRead:
        if (in_.empty()) worker_.buffers().release(in_);
        waitRead();
        return;
    case io::IoStatus::WantWrite: // TLS needs to write first (e.g. a key update)
        socket_.async_wait(
            Socket::wait_write,
            [self = shared_from_this()](const boost::system::error_code& ec) { self->onReadable(ec); });
        return;
    case io::IoStatus::Eof: // peer closed its side
    case io::IoStatus::Error:
        abort();
        return;
    }
}

void Connection::drive() {
    for (;;) {
        if (!closeAfterWrite_ && !delayed() && !sendingFile() && !proxying() && !paced() && !holding())
            parseAndHandle();
        if (closed_) return; // handed over to HTTP/2
        if (delayed()) {
            Rare& r = *rareIf();
            if (!r.delayTimer) r.delayTimer.emplace(worker_.io());
            phase_ = Phase::Delay;
            deadline_ = Clock::time_point::max();
            r.delayTimer->expires_after(r.delay);
            r.delayTimer->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
                if (ec || self->closed_) return;
                self->rareIf()->delay = std::chrono::nanoseconds{0};
                self->drive();
            });
            if (cap()) capture::h1Yield(*cap());
            return;
        }
        if (cap()) capture::h1BeforeFlush(*cap());
        switch (flushNow()) {
        case Flush::Blocked:
            if (cap()) capture::h1Yield(*cap());
            waitWrite();
            return;
        case Flush::Failed:
            abort();
            return;
        case Flush::Paced:
            if (cap()) capture::h1Yield(*cap());
            waitPace();
            return;
        case Flush::Done:
            if (cap()) capture::h1Flushed(*cap());
            break;
        }
        // The throttled exchange has left whole (a proxied one once its upstream has ended).
        if (paced() && !proxying()) rareIf()->pacing = false;
        if (holding()) {
            // Paused at a breakpoint: the decision calls back (resumePaused); nothing is read meanwhile.
            phase_ = Phase::Proxy;
            deadline_ = Clock::time_point::max();
            watchWhileHeld();
            return;
        }
        if (proxying()) {
            // The upstream's response is on its way; the exchange calls back. Drained: read on.
            phase_ = Phase::Proxy;
            deadline_ = Clock::time_point::max();
            if (Rare& r = *rareIf(); r.proxyPaused) {
                r.proxyPaused = false;
                r.proxy->resume();
            }
            return;
        }
        if (resetAfterWrite_) {
            resetWhenSent(true);
            return;
        }
        if (holdAfterWrite_) {
            // `fail: timeout`: as a lingering close, without the half-close and for idle_timeout.
            releaseBuffers();
            phase_ = Phase::Closing;
            deadline_ = worker_.now() + worker_.snapshot().config->limits.idleTimeout;
            waitRead();
            return;
        }
        if (closeAfterWrite_) {
            lingeringClose();
            return;
        }
        if (moreBuffered_) continue;
        break;
    }
    const auto& limits = worker_.snapshot().config->limits;
    if (in_.empty()) {
        // Nothing half-read. The output buffer goes back now; the input buffer stays for the next
        // request until the connection has been idle for a tick (then it is parked).
        worker_.buffers().release(out_);
        setPhase(Phase::Idle, limits.idleTimeout);
    } else if (phase_ == Phase::Write || phase_ == Phase::Idle || phase_ == Phase::Delay) {
        setPhase(Phase::Head, limits.headerTimeout);
    }
    waitRead();
}

void Connection::parseAndHandle() {
    moreBuffered_ = false;
    const auto& limits = worker_.snapshot().config->limits;
    const http1::ParserLimits plimits = parserLimits(limits);
    std::size_t batchStart = out_.size();
    for (;;) {
        if (in_.empty()) return;
        std::string_view data = in_.unread();
        if (!servedAny_ && !ssl() && data.front() == 'P' && worker_.snapshot().config->http2.enabled) {
            // h2c with prior knowledge (RFC 9113 §3.3): the client preface instead of a request.
            if (data.size() < kH2Preface.size() && kH2Preface.starts_with(data)) return;
            // The preface's first line is an HTTP/2 client's: what follows is judged as HTTP/2
            // (RFC 9113 §3.4: a bad preface is a connection error, not an HTTP/1.1 request).
            if (data.starts_with(kH2Preface.substr(0, 16))) {
                startH2(data);
                return;
            }
        }
        http1::RequestHead& head = worker_.head();
        std::size_t consumed = 0;
        http1::ParseError err;
        auto st = http1::parseHead(data, plimits, head, consumed, err);
        if (st == http1::ParseStatus::Incomplete) return;
        if (cap() && cap()->headNs < 0 && st == http1::ParseStatus::Complete) {
            cap()->headNs = capture::nowNs();
            cap()->headBytes = consumed;
        }
        if (st == http1::ParseStatus::Error) {
            worker_.counters().parseErrors.fetch_add(1, std::memory_order_relaxed);
            queueError(err.status, &head);
            return;
        }
        std::string_view body;
        std::span<const http::Header> trailers;
        std::size_t total = consumed;
        if (head.framing == http1::RequestHead::Framing::ContentLength) {
            if (head.contentLength > limits.maxBodyBytes) {
                worker_.counters().parseErrors.fetch_add(1, std::memory_order_relaxed);
                queueError(413, &head);
                return;
            }
            if (data.size() - consumed < head.contentLength) {
                const bool first = phase_ != Phase::Body; // the body's first incomplete read
                if (head.expectContinue && !sentContinue_ && head.versionMinor >= 1) {
                    if (answerBeforeBody()) return;
                    out_.append("HTTP/1.1 100 Continue\r\n\r\n");
                    sentContinue_ = true;
                }
                if (first && startUpload(consumed)) return;
                in_.ensureRoom(consumed + head.contentLength - data.size());
                if (phase_ != Phase::Body) setPhase(Phase::Body, limits.bodyTimeout);
                return;
            }
            body = data.substr(consumed, head.contentLength);
            total += head.contentLength;
        } else if (head.framing == http1::RequestHead::Framing::Chunked) {
            Rare& r = rare();
            if (!r.chunkActive) {
                r.chunked.reset(limits.maxBodyBytes, limits.maxHeaderBytes);
                r.chunkBody.clear();
                r.chunkPos = 0;
                r.chunkActive = true;
            }
            std::size_t used = 0;
            auto cs = r.chunked.decode(data.substr(consumed + r.chunkPos), r.chunkBody, used, err);
            r.chunkPos += used;
            if (cs == http1::ChunkedDecoder::Status::Error) {
                worker_.counters().parseErrors.fetch_add(1, std::memory_order_relaxed);
                queueError(err.status, &head);
                return;
            }
            if (cs == http1::ChunkedDecoder::Status::NeedMore) {
                const bool first = phase_ != Phase::Body;
                if (head.expectContinue && !sentContinue_) {
                    if (answerBeforeBody()) return;
                    out_.append("HTTP/1.1 100 Continue\r\n\r\n");
                    sentContinue_ = true;
                }
                if (first && startUpload(consumed)) return;
                if (phase_ != Phase::Body) setPhase(Phase::Body, limits.bodyTimeout);
                return;
            }
            body = r.chunkBody;
            trailers = r.chunked.trailers();
            total += r.chunkPos;
        }
        if (cap()) cap()->bodyDoneNs = capture::nowNs();
        handle(body, trailers);
        // A pipelined request behind this one starts now (the first one started at its first byte).
        if (worker_.accessLog() || cap()) requestStart_ = Clock::now();
        in_.consume(total);
        resetBodyState();
        if (rareIf() && rareIf()->upgrade) {
            startWebSocket();
            return;
        }
        if (rareIf() && rareIf()->interceptPort) {
            startIntercept();
            return;
        }
        if (phase_ == Phase::Body) phase_ = Phase::Head;
        if (closeAfterWrite_ || delayed() || sendingFile() || proxying() || paced() || holding() ||
            out_.size() - batchStart > kMaxBatchBytes) {
            moreBuffered_ = !in_.empty() && !closeAfterWrite_;
            return;
        }
    }
}

bool Connection::answerBeforeBody() {
    // RFC 9110 §10.1.1: with "Expect: 100-continue" the server answers the final status at once
    // when the method, target and fields already decide it (serve::refusedByHead), so the client
    // never sends a body that would be refused.
    const Snapshot& snap = worker_.snapshot();
    http1::RequestHead& head = worker_.head();
    const serve::Context ctx{*snap.config,  snap.router, worker_.handlerState(), localPort_, 1,
                             forwardProxy_, origin()};
    const bool refuse = serve::refusedByHead(ctx, head.method, head.rawPath, head.host, worker_.pathScratch(),
                                             !head.authority.empty());
    if (!refuse) return false;
    // The body will never be read, so this connection cannot carry another request.
    head.keepAlive = false;
    handle({}, {});
    closeAfterWrite_ = true;
    in_.clear();
    resetBodyState();
    return true;
}

Connection::Rare& Connection::rare() {
    Extra& e = extra();
    if (!e.rare) e.rare = std::make_unique<Rare>();
    return *e.rare;
}

Connection::Extra& Connection::extra() {
    if (!extra_) extra_ = std::make_unique<Extra>();
    return *extra_;
}

void Connection::resetBodyState() {
    sentContinue_ = false;
    if (Rare* r = rareIf(); r && r->chunkActive) {
        r->chunkActive = false;
        r->chunkPos = 0;
        // A large body's buffer is not kept for the rest of the connection's life.
        if (r->chunkBody.capacity() > 64 * 1024) std::string().swap(r->chunkBody);
    }
}

struct Connection::Writer final : serve::ResponseWriter {
    Writer(Connection& c, bool follows) : conn(c), bodyFollows(follows) {}
    void respond(const http::Request& req, http::Response& res) override { conn.respond(req, res); }
    bool upgrade(const http::Request& req, http::Response& res, const serve::Routed& routed) override {
        return conn.upgrade(req, res, routed);
    }
    bool intercept(const http::Request& req, std::string_view host, std::uint16_t port) override {
        return conn.intercept(req, host, port);
    }
    serve::ForwardTarget forwardTo(http::Request& req, const http::Response& res) override {
        return conn.forwardTo(req, res, bodyFollows);
    }
    void forwarding(std::shared_ptr<client::Call> call) override { conn.forwarding(std::move(call)); }
    bool pause(serve::Paused& paused) override { return !bodyFollows && conn.pause(paused); }
    Connection& conn;
    bool bodyFollows;
};

bool Connection::pause(serve::Paused& paused) {
    Rare& r = rare();
    if (r.clientAddress.empty()) { // for the Paused queue (forwardTo reads it the same way)
        boost::system::error_code ec;
        auto remote = socket_.remote_endpoint(ec);
        if (!ec) r.clientAddress = remote.address().to_string();
    }
    paused.shown.clientAddress = r.clientAddress;
    paused.shown.scheme = ssl() ? "https" : "http"; // HTTP/1.1 requests carry no scheme of their own
    r.paused = paused.shared_from_this();
    r.pausedSnapshot = worker_.snapshotPtr();
    paused.io = &worker_.io();
    paused.owner = shared_from_this(); // nothing else holds a connection that reads nothing
    paused.wake = [weak = weak_from_this()] {
        if (auto self = weak.lock()) self->resumePaused();
    };
    return true;
}

void Connection::watchWhileHeld() {
    socket_.async_wait(Socket::wait_read, [self = shared_from_this()](const boost::system::error_code& ec) {
        if (ec || self->closed_ || !self->holding()) return;
        char byte;
        const ssize_t n = ::recv(self->socket_.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
            self->abort(); // the client left: nothing is sent on for it
            return;
        }
        // More bytes (a pipelined request, TLS records) wait in the socket until the decision;
        // EOF behind them is seen then.
        if (n < 0) self->watchWhileHeld();
    });
}

// The breakpoint's decision: serve::resume() answers, forwards or aborts the held exchange as
// serve() would have, then the connection goes on (the answer is written, pipelined requests read).
void Connection::resumePaused() {
    if (closed_ || !holding()) return;
    Rare& r = *rareIf();
    const std::shared_ptr<const Snapshot> snap = std::move(r.pausedSnapshot); // outlives `paused`
    const std::shared_ptr<serve::Paused> paused = std::move(r.paused);
    const serve::Context ctx{
        *snap->config, snap->router, worker_.handlerState(), localPort_, 1, forwardProxy_,
        origin(),      &snap->rules};
    serve::Stamps stamps;
    if (cap()) stamps = {&cap()->routeNs, &cap()->labels};
    Writer writer{*this, false};
    serve::resume(ctx, *paused, worker_.request(), worker_.pathScratch(), worker_.response(), writer, stamps);
    if (rareIf()->upgrade) {
        startWebSocket();
        return;
    }
    if (rareIf()->interceptPort) {
        startIntercept();
        return;
    }
    if (!closed_) drive();
}

void Connection::handle(std::string_view body, std::span<const http::Header> trailers, bool bodyFollows) {
    const Snapshot& snap = worker_.snapshot();
    const config::Config& cfg = *snap.config;
    http1::RequestHead& head = worker_.head();
    http::Request& req = worker_.request();
    req.method = head.method;
    req.methodToken = head.methodToken;
    req.target = head.target;
    req.rawPath = head.rawPath;
    req.query = head.query;
    req.versionMajor = 1;
    req.versionMinor = head.versionMinor;
    req.headers = std::span<const http::Header>(head.headers.data(), head.headerCount);
    req.trailers = trailers;
    req.host = head.host;
    req.body = body;
    req.keepAlive = head.keepAlive;
    req.path = {};
    req.clientAddress = {}; // set by forwardTo() for a forwarded request
    worker_.counters().requests.fetch_add(1, std::memory_order_relaxed);
    servedAny_ = true;

    http::Response& res = worker_.response();
    const serve::Context ctx{cfg,      snap.router, worker_.handlerState(), localPort_, 1, forwardProxy_,
                             origin(), &snap.rules};
    serve::Stamps stamps;
    if (cap()) stamps = {&cap()->routeNs, &cap()->labels};
    Writer writer{*this, bodyFollows};
    serve::serve(ctx, req, worker_.pathScratch(), res, writer, stamps);
}

void Connection::respond(const http::Request& req, http::Response& res) {
    if (cap() && cap()->serverTiming) addServerTiming(res);
    logExchange(req, res);
    const std::size_t headStart = cap() ? out_.size() : 0;
    serialize(req, res);
    if (cap()) captureExchange(req, res, headStart, {});
}

// The WebSocket opening handshake (ws::acceptUpgrade fills `res` with the 101 or the refusal); on
// success the socket goes to the WebSocket session once the 101 is written (drive()).
bool Connection::upgrade(const http::Request& req, http::Response& res, const serve::Routed& routed) {
    auto keep = worker_.snapshotPtr();
    ws::UpgradeContext context{keep, keep->config.get(), keep->hub, worker_.draining()};
    if (auto up =
            ws::acceptUpgrade(std::move(context), routed.vhost, routed.route, req, ssl() != nullptr, res))
        rare().upgrade = std::move(up);
    respond(req, res);
    return true;
}

void Connection::logExchange(const http::Request& req, const http::Response& res) {
    AccessLogger* log = worker_.accessLog();
    if (!log) return;
    AccessRecord r;
    r.time = std::chrono::system_clock::now();
    boost::system::error_code ec;
    auto remote = socket_.remote_endpoint(ec);
    if (!ec) r.client = remote.address().to_string();
    r.method = req.methodToken.empty() ? "-" : std::string(req.methodToken);
    r.target = req.target.empty() ? "-" : std::string(req.target);
    r.host = std::string(req.host);
    r.referer = std::string(req.header("Referer"));
    r.userAgent = std::string(req.header("User-Agent"));
    r.versionMinor = req.versionMinor;
    r.status = res.status;
    r.bytes =
        (req.method == http::Method::Head || res.status == 304 || res.status == 204) ? 0 : res.bodyLength();
    // From the request's first byte to the response being ready to write, including mock latency.
    r.durationNs =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - requestStart_ + res.delay)
            .count();
    log->push(std::move(r));
}

void Connection::serialize(const http::Request& req, http::Response& res) {
    if (res.fate == http::Response::Fate::Drop) {
        // Fault injection: no response, and the connection is reset (RST) instead of closed. The
        // answers to requests pipelined before this one are written first (drive()), so only
        // this exchange is lost; from now on any close is a reset (SO_LINGER 0).
        closeAfterWrite_ = true;
        resetAfterWrite_ = true;
        linger l{1, 0};
        ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_LINGER, &l, sizeof l);
        return;
    }
    if (res.fate == http::Response::Fate::Silent) {
        // A rule's `fail: close`: no response; the connection closes (FIN) once the answers to
        // requests pipelined before this one have left.
        closeAfterWrite_ = true;
        return;
    }
    if (res.fate == http::Response::Fate::Hold) {
        // A rule's `fail: timeout`: no response, ever; the answers before it leave, then what the
        // client sends is read and dropped until it closes or idle_timeout passes (drive()).
        closeAfterWrite_ = true;
        holdAfterWrite_ = true;
        return;
    }
    if (!out_.allocated()) out_ = worker_.buffers().acquire();
    if (res.throttle.active()) startPace(res.throttle, req.body.size());
    bool keep = req.keepAlive && !worker_.draining() && res.fate == http::Response::Fate::Normal;
    const int status = res.status;
    const bool noBody = status < 200 || status == 204 || status == 304;
    appendStatusLines(status, res.serverHeader);
    out_.append(res.fieldBlock());
    // The framing fields and the head's end, gathered for one append.
    char tail[96];
    char* t = tail;
    auto put = [&t](std::string_view s) {
        std::memcpy(t, s.data(), s.size());
        t += s.size();
    };
    if (!noBody) {
        put("Content-Length: ");
        t = std::to_chars(t, t + 20, res.bodyLength()).ptr;
        put("\r\n");
    }
    if (!keep)
        put("Connection: close\r\n");
    else if (req.versionMinor == 0)
        put("Connection: keep-alive\r\n");
    put("\r\n");
    out_.append(std::string_view(tail, static_cast<std::size_t>(t - tail)));
    if (!noBody && req.method != http::Method::Head) {
        switch (res.bodyKind()) {
        case http::Response::BodyKind::Owned:
        case http::Response::BodyKind::Shared:
            out_.append(res.bodyView());
            break;
        case http::Response::BodyKind::File:
            if (res.bodyLength() <= kInlineFileBytes) {
                std::size_t n = res.bodyLength();
                out_.ensureRoom(n);
                std::size_t room = 0;
                char* p = out_.writable(room);
                ssize_t got = ::pread(res.file()->fd, p, n, static_cast<off_t>(res.fileOffset()));
                if (got != static_cast<ssize_t>(n)) {
                    keep = false; // file changed under us: the framing is broken, so close
                    got = std::max<ssize_t>(got, 0);
                }
                out_.commit(static_cast<std::size_t>(got));
            } else {
                Rare& r = rare();
                r.file = res.file();
                r.fileOffset = res.fileOffset();
                r.fileLeft = res.bodyLength();
            }
            break;
        case http::Response::BodyKind::None:
            break;
        }
    }
    if (res.delay.count() > 0) rare().delay = res.delay;
    if (!keep) closeAfterWrite_ = true;
}

void Connection::queueError(int status, const http1::RequestHead* head) {
    http::Response& res = worker_.response();
    res.reset();
    res.clearRuleState(); // the last exchange's (the response is shared by the worker's connections)
    handlers::errorResponse(status, res);
    res.fate = http::Response::Fate::Close;
    http::Request& req = worker_.request();
    req = http::Request{};
    req.keepAlive = false;
    if (head && !head->methodToken.empty()) {
        // The request line was read: the log and the record say what was asked (a 413's method
        // and URL), even though the head or body that followed was refused.
        req.method = head->method;
        req.methodToken = head->methodToken;
        req.target = head->target;
        req.rawPath = head->rawPath;
        req.query = head->query;
        req.host = head->host;
        req.versionMinor = head->versionMinor;
    }
    logExchange(req, res); // an unparsable request line is logged as "- -"
    const std::size_t headStart = cap() ? out_.size() : 0;
    serialize(req, res);
    if (cap()) captureExchange(req, res, headStart, "refused before routing");
    closeAfterWrite_ = true;
}

void Connection::startPace(const http::Response::Throttle& t, std::uint64_t upBytes) {
    Rare& r = rare();
    r.pacing = true;
    r.paceSkip = out_.allocated() ? out_.size() : 0;
    r.paceSent = 0;
    r.paceRate = t.down;
    r.paceStart = Clock::now() + t.firstByteDelay(upBytes);
}

std::uint64_t Connection::paceAllowance(Clock::time_point now) const {
    const Rare* r = rareIf();
    if (!r || !r->pacing) return std::numeric_limits<std::uint64_t>::max();
    if (r->paceSkip > 0) return r->paceSkip; // the answers queued before the throttled one
    if (now < r->paceStart) return 0;
    if (r->paceRate == 0) return std::numeric_limits<std::uint64_t>::max();
    const double ns = static_cast<double>((now - r->paceStart).count());
    const auto budget = static_cast<std::uint64_t>(ns * static_cast<double>(r->paceRate) / 1e9);
    return budget > r->paceSent ? budget - r->paceSent : 0;
}

void Connection::paceWrote(std::uint64_t n) {
    Rare* r = rareIf();
    if (!r || !r->pacing) return;
    const std::uint64_t skipped = std::min(n, r->paceSkip);
    r->paceSkip -= skipped;
    r->paceSent += n - skipped;
}

void Connection::waitPace() {
    Rare& r = *rareIf();
    // Not a write deadline: the client is reading, the throttle is what waits.
    phase_ = Phase::Delay;
    deadline_ = Clock::time_point::max();
    if (r.paceWaiting) return;
    const Clock::time_point now = Clock::now();
    Clock::time_point at = r.paceStart;
    if (now >= r.paceStart && r.paceRate > 0) {
        // The time the next slice is allowed: 20 ms of the rate (at least 1 KiB, at most 64 KiB),
        // or what is left when less is queued; a proxied body's next bytes may still be on the way.
        std::uint64_t slice = std::clamp<std::uint64_t>(r.paceRate / 50, 1024, 64 * 1024);
        std::uint64_t queued = out_.allocated() ? out_.size() : 0;
        queued += r.fileLeft;
        if (queued > 0) slice = std::min(slice, queued);
        const double due = static_cast<double>(r.paceSent + slice) * 1e9 / static_cast<double>(r.paceRate);
        at = r.paceStart + std::chrono::nanoseconds(static_cast<std::int64_t>(due));
    }
    if (!r.paceTimer) r.paceTimer.emplace(worker_.io());
    r.paceWaiting = true;
    r.paceTimer->expires_at(std::max(at, now));
    r.paceTimer->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
        Rare* pr = self->rareIf();
        if (pr) pr->paceWaiting = false;
        if (ec || self->closed_) return;
        if (!self->writeWaiting_) self->drive();
    });
}

Connection::Flush Connection::flushNow() {
    const int fd = socket_.native_handle();
    const bool pacing = paced();
    const Clock::time_point now = pacing ? Clock::now() : Clock::time_point{};
    for (;;) {
        while (!out_.empty()) {
            std::string_view d = out_.unread();
            if (pacing) {
                const std::uint64_t allowed = paceAllowance(now);
                if (allowed == 0) return Flush::Paced;
                d = d.substr(0, static_cast<std::size_t>(std::min<std::uint64_t>(allowed, d.size())));
            }
            // MSG_MORE when a file follows: the head and the first file bytes leave in one segment.
            io::IoResult r = io::transportWrite(fd, ssl(), d.data(), d.size(), sendingFile());
            if (r.status == io::IoStatus::Ok) {
                out_.consume(r.n);
                if (pacing) paceWrote(r.n);
                continue;
            }
            if (r.status == io::IoStatus::WantWrite || r.status == io::IoStatus::WantRead)
                return Flush::Blocked;
            return Flush::Failed;
        }
        if (!ssl() || !sendingFile()) break;
        // TLS: sendfile would bypass the encryption; the file goes through the output buffer.
        Rare& r = *rareIf();
        if (!out_.allocated()) out_ = worker_.buffers().acquire();
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(r.fileLeft, kTlsFileChunk));
        out_.ensureRoom(n);
        std::size_t room = 0;
        char* p = out_.writable(room);
        ssize_t got = ::pread(r.file->fd, p, n, static_cast<off_t>(r.fileOffset));
        if (got <= 0) return Flush::Failed; // the file shrank; the promised length can't be kept
        out_.commit(static_cast<std::size_t>(got));
        r.fileOffset += static_cast<std::uint64_t>(got);
        r.fileLeft -= static_cast<std::uint64_t>(got);
    }
    while (sendingFile()) {
        Rare& r = *rareIf();
        off_t off = static_cast<off_t>(r.fileOffset);
        std::uint64_t count = std::min<std::uint64_t>(r.fileLeft, 1 << 20);
        if (pacing) {
            count = std::min(count, paceAllowance(now));
            if (count == 0) return Flush::Paced;
        }
        ssize_t n = ::sendfile(fd, r.file->fd, &off, static_cast<std::size_t>(count));
        if (n > 0) {
            r.fileOffset += static_cast<std::uint64_t>(n);
            r.fileLeft -= static_cast<std::uint64_t>(n);
            if (pacing) paceWrote(static_cast<std::uint64_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Flush::Blocked;
        return Flush::Failed; // 0: the file shrank; the promised length can't be kept
    }
    if (rareIf()) rareIf()->file.reset();
    return Flush::Done;
}

void Connection::lingeringClose() {
    // Half-close and keep reading for a moment, so the client sees our response instead of a reset
    // caused by request bytes we never read (RFC 9112 §9.6).
    releaseBuffers();
    if (ssl()) {
        SSL_shutdown(ssl()); // close_notify (RFC 8446 §6.1); the client's reply is not awaited
        ERR_clear_error();
    }
    ::shutdown(socket_.native_handle(), SHUT_WR);
    phase_ = Phase::Closing;
    deadline_ = worker_.now() + kLingerTime;
    waitRead();
}

void Connection::resetWhenSent(bool first) {
    if (closed_) return;
    if (first) {
        // Bounded like any write: checkDeadline aborts (a reset too, SO_LINGER 0) at write_timeout
        // when the client does not read.
        releaseBuffers();
        setPhase(Phase::Write, worker_.snapshot().config->limits.writeTimeout);
    }
    int unacked = 0; // bytes written and not yet acknowledged by the client
    if (::ioctl(socket_.native_handle(), SIOCOUTQ, &unacked) == 0 && unacked > 0) {
        Rare& r = rare();
        if (!r.delayTimer) r.delayTimer.emplace(worker_.io());
        r.delayTimer->expires_after(std::chrono::milliseconds(5));
        r.delayTimer->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
            if (!ec) self->resetWhenSent(false);
        });
        return;
    }
    abort(); // SO_LINGER 0 (serialize): the close sends RST
}

void Connection::releaseBuffers() {
    worker_.buffers().release(in_);
    worker_.buffers().release(out_);
}

void Connection::checkDeadline(Clock::time_point now) {
    if (closed_) return;
    // Idle since deadline_ - idle_timeout (no extra member: memory per idle connection counts).
    const bool idleATick =
        phase_ == Phase::Idle && deadline_ - worker_.snapshot().config->limits.idleTimeout + kParkAfter < now;
    if (idleATick && in_.allocated() && in_.empty() && !parking_) {
        // Idle for a tick: cancel the buffered read; onRead gives the buffer back and waits without one.
        parking_ = true;
        boost::system::error_code ec;
        socket_.cancel(ec);
    }
    // TLS does not park: its record buffers go back to OpenSSL's allocator instead.
    if (idleATick) io::transportReleaseIdleBuffers(ssl()); // nothing for cleartext (ssl() null)
    if (rareIf() && rareIf()->uploading && now >= rareIf()->uploadDeadline) {
        // No request body bytes for body_timeout while the exchange waits for them.
        worker_.counters().timeouts.fetch_add(1, std::memory_order_relaxed);
        failUpload(408, "request body timed out (body_timeout)");
        return;
    }
    if (now < deadline_) return;
    switch (phase_) {
    case Phase::Head:
    case Phase::Body:
        // RFC 9110 §15.5.9: tell the client why before closing.
        worker_.counters().timeouts.fetch_add(1, std::memory_order_relaxed);
        in_.clear();
        resetBodyState();
        queueError(408);
        drive();
        return;
    case Phase::Idle:
    case Phase::Write:
        worker_.counters().timeouts.fetch_add(1, std::memory_order_relaxed);
        abort();
        return;
    case Phase::Closing:
        abort();
        return;
    case Phase::Delay:
    case Phase::Proxy: // the exchange has its own timeouts
        return;
    }
}

void Connection::onDrain() {
    if (phase_ == Phase::Idle && out_.empty()) abort();
}

void Connection::abort() {
    if (closed_) return;
    closed_ = true;
    // Parked, nothing else holds this object: it is freed when this function returns.
    const auto parkedSelf = leavePark();
    Rare* r = rareIf();
    if (r) r->uploading = false;
    if (cap()) capture::h1Closed(*cap());
    deadline_ = Clock::time_point::max();
    boost::system::error_code ec;
    socket_.cancel(ec);
    socket_.close(ec);
    if (r && r->delayTimer) r->delayTimer->cancel();
    if (r && r->paceTimer) r->paceTimer->cancel();
    if (r && r->proxy) {
        r->proxy->cancel();
        r->proxy.reset();
    }
    if (r && r->paused) { // leaves the Paused queue; ends the Paused → connection cycle
        const auto keep = shared_from_this();
        r->paused.reset();
        r->pausedSnapshot.reset();
    }
}

} // namespace portico::server
