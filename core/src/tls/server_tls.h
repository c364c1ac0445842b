// TLS for one listener: OpenSSL contexts, ALPN (h2, http/1.1) and SNI → certificate.
#pragma once

#include <portico/config/config.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace portico::tls {

/// A PEM certificate chain (leaf first) and its PEM private key.
struct PemPair {
    std::string chain;
    std::string key;
};

/// Issues a certificate for a server name on demand (the local development CA). Returns nullopt
/// and sets `error` when it cannot. Called on worker threads; must be thread-safe.
using Issuer = std::function<std::optional<PemPair>(std::string_view name, std::string& error)>;

/// The TLS side of one listener. Protocols: TLS 1.2 and 1.3 only (RFC 8446, RFC 5246) with
/// Mozilla's "intermediate" ECDHE+AEAD cipher list for 1.2; session resumption by tickets;
/// ALPN (RFC 7301) selects "h2" when HTTP/2 is enabled and offered, else "http/1.1".
///
/// Certificates (SNI, RFC 6066 §3): a vhost with its own `tls:` files serves them for its names
/// (exact names first, then "*.suffix" wildcards); otherwise the listener's files, or with
/// `tls: auto` a leaf issued by the local CA for the SNI name when it is one the config serves
/// (a vhost name, or localhost, 127.0.0.1, ::1) and for "localhost" when the name is absent or
/// not served: Portico never issues a certificate for a name its config doesn't serve.
/// Issued contexts are cached for the listener's life. Thread-safe after create().
class ServerTls {
public:
    /// Builds the contexts. Errors (unreadable files, key not matching, CA failure) → nullptr and
    /// `error` naming the file. `issuer` is required when `listen.autoCa`.
    static std::shared_ptr<ServerTls> create(const config::Config& cfg, const config::ListenTls& listen,
                                             Issuer issuer, std::string& error);
    ~ServerTls();
    ServerTls(const ServerTls&) = delete;
    ServerTls& operator=(const ServerTls&) = delete;

    /// A forward proxy's TLS interception (RFC 9110 §9.3.6 tunnels it terminates): a leaf from
    /// `issuer` (the local CA) for whatever name the client asks for by SNI, or, without SNI, for
    /// the name given to newSslFor (the CONNECT host). Names are issued once and cached for the
    /// object's life (at most kMaxInterceptNames; past that a handshake for a new name fails).
    /// ALPN: "h2" (when `h2`) or "http/1.1". Null with `error` when the first leaf cannot be issued.
    static std::shared_ptr<ServerTls> createIntercepting(Issuer issuer, bool h2, std::string& error);
    static constexpr std::size_t kMaxInterceptNames = 10000;

    /// Interception: a client refused the certificate minted for `origin` ("host:port") with a TLS
    /// alert (a pinned app, a client that does not trust the CA): later tunnels to it pass through
    /// unread (refused()), so the client keeps working. At most kMaxInterceptNames origins.
    void markRefused(std::string origin);
    bool refused(std::string_view origin) const;

    /// A server-side SSL for the accepted socket `fd` (not yet handshaken), or nullptr.
    SSL* newSsl(int fd) const;
    /// As newSsl, with the certificate for `name` (issued on first use) until SNI says otherwise;
    /// nullptr when no certificate can be had for `name`.
    SSL* newSslFor(int fd, std::string_view name);

    /// Handshakes that failed (bad client hello, protocol version, unknown CA alert...).
    std::atomic<std::uint64_t> handshakeFailures{0};

private:
    ServerTls() = default;
    SSL_CTX* contextFor(std::string_view name);
    static int onClientHelloName(SSL* ssl, int* alert, void* arg);

    SSL_CTX* default_ = nullptr;
    std::vector<std::pair<std::string, SSL_CTX*>> vhostNames_; // lower-case name or "*.suffix"
    std::vector<SSL_CTX*> owned_;
    // tls: auto
    Issuer issuer_;
    std::vector<std::string> servedNames_; // names (and "*.suffix" patterns) a leaf may be issued for
    bool anyName_ = false;                 // createIntercepting: any name the client asks for
    bool h2_ = true;
    std::mutex issuedMutex_;
    std::map<std::string, SSL_CTX*, std::less<>> issued_;
    mutable std::mutex refusedMutex_;
    std::set<std::string, std::less<>> refused_; // origins whose clients refused our certificate
};

} // namespace portico::tls
