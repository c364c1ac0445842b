// The pipelined/multiplexed client connection (connection.h). TLS runs on the socket itself
// (SSL_set_fd, like the server's transport); HTTP/2 is an nghttp2 client session fed with mem_recv
// and drained with mem_send.
#include "client/connection.h"

#include "io/drained.h"
#include "io/tls_handshake.h"
#include "io/transport.h"
#include "tls/alpn.h"

#include <openssl/err.h>

#include <boost/asio/post.hpp>

#include <algorithm>
#include <cstring>

namespace portico::client {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using http1::ResponseParser;

namespace {
constexpr std::size_t kReadBuffer = 64 * 1024;
constexpr unsigned kMaxDepth = 1024;
} // namespace

Connection::Connection(asio::io_context& io, const ConnectionSettings& settings, ConnectionHandler& handler,
                       TrafficCounters& counters, unsigned depth)
    : io_(io), settings_(settings), handler_(handler), counters_(counters), socket_(io),
      slots_(std::clamp(depth, 1u, kMaxDepth)), readBuf_(new char[kReadBuffer]) {
    free_.reserve(slots_.size());
    writeBuf_.reserve(slots_.size() * 512);
}

Connection::~Connection() { release(); }

void Connection::connect() {
    close(); // any earlier connection, without callbacks; slots and buffers start empty
    boost::system::error_code ec;
    state_ = State::Connecting;
    socket_.open(settings_.endpoint.protocol(), ec);
    if (ec) {
        state_ = State::Idle;
        handler_.onConnectFailed();
        return;
    }
    socket_.non_blocking(true, ec);
    socket_.async_connect(settings_.endpoint, [this, gen = generation_](const boost::system::error_code& e) {
        if (gen != generation_) return;
        if (e) {
            connectFailed();
            return;
        }
        boost::system::error_code ignored;
        socket_.set_option(tcp::no_delay(true), ignored);
        if (settings_.ssl)
            startTls();
        else
            opened();
    });
}

void Connection::connectFailed() {
    release();
    boost::system::error_code ignored;
    socket_.close(ignored);
    ++generation_;
    state_ = State::Idle;
    handler_.onConnectFailed();
}

void Connection::startTls() {
    ssl_ = SSL_new(settings_.ssl);
    if (!ssl_ || SSL_set_fd(ssl_, socket_.native_handle()) != 1) {
        ERR_clear_error();
        connectFailed();
        return;
    }
    settings_.tls->prepare(ssl_); // SNI, host check, connect state
    io::driveHandshake(
        socket_, ssl_, [this, gen = generation_] { return gen == generation_; },
        [this](io::HandshakeEnd end, const boost::system::error_code&) {
            if (end != io::HandshakeEnd::Done) {
                ERR_clear_error();
                connectFailed();
                return;
            }
            if (settings_.h2 && tls::alpnOf(ssl_) != "h2") {
                connectFailed();
                return;
            }
            opened();
        });
}

const http2::Callbacks& Connection::h2Callbacks() {
    static const http2::Callbacks callbacks([](nghttp2_session_callbacks* cbs) {
        nghttp2_session_callbacks_set_on_header_callback(cbs, onH2Header);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, onH2FrameRecv);
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, onH2StreamClose);
    });
    return callbacks;
}

void Connection::opened() {
    if (settings_.h2) {
        std::string why;
        session_ = http2::makeSession(h2Callbacks(), this, settings_.h2Settings, why).release();
        if (!session_) { // out of memory: a connection that failed
            connectFailed();
            return;
        }
        free_.clear();
        for (std::size_t i = slots_.size(); i-- > 0;)
            free_.push_back(static_cast<std::uint32_t>(i));
    }
    boost::system::error_code ec;
    const auto local = socket_.local_endpoint(ec); // once per opening: no syscall per request
    localPort_ = ec ? 0 : local.port();
    sent_ = 0;
    state_ = State::Open;
    handler_.onOpen();
}

void Connection::receive() {
    if (state_ == State::Open) read();
}

void Connection::read() {
    if (ssl_) {
        // OpenSSL reads the socket itself; bytes it already decrypted never make the socket readable.
        if (io::transportPending(ssl_)) {
            asio::post(io_, [this, gen = generation_] {
                if (gen == generation_) onReadableTls();
            });
            return;
        }
        socket_.async_wait(tcp::socket::wait_read,
                           [this, gen = generation_](const boost::system::error_code& ec) {
                               if (gen != generation_) return;
                               if (ec)
                                   onReadError(false);
                               else
                                   onReadableTls();
                           });
        return;
    }
    readAsked_ = kReadBuffer - readEnd_;
    socket_.async_read_some(asio::buffer(readBuf_.get() + readEnd_, readAsked_),
                            [this, gen = generation_](const boost::system::error_code& ec, std::size_t n) {
                                if (gen != generation_) return;
                                onRead(ec, n);
                            });
}

void Connection::onRead(const boost::system::error_code& ec, std::size_t n) {
    if (ec) {
        onReadError(ec == asio::error::eof);
        return;
    }
    const bool drained = n < readAsked_;
    const std::uint64_t gen = generation_;
    if (!onData(n) || gen != generation_) return; // the connection was closed
    // A short read that ended between responses drained the socket: the next read waits for the
    // server without a recv that would fail with EAGAIN (io/drained.h), a syscall per response
    // saved on the client side. Not in the middle of a response: the server may close right after
    // these bytes (a close-delimited body), and a FIN that came with them raises no new edge.
    if (drained && !parser_.started()) io::markDrained(socket_);
    read();
    handler_.onProgress();
}

void Connection::onReadableTls() {
    const std::uint64_t gen = generation_;
    for (;;) {
        const auto r = io::transportRead(socket_.native_handle(), ssl_, readBuf_.get() + readEnd_,
                                         kReadBuffer - readEnd_);
        if (r.status == io::IoStatus::Ok) {
            if (!onData(r.n) || gen != generation_) return;
            continue;
        }
        if (r.status == io::IoStatus::WantRead) break;
        if (r.status == io::IoStatus::WantWrite) {
            socket_.async_wait(tcp::socket::wait_write, [this, gen](const boost::system::error_code& ec) {
                if (gen != generation_) return;
                if (ec)
                    onReadError(false);
                else
                    onReadableTls();
            });
            handler_.onProgress();
            return;
        }
        onReadError(r.status == io::IoStatus::Eof);
        return;
    }
    read();
    handler_.onProgress();
}

void Connection::onReadError(bool eof) {
    // EOF completes a close-delimited body; anything else outstanding was lost.
    if (eof && !session_ && inFlight_ && parser_.started() && parser_.completesAtEof()) completeHttp1();
    closedByServer();
}

// The server closed (or will close) the connection: what is still in flight failed.
void Connection::closedByServer() {
    if (inFlight_) {
        fail(Failure::Reset);
        return;
    }
    close();
    handler_.onClosed();
}

// `n` more bytes in the read buffer: parses them. False if the connection was closed meanwhile.
bool Connection::onData(std::size_t n) {
    counters_.bytesRead += n;
    readEnd_ += n;
    if (session_) return processH2();
    if (!processHttp1()) return false;
    if (readBegin_ == readEnd_) {
        readBegin_ = readEnd_ = 0;
    } else if (readEnd_ == kReadBuffer) {
        if (readBegin_ == 0) { // a head larger than the buffer
            fail(Failure::Protocol);
            return false;
        }
        std::memmove(readBuf_.get(), readBuf_.get() + readBegin_, readEnd_ - readBegin_);
        readEnd_ -= readBegin_;
        readBegin_ = 0;
    }
    return true;
}

bool Connection::processH2() {
    const ssize_t rv = nghttp2_session_mem_recv(
        session_, reinterpret_cast<const std::uint8_t*>(readBuf_.get()) + readBegin_, readEnd_ - readBegin_);
    readBegin_ = readEnd_ = 0;
    if (rv < 0) {
        fail(Failure::Protocol);
        return false;
    }
    if (!nghttp2_session_want_read(session_) && !nghttp2_session_want_write(session_)) { // GOAWAY handled
        closedByServer();
        return false;
    }
    return true;
}

// HTTP/1.1: every complete response in the buffer, in send order. False if the connection was
// closed meanwhile.
bool Connection::processHttp1() {
    while (readBegin_ < readEnd_) {
        if (!inFlight_) {
            fail(Failure::Protocol); // bytes nobody asked for
            return false;
        }
        if (!parser_.started()) parser_.begin(slots_[ringHead_].request->head);
        std::size_t used = 0;
        const auto st = parser_.parse(readBuf_.get() + readBegin_, readEnd_ - readBegin_, used);
        readBegin_ += used;
        if (st == ResponseParser::Status::NeedMore) break;
        if (st == ResponseParser::Status::Error) {
            fail(Failure::Protocol);
            return false;
        }
        const bool keepAlive = parser_.keepAlive(); // completeHttp1() resets the parser
        completeHttp1();
        if (!keepAlive) { // the server will not answer the rest
            closedByServer();
            return false;
        }
    }
    return true;
}

// HTTP/1.1: the oldest request's response is complete.
void Connection::completeHttp1() {
    const auto slot = static_cast<std::uint32_t>(ringHead_);
    ringHead_ = (ringHead_ + 1) % slots_.size();
    --inFlight_;
    const int status = parser_.status();
    parser_ = ResponseParser{};
    handler_.onResponse(slot, status);
}

void Connection::fail(Failure why) {
    // Slots are reported after the state is reset, so the owner sees a closed connection.
    const bool wasOpen = state_ == State::Open;
    std::uint32_t pending[kMaxDepth];
    std::size_t n = 0;
    forEachInFlight([&](std::uint32_t slot) { pending[n++] = slot; });
    close();
    for (std::size_t i = 0; i < n; ++i)
        handler_.onFailed(pending[i], why);
    if (wasOpen) handler_.onClosed();
}

// Frees the TLS and HTTP/2 state of the current socket (not the socket itself).
void Connection::release() {
    if (session_) {
        nghttp2_session_del(session_);
        session_ = nullptr;
        for (auto& s : slots_)
            s.active = false;
        free_.clear();
    }
    if (ssl_) {
        SSL_free(ssl_);
        ssl_ = nullptr;
    }
}

void Connection::close() {
    boost::system::error_code ec;
    release();
    if (socket_.is_open()) socket_.close(ec);
    ++generation_;
    state_ = State::Idle;
    ringHead_ = inFlight_ = 0;
    readBegin_ = readEnd_ = 0;
    writeBuf_.clear();
    written_ = 0;
    writeWaiting_ = false;
    parser_ = ResponseParser{};
}

bool Connection::send(const PreparedRequest& request, std::uint32_t& slot) {
    if (!session_) {
        slot = static_cast<std::uint32_t>((ringHead_ + inFlight_) % slots_.size());
        slots_[slot].request = &request;
        ++inFlight_;
        writeBuf_.append(request.http1);
        ++sent_;
        return true;
    }
    const std::uint32_t i = free_.back();
    auto& s = slots_[i];
    s = Slot{&request, 0, 0, true, false};
    nghttp2_data_provider body{};
    body.source.ptr = &s;
    body.read_callback = readH2Body;
    const std::int32_t id = nghttp2_submit_request(
        session_, nullptr, request.nva.data(), request.nva.size(), request.body.empty() ? nullptr : &body,
        reinterpret_cast<void*>(static_cast<std::uintptr_t>(i) + 1));
    if (id < 0) { // out of stream ids: this connection is used up
        s.active = false;
        return false;
    }
    free_.pop_back();
    ++inFlight_;
    ++sent_;
    slot = i;
    return true;
}

ssize_t Connection::readH2Body(nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t length,
                               std::uint32_t* flags, nghttp2_data_source* source, void*) {
    auto* s = static_cast<Slot*>(source->ptr);
    const std::string& b = s->request->body;
    const std::size_t n = std::min(length, b.size() - s->bodyOffset);
    std::memcpy(buf, b.data() + s->bodyOffset, n);
    s->bodyOffset += n;
    if (s->bodyOffset == b.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
}

void Connection::flush() {
    if (state_ != State::Open) return;
    if (session_) {
        for (;;) {
            const std::uint8_t* data = nullptr;
            const ssize_t n = nghttp2_session_mem_send(session_, &data);
            if (n < 0) {
                fail(Failure::Protocol);
                return;
            }
            if (n == 0) break;
            writeBuf_.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
        }
    }
    if (writeWaiting_) return;
    const int fd = socket_.native_handle();
    while (written_ < writeBuf_.size()) {
        const auto r = io::transportWrite(fd, ssl_, writeBuf_.data() + written_, writeBuf_.size() - written_);
        if (r.status == io::IoStatus::Ok) {
            written_ += r.n;
            counters_.bytesWritten += r.n;
            continue;
        }
        if (r.status == io::IoStatus::WantRead || r.status == io::IoStatus::WantWrite) {
            writeWaiting_ = true;
            socket_.async_wait(r.status == io::IoStatus::WantRead ? tcp::socket::wait_read
                                                                  : tcp::socket::wait_write,
                               [this, gen = generation_](const boost::system::error_code& ec) {
                                   if (gen != generation_) return;
                                   writeWaiting_ = false;
                                   if (!ec) flush();
                               });
            return;
        }
        fail(Failure::Reset);
        return;
    }
    writeBuf_.clear();
    written_ = 0;
}

// ---- nghttp2 callbacks: they only update the slots and report; the session is never closed
// from inside one ----

Connection::Slot* Connection::slotOf(std::int32_t streamId, std::uint32_t* index) {
    void* d = nghttp2_session_get_stream_user_data(session_, streamId);
    if (!d) return nullptr;
    const auto i = reinterpret_cast<std::uintptr_t>(d) - 1;
    if (i >= slots_.size() || !slots_[i].active) return nullptr;
    if (index) *index = static_cast<std::uint32_t>(i);
    return &slots_[i];
}

int Connection::onH2Header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                           std::size_t namelen, const std::uint8_t* value, std::size_t valuelen, std::uint8_t,
                           void* user) {
    if (frame->hd.type != NGHTTP2_HEADERS || namelen != 7 || std::memcmp(name, ":status", 7) != 0) return 0;
    auto* s = static_cast<Connection*>(user)->slotOf(frame->hd.stream_id);
    if (!s) return 0;
    int status = 0;
    for (std::size_t i = 0; i < valuelen && i < 3; ++i)
        status = status * 10 + (value[i] - '0');
    s->status = valuelen == 3 && status >= 100 && status <= 599 ? status : 0;
    return 0;
}

int Connection::onH2FrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    if ((frame->hd.type == NGHTTP2_DATA || frame->hd.type == NGHTTP2_HEADERS) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        if (auto* s = static_cast<Connection*>(user)->slotOf(frame->hd.stream_id)) s->ended = true;
    return 0;
}

int Connection::onH2StreamClose(nghttp2_session*, std::int32_t id, std::uint32_t errorCode, void* user) {
    auto* c = static_cast<Connection*>(user);
    std::uint32_t i = 0;
    Slot* s = c->slotOf(id, &i);
    if (!s) return 0;
    s->active = false;
    c->free_.push_back(i);
    --c->inFlight_;
    if (errorCode == NGHTTP2_NO_ERROR && s->ended && s->status >= 200) {
        c->handler_.onResponse(i, s->status);
        return 0;
    }
    const bool protocol = errorCode == NGHTTP2_NO_ERROR || errorCode == NGHTTP2_PROTOCOL_ERROR ||
                          errorCode == NGHTTP2_FLOW_CONTROL_ERROR || errorCode == NGHTTP2_COMPRESSION_ERROR ||
                          errorCode == NGHTTP2_FRAME_SIZE_ERROR;
    c->handler_.onFailed(i, protocol ? Failure::Protocol : Failure::Reset);
    return 0;
}

} // namespace portico::client
