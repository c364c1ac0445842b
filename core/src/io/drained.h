// markDrained: tells Asio's epoll reactor that a socket's receive queue is empty, so the next
// async_read_some on it waits for EPOLLIN instead of first trying a recv that fails with EAGAIN.
//
// Why: Boost 1.74's reactor tries every async_read_some speculatively (a recv before waiting) unless
// the previous read hit end of file. A keep-alive connection reads a request, answers it, then asks
// for the next one, which the client has not sent yet: one wasted recv per request, about a third
// of the syscalls of a small HTTP/1.1 exchange (recv, send, recv→EAGAIN). nginx counts a short read
// as "not ready" and waits for the next edge; this does the same. async_wait is no way out: it
// re-arms epoll with an epoll_ctl per wait.
//
// Safe because the descriptor is registered edge-triggered (EPOLLIN|EPOLLET) for its whole life:
// bytes arriving after the short read raise a new edge, and an edge already pending re-enables the
// speculative path before the queued read runs. Call only on the thread running the socket's
// io_context, right after a read that returned fewer bytes than asked (> 0).
//
// The reactor keeps that flag private; it is reached through the explicit-instantiation access rule
// ([temp.explicit]/12), pinned to the Boost version it was checked against (Debian 12's 1.74). Any
// other Boost or reactor compiles this to nothing: correct, one recv slower.
#pragma once

#include <boost/asio/basic_stream_socket.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/version.hpp>

namespace portico::io {

#if BOOST_VERSION == 107400 && defined(BOOST_ASIO_HAS_EPOLL) && !defined(BOOST_ASIO_DISABLE_EPOLL) &&        \
    !defined(BOOST_ASIO_HAS_IO_URING)
#define PORTICO_MARK_DRAINED 1
namespace detail {
using DescriptorState = boost::asio::detail::epoll_reactor::descriptor_state;
using TrySpeculative = bool (DescriptorState::*)[boost::asio::detail::epoll_reactor::max_ops];
struct TrySpeculativeTag {
    friend TrySpeculative member(TrySpeculativeTag);
};
template <TrySpeculative M> struct TrySpeculativeAccess {
    friend TrySpeculative member(TrySpeculativeTag) { return M; }
};
template struct TrySpeculativeAccess<&DescriptorState::try_speculative_>;

// basic_socket::impl_ is protected: named through a derived class, applied to the base.
template <class Socket> struct SocketImpl : Socket {
    static auto& of(Socket& s) { return s.*(&SocketImpl::impl_); }
};
} // namespace detail

template <class Executor>
inline void markDrained(boost::asio::basic_stream_socket<boost::asio::ip::tcp, Executor>& socket) {
    using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, Executor>;
    auto* state = detail::SocketImpl<Socket>::of(socket).get_implementation().reactor_data_;
    if (state)
        (state->*member(detail::TrySpeculativeTag{}))[boost::asio::detail::epoll_reactor::read_op] = false;
}
/// True while no read event (data, end of file, an error) has reached the socket since
/// markDrained: the reactor sets the flag again on every such edge, even with no read pending. A
/// pooled upstream connection waits with nothing pending, so this is its watcher at no cost. An
/// event the reactor has not picked up yet (within its current turn) is not seen.
template <class Executor>
inline bool stillDrained(boost::asio::basic_stream_socket<boost::asio::ip::tcp, Executor>& socket) {
    using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, Executor>;
    auto* state = detail::SocketImpl<Socket>::of(socket).get_implementation().reactor_data_;
    return state &&
           !(state->*member(detail::TrySpeculativeTag{}))[boost::asio::detail::epoll_reactor::read_op];
}
#else
template <class Socket> inline void markDrained(Socket&) {}
template <class Socket> inline bool stillDrained(Socket&) { return false; } // unknown: probe
#endif

} // namespace portico::io
