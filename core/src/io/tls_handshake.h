// Driving a TLS handshake (RFC 8446) on a non-blocking socket with Asio waits: the one loop the
// server's front door, the reverse proxy's HTTP/2 upstreams and the load generator share. OpenSSL
// reads and writes the descriptor itself (transport.h); each WANT_READ / WANT_WRITE becomes an
// async_wait on the socket, and the handshake is tried again when it fires.
#pragma once

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/system/error_code.hpp>

#include <utility>

namespace portico::io {

/// How a handshake driven by driveHandshake ended.
enum class HandshakeEnd : unsigned char {
    Done,       ///< complete: ALPN, the peer's certificate and the session are readable on `ssl`
    Failed,     ///< OpenSSL failed it (bad record, alert, verification): the error queue says why
    WaitFailed, ///< a wait on the socket failed (`ec`), e.g. the socket was closed meanwhile
};

/// Runs SSL_do_handshake on `ssl` (attached to `socket`'s descriptor, client or server state set)
/// until it ends, then calls `done(HandshakeEnd, const boost::system::error_code&)` once, on the
/// socket's executor (or at once, before returning, when no wait was needed). `alive()` is asked
/// after every wait, before OpenSSL is touched again: false (the owner closed or moved on) ends
/// the loop silently, without `done`. Both callables are copied into each wait's handler, so
/// they carry what keeps `socket` and `ssl` alive (a shared_ptr, a generation check).
template <class Socket, class Alive, class Done>
void driveHandshake(Socket& socket, SSL* ssl, Alive alive, Done done) {
    ERR_clear_error();
    const int rc = SSL_do_handshake(ssl);
    if (rc == 1) {
        done(HandshakeEnd::Done, boost::system::error_code());
        return;
    }
    const int err = SSL_get_error(ssl, rc);
    if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
        done(HandshakeEnd::Failed, boost::system::error_code());
        return;
    }
    socket.async_wait(err == SSL_ERROR_WANT_READ ? Socket::wait_read : Socket::wait_write,
                      [&socket, ssl, alive = std::move(alive),
                       done = std::move(done)](const boost::system::error_code& ec) mutable {
                          if (!alive()) return;
                          if (ec) {
                              done(HandshakeEnd::WaitFailed, ec);
                              return;
                          }
                          driveHandshake(socket, ssl, std::move(alive), std::move(done));
                      });
}

} // namespace portico::io
