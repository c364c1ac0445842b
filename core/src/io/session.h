// What a worker keeps for each accepted socket, whatever protocol runs on it (HTTP/1.1, HTTP/2,
// a WebSocket session, a proxy tunnel), and what such a session may ask of its worker. Below
// every protocol: the sessions of ws/ and proxy/ live in a worker's list without knowing the
// server that made them (server/ implements SessionHost).
#pragma once

#include "io/io_buffer.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>

namespace portico::io {

/// A socket bound to the worker's io_context executor: smaller than one with the polymorphic
/// executor, and so are the operations Asio allocates for it.
using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, boost::asio::io_context::executor_type>;

/// A live connection in a worker's intrusive list. The worker's ticker calls checkDeadline on
/// every session (every 250 ms) and onDrain/abort when it stops; all on the worker's thread.
class Session {
public:
    using Clock = std::chrono::steady_clock;
    virtual ~Session() = default;

    /// Enforces the deadline of the current phase (timeouts, parking idle buffers).
    virtual void checkDeadline(Clock::time_point now) = 0;
    /// The worker starts draining: idle sessions close now, busy ones after their exchanges.
    virtual void onDrain() = 0;
    /// Closes at once (drain timeout passed, or a fatal error).
    virtual void abort() = 0;
    /// A socket this session parked (Worker::park) has input or was closed by the peer; the
    /// worker has taken no action on it: the session unparks it and reads.
    virtual void unparked() {}
    /// The worker is being destroyed with its loop stopped: a parked session drops the reference
    /// that kept it alive while parked (and may be destroyed in this call).
    virtual void releaseParked() {}

    Session* prev = nullptr; // worker's intrusive list
    Session* next = nullptr;
};

/// The worker as its sessions see it: one thread, one io_context. Every call on the worker's
/// thread only, except io() (to post to it from another thread).
class SessionHost {
public:
    using Clock = std::chrono::steady_clock;

    /// The worker's event loop.
    virtual boost::asio::io_context& io() = 0;
    /// The worker's pool of I/O buffers (16 KiB each; idle sessions hold none).
    virtual BufferPool& buffers() = 0;
    /// Puts `s` in the worker's list (deadlines, drain) / takes it out; a session does both once.
    virtual void link(Session* s) = 0;
    virtual void unlink(Session* s) = 0;
    /// The worker's clock, read once per turn of its loop.
    virtual Clock::time_point now() const = 0;
    /// True once the server stops: new exchanges are refused (503), idle sessions close.
    virtual bool draining() const = 0;

protected:
    ~SessionHost() = default;
};

} // namespace portico::io
