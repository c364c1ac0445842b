// The HTTP/1.1 client call (see http1_call.h).
#include "client/http1_call.h"

#include "client/connect.h"
#include "client/h2_client.h"
#include "client/per_context.h"
#include "io/async_transport.h"
#include "io/drained.h"
#include "io/tls_handshake.h"
#include "tls/alpn.h"
#include "tls/client_tls.h"

#include <openssl/ssl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <map>
#include <vector>

#include <cerrno>
#include <sys/socket.h>

namespace portico::client {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// A pooled keep-alive connection. Nothing is pending on it while it waits (no read, no timer): its
// socket moves in and out of the pool with no Asio operation to start or cancel. The worker's tick
// (sweepIdleConnections) closes it once its idle_timeout passed (nginx's upstream
// keepalive_timeout), or once the upstream closed it or sent anything unasked, so it never sits
// in CLOSE_WAIT for longer than a tick.
struct IdleConnection {
    IdleConnection(Http1Call::Socket&& s, SslPtr&& tls, std::chrono::steady_clock::time_point at,
                   std::chrono::steady_clock::time_point until, std::uint32_t n)
        : socket(std::move(s)), ssl(std::move(tls)), since(at), expires(until), served(n) {}
    Http1Call::Socket socket;
    SslPtr ssl; // https:// upstreams (declared after socket: freed before it closes)
    std::chrono::steady_clock::time_point since;   // pooled at
    std::chrono::steady_clock::time_point expires; // since + the route's idle_timeout
    std::uint32_t served = 0; // responses it carried (1: not yet reused; 0: adopted, none yet)
};

// Per worker thread and upstream address ("host", port): the idle keep-alive connections (most
// recently pooled last) and until when the address is skipped after a failed connect.
struct UpstreamPool {
    std::string host;
    std::uint16_t port = 0;
    bool tls = false; // https://: TLS connections, kept apart from cleartext ones to the same address
    // https:// with the caller's TLS (CallOptions::tls): its SSL_CTX, the trust decision; null for
    // the default context. Connections that verify and ones that do not never share a pool (a
    // pooled connection's SSL keeps its SSL_CTX, so this address stays that context's meanwhile).
    const SSL_CTX* tlsContext = nullptr;
    std::vector<IdleConnection> idle;
    std::chrono::steady_clock::time_point failedUntil{};
};

// The connect and response deadlines of the exchanges on one io_context, kept on one timer: an
// exchange arms and disarms its deadline with list operations, where an Asio timer of its own cost
// a wait operation and its cancellation (a completion to run) per request. Exchanges with the same
// timeout expire in the order they were armed, so each timeout value keeps a FIFO lane and the
// timer waits for the earliest lane head. An Asio service: created with the first exchange on an
// io_context, destroyed with it. Used on the io_context's thread only.
class Deadlines final : public asio::execution_context::service {
public:
    using Clock = std::chrono::steady_clock;
    static asio::execution_context::id id;

    explicit Deadlines(asio::execution_context& context)
        : service(context), timer_(static_cast<asio::io_context&>(context)) {}

    // The Deadlines of `io`, looked up once per thread and io_context (use_service takes the
    // io_context's registry lock). A service shutting down voids every thread's cached pointer: a
    // later io_context may sit at the same address.
    static Deadlines& of(asio::io_context& io) {
        thread_local asio::io_context* cachedIo = nullptr;
        thread_local Deadlines* cached = nullptr;
        thread_local std::uint64_t cachedGeneration = 0;
        const std::uint64_t generation = shutdowns_.load(std::memory_order_acquire);
        if (cachedIo != &io || cachedGeneration != generation) {
            cached = &asio::use_service<Deadlines>(io);
            cachedIo = &io;
            cachedGeneration = generation;
        }
        return *cached;
    }

    // (Re)starts `x`'s deadline: `timeout` from now.
    void arm(Http1Call& x, std::chrono::nanoseconds timeout) {
        disarm(x);
        x.deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout);
        std::size_t lane = 0;
        while (lane < lanes_.size() && lanes_[lane].timeout != timeout)
            ++lane;
        if (lane == lanes_.size()) lanes_.push_back({timeout, nullptr, nullptr});
        Lane& l = lanes_[lane];
        x.deadlineLane_ = static_cast<int>(lane);
        x.deadlinePrev_ = l.tail;
        x.deadlineNext_ = nullptr;
        (l.tail ? l.tail->deadlineNext_ : l.head) = &x;
        l.tail = &x;
        if (x.deadline_ < waitingFor_) wait(x.deadline_);
    }

    void disarm(Http1Call& x) {
        if (x.deadlineLane_ < 0) return;
        Lane& l = lanes_[static_cast<std::size_t>(x.deadlineLane_)];
        (x.deadlinePrev_ ? x.deadlinePrev_->deadlineNext_ : l.head) = x.deadlineNext_;
        (x.deadlineNext_ ? x.deadlineNext_->deadlinePrev_ : l.tail) = x.deadlinePrev_;
        x.deadlinePrev_ = x.deadlineNext_ = nullptr;
        x.deadlineLane_ = -1;
    }

private:
    struct Lane {
        std::chrono::nanoseconds timeout;
        Http1Call* head;
        Http1Call* tail;
    };

    void wait(Clock::time_point when) {
        waitingFor_ = when;
        timer_.expires_at(when); // a pending wait ends with operation_aborted
        timer_.async_wait([this](const boost::system::error_code& ec) {
            if (ec) return;
            waitingFor_ = Clock::time_point::max();
            expire();
        });
    }

    // Times out every exchange whose deadline passed (each may arm or disarm others as it fails
    // over), then waits for the earliest deadline left.
    void expire() {
        const auto now = Clock::now();
        for (;;) {
            Http1Call* due = nullptr;
            for (const Lane& l : lanes_)
                if (l.head && l.head->deadline_ <= now) {
                    due = l.head;
                    break;
                }
            if (!due) break;
            disarm(*due);
            const auto keep = due->shared_from_this();
            due->onTimeout();
        }
        auto earliest = Clock::time_point::max();
        for (const Lane& l : lanes_)
            if (l.head && l.head->deadline_ < earliest) earliest = l.head->deadline_;
        if (earliest != Clock::time_point::max() && earliest < waitingFor_) wait(earliest);
    }

    // The io_context is going away: exchanges still linked forget their lanes (nothing runs now,
    // and an exchange that outlives the service must not touch it).
    void shutdown() override {
        for (Lane& l : lanes_) {
            for (Http1Call* x = l.head; x;) {
                Http1Call* next = x->deadlineNext_;
                x->deadlinePrev_ = x->deadlineNext_ = nullptr;
                x->deadlineLane_ = -1;
                x = next;
            }
            l.head = l.tail = nullptr;
        }
        shutdowns_.fetch_add(1, std::memory_order_release);
    }

    static inline std::atomic<std::uint64_t> shutdowns_{0};

    std::vector<Lane> lanes_; // a few: one per distinct connect/response timeout in use
    asio::steady_timer timer_;
    Clock::time_point waitingFor_ = Clock::time_point::max(); // the pending wait's expiry
};
asio::execution_context::id Deadlines::id;

namespace {
constexpr std::size_t kReadChunk = 16 * 1024;
// A pooled connection idle for less than this is reused without probing it (Http1Call::pick).
constexpr std::chrono::milliseconds kFreshIdle{100};
struct Pools {
    // A few per io_context (the addresses its routes proxied to): found by a linear search, never
    // removed while the io_context lives, so an exchange keeps a pointer to its pool.
    std::vector<std::unique_ptr<UpstreamPool>> pools;
    std::map<const void*, std::size_t> next; // round-robin position per proxy action
};
Pools& poolsOf(asio::io_context& io) { return PerContext<Pools>::of(io); }

// Read buffers (kReadChunk bytes, not zeroed) kept per worker thread: an exchange takes one when it
// first reads and gives it back when it ends, instead of a 16 KiB allocation and memset per request.
thread_local std::vector<std::unique_ptr<char[]>> tReadBuffers;
constexpr std::size_t kKeptReadBuffers = 1024;

// The strings an exchange builds its request and parses the response head into, kept per worker
// thread with their capacity, as the read buffers are: three allocations fewer per request.
thread_local std::vector<std::string> tStrings;
constexpr std::size_t kKeptStrings = 3072;
constexpr std::size_t kKeptStringCapacity = 16 * 1024; // longer ones are freed
std::string takeString() {
    if (tStrings.empty()) return {};
    std::string s = std::move(tStrings.back());
    tStrings.pop_back();
    return s;
}
void keepString(std::string& s) {
    if (s.capacity() <= std::string().capacity() || s.capacity() > kKeptStringCapacity ||
        tStrings.size() >= kKeptStrings)
        return;
    s.clear();
    tStrings.push_back(std::move(s));
}

// Memory for exchanges (allocate_shared's one block: control block and Http1Call, about 1.7 KiB),
// kept per worker thread. glibc's per-thread cache stops at 1,032 bytes, so each new exchange
// otherwise takes malloc's slow path.
template <class T> struct Recycled {
    using value_type = T;
    Recycled() = default;
    template <class U> Recycled(const Recycled<U>&) noexcept {}
    struct Blocks {
        std::vector<T*> free;
        ~Blocks() {
            for (T* p : free)
                std::allocator<T>().deallocate(p, 1);
        }
    };
    static std::vector<T*>& blocks() {
        thread_local Blocks b;
        return b.free;
    }
    T* allocate(std::size_t n) {
        auto& free = blocks();
        if (n != 1 || free.empty()) return std::allocator<T>().allocate(n);
        T* p = free.back();
        free.pop_back();
        return p;
    }
    void deallocate(T* p, std::size_t n) {
        auto& free = blocks();
        if (n != 1 || free.size() >= 1024) {
            std::allocator<T>().deallocate(p, n);
            return;
        }
        free.push_back(p);
    }
    template <class U> bool operator==(const Recycled<U>&) const noexcept { return true; }
    template <class U> bool operator!=(const Recycled<U>&) const noexcept { return false; }
};

bool isTls(const config::Upstream& u) { return u.protocol == config::Upstream::Protocol::H2; }

// `tlsContext`: the caller's TLS (CallOptions::tls) or null for the default (UpstreamPool).
UpstreamPool& poolOf(Pools& pools, const config::Upstream& u, const tls::ClientTls* tlsContext) {
    const bool tls = isTls(u);
    const SSL_CTX* ctx = tls && tlsContext ? tlsContext->ctx.get() : nullptr;
    for (const auto& p : pools.pools)
        if (p->port == u.port && p->tls == tls && p->tlsContext == ctx && p->host == u.host) return *p;
    auto& p = pools.pools.emplace_back(std::make_unique<UpstreamPool>());
    p->host = u.host;
    p->port = u.port;
    p->tls = tls;
    p->tlsContext = ctx;
    return *p;
}

// True when nothing can be read from a pooled connection (EAGAIN): the upstream neither closed it
// nor sent anything unasked. One recv(MSG_PEEK) syscall.
bool quiet(Http1Call::Socket& socket) {
    char probe;
    return ::recv(socket.native_handle(), &probe, 1, MSG_PEEK | MSG_DONTWAIT) < 0 &&
           (errno == EAGAIN || errno == EWOULDBLOCK);
}

// Puts a connection that finished a response back in `pool` (unless `maxIdle` wait there already;
// the caller then closes it).
void park(UpstreamPool& pool, Http1Call::Socket& socket, SslPtr& ssl, std::chrono::nanoseconds idleTimeout,
          std::size_t maxIdle, std::uint32_t served) {
    if (pool.idle.size() >= maxIdle) return;
    const auto now = std::chrono::steady_clock::now();
    pool.idle.emplace_back(std::move(socket), std::move(ssl), now,
                           now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(idleTimeout),
                           served);
}

// Several Cookie lines in `head` (the request line, field lines, the blank line, maybe the body)
// joined into the first one with "; " (RFC 9113 §8.2.3: an HTTP/2 client's cookie fields before
// they reach HTTP/1.1; RFC 6265 §5.4: one Cookie field). Nothing changes with one or none.
void joinCookieLines(std::string& head) {
    constexpr std::string_view kName = "cookie:";
    std::size_t pos = head.find("\r\n");
    if (pos == std::string::npos) return;
    pos += 2;
    std::size_t joinAt = std::string::npos; // the end of the first Cookie line's value
    std::string more;
    while (pos < head.size()) {
        const std::size_t eol = head.find("\r\n", pos);
        if (eol == std::string::npos || eol == pos) break; // the blank line: the head ends
        const std::string_view line(head.data() + pos, eol - pos);
        if (!http::istartsWith(line, kName)) {
            pos = eol + 2;
            continue;
        }
        if (joinAt == std::string::npos) {
            joinAt = eol;
            pos = eol + 2;
            continue;
        }
        const std::string_view value = http::trimOws(line.substr(kName.size()));
        more.assign(value.empty() ? "" : "; ").append(value);
        head.erase(pos, eol + 2 - pos);
        head.insert(joinAt, more);
        joinAt += more.size();
        pos += more.size(); // the next line moved by the insertion before it
    }
}

bool hopByHop(std::string_view name) { return http::isHopByHop(name); }
bool namedIn(std::string_view connectionValue, std::string_view name) {
    return http::listHasToken(connectionValue, name);
}
} // namespace

Http1Call::Http1Call(asio::io_context& io, const config::ProxyAction& action)
    : io_(io), action_(action), socket_(io.get_executor()), deadlines_(Deadlines::of(io)),
      head_(takeString()), fields_(takeString()) {}

Http1Call::~Http1Call() {
    disarm();
    if (buffer_ && tReadBuffers.size() < kKeptReadBuffers) tReadBuffers.push_back(std::move(buffer_));
    keepString(request_);
    keepString(head_);
    keepString(fields_);
}

std::shared_ptr<Http1Call> Http1Call::create(asio::io_context& io, const config::ProxyAction& action) {
    auto x = std::allocate_shared<Http1Call>(Recycled<Http1Call>(), io, action);
    x->pending_.head = takeString();
    return x;
}

void Http1Call::start(std::shared_ptr<void> owner, std::shared_ptr<const void> snapshot, Sink* sink,
                      const CallOptions* options, const config::HostOverrides* hosts) {
    options_ = options;
    hosts_ = hosts;
    owner_ = std::move(owner);
    snapshot_ = std::move(snapshot);
    sink_ = sink;
    Http1Request& req = pending_;
    streaming_ = req.streaming;
    chunkedUp_ = req.chunked;
    headRequest_ = req.headRequest;
    idempotent_ = req.idempotent;
    upgrade_ = req.upgrade;
    request_ = std::move(req.head);
    joinCookieLines(request_);
    if (req.streaming) {
        body_ = std::move(req.body);
        bodyEnded_ = req.bodyEnded;
        trailerBlock_ = std::move(req.trailerBlock);
    } else {
        request_.append(req.body);
    }
    begin();
}

std::shared_ptr<Http1Call> Http1Call::startPrepared(asio::io_context& io, std::shared_ptr<void> owner,
                                                    std::shared_ptr<const void> snapshot,
                                                    const config::ProxyAction& action, Http1Request&& req,
                                                    Sink* sink, const CallOptions* options,
                                                    const config::HostOverrides* hosts) {
    auto x = create(io, action);
    keepString(x->pending_.head);
    x->pending_ = std::move(req);
    x->start(std::move(owner), std::move(snapshot), sink, options, hosts);
    return x;
}

void Http1Call::begin() {
    // A quiet pooled connection takes the request at once. A new connection is opened from a
    // handler: a failure there calls the sink back, which must never happen before start() has
    // returned (onUpstreamConnected, which only notes the time, is the one callback allowed).
    const auto now = std::chrono::steady_clock::now();
    choose(now);
    if (!reusePooled(now))
        asio::post(io_, [x = shared_from_this()] {
            if (!x->cancelled_) x->openNew();
        });
}

void Http1Call::closeConnection() {
    ++connGen_;
    boost::system::error_code ec;
    socket_.close(ec);
    ssl_.reset();
}

void Http1Call::pick() {
    if (cancelled_) return;
    const auto now = std::chrono::steady_clock::now();
    choose(now);
    if (!reusePooled(now)) openNew();
}

void Http1Call::choose(std::chrono::steady_clock::time_point now) {
    Pools& pools = poolsOf(io_);
    const config::Upstream* chosen =
        &pickUpstream(action_.upstreams, pools.next[&action_], [&](const config::Upstream& u) {
            return poolOf(pools, u, callerTls()).failedUntil > now;
        });
    upstream_ = chosen;
    pool_ = &poolOf(pools, *chosen, callerTls());
}

bool Http1Call::reusePooled(std::chrono::steady_clock::time_point now) {
    auto& idle = pool_->idle;
    while (!idle.empty()) {
        IdleConnection& entry = idle.back();
        socket_ = std::move(entry.socket);
        ssl_ = std::move(entry.ssl);
        const std::uint32_t served = entry.served;
        const auto since = entry.since;
        idle.pop_back();
        // A pooled connection the upstream closed (EOF) or wrote to while it waited is readable
        // now: drop it. Nothing to read (EAGAIN) is the only state to reuse. The probe is a
        // syscall (a fifth of a proxied exchange's), so an idempotent request without a streamed
        // body goes without when the connection was already reused once (its upstream keeps
        // connections alive), was pooled less than kFreshIdle ago, and no read event reached it
        // since its last response ended in a short read (io::stillDrained: the reactor saw no
        // byte and no end of file since finish() marked it). A FIN that came with the last
        // response's bytes raised no edge of its own, so such a connection may be closed after
        // all: the request then meets the upstream's reset and is retried on a new connection
        // (as nginx does), which is why only requests that may be retried skip the probe. An
        // upstream that closes right after each response without saying so is always probed.
        // served 0: adopted fresh from an HTTP/2 call's handshake (adoptConnection), where a TLS 1.3
        // session ticket may still wait unread: taken without the probe.
        if (served == 0 ||
            (served >= 2 && idempotent_ && !streaming_ && now - since < kFreshIdle &&
             io::stillDrained(socket_)) ||
            quiet(socket_)) {
            reused_ = true;
            served_ = served;
            send();
            return true;
        }
        closeConnection();
    }
    return false;
}

void Http1Call::openNew() {
    reused_ = false;
    served_ = 0;
    ++tries_; // new connections only: a stale pooled one that failed is not a try of its upstream
    connect();
}

void Http1Call::arm(std::chrono::nanoseconds timeout) { deadlines_.arm(*this, timeout); }

void Http1Call::disarm() { deadlines_.disarm(*this); }

void Http1Call::onTimeout() {
    if (cancelled_ || stage_ == Stage::Done) return;
    closeConnection();
    const bool connecting = stage_ == Stage::Connecting;
    fail(stage_ == Stage::Body ? 0 : 504,
         connecting ? "timed out connecting (connect_timeout)" : "timed out waiting for the response", false);
}

void Http1Call::connect() {
    stage_ = Stage::Connecting;
    std::string error;
    auto endpoints = options_ && !options_->endpoints.empty()
                         ? options_->endpoints
                         : client::resolve(upstream_->host, upstream_->port, error, hosts_);
    if (endpoints.empty()) {
        fail(502, error, true);
        return;
    }
    if (sink_) resolvedNs_ = std::chrono::steady_clock::now().time_since_epoch().count();
    arm(action_.connectTimeout);
    const bool several = endpoints.size() > 1;
    client::asyncConnect(
        socket_, std::move(endpoints),
        [self = shared_from_this(), several](const boost::system::error_code& e,
                                             const tcp::endpoint& endpoint, const std::string& failures) {
            if (self->cancelled_ || self->stage_ == Stage::Done) return;
            if (e) {
                if (e == asio::error::operation_aborted) return; // the timer answered
                self->fail(502, "cannot connect: " + (several ? failures : e.message()), true);
                return;
            }
            if (self->sink_) {
                self->tcpConnectedNs_ = std::chrono::steady_clock::now().time_since_epoch().count();
                self->connectedTo_ = client::endpointText(endpoint);
            }
            boost::system::error_code ignored;
            self->socket_.set_option(tcp::no_delay(true), ignored);
            if (isTls(*self->upstream_))
                self->startTls();
            else
                self->send();
        });
}

void Http1Call::startTls() {
    std::string error;
    const tls::ClientTls* tls =
        options_ && options_->tls ? options_->tls : http1UpstreamTls(upstream_->host, error);
    if (!tls) {
        fail(502, "TLS: " + error, true);
        return;
    }
    boost::system::error_code ec;
    socket_.non_blocking(true, ec);
    ssl_.reset(SSL_new(tls->ctx.get()));
    if (!ssl_ || !SSL_set_fd(ssl_.get(), socket_.native_handle())) {
        fail(502, "TLS: " + tls::sslErrorText(), true);
        return;
    }
    tls->prepare(ssl_.get());
    io::driveHandshake(
        socket_, ssl_.get(), [self = shared_from_this(), gen = connGen_] { return self->connGen_ == gen; },
        [self = shared_from_this(), tls](io::HandshakeEnd end, const boost::system::error_code& e) {
            if (self->cancelled_ || self->stage_ == Stage::Done) return;
            if (end != io::HandshakeEnd::Done) {
                const std::string address = self->upstream_->authority;
                self->fail(502,
                           end == io::HandshakeEnd::WaitFailed
                               ? "TLS handshake with " + address + ": " + e.message()
                               : tls::handshakeError(self->ssl_.get(), *tls, address),
                           true);
                return;
            }
            const std::string_view alpn = tls::alpnOf(self->ssl_.get());
            if (!alpn.empty() && alpn != "http/1.1") {
                self->fail(502,
                           "the TLS upstream selected '" + std::string(alpn) + "' with ALPN, not http/1.1",
                           true);
                return;
            }
            if (self->sink_) self->sink_->onUpstreamTls(SSL_get_version(self->ssl_.get()), alpn);
            self->tlsToldThisCall_ = true;
            self->send();
        });
}

void Http1Call::send() {
    stage_ = Stage::Sending;
    parser_.begin(headRequest_, http1::ResponseParser::Deliver::Events);
    carry_.clear();
    if (sink_ && tcpConnectedNs_ >= 0) {
        sink_->onUpstreamConnection(resolvedNs_, tcpConnectedNs_, connectedTo_);
        tcpConnectedNs_ = -1;
    } else if (sink_ && ssl_ && !tlsToldThisCall_) {
        // A pooled TLS connection: its handshake was another call's; its version and ALPN hold.
        sink_->onUpstreamTls(SSL_get_version(ssl_.get()), tls::alpnOf(ssl_.get()));
    }
    tlsToldThisCall_ = false;
    if (sink_) sink_->onUpstreamConnected();
    arm(action_.responseTimeout);
    if (streaming_) {
        // The head and whatever body is here now; the rest as it comes (writeBody). The response is
        // read meanwhile: an upstream may answer before it has the whole body.
        headWritten_ = false;
        writeBody();
        if (cancelled_ || stage_ == Stage::Done) return;
        stage_ = Stage::Head;
        read();
        return;
    }
    if (ssl_) {
        io::asyncTransportWrite(
            socket_, ssl_.get(), request_.data(), request_.size(),
            [self = shared_from_this(), gen = connGen_] { return self->connGen_ == gen; },
            [self = shared_from_this()](const boost::system::error_code& e, std::size_t) { self->sent(e); });
        return;
    }
    // A request without a streamed body is small: one non-blocking send nearly always takes it
    // whole, and the response is read at once, with no write operation to allocate and complete.
    // Whatever the socket did not take, or an error, goes through async_write (which reports
    // errors from a handler, never under start()'s feet).
    const ssize_t sent =
        ::send(socket_.native_handle(), request_.data(), request_.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent == static_cast<ssize_t>(request_.size())) {
        stage_ = Stage::Head;
        if (sink_) sink_->onRequestSent();
        read();
        return;
    }
    const std::size_t done = sent > 0 ? static_cast<std::size_t>(sent) : 0;
    asio::async_write(
        socket_, asio::buffer(request_.data() + done, request_.size() - done),
        [self = shared_from_this()](const boost::system::error_code& e, std::size_t) { self->sent(e); });
}

void Http1Call::sent(const boost::system::error_code& e) {
    if (cancelled_ || stage_ == Stage::Done) return;
    if (e) {
        if (e == asio::error::operation_aborted) return;
        fail(502, "connection lost while sending the request: " + e.message(), reused_ && idempotent_);
        return;
    }
    stage_ = Stage::Head;
    if (sink_) sink_->onRequestSent();
    read();
}

// One write at a time: the head (first), the body bytes held, and once requestEnd() came the end
// (chunked: the last chunk with the trailers). Each completed write reports its body bytes to the
// sink, which hands over more only as these drain.
void Http1Call::writeBody() {
    if (writing_ || requestSent_ || cancelled_ || stage_ == Stage::Done || stage_ == Stage::Connecting)
        return;
    wire_.clear();
    if (!headWritten_) {
        wire_.append(request_);
        headWritten_ = true;
    }
    wireBody_ = body_.size();
    if (!body_.empty()) {
        if (chunkedUp_) {
            char size[20];
            auto e = std::to_chars(size, size + sizeof size, body_.size(), 16);
            wire_.append(size, static_cast<std::size_t>(e.ptr - size));
            wire_.append("\r\n");
        }
        if (wire_.empty())
            wire_.swap(body_); // the common case of a long upload: no copy
        else
            wire_.append(body_);
        body_.clear();
        if (chunkedUp_) wire_.append("\r\n");
        bodyStarted_ = true;
    }
    if (bodyEnded_) {
        if (chunkedUp_) {
            wire_.append("0\r\n");
            wire_.append(trailerBlock_);
            wire_.append("\r\n");
        }
        requestSent_ = true;
    }
    if (wire_.empty()) {
        // Waiting for the client, which is not the upstream's fault (the downstream's body_timeout
        // covers it); the response timer runs again once there is something to write.
        if (stage_ == Stage::Head) disarm();
        return;
    }
    writing_ = true;
    if (stage_ != Stage::Body) arm(action_.responseTimeout);
    auto done = [self = shared_from_this()](const boost::system::error_code& e, std::size_t) {
        self->wrote(e);
    };
    if (ssl_)
        io::asyncTransportWrite(
            socket_, ssl_.get(), wire_.data(), wire_.size(),
            [self = shared_from_this(), gen = connGen_] { return self->connGen_ == gen; }, std::move(done));
    else
        asio::async_write(socket_, asio::buffer(wire_), std::move(done));
}

void Http1Call::wrote(const boost::system::error_code& e) {
    if (e == asio::error::operation_aborted) return; // closed (writing_ is reset by whoever closed)
    writing_ = false;
    if (cancelled_ || stage_ == Stage::Done) return;
    if (e) {
        // The upstream stopped reading a body it no longer needs: the response is under way
        // (Body), or may be (Head: an upstream that answers early, say its own 413, and closes;
        // the read already waiting gets that answer, or the end, and decides). Either way no more
        // bytes go up and the connection is not reused.
        if (stage_ == Stage::Body || stage_ == Stage::Head) {
            requestSent_ = true;
            keepAlive_ = false;
            if (stage_ == Stage::Body)
                body_.clear();
            else
                writeError_ = e; // body_ stays: a retry on a new connection sends it
            return;
        }
        fail(502, "connection lost while sending the request: " + e.message(),
             reused_ && idempotent_ && !bodyStarted_ && !gotBytes_);
        return;
    }
    const std::size_t n = wireBody_;
    wireBody_ = 0;
    if (requestSent_ && stage_ == Stage::Head) arm(action_.responseTimeout);
    if (n && sink_) sink_->onRequestBodyConsumed(n);
    if (requestSent_ && sink_) sink_->onRequestSent(); // the last write (nothing follows it)
    if (cancelled_ || stage_ == Stage::Done) return;
    writeBody();
}

void Http1Call::requestBody(std::string_view data) {
    if (!streaming_ || cancelled_ || stage_ == Stage::Done || bodyEnded_ || data.empty()) return;
    body_.append(data);
    writeBody();
}

void Http1Call::requestEnd(std::span<const http::Header> trailers) {
    if (!streaming_ || cancelled_ || stage_ == Stage::Done || bodyEnded_) return;
    bodyEnded_ = true;
    if (chunkedUp_) {
        // RFC 9110 §6.5.1: fields that frame, route or authenticate never go in trailers.
        for (const auto& t : trailers) {
            if (hopByHop(t.name) || http::iequals(t.name, "content-length") || http::iequals(t.name, "host"))
                continue;
            trailerBlock_.append(t.name);
            trailerBlock_.append(": ");
            trailerBlock_.append(t.value);
            trailerBlock_.append("\r\n");
        }
    }
    writeBody();
}

void Http1Call::read() {
    if (cancelled_ || paused_) return;
    if (!buffer_) {
        if (tReadBuffers.empty()) {
            buffer_.reset(new char[kReadChunk]);
        } else {
            buffer_ = std::move(tReadBuffers.back());
            tReadBuffers.pop_back();
        }
    }
    auto done = [self = shared_from_this()](const boost::system::error_code& e, std::size_t n) {
        self->afterRead(e, n);
    };
    if (ssl_)
        io::asyncTransportRead(
            socket_, ssl_.get(), buffer_.get(), kReadChunk,
            [self = shared_from_this(), gen = connGen_] { return self->connGen_ == gen; }, std::move(done));
    else
        socket_.async_read_some(asio::buffer(buffer_.get(), kReadChunk), std::move(done));
}

void Http1Call::afterRead(const boost::system::error_code& e, std::size_t n) {
    if (cancelled_ || stage_ == Stage::Done) return;
    if (e == asio::error::operation_aborted) return;
    if (e == asio::error::eof && stage_ == Stage::Body && parser_.completesAtEof()) {
        finish(false);
        return;
    }
    if (e) {
        const bool retry = reused_ && idempotent_ && !gotBytes_ && !bodyStarted_;
        if (stage_ == Stage::Body)
            fail(0, "upstream closed mid-body: " + e.message(), false);
        else if (writeError_)
            fail(502, "connection lost while sending the request: " + writeError_.message(), retry);
        else
            fail(502,
                 e == asio::error::eof ? "closed the connection without a response"
                                       : "connection lost: " + e.message(),
                 retry);
        return;
    }
    // A short read mid-body drained the socket: the next read waits for the epoll edge
    // (io/drained.h). Not while the upstream may close right after these bytes (a head, a
    // close-delimited body, "Connection: close"): a FIN that came with them raises no new edge,
    // and only the speculative read sees it. Not over TLS, whose reads try the socket first.
    // (A response that ended here is marked in finish() instead, before pooling: no read waits on
    // it there, and reusePooled() says why a missed FIN costs a retry at most.)
    if (n < kReadChunk && stage_ == Stage::Body && keepAlive_ && !parser_.completesAtEof() && !ssl_)
        io::markDrained(socket_);
    shortRead_ = n < kReadChunk && !ssl_;
    onRead(n);
}

void Http1Call::onRead(std::size_t n) {
    if (!gotBytes_ && sink_) sink_->onUpstreamFirstByte();
    gotBytes_ = true;
    std::string_view data(buffer_.get(), n);
    if (stage_ == Stage::Head) {
        head_.append(data);
        if (!parseHead()) return; // failed, or needs more
        // Bytes after the head start the body.
        data = std::string_view(head_).substr(buffered_);
        stage_ = Stage::Body;
        if (parser_.head().framing == http1::ResponseHead::Framing::None) {
            std::size_t used = 0; // the parser's Complete
            parser_.parse(data.data(), 0, used);
            finish(keepAlive_ && data.empty());
            return;
        }
        const bool go = deliver(data);
        if (!cancelled_ && stage_ != Stage::Done) head_.clear();
        if (!go) return;
    } else if (!deliver(data)) {
        return;
    }
    if (stage_ == Stage::Body) {
        arm(action_.responseTimeout);
        read();
    }
}

// Parses the response head in head_ (http1::ResponseParser). True when it is complete and handed
// to the sink; buffered_ is then the offset of the first body byte in head_.
bool Http1Call::parseHead() {
    std::size_t at = 0; // interim heads before it
    for (;;) {
        std::size_t used = 0;
        const auto st = parser_.parse(head_.data() + at, head_.size() - at, used);
        if (st == http1::ResponseParser::Status::NeedMore) {
            if (at) head_.erase(0, at);
            read();
            return false;
        }
        if (st != http1::ResponseParser::Status::Head) {
            fail(502, std::string("bad response: ") + parser_.error(), false);
            return false;
        }
        const http1::ResponseHead& h = parser_.head();
        at += used;
        if (h.interim()) continue; // the parser reads the final head next
        if (h.status == 101) {
            if (!upgrade_) {
                fail(502, "upstream switched protocols (not supported on this route)", false);
                return false;
            }
            fields_.clear();
            http1::forEachResponseField(h.fields, [&](std::string_view name, std::string_view value) {
                if (hopByHop(name) || namedIn(h.connection, name) || http::iequals(name, "content-length"))
                    return;
                fields_.append(name);
                fields_.append(": ");
                fields_.append(value);
                fields_.append("\r\n");
            });
            stage_ = Stage::Done;
            disarm();
            std::string leftover = head_.substr(at);
            Sink* sink = sink_;
            sink_ = nullptr;
            auto keep = std::move(owner_);
            if (sink) sink->onUpstreamUpgrade(fields_, std::move(socket_), std::move(ssl_), leftover);
            return false;
        }
        if (h.otherCodings) {
            // The client would get coded bytes with nothing saying how they are coded.
            fail(502, "the upstream applied a transfer coding other than chunked (not supported)", false);
            return false;
        }
        status_ = h.status;
        keepAlive_ = h.keepAlive;
        fields_.clear();
        const bool allFields = options_ && options_->allFields;
        for (std::string_view rest = h.fields; !rest.empty();) {
            const auto nl = rest.find('\n');
            std::string_view f = rest.substr(0, nl);
            rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
            if (!f.empty() && f.back() == '\r') f.remove_suffix(1);
            const std::string_view name = f.substr(0, f.find(':'));
            // Trailer announces trailers, and an HTTP/1.1 upstream's never reach the client.
            if (!allFields && (hopByHop(name) || namedIn(h.connection, name) ||
                               http::iequals(name, "content-length") || http::iequals(name, "trailer")))
                continue;
            fields_.append(f);
            fields_.append("\r\n");
        }
        using Framing = http1::ResponseHead::Framing;
        const bool noBody = headRequest_ || h.status == 204 || h.status == 304;
        const auto told = noBody || h.framing != Framing::Chunked ? h.contentLength : std::nullopt;
        buffered_ = at;
        disarm();
        // No body, or a Content-Length body whose first bytes came with the head: onRead goes on
        // to finish() or deliver() at once, so the head can leave with them in one write.
        if (h.framing == Framing::None || (h.framing == Framing::ContentLength && head_.size() > buffered_))
            sink_->onUpstreamHeadBodyFollows(h.status, fields_, told);
        else
            sink_->onUpstreamHead(h.status, fields_, told);
        return !cancelled_;
    }
}

// Passes body bytes on (http1::ResponseParser's body pieces); false when the exchange ended or
// paused (then resume() reads on). A chunk-size line cut by the read waits in carry_.
bool Http1Call::deliver(std::string_view data) {
    bool more = true;
    if (!carry_.empty()) {
        carry_.append(data);
        data = carry_;
    }
    std::size_t at = 0;
    for (;;) {
        std::size_t used = 0;
        const auto st = parser_.parse(data.data() + at, data.size() - at, used);
        at += used;
        if (st == http1::ResponseParser::Status::Body) {
            more = sink_->onUpstreamBody(parser_.body()) && more;
            if (cancelled_) return false;
            continue;
        }
        if (st == http1::ResponseParser::Status::Complete) {
            const bool clean = at == data.size();
            carry_.clear();
            finish(keepAlive_ && clean);
            return false;
        }
        if (st == http1::ResponseParser::Status::Error) {
            carry_.clear();
            fail(0, std::string("bad response body framing: ") + parser_.error(), false);
            return false;
        }
        break; // NeedMore
    }
    if (at < data.size()) {
        std::string rest(data.substr(at));
        carry_ = std::move(rest);
    } else {
        carry_.clear();
    }
    if (!more) {
        paused_ = true;
        disarm(); // a slow client is not the upstream's fault
        return false;
    }
    return true;
}

void Http1Call::resume() {
    if (!paused_ || cancelled_ || stage_ == Stage::Done) return;
    paused_ = false;
    arm(action_.responseTimeout);
    read();
}

void Http1Call::finish(bool reusable) {
    // A response that ended before the whole request went up: the upstream may still expect body
    // bytes, so the connection cannot carry another request.
    if (streaming_ && (!requestSent_ || writing_)) reusable = false;
    stage_ = Stage::Done;
    disarm();
    if (reusable && socket_.is_open()) {
        // The response ended with a short read: the socket is drained, and an upstream that kept
        // this connection alive before (served_ >= 1) gets it marked so, which lets reusePooled
        // skip its probe for an idempotent request (see there).
        if (shortRead_ && served_ >= 1) io::markDrained(socket_);
        park(*pool_, socket_, ssl_, action_.idleTimeout, action_.keepalive, served_ + 1);
    }
    closeConnection();
    Sink* sink = sink_;
    sink_ = nullptr;
    auto keep = std::move(owner_); // the sink may release us; keep it alive through the call
    if (sink && !cancelled_) sink->onUpstreamEnd();
}

void Http1Call::fail(int status, const std::string& why, bool retryable) {
    disarm();
    closeConnection();
    if (cancelled_) return;
    if (status == 502 && stage_ == Stage::Connecting && pool_)
        pool_->failedUntil = std::chrono::steady_clock::now() + action_.failTimeout;
    // Nothing reached the upstream (connect failed or timed out), or a stale keep-alive connection
    // failed an idempotent request: try again, on the next upstream, while one is left untried (as
    // nginx's proxy_next_upstream; a route with one upstream answers after one connect_timeout).
    // A stale pooled connection does not count as a try, so its request goes on a new one.
    const bool nothingSent = stage_ == Stage::Connecting;
    if ((nothingSent || retryable) && status != 0 && !gotBytes_ && !bodyStarted_ &&
        tries_ < action_.upstreams.size()) {
        socket_ = Socket(io_.get_executor());
        writing_ = false; // the aborted write's handler returns without a look
        headWritten_ = false;
        writeError_.clear();
        requestSent_ = false;
        pick();
        return;
    }
    stage_ = Stage::Done;
    Sink* sink = sink_;
    sink_ = nullptr;
    auto keep = std::move(owner_);
    const std::string where =
        upstream_ ? "upstream " + upstream_->authority + ": " : std::string("upstream: ");
    if (sink) sink->onUpstreamError(status, where + why);
}

void Http1Call::cancel() {
    cancelled_ = true;
    sink_ = nullptr;
    disarm();
    closeConnection();
    // The owner (the client's connection) calls this from inside its own handlers, and this may
    // hold the last reference to it: release it after the current handler, never under its feet.
    if (owner_) asio::post(io_, [owner = std::move(owner_)] {});
}

void adoptConnection(asio::io_context& io, const config::Upstream& upstream, const tls::ClientTls* tls,
                     UpstreamSocket&& socket, SslPtr ssl, std::chrono::nanoseconds idleTimeout) {
    // A close-delimited body ends at a close without close_notify, as on the HTTP/1.1 client's own
    // connections (upstream_tls.cpp).
    SSL_set_options(ssl.get(), SSL_OP_IGNORE_UNEXPECTED_EOF);
    const auto now = std::chrono::steady_clock::now();
    poolOf(poolsOf(io), upstream, tls)
        .idle.emplace_back(std::move(socket), std::move(ssl), now,
                           now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(idleTimeout),
                           0);
}

void sweepIdleConnections(asio::io_context& io, std::chrono::steady_clock::time_point now) {
    for (const auto& pool : poolsOf(io).pools) {
        std::erase_if(pool->idle, [&](IdleConnection& c) {
            // One that no read event reached since its last response is quiet; the others are
            // probed (an event the reactor has not picked up yet is seen by the next tick).
            if (c.expires > now && (io::stillDrained(c.socket) || quiet(c.socket))) return false;
            boost::system::error_code ec;
            c.socket.close(ec);
            return true;
        });
    }
}

} // namespace portico::client
