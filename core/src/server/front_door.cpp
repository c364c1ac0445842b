// The front door: the TLS handshake and the choice of session (front_door.h).
#include "server/front_door.h"

#include "capture/hooks.h"
#include "io/tls_handshake.h"
#include "proxy/origin.h"
#include "server/connection.h"
#include "server/h2_connection.h"
#include "server/worker.h"
#include "tls/alpn.h"
#include "tls/server_tls.h"
#include "tls/socket_bio.h"

#include <boost/asio/write.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <atomic>
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
    const std::int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
    std::int64_t prev = last.load(std::memory_order_relaxed);
    if (prev == now || !last.compare_exchange_strong(prev, now)) return;
    char reason[256] = "closed during the handshake";
    if (unsigned long e = ERR_peek_last_error()) ERR_error_string_n(e, reason, sizeof reason);
    std::fprintf(stderr, "portico: TLS handshake with %s failed: %s\n", client.c_str(), reason);
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
        origin_ = std::move(origin);
        pending_ = std::move(pending);
        const Snapshot& snap = worker_.snapshot();
        if (snap.config->capture.enabled)
            cap_ = capture::beginConnection(worker_.recorder(), *snap.config,
                                            capture::peerName(socket_.native_handle()));
        ssl_ = tls_->newSslFor(socket_.native_handle(), host);
        if (!ssl_) {
            abort();
            return;
        }
        if (auto* bio = tls::socketBioState(ssl_); bio && !pending_.empty()) {
            bio->pending = pending_.data();
            bio->pendingBytes = pending_.size();
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
                                     self->handshake();
                                 });
    }

private:
    std::shared_ptr<const proxy::InterceptedOrigin> origin_; // intercepted tunnels only
    std::string toClient_;                                   // the CONNECT's 200
    std::string pending_; // bytes after the CONNECT head, read by OpenSSL first (socket_bio.h)

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
