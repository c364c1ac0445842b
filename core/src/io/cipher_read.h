// asyncReadCiphertext: the wait for TLS input of an owner that reads the socket itself (the
// server's HTTP/2 connection, the HTTP/2 upstream connection), so OpenSSL never does: Asio reads
// the next ciphertext into the owner's buffer and the socket BIO (tls/socket_bio.h) serves it to
// OpenSSL. When the socket is known to be empty, the epoll reactor queues that read without a
// syscall (drained.h) and performs it when bytes arrive: one recv per turn, where OpenSSL reading
// the socket itself costs a recv for a record's header, one for its body, one that fails with
// EAGAIN, and async_wait an epoll_ctl per wait.
#pragma once

#include "io/drained.h"
#include "tls/socket_bio.h"

#include <boost/asio/buffer.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <utility>

namespace portico::io {

/// Reads up to `len` bytes into `buf` for `bio`'s SSL (drain tracking on: SocketBioState::
/// trackDrained) and calls `done(const boost::system::error_code&)` from the socket's executor.
/// With no error the bytes are `bio`'s pending input (a short read marks the socket drained);
/// `bio`, `buf` and `socket` must outlive the call (`done` carries what keeps them alive).
template <class Socket, class Done>
void asyncReadCiphertext(Socket& socket, tls::SocketBioState& bio, char* buf, std::size_t len, Done done) {
    if (bio.drained) markDrained(socket);
    bio.readPending = true;
    socket.async_read_some(
        boost::asio::buffer(buf, len),
        [&bio, buf, len, done = std::move(done)](const boost::system::error_code& ec, std::size_t n) mutable {
            bio.readPending = false;
            if (!ec) {
                bio.pending = buf;
                bio.pendingBytes = n;
                bio.drained = n < len;
            }
            done(ec);
        });
}

} // namespace portico::io
