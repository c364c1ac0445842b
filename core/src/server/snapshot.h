// One published config together with its compiled routing tables, shared read-only by the workers.
#pragma once

#include <portico/config/config.h>
#include <portico/config/network.h>
#include <portico/routing/router.h>
#include <portico/rules/rules.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace portico::tls {
class ServerTls;
}
namespace portico::ws {
class Hub;
}

namespace portico::server {

struct Snapshot {
    /// `counts`: the engine's rule match counts (the same object in every snapshot), or null.
    /// `breakpoints`: the engine's Paused queue (the same object in every snapshot), or null.
    explicit Snapshot(std::shared_ptr<const config::Config> c,
                      std::shared_ptr<rules::MatchCounts> counts = nullptr,
                      std::shared_ptr<rules::BreakpointQueue> breakpoints = nullptr)
        : config(std::move(c)), router(*config), rules(*config, counts.get(), breakpoints.get()),
          ruleCounts(std::move(counts)), breakpoints(std::move(breakpoints)) {}
    std::shared_ptr<const config::Config> config;
    routing::Router router;
    rules::RuleSet rules; ///< `rules:` compiled (points into `config`, `ruleCounts` and `breakpoints`)
    std::shared_ptr<rules::MatchCounts> ruleCounts;
    /// Kept alive by every snapshot: a paused exchange leaves it when it ends, after the engine may be gone.
    std::shared_ptr<rules::BreakpointQueue> breakpoints;
    /// TLS of each listener by its bound port; absent: cleartext. Filled before publishing.
    std::unordered_map<std::uint16_t, std::shared_ptr<tls::ServerTls>> tls;
    /// Bound ports of the listeners that are also forward proxies (config::Listen::forwardProxy).
    std::unordered_set<std::uint16_t> forwardProxyPorts;
    /// The clients each forward proxy listener admits (forward_proxy.allow, parsed; loopback
    /// without it), by bound port: checked at accept, before a byte is read (Worker::accept).
    std::unordered_map<std::uint16_t, std::vector<config::Network>> clientNetworks;
    /// Forward proxy listeners that intercept TLS (forward_proxy.intercept), by bound port.
    struct Interception {
        std::shared_ptr<tls::ServerTls> tls; ///< leaves from the local CA for any name asked
        config::ForwardProxy options;
    };
    std::unordered_map<std::uint16_t, Interception> intercept;
    /// The engine's WebSocket hub (rooms, live reload, counters); the same object in every snapshot.
    std::shared_ptr<ws::Hub> hub;
};

/// Where the engine publishes snapshots. Workers compare `generation` (one relaxed-cost atomic
/// load per request) and take the mutex only when it changed.
struct SnapshotSlot {
    std::mutex mutex;
    std::shared_ptr<const Snapshot> current;
    std::atomic<std::uint64_t> generation{0};

    void publish(std::shared_ptr<const Snapshot> s) {
        std::lock_guard lock(mutex);
        current = std::move(s);
        generation.fetch_add(1, std::memory_order_release);
    }
    std::shared_ptr<const Snapshot> load(std::uint64_t& gen) {
        std::lock_guard lock(mutex);
        gen = generation.load(std::memory_order_acquire);
        return current;
    }
};

} // namespace portico::server
