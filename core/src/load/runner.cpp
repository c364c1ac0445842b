// The load engine: worker threads with their own io_context drive HTTP/1.1 keep-alive connections
// (closed or open model), time every request and merge their counters when the run ends.
#include <portico/load/runner.h>

#include "response_parser.h"

#include <portico/http/message.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <latch>
#include <limits>
#include <thread>

#include <sys/resource.h>
#include <sys/socket.h>

namespace portico::load {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

using Ns = std::int64_t; // steady_clock time since its epoch, nanoseconds
constexpr Ns kNever = std::numeric_limits<Ns>::max();
constexpr Ns kTick = 10'000'000;             // housekeeping period: stop checks, timeouts
constexpr Ns kReconnectBackoff = 50'000'000; // after a failed connect
constexpr std::size_t kReadBuffer = 64 * 1024;

Ns nowNs() { return std::chrono::steady_clock::now().time_since_epoch().count(); }
std::chrono::steady_clock::time_point toTimePoint(Ns t) {
    return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(t));
}

enum class ErrorKind { Reset, Timeout, Protocol };

/// A request spec serialised once into its wire form.
struct Prepared {
    std::string bytes;
    bool head = false;
};

/// Everything the workers share, read-only once they run (except `start`, set before the latch).
struct Plan {
    const Options* options = nullptr;
    std::vector<Prepared> specs;
    std::vector<std::uint32_t> cumulativeWeights;
    tcp::endpoint endpoint;
    const std::atomic<bool>* abort = nullptr;
    Ns start = 0;         // run start (warm-up begins)
    Ns warmupEnd = 0;     // measurement begins
    Ns deadline = kNever; // no request starts at or after this (duration bound)
    std::uint64_t openLimit = std::numeric_limits<std::uint64_t>::max(); // open model: k < openLimit
    double periodNs = 0; // open model: ns between two arrivals over all connections
};

struct Worker;

/// One HTTP/1.1 client connection with up to `pipeline` requests in flight.
struct Conn {
    struct InFlight {
        Ns intended = 0;
        Ns sent = 0;
        std::uint32_t spec = 0;
        bool warm = false;
    };

    Conn(Worker& w, asio::io_context& io, unsigned global, unsigned depth)
        : worker(w), socket(io), timer(io), index(global), ring(depth), readBuf(new char[kReadBuffer]) {}

    Worker& worker;
    tcp::socket socket;
    asio::steady_timer timer; // open-model pacing or reconnect back-off
    unsigned index;           // 0..connections-1 over the whole run
    std::vector<InFlight> ring;
    std::size_t ringHead = 0, inFlight = 0;
    std::unique_ptr<char[]> readBuf;
    std::size_t readBegin = 0, readEnd = 0;
    std::string writeBuf;
    std::size_t written = 0;
    ResponseParser parser;
    std::uint64_t generation = 0; // bumped on close: handlers of an older socket do nothing
    std::uint64_t nextSeq = 0;    // open model: this connection's next arrival
    enum class State : std::uint8_t { Idle, Connecting, Open } state = State::Idle;
    bool writeWaiting = false;
    bool timerArmed = false;
    bool scheduleDone = false; // open model: no arrival of this connection is left

    void connect();
    void onConnected();
    void read();
    void onRead(const boost::system::error_code& ec, std::size_t n);
    void fill();
    void flush();
    bool processResponses();
    void complete(Ns now);
    void fail(ErrorKind kind);
    void close();
    void armTimer(Ns at);
    const InFlight& oldest() const { return ring[ringHead]; }
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
    std::uint64_t bytesRead = 0, bytesWritten = 0;
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
    Ns lastAlive = 0; // last time a connection of this thread was open

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
            n += c->inFlight;
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
        if (!stopping && boundReached(now)) {
            stopping = true;
            stopAt = now;
            for (auto& c : conns) {
                c->timer.cancel();
                c->timerArmed = false;
                if (c->state != Conn::State::Open) c->close(); // no reconnects any more
            }
        }
        const Ns timeout = plan.options->timeout.count();
        for (auto& c : conns)
            if (c->inFlight && now - c->oldest().sent >= timeout) c->fail(ErrorKind::Timeout);
        if (!stopping) return;
        const bool graceOver = now - stopAt >= plan.options->stopGrace.count();
        if (totalInFlight() && !graceOver) return;
        for (auto& c : conns) {
            for (std::size_t i = 0; i < c->inFlight; ++i) {
                auto& f = c->ring[(c->ringHead + i) % c->ring.size()];
                ++(f.warm ? warmup : requests).cancelled;
                lastEvent = std::max(lastEvent, now);
            }
            c->inFlight = 0;
            c->close();
        }
        finished = true;
        tick.cancel();
    }

    void run(std::latch& connected, std::latch& go) {
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
            if (c->state == Conn::State::Open) {
                c->read();
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

void Conn::connect() {
    if (worker.stopping) return;
    boost::system::error_code ec;
    if (socket.is_open()) socket.close(ec);
    ++generation;
    state = State::Connecting;
    socket.open(worker.plan.endpoint.protocol(), ec);
    if (ec) {
        ++worker.errors.connect;
        state = State::Idle;
        armTimer(nowNs() + kReconnectBackoff);
        return;
    }
    socket.non_blocking(true, ec);
    socket.async_connect(worker.plan.endpoint, [this, gen = generation](const boost::system::error_code& e) {
        if (gen != generation) return;
        if (e) {
            ++worker.errors.connect;
            boost::system::error_code ignored;
            socket.close(ignored);
            ++generation;
            state = State::Idle;
            if (started(worker)) armTimer(nowNs() + kReconnectBackoff);
            return;
        }
        onConnected();
    });
}

void Conn::onConnected() {
    boost::system::error_code ec;
    socket.set_option(tcp::no_delay(true), ec);
    state = State::Open;
    ++worker.openConns;
    if (!started(worker)) return; // first connect: requests begin after the latch
    read();
    fill();
}

void Conn::armTimer(Ns at) {
    timerArmed = true;
    timer.expires_at(toTimePoint(at));
    timer.async_wait([this, gen = generation](const boost::system::error_code& ec) {
        if (ec) return;
        timerArmed = false;
        if (worker.stopping || worker.finished) return;
        if (state == State::Idle)
            connect();
        else if (gen == generation && state == State::Open)
            fill();
    });
}

void Conn::read() {
    socket.async_read_some(asio::buffer(readBuf.get() + readEnd, kReadBuffer - readEnd),
                           [this, gen = generation](const boost::system::error_code& ec, std::size_t n) {
                               if (gen != generation) return;
                               onRead(ec, n);
                           });
}

void Conn::onRead(const boost::system::error_code& ec, std::size_t n) {
    if (ec) {
        // EOF completes a close-delimited body; anything else outstanding was lost.
        if (ec == asio::error::eof && inFlight && parser.started() && parser.completesAtEof())
            complete(nowNs());
        if (inFlight)
            fail(ErrorKind::Reset);
        else {
            close();
            if (!worker.stopping) connect();
        }
        return;
    }
    worker.bytesRead += n;
    readEnd += n;
    if (!processResponses()) return; // the connection was closed
    if (readBegin == readEnd) {
        readBegin = readEnd = 0;
    } else if (readEnd == kReadBuffer) {
        if (readBegin == 0) { // a head larger than the buffer
            fail(ErrorKind::Protocol);
            return;
        }
        std::memmove(readBuf.get(), readBuf.get() + readBegin, readEnd - readBegin);
        readEnd -= readBegin;
        readBegin = 0;
    }
    read();
    fill();
}

// Parses every complete response in the buffer. False if the connection was closed meanwhile.
bool Conn::processResponses() {
    while (readBegin < readEnd) {
        if (!inFlight) {
            fail(ErrorKind::Protocol); // bytes nobody asked for
            return false;
        }
        if (!parser.started()) parser.begin(worker.plan.specs[oldest().spec].head);
        std::size_t used = 0;
        auto st = parser.parse(readBuf.get() + readBegin, readEnd - readBegin, used);
        readBegin += used;
        if (st == ResponseParser::Status::NeedMore) break;
        if (st == ResponseParser::Status::Error) {
            fail(ErrorKind::Protocol);
            return false;
        }
        complete(nowNs());
        if (!parser.keepAlive()) {
            if (inFlight)
                fail(ErrorKind::Reset); // the server will not answer the rest
            else {
                close();
                if (!worker.stopping) connect();
            }
            return false;
        }
    }
    return true;
}

void Conn::complete(Ns now) {
    const InFlight f = ring[ringHead];
    ringHead = (ringHead + 1) % ring.size();
    --inFlight;
    const int status = parser.status();
    parser = ResponseParser{};
    if (f.warm) {
        ++worker.warmup.completed;
        return;
    }
    ++worker.requests.completed;
    ++worker.statuses[static_cast<std::size_t>(status)];
    worker.latency->record(static_cast<std::uint64_t>(std::max<Ns>(0, now - f.intended)));
    worker.service->record(static_cast<std::uint64_t>(std::max<Ns>(0, now - f.sent)));
    worker.countSlot(now);
    worker.lastEvent = now;
}

void Conn::fail(ErrorKind kind) {
    const Ns now = nowNs();
    for (std::size_t i = 0; i < inFlight; ++i) {
        const auto& f = ring[(ringHead + i) % ring.size()];
        auto& counts = f.warm ? worker.warmup : worker.requests;
        ++counts.failed;
        if (!f.warm) {
            switch (kind) {
            case ErrorKind::Reset:
                ++worker.errors.reset;
                break;
            case ErrorKind::Timeout:
                ++worker.errors.timeout;
                break;
            case ErrorKind::Protocol:
                ++worker.errors.protocol;
                break;
            }
            worker.lastEvent = std::max(worker.lastEvent, now);
        }
    }
    inFlight = 0;
    close();
    if (!worker.stopping) connect();
}

void Conn::close() {
    boost::system::error_code ec;
    if (state == State::Open) --worker.openConns;
    if (socket.is_open()) socket.close(ec);
    ++generation;
    state = State::Idle;
    ringHead = inFlight = 0;
    readBegin = readEnd = 0;
    writeBuf.clear();
    written = 0;
    writeWaiting = false;
    parser = ResponseParser{};
}

// Starts as many requests as the model allows now, then writes them in one send.
void Conn::fill() {
    if (state != State::Open || worker.stopping) return;
    const Plan& plan = worker.plan;
    const Ns now = nowNs();
    const bool open = plan.options->model() == Model::Open;
    const std::size_t depth = ring.size();
    while (inFlight < depth) {
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
        const std::uint32_t spec = worker.pickSpec();
        auto& slot = ring[(ringHead + inFlight) % depth];
        slot = InFlight{intended, now, spec, warm};
        ++inFlight;
        ++(warm ? worker.warmup : worker.requests).started;
        writeBuf.append(plan.specs[spec].bytes);
    }
    flush();
}

void Conn::flush() {
    if (writeWaiting || state != State::Open) return;
    const int fd = socket.native_handle();
    while (written < writeBuf.size()) {
        const ssize_t n = ::send(fd, writeBuf.data() + written, writeBuf.size() - written, MSG_NOSIGNAL);
        if (n > 0) {
            written += static_cast<std::size_t>(n);
            worker.bytesWritten += static_cast<std::uint64_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            writeWaiting = true;
            socket.async_wait(tcp::socket::wait_write,
                              [this, gen = generation](const boost::system::error_code& ec) {
                                  if (gen != generation) return;
                                  writeWaiting = false;
                                  if (!ec) flush();
                              });
            return;
        }
        fail(ErrorKind::Reset);
        return;
    }
    writeBuf.clear();
    written = 0;
}

std::string serialise(const RequestSpec& spec, const Url& url) {
    std::string s;
    s.reserve(128 + spec.body.size());
    s += spec.method;
    s += ' ';
    s += url.target;
    s += " HTTP/1.1\r\n";
    bool host = false;
    for (const auto& [name, value] : spec.headers)
        if (http::iequals(name, "host")) host = true;
    if (!host) {
        s += "Host: ";
        s += url.authority;
        s += "\r\n";
    }
    for (const auto& [name, value] : spec.headers) {
        s += name;
        s += ": ";
        s += value;
        s += "\r\n";
    }
    if (!spec.body.empty()) {
        s += "Content-Length: ";
        s += std::to_string(spec.body.size());
        s += "\r\n";
    }
    s += "\r\n";
    s += spec.body;
    return s;
}

bool isLoopback(const asio::ip::address& a) {
    if (a.is_loopback()) return true;
    if (a.is_v6() && a.to_v6().is_v4_mapped())
        return asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()).is_loopback();
    return false;
}

std::string endpointText(const tcp::endpoint& ep) {
    const auto a = ep.address();
    return (a.is_v6() ? "[" + a.to_string() + "]" : a.to_string()) + ":" + std::to_string(ep.port());
}

} // namespace

Result run(const Options& options, const std::atomic<bool>* abort) {
    Result result;
    result.options = options;
    auto refuse = [&](std::string message) {
        result.error = std::move(message);
        return std::move(result);
    };
    std::string error;
    if (!validate(options, error)) return refuse(error);

    Plan plan;
    plan.options = &result.options;
    plan.abort = abort;
    Url first;
    std::uint32_t cumulative = 0;
    for (const auto& spec : options.requests) {
        Url url;
        if (!parseUrl(spec.url, url, error)) return refuse(error);
        if (plan.specs.empty())
            first = url;
        else if (url.origin() != first.origin())
            return refuse("all URLs of a run must have the same scheme, host and port: '" + url.origin() +
                          "' differs from '" + first.origin() + "'");
        if (url.scheme == "https") return refuse("https is not supported yet by the load generator");
        plan.specs.push_back(Prepared{serialise(spec, url), spec.method == "HEAD"});
        cumulative += spec.weight;
        plan.cumulativeWeights.push_back(cumulative);
    }

    // Resolve, and keep to loopback unless allowed otherwise.
    asio::io_context setup;
    tcp::resolver resolver(setup);
    boost::system::error_code ec;
    auto endpoints = resolver.resolve(first.host, std::to_string(first.port), ec);
    if (ec || endpoints.empty())
        return refuse("cannot resolve '" + first.host + "': " + (ec ? ec.message() : "no address"));
    bool found = false;
    for (const auto& e : endpoints) {
        if (!isLoopback(e.endpoint().address())) {
            if (!options.allowRemote)
                return refuse("refusing to load '" + first.host + "' (" + e.endpoint().address().to_string() +
                              "): not a loopback address; pass --allow-remote to load another machine");
            continue;
        }
        if (!found) plan.endpoint = e.endpoint(), found = true;
    }
    if (!found) plan.endpoint = endpoints.begin()->endpoint();
    result.address = endpointText(plan.endpoint);

    // Pre-flight: one connection, so "nothing listens there" is an error, not a run of failures.
    {
        tcp::socket probe(setup);
        probe.connect(plan.endpoint, ec);
        if (ec) return refuse("cannot connect to " + result.address + ": " + ec.message());
        probe.close(ec);
    }

    const unsigned threads = std::min(options.threads, options.connections);
    std::vector<std::unique_ptr<Worker>> workers;
    for (unsigned t = 0; t < threads; ++t)
        workers.push_back(std::make_unique<Worker>(plan, t));
    for (unsigned c = 0; c < options.connections; ++c) {
        auto& w = *workers[c % threads];
        w.conns.push_back(std::make_unique<Conn>(w, w.io, c, options.pipeline));
        w.conns.back()->writeBuf.reserve(plan.specs.size() ? options.pipeline * 512 : 0);
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
    for (auto& w : workers)
        pool.emplace_back([&w, &connected, &go] { w->run(connected, go); });
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
        result.bytesRead += w->bytesRead;
        result.bytesWritten += w->bytesWritten;
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
    return result;
}

} // namespace portico::load
