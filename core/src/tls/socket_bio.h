// The server's TLS transport: an OpenSSL BIO on a non-blocking TCP socket, like BIO_s_socket, that
// can also (a) remember that the socket's receive queue is empty and (b) hand OpenSSL ciphertext
// that an Asio read already took off the socket.
//
// Why: OpenSSL's own socket BIO reads until recv fails with EAGAIN, and waiting for readability with
// Asio's async_wait re-arms epoll with an epoll_ctl per wait. An HTTP/2 connection under load paid
// three syscalls per read turn for one useful read. With draining tracked, a short read (fewer bytes
// than OpenSSL asked for) ends the turn; the connection then waits with an Asio async_read_some
// into its own buffer, which the epoll reactor queues without a syscall (io/drained.h) and
// performs when bytes arrive: one recv per turn, as h2o and nginx do.
//
// Draining is tracked only after trackDrained(): the server's HTTP/2 connection and the HTTP/2
// upstream connection opt in because they always wait through their own read
// (io::asyncReadCiphertext). Other owners of the SSL (the HTTP/1.1
// connection, WebSocket sessions, proxy tunnels) wait with async_wait and expect OpenSSL to read the
// socket itself; for them the BIO behaves exactly like BIO_s_socket.
#pragma once

#include <cstddef>

typedef struct ssl_st SSL;

namespace portico::tls {

/// Per-connection state of the socket BIO. Owned by the BIO (freed with the SSL).
struct SocketBioState {
    int fd = -1;
    bool trackDrained = false;     ///< set by the owner that waits through its own reads
    bool drained = false;          ///< the last recv was short or failed with EAGAIN: reads retry at once
    bool readPending = false;      ///< an Asio read owns the socket's next bytes: reads retry at once
    bool retried = false;          ///< the last read found no bytes (retry): OpenSSL holds at most a
                                   ///< partial record, so waiting for the socket is right
    const char* pending = nullptr; ///< ciphertext taken off the socket by the owner, served first
    std::size_t pendingBytes = 0;  ///< bytes left at `pending`
};

/// Attaches a socket BIO on `fd` (non-blocking, not owned: the owner closes it) to `ssl` for reading
/// and writing. Returns false if OpenSSL could not allocate it (the SSL is then unchanged).
/// Writes use send(MSG_NOSIGNAL); EAGAIN → retry (SSL_ERROR_WANT_WRITE). A recv of 0 → EOF.
bool attachSocketBio(SSL* ssl, int fd);

/// The state of `ssl`'s socket BIO; nullptr when its read BIO is not one (e.g. a client SSL).
SocketBioState* socketBioState(SSL* ssl);

} // namespace portico::tls
