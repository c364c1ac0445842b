// TLS 1.3 cipher suites for every SSL_CTX Portico makes: the server's (whose preference applies)
// and the clients' (the load generator, replay, the proxy's TLS upstreams, whose order a server
// without a preference of its own follows).
#pragma once

namespace portico::tls {

/// Mozilla's "intermediate" order (SSL_CTX_set_ciphersuites syntax): AES-128-GCM first, RFC 8446
/// §9.1's mandatory suite and what browsers, h2load and Go's crypto/tls choose on AES-NI machines.
/// OpenSSL's default puts AES-256-GCM first: 14 AES rounds per block instead of 10, on both ends.
inline constexpr char kTls13Suites[] =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";

} // namespace portico::tls
