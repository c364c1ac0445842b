// Non-blocking transport calls (see transport.h).
#include "io/transport.h"

#include "tls/socket_bio.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cerrno>
#include <csignal>
#include <pthread.h>
#include <sys/socket.h>

namespace portico::io {

namespace {
IoResult fromSsl(SSL* ssl, int rc) {
    switch (SSL_get_error(ssl, rc)) {
    case SSL_ERROR_WANT_READ:
        return {IoStatus::WantRead};
    case SSL_ERROR_WANT_WRITE:
        return {IoStatus::WantWrite};
    case SSL_ERROR_ZERO_RETURN:
        return {IoStatus::Eof};
    default:
        // SSL_ERROR_SYSCALL with errno 0 (peer closed without close_notify) and every alert end
        // here; the error queue must be left empty for the next connection on this thread.
        ERR_clear_error();
        return {IoStatus::Error};
    }
}
} // namespace

IoResult transportRead(int fd, SSL* ssl, char* p, std::size_t len) {
    if (ssl) {
        std::size_t got = 0;
        int rc = SSL_read_ex(ssl, p, len, &got);
        if (rc == 1) return {IoStatus::Ok, got};
        return fromSsl(ssl, rc);
    }
    for (;;) {
        ssize_t n = ::recv(fd, p, len, 0);
        if (n > 0) return {IoStatus::Ok, static_cast<std::size_t>(n)};
        if (n == 0) return {IoStatus::Eof};
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return {IoStatus::WantRead};
        return {IoStatus::Error};
    }
}

IoResult transportWrite(int fd, SSL* ssl, const char* p, std::size_t len, bool more) {
    if (ssl) {
        std::size_t put = 0;
        int rc = SSL_write_ex(ssl, p, len, &put);
        if (rc == 1) return {IoStatus::Ok, put};
        return fromSsl(ssl, rc);
    }
    for (;;) {
        ssize_t n = ::send(fd, p, len, MSG_NOSIGNAL | (more ? MSG_MORE : 0));
        if (n > 0) return {IoStatus::Ok, static_cast<std::size_t>(n)};
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return {IoStatus::WantWrite};
        return {IoStatus::Error};
    }
}

bool transportPending(SSL* ssl) {
    if (!ssl) return false;
    // After a read that found the socket empty, what OpenSSL still buffers is part of a record: it
    // needs more bytes from the socket, and counting it as readable would spin the worker (a client
    // that sends half a record and pauses). SSL_has_pending alone cannot tell the two apart.
    if (const tls::SocketBioState* st = tls::socketBioState(ssl)) {
        if (st->pendingBytes > 0) return true; // taken off the socket by the owner's read
        if (st->retried) return SSL_pending(ssl) > 0;
    }
    return SSL_has_pending(ssl) == 1;
}

void transportReleaseIdleBuffers(SSL* ssl) {
    if (ssl) SSL_free_buffers(ssl); // 0 (and nothing freed) while a buffer holds bytes
}

Linger discardUnread(int fd, std::size_t maxBytes) {
    char sink[4096];
    for (std::size_t total = 0; total < maxBytes;) {
        const ssize_t n = ::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
        if (n > 0) {
            total += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Linger::Wait;
        return Linger::Done;
    }
    return Linger::Wait;
}

void blockSigpipe() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
}

} // namespace portico::io
