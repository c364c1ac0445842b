// The outcome of a load run: request accounting, latency histogram, time series, errors, CPU use.
#pragma once

#include <portico/load/options.h>
#include <portico/stats/histogram.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace portico::load {

/// Every request started is, at the end, exactly one of completed, failed or cancelled:
/// `started == completed + failed + cancelled`.
struct RequestCounts {
    std::uint64_t started = 0;   ///< written to a connection
    std::uint64_t completed = 0; ///< a whole response arrived (any status)
    std::uint64_t failed = 0;    ///< lost to an error: errors.reset + errors.timeout + errors.protocol
    std::uint64_t cancelled = 0; ///< still in flight when the stop grace ran out (or on abort)
};

/// Errors by kind. `connect` counts failed connection attempts (no request was started on them);
/// the others count requests that failed that way.
struct ErrorCounts {
    std::uint64_t connect = 0;  ///< connect() failed (refused, unreachable), incl. reconnects
    std::uint64_t reset = 0;    ///< the connection was reset or closed with the request outstanding
    std::uint64_t timeout = 0;  ///< no complete response within Options::timeout
    std::uint64_t protocol = 0; ///< the response could not be parsed (or a 101 / head > 64 KiB)
};

/// The measured part of a run (warm-up excluded) plus the warm-up's own accounting.
struct Result {
    /// Non-empty when the run could not take place (bad options, bad URL, name not resolving, target
    /// not loopback, connection refused at start); everything else is then empty.
    std::string error;

    Options options;        ///< as given
    std::string address;    ///< the endpoint used, "127.0.0.1:8080" / "[::1]:8080"
    RequestCounts requests; ///< requests started after the warm-up
    RequestCounts warmup;   ///< requests started during the warm-up (not in latency or series)
    ErrorCounts errors;     ///< for the measured requests (connect: over the whole run)
    /// Completed requests by status code (100..599).
    std::map<int, std::uint64_t> statuses;
    std::uint64_t bytesRead = 0;    ///< bytes received over the whole run, incl. warm-up
    std::uint64_t bytesWritten = 0; ///< bytes sent over the whole run, incl. warm-up
    /// Open model: measured arrivals that were due before the run stopped but never sent (no free
    /// connection). Each is in `latency` with the wait it had by the stop; the rate was not met.
    std::uint64_t missedArrivals = 0;
    /// Bytes moved after the warm-up (from each thread's first measured send): Transfer/sec.
    std::uint64_t measuredBytesRead = 0;
    std::uint64_t measuredBytesWritten = 0;

    /// Latency of completed measured requests, ns: from the intended send time in the open model
    /// (coordinated omission corrected), from the actual send time in the closed model.
    std::unique_ptr<stats::Histogram> latency;
    /// Open model only: the same requests timed from their actual send time (what an uncorrected
    /// tool would report). Equal to `latency` in the closed model.
    std::unique_ptr<stats::Histogram> serviceTime;

    /// Completed measured requests per 100 ms slot (named so as not to clash with Qt's `slots`); slot i
    /// covers [i×100 ms, (i+1)×100 ms) after the end of the warm-up, by completion time.
    std::vector<std::uint64_t> perSlot;
    static constexpr std::chrono::milliseconds kSlot{100};

    /// From the end of the warm-up to the last completion or cancellation, ns.
    std::chrono::nanoseconds measured{0};
    /// Generator CPU time, summed over its threads (getrusage RUSAGE_THREAD), seconds.
    double cpuUserSeconds = 0;
    double cpuSystemSeconds = 0;

    bool ok() const { return error.empty(); }
    /// completed / measured seconds; 0 if nothing was measured.
    double requestsPerSecond() const;
    /// CPU seconds / (measured seconds × threads), 0..1: near 1 means the generator was the limit.
    double cpuShare() const;
};

/// The result as JSON (UTF-8, one object), in the schema of docs/load-results.md ("schema": 1).
std::string toJson(const Result& result);

/// A wrk-like text summary: target, model, latency table, distribution, req/s, errors, CPU.
std::string summaryText(const Result& result);
/// The first lines of summaryText (target, address, threads, connections, model), for a tool that
/// prints them when the run starts.
std::string headerText(const Options& options, const std::string& address);

} // namespace portico::load
