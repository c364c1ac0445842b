// Non-blocking reads and writes on a connection's socket, in cleartext or through OpenSSL.
// TLS runs on the socket itself (a socket BIO, tls/socket_bio.h): OpenSSL reads and writes the
// non-blocking descriptor and reports WANT_READ / WANT_WRITE, which the connection turns into Asio waits.
// That keeps one code path (and one buffer) for both, instead of Asio's ssl::stream with its
// own buffering and per-operation allocations.
#pragma once

#include <chrono>
#include <cstddef>
#include <sys/types.h>

typedef struct ssl_st SSL;

namespace portico::io {

/// Outcome of one transport call.
enum class IoStatus : unsigned char {
    Ok,        ///< `n` bytes moved (n > 0)
    WantRead,  ///< nothing moved; wait until the socket is readable
    WantWrite, ///< nothing moved; wait until the socket is writable
    Eof,       ///< the peer closed (orderly: FIN or TLS close_notify)
    Error,     ///< reset, TLS alert, protocol error; close the connection
};

struct IoResult {
    IoStatus status;
    std::size_t n = 0;
};

/// Reads up to `len` bytes from `fd`, or through `ssl` when it is not null.
IoResult transportRead(int fd, SSL* ssl, char* p, std::size_t len);
/// Writes up to `len` bytes (`len` > 0). With TLS a WantRead/WantWrite must be retried later with
/// the same bytes (SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER lets the buffer move, not shrink).
IoResult transportWrite(int fd, SSL* ssl, const char* p, std::size_t len, bool more = false);
/// TLS input inside OpenSSL that a read can take without the socket (decrypted bytes, or whole
/// records read ahead). False after a read that needed the socket: what is left is part of a record.
bool transportPending(SSL* ssl);

/// What a lingering close does next after discardUnread().
enum class Linger : unsigned char {
    Wait, ///< the socket has nothing more for now: wait until it is readable and call again
    Done, ///< the peer closed, or the socket failed: close it
};
/// A lingering close's read (RFC 9112 §9.6, nginx's lingering_close): reads and throws away what
/// the peer still sends on non-blocking `fd`, below TLS (the bytes are not looked at), until the
/// socket would block or is closed, or `maxBytes` were read (then Wait too, so that a peer that
/// keeps sending shares the worker with the other connections).
Linger discardUnread(int fd, std::size_t maxBytes = 256 * 1024);

/// How long a connection waits with nothing to do before it gives its buffers back (the pool's
/// read and write buffers, OpenSSL's record buffers).
inline constexpr std::chrono::milliseconds kReleaseIdleAfter{200};

/// Gives OpenSSL's record buffers back (SSL_free_buffers: about 17 KiB to read and 17 KiB to write
/// per connection) when they hold nothing: no bytes of a record read ahead, no write pending. Does
/// nothing otherwise, or with `ssl` null. For a connection idle for kReleaseIdleAfter: the next
/// read or write allocates them again. (SSL_MODE_RELEASE_BUFFERS would do this after every read
/// and write, two ~17 KiB malloc/free pairs per loop turn under load.)
void transportReleaseIdleBuffers(SSL* ssl);

/// Blocks SIGPIPE on the calling thread, for the threads the core starts to write sockets (server
/// workers, the load generator's): sendfile(2) and OpenSSL's descriptor BIO write with write()
/// semantics, so a peer that hung up raises SIGPIPE, whose default action ends the whole process
/// silently when the host (a test, an embedding application) did not ignore it. The write then
/// fails with EPIPE; the signal stays pending on the thread and goes away with it.
void blockSigpipe();

} // namespace portico::io
