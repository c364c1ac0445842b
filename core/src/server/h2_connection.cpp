// HTTP/2 server connection on nghttp2 (RFC 9113): frames in through mem_recv, out through
// mem_send into one buffer that is written once per loop turn.
#include "server/h2_connection.h"
#include "server/h2_stream.h"

#include "capture/hooks.h"
#include "io/cipher_read.h"
#include "io/transport.h"
#include "proxy/forward.h"
#include "serve/serve.h"
#include "server/worker.h"
#include "tls/socket_bio.h"

#include <portico/handlers/dispatch.h>
#include <portico/http/path.h>
#include <portico/http2/session.h>

#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>

#include <boost/asio/post.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include <sys/socket.h>
#include <unistd.h>

namespace portico::server {
namespace asio = boost::asio;

namespace {
constexpr std::size_t kOutHighWater = 64 * 1024;      // stop pulling frames from nghttp2 above this
constexpr int kReadsPerTurn = 4;                      // then let other connections of the worker run
constexpr std::size_t kCipherInBytes = 2048;          // TLS input read by Asio (see waitRead)
constexpr auto kLingerTime = std::chrono::seconds(2); // lingering close after a GOAWAY, at most

H2Connection* self(void* user) { return static_cast<H2Connection*>(user); }

int onBeginFrameCb(nghttp2_session*, const nghttp2_frame_hd* hd, void* user) {
    return self(user)->onBeginFrame(hd->type);
}

int onBeginHeadersCb(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    return self(user)->onBeginHeaders(frame->hd.stream_id);
}

int onHeaderCb(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name, std::size_t namelen,
               const std::uint8_t* value, std::size_t valuelen, std::uint8_t, void* user) {
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    return self(user)->onHeader(frame->hd.stream_id, frame->headers.cat == NGHTTP2_HCAT_HEADERS,
                                {reinterpret_cast<const char*>(name), namelen},
                                {reinterpret_cast<const char*>(value), valuelen});
}

int onFrameRecvCb(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    switch (frame->hd.type) {
    case NGHTTP2_HEADERS:
        return self(user)->onHeadersEnd(frame->hd.stream_id, frame->hd.flags & NGHTTP2_FLAG_END_STREAM);
    case NGHTTP2_DATA:
        if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
            return self(user)->onRequestComplete(frame->hd.stream_id);
        return 0;
    case NGHTTP2_RST_STREAM:
        self(user)->onResetReceived(frame->hd.stream_id);
        return 0;
    default:
        return 0;
    }
}

int onDataChunkCb(nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* data, std::size_t len,
                  void* user) {
    return self(user)->onData(id, data, len);
}

int onStreamCloseCb(nghttp2_session*, std::int32_t id, std::uint32_t, void* user) {
    self(user)->onStreamClose(id);
    return 0;
}

ssize_t readBodyCb(nghttp2_session*, std::int32_t id, std::uint8_t* buf, std::size_t len,
                   std::uint32_t* flags, nghttp2_data_source*, void* user) {
    return self(user)->readBody(id, buf, len, flags);
}

// Resets the server sends because of what the client did (malformed fields, refused streams,
// flow-control errors) cost as much as the ones it receives: MadeYouReset (CVE-2025-8671) gets
// the same budget as Rapid Reset.
int onFrameSendCb(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type == NGHTTP2_RST_STREAM) self(user)->onResetSent(frame->hd.stream_id);
    if ((frame->hd.type == NGHTTP2_DATA || frame->hd.type == NGHTTP2_HEADERS) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        self(user)->onResponseEnd(frame->hd.stream_id);
    return 0;
}

// A HEADERS frame nghttp2 would not send: a response or trailer section over its
// max_send_header_block_length (64 KiB, NGHTTP2_ERR_FRAME_SIZE_ERROR) fails here, after the
// submit call succeeded, and the stream would otherwise wait for ever. A response head starts
// with :status (submit() puts it first); trailers have none.
int onFrameNotSendCb(nghttp2_session*, const nghttp2_frame* frame, int error, void* user) {
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    const nghttp2_headers& h = frame->headers;
    const bool responseHead = h.nvlen > 0 && std::string_view(reinterpret_cast<const char*>(h.nva[0].name),
                                                              h.nva[0].namelen) == ":status";
    self(user)->onHeadersNotSent(frame->hd.stream_id, responseHead, error);
    return 0;
}

void setCallbacks(nghttp2_session_callbacks* cbs) {
    nghttp2_session_callbacks_set_on_begin_frame_callback(cbs, onBeginFrameCb);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, onBeginHeadersCb);
    nghttp2_session_callbacks_set_on_header_callback(cbs, onHeaderCb);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, onFrameRecvCb);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, onDataChunkCb);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, onStreamCloseCb);
    nghttp2_session_callbacks_set_on_frame_send_callback(cbs, onFrameSendCb);
    nghttp2_session_callbacks_set_on_frame_not_send_callback(cbs, onFrameNotSendCb);
}
} // namespace

H2Connection::H2Connection(Worker& worker, Connection::Socket socket, SSL* ssl, std::uint16_t localPort,
                           std::string_view received)
    : worker_(worker), socket_(std::move(socket)), ssl_(ssl), localPort_(localPort) {
    worker_.link(this);
    bio_ = tls::socketBioState(ssl_);
    if (bio_) bio_->trackDrained = true; // reads stop at a short one; waitRead takes it from there
    in_ = worker_.buffers().acquire();
    in_.append(received);
    boost::system::error_code ec;
    auto remote = socket_.remote_endpoint(ec);
    if (!ec) clientAddress_ = remote.address().to_string();
}

void H2Connection::adoptCapture(std::unique_ptr<capture::ConnCapture> cap) { cap_ = std::move(cap); }

H2Connection::~H2Connection() {
    worker_.unlink(this);
    if (session_) nghttp2_session_del(session_);
    if (ssl_) SSL_free(ssl_);
    worker_.buffers().release(in_);
    worker_.buffers().release(out_);
}

void H2Connection::start() {
    static const http2::Callbacks callbacks(setCallbacks);
    const auto& cfg = *worker_.snapshot().config;
    const auto& h2 = cfg.http2;
    http2::SessionSettings settings;
    settings.side = http2::Side::Server;
    settings.maxConcurrentStreams = h2.maxConcurrentStreams;
    settings.streamWindowBytes = h2.initialWindowBytes;
    settings.connectionWindowBytes = h2.connectionWindowBytes;
    settings.maxHeaderListBytes =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(cfg.limits.maxHeaderBytes, 0xffffffffu));
    // RFC 9218 priorities (the `priority` field) instead of RFC 7540's dependency tree, which
    // RFC 9113 §5.3 deprecates: nghttp2 then keeps no tree and no closed streams for it.
    settings.noRfc7540Priorities = true;
    // Request bodies are acknowledged (WINDOW_UPDATE) when taken: at once, or for a body that
    // streams to an HTTP/2 upstream when the upstream took it (end-to-end flow control).
    settings.manualWindowUpdates = true;
    settings.maxOutboundAck = h2.maxControlFrames;
    // Our own bounds (onBeginFrame) trip first and answer ENHANCE_YOUR_CALM; nghttp2's stay as a
    // backstop at twice the figure.
    settings.resetBurst = h2.resetBurst * 2;
    settings.resetRatePerSecond = h2.resetRate * 2;
    settings.maxContinuations = static_cast<std::uint32_t>(h2.maxContinuations * 2 + 1);
    resetTokens_ = static_cast<double>(h2.resetBurst);
    resetRefill_ = Clock::now();
    controlTokens_ = static_cast<double>(h2.maxControlFrames);
    controlRefill_ = resetRefill_;
    std::string why;
    session_ = http2::makeSession(callbacks, this, settings, why).release();
    if (!session_) {
        abort();
        return;
    }
    deadline_ = Clock::now() + cfg.limits.headerTimeout;
    // Bytes the HTTP/1.1 side read before it saw the preface.
    if (!in_.empty()) {
        std::string_view d = in_.unread();
        ssize_t n = feed(reinterpret_cast<const std::uint8_t*>(d.data()), d.size());
        in_.clear();
        if (n < 0) {
            endSession(n);
            return;
        }
    }
    flush();
    if (!closed_) waitRead();
}

void H2Connection::waitRead() {
    if (closed_ || reading_) return;
    if (lingering_) {
        discard();
        return;
    }
    reading_ = true;
    if (io::transportPending(ssl_)) {
        // Input is still buffered: take it on the next turn. What the socket held at the last
        // read is not known any more then (bytes may arrive, and their epoll edge pass, before it),
        // so the next read of the socket must not be skipped as drained.
        if (bio_) bio_->drained = false;
        asio::post(worker_.io(), [s = shared_from_this()] {
            s->reading_ = false;
            s->onReadable();
        });
        return;
    }
    if (bio_) { // TLS: one recv per turn (io/cipher_read.h)
        if (!cipherIn_) cipherIn_ = std::make_unique<char[]>(kCipherInBytes);
        io::asyncReadCiphertext(socket_, *bio_, cipherIn_.get(), kCipherInBytes,
                                [s = shared_from_this()](const boost::system::error_code& ec) {
                                    s->reading_ = false;
                                    if (s->closed_) return;
                                    if (ec) { // the client closed or reset: as a failed TLS read would
                                        if (ec != asio::error::operation_aborted) s->abort();
                                        return;
                                    }
                                    s->onReadable();
                                });
        return;
    }
    socket_.async_wait(Connection::Socket::wait_read,
                       [s = shared_from_this()](const boost::system::error_code& ec) {
                           s->reading_ = false;
                           if (ec || s->closed_) return;
                           s->onReadable();
                       });
}

void H2Connection::onReadable() {
    if (closed_) return;
    if (lingering_) { // a TLS read that was pending when the lingering began
        discard();
        return;
    }
    worker_.refreshSnapshot(); // an event entering the worker (see Worker::refreshSnapshot)
    if (!in_.allocated()) in_ = worker_.buffers().acquire();
    worker_.beginTurn(); // the requests read in this turn of the event loop share file lookups
    for (int i = 0; i < kReadsPerTurn; ++i) {
        std::size_t room = 0;
        char* p = in_.writable(room);
        io::IoResult r = io::transportRead(socket_.native_handle(), ssl_, p, room);
        if (r.status == io::IoStatus::WantRead) break;
        if (r.status != io::IoStatus::Ok) {
            abort();
            return;
        }
        ssize_t n = feed(reinterpret_cast<const std::uint8_t*>(p), r.n);
        if (n < 0) {
            endSession(n);
            return;
        }
        if (closed_) return;
    }
    worker_.buffers().release(in_); // idle HTTP/2 connections hold no read buffer
    flush();
    waitRead();
}

void H2Connection::endSession(ssize_t error) {
    // Bad frames, flooding (NGHTTP2_ERR_FLOODED), abuse seen by onBeginFrame, RFC 9113 violations
    // seen by feed(): a GOAWAY is queued (the first one queued wins); send what is queued, then close.
    if (error == NGHTTP2_ERR_FLOODED) worker_.counters().h2Abuse.fetch_add(1, std::memory_order_relaxed);
    nghttp2_session_terminate_session(session_, error == NGHTTP2_ERR_FLOODED ? NGHTTP2_ENHANCE_YOUR_CALM
                                                                             : NGHTTP2_PROTOCOL_ERROR);
    flush(); // → closeIfDone → lingerThenClose once the GOAWAY is out
    if (!lingering_ && !writing_) abort();
}

void H2Connection::lingerThenClose() {
    // After the GOAWAY: half-close and discard what the client still sends for a moment (RFC 9113
    // §6.8; the lingering close of RFC 9112 §9.6). Closing with unread bytes makes the kernel
    // send a reset, and a reset can destroy the GOAWAY before the client has read it.
    if (closed_ || lingering_) return;
    lingering_ = true;
    worker_.buffers().release(in_);
    worker_.buffers().release(out_);
    ::shutdown(socket_.native_handle(), SHUT_WR);
    deadline_ = Clock::now() + kLingerTime;
    if (!reading_) discard();
}

void H2Connection::discard() {
    if (closed_) return;
    if (io::discardUnread(socket_.native_handle()) == io::Linger::Done) {
        abort(); // the client closed (or reset): done
        return;
    }
    reading_ = true;
    socket_.async_wait(Connection::Socket::wait_read,
                       [s = shared_from_this()](const boost::system::error_code& ec) {
                           s->reading_ = false;
                           if (ec || s->closed_) return;
                           s->discard();
                       });
}

void H2Connection::flush() {
    if (closed_ || writing_ || lingering_) return;
    const int fd = socket_.native_handle();
    for (;;) {
        while (out_.size() < kOutHighWater) {
            const std::uint8_t* data = nullptr;
            ssize_t n = nghttp2_session_mem_send(session_, &data);
            if (n < 0) {
                abort();
                return;
            }
            if (n == 0) break;
            if (!out_.allocated()) out_ = worker_.buffers().acquire();
            out_.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
        }
        if (out_.empty()) break;
        std::string_view d = out_.unread();
        io::IoResult r = io::transportWrite(fd, ssl_, d.data(), d.size());
        if (r.status == io::IoStatus::Ok) {
            out_.consume(r.n);
            continue;
        }
        if (r.status == io::IoStatus::WantWrite || r.status == io::IoStatus::WantRead) {
            waitWrite();
            return;
        }
        abort();
        return;
    }
    // Kept while streams are open: a buffer grown past the pool's size would otherwise be
    // unmapped and mapped again on every turn (TLB shootdowns on every core).
    if (streams_.empty()) worker_.buffers().release(out_);
    closeIfDone();
    if (closed_) return;
    const auto& limits = worker_.snapshot().config->limits;
    // Proxied streams have their upstream's timeouts; a gRPC stream may be quiet for minutes. A
    // local stream still receiving its request has body_timeout from its last input (then 408 on
    // that stream alone, checkDeadline); one waiting for its `latency` has no deadline; one being
    // answered must see progress on the connection within body_timeout (a zero-window stall).
    Clock::time_point next = Clock::time_point::max();
    if (streams_.empty()) {
        next = Clock::now() + limits.idleTimeout;
    } else {
        bool answering = false; // a response is still going out (one lookup is enough)
        for (const auto& st : streams_) {
            // A throttled stream's timer, a held one's idle_timeout (rules) bound them instead.
            // A stream paused at a breakpoint waits for the user (its rule's timeout bounds it).
            if (st->proxy || st->delayed || st->pacing || st->paused ||
                st->res.fate == http::Response::Fate::Hold)
                continue;
            if (!st->dispatched)
                next = std::min(next, st->lastInput + limits.bodyTimeout);
            else if (!answering)
                answering = nghttp2_session_get_stream_local_close(session_, st->id) != 1;
        }
        if (answering) next = std::min(next, Clock::now() + limits.bodyTimeout);
    }
    deadline_ = next;
}

void H2Connection::waitWrite() {
    writing_ = true;
    deadline_ = Clock::now() + worker_.snapshot().config->limits.writeTimeout;
    socket_.async_wait(Connection::Socket::wait_write,
                       [s = shared_from_this()](const boost::system::error_code& ec) {
                           if (ec || s->closed_) return;
                           s->writing_ = false;
                           s->flush();
                           s->waitRead();
                       });
}

void H2Connection::closeIfDone() {
    if (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0 && out_.empty())
        lingerThenClose();
}

int H2Connection::onBeginFrame(std::uint8_t type) {
    const auto& h2 = worker_.snapshot().config->http2;
    if (type == NGHTTP2_CONTINUATION) {
        // CVE-2024-28182 / CVE-2023-45288: a header block may not go on for ever, even in empty frames.
        if (++continuations_ > h2.maxContinuations) return enhanceYourCalm();
    } else {
        continuations_ = 0;
    }
    // Token buckets per connection: RST_STREAM (Rapid Reset, CVE-2023-44487) and PING/SETTINGS
    // (floods that make the server write an ACK for every frame, CVE-2019-9512/9515).
    if (type == NGHTTP2_RST_STREAM &&
        !takeToken(resetTokens_, resetRefill_, static_cast<double>(h2.resetBurst),
                   static_cast<double>(h2.resetRate)))
        return enhanceYourCalm();
    if ((type == NGHTTP2_PING || type == NGHTTP2_SETTINGS) &&
        !takeToken(controlTokens_, controlRefill_, static_cast<double>(h2.maxControlFrames),
                   static_cast<double>(h2.maxControlFrames) / 10.0))
        return enhanceYourCalm();
    return 0;
}

bool H2Connection::takeToken(double& tokens, Clock::time_point& refill, double burst, double rate) {
    const auto now = Clock::now();
    tokens = std::min(burst, tokens + std::chrono::duration<double>(now - refill).count() * rate);
    refill = now;
    if (tokens < 1.0) return false;
    tokens -= 1.0;
    return true;
}

void H2Connection::onResponseEnd(std::int32_t id) {
    // The 408 of a request whose body stopped arriving is out: RFC 9113 §8.1, RST_STREAM(NO_ERROR)
    // closes the stream instead of leaving it open for a client that may never finish the body.
    // Not after other early answers such as 413: the client is still sending (the rest is read
    // and dropped), and curl 7.88 then reports the upload as failed instead of showing the 413.
    if (!bodyTimedOut_) return; // every response ends here: no stream lookup unless a 408 went out
    Stream* s = stream(id);
    if (s && s->bodyTimedOut && nghttp2_session_get_stream_remote_close(session_, id) == 0)
        nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_NO_ERROR);
}

namespace {
// Finished streams are kept per worker thread and reused, so a stream allocates nothing once
// the pool is warm (their buffers keep their capacity).
constexpr std::size_t kStreamPoolMax = 512;
thread_local std::vector<std::unique_ptr<H2Connection::Stream>> tStreamPool;
} // namespace

H2Connection::Stream* H2Connection::stream(std::int32_t id) {
    // The newest stream first: a header block is contiguous (RFC 9113 §4.3), so every onHeader of
    // a request is for the stream onBeginHeaders just appended, and with many streams in flight
    // (h2load -m16) a front-to-back scan walked past all of them for each field.
    if (!streams_.empty() && streams_.back()->id == id) return streams_.back().get();
    for (auto& s : streams_)
        if (s->id == id) return s.get();
    return nullptr;
}

int H2Connection::onBeginHeaders(std::int32_t id) {
    std::unique_ptr<Stream> s;
    if (!tStreamPool.empty()) {
        s = std::move(tStreamPool.back());
        tStreamPool.pop_back();
    } else {
        s = std::make_unique<Stream>();
    }
    s->reuse(id);
    // The stream's opening time (one clock read; steady_clock is capture's clock too).
    if (cap_)
        s->capHeadNs =
            std::chrono::duration_cast<std::chrono::nanoseconds>(s->start.time_since_epoch()).count();
    streams_.push_back(std::move(s));
    return 0;
}

int H2Connection::onHeader(std::int32_t id, bool trailer, std::string_view name, std::string_view value) {
    Stream* s = stream(id);
    if (!s || s->earlyStatus) return 0;
    const auto& limits = worker_.snapshot().config->limits;
    // RFC 9113 §6.5.2 accounting: name + value + 32 per field, against max_header_bytes.
    s->fieldBytes += name.size() + value.size() + 32;
    if (s->fieldBytes > limits.maxHeaderBytes || s->fields.size() >= limits.maxHeaderCount) {
        s->earlyStatus = 431;
        return 0;
    }
    if (!trailer && name.starts_with(':')) {
        if (name == ":method")
            s->method = value;
        else if (name == ":path")
            s->path = value;
        else if (name == ":scheme")
            s->scheme = value;
        else if (name == ":authority")
            s->authority = value;
        return 0;
    }
    Stream::Field f{static_cast<std::uint32_t>(s->arena.size()), static_cast<std::uint32_t>(name.size()), 0,
                    static_cast<std::uint32_t>(value.size()), trailer};
    s->arena.append(name);
    f.value = static_cast<std::uint32_t>(s->arena.size());
    s->arena.append(value);
    s->fields.push_back(f);
    return 0;
}

int H2Connection::onHeadersEnd(std::int32_t id, bool endStream) {
    Stream* s = stream(id);
    if (!s) return 0;
    if (s->earlyStatus && !s->dispatched) {
        fail(*s, s->earlyStatus);
        return 0;
    }
    if (endStream) {
        // END_STREAM on the HEADERS frame: the request body (none) ended with its head.
        if (cap_ && s->capBodyNs < 0) s->capBodyNs = s->capHeadNs;
        return onRequestComplete(id);
    }
    // A request whose route forwards to an upstream starts now and streams its body: uploads in
    // bounded memory, gRPC client-streaming and bidirectional calls.
    if (!s->dispatched && streamsBody(*s)) {
        s->streaming = true;
        dispatch(*s);
    }
    return 0;
}

bool H2Connection::streamsBody(const Stream& s) {
    const Snapshot& snap = worker_.snapshot();
    std::string_view host = s.authority;
    if (host.empty()) {
        for (const auto& f : s.fields)
            if (!f.trailer && std::string_view(s.arena).substr(f.name, f.nameLen) == "host")
                host = std::string_view(s.arena).substr(f.value, f.valueLen);
    }
    const std::string_view target = s.path;
    const std::string_view rawPath = target.substr(0, target.find('?'));
    const serve::Context ctx{*snap.config,  snap.router, worker_.handlerState(), localPort_, 2, false,
                             origin_.get(), &snap.rules};
    if (!serve::streamsRequestBody(ctx, http::methodFromToken(s.method), rawPath, host, false,
                                   worker_.pathScratch()))
        return false;
    if (snap.rules.empty()) return true;
    // A request-stage replace_body may want it whole: one with a content-length it can hold.
    bool grpc = false;
    std::optional<std::uint64_t> length;
    for (const auto& f : s.fields) {
        if (f.trailer) continue;
        const std::string_view name = std::string_view(s.arena).substr(f.name, f.nameLen);
        const std::string_view value = std::string_view(s.arena).substr(f.value, f.valueLen);
        if (name == "content-type") grpc = value.starts_with("application/grpc");
        if (name == "content-length") {
            std::uint64_t n = 0;
            const auto r = std::from_chars(value.data(), value.data() + value.size(), n);
            if (r.ec == std::errc() && r.ptr == value.data() + value.size()) length = n;
        }
    }
    return !serve::rulesReadBodyWhole(ctx, rawPath, length, grpc);
}

int H2Connection::onData(std::int32_t id, const std::uint8_t* data, std::size_t len) {
    Stream* s = stream(id);
    if (s && s->streaming && s->proxy && s->proxy->exchange) {
        s->capBodySize += len;
        if (s->capBodySize > worker_.snapshot().config->limits.maxBodyBytes && !s->proxy->grpc) {
            // Over limits.max_body_bytes mid-way (gRPC streams are exempt: a bidirectional call may
            // run for hours). The upstream request is cancelled (the sink's end resets or closes
            // it); the client gets 413 if nothing was answered yet, else its stream is reset.
            nghttp2_session_consume(session_, id, len);
            const bool answered = s->proxy->headSent;
            s->streaming = false;
            s->proxy.reset();
            if (!answered) {
                fail(*s, 413);
            } else {
                nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
            }
            return 0;
        }
        // Acknowledged when the upstream takes it (ProxySink::onRequestBodyConsumed).
        s->proxy->exchange->requestBody({reinterpret_cast<const char*>(data), len});
        if (cap_) {
            if (s->capGrpc) capture::grpcData(*s->capGrpc, true, {reinterpret_cast<const char*>(data), len});
            if (s->capBody.size() < cap_->cfg.bodyBytes)
                s->capBody.append(reinterpret_cast<const char*>(data),
                                  std::min<std::size_t>(len, cap_->cfg.bodyBytes - s->capBody.size()));
        }
        return 0;
    }
    nghttp2_session_consume(session_, id, len);
    if (!s || s->dispatched) return 0; // answered early: the rest of the body is discarded
    s->lastInput = Clock::now();
    if (s->body.size() + len > worker_.snapshot().config->limits.maxBodyBytes) {
        std::string().swap(s->body);
        fail(*s, 413);
        return 0;
    }
    s->body.append(reinterpret_cast<const char*>(data), len);
    return 0;
}

int H2Connection::onRequestComplete(std::int32_t id) {
    Stream* s = stream(id);
    if (s && s->streaming) {
        if (cap_) s->capBodyNs = capture::nowNs();
        if (s->proxy && s->proxy->exchange) {
            std::vector<http::Header>& trailers = worker_.h2Trailers();
            trailers.clear();
            for (const auto& f : s->fields)
                if (f.trailer)
                    trailers.push_back({std::string_view(s->arena).substr(f.name, f.nameLen),
                                        std::string_view(s->arena).substr(f.value, f.valueLen)});
            s->proxy->exchange->requestEnd(trailers);
        }
        return 0;
    }
    if (!s || s->dispatched) return 0;
    if (cap_ && s->capBodyNs < 0) s->capBodyNs = capture::nowNs();
    dispatch(*s);
    return 0;
}

void H2Connection::fail(Stream& s, int status) {
    s.dispatched = true;
    worker_.counters().parseErrors.fetch_add(1, std::memory_order_relaxed);
    s.res.reset();
    handlers::errorResponse(status, s.res);
    s.target = s.path;
    s.host = s.authority;
    logExchange(s);
    if (cap_) s.capFirstByteNs = captureStats(s); // submitted at once: the same reading
    submit(s);
}

// serve::ResponseWriter for one stream's request.
struct H2Connection::Writer final : serve::ResponseWriter {
    Writer(H2Connection& c, Stream& st) : conn(c), s(st) {}
    void respond(const http::Request&, http::Response&) override { conn.respond(s); }
    serve::ForwardTarget forwardTo(http::Request& req, const http::Response& res) override {
        if (res.throttle.active()) {
            // A streamed body's time at the throttle's `up` rate is reckoned from its declared length.
            std::uint64_t upBytes = s.body.size();
            if (s.streaming) {
                const std::string_view cl = req.header("content-length");
                upBytes = 0;
                std::from_chars(cl.data(), cl.data() + cl.size(), upBytes);
            }
            conn.startPace(s, upBytes);
        }
        return conn.forwardTo(s, req);
    }
    void forwarding(std::shared_ptr<client::Call> call) override { conn.forwarding(s, std::move(call)); }
    bool pause(serve::Paused& paused) override {
        if (s.streaming) return false; // its body goes upstream as it arrives
        s.paused = paused.shared_from_this();
        s.pausedSnapshot = conn.worker_.snapshotPtr();
        paused.io = &conn.worker_.io();
        paused.wake = [weak = conn.weak_from_this(), id = s.id] {
            if (auto c = weak.lock()) c->resumePaused(id);
        };
        return true;
    }
    H2Connection& conn;
    Stream& s;
};

void H2Connection::resumePaused(std::int32_t id) {
    Stream* s = closed_ ? nullptr : stream(id);
    if (!s || !s->paused) return;
    const std::shared_ptr<const Snapshot> snap = std::move(s->pausedSnapshot); // outlives `paused`
    const std::shared_ptr<serve::Paused> paused = std::move(s->paused);
    const serve::Context ctx{*snap->config, snap->router, worker_.handlerState(), localPort_, 2, false,
                             origin_.get(), &snap->rules};
    serve::Stamps stamps;
    if (cap_) stamps = {&s->capRouteNs, &s->capLabels};
    http::Request req;
    Writer writer{*this, *s};
    // The access log and the record name the request as it went on (an edit may change it; the
    // request's own views were copied into `paused` when it paused).
    const bool edited = paused->decision && paused->decision->edited &&
                        paused->decision->kind == rules::BreakpointDecision::Kind::Resume &&
                        paused->shown.stage == config::Rule::Stage::Request;
    auto rename = [&](Stream& st, const http::Request& r) {
        st.method.assign(r.methodToken);
        st.path.assign(r.target);
        st.target.assign(r.target);
        st.host.assign(r.host);
        st.head = r.method == http::Method::Head;
    };
    if (edited) {
        // resume() settles the edit into `paused->current`; it is copied again below.
        const rules::PausedMessage& m = *paused->decision->edited;
        http::Request r;
        r.methodToken = m.method;
        r.method = http::methodFromToken(m.method);
        r.target = m.target;
        r.host = m.host;
        rename(*s, r);
    }
    serve::resume(ctx, *paused, req, worker_.pathScratch(), s->res, writer, stamps);
    if (Stream* again = stream(id); edited && again && !again->paused) rename(*again, req);
    flush();
}

void H2Connection::dispatch(Stream& s) {
    s.dispatched = true;
    worker_.counters().requests.fetch_add(1, std::memory_order_relaxed);
    const Snapshot& snap = worker_.snapshot();
    const config::Config& cfg = *snap.config;

    // Views for the handlers; they live until this function returns.
    std::vector<http::Header>& headers = worker_.h2Headers();
    std::vector<http::Header>& trailers = worker_.h2Trailers();
    headers.clear();
    trailers.clear();
    std::string_view hostField;
    for (const auto& f : s.fields) {
        http::Header h{std::string_view(s.arena).substr(f.name, f.nameLen),
                       std::string_view(s.arena).substr(f.value, f.valueLen)};
        (f.trailer ? trailers : headers).push_back(h);
        if (!f.trailer && h.name == "host" && hostField.empty()) hostField = h.value;
    }
    http::Request req;
    req.method = http::methodFromToken(s.method);
    req.methodToken = s.method;
    req.target = s.path;
    std::string_view target = s.path;
    auto q = target.find('?');
    req.rawPath = target.substr(0, q);
    req.query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
    req.versionMajor = 2;
    req.versionMinor = 0;
    req.headers = headers;
    req.trailers = trailers;
    // RFC 9113 §8.3.1: :authority, else Host. Both must be valid authorities (RFC 9110 §7.2): a
    // bad one is a malformed request, answered 400 and never routed or forwarded.
    if (!http::validAuthority(s.authority) || !http::validAuthority(hostField)) {
        fail(s, 400);
        return;
    }
    req.host = s.authority.empty() ? hostField : std::string_view(s.authority);
    req.scheme = s.scheme.empty() ? std::string_view(ssl_ ? "https" : "http") : std::string_view(s.scheme);
    req.body = s.body;
    req.keepAlive = true;
    req.clientAddress = clientAddress_;
    s.head = req.method == http::Method::Head;
    s.target = s.path;
    s.host = std::string(req.host);

    http::Response& res = s.res;
    const serve::Context ctx{cfg, snap.router, worker_.handlerState(), localPort_,
                             2,   false,       origin_.get(),          &snap.rules};
    serve::Stamps stamps;
    if (cap_) stamps = {&s.capRouteNs, &s.capLabels};
    Writer writer{*this, s};
    serve::serve(ctx, req, worker_.pathScratch(), res, writer, stamps);
}

// Capture only: the request body's prefix and, with server_timing, the Server-Timing field (on a
// forwarded request it joins the route's extra fields for the upstream's response).
void H2Connection::captureRequest(Stream& s) {
    if (!cap_ || s.streaming) return;
    // The body as the route's action got it: a request rule's replace_body may have rewritten it.
    const std::string_view body =
        s.res.ruledRequestBody.empty() ? std::string_view(s.body) : s.res.ruledRequestBody;
    s.capBodySize = body.size();
    s.capBody.assign(body, 0, std::min<std::size_t>(body.size(), cap_->cfg.bodyBytes));
    if (cap_->serverTiming) {
        std::string& value = worker_.timingScratch();
        capture::serverTimingValue(s.capHeadNs, s.capBodyNs, s.capRouteNs, capture::nowNs(), value);
        s.res.addHeader("Server-Timing", value);
    }
}

// Writes the stream's response s.res (after its latency, if any; a dropped one resets the stream).
void H2Connection::respond(Stream& s) {
    captureRequest(s);
    if (s.res.throttle.active()) startPace(s, s.body.size());
    const http::Response& res = s.res;
    std::int64_t statsNs = -1;
    if (cap_) statsNs = captureStats(s);
    s.body.clear(); // the request body is not needed any more
    if (res.fate == http::Response::Fate::Drop) {
        // Fault injection: the HTTP/2 form of a dropped connection is a reset stream.
        logExchange(s);
        nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_INTERNAL_ERROR);
        return;
    }
    if (res.fate == http::Response::Fate::Silent) {
        // A rule's `fail: close`: no answer; the connection ends (GOAWAY, then close).
        logExchange(s);
        nghttp2_session_terminate_session(session_, NGHTTP2_NO_ERROR);
        return;
    }
    if (res.fate == http::Response::Fate::Hold) {
        // A rule's `fail: timeout`: no answer; only this stream waits, until the client resets
        // it or idle_timeout passes (then RST_STREAM CANCEL).
        logExchange(s);
        s.timer.emplace(worker_.io());
        s.timer->expires_after(worker_.snapshot().config->limits.idleTimeout);
        const std::int32_t id = s.id;
        s.timer->async_wait([self = shared_from_this(), id](const boost::system::error_code& ec) {
            if (ec || self->closed_ || !self->stream(id)) return;
            nghttp2_submit_rst_stream(self->session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
            self->flush();
        });
        return;
    }
    logExchange(s);
    if (res.delay.count() > 0) {
        s.delayed = true;
        s.timer.emplace(worker_.io());
        s.timer->expires_after(res.delay);
        std::int32_t id = s.id;
        s.timer->async_wait([self = shared_from_this(), id](const boost::system::error_code& ec) {
            if (ec || self->closed_) return;
            if (Stream* st = self->stream(id)) {
                st->delayed = false;
                self->submit(*st);
                self->flush();
            }
        });
        return;
    }
    // Submitted at once: the statistics' reading is the response's first byte (a clock read less).
    if (statsNs >= 0) s.capFirstByteNs = statsNs;
    submit(s);
}

void H2Connection::startPace(Stream& s, std::uint64_t upBytes) {
    s.pacing = true;
    s.paceSent = 0;
    s.paceStart = Clock::now() + s.res.throttle.firstByteDelay(upBytes);
}

std::size_t H2Connection::paceAllowance(Stream& s, std::size_t want) {
    if (!s.pacing) return want;
    const Clock::time_point now = Clock::now();
    const std::uint64_t rate = s.res.throttle.down;
    std::uint64_t allowed = want;
    Clock::time_point at = s.paceStart;
    if (now < s.paceStart) {
        allowed = 0;
    } else if (rate > 0) {
        const double ns = static_cast<double>((now - s.paceStart).count());
        const auto budget = static_cast<std::uint64_t>(ns * static_cast<double>(rate) / 1e9);
        allowed = std::min<std::uint64_t>(want, budget > s.paceSent ? budget - s.paceSent : 0);
        // DATA frames of a slice at least (20 ms of the rate, 1..16 KiB), not a frame per byte:
        // less than that waits until the slice may leave.
        const std::uint64_t slice =
            std::min<std::uint64_t>(want, std::clamp<std::uint64_t>(rate / 50, 1024, 16 * 1024));
        if (allowed < slice) allowed = 0;
        const double due = static_cast<double>(s.paceSent + slice) * 1e9 / static_cast<double>(rate);
        at = s.paceStart + std::chrono::nanoseconds(static_cast<std::int64_t>(due));
    }
    if (allowed > 0) {
        s.paceSent += allowed;
        return static_cast<std::size_t>(allowed);
    }
    if (!s.paceWaiting) {
        s.paceWaiting = true;
        if (!s.timer) s.timer.emplace(worker_.io());
        s.timer->expires_at(std::max(at, now));
        const std::int32_t id = s.id;
        s.timer->async_wait([self = shared_from_this(), id](const boost::system::error_code& ec) {
            if (ec || self->closed_) return;
            Stream* st = self->stream(id);
            if (!st) return;
            st->paceWaiting = false;
            nghttp2_session_resume_data(self->session_, id);
            self->flush();
        });
    }
    return 0;
}

void H2Connection::submit(Stream& s) {
    if (s.pacing && Clock::now() < s.paceStart) {
        // A rule's throttle: the head waits for its latency (a proxied body waits in its sink).
        if (!s.timer) s.timer.emplace(worker_.io());
        s.timer->expires_at(s.paceStart);
        const std::int32_t id = s.id;
        s.timer->async_wait([self = shared_from_this(), id](const boost::system::error_code& ec) {
            if (ec || self->closed_) return;
            if (Stream* st = self->stream(id)) {
                self->submit(*st);
                self->flush();
            }
        });
        return;
    }
    const http::Response& res = s.res;
    const int status = res.status;
    const bool noBody = status < 200 || status == 204 || status == 304;
    if (cap_ && s.capFirstByteNs < 0) s.capFirstByteNs = capture::nowNs(); // else set by captureStats
    // The fields point at their sources (the response's field block, this frame's locals), which
    // outlive the submit call that copies them; only a name with upper-case letters is copied,
    // lower-cased (RFC 9113 §8.2.1), into the worker's scratch. Reserved up front to the block's
    // size, which bounds the names, so those views stay put while more are added.
    const std::string_view block = res.fieldBlock();
    std::string& arena = worker_.h2Arena();
    arena.clear();
    arena.reserve(block.size());
    nghttp2_nv nva[128];
    std::size_t count = 0;
    auto add = [&](std::string_view name, std::string_view value) {
        if (count < std::size(nva)) nva[count++] = http2::field(name, value);
    };
    char statusText[4];
    std::to_chars(statusText, statusText + 3, status);
    add(":status", std::string_view(statusText, 3));
    std::string_view date = worker_.dateLine(); // "Date: ...\r\n"
    if (date.size() > 8 && !s.originHead) add("date", date.substr(6, date.size() - 8));
    if (res.serverHeader) add("server", "Portico/" PORTICO_VERSION);
    http::forEachFieldLine(block, [&](std::string_view name, std::string_view value) {
        if (http2::isConnectionSpecific(name, value)) return;
        bool upper = false;
        for (const char c : name)
            upper |= static_cast<unsigned char>(c - 'A') < 26u;
        if (!upper) {
            add(name, value);
            return;
        }
        const std::size_t at = arena.size();
        arena.resize(at + name.size());
        char* out = arena.data() + at;
        for (std::size_t i = 0; i < name.size(); ++i) {
            const auto c = static_cast<unsigned char>(name[i]);
            out[i] = static_cast<char>(c | (static_cast<unsigned char>(c - 'A') < 26u ? 0x20 : 0));
        }
        add(std::string_view(out, name.size()), value);
    });
    char lengthText[24];
    const bool proxied = s.proxy != nullptr;
    const bool headersOnly = proxied && s.proxy->headersOnly;
    if (!noBody && !headersOnly && (!proxied || s.proxy->length)) {
        auto r = std::to_chars(lengthText, lengthText + sizeof lengthText,
                               proxied ? *s.proxy->length : res.bodyLength());
        add("content-length", std::string_view(lengthText, static_cast<std::size_t>(r.ptr - lengthText)));
    }
    nghttp2_data_provider provider{};
    provider.read_callback = readBodyCb;
    const bool withBody = !noBody && !s.head && !headersOnly && (proxied || res.bodyLength() > 0);
    const int rv = nghttp2_submit_response(session_, s.id, nva, count, withBody ? &provider : nullptr);
    if (rv != 0) {
        // Not queued: the stream would wait for ever. Reset it; the record says why.
        setStreamError(s.id, std::string("response not submitted: ") + nghttp2_strerror(rv));
        nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_INTERNAL_ERROR);
    }
}

void H2Connection::onHeadersNotSent(std::int32_t id, bool responseHead, int error) {
    // The stream is closing anyway (reset by either side): nothing to answer.
    if (error == NGHTTP2_ERR_STREAM_CLOSED || error == NGHTTP2_ERR_STREAM_CLOSING) return;
    Stream* s = stream(id);
    if (!s) return;
    const bool tooLarge = error == NGHTTP2_ERR_FRAME_SIZE_ERROR;
    // Nothing of the stream's response left yet: a 500 instead (RFC 9110 §15.6.1), unless that is
    // the head that failed (a stream has one error).
    const bool answer = responseHead && !streamError(id);
    std::string why = responseHead ? "response header section" : "trailer section";
    why += tooLarge ? " over HTTP/2's 64 KiB send limit (max_send_header_block_length)"
                    : std::string(" not sent: ") + nghttp2_strerror(error);
    why += answer ? ": answered 500" : ": stream reset";
    setStreamError(id, std::move(why));
    if (!answer) {
        nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_INTERNAL_ERROR);
        return;
    }
    // A proxied stream's upstream exchange ends (its head cannot be passed on); the stream is a
    // local 500 from now on, logged here as a proxied stream would have been when it closed.
    const bool proxied = s->proxy != nullptr;
    s->proxy.reset();
    s->streaming = false;
    s->res.reset();
    handlers::errorResponse(500, s->res);
    s->sent = 0;
    s->originHead = false;
    if (proxied) {
        logExchange(*s);
        if (cap_) captureStats(*s);
    }
    submit(*s); // queued while nghttp2 is sending: the same mem_send loop takes it
}

const std::string* H2Connection::streamError(std::int32_t id) const {
    for (const auto& [sid, why] : streamErrors_)
        if (sid == id) return &why;
    return nullptr;
}

void H2Connection::setStreamError(std::int32_t id, std::string why) {
    for (auto& [sid, old] : streamErrors_)
        if (sid == id) {
            old = std::move(why);
            return;
        }
    streamErrors_.emplace_back(id, std::move(why));
}

// The upstream's trailer section after the last DATA frame (RFC 9113 §8.1); true when submitted.
bool H2Connection::submitTrailers(Stream& s) {
    ProxySink* p = s.proxy.get();
    if (!p || p->trailers.empty()) return false;
    std::vector<nghttp2_nv> nva;
    http::forEachFieldLine(p->trailers, [&](std::string_view name, std::string_view value) {
        if (http2::isConnectionSpecific(name, value)) return;
        nva.push_back(http2::field(name, value));
    });
    return !nva.empty() && nghttp2_submit_trailer(session_, s.id, nva.data(), nva.size()) == 0;
}

long H2Connection::readBody(std::int32_t id, std::uint8_t* buf, std::size_t len, std::uint32_t* flags) {
    Stream* s = stream(id);
    if (!s) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    if (ProxySink* p = s->proxy.get()) {
        std::size_t n = std::min(len, p->pending.size() - p->offset);
        if (n > 0 && s->pacing) {
            n = paceAllowance(*s, n);
            if (n == 0) return NGHTTP2_ERR_DEFERRED; // the throttle's timer resumes the stream
        }
        if (n == 0) {
            if (p->done) {
                *flags |= NGHTTP2_DATA_FLAG_EOF;
                if (submitTrailers(*s)) *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
                return 0;
            }
            p->deferred = true;
            return NGHTTP2_ERR_DEFERRED;
        }
        std::memcpy(buf, p->pending.data() + p->offset, n);
        p->offset += n;
        p->sentBytes += n;
        if (p->offset == p->pending.size()) {
            p->pending.clear();
            p->offset = 0;
        }
        if (p->done && p->pending.empty()) {
            *flags |= NGHTTP2_DATA_FLAG_EOF;
            if (submitTrailers(*s)) *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        }
        if (p->paused && p->pending.size() - p->offset < ProxySink::kProxyHighWater / 4 && p->exchange) {
            p->paused = false;
            p->exchange->resume();
        }
        return static_cast<long>(n);
    }
    const http::Response& res = s->res;
    const std::uint64_t total = res.bodyLength();
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(len, total - s->sent));
    if (s->pacing && n > 0) {
        n = paceAllowance(*s, n);
        if (n == 0) return NGHTTP2_ERR_DEFERRED; // the throttle's timer resumes the stream
    }
    if (res.bodyKind() == http::Response::BodyKind::File) {
        ssize_t got = ::pread(res.file()->fd, buf, n, static_cast<off_t>(res.fileOffset() + s->sent));
        if (got != static_cast<ssize_t>(n)) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; // file shrank
    } else {
        std::memcpy(buf, res.bodyView().data() + s->sent, n);
    }
    s->sent += n;
    if (s->sent == total) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<long>(n);
}

void H2Connection::onStreamClose(std::int32_t id) {
    const Closed how = closingId_ == id ? closingHow_ : Closed::Normal;
    closedStreams_[closedNext_++ % closedStreams_.size()] = {id, how};
    closingId_ = 0;
    for (std::size_t i = 0; i < streams_.size(); ++i) {
        if (streams_[i]->id != id) continue;
        std::unique_ptr<Stream> s = std::move(streams_[i]);
        streams_[i] = std::move(streams_.back());
        streams_.pop_back();
        if (s->timer) s->timer->cancel();
        s->timer.reset();
        s->paused.reset(); // a paused exchange whose client went away leaves the queue
        // A response or trailers nghttp2 would not send (onHeadersNotSent): the record says so.
        std::string error;
        for (std::size_t e = 0; e < streamErrors_.size(); ++e) {
            if (streamErrors_[e].first != id) continue;
            error = std::move(streamErrors_[e].second);
            streamErrors_[e] = std::move(streamErrors_.back());
            streamErrors_.pop_back();
            break;
        }
        if (s->proxy) {
            // A proxied exchange is logged and recorded when its stream ends.
            const bool complete = s->proxy->done && s->proxy->pending.size() == s->proxy->offset;
            logExchange(*s);
            if (cap_) {
                s->res.setBody(s->proxy->capBody);
                captureStats(*s);
                // A gRPC client whose deadline passed resets the stream (CANCEL): said as such.
                captureStream(*s, !error.empty() ? std::string_view(error)
                                  : complete     ? ""
                                  : how == Closed::PeerReset
                                      ? "cancelled by the client (RST_STREAM)"
                                      : "stream closed before the upstream's response ended");
            }
        } else if (cap_) {
            captureStream(*s, !error.empty()  ? std::string_view(error)
                              : s->dispatched ? ""
                                              : "stream reset before the request completed");
        }
        s->proxy.reset(); // cancels an exchange still running
        s->res.reset();   // drop shared bodies and files now
        if (tStreamPool.size() < kStreamPoolMax) tStreamPool.push_back(std::move(s));
        return;
    }
}

void H2Connection::logExchange(const Stream& s) {
    AccessLogger* log = worker_.accessLog();
    if (!log) return;
    AccessRecord r;
    r.time = std::chrono::system_clock::now();
    r.client = clientAddress_;
    r.method = s.method.empty() ? "-" : s.method;
    r.target = s.target.empty() ? "-" : s.target;
    r.host = s.host;
    r.versionMajor = 2;
    r.versionMinor = 0;
    r.status = s.res.status;
    r.bytes = (s.head || s.res.status == 304 || s.res.status == 204) ? 0
              : s.proxy                                              ? s.proxy->sentBytes
                                                                     : s.res.bodyLength();
    r.durationNs =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - s.start + s.res.delay).count();
    for (const auto& f : s.fields) {
        std::string_view name = std::string_view(s.arena).substr(f.name, f.nameLen);
        if (name == "referer") r.referer = std::string_view(s.arena).substr(f.value, f.valueLen);
        if (name == "user-agent") r.userAgent = std::string_view(s.arena).substr(f.value, f.valueLen);
    }
    log->push(std::move(r));
}

void H2Connection::checkDeadline(Clock::time_point now) {
    if (closed_) return;
    if (lingering_) {
        if (now >= deadline_) abort();
        return;
    }
    // No stream for a tick: OpenSSL's record buffers go back (flush() set deadline_ to
    // idle_timeout from then; before the first request it is header_timeout, shorter).
    if (ssl_ && streams_.empty() && !writing_ &&
        deadline_ - worker_.snapshot().config->limits.idleTimeout + io::kReleaseIdleAfter < now)
        io::transportReleaseIdleBuffers(ssl_);
    if (now < deadline_) return;
    worker_.counters().timeouts.fetch_add(1, std::memory_order_relaxed);
    if (!writing_) {
        // Requests whose body stopped arriving: 408 on each of those streams (RFC 9110 §15.5.9);
        // the connection and its other streams go on. flush() sets the next deadline.
        const auto bodyTimeout = worker_.snapshot().config->limits.bodyTimeout;
        bool answered = false;
        for (auto& st : streams_)
            if (!st->proxy && !st->dispatched && now >= st->lastInput + bodyTimeout) {
                st->bodyTimedOut = bodyTimedOut_ = true;
                fail(*st, 408);
                answered = true;
            }
        if (answered) {
            flush();
            return;
        }
    }
    if (streams_.empty() && !writing_) {
        // Idle (idle_timeout, or header_timeout before the first request): RFC 9113 §6.8, a
        // GOAWAY(NO_ERROR) naming the last stream processed, so the client knows no request was
        // lost and opens a new connection for the next one. Written if the socket takes it now.
        nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(session_),
                              NGHTTP2_NO_ERROR, nullptr, 0);
        flush();
    }
    abort();
}

void H2Connection::onDrain() {
    if (closed_ || draining_) return;
    draining_ = true;
    // RFC 9113 §6.8: GOAWAY with the last stream we will process; those streams finish, then the
    // connection closes (closeIfDone).
    nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(session_),
                          NGHTTP2_NO_ERROR, nullptr, 0);
    flush();
}

void H2Connection::abort() {
    if (closed_) return;
    closed_ = true;
    deadline_ = Clock::time_point::max();
    for (auto& s : streams_) {
        if (s->timer) s->timer->cancel();
        if (cap_) {
            if (s->proxy) s->res.setBody(s->proxy->capBody);
            captureStream(*s, "connection closed");
        }
        s->proxy.reset();
    }
    boost::system::error_code ec;
    socket_.cancel(ec);
    socket_.close(ec);
}

// ---- capture (only with capture on) ----

} // namespace portico::server
