// The front door: the TLS handshake and the choice of session (front_door.h).
#include "server/front_door.h"

#include "capture/hooks.h"
#include "io/tls_handshake.h"
#include "proxy/connect.h"
#include "proxy/origin.h"
#include "proxy/tunnel.h"
#include "server/connection.h"
#include "server/h2_connection.h"
#include "server/worker.h"
#include "tls/alpn.h"
#include "tls/client_hello.h"
#include "tls/server_tls.h"
#include "tls/socket_bio.h"

#include <boost/asio/write.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

namespace portico::server {
namespace {

using tcp = boost::asio::ip::tcp;

// At most one line per second per process: a scanner must not flood the terminal.
void logHandshakeFailure(const std::string& client) {
    static std::atomic<std::int64_t> last{0};
    if (!onceASecond(last)) return;
    char reason[256] = "closed during the handshake";
    if (unsigned long e = ERR_peek_last_error()) ERR_error_string_n(e, reason, sizeof reason);
    std::fprintf(stderr, "portico: TLS handshake with %s failed: %s\n", client.c_str(), reason);
}

// The TLS alerts a client sends when it does not accept the certificate it was shown (RFC 8446
// §6.2): an unknown CA, a bad or unsupported certificate, one it cannot check.
bool refusedOurCertificate(unsigned long error) {
    switch (ERR_GET_REASON(error)) {
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
        return true;
    default:
        return false;
    }
}

// An intercepted CONNECT whose client did not start TLS: the bytes go to host:port unread, as in a
// tunnel that is not intercepted.
class PlainTunnel final : public client::Sink, public std::enable_shared_from_this<PlainTunnel> {
public:
    PlainTunnel(Worker& worker, io::Socket client, std::string toUpstream, capture::WsCapturePtr record)
        : worker_(worker), client_(std::move(client)), toUpstream_(std::move(toUpstream)),
          record_(std::move(record)) {}
    void start(const std::string& host, std::uint16_t port) {
        call_ = proxy::startConnect(worker_.io(), shared_from_this(), host, port,
                                    config::ProxyAction{}.connectTimeout, this,
                                    &worker_.snapshot().config->hosts);
    }
    void onUpstreamUpgrade(std::string_view, client::UpstreamSocket upstream, client::SslPtr,
                           std::string_view) override {
        call_.reset();
        if (record_) record_->record.set(capture::Phase::UpstreamConnected, capture::nowNs());
        proxy::startTunnel(worker_, std::move(client_), nullptr, std::move(upstream), nullptr, {}, {},
                           toUpstream_, std::move(record_), false, true);
    }
    void onUpstreamConnection(std::int64_t resolvedNs, std::int64_t tcpConnectedNs,
                              std::string_view address) override {
        if (!record_) return;
        record_->record.set(capture::Phase::UpstreamResolved, resolvedNs);
        record_->record.set(capture::Phase::UpstreamTcpConnected, tcpConnectedNs);
        record_->record.upstreamAddress.assign(address);
    }
    void onUpstreamError(int status, const std::string& message) override {
        call_.reset();
        if (record_) {
            // The client has its 200 already: the tunnel's end is all it sees; the record says why.
            record_->record.status = status;
            capture::wsClosed(*record_, message);
            record_.reset();
        }
        std::fprintf(stderr, "portico: CONNECT tunnel: %s\n", message.c_str());
        boost::system::error_code ec;
        client_.close(ec);
    }
    // A CONNECT call delivers nothing else.
    void onUpstreamHead(int, std::string_view, std::optional<std::uint64_t>) override {}
    bool onUpstreamBody(std::string_view) override { return true; }
    void onUpstreamEnd() override {}

private:
    Worker& worker_;
    io::Socket client_;
    std::string toUpstream_;
    capture::WsCapturePtr record_; // null when capture is off
    std::shared_ptr<client::Call> call_;
};

void startPlainTunnel(Worker& worker, io::Socket client, const std::string& host, std::uint16_t port,
                      std::string toUpstream, capture::WsCapturePtr record) {
    std::make_shared<PlainTunnel>(worker, std::move(client), std::move(toUpstream), std::move(record))
        ->start(host, port);
}

// The TLS handshake states in which the server has sent its certificate and waits for the client
// (TLS 1.3: its whole first flight; TLS 1.2: up to ServerHelloDone): a client that closes then,
// without an alert, read our certificate and did not like it.
bool certificateSent(const SSL* ssl) {
    switch (SSL_get_state(ssl)) {
    case TLS_ST_SW_SRVR_DONE:
    case TLS_ST_SW_FINISHED:
    case TLS_ST_EARLY_DATA: // TLS 1.3: after the server's Finished, waiting for the client's
    case TLS_ST_SR_CERT:
    case TLS_ST_SR_KEY_EXCH:
    case TLS_ST_SR_CERT_VRFY:
    case TLS_ST_SR_CHANGE:
    case TLS_ST_SR_FINISHED:
    case TLS_ST_SR_END_OF_EARLY_DATA:
        return true;
    default:
        return false;
    }
}

// A connection during its TLS handshake: in the worker's list (header_timeout, drain) until the
// handshake ends, then the session ALPN names takes the socket and the TLS state.
class TlsHandshake final : public io::Session, public std::enable_shared_from_this<TlsHandshake> {
public:
    TlsHandshake(Worker& worker, io::Socket socket, std::uint16_t localPort,
                 std::shared_ptr<tls::ServerTls> tls)
        : worker_(worker), socket_(std::move(socket)), localPort_(localPort), tls_(std::move(tls)) {
        worker_.link(this);
    }
    ~TlsHandshake() override {
        worker_.unlink(this);
        if (ssl_) SSL_free(ssl_);
    }

    void start() {
        const Snapshot& snap = worker_.snapshot();
        if (snap.config->capture.enabled)
            cap_ = capture::beginConnection(worker_.recorder(), *snap.config,
                                            capture::peerName(socket_.native_handle()));
        ssl_ = tls_->newSsl(socket_.native_handle());
        if (!ssl_) {
            abort();
            return;
        }
        deadline_ = Clock::now() + snap.config->limits.headerTimeout;
        handshake();
    }

    void checkDeadline(Clock::time_point now) override {
        if (closed_ || now < deadline_) return;
        worker_.counters().timeouts.fetch_add(1, std::memory_order_relaxed);
        abort();
    }
    void onDrain() override { abort(); } // nothing was asked yet: like an idle connection
    void abort() override {
        if (closed_) return;
        closed_ = true;
        if (cap_) capture::h1Closed(*cap_);
        boost::system::error_code ec;
        socket_.cancel(ec);
        socket_.close(ec);
    }

private:
    void handshake() {
        if (auto* bio = ssl_ ? tls::socketBioState(ssl_) : nullptr;
            bio && !pending_.empty() && !bio->pending) {
            bio->pending = pending_.data(); // pending_ does not change from here on
            bio->pendingBytes = pending_.size();
        }
        auto self = shared_from_this();
        io::driveHandshake(
            socket_, ssl_, [self] { return !self->closed_; },
            [self](io::HandshakeEnd end, const boost::system::error_code&) {
                if (end == io::HandshakeEnd::Done) {
                    self->handOver();
                    return;
                }
                if (end == io::HandshakeEnd::Failed) {
                    self->worker_.counters().tlsHandshakeFailures.fetch_add(1, std::memory_order_relaxed);
                    self->tls_->handshakeFailures.fetch_add(1, std::memory_order_relaxed);
                    if (self->origin_) self->interceptionFailed();
                    boost::system::error_code ec;
                    const auto remote = self->socket_.remote_endpoint(ec);
                    logHandshakeFailure(ec ? std::string("?") : remote.address().to_string());
                    ERR_clear_error();
                }
                self->abort();
            });
    }

    // The socket, the TLS state and the connection's capture move to the session; this object
    // leaves the worker's list when the last handler holding it returns.
    // An intercepted CONNECT's handshake failed. A client that refuses the local CA's certificate
    // (an alert naming the certificate, or a close right after it: a pinned app) has its later
    // tunnels to the same host:port passed through unread; the failure is one record either way.
    void interceptionFailed() {
        const unsigned long e = ERR_peek_last_error();
        const bool eof = e == 0 || ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING;
        const bool refused = refusedOurCertificate(e) || (eof && certificateSent(ssl_));
        std::string why;
        if (refusedOurCertificate(e)) {
            const char* alert = ERR_reason_error_string(e);
            why = std::string("the client refused the local CA's certificate (") +
                  (alert ? alert : "an alert") + ")";
        } else if (refused) {
            why = "the client closed the connection after the local CA's certificate, without an alert";
        } else if (eof) {
            why = "the client closed the connection during the TLS handshake";
        } else {
            char text[256] = "";
            ERR_error_string_n(e, text, sizeof text);
            why = std::string("TLS handshake with the client failed: ") + text;
        }
        if (refused) {
            tls_->markRefused(origin_->authority);
            why += "; its next tunnels to " + origin_->authority + " pass through unread";
            std::fprintf(stderr, "portico: CONNECT %s: %s\n", origin_->authority.c_str(), why.c_str());
        }
        if (cap_) {
            auto record = capture::connectRecord(*cap_, localPort_, origin_->authority,
                                                 capture::Source::Intercepted, "(intercepted)", connectNs_);
            capture::wsClosed(*record, "TLS interception failed: " + why);
        }
    }

    void handOver() {
        closed_ = true;
        if (cap_) cap_->tlsDoneNs = capture::nowNs();
        SSL* ssl = std::exchange(ssl_, nullptr);
        if (tls::alpnOf(ssl) == "h2") {
            auto h2 = std::make_shared<H2Connection>(worker_, std::move(socket_), ssl, localPort_,
                                                     std::string_view());
            if (cap_) h2->adoptCapture(std::move(cap_));
            if (origin_) h2->setOrigin(std::move(origin_));
            h2->start();
            return;
        }
        auto c = std::make_shared<Connection>(worker_, std::move(socket_), localPort_, ssl, std::move(cap_));
        if (origin_) c->setOrigin(std::move(origin_));
        c->start();
    }

public:
    // An intercepted CONNECT (startIntercepted): the 200 first, then the handshake with a leaf for
    // `host` until SNI names another, `pending` served to OpenSSL before the socket's bytes.
    void startIntercept(const std::string& host, std::shared_ptr<const proxy::InterceptedOrigin> origin,
                        std::string toClient, std::string pending) {
        host_ = host;
        origin_ = std::move(origin);
        pending_ = std::move(pending);
        const Snapshot& snap = worker_.snapshot();
        if (snap.config->capture.enabled) {
            cap_ = capture::beginConnection(worker_.recorder(), *snap.config,
                                            capture::peerName(socket_.native_handle()));
            if (cap_) {
                cap_->source = capture::Source::Intercepted;
                capture::askClientProcess(*cap_, socket_.native_handle());
            }
        }
        connectNs_ = capture::nowNs();
        if (auto it = snap.intercept.find(localPort_); it != snap.intercept.end())
            passthrough_ = it->second.options.tlsPassthrough; // usually empty: no copy then
        ssl_ = tls_->newSslFor(socket_.native_handle(), host);
        if (!ssl_) {
            abort();
            return;
        }
        deadline_ = Clock::now() + snap.config->limits.headerTimeout;
        toClient_ = std::move(toClient);
        auto self = shared_from_this();
        boost::asio::async_write(socket_, boost::asio::buffer(toClient_),
                                 [self](const boost::system::error_code& ec, std::size_t) {
                                     if (ec || self->closed_) {
                                         self->abort();
                                         return;
                                     }
                                     self->firstByte();
                                 });
    }

private:
    // TLS starts with a handshake record (0x16, RFC 8446 §5.1). Anything else inside the tunnel
    // (plain HTTP, a ws:// WebSocket, which browsers send through CONNECT too) is passed on unread.
    void firstByte() {
        if (!passthrough_.empty()) {
            scanHello();
            return;
        }
        if (!pending_.empty()) {
            if (pending_.front() == 0x16)
                handshake();
            else
                passThrough("(tunnel: not TLS)");
            return;
        }
        auto self = shared_from_this();
        socket_.async_wait(io::Socket::wait_read, [self](const boost::system::error_code& ec) {
            if (ec || self->closed_) {
                self->abort();
                return;
            }
            char byte = 0;
            const ssize_t n = ::recv(self->socket_.native_handle(), &byte, 1, MSG_PEEK);
            if (n == 1 && byte == 0x16)
                self->handshake();
            else if (n == 1)
                self->passThrough("(tunnel: not TLS)");
            else if (n < 0 && (errno == EAGAIN || errno == EINTR))
                self->firstByte();
            else
                self->abort();
        });
    }

    // With tls_passthrough globs: the ClientHello is read here (its bytes kept in pending_, served
    // to OpenSSL or to the tunnel afterwards) and its SNI name decides, as the CONNECT host did.
    void scanHello() {
        std::string name;
        switch (tls::clientHelloServerName(pending_, name)) {
        case tls::HelloScan::NotTls:
            passThrough("(tunnel: not TLS)");
            return;
        case tls::HelloScan::Done:
            if (!name.empty() && proxy::matchesHostGlob(name, passthrough_)) {
                passThrough("(tls_passthrough)");
                return;
            }
            handshake();
            return;
        case tls::HelloScan::Malformed:
            handshake(); // OpenSSL answers it with the right alert
            return;
        case tls::HelloScan::NeedMore:
            break;
        }
        auto self = shared_from_this();
        socket_.async_wait(io::Socket::wait_read, [self](const boost::system::error_code& ec) {
            if (ec || self->closed_) {
                self->abort();
                return;
            }
            char buf[16384];
            const ssize_t n = ::recv(self->socket_.native_handle(), buf, sizeof buf, 0);
            if (n > 0) {
                self->pending_.append(buf, static_cast<std::size_t>(n));
                self->scanHello();
            } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                self->scanHello();
            } else {
                self->abort();
            }
        });
    }

    void passThrough(std::string_view route) {
        closed_ = true;
        capture::WsCapturePtr record;
        if (cap_) {
            record = capture::connectRecord(*cap_, localPort_, origin_->authority, capture::Source::Tunnel,
                                            route, connectNs_);
            capture::h1Closed(*cap_);
        }
        startPlainTunnel(worker_, std::move(socket_), host_, origin_->port, std::move(pending_),
                         std::move(record));
    }

public:
private:
    std::string host_;                                       // intercepted tunnels only: the CONNECT host
    std::shared_ptr<const proxy::InterceptedOrigin> origin_; // and its origin
    std::string toClient_;                                   // the CONNECT's 200
    std::string pending_; // bytes after the CONNECT head, read by OpenSSL first (socket_bio.h)
    std::vector<std::string> passthrough_; // the listener's tls_passthrough globs (matched against SNI)
    std::int64_t connectNs_ = -1;          // when the intercepted CONNECT reached the front door

    Worker& worker_;
    io::Socket socket_;
    std::uint16_t localPort_;
    // The listener's contexts outlive the handshake even if a reload replaces them meanwhile.
    std::shared_ptr<tls::ServerTls> tls_;
    SSL* ssl_ = nullptr;
    std::unique_ptr<capture::ConnCapture> cap_;
    Clock::time_point deadline_ = Clock::time_point::max();
    bool closed_ = false;
};

} // namespace

void startIntercepted(Worker& worker, io::Socket socket, std::uint16_t localPort, const std::string& host,
                      std::uint16_t port, std::string toClient, std::string pending) {
    const Snapshot& snap = worker.snapshot();
    auto it = snap.intercept.find(localPort);
    std::string error;
    auto origin = it == snap.intercept.end()
                      ? nullptr
                      : proxy::interceptedOrigin(host, port, it->second.options, error);
    if (!origin) {
        std::fprintf(stderr, "portico: cannot intercept CONNECT %s:%u: %s\n", host.c_str(), unsigned(port),
                     error.empty() ? "no interception on this listener" : error.c_str());
        boost::system::error_code ec;
        socket.close(ec);
        return;
    }
    std::make_shared<TlsHandshake>(worker, std::move(socket), localPort, it->second.tls)
        ->startIntercept(host, std::move(origin), std::move(toClient), std::move(pending));
}

void acceptConnection(Worker& worker, io::Socket socket, std::uint16_t localPort) {
    boost::system::error_code ec;
    socket.non_blocking(true, ec);
    socket.set_option(tcp::no_delay(true), ec);
    const Snapshot& snap = worker.snapshot();
    if (auto it = snap.tls.find(localPort); it != snap.tls.end() && it->second) {
        std::make_shared<TlsHandshake>(worker, std::move(socket), localPort, it->second)->start();
        return;
    }
    std::make_shared<Connection>(worker, std::move(socket), localPort)->start();
}

} // namespace portico::server
