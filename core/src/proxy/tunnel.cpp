// Byte pipe between a client and an upstream after a WebSocket upgrade (see tunnel.h).
#include "proxy/tunnel.h"

#include "net/transport.h"
#include "net/worker.h"

#include <openssl/ssl.h>

#include <sys/socket.h>

namespace portico::proxy {
namespace {
constexpr std::size_t kChunk = 64 * 1024;

class Tunnel final : public net::Session, public std::enable_shared_from_this<Tunnel> {
public:
    using Socket = net::Connection::Socket;
    Tunnel(net::Worker& worker, Socket client, SSL* ssl, Socket upstream)
        : worker_(worker), client_(std::move(client)), upstream_(std::move(upstream)), ssl_(ssl) {
        worker_.link(this);
        boost::system::error_code ec;
        client_.non_blocking(true, ec);
        upstream_.non_blocking(true, ec);
    }
    ~Tunnel() override {
        worker_.unlink(this);
        if (ssl_) SSL_free(ssl_);
    }

    void start(std::string_view toClient, std::string_view toUpstream) {
        up_.buf.assign(toClient); // upstream → client
        down_.buf.assign(toUpstream);
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
        SSL* srcSsl = d.fromClient ? ssl_ : nullptr;
        SSL* dstSsl = d.fromClient ? nullptr : ssl_;
        for (int turns = 0; turns < 16; ++turns) {
            if (d.off < d.buf.size()) {
                net::IoResult r = net::transportWrite(dst.native_handle(), dstSsl, d.buf.data() + d.off,
                                                      d.buf.size() - d.off);
                if (r.status == net::IoStatus::Ok) {
                    d.off += r.n;
                    continue;
                }
                if (r.status == net::IoStatus::WantWrite || r.status == net::IoStatus::WantRead) {
                    wait(d, dst,
                         r.status == net::IoStatus::WantWrite ? Socket::wait_write : Socket::wait_read);
                    return;
                }
                abort();
                return;
            }
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
            d.buf.resize(kChunk);
            net::IoResult r = net::transportRead(src.native_handle(), srcSsl, d.buf.data(), kChunk);
            if (r.status == net::IoStatus::Ok) {
                d.buf.resize(r.n);
                continue;
            }
            d.buf.clear();
            if (r.status == net::IoStatus::WantRead || r.status == net::IoStatus::WantWrite) {
                wait(d, src, r.status == net::IoStatus::WantRead ? Socket::wait_read : Socket::wait_write);
                return;
            }
            if (r.status == net::IoStatus::Eof) {
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

    net::Worker& worker_;
    Socket client_;
    Socket upstream_;
    SSL* ssl_;
    Dir up_;                              // upstream → client
    Dir down_{{}, 0, false, false, true}; // client → upstream
    bool closed_ = false;
};
} // namespace

void startTunnel(net::Worker& worker, net::Connection::Socket client, SSL* ssl, Exchange::Socket upstream,
                 std::string_view toClient, std::string_view toUpstream) {
    auto t = std::make_shared<Tunnel>(worker, std::move(client), ssl, std::move(upstream));
    t->start(toClient, toUpstream);
}

} // namespace portico::proxy
