// The pipelined/multiplexed client connection (connection.h). TLS runs on the socket itself
// (SSL_set_fd, like the server's transport); HTTP/2 is the client codec (h2_client_codec.h) fed
// whole frames from the read buffer, writing into the write buffer.
#include "client/connection.h"

#include "io/drained.h"
#include "io/tls_handshake.h"
#include "io/transport.h"
#include "tls/alpn.h"

#include <openssl/err.h>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
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
      slots_(settings.h2 ? 0 : std::clamp(depth, 1u, kMaxDepth)), readBuf_(new char[kReadBuffer]) {
    if (settings.h2)
        h2_ = std::make_unique<H2ClientCodec>(static_cast<H2ClientEvents&>(*this),
                                              std::clamp(depth, 1u, kMaxDepth), settings.h2Settings);
    if (h2_) h2_->askResponseHeads(settings.keepResponseHeads);
    writeBuf_.reserve(std::clamp(depth, 1u, kMaxDepth) * 512);
    firstByte_.assign(std::clamp(depth, 1u, kMaxDepth), 0);
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
        if (!settings_.tunnel.empty())
            startTunnel();
        else
            connected();
    });
}

// TCP (and the proxy's tunnel, if any) is up: TLS next, or the connection is open.
void Connection::connected() {
    if (settings_.ssl)
        startTls();
    else
        opened();
}

// Through a forward proxy: CONNECT, then its answer's head (RFC 9110 §9.3.6).
void Connection::startTunnel() {
    asio::async_write(socket_, asio::buffer(settings_.tunnel),
                      [this, gen = generation_](const boost::system::error_code& e, std::size_t) {
                          if (gen != generation_) return;
                          if (e) {
                              connectFailed();
                              return;
                          }
                          readEnd_ = 0;
                          readTunnelAnswer();
                      });
}

void Connection::readTunnelAnswer() {
    constexpr std::size_t kMaxHead = 16 * 1024;
    socket_.async_read_some(asio::buffer(readBuf_.get() + readEnd_, kMaxHead - readEnd_),
                            [this, gen = generation_](const boost::system::error_code& e, std::size_t n) {
                                if (gen != generation_) return;
                                if (e) {
                                    connectFailed();
                                    return;
                                }
                                readEnd_ += n;
                                const std::string_view got(readBuf_.get(), readEnd_);
                                const auto end = got.find("\r\n\r\n");
                                if (end == std::string_view::npos) {
                                    if (readEnd_ == kMaxHead)
                                        connectFailed();
                                    else
                                        readTunnelAnswer();
                                    return;
                                }
                                // "HTTP/1.x 2xx ...": the tunnel is open. The server behind it has not been
                                // spoken to, so nothing may follow the head.
                                const bool open = got.size() >= 12 && got.starts_with("HTTP/1.") &&
                                                  got[9] == '2' && end + 4 == got.size();
                                readBegin_ = readEnd_ = 0;
                                if (!open) {
                                    connectFailed();
                                    return;
                                }
                                connected();
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

void Connection::opened() {
    if (h2_ && !h2_->start(writeBuf_)) { // out of memory: a connection that failed
        connectFailed();
        return;
    }
    boost::system::error_code ec;
    const auto local = socket_.local_endpoint(ec); // once per opening: no syscall per request
    localPort_ = ec ? 0 : local.port();
    sent_ = 0;
    if (!requestIdBase_.empty()) {
        requestIdPrefix_ = requestIdBase_ + std::to_string(localPort_) + '.';
        if (h2_) h2_->setRequestIdPrefix(requestIdPrefix_);
    }
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
    // HTTP/2: not with a frame cut short in the buffer, nor after GOAWAY (the server closes next).
    if (drained && !parser_.started() && readBegin_ == readEnd_ && !draining()) io::markDrained(socket_);
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
    readNs_ = 0; // a response the close completes: the time now
    // EOF completes a close-delimited body; anything else outstanding was lost.
    if (eof && !h2_ && inFlight_ && parser_.started() && parser_.completesAtEof())
        completeHttp1(true); // its head came in a read before
    closedByServer();
}

// The server closed (or will close) the connection: what is still in flight failed.
void Connection::closedByServer() {
    if (inFlight()) {
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
    readNs_ = 0;
    if (h2_ ? !processH2() : !processHttp1()) return false;
    // HTTP/1.1: a response begun and not ended in this read gets the read's time as its first byte.
    if (!h2_ && parser_.started() && inFlight_ && !firstByte_[ringHead_]) firstByte_[ringHead_] = readTime();
    if (readBegin_ == readEnd_) {
        readBegin_ = readEnd_ = 0;
    } else if (readEnd_ == kReadBuffer) {
        if (readBegin_ == 0) { // a head larger than the buffer (HTTP/2: the codec takes 16,393 bytes)
            fail(Failure::Protocol);
            return false;
        }
        std::memmove(readBuf_.get(), readBuf_.get() + readBegin_, readEnd_ - readBegin_);
        readEnd_ -= readBegin_;
        readBegin_ = 0;
    }
    return true;
}

// HTTP/2: every complete frame in the buffer (a cut one stays). False if the connection was closed.
bool Connection::processH2() {
    std::size_t used = 0;
    const std::uint64_t gen = generation_;
    const auto verdict = h2_->receive(reinterpret_cast<const std::uint8_t*>(readBuf_.get()) + readBegin_,
                                      readEnd_ - readBegin_, used, writeBuf_);
    readBegin_ += used;
    if (gen != generation_) return false;
    // Responses whose first HEADERS came in this read and that are still open: the read's time.
    if (!h2_->begunThisRead().empty()) {
        const std::int64_t now = readTime();
        for (const std::uint32_t slot : h2_->begunThisRead())
            if (h2_->inFlight(slot) && !firstByte_[slot]) firstByte_[slot] = now;
    }
    if (verdict == H2ClientCodec::Verdict::Error) {
        flush(); // the GOAWAY, as far as the socket takes it now
        if (gen == generation_) fail(Failure::Protocol);
        return false;
    }
    if (verdict == H2ClientCodec::Verdict::Closed) {
        flush();
        if (gen == generation_) closedByServer();
        return false;
    }
    return true;
}

void Connection::onStreamResponse(std::uint32_t slot, int status) {
    if (!heldCount_) [[likely]] {
        handler_.onResponse(slot, status);
        return;
    }
    respondHeld(slot, status);
}

// A response while some heads are held (HTTP/2): with its fields if it is one of them.
void Connection::respondHeld(std::uint32_t slot, int status) {
    std::string* head = held(slot);
    if (!head) {
        handler_.onResponse(slot, status);
        return;
    }
    fields_ = *head;
    handler_.onResponse(slot, status);
    fields_.reset();
    dropHeld(slot);
}

void Connection::onStreamFailed(std::uint32_t slot, Failure why) {
    if (heldCount_) dropHeld(slot);
    handler_.onFailed(slot, why);
}

// Asked by the codec only with keepResponseHeads (H2ClientCodec::askResponseHeads), once per
// response: a plain forward; the held entry is made at the head's first field.
bool Connection::holdResponseHead(std::uint32_t slot) { return handler_.holdResponseHead(slot); }

void Connection::onResponseField(std::uint32_t slot, std::string_view name, std::string_view value) {
    std::string* head = held(slot);
    if (!head) head = newHeld(slot);
    head->append(name).append(": ").append(value).append("\r\n");
}

std::string* Connection::held(std::uint32_t slot) {
    for (auto& [s, head] : held_)
        if (s == slot) return &head;
    return nullptr;
}

// An entry for `slot`: a free one (its string keeps its capacity: nothing allocated once the
// entries are as many and as long as needed), else a new one.
std::string* Connection::newHeld(std::uint32_t slot) {
    ++heldCount_;
    for (auto& [s, head] : held_)
        if (s == kFreeHeld) {
            s = slot;
            head.clear();
            return &head;
        }
    return &held_.emplace_back(slot, std::string()).second;
}

void Connection::dropHeld(std::uint32_t slot) {
    for (auto& [s, head] : held_)
        if (s == slot) {
            s = kFreeHeld;
            --heldCount_;
            return;
        }
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
        const bool headEarlier = parser_.headDone(); // in an earlier read: its bytes may be gone
        std::size_t used = 0;
        const auto st = parser_.parse(readBuf_.get() + readBegin_, readEnd_ - readBegin_, used);
        readBegin_ += used;
        if (st == ResponseParser::Status::NeedMore) {
            // The body goes on in later reads, which may reuse the head's bytes: a copy.
            if (settings_.keepResponseHeads && !headEarlier && parser_.headDone())
                h1Head_.assign(parser_.head().fields);
            break;
        }
        if (st == ResponseParser::Status::Error) {
            fail(Failure::Protocol);
            return false;
        }
        const bool keepAlive = parser_.keepAlive(); // completeHttp1() resets the parser
        completeHttp1(headEarlier);
        if (!keepAlive) { // the server will not answer the rest
            closedByServer();
            return false;
        }
    }
    return true;
}

// HTTP/1.1: the oldest request's response is complete.
// `headHeld`: its head came in an earlier read (copied to h1Head_ when heads are kept); else the
// head's bytes are still in the read buffer. fields_ is left as it is after the call (read only
// inside onResponse), so that the call is the last thing done.
void Connection::completeHttp1(bool headHeld) {
    const auto slot = static_cast<std::uint32_t>(ringHead_);
    ringHead_ = (ringHead_ + 1) % slots_.size();
    --inFlight_;
    const int status = parser_.status();
    if (settings_.keepResponseHeads) fields_ = headHeld ? std::string_view(h1Head_) : parser_.head().fields;
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

// Frees the TLS state of the current socket (not the socket itself; the HTTP/2 codec starts afresh
// on the next opening).
void Connection::release() {
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
    for (auto& entry : held_)
        entry.first = kFreeHeld;
    heldCount_ = 0;
}

bool Connection::send(const PreparedRequest& request, std::uint32_t& slot) {
    if (h2_) {
        if (!h2_->submit(request, slot, writeBuf_)) return false;
        firstByte_[slot] = 0;
        ++sent_;
        return true;
    }
    slot = static_cast<std::uint32_t>((ringHead_ + inFlight_) % slots_.size());
    firstByte_[slot] = 0;
    slots_[slot].request = &request;
    ++inFlight_;
    if (requestIdPrefix_.empty() || request.http1FieldsEnd == 0 ||
        request.http1FieldsEnd >= request.http1.size()) {
        writeBuf_.append(request.http1);
    } else {
        constexpr std::string_view kName = "X-Request-Id: ";
        char n[12];
        const auto end = std::to_chars(n, n + sizeof n, sent_).ptr;
        const std::size_t digits = static_cast<std::size_t>(end - n);
        // One resize and plain copies: the field goes in before the blank line.
        const std::size_t at = writeBuf_.size(), head = request.http1FieldsEnd;
        writeBuf_.resize(at + request.http1.size() + kName.size() + requestIdPrefix_.size() + digits + 2);
        char* p = writeBuf_.data() + at;
        p = std::copy_n(request.http1.data(), head, p);
        p = std::copy_n(kName.data(), kName.size(), p);
        p = std::copy_n(requestIdPrefix_.data(), requestIdPrefix_.size(), p);
        p = std::copy_n(n, digits, p);
        *p++ = '\r';
        *p++ = '\n';
        std::copy_n(request.http1.data() + head, request.http1.size() - head, p);
    }
    ++sent_;
    return true;
}

void Connection::flush() {
    if (state_ != State::Open || writeWaiting_) return;
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

} // namespace portico::client
