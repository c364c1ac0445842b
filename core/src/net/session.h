// What a worker keeps for each accepted socket, whatever protocol runs on it (HTTP/1.1, HTTP/2).
#pragma once

#include <chrono>

namespace portico::net {

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

} // namespace portico::net
