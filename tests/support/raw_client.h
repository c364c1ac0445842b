// A blocking keep-alive HTTP/1.1 client over a POSIX socket that allocates nothing per request
// (used by the steady-state allocation and config-swap tests).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace portico::test {

/// A blocking TCP socket connected to 127.0.0.1:`port`, or -1. With `receiveBytes` > 0 its receive
/// buffer is set to that before connecting, so the window is small from the start and the server's
/// writes block as soon as the client stops reading.
inline int connectLoopback(std::uint16_t port, int receiveBytes = 0) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0); // not inherited by spawned processes
    if (fd < 0) return -1;
    if (receiveBytes > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receiveBytes, sizeof receiveBytes);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

/// A TCP socket listening on 127.0.0.1 at a free port (its number in `port`), or -1. `flags`
/// are added to socket()'s type (e.g. SOCK_NONBLOCK).
inline int listenLoopback(std::uint16_t& port, int backlog = 64, int flags = 0) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
    if (fd < 0) return -1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd, backlog) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        ::close(fd);
        return -1;
    }
    port = ntohs(a.sin_port);
    return fd;
}

class RawClient {
public:
    explicit RawClient(std::uint16_t port) : fd_(connectLoopback(port)) {
        int one = 1;
        if (fd_ >= 0) ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    ~RawClient() {
        if (fd_ >= 0) ::close(fd_);
    }
    bool ok() const { return fd_ >= 0; }

    /// Sends `request` and reads one response with a Content-Length body. Returns the status
    /// (0 on failure); `body()` views the body until the next call.
    int exchange(std::string_view request) {
        if (::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size()))
            return 0;
        std::size_t have = 0;
        for (;;) {
            ssize_t n = ::recv(fd_, buf_ + have, sizeof buf_ - have, 0);
            if (n <= 0) return 0;
            have += static_cast<std::size_t>(n);
            std::string_view v(buf_, have);
            std::size_t end = v.find("\r\n\r\n");
            if (end == std::string_view::npos) continue;
            std::size_t cl = v.find("Content-Length: ");
            if (cl == std::string_view::npos || cl > end) return 0;
            std::size_t len = std::strtoul(buf_ + cl + 16, nullptr, 10);
            if (have < end + 4 + len) continue;
            body_ = std::string_view(buf_ + end + 4, len);
            return std::atoi(buf_ + 9);
        }
    }
    std::string_view body() const { return body_; }

private:
    int fd_ = -1;
    char buf_[65536];
    std::string_view body_;
};

} // namespace portico::test
