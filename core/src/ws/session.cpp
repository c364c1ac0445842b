// WebSocket session: frame parsing and validation (RFC 6455 §5, §7, §8), permessage-deflate
// (RFC 7692), heartbeat, closing handshake, and the echo / room / live-reload behaviours.
#include "ws/session.h"

#include "io/transport.h"
#include "ws/codec.h"

#include <boost/asio/post.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <sys/socket.h>

namespace portico::ws {
namespace asio = boost::asio;

namespace {
constexpr std::size_t kCompressMin = 128;       // smaller messages are sent uncompressed
constexpr std::size_t kOutPause = 1 << 20;      // stop reading while this much output waits
constexpr std::size_t kOutSlowLimit = 16 << 20; // a member this far behind its room is dropped
constexpr std::size_t kKeepOutCapacity = 256 * 1024;
constexpr std::uint64_t kDeflateSlack = 4096;     // compressed payload may exceed the limit by this
constexpr auto kLinger = std::chrono::seconds(2); // closing handshake / lingering close bound
constexpr int kReadsPerTurn = 8;

inline std::uint16_t be16(const unsigned char* p) { return static_cast<std::uint16_t>((p[0] << 8) | p[1]); }
} // namespace

void startSession(io::SessionHost& worker, io::Socket socket, SSL* ssl, std::unique_ptr<Accepted> accepted,
                  std::string_view handshake, std::string_view received) {
    auto s = std::make_shared<WsSession>(worker, std::move(socket), ssl, std::move(accepted));
    s->start(handshake, received);
}

WsSession::WsSession(io::SessionHost& worker, Socket socket, SSL* ssl, std::unique_ptr<Accepted> accepted)
    : worker_(worker), socket_(std::move(socket)), ssl_(ssl), accepted_(std::move(accepted)),
      cap_(std::move(accepted_->capture)), action_(*accepted_->action), hub_(accepted_->hub) {
    worker_.link(this);
    id_ = hub_->nextSessionId();
    hub_->open.fetch_add(1, std::memory_order_relaxed);
    hub_->accepted.fetch_add(1, std::memory_order_relaxed);
    lastInput_ = Clock::now();
}

WsSession::~WsSession() {
    leaveRoom();
    captureClosed(false); // only if abort() did not run
    flushCounters();
    worker_.unlink(this);
    if (ssl_) SSL_free(ssl_);
    worker_.buffers().release(in_);
    hub_->open.fetch_sub(1, std::memory_order_relaxed);
}

void WsSession::start(std::string_view handshake, std::string_view received) {
    out_.append(handshake);
    if (accepted_->liveReload || action_.mode == config::WebSocketAction::Mode::Room) {
        room_ = hub_->join(accepted_->route, accepted_->room, this, worker_, slot_);
    }
    if (cap_) {
        capture::wsOpened(*cap_); // the 101 is about to be written
        if (room_) captureRoomEvent("join ");
    }
    if (hub_->hooked()) {
        WsMessageEvent e;
        e.kind = WsMessageEvent::Kind::Open;
        e.connection = id_;
        e.target = accepted_->target;
        e.host = accepted_->host;
        e.subprotocol = accepted_->subprotocol;
        e.time = std::chrono::system_clock::now();
        hub_->emit(e);
        if (room_) {
            e.kind = WsMessageEvent::Kind::Join;
            e.room = room_->name;
            hub_->emit(e);
        }
    }
    if (!received.empty()) {
        in_ = worker_.buffers().acquire();
        in_.append(received);
        process();
    }
    afterInput();
}

void WsSession::afterInput() {
    if (state_ == State::Closed) return;
    flush();
    if (state_ != State::Closed) waitRead();
}

void WsSession::waitRead() {
    if (reading_ || state_ == State::Closed) return;
    if (out_.size() - outPos_ > kOutPause && state_ == State::Open) {
        paused_ = true; // resumed by flush() once the peer has taken its data
        return;
    }
    if (in_.empty()) worker_.buffers().release(in_); // idle sessions hold no buffer
    reading_ = true;
    if (io::transportPending(ssl_)) {
        asio::post(worker_.io(), [self = shared_from_this()] {
            self->reading_ = false;
            self->onReadable({});
        });
        return;
    }
    socket_.async_wait(Socket::wait_read, [self = shared_from_this()](const boost::system::error_code& ec) {
        self->reading_ = false;
        self->onReadable(ec);
    });
}

void WsSession::onReadable(const boost::system::error_code& ec) {
    if (ec || state_ == State::Closed) return;
    const int fd = socket_.native_handle();
    if (state_ == State::Closing && shutdownSent_) {
        // Lingering close: discard what the peer still sends until it closes (or time runs out).
        if (io::discardUnread(fd) == io::Linger::Wait)
            waitRead();
        else
            abort();
        return;
    }
    for (int i = 0; i < kReadsPerTurn && state_ != State::Closed; ++i) {
        if (!in_.allocated()) in_ = worker_.buffers().acquire();
        std::size_t room = 0;
        char* p = in_.readRoom(room);
        io::IoResult r = io::transportRead(fd, ssl_, p, room);
        if (r.status == io::IoStatus::Ok) {
            in_.commit(r.n);
            lastInput_ = worker_.now();
            pingSent_ = false;
            if (state_ == State::Open) process();
            if (state_ == State::Closing) in_.clear(); // nothing more is processed
            if (r.n < room) break;                     // drained the socket for now
            continue;
        }
        if (r.status == io::IoStatus::WantRead || r.status == io::IoStatus::WantWrite) break;
        // EOF or error: the peer went away (1006 on its side; nothing to send).
        abort();
        return;
    }
    afterInput();
}

void WsSession::process() {
    const std::uint64_t max = action_.maxMessageBytes;
    while (state_ == State::Open) {
        std::string_view d = in_.unread();
        if (d.size() < 2) break;
        const auto* p = reinterpret_cast<const unsigned char*>(d.data());
        const std::uint8_t b0 = p[0];
        const std::uint8_t op = b0 & 0x0f;
        const bool fin = b0 & 0x80;
        const bool rsv1 = b0 & 0x40;
        const bool control = op & 0x08;
        // §5.1: every client frame is masked. §5.2: RSV bits only with an extension that defines
        // them (RSV1 = compressed, first frame of a data message only: RFC 7692 §6).
        if (!(p[1] & 0x80)) return fail(kCloseProtocolError, "client frames must be masked");
        if (b0 & 0x30) return fail(kCloseProtocolError, "reserved bits set");
        if ((op >= 3 && op <= 7) || op >= 11) return fail(kCloseProtocolError, "reserved opcode");
        if (rsv1 && (!accepted_->deflate || control || op == 0))
            return fail(kCloseProtocolError, "RSV1 without a compressed message");
        std::uint64_t len = p[1] & 0x7f;
        std::size_t hl = 2;
        if (control) {
            // §5.5: control frames are never fragmented and carry at most 125 bytes.
            if (!fin) return fail(kCloseProtocolError, "fragmented control frame");
            if (len > 125) return fail(kCloseProtocolError, "control frame payload over 125 bytes");
        } else if (len == 126) {
            if (d.size() < 4) break;
            len = be16(p + 2);
            hl = 4;
        } else if (len == 127) {
            if (d.size() < 10) break;
            len = 0;
            for (int i = 0; i < 8; ++i)
                len = (len << 8) | p[2 + i];
            if (len >> 63) return fail(kCloseProtocolError, "frame length with the top bit set");
            hl = 10;
        }
        if (!control) {
            if (op == 0 && !inMessage_)
                return fail(kCloseProtocolError, "continuation frame without a message");
            if (op != 0 && inMessage_)
                return fail(kCloseProtocolError, "new message inside a fragmented one");
            const bool compressed = op == 0 ? msgCompressed_ : rsv1;
            const std::uint64_t before = op == 0 ? wireBytes_ : 0;
            const std::uint64_t bound = compressed ? max + kDeflateSlack : max;
            if (len > bound || before + len > bound) return fail(kCloseTooBig, "message too big");
        }
        hl += 4; // masking key
        if (d.size() < hl || d.size() - hl < len) {
            in_.ensureRoom(static_cast<std::size_t>(hl + len - d.size()));
            break;
        }
        char* payload = const_cast<char*>(d.data()) + hl;
        unmask(payload, static_cast<std::size_t>(len), p + hl - 4);
        const std::size_t total = hl + static_cast<std::size_t>(len);
        bool ok = control ? this->control(op, std::string_view(payload, static_cast<std::size_t>(len)))
                          : data(op, fin, rsv1, std::string_view(payload, static_cast<std::size_t>(len)));
        if (state_ == State::Closed) return;
        in_.consume(total);
        if (!ok) return;
    }
}

bool WsSession::control(std::uint8_t op, std::string_view payload) {
    switch (static_cast<Opcode>(op)) {
    case Opcode::Ping:
        captureMessage(true, Opcode::Ping, payload, payload.size());
        emitMessage(WsMessageEvent::Direction::In, Opcode::Ping, payload, payload.size(), false);
        send(Opcode::Pong, payload, false); // §5.5.2
        return true;
    case Opcode::Pong:
        captureMessage(true, Opcode::Pong, payload, payload.size());
        emitMessage(WsMessageEvent::Direction::In, Opcode::Pong, payload, payload.size(), false);
        return true;
    case Opcode::Close: {
        // §5.5.1: empty, or a 2-byte code plus a UTF-8 reason.
        const auto* p = reinterpret_cast<const unsigned char*>(payload.data());
        std::uint16_t code = payload.size() >= 2 ? be16(p) : 0;
        captureMessage(true, Opcode::Close, payload, payload.size());
        emitMessage(WsMessageEvent::Direction::In, Opcode::Close, payload.size() > 2 ? payload.substr(2) : "",
                    payload.size(), false, code);
        if (payload.size() == 1) {
            fail(kCloseProtocolError, "close frame with a 1-byte body");
            return false;
        }
        if (payload.size() >= 2 && !validCloseCode(code)) {
            fail(kCloseProtocolError, "reserved or invalid close code");
            return false;
        }
        if (payload.size() > 2 && !validUtf8(payload.substr(2))) {
            fail(kCloseInvalidData, "close reason is not UTF-8");
            return false;
        }
        // §5.5.1, §7.1.5: echo the code (an empty close is answered with an empty one).
        sendClose(code, {});
        return false;
    }
    default:
        return true;
    }
}

bool WsSession::data(std::uint8_t op, bool fin, bool rsv1, std::string_view payload) {
    if (op != 0) {
        msgOp_ = static_cast<Opcode>(op);
        msgCompressed_ = rsv1;
        wireBytes_ = 0;
        if (fin && !rsv1) { // the common case: one uncompressed frame, handled in place
            if (msgOp_ == Opcode::Text && !validUtf8(payload)) {
                fail(kCloseInvalidData, "text message is not UTF-8");
                return false;
            }
            onMessage(msgOp_, payload, false);
            return state_ == State::Open;
        }
        inMessage_ = true;
        msg_.clear();
        utf8_.reset();
    }
    wireBytes_ += payload.size();
    if (msgCompressed_) {
        if (!inflater_) inflater_ = std::make_unique<Inflater>(accepted_->clientNoContext);
        const std::size_t before = msg_.size();
        switch (inflater_->inflate(payload, fin, msg_, action_.maxMessageBytes)) {
        case Inflater::Result::TooBig:
            fail(kCloseTooBig, "message too big");
            return false;
        case Inflater::Result::Error:
            fail(kCloseInvalidData, "invalid compressed data");
            return false;
        case Inflater::Result::Ok:
            break;
        }
        if (msgOp_ == Opcode::Text && !utf8_.feed(std::string_view(msg_).substr(before))) {
            fail(kCloseInvalidData, "text message is not UTF-8");
            return false;
        }
    } else {
        // §8.1: checked per fragment, so a bad byte fails the connection without waiting for FIN.
        if (msgOp_ == Opcode::Text && !utf8_.feed(payload)) {
            fail(kCloseInvalidData, "text message is not UTF-8");
            return false;
        }
        msg_.append(payload);
    }
    if (!fin) return true;
    inMessage_ = false;
    if (msgOp_ == Opcode::Text && !utf8_.complete()) {
        fail(kCloseInvalidData, "text message ends inside a UTF-8 sequence");
        return false;
    }
    onMessage(msgOp_, msg_, msgCompressed_);
    if (msg_.capacity() > 64 * 1024) std::string().swap(msg_);
    return state_ == State::Open;
}

void WsSession::onMessage(Opcode op, std::string_view payload, bool compressed) {
    ++countIn_;
    captureMessage(true, op, payload, payload.size(), compressed);
    emitMessage(WsMessageEvent::Direction::In, op, payload, payload.size(), compressed);
    if (accepted_->liveReload) return; // the page has nothing to tell us
    if (action_.mode == config::WebSocketAction::Mode::Echo) {
        send(op, payload, true);
        return;
    }
    room_->messages.fetch_add(1, std::memory_order_relaxed);
    auto f = makeSharedFrame(op, payload, kCompressMin);
    hub_->broadcast(room_, slot_, this, f);
}

void WsSession::send(Opcode op, std::string_view payload, bool mayCompress) {
    char head[kMaxServerHeader];
    bool z = mayCompress && accepted_->deflate && payload.size() >= kCompressMin;
    if (z) {
        zbuf_.clear();
        z = Deflater::local(accepted_->serverWindowBits).compress(payload, zbuf_) &&
            zbuf_.size() < payload.size();
    }
    std::string_view body = z ? std::string_view(zbuf_) : payload;
    const std::size_t hl = writeHeader(head, op, body.size(), z);
    out_.append(head, hl);
    out_.append(body);
    if (op == Opcode::Text || op == Opcode::Binary) ++countOut_;
    captureMessage(false, op, payload, payload.size(), z);
    emitMessage(WsMessageEvent::Direction::Out, op, payload, payload.size(), z);
}

void WsSession::sendClose(std::uint16_t code, std::string_view reason) {
    if (state_ != State::Open) return;
    char body[125];
    std::size_t n = 0;
    if (code) {
        body[0] = static_cast<char>(code >> 8);
        body[1] = static_cast<char>(code);
        n = 2 + std::min<std::size_t>(reason.size(), 123);
        if (n > 2) std::memcpy(body + 2, reason.data(), n - 2); // reason.data() may be null when empty
    }
    char head[kMaxServerHeader];
    out_.append(head, writeHeader(head, Opcode::Close, n));
    out_.append(body, n);
    closeCode_ = code;
    state_ = State::Closing;
    inMessage_ = false;
    lingerUntil_ = Clock::now() + kLinger;
    captureMessage(false, Opcode::Close, std::string_view(body, n), n);
    emitMessage(WsMessageEvent::Direction::Out, Opcode::Close, std::string_view(body, n).substr(n ? 2 : 0), n,
                false, code);
    leaveRoom(); // a closing session takes no more room traffic
}

void WsSession::fail(std::uint16_t code, std::string_view reason) {
    // §7.1.7: fail = send a Close frame with the reason code, then close the connection.
    sendClose(code, reason);
}

bool WsSession::deliver(const SharedFrame& f) {
    if (state_ != State::Open) return false;
    const bool z = accepted_->deflate && accepted_->serverWindowBits == 15 && !f.deflated.empty();
    out_.append(z ? f.deflated : f.plain);
    ++countOut_;
    // The payload is the tail of the shared frame (its header is 2..10 bytes).
    if (cap_ && f.plain.size() >= f.size)
        captureMessage(false, f.opcode, std::string_view(f.plain).substr(f.plain.size() - f.size), f.size, z);
    if (hub_->hooked()) emitMessage(WsMessageEvent::Direction::Out, f.opcode, f.prefix, f.size, z);
    if (out_.size() - outPos_ > kOutSlowLimit) {
        asio::post(worker_.io(), [self = shared_from_this()] {
            if (self->state_ == State::Open) {
                self->fail(kClosePolicy, "too slow to take the room's messages");
                self->flush();
            }
        });
        return true;
    }
    scheduleFlush();
    return true;
}

void WsSession::scheduleFlush() {
    if (flushPosted_ || writing_) return;
    flushPosted_ = true;
    asio::post(worker_.io(), [self = shared_from_this()] {
        self->flushPosted_ = false;
        if (self->state_ != State::Closed) self->flush();
    });
}

void WsSession::flush() {
    const int fd = socket_.native_handle();
    while (outPos_ < out_.size()) {
        io::IoResult r = io::transportWrite(fd, ssl_, out_.data() + outPos_, out_.size() - outPos_);
        if (r.status == io::IoStatus::Ok) {
            outPos_ += r.n;
            continue;
        }
        if (r.status == io::IoStatus::WantWrite || r.status == io::IoStatus::WantRead) {
            if (!writing_) {
                writing_ = true;
                writeSince_ = Clock::now();
                socket_.async_wait(Socket::wait_write,
                                   [self = shared_from_this()](const boost::system::error_code& ec) {
                                       self->writing_ = false;
                                       if (ec || self->state_ == State::Closed) return;
                                       self->flush();
                                   });
            }
            return;
        }
        abort();
        return;
    }
    out_.clear();
    outPos_ = 0;
    if (out_.capacity() > kKeepOutCapacity) std::string().swap(out_);
    if (state_ == State::Closing && !shutdownSent_) {
        lingerOrClose();
        return;
    }
    if (paused_) {
        paused_ = false;
        waitRead();
    }
}

void WsSession::lingerOrClose() {
    // The Close frame is out: we close the TCP connection first (§7.1.1), half-closing and reading
    // until the peer's FIN so our Close is not lost to a reset.
    shutdownSent_ = true;
    if (ssl_) {
        SSL_shutdown(ssl_);
        ERR_clear_error();
    }
    ::shutdown(socket_.native_handle(), SHUT_WR);
    lingerUntil_ = Clock::now() + kLinger;
    worker_.buffers().release(in_);
    waitRead();
}

void WsSession::leaveRoom() {
    if (!room_) return;
    captureRoomEvent("leave ");
    if (hub_->hooked()) {
        WsMessageEvent e;
        e.kind = WsMessageEvent::Kind::Leave;
        e.connection = id_;
        e.room = room_->name;
        e.time = std::chrono::system_clock::now();
        hub_->emit(e);
    }
    hub_->leave(room_, slot_, this);
    room_.reset();
    slot_ = nullptr;
}

void WsSession::flushCounters() {
    if (countIn_) hub_->messagesIn.fetch_add(countIn_, std::memory_order_relaxed);
    if (countOut_) hub_->messagesOut.fetch_add(countOut_, std::memory_order_relaxed);
    countIn_ = countOut_ = 0;
}

void WsSession::emitMessage(WsMessageEvent::Direction dir, Opcode op, std::string_view payload,
                            std::uint64_t size, bool compressed, std::uint16_t closeCode) {
    if (!hub_->hooked()) return;
    WsMessageEvent e;
    e.kind = WsMessageEvent::Kind::Message;
    e.direction = dir;
    e.connection = id_;
    e.opcode = op;
    e.size = size;
    e.prefix = payload.substr(0, WsMessageEvent::kPrefixBytes);
    e.compressed = compressed;
    e.closeCode = closeCode;
    if (room_) e.room = room_->name;
    e.time = std::chrono::system_clock::now();
    hub_->emit(e);
}

void WsSession::checkDeadline(Clock::time_point now) {
    if (state_ == State::Closed) return;
    flushCounters();
    if (state_ == State::Closing) {
        if (now > lingerUntil_) abort();
        return;
    }
    if (writing_ && now - writeSince_ > accepted_->config->limits.writeTimeout) {
        abort();
        return;
    }
    const auto idle = now - lastInput_;
    if (ssl_ && !writing_ && idle > io::kReleaseIdleAfter) io::transportReleaseIdleBuffers(ssl_);
    if (idle > action_.idleTimeout) {
        fail(kCloseGoingAway, "idle timeout");
        flush();
        return;
    }
    if (action_.pingInterval.count() > 0 && idle > action_.pingInterval && !pingSent_) {
        pingSent_ = true;
        send(Opcode::Ping, "portico", false);
        flush();
    }
}

void WsSession::onDrain() {
    if (state_ != State::Open) return;
    sendClose(kCloseGoingAway, "server stopping");
    flush();
}

void WsSession::abort() {
    if (state_ == State::Closed) return;
    const bool clean = state_ == State::Closing; // the closing handshake began (§7.1.2)
    state_ = State::Closed;
    leaveRoom();
    flushCounters();
    boost::system::error_code ec;
    socket_.cancel(ec);
    socket_.close(ec);
    if (hub_->hooked()) {
        WsMessageEvent e;
        e.kind = WsMessageEvent::Kind::Closed;
        e.connection = id_;
        e.closeCode = closeCode_;
        e.time = std::chrono::system_clock::now();
        hub_->emit(e);
    }
    captureClosed(clean);
}

void WsSession::captureRoomEvent(std::string_view what) {
    if (!cap_ || !room_) return;
    std::string text(what);
    text += room_->name;
    capture::wsMessage(*cap_, false, capture::kRoomEventOpcode, text, text.size());
}

void WsSession::captureClosed(bool clean) {
    if (!cap_) return;
    capture::wsClosed(*cap_,
                      clean ? std::string_view() : std::string_view("closed without a closing handshake"));
    cap_.reset();
}

} // namespace portico::ws
