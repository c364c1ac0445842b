// Connecting to every address a name resolves to: the one way every client in Portico (reverse-proxy
// and gRPC upstreams, FastCGI over TCP, the load generator, replay) turns HOST:PORT into a socket.
#pragma once

#include <portico/config/config.h>

#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace portico::client {

using tcp = boost::asio::ip::tcp;
/// The sockets servers' upstream connections use (bound to one worker's io_context).
using TcpSocket = boost::asio::basic_stream_socket<tcp, boost::asio::io_context::executor_type>;
using StreamSocket = boost::asio::basic_stream_socket<boost::asio::generic::stream_protocol,
                                                      boost::asio::io_context::executor_type>;

/// Time an address that is not the last one gets before the next is tried (RFC 8305 §5 races after
/// 250 ms; we try in order and give a slow first address longer, as a remote upstream may need it).
/// Refusals (nothing listens) fail at once and move on without waiting.
inline constexpr std::chrono::milliseconds kAttemptTimeout{1000};

/// `host` (a name, or an IPv4/IPv6 literal, brackets allowed) and `port` as TCP endpoints in the
/// order getaddrinfo gives (RFC 6724: "localhost" on a stock Debian gives [::1] before 127.0.0.1).
/// A name `hosts` maps (the config's `hosts:`, config::findHostOverride) is that one address, and a
/// literal, neither looked up. Blocking (names of a dev setup come from /etc/hosts at once). Empty,
/// with `error` = "cannot resolve 'NAME': REASON", when the name has no address.
std::vector<tcp::endpoint> resolve(const std::string& host, std::uint16_t port, std::string& error,
                                   const config::HostOverrides* hosts = nullptr);

/// True for 127.0.0.0/8, ::1 and ::ffff:127.x.y.z: this machine only.
bool isLoopback(const boost::asio::ip::address& address);

/// "127.0.0.1:8080", "[::1]:8080".
std::string endpointText(const tcp::endpoint& endpoint);

/// The error a client reports when no address answered: "cannot connect to 127.0.0.1:9: Connection
/// refused" for a literal, "cannot connect to localhost: [::1]:9: Connection refused; 127.0.0.1:9:
/// Connection refused" for a name (`failures` as asyncConnect and connectFd give them).
std::string cannotConnect(const std::string& host, const std::string& failures);

/// Completion of asyncConnect. `ec` is empty on success (then `socket` is connected to `endpoint`);
/// else it is the last attempt's error (operation_aborted when the caller cancelled or closed the
/// socket) and `failures` lists every attempt: "[::1]:8080: Connection refused; 127.0.0.1:8080:
/// timed out".
using ConnectHandler = std::function<void(const boost::system::error_code& ec, const tcp::endpoint& endpoint,
                                          const std::string& failures)>;

/// Connects `socket` (open or not) to the first of `endpoints` that accepts, trying them in order;
/// each but the last gets kAttemptTimeout. The caller keeps its own overall deadline: cancelling or
/// closing `socket` ends the attempts with operation_aborted. `socket` must outlive the operation
/// (the handler's captures normally keep its owner alive). One address costs what a plain
/// async_connect costs (no timer, no allocation beyond the handler). `endpoints` must not be empty.
void asyncConnect(TcpSocket& socket, std::vector<tcp::endpoint> endpoints, ConnectHandler handler);
/// The same for a protocol-generic stream socket (FastCGI, which also speaks over Unix sockets).
void asyncConnect(StreamSocket& socket, std::vector<tcp::endpoint> endpoints, ConnectHandler handler);

/// Synchronous form for command-line clients (replay, the load generator's pre-flight): the
/// descriptor of a connected TCP socket (close-on-exec; O_NONBLOCK unless `blocking`) and the
/// endpoint it reached, or -1 with `failures` as above. `timeout` bounds the whole; the last
/// address gets what remains, the others at most kAttemptTimeout each. `cancelFd`, when not -1, is
/// watched next to each attempt: once it is readable the attempt's socket is closed and -1 returned
/// at once (`failures` ends with "ADDRESS: cancelled").
int connectFd(const std::vector<tcp::endpoint>& endpoints, std::chrono::nanoseconds timeout, bool blocking,
              tcp::endpoint& connected, std::string& failures, int cancelFd = -1);

} // namespace portico::client
