// Every address of a name, in order: the asynchronous connect for servers' upstreams, the synchronous
// one for command-line clients.
#include "client/connect.h"

#include <portico/config/network.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::client {

namespace asio = boost::asio;

std::vector<tcp::endpoint> resolve(const std::string& host, std::uint16_t port, std::string& error,
                                   const config::HostOverrides* hosts) {
    std::string bare = host;
    if (bare.size() > 2 && bare.front() == '[' && bare.back() == ']') bare = bare.substr(1, bare.size() - 2);
    std::vector<tcp::endpoint> out;
    boost::system::error_code ec;
    if (const config::HostOverride* mapped = hosts ? config::findHostOverride(*hosts, bare) : nullptr) {
        out.emplace_back(asio::ip::make_address(mapped->address, ec), port); // a literal (validated)
        if (!ec) return out;
        out.clear();
    }
    auto address = asio::ip::make_address(bare, ec);
    if (!ec) {
        out.emplace_back(address, port);
        return out;
    }
    asio::io_context io;
    tcp::resolver resolver(io);
    auto results = resolver.resolve(bare, std::to_string(port), ec);
    if (!ec)
        for (const auto& r : results)
            out.push_back(r.endpoint());
    if (out.empty()) error = "cannot resolve '" + bare + "': " + (ec ? ec.message() : "no address");
    return out;
}

bool isLoopback(const asio::ip::address& a) {
    if (a.is_loopback()) return true;
    if (a.is_v6() && a.to_v6().is_v4_mapped())
        return asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()).is_loopback();
    return false;
}

std::string endpointText(const tcp::endpoint& endpoint) {
    const auto a = endpoint.address();
    return (a.is_v6() ? "[" + a.to_string() + "]" : a.to_string()) + ":" + std::to_string(endpoint.port());
}

std::string cannotConnect(const std::string& host, const std::string& failures) {
    std::string bare = host;
    if (bare.size() > 2 && bare.front() == '[' && bare.back() == ']') bare = bare.substr(1, bare.size() - 2);
    boost::system::error_code ec;
    asio::ip::make_address(bare, ec);
    return "cannot connect to " + (ec ? bare + ": " : std::string()) + failures;
}

namespace {

void addFailure(std::string& failures, const tcp::endpoint& endpoint, const std::string& why) {
    if (!failures.empty()) failures += "; ";
    failures += endpointText(endpoint) + ": " + why;
}

// Several addresses: one attempt at a time, each but the last bounded by its own timer.
template <class Socket> struct Attempts : std::enable_shared_from_this<Attempts<Socket>> {
    Attempts(Socket& s, std::vector<tcp::endpoint> e, ConnectHandler h)
        : socket(s), endpoints(std::move(e)), handler(std::move(h)), timer(s.get_executor()) {}

    void next() {
        const bool last = index + 1 == endpoints.size();
        boost::system::error_code ignored;
        if (socket.is_open()) socket.close(ignored); // the next address may be of the other family
        timedOut = false;
        if (!last) {
            timer.expires_after(kAttemptTimeout);
            timer.async_wait(
                [self = this->shared_from_this(), attempt = index](const boost::system::error_code& e) {
                    if (e || self->index != attempt || self->done) return;
                    self->timedOut = true;
                    boost::system::error_code ignored;
                    self->socket.close(ignored); // the connect completes with operation_aborted
                });
        }
        socket.async_connect(typename Socket::endpoint_type(endpoints[index]),
                             [self = this->shared_from_this()](const boost::system::error_code& e) {
                                 self->timer.cancel();
                                 const tcp::endpoint& tried = self->endpoints[self->index];
                                 if (!e) return self->finish(e);
                                 if (e == asio::error::operation_aborted && !self->timedOut)
                                     return self->finish(e); // the caller's
                                 addFailure(self->failures, tried,
                                            self->timedOut ? "timed out" : e.message());
                                 if (++self->index == self->endpoints.size()) return self->finish(e);
                                 self->next();
                             });
    }

    void finish(const boost::system::error_code& e) {
        done = true;
        const tcp::endpoint at = endpoints[std::min(index, endpoints.size() - 1)];
        ConnectHandler h = std::move(handler);
        h(e, at, failures);
    }

    Socket& socket;
    std::vector<tcp::endpoint> endpoints;
    ConnectHandler handler;
    asio::steady_timer timer;
    std::string failures;
    std::size_t index = 0;
    bool timedOut = false;
    bool done = false;
};

template <class Socket>
void connectEach(Socket& socket, std::vector<tcp::endpoint> endpoints, ConnectHandler handler) {
    if (endpoints.size() == 1) {
        const tcp::endpoint only = endpoints.front();
        socket.async_connect(typename Socket::endpoint_type(only),
                             [only, h = std::move(handler)](const boost::system::error_code& e) {
                                 std::string failures;
                                 if (e && e != asio::error::operation_aborted)
                                     addFailure(failures, only, e.message());
                                 h(e, only, failures);
                             });
        return;
    }
    std::make_shared<Attempts<Socket>>(socket, std::move(endpoints), std::move(handler))->next();
}

} // namespace

void asyncConnect(TcpSocket& socket, std::vector<tcp::endpoint> endpoints, ConnectHandler handler) {
    connectEach(socket, std::move(endpoints), std::move(handler));
}

void asyncConnect(StreamSocket& socket, std::vector<tcp::endpoint> endpoints, ConnectHandler handler) {
    connectEach(socket, std::move(endpoints), std::move(handler));
}

int connectFd(const std::vector<tcp::endpoint>& endpoints, std::chrono::nanoseconds timeout, bool blocking,
              tcp::endpoint& connected, std::string& failures, int cancelFd) {
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + timeout;
    if (endpoints.empty()) failures = "no address";
    for (std::size_t i = 0; i < endpoints.size(); ++i) {
        const tcp::endpoint& ep = endpoints[i];
        const bool last = i + 1 == endpoints.size();
        auto until = deadline;
        if (!last) until = std::min(until, Clock::now() + kAttemptTimeout);
        const int fd = ::socket(ep.protocol().family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            addFailure(failures, ep, std::strerror(errno));
            continue;
        }
        int err = 0;
        if (::connect(fd, ep.data(), static_cast<socklen_t>(ep.size())) != 0) {
            err = errno;
            if (err == EINPROGRESS) {
                err = ETIMEDOUT;
                for (;;) {
                    const auto left =
                        std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
                    if (left <= 0) break;
                    pollfd p[2] = {{fd, POLLOUT, 0}, {cancelFd, POLLIN, 0}};
                    const int n = ::poll(p, cancelFd >= 0 ? 2 : 1, static_cast<int>(left));
                    if (n < 0 && errno == EINTR) continue;
                    if (n > 0 && cancelFd >= 0 && (p[1].revents & POLLIN)) {
                        ::close(fd);
                        addFailure(failures, ep, "cancelled");
                        return -1;
                    }
                    if (n > 0) {
                        socklen_t len = sizeof err;
                        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
                    }
                    break;
                }
            }
        }
        if (err == 0) {
            if (blocking) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
            connected = ep;
            return fd;
        }
        ::close(fd);
        addFailure(failures, ep, err == ETIMEDOUT ? "timed out" : std::strerror(err));
    }
    return -1;
}

} // namespace portico::client
