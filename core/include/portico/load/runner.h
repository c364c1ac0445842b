// Runs a bounded load test (HTTP/1.1 keep-alive with pipelining or HTTP/2 with streams, cleartext or
// TLS) and returns its result.
#pragma once

#include <portico/load/options.h>
#include <portico/load/result.h>

#include <portico/stats/histogram.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace portico::load {

/// What a load test shows while it runs (`portico bench`'s live line): each worker thread publishes
/// its measured counts and latency histogram about 4 times a second; any thread may read totals().
class Live {
public:
    struct Totals {
        bool started = false;                ///< the run began (the address answered); false until then
        std::string address;                 ///< the endpoint used, as in Result::address
        std::chrono::nanoseconds elapsed{0}; ///< since the start (warm-up included)
        std::uint64_t completed = 0;         ///< measured requests answered so far
        std::uint64_t failed = 0;            ///< measured requests lost to errors so far
        std::uint64_t p50Ns = 0, p99Ns = 0;  ///< latency so far (corrected in the open model), ns
    };
    /// Merges the threads' latest publications; costs a histogram merge per thread (~264 KiB each).
    /// When `latency` is given, the merged latency histogram of the measured requests so far is also
    /// written there (reset first; left empty before the run started), e.g. for a live plot.
    Totals totals(stats::Histogram* latency = nullptr) const;

    // For the runner.
    void begin(std::size_t threads, std::string address, std::chrono::steady_clock::time_point start);
    void publish(std::size_t thread, const stats::Histogram& latency, std::uint64_t completed,
                 std::uint64_t failed);

private:
    mutable std::mutex mutex_;
    bool started_ = false;
    std::string address_;
    std::chrono::steady_clock::time_point start_;
    std::vector<std::unique_ptr<stats::Histogram>> latency_;
    std::vector<std::uint64_t> completed_, failed_;
};

/// Runs `options` to the end and returns the result; blocks the calling thread for about
/// warm-up + duration (+ at most stopGrace). Errors are returned in `Result::error`, never thrown:
/// invalid options, a bad URL, several origins, a CA file that does not load, a name that does not
/// resolve, a target that is not loopback without `allowRemote`, or no connection succeeding at
/// start ("cannot connect to 127.0.0.1:9: Connection refused"), and, checked by one probe connection
/// before the run: a TLS handshake that fails (certificate verification, with the reason and the
/// hint to use `caFile` or `insecure`), an https server that does not select ALPN h2 for HTTP/2, or
/// a cleartext server that does not answer the h2c preface within 5 s. Failures during the run are
/// counted, not fatal.
///
/// Setting `*abort` (from any thread) ends the run early as if its bound had been reached: no new
/// requests, in-flight ones get the stop grace. Checked every 10 ms.
///
/// Threads: `options.threads` worker threads, each with its own io_context and connections; each
/// keeps its own histograms and counters, merged at the end. Requests are pre-serialised; the read
/// buffer (64 KiB per connection) and the write buffer are allocated once, so HTTP/1.1 in cleartext
/// does not allocate per request in steady state (nghttp2 and OpenSSL allocate per stream/record).
/// SIGPIPE is blocked on the worker threads (OpenSSL writes with write()).
///
/// `live`, when given, is fed while the run goes (see Live).
Result run(const Options& options, const std::atomic<bool>* abort = nullptr, Live* live = nullptr);

} // namespace portico::load
