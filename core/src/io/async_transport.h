// Asynchronous reads and writes through transport.h (cleartext or OpenSSL on the socket) with
// Asio waits, for clients whose connections may be TLS: the reverse proxy's HTTP/1.1 upstreams.
// Each WANT_READ / WANT_WRITE becomes an async_wait on the socket and the call is tried again when
// it fires. A wait is started only after the socket said it would block (Asio's reactor is
// edge-triggered: a wait started on data already there would sleep until the next edge).
#pragma once

#include "io/transport.h"

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <utility>

namespace portico::io {

/// The error a transport status stands for: Eof → asio::error::eof, Error →
/// asio::error::connection_reset (a reset, a TLS alert or a bad record); empty otherwise.
inline boost::system::error_code transportError(IoStatus status) {
    if (status == IoStatus::Eof) return boost::asio::error::eof;
    if (status == IoStatus::Error) return boost::asio::error::connection_reset;
    return {};
}

/// Reads once into `buf` (`len` > 0 bytes) from `socket`'s descriptor, through `ssl` when it is not
/// null, and calls `done(const boost::system::error_code&, std::size_t n)`: n > 0 bytes with no
/// error, or the error (asio::error::eof when the peer closed, connection_reset on a failure, the
/// wait's error such as operation_aborted when the socket was closed meanwhile). `done` always runs
/// from the socket's executor after this returns, never inside the call. `alive()` is asked after
/// every wait before OpenSSL or the socket is touched again: false ends the operation silently
/// (without `done`). Both callables are copied into the waits' handlers, so they carry what keeps
/// `socket`, `ssl` and `buf` alive.
template <class Socket, class Alive, class Done>
void asyncTransportRead(Socket& socket, SSL* ssl, char* buf, std::size_t len, Alive alive, Done done) {
    const IoResult r = transportRead(socket.native_handle(), ssl, buf, len);
    if (r.status == IoStatus::WantRead || r.status == IoStatus::WantWrite) {
        socket.async_wait(r.status == IoStatus::WantRead ? Socket::wait_read : Socket::wait_write,
                          [&socket, ssl, buf, len, alive = std::move(alive),
                           done = std::move(done)](const boost::system::error_code& ec) mutable {
                              if (!alive()) return;
                              if (ec) {
                                  done(ec, std::size_t{0});
                                  return;
                              }
                              asyncTransportRead(socket, ssl, buf, len, std::move(alive), std::move(done));
                          });
        return;
    }
    boost::asio::post(socket.get_executor(), [r, alive = std::move(alive), done = std::move(done)]() mutable {
        if (alive()) done(transportError(r.status), r.n);
    });
}

/// Writes all `len` bytes at `data` (which must stay valid and unchanged until `done`) to `socket`,
/// through `ssl` when it is not null, and calls `done(const boost::system::error_code&, std::size_t
/// written)` once: no error and `len`, or the error (connection_reset, broken pipe as a reset, the
/// wait's error). Same rules for `done` and `alive` as asyncTransportRead. With TLS the bytes a
/// WANT_* left are offered again unchanged (the context must allow a moving write buffer).
template <class Socket, class Alive, class Done>
void asyncTransportWrite(Socket& socket, SSL* ssl, const char* data, std::size_t len, Alive alive, Done done,
                         std::size_t written = 0) {
    while (written < len) {
        const IoResult r = transportWrite(socket.native_handle(), ssl, data + written, len - written);
        if (r.status == IoStatus::Ok) {
            written += r.n;
            continue;
        }
        if (r.status == IoStatus::WantRead || r.status == IoStatus::WantWrite) {
            socket.async_wait(r.status == IoStatus::WantRead ? Socket::wait_read : Socket::wait_write,
                              [&socket, ssl, data, len, written, alive = std::move(alive),
                               done = std::move(done)](const boost::system::error_code& ec) mutable {
                                  if (!alive()) return;
                                  if (ec) {
                                      done(ec, written);
                                      return;
                                  }
                                  asyncTransportWrite(socket, ssl, data, len, std::move(alive),
                                                      std::move(done), written);
                              });
            return;
        }
        boost::asio::post(socket.get_executor(),
                          [ec = transportError(r.status), written, alive = std::move(alive),
                           done = std::move(done)]() mutable {
                              if (alive()) done(ec, written);
                          });
        return;
    }
    boost::asio::post(socket.get_executor(),
                      [len, alive = std::move(alive), done = std::move(done)]() mutable {
                          if (alive()) done(boost::system::error_code(), len);
                      });
}

} // namespace portico::io
