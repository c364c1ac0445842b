// HTTP/2 upstream sessions and streams on nghttp2's client API (see h2_upstream.h).
#include "proxy/h2_upstream.h"

#include "client/connect.h"
#include "io/tls_handshake.h"
#include "io/transport.h"

#include <portico/http2/session.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>

#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <vector>

namespace portico::proxy {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {
constexpr std::size_t kReadChunk = 16 * 1024;
constexpr std::size_t kOutHighWater = 64 * 1024;
constexpr int kReadsPerTurn = 8;
constexpr std::int32_t kStreamWindow = 1 << 20;      // per stream: what one slow reader may hold
constexpr std::int32_t kConnectionWindow = 16 << 20; // per upstream connection

class H2Conn;
class H2Call;

struct H2Pools {
    std::map<std::string, std::shared_ptr<H2Conn>, std::less<>> conns;
    // https:// upstreams that selected http/1.1 (or no protocol) with ALPN: their requests go to the
    // HTTP/1.1 client (Exchange) from then on.
    std::set<std::string, std::less<>> http1;
    std::map<std::string, Clock::time_point, std::less<>> failedUntil;
    std::map<const void*, std::size_t> next; // round-robin position per action
};
thread_local H2Pools tH2;

std::string key(const config::Upstream& u) {
    return (u.protocol == config::Upstream::Protocol::H2 ? "h2:" : "h2c:") + u.host + ":" +
           std::to_string(u.port);
}

// RFC 9110 §7.6.1 and RFC 9113 §8.2.2: fields that never cross an HTTP/2 hop.
bool hopByHop(std::string_view name) {
    return detail::hopByHop(name) || http::iequals(name, "http2-settings");
}

// ---- one stream ----

class H2Call final : public Forward, public std::enable_shared_from_this<H2Call> {
public:
    H2Call(asio::io_context& io, const config::ProxyAction& action)
        : io_(io), action_(action), timer_(io), deadline_(io) {}

    void build(const http::Request& req, bool tls);
    void pick();
    // From the connection.
    void submitOn(H2Conn& conn);
    void connectFailed(int status, const std::string& why);
    void connectionLost(const std::string& why);
    void connected() {
        if (sink_) sink_->onUpstreamConnected();
    }
    long readBody(std::uint8_t* buf, std::size_t len, std::uint32_t* flags);
    void onHeader(std::string_view name, std::string_view value);
    void onHeaders(bool endStream);
    void onData(const std::uint8_t* data, std::size_t len);
    void onDataEnd();
    void onClose(std::uint32_t code);
    /// The chosen https:// upstream speaks HTTP/1.1: the request goes to an HTTP/1.1 exchange
    /// (Exchange::startPrepared), to which this call hands every later downstream call.
    void toHttp1();

    void resume() override;
    void cancel() override;
    void requestBody(std::string_view data) override;
    void requestEnd(std::span<const http::Header> trailers) override;

    asio::io_context& io_;
    const config::ProxyAction& action_;
    std::shared_ptr<void> owner_;
    std::shared_ptr<const void> snapshot_;
    Sink* sink_ = nullptr;
    asio::steady_timer timer_;    // response_timeout
    asio::steady_timer deadline_; // grpc-timeout
    const config::Upstream* upstream_ = nullptr;
    std::shared_ptr<H2Conn> conn_;
    std::shared_ptr<Forward> inner_; // after toHttp1(): the HTTP/1.1 exchange
    std::int32_t id_ = -1;
    std::size_t tries_ = 0;
    // Request: names and values back to back in arena_, spans in head_.
    struct Span {
        std::uint32_t name, nameLen, value, valueLen;
    };
    std::string arena_;
    std::vector<Span> head_;
    std::string body_;
    std::size_t bodyOffset_ = 0;
    std::string trailerArena_;
    std::vector<Span> trailers_;
    std::optional<std::chrono::nanoseconds> grpcTimeout_;
    // Response.
    int status_ = 0;
    std::string fields_;
    std::string responseTrailers_;
    std::optional<std::uint64_t> length_;
    std::size_t held_ = 0; // body bytes delivered but not acknowledged (sink paused)
    bool bodyFollows_ = false;
    bool bodyEnded_ = false;
    bool deferred_ = false;
    bool headSent_ = false;
    bool ended_ = false;
    bool paused_ = false;
    bool cancelled_ = false;
    bool done_ = false;
    bool grpc_ = false;
    bool headRequest_ = false;
    bool idempotent_ = false;
    bool bodyWasEmpty_ = false;

    void add(std::string& arena, std::vector<Span>& spans, std::string_view name, std::string_view value);
    void armResponse();
    void finish();
    void fail(int status, const std::string& why);
    /// Detaches the sink, then (unless cancelled) calls tell(sink) with this call kept alive until
    /// it returns.
    template <class Tell> void tellSink(Tell&& tell);
    void deliverReset(std::uint32_t code, const std::string& why);
    bool retry(bool allowed);
    std::string where() const {
        return upstream_ ? "upstream " + upstream_->authority + ": " : std::string("upstream: ");
    }
};

// ---- one connection ----

class H2Conn final : public std::enable_shared_from_this<H2Conn> {
public:
    H2Conn(asio::io_context& io, const config::Upstream& u, const config::ProxyAction& action)
        : io_(io), socket_(io.get_executor()), timer_(io), host_(u.host), authority_(u.authority),
          key_(key(u)), port_(u.port), tls_(u.protocol == config::Upstream::Protocol::H2),
          connectTimeout_(action.connectTimeout), idleTimeout_(action.idleTimeout),
          failTimeout_(action.failTimeout) {}
    ~H2Conn() {
        if (session_) nghttp2_session_del(session_);
        if (ssl_) SSL_free(ssl_);
    }

    bool usable() const { return !dead_ && !goaway_; }
    bool tls() const { return tls_; }
    const std::string& authority() const { return authority_; }
    void start();
    void attach(const std::shared_ptr<H2Call>& call);
    void flush();
    void postFlush() {
        if (flushPosted_ || dead_) return;
        flushPosted_ = true;
        asio::post(io_, [self = shared_from_this()] {
            self->flushPosted_ = false;
            self->flush();
        });
    }
    nghttp2_session* session() const { return session_; }
    bool dead() const { return dead_; }
    void registerStream(std::int32_t id, std::shared_ptr<H2Call> call) { streams_[id] = std::move(call); }

    // nghttp2 callbacks.
    static int onHeaderCb(nghttp2_session*, const nghttp2_frame* f, const std::uint8_t* name,
                          std::size_t nlen, const std::uint8_t* value, std::size_t vlen, std::uint8_t,
                          void* user);
    static int onFrameRecvCb(nghttp2_session*, const nghttp2_frame* f, void* user);
    static int onDataChunkCb(nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* data,
                             std::size_t len, void* user);
    static int onStreamCloseCb(nghttp2_session*, std::int32_t id, std::uint32_t code, void* user);
    static ssize_t readBodyCb(nghttp2_session*, std::int32_t id, std::uint8_t* buf, std::size_t len,
                              std::uint32_t* flags, nghttp2_data_source* src, void* user);

private:
    void connect();
    void handshake();
    void ready();
    void waitRead();
    void onReadable();
    void waitWrite();
    void die(int status, const std::string& why);
    void handOverToHttp1();
    void armIdle();
    H2Call* call(std::int32_t id) {
        auto it = streams_.find(id);
        return it == streams_.end() ? nullptr : it->second.get();
    }

    asio::io_context& io_;
    Exchange::Socket socket_;
    asio::steady_timer timer_; // connect, then idle
    SSL* ssl_ = nullptr;
    nghttp2_session* session_ = nullptr;
    std::string host_, authority_, key_;
    std::uint16_t port_;
    bool tls_;
    std::chrono::nanoseconds connectTimeout_, idleTimeout_, failTimeout_;
    std::map<std::int32_t, std::shared_ptr<H2Call>> streams_;
    std::vector<std::shared_ptr<H2Call>> waiting_; // until the connection is ready
    std::string in_;
    std::string out_;
    std::size_t outOffset_ = 0;
    bool started_ = false;
    bool ready_ = false;
    bool dead_ = false;
    bool goaway_ = false;
    bool reading_ = false;
    bool writing_ = false;
    bool inRecv_ = false; // inside mem_recv: mem_send must wait
    bool flushPosted_ = false;
};

void H2Conn::start() {
    std::string error;
    auto endpoints = client::resolve(host_, port_, error);
    if (endpoints.empty()) {
        asio::post(io_, [self = shared_from_this(), why = std::move(error)] { self->die(502, why); });
        return;
    }
    timer_.expires_after(connectTimeout_);
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& e) {
        if (e || self->ready_ || self->dead_) return;
        self->die(504, "timed out connecting (connect_timeout)");
    });
    const bool several = endpoints.size() > 1;
    client::asyncConnect(socket_, std::move(endpoints),
                         [self = shared_from_this(), several](const boost::system::error_code& e,
                                                              const tcp::endpoint&,
                                                              const std::string& failures) {
                             if (self->dead_) return;
                             if (e) {
                                 tH2.failedUntil[self->key_] = Clock::now() + self->failTimeout_;
                                 self->die(502, "cannot connect: " + (several ? failures : e.message()));
                                 return;
                             }
                             boost::system::error_code ignored;
                             self->socket_.set_option(tcp::no_delay(true), ignored);
                             self->socket_.non_blocking(true, ignored);
                             if (self->tls_)
                                 self->handshake();
                             else
                                 self->ready();
                         });
}

void H2Conn::handshake() {
    if (!ssl_) {
        ssl_ = SSL_new(h2UpstreamTlsContext());
        SSL_set_fd(ssl_, socket_.native_handle());
        boost::system::error_code ec;
        asio::ip::make_address(host_, ec);
        if (ec) SSL_set_tlsext_host_name(ssl_, host_.c_str()); // SNI for names only (RFC 6066 §3)
        SSL_set_connect_state(ssl_);
    }
    io::driveHandshake(
        socket_, ssl_, [self = shared_from_this()] { return !self->dead_; },
        [self = shared_from_this()](io::HandshakeEnd end, const boost::system::error_code& e) {
            if (end == io::HandshakeEnd::WaitFailed) {
                self->die(502, "TLS handshake: " + e.message());
                return;
            }
            if (end == io::HandshakeEnd::Failed) {
                unsigned long code = ERR_get_error();
                char text[256] = "failed";
                if (code) ERR_error_string_n(code, text, sizeof text);
                ERR_clear_error();
                self->die(502, std::string("TLS handshake: ") + text);
                return;
            }
            const unsigned char* proto = nullptr;
            unsigned int len = 0;
            SSL_get0_alpn_selected(self->ssl_, &proto, &len);
            const std::string_view alpn(reinterpret_cast<const char*>(proto), len);
            if (alpn == "h2") {
                self->ready();
                return;
            }
            if (alpn.empty() || alpn == "http/1.1") { // RFC 7301 §3.2: no ALPN means HTTP/1.1 here
                self->handOverToHttp1();
                return;
            }
            self->die(502, "the TLS upstream selected '" + std::string(alpn) + "' with ALPN");
        });
}

void H2Conn::ready() {
    static const http2::Callbacks callbacks;
    static const bool set = [] {
        nghttp2_session_callbacks* cbs = callbacks.get();
        if (!cbs) return false;
        nghttp2_session_callbacks_set_on_header_callback(cbs, onHeaderCb);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, onFrameRecvCb);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, onDataChunkCb);
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, onStreamCloseCb);
        return true;
    }();
    (void)set;
    http2::SessionSettings settings;
    settings.streamWindowBytes = kStreamWindow;
    settings.connectionWindowBytes = kConnectionWindow;
    // WINDOW_UPDATE only for bytes the downstream took: the backpressure of a slow reader.
    settings.manualWindowUpdates = true;
    std::string why;
    session_ = http2::makeSession(callbacks, this, settings, why).release();
    if (!session_) {
        die(502, why);
        return;
    }
    ready_ = true;
    timer_.cancel();
    auto waiting = std::move(waiting_);
    waiting_.clear();
    for (auto& c : waiting) {
        if (c->cancelled_) continue;
        c->connected();
        c->submitOn(*this);
    }
    flush();
    waitRead();
    armIdle();
}

void H2Conn::attach(const std::shared_ptr<H2Call>& call) {
    if (!ready_) {
        waiting_.push_back(call);
        if (!started_) {
            started_ = true;
            start();
        }
        return;
    }
    timer_.cancel(); // the idle timer
    call->connected();
    call->submitOn(*this);
    postFlush();
}

void H2Conn::waitRead() {
    if (dead_ || reading_) return;
    reading_ = true;
    if (io::transportPending(ssl_)) {
        asio::post(io_, [self = shared_from_this()] {
            self->reading_ = false;
            self->onReadable();
        });
        return;
    }
    socket_.async_wait(Exchange::Socket::wait_read,
                       [self = shared_from_this()](const boost::system::error_code& e) {
                           self->reading_ = false;
                           if (e || self->dead_) return;
                           self->onReadable();
                       });
}

void H2Conn::onReadable() {
    if (dead_) return;
    in_.resize(kReadChunk);
    for (int i = 0; i < kReadsPerTurn; ++i) {
        io::IoResult r = io::transportRead(socket_.native_handle(), ssl_, in_.data(), in_.size());
        if (r.status == io::IoStatus::WantRead) break;
        if (r.status == io::IoStatus::WantWrite) {
            waitWrite();
            break;
        }
        if (r.status != io::IoStatus::Ok) {
            die(502, r.status == io::IoStatus::Eof ? "the upstream closed the connection"
                                                   : "connection lost (read error)");
            return;
        }
        inRecv_ = true;
        ssize_t n =
            nghttp2_session_mem_recv(session_, reinterpret_cast<const std::uint8_t*>(in_.data()), r.n);
        inRecv_ = false;
        if (n < 0) {
            nghttp2_session_terminate_session(session_, NGHTTP2_PROTOCOL_ERROR);
            flush();
            die(502, std::string("bad HTTP/2 from the upstream: ") + nghttp2_strerror(static_cast<int>(n)));
            return;
        }
        if (dead_) return;
    }
    flush();
    waitRead();
}

void H2Conn::flush() {
    if (dead_ || writing_ || inRecv_ || !session_) return;
    for (;;) {
        while (out_.size() - outOffset_ < kOutHighWater) {
            const std::uint8_t* data = nullptr;
            ssize_t n = nghttp2_session_mem_send(session_, &data);
            if (n < 0) {
                die(502, std::string("HTTP/2 session error: ") + nghttp2_strerror(static_cast<int>(n)));
                return;
            }
            if (n == 0) break;
            out_.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
        }
        if (outOffset_ == out_.size()) break;
        io::IoResult r = io::transportWrite(socket_.native_handle(), ssl_, out_.data() + outOffset_,
                                            out_.size() - outOffset_);
        if (r.status == io::IoStatus::Ok) {
            outOffset_ += r.n;
            if (outOffset_ == out_.size()) {
                out_.clear();
                outOffset_ = 0;
            }
            continue;
        }
        if (r.status == io::IoStatus::WantWrite || r.status == io::IoStatus::WantRead) {
            waitWrite();
            return;
        }
        die(502, "connection lost (write error)");
        return;
    }
    if (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0)
        die(502, "the upstream ended the HTTP/2 session");
}

void H2Conn::waitWrite() {
    if (writing_) return;
    writing_ = true;
    socket_.async_wait(Exchange::Socket::wait_write,
                       [self = shared_from_this()](const boost::system::error_code& e) {
                           self->writing_ = false;
                           if (e || self->dead_) return;
                           self->flush();
                           self->waitRead();
                       });
}

void H2Conn::armIdle() {
    if (!ready_ || dead_ || !streams_.empty() || !waiting_.empty()) return;
    timer_.expires_after(idleTimeout_);
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& e) {
        if (e || self->dead_ || !self->streams_.empty()) return;
        nghttp2_submit_goaway(self->session_, NGHTTP2_FLAG_NONE, 0, NGHTTP2_NO_ERROR, nullptr, 0);
        self->goaway_ = true;
        self->flush();
        self->die(502, "idle");
    });
}

// The upstream speaks HTTP/1.1 over TLS: noted for this worker thread, this connection closed, and
// the requests waiting for it go to the HTTP/1.1 client.
void H2Conn::handOverToHttp1() {
    tH2.http1.insert(key_);
    auto waiting = std::move(waiting_);
    waiting_.clear();
    die(502, "the TLS upstream speaks HTTP/1.1"); // tells no one: nothing waits, no stream is open
    for (auto& c : waiting)
        c->toHttp1();
}

void H2Conn::die(int status, const std::string& why) {
    if (dead_) return;
    dead_ = true;
    auto keep = shared_from_this();
    auto it = tH2.conns.find(key_);
    if (it != tH2.conns.end() && it->second.get() == this) tH2.conns.erase(it);
    timer_.cancel();
    boost::system::error_code ec;
    socket_.cancel(ec);
    socket_.close(ec);
    // Nothing reached the upstream for waiting calls: they may try the next one.
    auto waiting = std::move(waiting_);
    waiting_.clear();
    for (auto& c : waiting)
        c->connectFailed(status, why);
    auto streams = std::move(streams_);
    streams_.clear();
    for (auto& [id, c] : streams) {
        c->conn_.reset();
        c->id_ = -1;
        c->connectionLost(why);
    }
}

// ---- nghttp2 callbacks ----

int H2Conn::onHeaderCb(nghttp2_session*, const nghttp2_frame* f, const std::uint8_t* name, std::size_t nlen,
                       const std::uint8_t* value, std::size_t vlen, std::uint8_t, void* user) {
    if (f->hd.type != NGHTTP2_HEADERS) return 0;
    auto* self = static_cast<H2Conn*>(user);
    if (H2Call* c = self->call(f->hd.stream_id))
        c->onHeader(std::string_view(reinterpret_cast<const char*>(name), nlen),
                    std::string_view(reinterpret_cast<const char*>(value), vlen));
    return 0;
}

int H2Conn::onFrameRecvCb(nghttp2_session*, const nghttp2_frame* f, void* user) {
    auto* self = static_cast<H2Conn*>(user);
    if (f->hd.type == NGHTTP2_GOAWAY) {
        // Streams above last_stream_id are closed by nghttp2 (REFUSED_STREAM); no new ones here.
        self->goaway_ = true;
        auto it = tH2.conns.find(self->key_);
        if (it != tH2.conns.end() && it->second.get() == self) tH2.conns.erase(it);
        return 0;
    }
    H2Call* c = self->call(f->hd.stream_id);
    if (!c) return 0;
    if (f->hd.type == NGHTTP2_HEADERS)
        c->onHeaders((f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0);
    else if (f->hd.type == NGHTTP2_DATA && (f->hd.flags & NGHTTP2_FLAG_END_STREAM))
        c->onDataEnd();
    return 0;
}

int H2Conn::onDataChunkCb(nghttp2_session* session, std::uint8_t, std::int32_t id, const std::uint8_t* data,
                          std::size_t len, void* user) {
    auto* self = static_cast<H2Conn*>(user);
    if (H2Call* c = self->call(id))
        c->onData(data, len);
    else
        nghttp2_session_consume(session, id, len);
    return 0;
}

int H2Conn::onStreamCloseCb(nghttp2_session*, std::int32_t id, std::uint32_t code, void* user) {
    auto* self = static_cast<H2Conn*>(user);
    auto it = self->streams_.find(id);
    if (it == self->streams_.end()) return 0;
    std::shared_ptr<H2Call> c = std::move(it->second);
    self->streams_.erase(it);
    c->conn_.reset();
    c->id_ = -1;
    c->onClose(code);
    self->armIdle();
    return 0;
}

ssize_t H2Conn::readBodyCb(nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t len,
                           std::uint32_t* flags, nghttp2_data_source* src, void*) {
    return static_cast<H2Call*>(src->ptr)->readBody(buf, len, flags);
}

// ---- the call ----

void H2Call::add(std::string& arena, std::vector<Span>& spans, std::string_view name,
                 std::string_view value) {
    Span sp{static_cast<std::uint32_t>(arena.size()), static_cast<std::uint32_t>(name.size()), 0,
            static_cast<std::uint32_t>(value.size())};
    for (char ch : name)
        arena.push_back(ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch);
    sp.value = static_cast<std::uint32_t>(arena.size());
    arena.append(value);
    spans.push_back(sp);
}

void H2Call::build(const http::Request& req, bool tls) {
    const bool h2 = action_.upstreams.front().protocol == config::Upstream::Protocol::H2;
    headRequest_ = req.method == http::Method::Head;
    const http::Method m = req.method;
    idempotent_ = m == http::Method::Get || m == http::Method::Head || m == http::Method::Options ||
                  m == http::Method::Put || m == http::Method::Delete || m == http::Method::Trace;
    bodyWasEmpty_ = !bodyFollows_ && req.body.empty();
    arena_.reserve(512);
    add(arena_, head_, ":method", req.methodToken);
    add(arena_, head_, ":scheme", h2 ? "https" : "http");
    add(arena_, head_, ":authority",
        action_.changeOrigin || req.host.empty() ? std::string_view(action_.upstreams.front().authority)
                                                 : req.host);
    std::string path;
    detail::appendUpstreamTarget(path, action_, req);
    add(arena_, head_, ":path", path);
    const detail::RequestFieldsSeen seen =
        detail::copyEndToEndFields(req, hopByHop, [&](std::string_view name, std::string_view value) {
            if (http::iequals(name, "content-type") && value.starts_with("application/grpc")) grpc_ = true;
            if (http::iequals(name, "grpc-timeout")) {
                grpcTimeout_ = parseGrpcTimeout(value);
                if (action_.grpcTimeoutMax.count() > 0 && grpcTimeout_ &&
                    *grpcTimeout_ > action_.grpcTimeoutMax)
                    return; // replaced by the cap below
            }
            add(arena_, head_, name, value);
        });
    const std::string_view contentLength = seen.contentLength;
    if (action_.grpcTimeoutMax.count() > 0 && (grpc_ || grpcTimeout_) &&
        (!grpcTimeout_ || *grpcTimeout_ > action_.grpcTimeoutMax)) {
        grpcTimeout_ = action_.grpcTimeoutMax;
        // gRPC allows at most 8 digits: milliseconds, or seconds past that.
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(action_.grpcTimeoutMax).count();
        std::string v = ms < 100000000 ? std::to_string(std::max<long long>(ms, 1)) + "m"
                                       : std::to_string(ms / 1000) + "S";
        add(arena_, head_, "grpc-timeout", v);
    }
    if (seen.teTrailers) add(arena_, head_, "te", "trailers");
    std::string value;
    detail::addForwardingFields(req, tls, action_, seen, true,
                                [&](std::string_view name, std::initializer_list<std::string_view> pieces) {
                                    value.clear();
                                    for (std::string_view p : pieces)
                                        value.append(p);
                                    add(arena_, head_, name, value);
                                });
    if (bodyFollows_) {
        if (!contentLength.empty()) add(arena_, head_, "content-length", contentLength);
    } else {
        body_.assign(req.body);
        bodyEnded_ = true;
        if (!req.body.empty() || (req.method != http::Method::Get && req.method != http::Method::Head &&
                                  req.method != http::Method::Options && req.method != http::Method::Delete))
            add(arena_, head_, "content-length", std::to_string(req.body.size()));
        for (const auto& t : req.trailers)
            if (!hopByHop(t.name) && !http::iequals(t.name, "content-length"))
                add(trailerArena_, trailers_, t.name, t.value);
    }
}

void H2Call::pick() {
    if (cancelled_) return;
    const auto now = Clock::now();
    const auto& ups = action_.upstreams;
    const config::Upstream* chosen =
        &detail::pickUpstream(ups, tH2.next[&action_], [&](const config::Upstream& u) {
            auto f = tH2.failedUntil.find(key(u));
            return f != tH2.failedUntil.end() && f->second > now;
        });
    upstream_ = chosen;
    ++tries_;
    if (tH2.http1.contains(key(*chosen))) {
        toHttp1();
        return;
    }
    auto& conn = tH2.conns[key(*chosen)];
    if (!conn || !conn->usable()) conn = std::make_shared<H2Conn>(io_, *chosen, action_);
    conn_ = conn;
    conn->attach(shared_from_this());
}

void H2Call::submitOn(H2Conn& conn) {
    std::vector<nghttp2_nv> nva(head_.size());
    for (std::size_t i = 0; i < head_.size(); ++i)
        nva[i] = http2::field({arena_.data() + head_[i].name, head_[i].nameLen},
                              {arena_.data() + head_[i].value, head_[i].valueLen});
    nghttp2_data_provider provider{};
    provider.source.ptr = this;
    provider.read_callback = H2Conn::readBodyCb;
    const bool withBody = bodyFollows_ || !body_.empty() || !trailers_.empty();
    std::int32_t id = nghttp2_submit_request(conn.session(), nullptr, nva.data(), nva.size(),
                                             withBody ? &provider : nullptr, this);
    if (id < 0) {
        fail(502, std::string("cannot open a stream: ") + nghttp2_strerror(id));
        return;
    }
    id_ = id;
    conn_ = conn.shared_from_this();
    conn.registerStream(id, shared_from_this()); // kept alive while its stream is open
    armResponse();
    if (grpcTimeout_) {
        deadline_.expires_after(*grpcTimeout_);
        deadline_.async_wait([self = shared_from_this()](const boost::system::error_code& e) {
            if (e || self->done_ || self->cancelled_) return;
            if (self->id_ > 0 && self->conn_ && !self->conn_->dead()) {
                nghttp2_submit_rst_stream(self->conn_->session(), NGHTTP2_FLAG_NONE, self->id_,
                                          NGHTTP2_CANCEL);
                self->conn_->postFlush();
            }
            Sink* sink = self->sink_;
            self->done_ = true;
            self->timer_.cancel();
            self->sink_ = nullptr;
            auto keep = std::move(self->owner_);
            if (!sink) return;
            if (!self->headSent_)
                sink->onUpstreamHeadersOnly(200, "content-type: application/grpc\r\ngrpc-status: 4\r\n"
                                                 "grpc-message: Deadline Exceeded\r\n");
            else
                sink->onUpstreamReset(NGHTTP2_CANCEL, true, self->where() + "grpc-timeout expired");
        });
    }
}

void H2Call::armResponse() {
    timer_.expires_after(action_.responseTimeout);
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& e) {
        if (e || self->done_ || self->cancelled_ || self->paused_) return;
        if (self->id_ > 0 && self->conn_ && !self->conn_->dead()) {
            nghttp2_submit_rst_stream(self->conn_->session(), NGHTTP2_FLAG_NONE, self->id_, NGHTTP2_CANCEL);
            self->conn_->postFlush();
        }
        self->fail(self->headSent_ ? 0 : 504, "timed out waiting for the response");
    });
}

void H2Call::connectFailed(int status, const std::string& why) {
    conn_.reset();
    if (cancelled_ || done_) return;
    if (tries_ < action_.upstreams.size() && status == 502) {
        pick();
        return;
    }
    fail(status, why);
}

void H2Call::connectionLost(const std::string& why) {
    if (cancelled_ || done_) return;
    if (retry(idempotent_)) return;
    fail(headSent_ ? 0 : 502, "connection lost: " + why);
}

// Once more on a new stream (and connection) when nothing came back and there is no body that
// left already: a connection the upstream closed as we used it (idempotent methods, RFC 9110
// §9.2.2), or a stream it refused unprocessed (any method, RFC 9113 §8.7).
bool H2Call::retry(bool allowed) {
    if (!allowed || headSent_ || bodyFollows_ || !bodyWasEmpty_ || tries_ > action_.upstreams.size())
        return false;
    timer_.cancel();
    deadline_.cancel();
    status_ = 0;
    fields_.clear();
    length_.reset();
    conn_.reset();
    id_ = -1;
    pick();
    return true;
}

void H2Call::toHttp1() {
    conn_.reset();
    if (cancelled_ || done_) return;
    if (grpc_ || action_.grpc) {
        fail(502, "the TLS upstream selected http/1.1 with ALPN, and gRPC needs HTTP/2");
        return;
    }
    Http1Request r;
    r.idempotent = idempotent_;
    r.headRequest = headRequest_;
    std::string_view method, path, authority, length;
    std::string fields;
    for (const Span& sp : head_) {
        const std::string_view name(arena_.data() + sp.name, sp.nameLen);
        const std::string_view value(arena_.data() + sp.value, sp.valueLen);
        if (name == ":method")
            method = value;
        else if (name == ":path")
            path = value;
        else if (name == ":authority")
            authority = value;
        else if (name == "content-length")
            length = value;
        else if (name.front() != ':')
            fields.append(name).append(": ").append(value).append("\r\n");
    }
    r.head.reserve(64 + fields.size());
    r.head.append(method).append(" ").append(path).append(" HTTP/1.1\r\nhost: ").append(authority);
    r.head.append("\r\n").append(fields);
    r.streaming = bodyFollows_;
    r.chunked = bodyFollows_ && length.empty(); // RFC 9112 §6.1: a length unknown up front
    if (r.chunked)
        r.head.append("transfer-encoding: chunked\r\n");
    else if (!length.empty())
        r.head.append("content-length: ").append(length).append("\r\n");
    r.head.append("\r\n");
    r.body = body_.substr(bodyOffset_);
    r.bodyEnded = bodyEnded_;
    if (r.chunked)
        for (const Span& sp : trailers_)
            r.trailerBlock.append(trailerArena_, sp.name, sp.nameLen)
                .append(": ")
                .append(trailerArena_, sp.value, sp.valueLen)
                .append("\r\n");
    Sink* sink = sink_;
    sink_ = nullptr;
    inner_ =
        Exchange::startPrepared(io_, std::move(owner_), std::move(snapshot_), action_, std::move(r), sink);
}

long H2Call::readBody(std::uint8_t* buf, std::size_t len, std::uint32_t* flags) {
    const std::size_t n = std::min(len, body_.size() - bodyOffset_);
    if (n == 0 && !bodyEnded_) {
        deferred_ = true;
        return NGHTTP2_ERR_DEFERRED;
    }
    if (n) std::memcpy(buf, body_.data() + bodyOffset_, n);
    bodyOffset_ += n;
    if (bodyOffset_ == body_.size()) {
        body_.clear();
        bodyOffset_ = 0;
    }
    if (n && bodyFollows_ && sink_) sink_->onRequestBodyConsumed(n);
    if (bodyEnded_ && body_.empty()) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        if (!trailers_.empty() && conn_) {
            std::vector<nghttp2_nv> nva(trailers_.size());
            for (std::size_t i = 0; i < trailers_.size(); ++i)
                nva[i] = http2::field({trailerArena_.data() + trailers_[i].name, trailers_[i].nameLen},
                                      {trailerArena_.data() + trailers_[i].value, trailers_[i].valueLen});
            if (nghttp2_submit_trailer(conn_->session(), id_, nva.data(), nva.size()) == 0)
                *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        }
    }
    return static_cast<long>(n);
}

void H2Call::requestBody(std::string_view data) {
    if (inner_) {
        inner_->requestBody(data);
        return;
    }
    if (cancelled_ || done_ || bodyEnded_) return;
    body_.append(data);
    if (id_ > 0 && deferred_ && conn_ && !conn_->dead()) {
        deferred_ = false;
        nghttp2_session_resume_data(conn_->session(), id_);
        conn_->postFlush();
    }
}

void H2Call::requestEnd(std::span<const http::Header> trailers) {
    if (inner_) {
        inner_->requestEnd(trailers);
        return;
    }
    if (cancelled_ || done_ || bodyEnded_) return;
    for (const auto& t : trailers)
        if (!hopByHop(t.name) && !http::iequals(t.name, "content-length"))
            add(trailerArena_, trailers_, t.name, t.value);
    bodyEnded_ = true;
    if (id_ > 0 && deferred_ && conn_ && !conn_->dead()) {
        deferred_ = false;
        nghttp2_session_resume_data(conn_->session(), id_);
        conn_->postFlush();
    }
}

void H2Call::onHeader(std::string_view name, std::string_view value) {
    if (!headSent_ && name == ":status") {
        int s = 0;
        auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), s);
        status_ = (ec == std::errc{} && p == value.data() + value.size() && value.size() == 3) ? s : -1;
        return;
    }
    if (!name.empty() && name.front() == ':') return;
    std::string& out = headSent_ ? responseTrailers_ : fields_;
    if (!headSent_) {
        if (hopByHop(name)) return;
        if (name == "content-length") {
            std::uint64_t v = 0;
            auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
            if (ec == std::errc{} && p == value.data() + value.size()) length_ = v;
            return;
        }
    }
    out.append(name);
    out.append(": ");
    out.append(value);
    out.append("\r\n");
}

void H2Call::onHeaders(bool endStream) {
    if (done_ || cancelled_) return;
    if (!headSent_) {
        if (status_ >= 100 && status_ < 200) { // interim (RFC 9110 §15.2): not forwarded
            status_ = 0;
            fields_.clear();
            length_.reset();
            return;
        }
        if (status_ < 200 || status_ > 599) {
            if (id_ > 0 && conn_) {
                nghttp2_submit_rst_stream(conn_->session(), NGHTTP2_FLAG_NONE, id_, NGHTTP2_PROTOCOL_ERROR);
                conn_->postFlush();
            }
            fail(502, "bad :status in the response");
            return;
        }
        headSent_ = true;
        timer_.cancel();
        if (endStream && headRequest_) {
            // A HEAD answer keeps its Content-Length (RFC 9110 §9.3.2): a head, then the end.
            ended_ = true;
            if (sink_) sink_->onUpstreamHead(status_, fields_, length_);
            finish();
            return;
        }
        if (endStream) {
            ended_ = true;
            Sink* sink = sink_;
            done_ = true;
            deadline_.cancel();
            sink_ = nullptr;
            auto keep = std::move(owner_);
            if (sink) sink->onUpstreamHeadersOnly(status_, fields_);
            return;
        }
        if (sink_) sink_->onUpstreamHead(status_, fields_, length_);
        if (!grpc_ && !done_) armResponse();
        return;
    }
    // Trailers (RFC 9113 §8.1): always END_STREAM.
    ended_ = true;
    if (sink_) sink_->onUpstreamTrailers(responseTrailers_);
    finish();
}

void H2Call::onData(const std::uint8_t* data, std::size_t len) {
    nghttp2_session* session = conn_ ? conn_->session() : nullptr;
    if (!sink_ || done_) {
        if (session) nghttp2_session_consume(session, id_, len);
        return;
    }
    if (!grpc_) armResponse();
    const bool more = sink_->onUpstreamBody({reinterpret_cast<const char*>(data), len});
    if (cancelled_) { // the downstream went away in there
        if (session) nghttp2_session_consume(session, id_, len);
        return;
    }
    if (more && !paused_) {
        if (session) nghttp2_session_consume(session, id_, len);
    } else {
        held_ += len;
        if (!paused_) {
            paused_ = true;
            timer_.cancel(); // a slow client is not the upstream's fault
        }
    }
}

void H2Call::onDataEnd() {
    ended_ = true;
    finish();
}

void H2Call::onClose(std::uint32_t code) {
    if (done_ || cancelled_) return;
    if (ended_) {
        finish();
        return;
    }
    if (code == NGHTTP2_REFUSED_STREAM && retry(true)) return;
    std::string why = "reset the stream (" + std::string(nghttp2_http2_strerror(code)) + ")";
    if (code == NGHTTP2_NO_ERROR) why = "closed the stream without ending the response";
    deliverReset(code == NGHTTP2_NO_ERROR ? static_cast<std::uint32_t>(NGHTTP2_INTERNAL_ERROR) : code, why);
}

void H2Call::deliverReset(std::uint32_t code, const std::string& why) {
    done_ = true;
    timer_.cancel();
    deadline_.cancel();
    Sink* sink = sink_;
    sink_ = nullptr;
    auto keep = std::move(owner_);
    if (sink) sink->onUpstreamReset(code, headSent_, where() + why);
}

template <class Tell> void H2Call::tellSink(Tell&& tell) {
    Sink* sink = sink_;
    sink_ = nullptr;
    auto keep = std::move(owner_);
    if (sink && !cancelled_) tell(*sink);
}

void H2Call::finish() {
    if (done_) return;
    done_ = true;
    timer_.cancel();
    deadline_.cancel();
    // The stream is over: what the sink still holds no longer needs to pace the upstream.
    if (held_ && conn_ && !conn_->dead()) {
        nghttp2_session_consume(conn_->session(), id_ > 0 ? id_ : 0, held_);
        held_ = 0;
    }
    tellSink([](Sink& sink) { sink.onUpstreamEnd(); });
}

void H2Call::fail(int status, const std::string& why) {
    if (done_) return;
    done_ = true;
    timer_.cancel();
    deadline_.cancel();
    tellSink([&](Sink& sink) { sink.onUpstreamError(status, where() + why); });
}

void H2Call::resume() {
    if (inner_) {
        inner_->resume();
        return;
    }
    if (!paused_ || cancelled_ || done_) return;
    paused_ = false;
    if (held_ && id_ > 0 && conn_ && !conn_->dead()) {
        nghttp2_session_consume(conn_->session(), id_, held_);
        conn_->postFlush();
    }
    held_ = 0;
    if (!grpc_) armResponse();
}

void H2Call::cancel() {
    if (inner_) {
        inner_->cancel();
        return;
    }
    if (cancelled_) return;
    cancelled_ = true;
    sink_ = nullptr;
    timer_.cancel();
    deadline_.cancel();
    if (conn_ && !conn_->dead() && id_ > 0) {
        if (held_) nghttp2_session_consume_connection(conn_->session(), held_);
        held_ = 0;
        if (!done_) nghttp2_submit_rst_stream(conn_->session(), NGHTTP2_FLAG_NONE, id_, NGHTTP2_CANCEL);
        conn_->postFlush();
    }
    done_ = true;
    // Released after the caller's handler (it may hold the last reference to the caller).
    if (owner_) asio::post(timer_.get_executor(), [owner = std::move(owner_)] {});
}

} // namespace

bool speaksHttp1(const config::Upstream& upstream) { return tH2.http1.contains(key(upstream)); }

std::shared_ptr<Forward> startH2(asio::io_context& io, std::shared_ptr<void> owner,
                                 std::shared_ptr<const void> snapshot, const config::ProxyAction& action,
                                 const http::Request& req, bool tls, Sink* sink, bool bodyFollows) {
    auto call = std::make_shared<H2Call>(io, action);
    call->owner_ = std::move(owner);
    call->snapshot_ = std::move(snapshot);
    call->sink_ = sink;
    call->bodyFollows_ = bodyFollows;
    call->build(req, tls);
    asio::post(io, [call] { call->pick(); });
    return call;
}

} // namespace portico::proxy
