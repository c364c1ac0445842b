// A worker: one thread, one io_context, its own SO_REUSEPORT listeners and the connections they accept.
#pragma once

#include "capture/recorder.h"
#include "io/io_buffer.h"
#include "io/session.h"
#include "io/slot_allocator.h"
#include "server/access_log.h"
#include "server/snapshot.h"

#include <portico/handlers/dispatch.h>
#include <portico/http/message.h>
#include <portico/http1/parser.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace portico::server {

/// True at most once a second for each `last` (a static of the caller, shared by every thread):
/// for stderr lines that a scanner or a flood of clients would otherwise repeat without end.
inline bool onceASecond(std::atomic<std::int64_t>& last) {
    const std::int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
    std::int64_t prev = last.load(std::memory_order_relaxed);
    return prev != now && last.compare_exchange_strong(prev, now);
}

class Connection;
using io::Session;

/// Relaxed per-worker counters, summed by the engine.
struct WorkerCounters {
    std::atomic<std::uint64_t> accepted{0};
    std::atomic<std::uint64_t> open{0};
    std::atomic<std::uint64_t> requests{0};
    std::atomic<std::uint64_t> parseErrors{0};
    std::atomic<std::uint64_t> timeouts{0};
    std::atomic<std::uint64_t> refused{0};
    std::atomic<std::uint64_t> denied{0}; // forward proxy clients outside forward_proxy.allow (403)
    std::atomic<std::uint64_t> tlsHandshakeFailures{0};
    std::atomic<std::uint64_t> h2Abuse{0}; // connections cut off with GOAWAY(ENHANCE_YOUR_CALM)
};

/// A worker's io_context. destroyHandlers() lets ~Worker destroy the handlers still queued or
/// pending (and the connections they keep alive) while the worker's other members are alive;
/// io_context's own destructor would do it after them.
class WorkerIo : public boost::asio::io_context {
public:
    using boost::asio::io_context::io_context;
    /// Shuts the services down (execution_context::shutdown): every handler not run yet is
    /// destroyed, not called. io objects on this context may still be destroyed afterwards.
    void destroyHandlers() { shutdown(); }
};

/// Final, so that the server's own calls (through Worker&) are direct; the sessions of ws/ and
/// proxy/ see the io::SessionHost part only.
class Worker final : public io::SessionHost {
public:
    using Clock = std::chrono::steady_clock;

    Worker(unsigned index, SnapshotSlot& slot, std::shared_ptr<AccessLogger> log);
    ~Worker();

    /// Opens a listener on `host:port` with SO_REUSEPORT on this worker's io_context. Call before
    /// start() or through runSync(). Returns the bound port (0 and `error` on failure).
    std::uint16_t openListener(const std::string& host, std::uint16_t port, std::string& error);
    /// Closes the listener bound to `host:port` (no-op if none).
    void closeListener(const std::string& host, std::uint16_t port);

    void start();
    /// Stop accepting; close idle connections; the thread exits when no connection is left or
    /// `timeout` has passed (then the rest are closed).
    void beginDrain(std::chrono::nanoseconds timeout);
    void join();
    /// Runs `fn` on the worker thread and waits for it (or runs it inline if not started).
    void runSync(const std::function<void()>& fn);

    // ---- used by connections (worker thread only) ----
    boost::asio::io_context& io() override { return io_; }
    io::BufferPool& buffers() override { return pool_; }
    /// Takes the snapshot the engine published last, if it changed. Called only where an event
    /// enters the worker (a connection's read completion, an accept, the ticker), never in the
    /// middle of handling one: a route, an action or a limit read from snapshot() stays valid (and
    /// the same snapshot) until the handler returns, and snapshotPtr() is the snapshot they came
    /// from. (Switching mid-handler freed the old snapshot under a proxy exchange's action.)
    void refreshSnapshot() {
        if (slot_.generation.load(std::memory_order_acquire) != generation_) snap_ = slot_.load(generation_);
    }
    /// The worker's current snapshot (see refreshSnapshot).
    const Snapshot& snapshot() const { return *snap_; }
    /// The same, for what must keep it alive past the handler (a proxy exchange, a WebSocket).
    std::shared_ptr<const Snapshot> snapshotPtr() const { return snap_; }
    handlers::WorkerState& handlerState() { return handlerState_; }
    /// Called by a connection before it handles what it read. The first call in a turn of the
    /// event loop starts a new turn of handlerState() (a fresh stat memo); the rest of that turn's
    /// reads share it: one stat per file per turn, as h2o does, instead of one per connection read.
    /// The turn ends with a handler posted behind the completions epoll delivered in this turn:
    /// Asio queues it after them and before those of the next epoll_wait.
    void beginTurn() {
        if (turnOpen_) return;
        turnOpen_ = true;
        handlerState_.newTurn();
        boost::asio::post(io_, io::inSlot(turnEnd_, [this] { turnOpen_ = false; }));
    }
    http1::RequestHead& head() { return head_; }
    http::Request& request() { return request_; }
    http::Response& response() { return response_; }
    std::string& pathScratch() { return path_; }
    // HTTP/2 scratch (one stream is dispatched at a time on a worker).
    std::vector<http::Header>& h2Headers() { return h2Headers_; }
    std::vector<http::Header>& h2Trailers() { return h2Trailers_; }
    std::string& h2Arena() { return h2Arena_; }
    std::string_view dateLine() const { return {date_, dateLen_}; }
    Clock::time_point now() const override { return now_; }
    bool draining() const override { return draining_; }
    AccessLogger* accessLog() { return log_.get(); }
    WorkerCounters& counters() { return counters_; }
    const WorkerCounters& counters() const { return counters_; }
    /// Capture rings and live statistics shared with the engine's collector.
    capture::Recorder& recorder() { return recorder_; }
    /// Scratch for the Server-Timing value (capture.server_timing).
    std::string& timingScratch() { return timing_; }

    void link(Session* c) override;
    void unlink(Session* c) override;
    /// Parking: an idle keep-alive socket waits in this worker's park set (an epoll instance of
    /// its own, watched by one Asio wait for all of them) instead of holding a pending Asio
    /// operation (80 bytes of heap per idle connection; memory per idle connection is a benchmark
    /// target). When `fd` has input, a hang-up or an error, the worker calls s->unparked(), once
    /// (EPOLLONESHOT). Returns false when the socket cannot be parked (then wait with Asio).
    /// The session keeps itself alive while parked and calls unpark() before it closes `fd`.
    bool park(int fd, Session* s);
    /// Takes `fd` out of the park set (after unparked(), or to close it).
    void unpark(int fd);

private:
    struct Listener {
        std::string host;
        std::uint16_t port;
        boost::asio::ip::tcp::acceptor acceptor;
        std::list<io::HandlerSlot>::iterator acceptOp; // its pending accept operation (slot_allocator.h)
        boost::asio::ip::tcp::endpoint peer;           // the accepted client's address, from accept4
    };
    void accept(Listener& l);
    void watchParked();
    void tick();
    void updateClock();

    unsigned index_;
    SnapshotSlot& slot_;
    std::shared_ptr<const Snapshot> snap_;
    std::uint64_t generation_ = ~0ull;
    std::shared_ptr<AccessLogger> log_;
    // Storage of operations that can still sit in io_'s queue when the worker is destroyed (an
    // accept aborted by closing its acceptor after the loop stopped): declared before io_, so it is
    // freed after io_ has destroyed those operations. In the Listener itself, it was freed first and
    // the queue kept a dangling operation (heap-use-after-free, ASan, `portico serve` on SIGTERM).
    std::list<io::HandlerSlot> acceptSlots_;
    // The handler that ends a turn lives in turnEnd_ (one is pending at most): a post per turn
    // through Asio's recycling cache would take the block another operation needs (slot_allocator.h).
    io::HandlerSlot turnEnd_;
    WorkerIo io_{1};
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
    boost::asio::steady_timer ticker_;
    boost::asio::posix::stream_descriptor parked_; // the park set's epoll descriptor (park())
    bool parkWatched_ = false;                     // its async_wait is pending
    std::list<Listener> listeners_;
    std::thread thread_;
    io::BufferPool pool_{16 * 1024};
    handlers::WorkerState handlerState_;
    http1::RequestHead head_;
    http::Request request_;
    http::Response response_;
    std::string path_;
    std::vector<http::Header> h2Headers_;
    std::vector<http::Header> h2Trailers_;
    std::string h2Arena_;
    char date_[64]{};
    std::size_t dateLen_ = 0;
    std::time_t dateSecond_ = 0;
    Clock::time_point now_;
    Clock::time_point drainDeadline_;
    bool draining_ = false;
    bool turnOpen_ = false;    // beginTurn() ran in this turn of the event loop
    Session* first_ = nullptr; // intrusive list of live connections (for timeouts and drain)
    WorkerCounters counters_;
    capture::Recorder recorder_{index_};
    std::string timing_;
};

} // namespace portico::server
