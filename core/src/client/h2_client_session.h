// The HTTP/2 client's two halves (h2_client.h): H2Call, one request as a stream (h2_call.cpp), and
// H2Conn, one nghttp2 client session per upstream and thread (h2_conn.cpp). Private to client/.
#pragma once

#include "client/connect.h"
#include "client/h2_client.h"
#include "client/http1_call.h"
#include "client/per_context.h"
#include "tls/client_tls.h"
#include "tls/socket_bio.h"

#include <portico/config/network.h>
#include <portico/http2/session.h>

#include <boost/asio/steady_timer.hpp>

#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace portico::client {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace h2up {
constexpr std::size_t kReadChunk = 16 * 1024;
constexpr std::size_t kOutHighWater = 64 * 1024;
constexpr int kReadsPerTurn = 8;
// TLS input Asio reads at once: a whole record (RFC 8446 §5.2: a 5-byte header and at most
// 2^14 + 256 bytes of ciphertext).
constexpr std::size_t kCipherInBytes = 16 * 1024 + 512;
constexpr std::int32_t kStreamWindow = 1 << 20;      // per stream: what one slow reader may hold
constexpr std::int32_t kConnectionWindow = 16 << 20; // per upstream connection

class H2Conn;
class H2Call;

struct H2Pools {
    std::map<std::string, std::shared_ptr<H2Conn>, std::less<>> conns;
    // https:// upstreams that selected http/1.1 (or no protocol) with ALPN: their requests go to the
    // HTTP/1.1 client (Http1Call) from then on.
    std::set<std::string, std::less<>> http1;
    std::map<std::string, Clock::time_point, std::less<>> failedUntil;
    std::map<const void*, std::size_t> next; // round-robin position per action
};
// The H2 pools of `io` (one set per io_context).
H2Pools& poolsOf(asio::io_context& io);

// The pool key of `u`: scheme, host and port and, for https:// with the caller's own TLS
// (CallOptions::tls), its SSL_CTX, which holds the trust decision (verification, CA store, ALPN). A
// connection opened without verification (a route's default) never serves a call that verifies
// (an intercepted origin), and the other way round. A pooled connection's SSL keeps its SSL_CTX
// alive, so no other context can take that address while the connection exists.
inline std::string key(const config::Upstream& u, const CallOptions* options) {
    const bool tls = u.protocol == config::Upstream::Protocol::H2;
    std::string k = (tls ? "h2:" : "h2c:") + u.host + ":" + std::to_string(u.port);
    if (tls && options && options->tls) {
        k += '#';
        k += std::to_string(reinterpret_cast<std::uintptr_t>(options->tls->ctx.get()));
    }
    return k;
}

inline bool hopByHop(std::string_view name) { return isH2HopByHop(name); }

// ---- one stream ----

class H2Call final : public Call, public std::enable_shared_from_this<H2Call> {
public:
    H2Call(asio::io_context& io, const config::ProxyAction& action)
        : io_(io), action_(action), timer_(io), deadline_(io) {}

    void pick();
    // From the connection.
    void submitOn(H2Conn& conn);
    void connectFailed(int status, const std::string& why);
    void connectionLost(const std::string& why);
    void connected();                          // the connection is ready for this call
    void tlsDone(SSL* ssl);                    // its TLS handshake completed (before a handover to HTTP/1.1)
    void connectionOpened(const H2Conn& conn); // it waited for `conn`, new: its DNS/TCP times
    long readBody(std::uint8_t* buf, std::size_t len, std::uint32_t* flags);
    void onHeader(std::string_view name, std::string_view value);
    void onHeaders(bool endStream);
    void onData(const std::uint8_t* data, std::size_t len);
    /// The bytes of one read were all given to nghttp2: a head held for the body lets go.
    void releaseHead();
    void onDataEnd();
    void onClose(std::uint32_t code);
    /// The chosen https:// upstream speaks HTTP/1.1: the request goes to an HTTP/1.1 exchange
    /// (Http1Call::startPrepared), to which this call hands every later downstream call.
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
    const CallOptions* options_ = nullptr;         // null: the defaults
    const config::HostOverrides* hosts_ = nullptr; // `hosts:` (snapshot_ keeps it); null: none
    asio::steady_timer timer_;                     // response_timeout
    asio::steady_timer deadline_;                  // grpc-timeout
    const config::Upstream* upstream_ = nullptr;
    std::shared_ptr<H2Conn> conn_;
    std::shared_ptr<Call> inner_; // after toHttp1(): the HTTP/1.1 exchange
    std::int32_t id_ = -1;
    std::size_t tries_ = 0;
    H2Request req_;              // the request (the body as it waits to be sent)
    std::size_t bodyOffset_ = 0; // bytes of req_.body already sent
    bool bodyEnded_ = false;     // the whole body is in req_.body
    // Response.
    int status_ = 0;
    std::string fields_;
    std::string responseTrailers_;
    std::optional<std::uint64_t> length_;
    std::size_t held_ = 0; // body bytes delivered but not acknowledged (sink paused)
    bool deferred_ = false;
    bool firstByte_ = false; // onUpstreamFirstByte was told
    bool headSent_ = false;
    bool headHeld_ = false; // the sink holds the head until DATA or releaseHead
    bool ended_ = false;
    bool paused_ = false;
    bool cancelled_ = false;
    bool done_ = false;

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
    H2Conn(asio::io_context& io, const config::Upstream& u, const config::ProxyAction& action,
           const CallOptions* options, const config::HostOverrides* hosts)
        : io_(io), socket_(io.get_executor()), timer_(io), host_(u.host), authority_(u.authority),
          key_(key(u, options)), port_(u.port), tls_(u.protocol == config::Upstream::Protocol::H2),
          connectTimeout_(action.connectTimeout), idleTimeout_(action.idleTimeout),
          failTimeout_(action.failTimeout) {
        if (options) {
            clientTls_ = options->tls;
            endpoints_ = options->endpoints;
        }
        // `hosts:` maps the name to one address now: the connection outlives the call's snapshot.
        if (std::string ignored; endpoints_.empty() && hosts && config::findHostOverride(*hosts, host_))
            endpoints_ = client::resolve(host_, port_, ignored, hosts);
    }
    ~H2Conn() {
        if (session_) nghttp2_session_del(session_);
        if (ssl_) SSL_free(ssl_);
    }

    bool usable() const { return !dead_ && !goaway_; }
    bool tls() const { return tls_; }
    SSL* ssl() const { return ssl_; } // https:// upstreams, once connected
    const std::string& authority() const { return authority_; }
    // When this connection resolved its name and connected (steady ns, -1 before), and to where.
    std::int64_t resolvedNs() const { return resolvedNs_; }
    std::int64_t tcpConnectedNs() const { return tcpConnectedNs_; }
    const std::string& connectedTo() const { return connectedTo_; }
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
    /// Inside nghttp2_session_mem_recv (a call's head then waits for the DATA of the same read).
    bool inRecv() const { return inRecv_; }
    /// Stream `id`'s head is held until the bytes of the current read are all processed.
    void holdHead(std::int32_t id) { heldHeads_.push_back(id); }

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
    void releaseHeads();
    H2Call* call(std::int32_t id) {
        auto it = streams_.find(id);
        return it == streams_.end() ? nullptr : it->second.get();
    }

    asio::io_context& io_;
    Http1Call::Socket socket_;
    asio::steady_timer timer_; // connect, then idle
    SSL* ssl_ = nullptr;
    nghttp2_session* session_ = nullptr;
    std::string host_, authority_, key_;
    std::uint16_t port_;
    bool tls_;
    std::chrono::nanoseconds connectTimeout_, idleTimeout_, failTimeout_;
    const tls::ClientTls* clientTls_ = nullptr; // CallOptions::tls (null: h2UpstreamTlsContext)
    std::vector<tcp::endpoint> endpoints_;      // CallOptions::endpoints (empty: resolve host_)
    std::int64_t resolvedNs_ = -1, tcpConnectedNs_ = -1;
    std::string connectedTo_;
    std::map<std::int32_t, std::shared_ptr<H2Call>> streams_;
    std::vector<std::shared_ptr<H2Call>> waiting_; // until the connection is ready
    std::string in_;
    std::string out_;
    // TLS: the socket BIO (socket_bio.h) and the buffer Asio reads ciphertext into (see waitRead).
    tls::SocketBioState* bio_ = nullptr;
    std::unique_ptr<char[]> cipherIn_;
    std::vector<std::int32_t> heldHeads_; // streams whose head waits for this read's DATA
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

} // namespace h2up
} // namespace portico::client
