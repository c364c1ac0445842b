// The load engine's worker threads: each with its own io_context drives its share of the run's
// connections (client::Connection: HTTP/1.1 keep-alive or HTTP/2, cleartext or TLS), decides when
// each request starts (closed or open model), times every request, and the counters are merged
// when the run ends. The run's set-up is in runner.cpp.
#include "load/plan.h"

#include "client/connection.h"
#include "io/transport.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <latch>
#include <limits>
#include <thread>

#include <pthread.h>
#include <sys/resource.h>
#include <sys/time.h>

namespace portico::load::detail {

namespace asio = boost::asio;

namespace {

constexpr Ns kTick = 10'000'000;             // housekeeping period: stop checks, timeouts
constexpr Ns kReconnectBackoff = 50'000'000; // after a failed connect

std::chrono::steady_clock::time_point toTimePoint(Ns t) {
    return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(t));
}

using client::Failure;

struct Worker;

/// One simulated user: a client::Connection with up to `depth` requests in flight, the schedule
/// that decides when the next one starts (closed or open model), and the timing of each.
struct Conn final : client::ConnectionHandler {
    /// What the run knows of one request in flight, by the connection's slot.
    struct InFlight {
        Ns intended = 0; // open model: the schedule's send time; closed model: = sent
        Ns sent = 0;
        bool warm = false;
    };

    Conn(Worker& w, asio::io_context& io, unsigned global, unsigned depth);

    Worker& worker;
    client::Connection conn;
    asio::steady_timer timer;   // open-model pacing or reconnect back-off
    unsigned index;             // 0..connections-1 over the whole run
    std::vector<InFlight> meta; // by slot
    std::uint64_t nextSeq = 0;  // open model: this connection's next arrival
    bool timerArmed = false;
    bool scheduleDone = false; // open model: no arrival of this connection is left

    void connect(); // unless stopping
    void fill();
    void record(const InFlight& f, int status, Ns now);
    void failOne(const InFlight& f, Failure kind, Ns now);
    void shut(); // closes without reporting (the worker counts what was in flight)
    void armTimer(Ns at);
    /// Send time of the oldest request in flight (inFlight() > 0).
    Ns oldestSent() const {
        Ns t = kNever;
        conn.forEachInFlight([&](std::uint32_t slot) { t = std::min(t, meta[slot].sent); });
        return t;
    }

    // client::ConnectionHandler
    void onOpen() override;
    void onConnectFailed() override;
    void onResponse(std::uint32_t slot, int status) override { record(meta[slot], status, nowNs()); }
    void onFailed(std::uint32_t slot, Failure why) override { failOne(meta[slot], why, nowNs()); }
    void onClosed() override;
    void onProgress() override { fill(); }
};

struct Worker {
    Worker(const Plan& p, unsigned idx) : plan(p), io(1), tick(io), index(idx) {
        latency = std::make_unique<stats::Histogram>();
        service = std::make_unique<stats::Histogram>();
        const auto& o = *p.options;
        if (o.duration.count() > 0)
            slots.resize(
                static_cast<std::size_t>((o.duration + o.stopGrace + o.timeout).count() / 100'000'000) + 2);
        else
            slots.reserve(1024);
        rng = 0x9E3779B97F4A7C15ull * (idx + 1);
    }

    const Plan& plan;
    asio::io_context io;
    asio::steady_timer tick;
    unsigned index;
    std::vector<std::unique_ptr<Conn>> conns;

    // Results of this thread.
    RequestCounts requests, warmup;
    ErrorCounts errors;
    std::array<std::uint64_t, 600> statuses{};
    client::TrafficCounters traffic;
    std::uint64_t missed = 0; // open model: arrivals due before the stop and never sent
    // The counters when this thread sent its first measured request: what the warm-up moved.
    std::uint64_t warmupBytesRead = 0, warmupBytesWritten = 0;
    bool measuring = false;
    std::unique_ptr<stats::Histogram> latency, service;
    std::vector<std::uint64_t> slots;
    Ns lastEvent = 0;
    double cpuUser = 0, cpuSystem = 0;

    // Run state.
    std::uint64_t quota = std::numeric_limits<std::uint64_t>::max(); // closed model: measured starts left
    std::uint64_t rng;
    std::size_t openConns = 0; // connections in State::Open
    bool stopping = false;
    bool finished = false;
    Ns stopAt = 0;
    Ns lastAlive = 0;   // last time a connection of this thread was open
    Ns lastPublish = 0; // to plan.live

    std::uint32_t pickSpec() {
        if (plan.specs.size() == 1) return 0;
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        const std::uint32_t r = static_cast<std::uint32_t>(rng % plan.cumulativeWeights.back());
        std::uint32_t i = 0;
        while (plan.cumulativeWeights[i] <= r)
            ++i;
        return i;
    }

    void countSlot(Ns now) {
        const auto i = static_cast<std::size_t>((now - plan.warmupEnd) / 100'000'000);
        if (i >= slots.size()) slots.resize(i + 1);
        ++slots[i];
    }

    std::size_t totalInFlight() const {
        std::size_t n = 0;
        for (const auto& c : conns)
            n += c->conn.inFlight();
        return n;
    }

    void startTick() {
        tick.expires_after(std::chrono::nanoseconds(kTick));
        tick.async_wait([this](const boost::system::error_code& ec) {
            if (ec || finished) return;
            onTick();
            if (!finished) startTick();
        });
    }

    // Open model: arrivals that were due before the stop but found no free connection (too few
    // connections, or a slow server). As wrk2 does, each counts in the corrected latency with the
    // wait it had at least (the stop minus its intended send time), and the run says how many.
    void countMissed(Ns now) {
        if (plan.options->model() != Model::Open) return;
        const Ns end = std::min(now, plan.deadline);
        for (auto& c : conns)
            for (std::uint64_t seq = c->nextSeq;; ++seq) {
                const std::uint64_t k = c->index + seq * plan.options->connections;
                const Ns intended =
                    plan.start + static_cast<Ns>(std::llround(static_cast<double>(k) * plan.periodNs));
                if (k >= plan.openLimit || intended >= end) break;
                if (intended < plan.warmupEnd) continue;
                ++missed;
                latency->record(static_cast<std::uint64_t>(end - intended));
            }
    }

    bool boundReached(Ns now) const {
        if (plan.abort && plan.abort->load(std::memory_order_relaxed)) return true;
        if (now >= plan.deadline) return true;
        // The target went away: no connection for a whole timeout ends the run instead of retrying forever.
        if (openConns == 0 && now - lastAlive >= plan.options->timeout.count()) return true;
        if (plan.options->model() == Model::Closed) return quota == 0 && now >= plan.warmupEnd;
        for (const auto& c : conns)
            if (!c->scheduleDone) return false;
        return true;
    }

    void onTick() {
        const Ns now = nowNs();
        if (openConns) lastAlive = now;
        if (plan.live && now - lastPublish >= 250'000'000) {
            lastPublish = now;
            plan.live->publish(index, *latency, requests.completed, requests.failed);
        }
        if (!stopping && boundReached(now)) {
            stopping = true;
            stopAt = now;
            countMissed(now);
            for (auto& c : conns) {
                c->timer.cancel();
                c->timerArmed = false;
                if (!c->conn.open()) c->shut(); // no reconnects any more
            }
        }
        const Ns timeout = plan.options->timeout.count();
        for (auto& c : conns)
            if (c->conn.inFlight() && now - c->oldestSent() >= timeout) c->conn.fail(Failure::Timeout);
        if (!stopping) return;
        const bool graceOver = now - stopAt >= plan.options->stopGrace.count();
        if (totalInFlight() && !graceOver) return;
        for (auto& c : conns) {
            c->conn.forEachInFlight([&](std::uint32_t slot) {
                ++(c->meta[slot].warm ? warmup : requests).cancelled;
                lastEvent = std::max(lastEvent, now);
            });
            c->shut();
        }
        finished = true;
        tick.cancel();
    }

    void run(std::latch& connected, std::latch& go) {
        // OpenSSL writes with write(), not send(MSG_NOSIGNAL): a server that closed first must give
        // EPIPE, not kill the process.
        io::blockSigpipe();
        rusage before{};
        getrusage(RUSAGE_THREAD, &before);
        for (auto& c : conns)
            c->connect();
        io.run(); // until every first connect has finished
        connected.count_down();
        go.wait();
        lastAlive = nowNs();
        io.restart();
        for (auto& c : conns) {
            if (c->conn.open()) {
                c->conn.receive();
                c->fill();
            } else {
                c->connect();
            }
        }
        startTick();
        io.run();
        rusage after{};
        getrusage(RUSAGE_THREAD, &after);
        auto secs = [](const timeval& a, const timeval& b) {
            return static_cast<double>(b.tv_sec - a.tv_sec) +
                   static_cast<double>(b.tv_usec - a.tv_usec) / 1e6;
        };
        cpuUser = secs(before.ru_utime, after.ru_utime);
        cpuSystem = secs(before.ru_stime, after.ru_stime);
    }
};

bool started(const Worker& w) { return w.plan.start != 0; }

Conn::Conn(Worker& w, asio::io_context& io, unsigned global, unsigned depth)
    : worker(w), conn(io, w.plan.connection, *this, w.traffic, depth), timer(io), index(global), meta(depth) {
}

void Conn::connect() {
    if (!worker.stopping) conn.connect();
}

void Conn::onOpen() {
    ++worker.openConns;
    if (!started(worker)) return; // first connect: requests begin after the latch
    conn.receive();
    fill();
}

// A connection attempt (TCP or TLS handshake) failed: counted, retried after a back-off once running.
void Conn::onConnectFailed() {
    ++worker.errors.connect;
    if (started(worker) && !worker.stopping) armTimer(nowNs() + kReconnectBackoff);
}

// The server closed the connection (every request in flight was reported): reopened unless stopping.
void Conn::onClosed() {
    --worker.openConns;
    connect();
}

void Conn::shut() {
    if (conn.open()) --worker.openConns;
    conn.close();
}

void Conn::armTimer(Ns at) {
    timerArmed = true;
    timer.expires_at(toTimePoint(at));
    timer.async_wait([this, gen = conn.generation()](const boost::system::error_code& ec) {
        if (ec) return;
        timerArmed = false;
        if (worker.stopping || worker.finished) return;
        if (conn.idle())
            connect();
        else if (gen == conn.generation() && conn.open())
            fill();
    });
}

void Conn::record(const InFlight& f, int status, Ns now) {
    if (f.warm) {
        ++worker.warmup.completed;
        return;
    }
    ++worker.requests.completed;
    ++worker.statuses[static_cast<std::size_t>(std::clamp(status, 0, 599))];
    worker.latency->record(static_cast<std::uint64_t>(std::max<Ns>(0, now - f.intended)));
    worker.service->record(static_cast<std::uint64_t>(std::max<Ns>(0, now - f.sent)));
    worker.countSlot(now);
    worker.lastEvent = now;
}

void Conn::failOne(const InFlight& f, Failure kind, Ns now) {
    auto& counts = f.warm ? worker.warmup : worker.requests;
    ++counts.failed;
    if (f.warm) return;
    switch (kind) {
    case Failure::Reset:
        ++worker.errors.reset;
        break;
    case Failure::Timeout:
        ++worker.errors.timeout;
        break;
    case Failure::Protocol:
        ++worker.errors.protocol;
        break;
    }
    worker.lastEvent = std::max(worker.lastEvent, now);
}

// Starts as many requests as the model allows now, then writes them in one send.
void Conn::fill() {
    if (!conn.open()) return;
    // Stopping: no new requests; HTTP/2 may still owe WINDOW_UPDATEs and ACKs (flush sends them).
    if (worker.stopping && !conn.h2()) return;
    const Plan& plan = worker.plan;
    const Ns now = nowNs();
    const bool open = plan.options->model() == Model::Open;
    const std::size_t depth = conn.depth();
    while (conn.inFlight() < depth && !worker.stopping) {
        Ns intended = now;
        bool warm = false;
        if (open) {
            const std::uint64_t k = index + nextSeq * plan.options->connections;
            intended = plan.start + static_cast<Ns>(std::llround(static_cast<double>(k) * plan.periodNs));
            if (k >= plan.openLimit || intended >= plan.deadline) {
                scheduleDone = true;
                break;
            }
            if (intended > now) {
                if (!timerArmed) armTimer(intended);
                break;
            }
            ++nextSeq;
            warm = intended < plan.warmupEnd;
        } else {
            if (now >= plan.deadline) break;
            warm = now < plan.warmupEnd;
            if (!warm) {
                if (worker.quota == 0) break;
                --worker.quota;
            }
        }
        if (!warm && !worker.measuring) {
            worker.measuring = true;
            worker.warmupBytesRead = worker.traffic.bytesRead;
            worker.warmupBytesWritten = worker.traffic.bytesWritten;
        }
        const InFlight f{intended, now, warm};
        ++(warm ? worker.warmup : worker.requests).started;
        std::uint32_t slot = 0;
        if (!conn.send(plan.specs[worker.pickSpec()], slot)) { // HTTP/2: out of stream ids
            failOne(f, Failure::Protocol, now);
            break;
        }
        meta[slot] = f;
    }
    conn.flush();
}

} // namespace

void drive(Plan& plan, Result& result) {
    const Options& options = *plan.options;
    Live* live = plan.live;
    const unsigned threads = std::min(options.threads, options.connections);
    std::vector<std::unique_ptr<Worker>> workers;
    for (unsigned t = 0; t < threads; ++t)
        workers.push_back(std::make_unique<Worker>(plan, t));
    for (unsigned c = 0; c < options.connections; ++c) {
        auto& w = *workers[c % threads];
        w.conns.push_back(std::make_unique<Conn>(w, w.io, c, options.depth()));
    }
    if (options.model() == Model::Closed && options.count) {
        // Measured requests split by connections per thread.
        std::uint64_t given = 0;
        for (unsigned t = 0; t < threads; ++t) {
            const std::uint64_t share = t + 1 == threads
                                            ? options.count - given
                                            : options.count * workers[t]->conns.size() / options.connections;
            workers[t]->quota = share;
            given += share;
        }
    }

    std::latch connected(threads), go(1);
    std::vector<std::thread> pool;
    for (auto& w : workers) {
        pool.emplace_back([&w, &connected, &go] { w->run(connected, go); });
        pthread_setname_np(pool.back().native_handle(),
                           ("portico-load" + std::to_string(pool.size() - 1)).c_str());
    }
    connected.wait();
    // Every first connect has finished: the clock starts now for all threads at once.
    plan.start = nowNs();
    plan.warmupEnd = plan.start + options.warmup.count();
    if (options.duration.count() > 0) plan.deadline = plan.warmupEnd + options.duration.count();
    if (options.model() == Model::Open) {
        plan.periodNs = 1e9 / options.rate;
        const auto warmupArrivals = static_cast<std::uint64_t>(
            std::ceil(static_cast<double>(options.warmup.count()) / plan.periodNs));
        if (options.count) {
            plan.openLimit = warmupArrivals + options.count;
            // After the last arrival nothing is left to start: that is the count bound's deadline.
            const Ns lastArrival = plan.start + static_cast<Ns>(std::ceil(plan.openLimit * plan.periodNs));
            plan.deadline = std::min(plan.deadline, lastArrival + 1);
        }
    }
    if (live) live->begin(threads, result.address, std::chrono::steady_clock::now());
    go.count_down();
    for (auto& t : pool)
        t.join();
    const Ns end = nowNs();

    // Merge.
    result.latency = std::make_unique<stats::Histogram>();
    result.serviceTime = std::make_unique<stats::Histogram>();
    Ns last = 0;
    std::array<std::uint64_t, 600> statuses{};
    for (auto& w : workers) {
        auto add = [](RequestCounts& a, const RequestCounts& b) {
            a.started += b.started;
            a.completed += b.completed;
            a.failed += b.failed;
            a.cancelled += b.cancelled;
        };
        add(result.requests, w->requests);
        add(result.warmup, w->warmup);
        result.errors.connect += w->errors.connect;
        result.errors.reset += w->errors.reset;
        result.errors.timeout += w->errors.timeout;
        result.errors.protocol += w->errors.protocol;
        for (std::size_t s = 0; s < statuses.size(); ++s)
            statuses[s] += w->statuses[s];
        result.missedArrivals += w->missed;
        result.bytesRead += w->traffic.bytesRead;
        result.bytesWritten += w->traffic.bytesWritten;
        result.measuredBytesRead += w->measuring ? w->traffic.bytesRead - w->warmupBytesRead : 0;
        result.measuredBytesWritten += w->measuring ? w->traffic.bytesWritten - w->warmupBytesWritten : 0;
        result.latency->merge(*w->latency);
        result.serviceTime->merge(*w->service);
        if (result.perSlot.size() < w->slots.size()) result.perSlot.resize(w->slots.size());
        for (std::size_t s = 0; s < w->slots.size(); ++s)
            result.perSlot[s] += w->slots[s];
        last = std::max(last, w->lastEvent);
        result.cpuUserSeconds += w->cpuUser;
        result.cpuSystemSeconds += w->cpuSystem;
    }
    for (std::size_t s = 100; s < statuses.size(); ++s)
        if (statuses[s]) result.statuses[static_cast<int>(s)] = statuses[s];
    if (!last) last = end;
    result.measured = std::chrono::nanoseconds(std::max<Ns>(0, last - plan.warmupEnd));
    // Trailing empty slots (the pre-sized tail) are not part of the series.
    const auto measuredSlots = static_cast<std::size_t>(result.measured.count() / 100'000'000) + 1;
    if (result.perSlot.size() > measuredSlots) result.perSlot.resize(measuredSlots);
}

} // namespace portico::load::detail
