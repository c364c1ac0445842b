// Byte pipe between a client and an upstream after a WebSocket upgrade (see tunnel.h).
#include "proxy/tunnel.h"

#include "io/transport.h"
#include "ws/observer.h"

#include <openssl/ssl.h>

#include <sys/socket.h>

namespace portico::proxy {
namespace {
constexpr std::size_t kChunk = 64 * 1024;

// A tunnel's capture (only when capture is on): the session's record and one passive frame reader
// per direction, which reads each buffer in place before it is written on (no copy of the bytes).
class TunnelCapture {
public:
    TunnelCapture(capture::WsCapturePtr wc, bool deflate, bool raw) : wc_(std::move(wc)), raw_(raw) {
        if (raw_) return;
        for (bool client : {true, false}) {
            ws::FrameObserver::Options o;
            o.fromClient = client;
            o.deflate = deflate;
            o.prefixBytes = wc_->bodyBytes;
            (client ? fromClient_ : fromUpstream_) =
                std::make_unique<ws::FrameObserver>(o, [this, client](const ws::ObservedMessage& m) {
                    if (m.opcode == ws::Opcode::Close) closeSeen_ = true;
                    capture::wsMessage(*wc_, client, static_cast<std::uint8_t>(m.opcode), m.prefix, m.size,
                                       m.compressed);
                });
        }
    }
    void opened() { capture::wsOpened(*wc_); }
    void observe(bool client, std::string_view bytes) {
        if (raw_) {
            capture::Exchange& r = wc_->record;
            std::string& kept = client ? r.requestBody : r.responseBody;
            (client ? r.requestBodySize : r.responseBodySize) += bytes.size();
            const std::size_t room = wc_->bodyBytes > kept.size() ? wc_->bodyBytes - kept.size() : 0;
            kept.append(bytes.substr(0, std::min(room, bytes.size())));
            if (bytes.size() > room)
                r.flags |= client ? capture::kRequestBodyTruncated : capture::kResponseBodyTruncated;
            return;
        }
        if (!stopped_.empty() || bytes.empty()) return;
        ws::FrameObserver& ob = client ? *fromClient_ : *fromUpstream_;
        if (ob.feed(bytes)) return;
        // Not (or no longer) WebSocket frames: the bytes go on as they are, the record stops here.
        stopped_ = std::string("capture stopped: the ") + (client ? "client's" : "upstream's") +
                   " bytes are not WebSocket frames after " + std::to_string(ob.offset()) + " bytes (" +
                   ob.error() + ")";
        fromClient_.reset();
        fromUpstream_.reset();
    }
    void closed() {
        if (raw_) {
            capture::wsClosed(*wc_, {});
            return;
        }
        capture::wsClosed(*wc_, !stopped_.empty() ? std::string_view(stopped_)
                                : closeSeen_      ? std::string_view()
                                                  : std::string_view("closed without a closing handshake"));
    }

private:
    capture::WsCapturePtr wc_;
    bool raw_; // a CONNECT tunnel: bytes counted, not read as frames
    std::unique_ptr<ws::FrameObserver> fromClient_, fromUpstream_;
    std::string stopped_;    // why the record stopped ("" while it goes on)
    bool closeSeen_ = false; // the closing handshake began (a Close frame either way)
};

class Tunnel final : public io::Session, public std::enable_shared_from_this<Tunnel> {
public:
    using Socket = io::Socket;
    Tunnel(io::SessionHost& worker, Socket client, SSL* ssl, Socket upstream, SSL* upstreamSsl,
           capture::WsCapturePtr capture, bool deflate, bool raw)
        : worker_(worker), client_(std::move(client)), upstream_(std::move(upstream)), ssl_(ssl),
          upstreamSsl_(upstreamSsl) {
        if (capture) cap_ = std::make_unique<TunnelCapture>(std::move(capture), deflate, raw);
        worker_.link(this);
        boost::system::error_code ec;
        client_.non_blocking(true, ec);
        upstream_.non_blocking(true, ec);
    }
    ~Tunnel() override {
        captureClosed(); // only if abort() did not run
        worker_.unlink(this);
        if (ssl_) SSL_free(ssl_);
        if (upstreamSsl_) SSL_free(upstreamSsl_);
    }

    void start(std::string_view toClient, std::string_view leftover, std::string_view toUpstream) {
        up_.buf.assign(toClient); // upstream → client
        up_.buf.append(leftover);
        down_.buf.assign(toUpstream);
        if (cap_) {
            cap_->opened(); // the 101 is about to be written
            cap_->observe(false, leftover);
            cap_->observe(true, toUpstream);
        }
        pump(up_);
        pump(down_);
    }
    void checkDeadline(Clock::time_point) override {}
    void onDrain() override { abort(); } // a tunnel has no exchange boundary to wait for
    void abort() override {
        if (closed_) return;
        closed_ = true;
        boost::system::error_code ec;
        client_.cancel(ec);
        client_.close(ec);
        upstream_.cancel(ec);
        upstream_.close(ec);
        captureClosed();
    }

private:
    // One direction: read from `from`, write to the other side.
    struct Dir {
        std::string buf;
        std::size_t off = 0;
        bool waiting = false;
        bool eof = false;
        bool fromClient = false;
    };

    void wait(Dir& d, Socket& s, Socket::wait_type type) {
        d.waiting = true;
        s.async_wait(type, [self = shared_from_this(), &d](const boost::system::error_code& ec) {
            d.waiting = false;
            if (ec || self->closed_) return;
            self->pump(d);
        });
    }

    void pump(Dir& d) {
        if (closed_ || d.waiting) return;
        Socket& src = d.fromClient ? client_ : upstream_;
        Socket& dst = d.fromClient ? upstream_ : client_;
        SSL* srcSsl = d.fromClient ? ssl_ : upstreamSsl_;
        SSL* dstSsl = d.fromClient ? upstreamSsl_ : ssl_;
        for (int turns = 0; turns < 16; ++turns) {
            if (d.off < d.buf.size()) {
                io::IoResult r = io::transportWrite(dst.native_handle(), dstSsl, d.buf.data() + d.off,
                                                    d.buf.size() - d.off);
                if (r.status == io::IoStatus::Ok) {
                    d.off += r.n;
                    continue;
                }
                if (r.status == io::IoStatus::WantWrite || r.status == io::IoStatus::WantRead) {
                    wait(d, dst,
                         r.status == io::IoStatus::WantWrite ? Socket::wait_write : Socket::wait_read);
                    return;
                }
                abort();
                return;
            }
            // A slow side's backlog is gone: give its memory back (an idle tunnel holds none).
            if (d.buf.capacity() > 4096)
                std::string().swap(d.buf);
            else
                d.buf.clear();
            d.off = 0;
            if (d.eof) {
                // Half-close passed on; both halves closed → done.
                boost::system::error_code ec;
                if (dstSsl)
                    SSL_shutdown(dstSsl);
                else
                    dst.shutdown(Socket::shutdown_send, ec);
                if (up_.eof && down_.eof) abort();
                return;
            }
            // Read into this worker thread's scratch and write on at once: only bytes the other side
            // did not take wait in d.buf (a 64 KiB buffer per direction made every open tunnel cost
            // ~150 KB of RSS, and zero-filled it before each read).
            static thread_local const std::unique_ptr<char[]> scratch(new char[kChunk]);
            io::IoResult r = io::transportRead(src.native_handle(), srcSsl, scratch.get(), kChunk);
            if (r.status == io::IoStatus::Ok) {
                const std::string_view got(scratch.get(), r.n);
                if (cap_) cap_->observe(d.fromClient, got);
                std::size_t sent = 0;
                io::IoResult w{io::IoStatus::Ok, 0};
                while (sent < got.size()) {
                    w = io::transportWrite(dst.native_handle(), dstSsl, got.data() + sent, got.size() - sent);
                    if (w.status != io::IoStatus::Ok) break;
                    sent += w.n;
                }
                if (sent == got.size()) continue;
                if (w.status == io::IoStatus::WantWrite || w.status == io::IoStatus::WantRead) {
                    // OpenSSL takes the same bytes again from another address (ACCEPT_MOVING_WRITE_BUFFER).
                    d.buf.assign(got.substr(sent));
                    d.off = 0;
                    wait(d, dst,
                         w.status == io::IoStatus::WantWrite ? Socket::wait_write : Socket::wait_read);
                    return;
                }
                abort();
                return;
            }
            if (r.status == io::IoStatus::WantRead || r.status == io::IoStatus::WantWrite) {
                wait(d, src, r.status == io::IoStatus::WantRead ? Socket::wait_read : Socket::wait_write);
                return;
            }
            if (r.status == io::IoStatus::Eof) {
                d.eof = true;
                continue;
            }
            abort();
            return;
        }
        // Fairness: let the worker's other sessions run, then go on.
        d.waiting = true;
        boost::asio::post(worker_.io(), [self = shared_from_this(), &d] {
            d.waiting = false;
            self->pump(d);
        });
    }

    void captureClosed() {
        if (!cap_) return;
        cap_->closed();
        cap_.reset();
    }

    io::SessionHost& worker_;
    std::unique_ptr<TunnelCapture> cap_; // null when capture is off
    Socket client_;
    Socket upstream_;
    SSL* ssl_;                            // the client's TLS (null for cleartext)
    SSL* upstreamSsl_;                    // an https:// upstream's TLS (null for http://)
    Dir up_;                              // upstream → client
    Dir down_{{}, 0, false, false, true}; // client → upstream
    bool closed_ = false;
};
} // namespace

void startTunnel(io::SessionHost& worker, io::Socket client, SSL* ssl, client::UpstreamSocket upstream,
                 SSL* upstreamSsl, std::string_view toClient, std::string_view leftover,
                 std::string_view toUpstream, capture::WsCapturePtr capture, bool deflate, bool raw) {
    auto t = std::make_shared<Tunnel>(worker, std::move(client), ssl, std::move(upstream), upstreamSsl,
                                      std::move(capture), deflate, raw);
    t->start(toClient, leftover, toUpstream);
}

} // namespace portico::proxy
