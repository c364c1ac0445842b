// The HTTP/2 upstream client's connection: one nghttp2 client session per upstream and worker
// thread, connect, TLS with ALPN, reads, writes and nghttp2's callbacks (h2_client_session.h).
#include "client/h2_client_session.h"

#include "client/connect.h"
#include "io/cipher_read.h"
#include "io/tls_handshake.h"
#include "io/transport.h"
#include "tls/alpn.h"
#include "tls/client_tls.h"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>

#include <openssl/err.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace portico::client::h2up {

void H2Conn::start() {
    std::string error;
    auto endpoints = endpoints_.empty() ? client::resolve(host_, port_, error) : endpoints_;
    if (endpoints.empty()) {
        asio::post(io_, [self = shared_from_this(), why = std::move(error)] { self->die(502, why); });
        return;
    }
    resolvedNs_ = std::chrono::steady_clock::now().time_since_epoch().count();
    timer_.expires_after(connectTimeout_);
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& e) {
        if (e || self->ready_ || self->dead_) return;
        self->die(504, "timed out connecting (connect_timeout)");
    });
    const bool several = endpoints.size() > 1;
    client::asyncConnect(
        socket_, std::move(endpoints),
        [self = shared_from_this(), several](const boost::system::error_code& e,
                                             const tcp::endpoint& endpoint, const std::string& failures) {
            if (self->dead_) return;
            if (e) {
                poolsOf(self->io_).failedUntil[self->key_] = Clock::now() + self->failTimeout_;
                self->die(502, "cannot connect: " + (several ? failures : e.message()));
                return;
            }
            self->tcpConnectedNs_ = std::chrono::steady_clock::now().time_since_epoch().count();
            self->connectedTo_ = client::endpointText(endpoint);
            boost::system::error_code ignored;
            self->socket_.set_option(tcp::no_delay(true), ignored);
            self->socket_.non_blocking(true, ignored);
            if (self->tls_)
                self->handshake();
            else
                self->ready();
        });
}

void H2Conn::handshake() {
    if (!ssl_) {
        ssl_ = SSL_new(clientTls_ ? clientTls_->ctx.get() : h2UpstreamTlsContext());
        if (!ssl_) {
            die(502, "TLS: " + tls::sslErrorText());
            return;
        }
        // The socket BIO reads like BIO_s_socket until ready() turns its drain tracking on.
        if (!tls::attachSocketBio(ssl_, socket_.native_handle())) SSL_set_fd(ssl_, socket_.native_handle());
        if (clientTls_) {
            clientTls_->prepare(ssl_); // SNI and the name to verify
        } else {
            boost::system::error_code ec;
            asio::ip::make_address(host_, ec);
            if (ec) SSL_set_tlsext_host_name(ssl_, host_.c_str()); // SNI for names only (RFC 6066 §3)
        }
        SSL_set_connect_state(ssl_);
    }
    io::driveHandshake(
        socket_, ssl_, [self = shared_from_this()] { return !self->dead_; },
        [self = shared_from_this()](io::HandshakeEnd end, const boost::system::error_code& e) {
            if (end == io::HandshakeEnd::WaitFailed) {
                self->die(502, "TLS handshake: " + e.message());
                return;
            }
            if (end == io::HandshakeEnd::Failed) {
                if (self->clientTls_) {
                    self->die(502, tls::handshakeError(self->ssl_, *self->clientTls_, self->authority_));
                    return;
                }
                unsigned long code = ERR_get_error();
                char text[256] = "failed";
                if (code) ERR_error_string_n(code, text, sizeof text);
                ERR_clear_error();
                self->die(502, std::string("TLS handshake: ") + text);
                return;
            }
            const std::string_view alpn = tls::alpnOf(self->ssl_);
            if (alpn == "h2") {
                self->ready();
                return;
            }
            if (alpn.empty() || alpn == "http/1.1") { // RFC 7301 §3.2: no ALPN means HTTP/1.1 here
                self->handOverToHttp1();
                return;
            }
            self->die(502, "the TLS upstream selected '" + std::string(alpn) + "' with ALPN");
        });
}

void H2Conn::ready() {
    static const http2::Callbacks callbacks([](nghttp2_session_callbacks* cbs) {
        nghttp2_session_callbacks_set_on_header_callback(cbs, onHeaderCb);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, onFrameRecvCb);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, onDataChunkCb);
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, onStreamCloseCb);
    });
    http2::SessionSettings settings;
    settings.streamWindowBytes = kStreamWindow;
    settings.connectionWindowBytes = kConnectionWindow;
    // WINDOW_UPDATE only for bytes the downstream took: the backpressure of a slow reader.
    settings.manualWindowUpdates = true;
    std::string why;
    session_ = http2::makeSession(callbacks, this, settings, why).release();
    if (!session_) {
        die(502, why);
        return;
    }
    ready_ = true;
    timer_.cancel();
    if (ssl_ && (bio_ = tls::socketBioState(ssl_))) bio_->trackDrained = true;
    auto waiting = std::move(waiting_);
    waiting_.clear();
    for (auto& c : waiting) {
        if (c->cancelled_) continue;
        c->connectionOpened(*this);
        c->connected();
        c->submitOn(*this);
    }
    flush();
    waitRead();
    armIdle();
}

void H2Conn::attach(const std::shared_ptr<H2Call>& call) {
    if (!ready_) {
        waiting_.push_back(call);
        if (!started_) {
            started_ = true;
            start();
        }
        return;
    }
    timer_.cancel(); // the idle timer
    call->connected();
    call->submitOn(*this);
    postFlush();
}

void H2Conn::waitRead() {
    if (dead_ || reading_) return;
    reading_ = true;
    if (io::transportPending(ssl_)) {
        if (bio_) bio_->drained = false; // as H2Connection::waitRead: the socket may have more now
        asio::post(io_, [self = shared_from_this()] {
            self->reading_ = false;
            self->onReadable();
        });
        return;
    }
    if (bio_) { // TLS: one recv per response (io/cipher_read.h)
        if (!cipherIn_) cipherIn_ = std::make_unique<char[]>(kCipherInBytes);
        io::asyncReadCiphertext(socket_, *bio_, cipherIn_.get(), kCipherInBytes,
                                [self = shared_from_this()](const boost::system::error_code& e) {
                                    self->reading_ = false;
                                    if (self->dead_) return;
                                    if (e) {
                                        if (e != asio::error::operation_aborted)
                                            self->die(502, e == asio::error::eof
                                                               ? "the upstream closed the connection"
                                                               : "connection lost: " + e.message());
                                        return;
                                    }
                                    self->onReadable();
                                });
        return;
    }
    socket_.async_wait(Http1Call::Socket::wait_read,
                       [self = shared_from_this()](const boost::system::error_code& e) {
                           self->reading_ = false;
                           if (e || self->dead_) return;
                           self->onReadable();
                       });
}

void H2Conn::onReadable() {
    if (dead_) return;
    in_.resize(kReadChunk);
    for (int i = 0; i < kReadsPerTurn; ++i) {
        io::IoResult r = io::transportRead(socket_.native_handle(), ssl_, in_.data(), in_.size());
        if (r.status == io::IoStatus::WantRead) break;
        if (r.status == io::IoStatus::WantWrite) {
            waitWrite();
            break;
        }
        if (r.status != io::IoStatus::Ok) {
            die(502, r.status == io::IoStatus::Eof ? "the upstream closed the connection"
                                                   : "connection lost (read error)");
            return;
        }
        inRecv_ = true;
        ssize_t n =
            nghttp2_session_mem_recv(session_, reinterpret_cast<const std::uint8_t*>(in_.data()), r.n);
        inRecv_ = false;
        if (!heldHeads_.empty()) releaseHeads();
        if (n < 0) {
            nghttp2_session_terminate_session(session_, NGHTTP2_PROTOCOL_ERROR);
            flush();
            die(502, std::string("bad HTTP/2 from the upstream: ") + nghttp2_strerror(static_cast<int>(n)));
            return;
        }
        if (dead_) return;
    }
    flush();
    waitRead();
}

void H2Conn::releaseHeads() {
    auto held = std::move(heldHeads_);
    heldHeads_.clear();
    for (std::int32_t id : held)
        if (H2Call* c = call(id)) c->releaseHead();
}

void H2Conn::flush() {
    if (dead_ || writing_ || inRecv_ || !session_) return;
    for (;;) {
        while (out_.size() - outOffset_ < kOutHighWater) {
            const std::uint8_t* data = nullptr;
            ssize_t n = nghttp2_session_mem_send(session_, &data);
            if (n < 0) {
                die(502, std::string("HTTP/2 session error: ") + nghttp2_strerror(static_cast<int>(n)));
                return;
            }
            if (n == 0) break;
            out_.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
        }
        if (outOffset_ == out_.size()) break;
        io::IoResult r = io::transportWrite(socket_.native_handle(), ssl_, out_.data() + outOffset_,
                                            out_.size() - outOffset_);
        if (r.status == io::IoStatus::Ok) {
            outOffset_ += r.n;
            if (outOffset_ == out_.size()) {
                out_.clear();
                outOffset_ = 0;
            }
            continue;
        }
        if (r.status == io::IoStatus::WantWrite || r.status == io::IoStatus::WantRead) {
            waitWrite();
            return;
        }
        die(502, "connection lost (write error)");
        return;
    }
    if (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0)
        die(502, "the upstream ended the HTTP/2 session");
}

void H2Conn::waitWrite() {
    if (writing_) return;
    writing_ = true;
    socket_.async_wait(Http1Call::Socket::wait_write,
                       [self = shared_from_this()](const boost::system::error_code& e) {
                           self->writing_ = false;
                           if (e || self->dead_) return;
                           self->flush();
                           self->waitRead();
                       });
}

void H2Conn::armIdle() {
    if (!ready_ || dead_ || !streams_.empty() || !waiting_.empty()) return;
    timer_.expires_after(idleTimeout_);
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& e) {
        if (e || self->dead_ || !self->streams_.empty()) return;
        nghttp2_submit_goaway(self->session_, NGHTTP2_FLAG_NONE, 0, NGHTTP2_NO_ERROR, nullptr, 0);
        self->goaway_ = true;
        self->flush();
        self->die(502, "idle");
    });
}

// The upstream speaks HTTP/1.1 over TLS: noted for this io_context, this connection closed, and
// the requests waiting for it go to the HTTP/1.1 client.
void H2Conn::handOverToHttp1() {
    poolsOf(io_).http1.insert(key_);
    auto waiting = std::move(waiting_);
    waiting_.clear();
    for (auto& c : waiting) {
        c->connectionOpened(*this);
        c->tlsDone(ssl_);
    }
    // The connection goes on as HTTP/1.1: the first waiting call takes it from the pool, the
    // others connect anew (one request at a time per HTTP/1.1 connection).
    if (!waiting.empty()) {
        config::Upstream upstream;
        upstream.host = host_;
        upstream.port = port_;
        upstream.authority = authority_;
        upstream.protocol = config::Upstream::Protocol::H2;
        adoptConnection(io_, upstream, clientTls_, std::move(socket_), SslPtr(ssl_), idleTimeout_);
        ssl_ = nullptr;
        socket_ = Http1Call::Socket(io_.get_executor());
    }
    die(502, "the TLS upstream speaks HTTP/1.1"); // tells no one: nothing waits, no stream is open
    for (auto& c : waiting)
        c->toHttp1();
}

void H2Conn::die(int status, const std::string& why) {
    if (dead_) return;
    dead_ = true;
    auto keep = shared_from_this();
    auto& conns = poolsOf(io_).conns;
    auto it = conns.find(key_);
    if (it != conns.end() && it->second.get() == this) conns.erase(it);
    timer_.cancel();
    boost::system::error_code ec;
    socket_.cancel(ec);
    socket_.close(ec);
    // Nothing reached the upstream for waiting calls: they may try the next one.
    auto waiting = std::move(waiting_);
    waiting_.clear();
    for (auto& c : waiting)
        c->connectFailed(status, why);
    auto streams = std::move(streams_);
    streams_.clear();
    for (auto& [id, c] : streams) {
        c->conn_.reset();
        c->id_ = -1;
        c->connectionLost(why);
    }
}

// ---- nghttp2 callbacks ----

int H2Conn::onHeaderCb(nghttp2_session*, const nghttp2_frame* f, const std::uint8_t* name, std::size_t nlen,
                       const std::uint8_t* value, std::size_t vlen, std::uint8_t, void* user) {
    if (f->hd.type != NGHTTP2_HEADERS) return 0;
    auto* self = static_cast<H2Conn*>(user);
    if (H2Call* c = self->call(f->hd.stream_id))
        c->onHeader(std::string_view(reinterpret_cast<const char*>(name), nlen),
                    std::string_view(reinterpret_cast<const char*>(value), vlen));
    return 0;
}

int H2Conn::onFrameRecvCb(nghttp2_session*, const nghttp2_frame* f, void* user) {
    auto* self = static_cast<H2Conn*>(user);
    if (f->hd.type == NGHTTP2_GOAWAY) {
        // Streams above last_stream_id are closed by nghttp2 (REFUSED_STREAM); no new ones here.
        self->goaway_ = true;
        auto& conns = poolsOf(self->io_).conns;
        auto it = conns.find(self->key_);
        if (it != conns.end() && it->second.get() == self) conns.erase(it);
        return 0;
    }
    H2Call* c = self->call(f->hd.stream_id);
    if (!c) return 0;
    if (f->hd.type == NGHTTP2_HEADERS)
        c->onHeaders((f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0);
    else if (f->hd.type == NGHTTP2_DATA && (f->hd.flags & NGHTTP2_FLAG_END_STREAM))
        c->onDataEnd();
    return 0;
}

int H2Conn::onDataChunkCb(nghttp2_session* session, std::uint8_t, std::int32_t id, const std::uint8_t* data,
                          std::size_t len, void* user) {
    auto* self = static_cast<H2Conn*>(user);
    if (H2Call* c = self->call(id))
        c->onData(data, len);
    else
        nghttp2_session_consume(session, id, len);
    return 0;
}

int H2Conn::onStreamCloseCb(nghttp2_session*, std::int32_t id, std::uint32_t code, void* user) {
    auto* self = static_cast<H2Conn*>(user);
    auto it = self->streams_.find(id);
    if (it == self->streams_.end()) return 0;
    std::shared_ptr<H2Call> c = std::move(it->second);
    self->streams_.erase(it);
    c->conn_.reset();
    c->id_ = -1;
    c->onClose(code);
    self->armIdle();
    return 0;
}

ssize_t H2Conn::readBodyCb(nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t len,
                           std::uint32_t* flags, nghttp2_data_source* src, void*) {
    return static_cast<H2Call*>(src->ptr)->readBody(buf, len, flags);
}

} // namespace portico::client::h2up
