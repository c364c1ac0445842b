// The client side of TLS shared by the load generator and replay: one SSL_CTX per target with
// ALPN and the verification policy, the per-connection SNI / host check, and readable errors.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace portico::tls {

struct ClientTlsOptions {
    std::string host; ///< the URL's host: a DNS name (SNI + name check) or an IP literal (IP check)
    /// ALPN protocols offered, in preference order ("h2", "http/1.1"); empty = no ALPN extension.
    std::vector<std::string> alpn;
    bool insecure = false; ///< no certificate verification at all
    std::string caFile;    ///< extra trusted CA certificates (PEM), on top of the system store
};

/// A client context (TLS 1.2+, partial writes) and what each connection needs from it.
struct ClientTls {
    std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)> ctx{nullptr, nullptr};
    std::string sni;        ///< "" for an IP literal (RFC 6066 §3: no IP addresses in SNI)
    std::string verifyHost; ///< name or address the certificate must match; "" when insecure
    bool verifyIp = false;
    /// Configures a new `ssl` on this context: SNI, host/IP check, connect state.
    void prepare(SSL* ssl) const;
};

/// Builds the context. Null with `error` ("cannot load CA certificates from 'F': ...") on failure.
std::unique_ptr<ClientTls> makeClientTls(const ClientTlsOptions& options, std::string& error);

/// A ClientTls for `host` sharing `base`'s context (one reference more on it): the same ALPN,
/// trust store and verification switch, with `host`'s SNI and name or IP check. Building a
/// verifying context reads the system store (milliseconds); this costs a few allocations.
std::unique_ptr<ClientTls> clientTlsFor(const ClientTls& base, const std::string& host);

/// The first queued OpenSSL error as text ("connection closed during the handshake" when none);
/// empties the thread's error queue.
std::string sslErrorText();

/// Why a failed client handshake on `ssl` failed, for `address` ("127.0.0.1:8443"): certificate
/// verification (with its reason and the host checked) or the OpenSSL error.
std::string handshakeError(SSL* ssl, const ClientTls& tls, std::string_view address);

} // namespace portico::tls
