// Worker thread, SO_REUSEPORT listeners, the coarse clock/Date ticker and drain.
#include "server/worker.h"

#include "client/http1_call.h"
#include "io/transport.h"
#include "server/connection.h"
#include "server/front_door.h"

#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/socket_base.hpp>

#include <cstdio>
#include <ctime>
#include <fcntl.h>
#include <future>

#include <pthread.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::server {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {
// SO_REUSEPORT: each worker has its own accept queue; the kernel spreads connections.
using reuse_port = asio::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>;
constexpr auto kTick = std::chrono::milliseconds(250);

// Whether `peer` may use the listener on `port`: a forward proxy listener admits only its client
// networks (Snapshot::clientNetworks); every other listener anyone. No allocation.
bool admitted(const Snapshot& snap, std::uint16_t port, const tcp::endpoint& peer) {
    if (snap.clientNetworks.empty()) return true;
    auto it = snap.clientNetworks.find(port);
    if (it == snap.clientNetworks.end()) return true;
    const auto address = peer.address();
    const bool v6 = address.is_v6();
    const auto v4Bytes = v6 ? asio::ip::address_v4::bytes_type{} : address.to_v4().to_bytes();
    const auto v6Bytes = v6 ? address.to_v6().to_bytes() : asio::ip::address_v6::bytes_type{};
    const std::uint8_t* bytes = v6 ? v6Bytes.data() : v4Bytes.data();
    for (const config::Network& n : it->second)
        if (config::contains(n, bytes, v6)) return true;
    return false;
}

// One stderr line a second at most for refused forward proxy clients (a scan is not a flood).
void logDenied(const tcp::endpoint& peer, std::uint16_t port) {
    static std::atomic<std::int64_t> last{0};
    if (!onceASecond(last)) return;
    std::fprintf(stderr, "portico: refused %s on the forward proxy's port %u: not in forward_proxy.allow\n",
                 peer.address().to_string().c_str(), unsigned(port));
}
} // namespace

Worker::Worker(unsigned index, SnapshotSlot& slot, std::shared_ptr<AccessLogger> log)
    : index_(index), slot_(slot), log_(std::move(log)), work_(asio::make_work_guard(io_)), ticker_(io_),
      parked_(io_) {
    refreshSnapshot();
    updateClock();
    // Without a park set (epoll_create1 failed) idle connections wait with Asio as before.
    if (const int fd = ::epoll_create1(EPOLL_CLOEXEC); fd >= 0) {
        boost::system::error_code ec;
        parked_.assign(fd, ec);
        if (ec) ::close(fd);
    }
}

Worker::~Worker() {
    if (thread_.joinable()) {
        io_.stop();
        thread_.join();
    }
    // Parked sessions are kept alive by themselves, not by a pending operation that io_'s
    // destructor would free: release them while the worker's members are all still alive.
    for (Session* c = first_; c;) {
        Session* next = c->next; // releaseParked may destroy and unlink c
        c->releaseParked();
        c = next;
    }
    // So are the connections held only by a handler that never ran (an engine stopped without a
    // drain, a worker that never started): members declared after io_ (the buffer pool, the
    // session list, the counters, the capture recorder) are destroyed before io_, so io_'s own
    // destructor would free those handlers too late.
    io_.destroyHandlers();
}

bool Worker::park(int fd, Session* s) {
    if (!parked_.is_open()) return false;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
    ev.data.ptr = s;
    if (::epoll_ctl(parked_.native_handle(), EPOLL_CTL_ADD, fd, &ev) != 0) return false;
    if (!parkWatched_) watchParked();
    return true;
}

void Worker::unpark(int fd) {
    if (parked_.is_open()) ::epoll_ctl(parked_.native_handle(), EPOLL_CTL_DEL, fd, nullptr);
}

void Worker::watchParked() {
    parkWatched_ = true;
    parked_.async_wait(
        asio::posix::stream_descriptor::wait_read, [this](const boost::system::error_code& ec) {
            parkWatched_ = false;
            if (ec) return;
            refreshSnapshot(); // an event entering the worker
            // One event at a time: handling one session never sees another's stale pointer (a
            // session leaves the set before it is destroyed). Bounded per wake; Asio's wait re-arms
            // the descriptor, so what is left wakes it again at once.
            epoll_event ev;
            for (int i = 0; i < 1024 && ::epoll_wait(parked_.native_handle(), &ev, 1, 0) == 1; ++i)
                static_cast<Session*>(ev.data.ptr)->unparked();
            watchParked();
        });
}

std::uint16_t Worker::openListener(const std::string& host, std::uint16_t port, std::string& error) {
    boost::system::error_code ec;
    auto address = asio::ip::make_address(host, ec);
    if (ec) {
        error = host + ": not an IP address";
        return 0;
    }
    tcp::endpoint ep(address, port);
    tcp::acceptor acceptor(io_);
    acceptor.open(ep.protocol(), ec);
    if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor.set_option(reuse_port(true), ec);
    if (!ec && address.is_v6()) acceptor.set_option(asio::ip::v6_only(true), ec);
    if (!ec) acceptor.bind(ep, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
        error =
            (address.is_v6() ? "[" + host + "]" : host) + ":" + std::to_string(port) + ": " + ec.message();
        return 0;
    }
    acceptor.non_blocking(true, ec);
    // Not inherited by child processes (a browser `portico proxy chromium` starts, a FastCGI
    // backend): a child holding the listener keeps the port bound after Portico stops.
    ::fcntl(acceptor.native_handle(), F_SETFD, FD_CLOEXEC);
    std::uint16_t bound = acceptor.local_endpoint(ec).port();
    listeners_.push_back(
        Listener{host, bound, std::move(acceptor), acceptSlots_.emplace(acceptSlots_.end()), {}});
    if (thread_.joinable()) accept(listeners_.back());
    return bound;
}

void Worker::closeListener(const std::string& host, std::uint16_t port) {
    for (auto it = listeners_.begin(); it != listeners_.end(); ++it) {
        // A listener closed by an earlier call waits for its posted erase: closing it again would
        // erase it twice.
        if (it->host == host && it->port == port && it->acceptor.is_open()) {
            boost::system::error_code ec;
            it->acceptor.close(ec);
            // The pending accept completes with operation_aborted; erase after it has run.
            asio::post(io_, [this, it] {
                acceptSlots_.erase(it->acceptOp);
                listeners_.erase(it);
            });
            return;
        }
    }
}

void Worker::start() {
    for (auto& l : listeners_)
        if (l.acceptor.is_open()) accept(l); // one closed before start() only waits for its erase
    tick();
    thread_ = std::thread([this] {
        io::blockSigpipe(); // a client gone mid-sendfile is an EPIPE, whatever the host's SIGPIPE action
        io_.run();
    });
    // "portico-w0", … in top -H, perf and gdb (15 characters at most); named here, not in the
    // thread, so the name is there when start() returns.
    pthread_setname_np(thread_.native_handle(), ("portico-w" + std::to_string(index_)).c_str());
}

void Worker::runSync(const std::function<void()>& fn) {
    if (!thread_.joinable()) {
        fn();
        return;
    }
    std::promise<void> done;
    asio::post(io_, [&] {
        fn();
        done.set_value();
    });
    done.get_future().wait();
}

void Worker::accept(Listener& l) {
    l.acceptor.async_accept(
        io_, l.peer,
        io::inSlot(*l.acceptOp, [this, &l](const boost::system::error_code& ec, io::Socket socket) {
            if (ec == asio::error::operation_aborted || !l.acceptor.is_open()) return;
            if (!ec) {
                counters_.accepted.fetch_add(1, std::memory_order_relaxed);
                refreshSnapshot();
                const auto& limits = snapshot().config->limits;
                if (!admitted(snapshot(), l.port, l.peer)) {
                    // A client outside forward_proxy.allow: 403 at once, nothing read, then close. As
                    // tinyproxy answers a client its Allow/Deny lists refuse (and Squid's
                    // http_access deny): the user of a device the list forgot sees why, where a
                    // bare reset would look like a network fault. Best effort, non-blocking.
                    counters_.denied.fetch_add(1, std::memory_order_relaxed);
                    static constexpr char kDenial[] =
                        "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: 61\r\n"
                        "Connection: close\r\n\r\nThis proxy does not serve your address "
                        "(forward_proxy.allow)\n";
                    ::send(socket.native_handle(), kDenial, sizeof kDenial - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
                    logDenied(l.peer, l.port);
                    boost::system::error_code ignored;
                    socket.close(ignored);
                } else if (counters_.open.load(std::memory_order_relaxed) >= limits.maxConnectionsPerWorker) {
                    // Over the limit: a clear refusal, then close (best effort, non-blocking).
                    counters_.refused.fetch_add(1, std::memory_order_relaxed);
                    static constexpr char kRefusal[] =
                        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: "
                        "30\r\nConnection: close\r\nRetry-After: 1\r\n\r\nToo many connections; retry.\r\n";
                    ::send(socket.native_handle(), kRefusal, sizeof kRefusal - 1,
                           MSG_NOSIGNAL | MSG_DONTWAIT);
                    boost::system::error_code ignored;
                    socket.close(ignored);
                } else {
                    acceptConnection(*this, std::move(socket), l.port);
                }
            }
            if (!draining_) accept(l);
        }));
}

void Worker::updateClock() {
    now_ = Clock::now();
    std::time_t t = std::time(nullptr);
    if (t == dateSecond_) return;
    dateSecond_ = t;
    std::tm tm{};
    gmtime_r(&t, &tm);
    dateLen_ = std::strftime(date_, sizeof date_, "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
}

void Worker::tick() {
    updateClock();
    refreshSnapshot();
    for (Session* c = first_; c;) {
        Session* next = c->next; // checkDeadline may unlink c
        c->checkDeadline(now_);
        c = next;
    }
    client::sweepIdleConnections(io_, now_);
    if (draining_) {
        if (!first_) {
            work_.reset();
            io_.stop();
            return;
        }
        if (now_ >= drainDeadline_) {
            for (Session* c = first_; c;) {
                Session* next = c->next;
                c->abort();
                c = next;
            }
        }
    }
    ticker_.expires_after(draining_ ? std::chrono::milliseconds(20) : kTick);
    ticker_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) tick();
    });
}

void Worker::beginDrain(std::chrono::nanoseconds timeout) {
    asio::post(io_, [this, timeout] {
        draining_ = true;
        drainDeadline_ = Clock::now() + timeout;
        boost::system::error_code ec;
        for (auto& l : listeners_)
            l.acceptor.close(ec);
        for (Session* c = first_; c;) {
            Session* next = c->next;
            c->onDrain();
            c = next;
        }
        ticker_.cancel();
        ticker_.expires_after(std::chrono::milliseconds(1));
        ticker_.async_wait([this](const boost::system::error_code& e) {
            if (!e) tick();
        });
    });
}

void Worker::join() {
    if (thread_.joinable()) thread_.join();
}

void Worker::link(Session* c) {
    c->next = first_;
    c->prev = nullptr;
    if (first_) first_->prev = c;
    first_ = c;
    counters_.open.fetch_add(1, std::memory_order_relaxed);
}

void Worker::unlink(Session* c) {
    if (c->prev)
        c->prev->next = c->next;
    else
        first_ = c->next;
    if (c->next) c->next->prev = c->prev;
    c->prev = c->next = nullptr;
    counters_.open.fetch_sub(1, std::memory_order_relaxed);
}

} // namespace portico::server
