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
#include <random>
#include <thread>
#include <tuple>

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
        std::uint32_t spec = 0;     // index in Options::requests
        std::uint32_t sequence = 0; // its number on the connection since it opened
        std::uint16_t port = 0;     // the connection's local port
        bool warm = false;
        std::uint8_t retries = 0; // times it was sent again after Failure::Refused
        // HTTP/2 drill-down sample (Worker::sampleHead): the entries + 1 its head took in its
        // latency bin's and its second's reservoirs (0: none), that bin, and the second's number
        // mod 256. All 0 when nothing was taken, as a new InFlight is.
        std::uint8_t headBin = 0;
        std::uint8_t binEntry = 0, secondEntry = 0;
        std::uint8_t secondTag = 0;
    };
    static_assert(sizeof(InFlight) == 32, "one InFlight per slot: 32 bytes");

    Conn(Worker& w, asio::io_context& io, unsigned global, unsigned depth);

    Worker& worker;
    client::Connection conn;
    asio::steady_timer timer;   // open-model pacing or reconnect back-off
    unsigned index;             // 0..connections-1 over the whole run
    std::vector<InFlight> meta; // by slot
    /// Requests the server did not process (Failure::Refused), to be sent again first; started
    /// already, so neither counted nor drawn again. Cancelled if the stop's grace ends first.
    std::vector<InFlight> retry;
    std::uint64_t nextSeq = 0; // open model: this connection's next arrival
    bool timerArmed = false;
    bool scheduleDone = false; // open model: no arrival of this connection is left

    void connect(); // unless stopping
    void fill();
    /// `firstByte`: Connection::firstByteNs of its slot (0: in the read of `now`, or none).
    void record(const InFlight& f, int status, Ns now, Ns firstByte);
    void failOne(const InFlight& f, Failure kind, Ns now, Ns firstByte = 0);
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
    void onResponse(std::uint32_t slot, int status) override {
        record(meta[slot], status, conn.readTime(), conn.firstByteNs(slot)); // one clock read per read
    }
    bool holdResponseHead(std::uint32_t slot) override;
    void onFailed(std::uint32_t slot, Failure why) override;
    void onClosed() override;
    void onProgress() override { fill(); }
};

/// One request kind's counters on one thread (kept only when a run has several kinds).
struct SpecCounts {
    RequestCounts requests;
    ErrorCounts errors;
    std::array<std::uint64_t, 600> statuses{};
    std::unique_ptr<stats::Histogram> latency; // allocated at this kind's first completion
    std::vector<std::uint64_t> slots;          // completions per 100 ms slot
};

/// One reservoir of the drill-down sample (Options::samples): of the `seen` candidates so far, the
/// first min(seen, kKeep) entries of `kept` are a uniform random choice. The choice is Algorithm R's
/// (each new candidate n replaces a random entry with probability kKeep/n), drawn with Li's
/// Algorithm L: the number of the next candidate to keep is drawn when one is kept, so a candidate
/// that is not kept costs an increment and a comparison instead of a random number (measured: R's
/// draw per candidate was ~3 % of the generator's instructions per request).
constexpr std::size_t kKeep = Result::kSamplesPerBin;
static_assert(Result::kSamplesPerSecond == kKeep, "one reservoir size for bins and seconds");
struct Reservoir {
    std::uint64_t seen = 0;
    std::uint64_t next = 1; // the number (from 1) of the next candidate kept
    double w = 0;           // Algorithm L's W: the largest of kKeep uniform keys kept so far
    std::array<ExchangeSample, kKeep> kept{};
    // The kept entries' response fields as field lines (ExchangeSample::responseHeaders is filled
    // from them at the merge): assigned in place, so an entry replaced allocates nothing once its
    // string is long enough.
    std::array<std::string, kKeep> fields{};
    std::array<bool, kKeep> hasFields{};
};

/// One finished interval of one thread (Options::latencyIntervals).
struct IntervalPart {
    std::int64_t index = 0; // (completion - warmupEnd) / Result::kInterval
    std::vector<stats::Histogram::Bucket> buckets;
    std::uint64_t maxNs = 0;
};

struct Worker {
    Worker(const Plan& p, unsigned idx) : plan(p), io(1), tick(io), index(idx) {
        latency = std::make_unique<stats::Histogram>();
        service = std::make_unique<stats::Histogram>();
        if (p.specs.size() > 1) bySpec.resize(p.specs.size());
        if (p.options->latencyIntervals) interval = std::make_unique<stats::Histogram>();
        const auto& o = *p.options;
        if (o.duration.count() > 0)
            slots.resize(
                static_cast<std::size_t>((o.duration + o.stopGrace + o.timeout).count() / 100'000'000) + 2);
        else
            slots.reserve(1024);
        rng = 0x9E3779B97F4A7C15ull * (idx + 1);
        if (o.samples) {
            // Every buffer of the sample is sized here: nothing is allocated per request (the
            // seconds of a run bounded by count only grow by doubling, once per new second).
            sampling = true;
            sampleAtHead = o.protocol == Protocol::Http2;
            failedSamples.reserve(Result::kMaxFailedSamples);
            binSamples.resize(kSampleBins);
            const auto seconds = o.duration.count() > 0
                                     ? static_cast<std::size_t>(
                                           (o.duration + o.stopGrace + o.timeout).count() / 1'000'000'000) +
                                           2
                                     : std::size_t{64};
            secondSamples.reserve(std::min(seconds, Result::kSampleSeconds));
        }
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
    // `latency`: with several request kinds only what no kind holds (missed arrivals; totalLatency).
    std::unique_ptr<stats::Histogram> latency, service, total;
    std::vector<std::uint64_t> slots;
    std::vector<std::uint64_t> failedSlots;     // failures per 100 ms slot (grown when one fails)
    std::vector<SpecCounts> bySpec;             // empty with one request kind (the totals are its counts)
    std::unique_ptr<stats::Histogram> interval; // the current interval (Options::latencyIntervals)
    std::int64_t intervalIndex = 0;
    std::vector<IntervalPart> intervals; // finished ones, in time order
    Ns lastEvent = 0;
    double cpuUser = 0, cpuSystem = 0;
    // Drill-down sample (Options::samples): this thread's first failures, and its reservoirs by
    // latency bin and by second of completion (merged over the threads in drive).
    bool sampling = false;
    std::vector<ExchangeSample> failedSamples; // ≤ Result::kMaxFailedSamples, in failure order
    std::vector<Reservoir> binSamples;         // kSampleBins
    std::vector<Reservoir> secondSamples;      // ≤ Result::kSampleSeconds
    Reservoir* second = nullptr;               // secondSamples[the current second]
    std::size_t secondIndex = 0;               // of `second`
    // HTTP/2: a response is a candidate when its head comes (sampleHead), so that its fields are
    // copied only when it is kept; HTTP/1.1 at its completion (sampleCompleted).
    bool sampleAtHead = false;
    Ns secondEnd = 0; // when the current second ends

    // Run state.
    std::uint64_t quota = std::numeric_limits<std::uint64_t>::max(); // closed model: measured starts left
    std::uint64_t rng;
    std::size_t openConns = 0; // connections in State::Open
    std::size_t retries = 0;   // requests waiting in the connections' `retry` lists
    bool stopping = false;
    bool finished = false;
    Ns stopAt = 0;
    Ns lastAlive = 0;   // last time a connection of this thread was open
    Ns lastPublish = 0; // to plan.live

    std::uint64_t nextRandom() { // xorshift64
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return rng;
    }

    /// A request kind drawn by weight. No division (a 64-bit modulo costs tens of cycles per
    /// request) and, for a few kinds, no branch on the draw: r in [0, total) by a multiply-high of
    /// the random's top 32 bits, then the number of cumulative weights ≤ r.
    std::uint32_t pickSpec() {
        const auto& cumulative = plan.cumulativeWeights;
        if (cumulative.size() == 1) return 0;
        const auto r = static_cast<std::uint32_t>(((nextRandom() >> 32) * cumulative.back()) >> 32);
        if (cumulative.size() <= 8) {
            std::uint32_t i = 0;
            for (const std::uint32_t c : cumulative)
                i += c <= r ? 1u : 0u;
            return i;
        }
        return static_cast<std::uint32_t>(std::upper_bound(cumulative.begin(), cumulative.end(), r) -
                                          cumulative.begin());
    }

    /// Uniform in (0, 1), from the xorshift: 53 bits, never 0 (its log is finite).
    double uniform() { return (static_cast<double>(nextRandom() >> 11) + 0.5) * 0x1p-53; }

    /// The entry of `r.kept` that its newest candidate takes, or -1 if it is not kept.
    int reservoirSlot(Reservoir& r) {
        const std::uint64_t n = ++r.seen;
        if (n < r.next) [[likely]]
            return -1;
        return reservoirKeep(r, n);
    }

    /// Candidate `n` is kept (Algorithm L): its entry, and the number of the next one kept.
    [[gnu::noinline]] int reservoirKeep(Reservoir& r, std::uint64_t n) {
        constexpr double k = kKeep;
        std::size_t slot = 0;
        if (n <= kKeep) { // filling
            slot = static_cast<std::size_t>(n - 1);
            if (n < kKeep) {
                r.next = n + 1;
                return static_cast<int>(slot);
            }
            r.w = std::exp(std::log(uniform()) / k);
        } else {
            slot = static_cast<std::size_t>(nextRandom() % kKeep);
            r.w *= std::exp(std::log(uniform()) / k);
        }
        // Candidates skipped before the next one kept: geometric with parameter w.
        const double skip = std::floor(std::log(uniform()) / std::log1p(-r.w));
        r.next = n + 1 +
                 (skip < 1e18 ? static_cast<std::uint64_t>(skip) : std::uint64_t{1'000'000'000'000'000'000});
        return static_cast<int>(slot);
    }

    /// `firstByte` 0: none for a failure, `now` for a response.
    ExchangeSample sampleOf(const Conn::InFlight& f, unsigned connection, int status, std::uint8_t failure,
                            Ns now, Ns firstByte) const {
        ExchangeSample x;
        x.request = f.spec;
        x.status = status;
        x.failure = failure;
        x.intendedNs = f.intended - plan.warmupEnd;
        x.sentNs = f.sent - plan.warmupEnd;
        x.doneNs = now - plan.warmupEnd;
        if (firstByte || !failure)
            x.firstByteNs = std::clamp(firstByte ? firstByte : now, f.sent, now) - plan.warmupEnd;
        x.latencyNs = static_cast<std::uint64_t>(std::max<Ns>(0, now - f.intended));
        x.connection = connection;
        x.sequence = f.sequence;
        x.localPort = f.port;
        return x;
    }

    /// The second of the measured run that `now` is in: its reservoir (none after kSampleSeconds).
    /// A thread's completions come in time order, so this runs once per second.
    [[gnu::noinline]] void nextSecond(Ns now) {
        constexpr Ns kSecond = 1'000'000'000;
        const auto s = static_cast<std::size_t>(std::max<Ns>(0, now - plan.warmupEnd) / kSecond);
        if (s >= Result::kSampleSeconds) {
            second = nullptr;
            secondEnd = kNever;
            return;
        }
        if (s >= secondSamples.size()) secondSamples.resize(s + 1);
        second = &secondSamples[s];
        secondIndex = s;
        secondEnd = plan.warmupEnd + static_cast<Ns>(s + 1) * kSecond;
    }

    /// HTTP/2: the final head of a measured request came in a read at `readNs`: a candidate of
    /// the reservoirs of its latency bin then and of that second, so that its fields are copied only
    /// when one keeps it (they cannot be decoded later). Its entries are noted in `f`; its sample is
    /// written there when it completes (sampleKeptAtHead); one that fails after its head leaves the
    /// entry as it was (an entry still empty is not listed).
    bool sampleHead(Conn::InFlight& f, Ns readNs) {
        const std::size_t b =
            latencySampleBin(static_cast<std::uint64_t>(std::max<Ns>(0, readNs - f.intended)));
        bool kept = false;
        if (const int e = reservoirSlot(binSamples[b]); e >= 0) [[unlikely]] {
            f.headBin = static_cast<std::uint8_t>(b);
            f.binEntry = static_cast<std::uint8_t>(e + 1);
            kept = true;
        }
        if (readNs >= secondEnd) [[unlikely]]
            nextSecond(readNs);
        if (const int e = second ? reservoirSlot(*second) : -1; e >= 0) [[unlikely]] {
            f.secondEntry = static_cast<std::uint8_t>(e + 1);
            f.secondTag = static_cast<std::uint8_t>(secondIndex);
            kept = true;
        }
        return kept; // f's entries stay 0 (none) otherwise, as a new InFlight has them
    }

    /// HTTP/2: a measured request whose head sampleHead kept completed: its sample, with `fields`,
    /// goes in the entries its head took.
    [[gnu::noinline]] void sampleKeptAtHead(const Conn::InFlight& f, unsigned connection, int status, Ns now,
                                            Ns firstByte, std::optional<std::string_view> fields) {
        Reservoir* inSecond = nullptr;
        if (f.secondEntry) { // its second: the current one or one of the 255 before
            const std::size_t s = secondIndex - (static_cast<std::uint8_t>(secondIndex - f.secondTag));
            if (s < secondSamples.size()) inSecond = &secondSamples[s];
        }
        keep(sampleOf(f, connection, status, 0, now, firstByte), fields,
             f.binEntry ? &binSamples[f.headBin] : nullptr, f.binEntry - 1, inSecond, f.secondEntry - 1);
    }

    /// HTTP/1.1: a measured request completed at `now` with latency `ns`: a candidate of its latency
    /// bin's and its second's reservoirs; built into a sample only when one of them keeps it.
    /// `fields`: the response head's field lines when the connection kept them.
    void sampleCompleted(const Conn::InFlight& f, unsigned connection, int status, Ns now, std::uint64_t ns,
                         Ns firstByte, std::optional<std::string_view> fields) {
        Reservoir& bin = binSamples[latencySampleBin(ns)];
        const int inBin = reservoirSlot(bin);
        if (now >= secondEnd) [[unlikely]]
            nextSecond(now);
        const int inSecond = second ? reservoirSlot(*second) : -1;
        if (inBin < 0 && inSecond < 0) [[likely]]
            return;
        keep(sampleOf(f, connection, status, 0, now, firstByte), fields, &bin, inBin, second, inSecond);
    }

    /// A kept completion: `x` with `fields` (when the connection kept them) into entry `e1` of `r1`
    /// and `e2` of `r2` (none when negative).
    [[gnu::noinline]] static void keep(const ExchangeSample& x, std::optional<std::string_view> fields,
                                       Reservoir* r1, int e1, Reservoir* r2, int e2) {
        for (auto [r, e] : {std::pair{r1, e1}, std::pair{r2, e2}}) {
            if (!r || e < 0) continue;
            const auto i = static_cast<std::size_t>(e);
            r->kept[i] = x;
            r->hasFields[i] = fields.has_value();
            if (fields) r->fields[i].assign(*fields);
        }
    }

    /// A measured latency (corrected timing) completed or given up at `now`, of no request kind's
    /// own histogram (one kind, or a missed arrival).
    void recordLatency(std::uint64_t ns, Ns now) {
        latency->record(ns);
        recordInterval(ns, now);
    }

    /// The thread's latency of every measured request so far. With several request kinds a
    /// completion is recorded once, in its kind's histogram (the breakdown costs no second record),
    /// so the total is `latency` (missed arrivals) plus every kind's; copied into `total` (made
    /// once) for the live figures, four times a second.
    const stats::Histogram& totalLatency() {
        if (bySpec.empty()) return *latency;
        if (!total) total = std::make_unique<stats::Histogram>();
        *total = *latency;
        for (const auto& k : bySpec)
            if (k.latency) total->merge(*k.latency);
        return *total;
    }

    void recordInterval(std::uint64_t ns, Ns now) {
        if (!interval) return;
        constexpr Ns kIntervalNs = std::chrono::nanoseconds(Result::kInterval).count();
        // Never back: a missed arrival is recorded at the deadline, after later completions.
        const std::int64_t i = std::max(intervalIndex, std::max<Ns>(0, now - plan.warmupEnd) / kIntervalNs);
        if (i != intervalIndex) closeInterval(i);
        interval->record(ns);
    }

    /// Keeps the current interval's non-empty buckets (if any) and starts interval `next`.
    void closeInterval(std::int64_t next) {
        if (interval->count()) {
            IntervalPart part{intervalIndex, {}, interval->max()};
            interval->forEachBucket([&](const stats::Histogram::Bucket& b) { part.buckets.push_back(b); });
            intervals.push_back(std::move(part));
            interval->reset();
        }
        intervalIndex = next;
    }

    void countFailedSlot(Ns now) {
        const auto i = static_cast<std::size_t>(std::max<Ns>(0, now - plan.warmupEnd) / 100'000'000);
        if (i >= failedSlots.size()) failedSlots.resize(std::max(i + 1, slots.size()));
        ++failedSlots[i];
    }

    void countSlot(Ns now, std::uint32_t spec) {
        const auto i = static_cast<std::size_t>((now - plan.warmupEnd) / 100'000'000);
        if (i >= slots.size()) slots.resize(i + 1);
        ++slots[i];
        if (bySpec.empty()) return;
        auto& mine = bySpec[spec].slots;
        if (i >= mine.size()) mine.resize(std::max(i + 1, slots.size()));
        ++mine[i];
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
                recordLatency(static_cast<std::uint64_t>(end - intended), end);
            }
    }

    bool boundReached(Ns now) const {
        if (plan.abort && plan.abort->load(std::memory_order_relaxed)) return true;
        if (now >= plan.deadline) return true;
        // The target went away: no connection for a whole timeout ends the run instead of retrying forever.
        if (openConns == 0 && now - lastAlive >= plan.options->timeout.count()) return true;
        if (plan.options->model() == Model::Closed)
            return quota == 0 && retries == 0 && now >= plan.warmupEnd;
        for (const auto& c : conns)
            if (!c->scheduleDone) return false;
        return true;
    }

    void onTick() {
        const Ns now = nowNs();
        if (openConns) lastAlive = now;
        if (plan.live && now - lastPublish >= 250'000'000) {
            lastPublish = now;
            plan.live->publish(index, totalLatency(), requests.completed, requests.failed);
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
        // Requests to send again are in flight too: the stop waits for them (up to the grace).
        if ((totalInFlight() || retries) && !graceOver) return;
        for (auto& c : conns) {
            auto cancel = [&](const Conn::InFlight& f) {
                ++(f.warm ? warmup : requests).cancelled;
                if (!f.warm && !bySpec.empty()) ++bySpec[f.spec].requests.cancelled;
                lastEvent = std::max(lastEvent, now);
            };
            c->conn.forEachInFlight([&](std::uint32_t slot) { cancel(c->meta[slot]); });
            for (const auto& f : c->retry)
                cancel(f);
            retries -= c->retry.size();
            c->retry.clear();
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
        if (interval) closeInterval(0);
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
    if (!w.plan.requestIdRun.empty())
        conn.setRequestId(w.plan.requestIdRun + '-' + std::to_string(global) + '.');
}

void Conn::connect() {
    // Stopping: only to send again what the server did not process (the grace bounds it).
    if (!worker.stopping || !retry.empty()) conn.connect();
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

void Conn::record(const InFlight& f, int status, Ns now, Ns firstByte) {
    if (f.warm) {
        ++worker.warmup.completed;
        return;
    }
    ++worker.requests.completed;
    const auto code = static_cast<std::size_t>(std::clamp(status, 0, 599));
    ++worker.statuses[code];
    const auto ns = static_cast<std::uint64_t>(std::max<Ns>(0, now - f.intended));
    if (worker.bySpec.empty()) {
        worker.recordLatency(ns, now);
    } else { // the kind's histogram only: the total is merged from the kinds' (totalLatency)
        auto& k = worker.bySpec[f.spec];
        ++k.requests.completed;
        ++k.statuses[code];
        if (!k.latency) k.latency = std::make_unique<stats::Histogram>();
        k.latency->record(ns);
        worker.recordInterval(ns, now);
    }
    // Closed model: sent = intended, so the service time is the latency (copied at the merge).
    if (worker.plan.options->model() == Model::Open)
        worker.service->record(static_cast<std::uint64_t>(std::max<Ns>(0, now - f.sent)));
    worker.countSlot(now, f.spec);
    if (worker.sampling) {
        if (!worker.sampleAtHead)
            worker.sampleCompleted(f, index, status, now, ns, firstByte, conn.responseFields());
        else if (f.binEntry || f.secondEntry)
            worker.sampleKeptAtHead(f, index, status, now, firstByte, conn.responseFields());
    }
    worker.lastEvent = now;
}

// HTTP/2: the head decides whether the request is sampled, and so whether its fields are kept.
bool Conn::holdResponseHead(std::uint32_t slot) {
    InFlight& f = meta[slot];
    return !f.warm && worker.sampleHead(f, conn.readTime()); // asked only when sampling
}

// Refused (HTTP/2: not processed by the server) is sent again, up to kMaxRetries times, also while
// the run stops (it was started; the stop's grace bounds the wait); beyond that it counts as reset.
void Conn::onFailed(std::uint32_t slot, Failure why) {
    constexpr std::uint8_t kMaxRetries = 3;
    InFlight f = meta[slot];
    if (why == Failure::Refused) {
        if (f.retries < kMaxRetries) {
            ++f.retries;
            retry.push_back(f);
            ++worker.retries;
            return;
        }
        why = Failure::Reset;
    }
    failOne(f, why, nowNs(), conn.firstByteNs(slot));
}

void Conn::failOne(const InFlight& f, Failure kind, Ns now, Ns firstByte) {
    auto& counts = f.warm ? worker.warmup : worker.requests;
    ++counts.failed;
    if (f.warm) return;
    auto count = [kind](ErrorCounts& e) {
        switch (kind) {
        case Failure::Reset:
        case Failure::Refused:
            ++e.reset;
            break;
        case Failure::Timeout:
            ++e.timeout;
            break;
        case Failure::Protocol:
            ++e.protocol;
            break;
        }
    };
    count(worker.errors);
    worker.countFailedSlot(now);
    if (!worker.bySpec.empty()) {
        auto& k = worker.bySpec[f.spec];
        ++k.requests.failed;
        count(k.errors);
    }
    if (worker.sampling && worker.failedSamples.size() < Result::kMaxFailedSamples)
        worker.failedSamples.push_back(worker.sampleOf(
            f, index, 0, static_cast<std::uint8_t>(static_cast<unsigned>(kind) + 1), now, firstByte));
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
    // HTTP/2 after GOAWAY (nginx sends one every keepalive_requests): no new stream; the
    // connection closes when its last response is in, and onClosed opens a new one.
    while (conn.inFlight() < depth && !conn.draining()) {
        if (!retry.empty()) { // sent again as it was, on this connection now (also while stopping)
            InFlight f = retry.back();
            std::uint32_t slot = 0;
            f.sent = now; // open model: the latency still counts from the schedule's time
            if (!open) f.intended = now;
            f.sequence = conn.requestsSent();
            f.port = conn.localPort();
            f.binEntry = f.secondEntry = 0; // a head of the refused attempt took no entry to keep
            if (!conn.send(plan.specs[f.spec], slot)) break;
            retry.pop_back();
            --worker.retries;
            meta[slot] = f;
            continue;
        }
        if (worker.stopping) break;
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
        const std::uint32_t spec = worker.pickSpec();
        const InFlight f{intended, now, spec, conn.requestsSent(), conn.localPort(), warm};
        ++(warm ? worker.warmup : worker.requests).started;
        if (!warm && !worker.bySpec.empty()) ++worker.bySpec[spec].requests.started;
        std::uint32_t slot = 0;
        if (!conn.send(plan.specs[spec], slot)) { // HTTP/2: out of stream ids
            failOne(f, Failure::Protocol, now);
            break;
        }
        meta[slot] = f;
    }
    conn.flush();
}

// Up to kKeep samples drawn uniformly without replacement from all the candidates that the threads'
// reservoirs of one bin (or one second) saw: each draw picks a thread with probability (its
// candidates not drawn yet) / (all not drawn yet), then one of its kept samples not drawn yet at
// random. As each reservoir is a uniform choice among its own candidates, the draws are a uniform
// choice among all of them: a thread is weighted by what it saw, not by what it kept.
void mergeReservoirs(const std::vector<const Reservoir*>& parts, std::mt19937_64& rng,
                     std::vector<ExchangeSample>& out) {
    struct Part {
        std::uint64_t left; // candidates not drawn yet
        std::size_t kept;   // kept samples not drawn yet: kept[0..kept)
        std::array<ExchangeSample, kKeep> samples;
    };
    std::vector<Part> p;
    std::uint64_t total = 0;
    for (const Reservoir* r : parts)
        if (r->seen) {
            p.push_back(
                {r->seen, static_cast<std::size_t>(std::min<std::uint64_t>(r->seen, kKeep)), r->kept});
            Part& part = p.back();
            for (std::size_t i = 0; i < part.kept; ++i) {
                if (!r->hasFields[i]) continue;
                auto& fields = part.samples[i].responseHeaders.emplace();
                http1::forEachResponseField(r->fields[i], [&](std::string_view name, std::string_view value) {
                    fields.emplace_back(name, value);
                });
            }
            total += r->seen;
        }
    for (std::size_t draw = 0; draw < kKeep && total; ++draw) {
        std::uint64_t x = rng() % total;
        std::size_t w = 0;
        while (x >= p[w].left)
            x -= p[w++].left;
        // p[w].kept > 0: fewer than kKeep were drawn from it, and it kept min(seen, kKeep).
        auto& part = p[w];
        const std::size_t i = static_cast<std::size_t>(rng() % part.kept);
        // An entry an HTTP/2 head took for a request that then failed may still be empty.
        if (part.samples[i].status != 0 || part.samples[i].failure != 0) out.push_back(part.samples[i]);
        part.samples[i] = part.samples[--part.kept];
        --part.left;
        --total;
    }
}

// Merges the threads' drill-down samples into result.samples (Result::samples).
static_assert(kRequestIdField == client::kRequestIdField);

void mergeSamples(const std::vector<std::unique_ptr<Worker>>& workers, const std::string& run,
                  Result& result) {
    auto& out = result.samples;
    // Failures: each thread kept its first kMaxFailedSamples, so the run's first ones are among them.
    for (const auto& w : workers)
        out.insert(out.end(), w->failedSamples.begin(), w->failedSamples.end());
    auto byDone = [](const ExchangeSample& a, const ExchangeSample& b) {
        return std::tie(a.doneNs, a.connection, a.sequence, a.localPort, a.sentNs, a.intendedNs, a.request,
                        a.status, a.failure,
                        a.latencyNs) < std::tie(b.doneNs, b.connection, b.sequence, b.localPort, b.sentNs,
                                                b.intendedNs, b.request, b.status, b.failure, b.latencyNs);
    };
    std::sort(out.begin(), out.end(), byDone);
    if (out.size() > Result::kMaxFailedSamples) out.resize(Result::kMaxFailedSamples);
    std::mt19937_64 rng(static_cast<std::uint64_t>(nowNs()));
    std::vector<const Reservoir*> parts;
    for (std::size_t b = 0; b < kSampleBins; ++b) {
        parts.clear();
        for (const auto& w : workers)
            parts.push_back(&w->binSamples[b]);
        mergeReservoirs(parts, rng, out);
    }
    std::size_t seconds = 0;
    for (const auto& w : workers)
        seconds = std::max(seconds, w->secondSamples.size());
    for (std::size_t s = 0; s < seconds; ++s) {
        parts.clear();
        for (const auto& w : workers)
            if (s < w->secondSamples.size()) parts.push_back(&w->secondSamples[s]);
        mergeReservoirs(parts, rng, out);
    }
    // A request kept both for its bin and for its second is the same sample twice: listed once.
    std::sort(out.begin(), out.end(), byDone);
    out.erase(std::unique(out.begin(), out.end()), out.end());
    // The id each one carried (client::Connection::setRequestId): run, connection, port, number;
    // none for a request that failed before its connection opened (port unknown).
    if (!run.empty())
        for (auto& x : out)
            if (x.localPort)
                x.requestId = run + '-' + std::to_string(x.connection) + '.' + std::to_string(x.localPort) +
                              '.' + std::to_string(x.sequence);
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
    result.startedAt = std::chrono::time_point_cast<std::chrono::system_clock::duration>(
        std::chrono::system_clock::now() + options.warmup);
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
        for (const auto& k : w->bySpec) // several kinds: each completion is in its kind's only
            if (k.latency) result.latency->merge(*k.latency);
        if (options.model() == Model::Open) result.serviceTime->merge(*w->service);
        if (result.perSlot.size() < w->slots.size()) result.perSlot.resize(w->slots.size());
        for (std::size_t s = 0; s < w->slots.size(); ++s)
            result.perSlot[s] += w->slots[s];
        if (result.failedPerSlot.size() < w->failedSlots.size())
            result.failedPerSlot.resize(w->failedSlots.size());
        for (std::size_t s = 0; s < w->failedSlots.size(); ++s)
            result.failedPerSlot[s] += w->failedSlots[s];
        last = std::max(last, w->lastEvent);
        result.cpuUserSeconds += w->cpuUser;
        result.cpuSystemSeconds += w->cpuSystem;
    }
    auto statusMap = [](const std::array<std::uint64_t, 600>& counts, std::map<int, std::uint64_t>& out) {
        for (std::size_t s = 100; s < counts.size(); ++s)
            if (counts[s]) out[static_cast<int>(s)] = counts[s];
    };
    statusMap(statuses, result.statuses);
    if (options.model() == Model::Closed) *result.serviceTime = *result.latency;
    if (!last) last = end;
    result.measured = std::chrono::nanoseconds(std::max<Ns>(0, last - plan.warmupEnd));
    // Trailing empty slots (the pre-sized tail) are not part of the series.
    const auto measuredSlots = static_cast<std::size_t>(result.measured.count() / 100'000'000) + 1;
    if (result.perSlot.size() > measuredSlots) result.perSlot.resize(measuredSlots);
    // Failures: up to the last slot with one (a failure after the last measured event, which cannot
    // happen as failures count as events, would be folded into the last slot), then the same length.
    auto& failedSlots = result.failedPerSlot;
    while (!failedSlots.empty() && failedSlots.back() == 0)
        failedSlots.pop_back();
    if (failedSlots.size() > measuredSlots) {
        for (std::size_t s = measuredSlots; s < failedSlots.size(); ++s)
            failedSlots[measuredSlots - 1] += failedSlots[s];
        failedSlots.resize(measuredSlots);
    }
    if (result.perSlot.size() < failedSlots.size()) result.perSlot.resize(failedSlots.size());
    failedSlots.resize(result.perSlot.size());

    // Per request kind: with one kind, its counts are the totals.
    result.byRequest.resize(plan.specs.size());
    if (plan.specs.size() == 1) {
        auto& k = result.byRequest.front();
        k.requests = result.requests;
        k.errors = result.errors;
        k.errors.connect = 0;
        k.statuses = result.statuses;
        k.latency = std::make_unique<stats::Histogram>(*result.latency);
        k.perSlot = result.perSlot;
    } else {
        for (std::size_t i = 0; i < plan.specs.size(); ++i) {
            auto& k = result.byRequest[i];
            k.latency = std::make_unique<stats::Histogram>();
            k.perSlot.assign(result.perSlot.size(), 0);
            std::array<std::uint64_t, 600> codes{};
            for (auto& w : workers) {
                const auto& part = w->bySpec[i];
                k.requests.started += part.requests.started;
                k.requests.completed += part.requests.completed;
                k.requests.failed += part.requests.failed;
                k.requests.cancelled += part.requests.cancelled;
                k.errors.reset += part.errors.reset;
                k.errors.timeout += part.errors.timeout;
                k.errors.protocol += part.errors.protocol;
                for (std::size_t s = 0; s < codes.size(); ++s)
                    codes[s] += part.statuses[s];
                if (part.latency) k.latency->merge(*part.latency);
                for (std::size_t s = 0; s < part.slots.size() && s < result.perSlot.size(); ++s)
                    k.perSlot[s] += part.slots[s];
            }
            statusMap(codes, k.statuses);
        }
    }

    // Interval histograms: every thread's parts of interval i merged; empty intervals kept, so the
    // log has one line per interval of the measured time.
    if (options.latencyIntervals) {
        constexpr Ns kIntervalNs = std::chrono::nanoseconds(Result::kInterval).count();
        std::int64_t count = result.measured.count() / kIntervalNs + 1;
        for (auto& w : workers)
            if (!w->intervals.empty()) count = std::max(count, w->intervals.back().index + 1);
        stats::Histogram merged;
        std::vector<std::size_t> next(workers.size(), 0);
        for (std::int64_t i = 0; i < count; ++i) {
            LatencyInterval out;
            out.start = std::chrono::nanoseconds(i * kIntervalNs);
            out.length = std::chrono::nanoseconds(
                std::min<Ns>(kIntervalNs, std::max<Ns>(0, result.measured.count() - i * kIntervalNs)));
            if (out.length.count() == 0) out.length = std::chrono::nanoseconds(kIntervalNs);
            merged.reset();
            for (std::size_t t = 0; t < workers.size(); ++t) {
                auto& parts = workers[t]->intervals;
                while (next[t] < parts.size() && parts[next[t]].index == i) {
                    for (const auto& b : parts[next[t]].buckets)
                        merged.record(b.lowestNs, b.count);
                    out.maxNs = std::max(out.maxNs, parts[next[t]].maxNs);
                    ++next[t];
                }
            }
            merged.forEachBucket([&](const stats::Histogram::Bucket& b) { out.buckets.push_back(b); });
            result.intervals.push_back(std::move(out));
        }
    }

    if (options.samples) mergeSamples(workers, plan.requestIdRun, result);
}

} // namespace portico::load::detail
