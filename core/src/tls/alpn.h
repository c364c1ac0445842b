// The ALPN protocol a TLS handshake selected (RFC 7301), read the one way for both ends: the
// server's front door and capture, and every client (the proxy's upstreams, the load generator,
// replay).
#pragma once

#include <openssl/ssl.h>

#include <string_view>

namespace portico::tls {

/// The protocol the handshake on `ssl` selected ("h2", "http/1.1"), or "" when none was (the peer
/// offered or accepted no ALPN, or the handshake has not completed). A view of OpenSSL's copy,
/// valid while `ssl` lives.
inline std::string_view alpnOf(const SSL* ssl) {
    const unsigned char* p = nullptr;
    unsigned len = 0;
    SSL_get0_alpn_selected(ssl, &p, &len);
    return p ? std::string_view(reinterpret_cast<const char*>(p), len) : std::string_view();
}

} // namespace portico::tls
