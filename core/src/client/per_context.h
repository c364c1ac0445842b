// State a client keeps per io_context (connection pools, upstream failure marks, the deadline
// timer): an Asio service, created with the first call on an io_context and destroyed with it, so a
// client run on a private io_context (replay, a load run) leaves nothing behind on its thread.
#pragma once

#include <boost/asio/execution_context.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <cstdint>
#include <optional>

namespace portico::client {

namespace detail {
/// Bumped when any PerContext service shuts down: every thread's cached lookup is then redone (a
/// later io_context may sit at the same address).
inline std::atomic<std::uint64_t> contextShutdowns{0};
} // namespace detail

/// `State` (default-constructible) for one io_context. Used on that io_context's thread only.
template <class State> class PerContext final : public boost::asio::execution_context::service {
public:
    static inline boost::asio::execution_context::id id;

    explicit PerContext(boost::asio::execution_context& context) : service(context) { state_.emplace(); }

    /// `io`'s State, looked up once per thread and io_context (use_service takes the io_context's
    /// registry lock).
    static State& of(boost::asio::io_context& io) {
        thread_local boost::asio::io_context* cachedIo = nullptr;
        thread_local State* cached = nullptr;
        thread_local std::uint64_t cachedGeneration = 0;
        const std::uint64_t generation = detail::contextShutdowns.load(std::memory_order_acquire);
        if (cachedIo != &io || cachedGeneration != generation || !cached) {
            cached = &*boost::asio::use_service<PerContext>(io).state_;
            cachedIo = &io;
            cachedGeneration = generation;
        }
        return *cached;
    }

private:
    // The io_context is going away: its sockets and timers in State go now, while its reactor
    // still knows them.
    void shutdown() override {
        state_.reset();
        state_.emplace();
        detail::contextShutdowns.fetch_add(1, std::memory_order_release);
    }

    std::optional<State> state_;
};

} // namespace portico::client
