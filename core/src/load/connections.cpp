// The load engine's worker threads: each with its own io_context drives HTTP/1.1 keep-alive or
// HTTP/2 connections, in cleartext or over TLS (closed or open model), times every request, and
// the counters are merged when the run ends. TLS runs on the socket itself (SSL_set_fd, like the
// server's transport); HTTP/2 is an nghttp2 client session fed with mem_recv and drained with
// mem_send. The run's set-up is in runner.cpp.
#include "load/plan.h"

#include <portico/http1/response_parser.h>

#include "client/connect.h"
#include "io/drained.h"
#include "io/tls_handshake.h"
#include "io/transport.h"
#include "tls/alpn.h"
#include "tls/client_tls.h"

#include <portico/http/message.h>
#include <portico/http2/session.h>

#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <latch>
#include <limits>
#include <thread>

#include <csignal>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>

namespace portico::load::detail {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using http1::ResponseParser;

namespace {

constexpr Ns kTick = 10'000'000;             // housekeeping period: stop checks, timeouts
constexpr Ns kReconnectBackoff = 50'000'000; // after a failed connect
constexpr std::size_t kReadBuffer = 64 * 1024;

std::chrono::steady_clock::time_point toTimePoint(Ns t) {
    return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(t));
}

enum class ErrorKind { Reset, Timeout, Protocol };

struct Worker;

/// One client connection with up to `depth` requests in flight: HTTP/1.1 (a ring in send order)
/// or HTTP/2 (a pool of stream slots with a free list).
struct Conn {
    struct InFlight {
        Ns intended = 0;
        Ns sent = 0;
        std::uint32_t spec = 0;
        bool warm = false;
        // HTTP/2 only
        bool active = false;
        bool ended = false; // END_STREAM received
        int status = 0;
        std::size_t bodyOffset = 0;
    };

    Conn(Worker& w, asio::io_context& io, unsigned global, unsigned depth)
        : worker(w), socket(io), timer(io), index(global), ring(depth), readBuf(new char[kReadBuffer]) {
        freeSlots.reserve(depth);
    }
    ~Conn() { release(); }

    Worker& worker;
    tcp::socket socket;
    std::size_t readAsked = 0; // the room of the read in flight
    asio::steady_timer timer;  // open-model pacing or reconnect back-off
    unsigned index;            // 0..connections-1 over the whole run
    std::vector<InFlight> ring;
    std::size_t ringHead = 0, inFlight = 0;
    std::unique_ptr<char[]> readBuf;
    std::size_t readBegin = 0, readEnd = 0;
    std::string writeBuf;
    std::size_t written = 0;
    ResponseParser parser;
    SSL* ssl = nullptr;
    nghttp2_session* h2 = nullptr;
    std::vector<std::uint32_t> freeSlots; // HTTP/2: unused ring entries
    std::uint64_t generation = 0;         // bumped on close: handlers of an older socket do nothing
    std::uint64_t nextSeq = 0;            // open model: this connection's next arrival
    enum class State : std::uint8_t { Idle, Connecting, Open } state = State::Idle;
    bool writeWaiting = false;
    bool timerArmed = false;
    bool scheduleDone = false; // open model: no arrival of this connection is left

    void connect();
    void connectFailed();
    void startTls();
    void handshake();
    void onConnected();
    void read();
    void onRead(const boost::system::error_code& ec, std::size_t n);
    void onReadableTls();
    void onReadError(bool eof);
    bool onData(std::size_t n);
    void fill();
    void flush();
    bool processResponses();
    bool processH2();
    void complete(Ns now);
    void record(const InFlight& f, int status, Ns now);
    void failOne(const InFlight& f, ErrorKind kind, Ns now);
    void fail(ErrorKind kind);
    void close();
    void release();
    void armTimer(Ns at);
    /// Send time of the oldest request in flight (inFlight > 0).
    Ns oldestSent() const {
        if (!h2) return ring[ringHead].sent;
        Ns t = kNever;
        for (const auto& f : ring)
            if (f.active) t = std::min(t, f.sent);
        return t;
    }
    template <class F> void forEachInFlight(F&& f) {
        if (h2) {
            for (auto& e : ring)
                if (e.active) f(e);
        } else {
            for (std::size_t i = 0; i < inFlight; ++i)
                f(ring[(ringHead + i) % ring.size()]);
        }
    }
};

struct Worker {
    Worker(const Plan& p, unsigned idx) : plan(p), io(1), tick(io), index(idx) {
        latency = std::make_unique<stats::Histogram>();
        service = std::make_unique<stats::Histogram>();
        const auto& o = *p.options;
        if (o.duration.count() > 0)
            slots.resize(
                static_cast<std::size_t>((o.duration + o.stopGrace + o.timeout).count() / 100'000'000) + 2);
        else
            slots.reserve(1024);
        rng = 0x9E3779B97F4A7C15ull * (idx + 1);
    }

    const Plan& plan;
    asio::io_context io;
    asio::steady_timer tick;
    unsigned index;
    std::vector<std::unique_ptr<Conn>> conns;

    // Results of this thread.
    RequestCounts requests, warmup;
    ErrorCounts errors;
    std::array<std::uint64_t, 600> statuses{};
    std::uint64_t bytesRead = 0, bytesWritten = 0;
    std::uint64_t missed = 0; // open model: arrivals due before the stop and never sent
    // The counters when this thread sent its first measured request: what the warm-up moved.
    std::uint64_t warmupBytesRead = 0, warmupBytesWritten = 0;
    bool measuring = false;
    std::unique_ptr<stats::Histogram> latency, service;
    std::vector<std::uint64_t> slots;
    Ns lastEvent = 0;
    double cpuUser = 0, cpuSystem = 0;

    // Run state.
    std::uint64_t quota = std::numeric_limits<std::uint64_t>::max(); // closed model: measured starts left
    std::uint64_t rng;
    std::size_t openConns = 0; // connections in State::Open
    bool stopping = false;
    bool finished = false;
    Ns stopAt = 0;
    Ns lastAlive = 0;   // last time a connection of this thread was open
    Ns lastPublish = 0; // to plan.live

    std::uint32_t pickSpec() {
        if (plan.specs.size() == 1) return 0;
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        const std::uint32_t r = static_cast<std::uint32_t>(rng % plan.cumulativeWeights.back());
        std::uint32_t i = 0;
        while (plan.cumulativeWeights[i] <= r)
            ++i;
        return i;
    }

    void countSlot(Ns now) {
        const auto i = static_cast<std::size_t>((now - plan.warmupEnd) / 100'000'000);
        if (i >= slots.size()) slots.resize(i + 1);
        ++slots[i];
    }

    std::size_t totalInFlight() const {
        std::size_t n = 0;
        for (const auto& c : conns)
            n += c->inFlight;
        return n;
    }

    void startTick() {
        tick.expires_after(std::chrono::nanoseconds(kTick));
        tick.async_wait([this](const boost::system::error_code& ec) {
            if (ec || finished) return;
            onTick();
            if (!finished) startTick();
        });
    }

    // Open model: arrivals that were due before the stop but found no free connection (too few
    // connections, or a slow server). As wrk2 does, each counts in the corrected latency with the
    // wait it had at least (the stop minus its intended send time), and the run says how many.
    void countMissed(Ns now) {
        if (plan.options->model() != Model::Open) return;
        const Ns end = std::min(now, plan.deadline);
        for (auto& c : conns)
            for (std::uint64_t seq = c->nextSeq;; ++seq) {
                const std::uint64_t k = c->index + seq * plan.options->connections;
                const Ns intended =
                    plan.start + static_cast<Ns>(std::llround(static_cast<double>(k) * plan.periodNs));
                if (k >= plan.openLimit || intended >= end) break;
                if (intended < plan.warmupEnd) continue;
                ++missed;
                latency->record(static_cast<std::uint64_t>(end - intended));
            }
    }

    bool boundReached(Ns now) const {
        if (plan.abort && plan.abort->load(std::memory_order_relaxed)) return true;
        if (now >= plan.deadline) return true;
        // The target went away: no connection for a whole timeout ends the run instead of retrying forever.
        if (openConns == 0 && now - lastAlive >= plan.options->timeout.count()) return true;
        if (plan.options->model() == Model::Closed) return quota == 0 && now >= plan.warmupEnd;
        for (const auto& c : conns)
            if (!c->scheduleDone) return false;
        return true;
    }

    void onTick() {
        const Ns now = nowNs();
        if (openConns) lastAlive = now;
        if (plan.live && now - lastPublish >= 250'000'000) {
            lastPublish = now;
            plan.live->publish(index, *latency, requests.completed, requests.failed);
        }
        if (!stopping && boundReached(now)) {
            stopping = true;
            stopAt = now;
            countMissed(now);
            for (auto& c : conns) {
                c->timer.cancel();
                c->timerArmed = false;
                if (c->state != Conn::State::Open) c->close(); // no reconnects any more
            }
        }
        const Ns timeout = plan.options->timeout.count();
        for (auto& c : conns)
            if (c->inFlight && now - c->oldestSent() >= timeout) c->fail(ErrorKind::Timeout);
        if (!stopping) return;
        const bool graceOver = now - stopAt >= plan.options->stopGrace.count();
        if (totalInFlight() && !graceOver) return;
        for (auto& c : conns) {
            c->forEachInFlight([&](Conn::InFlight& f) {
                ++(f.warm ? warmup : requests).cancelled;
                lastEvent = std::max(lastEvent, now);
            });
            c->inFlight = 0;
            c->close();
        }
        finished = true;
        tick.cancel();
    }

    void run(std::latch& connected, std::latch& go) {
        // OpenSSL writes with write(), not send(MSG_NOSIGNAL): a server that closed first must give
        // EPIPE, not kill the process.
        io::blockSigpipe();
        rusage before{};
        getrusage(RUSAGE_THREAD, &before);
        for (auto& c : conns)
            c->connect();
        io.run(); // until every first connect has finished
        connected.count_down();
        go.wait();
        lastAlive = nowNs();
        io.restart();
        for (auto& c : conns) {
            if (c->state == Conn::State::Open) {
                c->read();
                c->fill();
            } else {
                c->connect();
            }
        }
        startTick();
        io.run();
        rusage after{};
        getrusage(RUSAGE_THREAD, &after);
        auto secs = [](const timeval& a, const timeval& b) {
            return static_cast<double>(b.tv_sec - a.tv_sec) +
                   static_cast<double>(b.tv_usec - a.tv_usec) / 1e6;
        };
        cpuUser = secs(before.ru_utime, after.ru_utime);
        cpuSystem = secs(before.ru_stime, after.ru_stime);
    }
};

bool started(const Worker& w) { return w.plan.start != 0; }

using tls::sslErrorText;

// HTTP/2 client callbacks. They only update the stream slots and counters: the session is never
// closed from inside one.
Conn::InFlight* slotOf(nghttp2_session* s, std::int32_t id, void* user, std::uint32_t* index = nullptr) {
    void* d = nghttp2_session_get_stream_user_data(s, id);
    if (!d) return nullptr;
    const auto i = reinterpret_cast<std::uintptr_t>(d) - 1;
    auto* c = static_cast<Conn*>(user);
    if (i >= c->ring.size() || !c->ring[i].active) return nullptr;
    if (index) *index = static_cast<std::uint32_t>(i);
    return &c->ring[i];
}

int onH2Header(nghttp2_session* s, const nghttp2_frame* frame, const std::uint8_t* name, std::size_t namelen,
               const std::uint8_t* value, std::size_t valuelen, std::uint8_t, void* user) {
    if (frame->hd.type != NGHTTP2_HEADERS || namelen != 7 || std::memcmp(name, ":status", 7) != 0) return 0;
    auto* f = slotOf(s, frame->hd.stream_id, user);
    if (!f) return 0;
    int status = 0;
    for (std::size_t i = 0; i < valuelen && i < 3; ++i)
        status = status * 10 + (value[i] - '0');
    f->status = valuelen == 3 && status >= 100 && status <= 599 ? status : 0;
    return 0;
}

int onH2FrameRecv(nghttp2_session* s, const nghttp2_frame* frame, void* user) {
    if ((frame->hd.type == NGHTTP2_DATA || frame->hd.type == NGHTTP2_HEADERS) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        if (auto* f = slotOf(s, frame->hd.stream_id, user)) f->ended = true;
    return 0;
}

int onH2StreamClose(nghttp2_session* s, std::int32_t id, std::uint32_t errorCode, void* user) {
    std::uint32_t i = 0;
    auto* slot = slotOf(s, id, user, &i);
    if (!slot) return 0;
    auto* c = static_cast<Conn*>(user);
    const Conn::InFlight f = *slot;
    slot->active = false;
    c->freeSlots.push_back(i);
    --c->inFlight;
    const Ns now = nowNs();
    if (errorCode == NGHTTP2_NO_ERROR && f.ended && f.status >= 200)
        c->record(f, f.status, now);
    else
        c->failOne(f,
                   errorCode == NGHTTP2_NO_ERROR || errorCode == NGHTTP2_PROTOCOL_ERROR ||
                           errorCode == NGHTTP2_FLOW_CONTROL_ERROR ||
                           errorCode == NGHTTP2_COMPRESSION_ERROR || errorCode == NGHTTP2_FRAME_SIZE_ERROR
                       ? ErrorKind::Protocol
                       : ErrorKind::Reset,
                   now);
    return 0;
}

void Conn::connect() {
    if (worker.stopping) return;
    boost::system::error_code ec;
    if (socket.is_open()) socket.close(ec);
    ++generation;
    state = State::Connecting;
    socket.open(worker.plan.endpoint.protocol(), ec);
    if (ec) {
        ++worker.errors.connect;
        state = State::Idle;
        armTimer(nowNs() + kReconnectBackoff);
        return;
    }
    socket.non_blocking(true, ec);
    socket.async_connect(worker.plan.endpoint, [this, gen = generation](const boost::system::error_code& e) {
        if (gen != generation) return;
        if (e) {
            connectFailed();
            return;
        }
        boost::system::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        if (worker.plan.ssl)
            startTls();
        else
            onConnected();
    });
}

// A connection attempt (TCP or TLS handshake) failed: counted, retried after a back-off once running.
void Conn::connectFailed() {
    ++worker.errors.connect;
    release();
    boost::system::error_code ignored;
    socket.close(ignored);
    ++generation;
    state = State::Idle;
    if (started(worker) && !worker.stopping) armTimer(nowNs() + kReconnectBackoff);
}

void Conn::startTls() {
    const Plan& plan = worker.plan;
    ssl = SSL_new(plan.ssl);
    if (!ssl || SSL_set_fd(ssl, socket.native_handle()) != 1) {
        ERR_clear_error();
        connectFailed();
        return;
    }
    plan.tls->prepare(ssl); // SNI, host check, connect state
    handshake();
}

void Conn::handshake() {
    io::driveHandshake(
        socket, ssl, [this, gen = generation] { return gen == generation; },
        [this](io::HandshakeEnd end, const boost::system::error_code&) {
            if (end != io::HandshakeEnd::Done) {
                ERR_clear_error();
                connectFailed();
                return;
            }
            if (worker.plan.h2 && tls::alpnOf(ssl) != "h2") {
                connectFailed();
                return;
            }
            onConnected();
        });
}

void Conn::onConnected() {
    state = State::Open;
    ++worker.openConns;
    if (worker.plan.h2) {
        // h2load's defaults: stream and connection windows of 2^30-1, no server push.
        http2::SessionSettings settings;
        settings.streamWindowBytes = (1u << 30) - 1;
        settings.connectionWindowBytes = (1u << 30) - 1;
        std::string why;
        h2 = http2::makeSession(*worker.plan.h2Callbacks, this, settings, why).release();
        if (!h2) { // out of memory: counted as a connection that failed
            --worker.openConns;
            connectFailed();
            return;
        }
        freeSlots.clear();
        for (std::size_t i = ring.size(); i-- > 0;)
            freeSlots.push_back(static_cast<std::uint32_t>(i));
    }
    if (!started(worker)) return; // first connect: requests begin after the latch
    read();
    fill();
}

void Conn::armTimer(Ns at) {
    timerArmed = true;
    timer.expires_at(toTimePoint(at));
    timer.async_wait([this, gen = generation](const boost::system::error_code& ec) {
        if (ec) return;
        timerArmed = false;
        if (worker.stopping || worker.finished) return;
        if (state == State::Idle)
            connect();
        else if (gen == generation && state == State::Open)
            fill();
    });
}

void Conn::read() {
    if (ssl) {
        // OpenSSL reads the socket itself; bytes it already decrypted never make the socket readable.
        if (io::transportPending(ssl)) {
            asio::post(worker.io, [this, gen = generation] {
                if (gen == generation) onReadableTls();
            });
            return;
        }
        socket.async_wait(tcp::socket::wait_read,
                          [this, gen = generation](const boost::system::error_code& ec) {
                              if (gen != generation) return;
                              if (ec)
                                  onReadError(false);
                              else
                                  onReadableTls();
                          });
        return;
    }
    readAsked = kReadBuffer - readEnd;
    socket.async_read_some(asio::buffer(readBuf.get() + readEnd, readAsked),
                           [this, gen = generation](const boost::system::error_code& ec, std::size_t n) {
                               if (gen != generation) return;
                               onRead(ec, n);
                           });
}

void Conn::onRead(const boost::system::error_code& ec, std::size_t n) {
    if (ec) {
        onReadError(ec == asio::error::eof);
        return;
    }
    const bool drained = n < readAsked;
    if (!onData(n)) return; // the connection was closed
    // A short read that ended between responses drained the socket: the next read waits for the
    // server without a recv that would fail with EAGAIN (io/drained.h), a syscall per response
    // saved on the client side. Not in the middle of a response: the server may close right after
    // these bytes (a close-delimited body), and a FIN that came with them raises no new edge.
    if (drained && !parser.started()) io::markDrained(socket);
    read();
    fill();
}

void Conn::onReadableTls() {
    const std::uint64_t gen = generation;
    for (;;) {
        const auto r =
            io::transportRead(socket.native_handle(), ssl, readBuf.get() + readEnd, kReadBuffer - readEnd);
        if (r.status == io::IoStatus::Ok) {
            if (!onData(r.n) || gen != generation) return;
            continue;
        }
        if (r.status == io::IoStatus::WantRead) break;
        if (r.status == io::IoStatus::WantWrite) {
            socket.async_wait(tcp::socket::wait_write, [this, gen](const boost::system::error_code& ec) {
                if (gen != generation) return;
                if (ec)
                    onReadError(false);
                else
                    onReadableTls();
            });
            fill();
            return;
        }
        onReadError(r.status == io::IoStatus::Eof);
        return;
    }
    read();
    fill();
}

void Conn::onReadError(bool eof) {
    // EOF completes a close-delimited body; anything else outstanding was lost.
    if (eof && !h2 && inFlight && parser.started() && parser.completesAtEof()) complete(nowNs());
    if (inFlight)
        fail(ErrorKind::Reset);
    else {
        close();
        if (!worker.stopping) connect();
    }
}

// `n` more bytes in the read buffer: parses them. False if the connection was closed meanwhile.
bool Conn::onData(std::size_t n) {
    worker.bytesRead += n;
    readEnd += n;
    if (h2) return processH2();
    if (!processResponses()) return false;
    if (readBegin == readEnd) {
        readBegin = readEnd = 0;
    } else if (readEnd == kReadBuffer) {
        if (readBegin == 0) { // a head larger than the buffer
            fail(ErrorKind::Protocol);
            return false;
        }
        std::memmove(readBuf.get(), readBuf.get() + readBegin, readEnd - readBegin);
        readEnd -= readBegin;
        readBegin = 0;
    }
    return true;
}

bool Conn::processH2() {
    const ssize_t rv = nghttp2_session_mem_recv(
        h2, reinterpret_cast<const std::uint8_t*>(readBuf.get()) + readBegin, readEnd - readBegin);
    readBegin = readEnd = 0;
    if (rv < 0) {
        fail(ErrorKind::Protocol);
        return false;
    }
    if (!nghttp2_session_want_read(h2) && !nghttp2_session_want_write(h2)) { // GOAWAY handled
        if (inFlight)
            fail(ErrorKind::Reset);
        else {
            close();
            if (!worker.stopping) connect();
        }
        return false;
    }
    return true;
}

// Parses every complete response in the buffer. False if the connection was closed meanwhile.
bool Conn::processResponses() {
    while (readBegin < readEnd) {
        if (!inFlight) {
            fail(ErrorKind::Protocol); // bytes nobody asked for
            return false;
        }
        if (!parser.started()) parser.begin(worker.plan.specs[ring[ringHead].spec].head);
        std::size_t used = 0;
        auto st = parser.parse(readBuf.get() + readBegin, readEnd - readBegin, used);
        readBegin += used;
        if (st == ResponseParser::Status::NeedMore) break;
        if (st == ResponseParser::Status::Error) {
            fail(ErrorKind::Protocol);
            return false;
        }
        const bool keepAlive = parser.keepAlive(); // complete() resets the parser
        complete(nowNs());
        if (!keepAlive) {
            if (inFlight)
                fail(ErrorKind::Reset); // the server will not answer the rest
            else {
                close();
                if (!worker.stopping) connect();
            }
            return false;
        }
    }
    return true;
}

// HTTP/1.1: the oldest request's response is complete.
void Conn::complete(Ns now) {
    const InFlight f = ring[ringHead];
    ringHead = (ringHead + 1) % ring.size();
    --inFlight;
    const int status = parser.status();
    parser = ResponseParser{};
    record(f, status, now);
}

void Conn::record(const InFlight& f, int status, Ns now) {
    if (f.warm) {
        ++worker.warmup.completed;
        return;
    }
    ++worker.requests.completed;
    ++worker.statuses[static_cast<std::size_t>(std::clamp(status, 0, 599))];
    worker.latency->record(static_cast<std::uint64_t>(std::max<Ns>(0, now - f.intended)));
    worker.service->record(static_cast<std::uint64_t>(std::max<Ns>(0, now - f.sent)));
    worker.countSlot(now);
    worker.lastEvent = now;
}

void Conn::failOne(const InFlight& f, ErrorKind kind, Ns now) {
    auto& counts = f.warm ? worker.warmup : worker.requests;
    ++counts.failed;
    if (f.warm) return;
    switch (kind) {
    case ErrorKind::Reset:
        ++worker.errors.reset;
        break;
    case ErrorKind::Timeout:
        ++worker.errors.timeout;
        break;
    case ErrorKind::Protocol:
        ++worker.errors.protocol;
        break;
    }
    worker.lastEvent = std::max(worker.lastEvent, now);
}

// Every request in flight fails as `kind`; the connection is closed and (unless stopping) reopened.
void Conn::fail(ErrorKind kind) {
    const Ns now = nowNs();
    forEachInFlight([&](InFlight& f) { failOne(f, kind, now); });
    inFlight = 0;
    close();
    if (!worker.stopping) connect();
}

// Frees the TLS and HTTP/2 state of the current socket (not the socket itself).
void Conn::release() {
    if (h2) {
        nghttp2_session_del(h2);
        h2 = nullptr;
        for (auto& f : ring)
            f.active = false;
        freeSlots.clear();
    }
    if (ssl) {
        SSL_free(ssl);
        ssl = nullptr;
    }
}

void Conn::close() {
    boost::system::error_code ec;
    if (state == State::Open) --worker.openConns;
    release();
    if (socket.is_open()) socket.close(ec);
    ++generation;
    state = State::Idle;
    ringHead = inFlight = 0;
    readBegin = readEnd = 0;
    writeBuf.clear();
    written = 0;
    writeWaiting = false;
    parser = ResponseParser{};
}

// Starts as many requests as the model allows now, then writes them in one send.
void Conn::fill() {
    if (state != State::Open) return;
    if (worker.stopping) { // no new requests; HTTP/2 may still owe WINDOW_UPDATEs and ACKs
        if (!h2) return;
    }
    const Plan& plan = worker.plan;
    const Ns now = nowNs();
    const bool open = plan.options->model() == Model::Open;
    const std::size_t depth = ring.size();
    while (inFlight < depth && !worker.stopping) {
        Ns intended = now;
        bool warm = false;
        if (open) {
            const std::uint64_t k = index + nextSeq * plan.options->connections;
            intended = plan.start + static_cast<Ns>(std::llround(static_cast<double>(k) * plan.periodNs));
            if (k >= plan.openLimit || intended >= plan.deadline) {
                scheduleDone = true;
                break;
            }
            if (intended > now) {
                if (!timerArmed) armTimer(intended);
                break;
            }
            ++nextSeq;
            warm = intended < plan.warmupEnd;
        } else {
            if (now >= plan.deadline) break;
            warm = now < plan.warmupEnd;
            if (!warm) {
                if (worker.quota == 0) break;
                --worker.quota;
            }
        }
        if (!warm && !worker.measuring) {
            worker.measuring = true;
            worker.warmupBytesRead = worker.bytesRead;
            worker.warmupBytesWritten = worker.bytesWritten;
        }
        const std::uint32_t spec = worker.pickSpec();
        const auto& prepared = plan.specs[spec];
        if (h2) {
            const std::uint32_t i = freeSlots.back();
            freeSlots.pop_back();
            auto& slot = ring[i];
            slot = InFlight{intended, now, spec, warm, true, false, 0, 0};
            nghttp2_data_provider body{};
            body.source.ptr = &slot;
            body.read_callback = [](nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t length,
                                    std::uint32_t* flags, nghttp2_data_source* source,
                                    void* user) -> ssize_t {
                auto* c = static_cast<Conn*>(user);
                auto* f = static_cast<InFlight*>(source->ptr);
                const std::string& b = c->worker.plan.specs[f->spec].body;
                const std::size_t n = std::min(length, b.size() - f->bodyOffset);
                std::memcpy(buf, b.data() + f->bodyOffset, n);
                f->bodyOffset += n;
                if (f->bodyOffset == b.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
                return static_cast<ssize_t>(n);
            };
            const std::int32_t id =
                nghttp2_submit_request(h2, nullptr, prepared.nva.data(), prepared.nva.size(),
                                       prepared.body.empty() ? nullptr : &body,
                                       reinterpret_cast<void*>(static_cast<std::uintptr_t>(i) + 1));
            ++inFlight;
            ++(warm ? worker.warmup : worker.requests).started;
            if (id < 0) { // out of stream ids: this connection is used up
                slot.active = false;
                freeSlots.push_back(i);
                --inFlight;
                failOne(slot, ErrorKind::Protocol, now);
                break;
            }
        } else {
            auto& slot = ring[(ringHead + inFlight) % depth];
            slot = InFlight{intended, now, spec, warm};
            ++inFlight;
            ++(warm ? worker.warmup : worker.requests).started;
            writeBuf.append(prepared.bytes);
        }
    }
    if (h2) {
        for (;;) {
            const std::uint8_t* data = nullptr;
            const ssize_t n = nghttp2_session_mem_send(h2, &data);
            if (n < 0) {
                fail(ErrorKind::Protocol);
                return;
            }
            if (n == 0) break;
            writeBuf.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
        }
    }
    flush();
}

void Conn::flush() {
    if (writeWaiting || state != State::Open) return;
    const int fd = socket.native_handle();
    while (written < writeBuf.size()) {
        const auto r = io::transportWrite(fd, ssl, writeBuf.data() + written, writeBuf.size() - written);
        if (r.status == io::IoStatus::Ok) {
            written += r.n;
            worker.bytesWritten += r.n;
            continue;
        }
        if (r.status == io::IoStatus::WantRead || r.status == io::IoStatus::WantWrite) {
            writeWaiting = true;
            socket.async_wait(r.status == io::IoStatus::WantRead ? tcp::socket::wait_read
                                                                 : tcp::socket::wait_write,
                              [this, gen = generation](const boost::system::error_code& ec) {
                                  if (gen != generation) return;
                                  writeWaiting = false;
                                  if (!ec) flush();
                              });
            return;
        }
        fail(ErrorKind::Reset);
        return;
    }
    writeBuf.clear();
    written = 0;
}

} // namespace

void setH2Callbacks(nghttp2_session_callbacks* cbs) {
    nghttp2_session_callbacks_set_on_header_callback(cbs, onH2Header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, onH2FrameRecv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, onH2StreamClose);
}

void drive(Plan& plan, Result& result) {
    const Options& options = *plan.options;
    Live* live = plan.live;
    const unsigned threads = std::min(options.threads, options.connections);
    std::vector<std::unique_ptr<Worker>> workers;
    for (unsigned t = 0; t < threads; ++t)
        workers.push_back(std::make_unique<Worker>(plan, t));
    for (unsigned c = 0; c < options.connections; ++c) {
        auto& w = *workers[c % threads];
        w.conns.push_back(std::make_unique<Conn>(w, w.io, c, options.depth()));
        w.conns.back()->writeBuf.reserve(options.depth() * 512);
    }
    if (options.model() == Model::Closed && options.count) {
        // Measured requests split by connections per thread.
        std::uint64_t given = 0;
        for (unsigned t = 0; t < threads; ++t) {
            const std::uint64_t share = t + 1 == threads
                                            ? options.count - given
                                            : options.count * workers[t]->conns.size() / options.connections;
            workers[t]->quota = share;
            given += share;
        }
    }

    std::latch connected(threads), go(1);
    std::vector<std::thread> pool;
    for (auto& w : workers) {
        pool.emplace_back([&w, &connected, &go] { w->run(connected, go); });
        pthread_setname_np(pool.back().native_handle(),
                           ("portico-load" + std::to_string(pool.size() - 1)).c_str());
    }
    connected.wait();
    // Every first connect has finished: the clock starts now for all threads at once.
    plan.start = nowNs();
    plan.warmupEnd = plan.start + options.warmup.count();
    if (options.duration.count() > 0) plan.deadline = plan.warmupEnd + options.duration.count();
    if (options.model() == Model::Open) {
        plan.periodNs = 1e9 / options.rate;
        const auto warmupArrivals = static_cast<std::uint64_t>(
            std::ceil(static_cast<double>(options.warmup.count()) / plan.periodNs));
        if (options.count) {
            plan.openLimit = warmupArrivals + options.count;
            // After the last arrival nothing is left to start: that is the count bound's deadline.
            const Ns lastArrival = plan.start + static_cast<Ns>(std::ceil(plan.openLimit * plan.periodNs));
            plan.deadline = std::min(plan.deadline, lastArrival + 1);
        }
    }
    if (live) live->begin(threads, result.address, std::chrono::steady_clock::now());
    go.count_down();
    for (auto& t : pool)
        t.join();
    const Ns end = nowNs();

    // Merge.
    result.latency = std::make_unique<stats::Histogram>();
    result.serviceTime = std::make_unique<stats::Histogram>();
    Ns last = 0;
    std::array<std::uint64_t, 600> statuses{};
    for (auto& w : workers) {
        auto add = [](RequestCounts& a, const RequestCounts& b) {
            a.started += b.started;
            a.completed += b.completed;
            a.failed += b.failed;
            a.cancelled += b.cancelled;
        };
        add(result.requests, w->requests);
        add(result.warmup, w->warmup);
        result.errors.connect += w->errors.connect;
        result.errors.reset += w->errors.reset;
        result.errors.timeout += w->errors.timeout;
        result.errors.protocol += w->errors.protocol;
        for (std::size_t s = 0; s < statuses.size(); ++s)
            statuses[s] += w->statuses[s];
        result.missedArrivals += w->missed;
        result.bytesRead += w->bytesRead;
        result.bytesWritten += w->bytesWritten;
        result.measuredBytesRead += w->measuring ? w->bytesRead - w->warmupBytesRead : 0;
        result.measuredBytesWritten += w->measuring ? w->bytesWritten - w->warmupBytesWritten : 0;
        result.latency->merge(*w->latency);
        result.serviceTime->merge(*w->service);
        if (result.perSlot.size() < w->slots.size()) result.perSlot.resize(w->slots.size());
        for (std::size_t s = 0; s < w->slots.size(); ++s)
            result.perSlot[s] += w->slots[s];
        last = std::max(last, w->lastEvent);
        result.cpuUserSeconds += w->cpuUser;
        result.cpuSystemSeconds += w->cpuSystem;
    }
    for (std::size_t s = 100; s < statuses.size(); ++s)
        if (statuses[s]) result.statuses[static_cast<int>(s)] = statuses[s];
    if (!last) last = end;
    result.measured = std::chrono::nanoseconds(std::max<Ns>(0, last - plan.warmupEnd));
    // Trailing empty slots (the pre-sized tail) are not part of the series.
    const auto measuredSlots = static_cast<std::size_t>(result.measured.count() / 100'000'000) + 1;
    if (result.perSlot.size() > measuredSlots) result.perSlot.resize(measuredSlots);
}

} // namespace portico::load::detail
