// The outcome of a load run: request accounting, latency histogram, time series, errors, CPU use.
#pragma once

#include <portico/load/options.h>
#include <portico/stats/histogram.h>

#include <array>
#include <bit>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
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

/// One kind of request's share of the measured run: Options::requests[i] gives `Result::byRequest[i]`.
/// Counted exactly as the totals are (the totals are the sums of these).
struct RequestBreakdown {
    RequestCounts requests; ///< measured requests of this kind
    ErrorCounts errors;     ///< reset, timeout, protocol of this kind (`connect` is always 0 here)
    std::map<int, std::uint64_t> statuses; ///< completed requests of this kind by status code
    /// Latency of this kind's completed requests, ns, timed as `Result::latency`. Never null in a
    /// Result that `run` returned without error.
    std::unique_ptr<stats::Histogram> latency;
    /// This kind's completions per Result::kSlot slot, as Result::perSlot (same length).
    std::vector<std::uint64_t> perSlot;
};

/// One interval of the measured run as its own latency histogram (Options::latencyIntervals): what
/// an HdrHistogram interval log (`--hdr-log`) holds. Requests are placed by completion time.
struct LatencyInterval {
    std::chrono::nanoseconds start{0};  ///< from the end of the warm-up
    std::chrono::nanoseconds length{0}; ///< Result::kInterval (the last one may be shorter)
    /// The non-empty buckets, ascending (as stats::Histogram::forEachBucket gives them).
    std::vector<stats::Histogram::Bucket> buckets;
    std::uint64_t maxNs = 0; ///< the largest value recorded in the interval, exact
    std::uint64_t count() const {
        std::uint64_t n = 0;
        for (const auto& b : buckets)
            n += b.count;
        return n;
    }
};

/// One exchange kept by the run's drill-down sample (Result::samples, Options::samples): which
/// request it was, how it ended, when, and where to find it on the server (the client's port and
/// the request's number on its connection match the server's capture record: `client` ends in
/// `:localPort`; HTTP/1.1 `streamId` = sequence + 1, HTTP/2 stream id = 2 × sequence + 1).
/// Times are steady-clock nanoseconds from the end of the warm-up (Result::startedAt).
struct ExchangeSample {
    std::uint32_t request = 0; ///< index in Options::requests (Result::byRequest)
    int status = 0;            ///< the response's status, 100..599; 0 when failed
    /// 0 none (completed), 1 reset, 2 timeout, 3 protocol: ErrorCounts' kinds (client::Failure + 1).
    std::uint8_t failure = 0;
    std::int64_t intendedNs = 0; ///< open model: the schedule's send time; closed model: = sentNs
    std::int64_t sentNs = 0;     ///< when it was written to the connection (queued for the send)
    std::int64_t doneNs = 0;     ///< when its response completed, or when it failed
    /// When the response's first byte arrived (HTTP/1.1: its status line; HTTP/2: its first
    /// HEADERS frame), sentNs ≤ firstByteNs ≤ doneNs; the time of the read that brought it, so a
    /// response that came in one read has firstByteNs = doneNs. −1: none (a request that failed
    /// before any byte of its response, or a file written before this field existed).
    std::int64_t firstByteNs = -1;
    /// doneNs − intendedNs, ns, ≥ 0: for a completed request the value recorded in Result::latency
    /// (corrected in the open model); for a failed one the time until it failed (in no histogram).
    std::uint64_t latencyNs = 0;
    std::uint32_t connection = 0; ///< the run's connection 0..Options::connections−1
    /// The request's number on its connection, 0-based since the connection last (re)connected.
    std::uint32_t sequence = 0;
    std::uint16_t localPort = 0; ///< the client's TCP port of that connection (0: unknown)
    /// The final response head's fields (name, value; as received, pseudo-fields and trailers left
    /// out) of a completed request; nullopt for a failed one (and for an HTTP/2 head with no field
    /// but :status). HTTP/2 heads are decoded once, so there a request is a candidate of the sample
    /// when its head arrives (its latency bin and second then) and its fields are copied only if
    /// it is kept; HTTP/1.1 requests are candidates when they complete.
    std::optional<std::vector<std::pair<std::string, std::string>>> responseHeaders;
    /// With Options::requestId: the `x-request-id` value the request carried (its last attempt's,
    /// when the server refused it and it was sent again); empty otherwise.
    std::string requestId;

    bool operator==(const ExchangeSample&) const = default;
};

/// Latency bins of the drill-down sample: 2 per octave, from the bit length of the latency in ns
/// and the bit below the leading one (no log), covering 1 µs .. 1 h; values outside are put in the
/// first or last bin. Bin 0 holds everything below 1024 ns; bin b ≥ 1 starts at
/// 2^(9 + (b+1)/2) ns, × 1.5 when b is even (1024, 1536, 2048, 3072, ... ns); the last one (64)
/// holds everything from 3 × 2^40 ns (≈ 55 min) up.
inline constexpr std::uint64_t kSampleBinLowNs = 1'000;              // 1 µs
inline constexpr std::uint64_t kSampleBinHighNs = 3'600'000'000'000; // 1 h
namespace detail {
constexpr std::size_t latencySampleBinIndex(std::uint64_t ns) { // 2 × bit length + the next bit
    if (ns < kSampleBinLowNs) ns = kSampleBinLowNs;
    if (ns > kSampleBinHighNs) ns = kSampleBinHighNs;
    const int width = std::bit_width(ns); // ≥ 10 here
    return static_cast<std::size_t>(2 * width) + ((ns >> (width - 2)) & 1u);
}
} // namespace detail
/// The bin of a latency, 0..kSampleBins−1.
constexpr std::size_t latencySampleBin(std::uint64_t ns) {
    return detail::latencySampleBinIndex(ns) - detail::latencySampleBinIndex(kSampleBinLowNs);
}
static_assert(latencySampleBin(1023) == 0 && latencySampleBin(1024) == 1 && latencySampleBin(1536) == 2);
inline constexpr std::size_t kSampleBins = latencySampleBin(kSampleBinHighNs) + 1; // 65

/// A threshold (`--threshold`, load/thresholds.h) judged against a finished run.
struct ThresholdOutcome {
    std::string expr; ///< as given, e.g. "p99<250ms"
    double value = 0; ///< what was measured, in `unit`
    std::string unit; ///< "ns" (latency keys), "req/s" (rps) or "%" (errors, status)
    bool ok = false;  ///< met
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

    /// One entry per Options::requests entry, in that order (also for a single kind).
    std::vector<RequestBreakdown> byRequest;
    /// Options::latencyIntervals: the measured run cut into kInterval histograms, in time order,
    /// empty intervals included. Empty otherwise.
    std::vector<LatencyInterval> intervals;
    static constexpr std::chrono::seconds kInterval{1};
    /// Wall-clock time at the end of the warm-up (when measuring began): aligns the series of runs
    /// that several generators made at once (`--merge`) and dates the interval log.
    std::chrono::system_clock::time_point startedAt{};
    /// Drill-down sample of measured exchanges (Options::samples; empty when off), sorted by
    /// doneNs, each request at most once. Kept during the run, without an allocation per request:
    /// - every failed request, the first kMaxFailedSamples of the run (by failure time);
    /// - kSamplesPerBin completed requests per latency bin (latencySampleBin, kSampleBins bins),
    ///   a uniform random choice among that bin's completions (reservoir sampling);
    /// - kSamplesPerSecond completed requests per second of the measured run (by completion time,
    ///   the first kSampleSeconds seconds), a uniform random choice among that second's.
    /// A request chosen both for its bin and its second is listed once. So at most
    /// kMaxFailedSamples + kSampleBins × kSamplesPerBin + kSampleSeconds × kSamplesPerSecond
    /// (256 + 260 + 14400) entries; a 10 s run has a few dozen.
    std::vector<ExchangeSample> samples;
    static constexpr std::size_t kMaxFailedSamples = 256;
    static constexpr std::size_t kSamplesPerBin = 4;
    static constexpr std::size_t kSamplesPerSecond = 4;
    static constexpr std::size_t kSampleSeconds = 3600;
    /// Filled by load::judge (thresholds.h) when thresholds were given; in the JSON as `thresholds`.
    std::vector<ThresholdOutcome> thresholds;

    /// Completed measured requests per 100 ms slot (named so as not to clash with Qt's `slots`); slot i
    /// covers [i×100 ms, (i+1)×100 ms) after the end of the warm-up, by completion time.
    std::vector<std::uint64_t> perSlot;
    static constexpr std::chrono::milliseconds kSlot{100};
    /// Failed measured requests (reset, timeout, protocol) per slot, by the time they failed; the
    /// same length as perSlot (which gets empty slots up to the last failure), sums to
    /// requests.failed. The error series of the GUI's throughput plot and of the JSON. Empty when
    /// unknown: a result read from a file written before the series existed (or a merge with one).
    std::vector<std::uint64_t> failedPerSlot;

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

/// A wall-clock time as ISO 8601 UTC with microseconds, "2026-12-06T08:30:00.123456Z"; "" for the
/// epoch (no time).
std::string isoTime(std::chrono::system_clock::time_point t);
/// Parses "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)" (RFC 3339; a space may replace the T)
/// or "@SECONDS[.fraction]" since the Unix epoch, for times from 1970 up to (not including) the year
/// 2200. False on anything else, with `out` untouched.
bool parseIsoTime(std::string_view text, std::chrono::system_clock::time_point& out);

/// The result as JSON (UTF-8, one object), in the schema of docs/load-results.md ("schema": 1).
std::string toJson(const Result& result);

/// A wrk-like text summary: target, model, latency table, distribution, req/s, errors, CPU.
std::string summaryText(const Result& result);
/// The first lines of summaryText (target, address, threads, connections, model), for a tool that
/// prints them when the run starts.
std::string headerText(const Options& options, const std::string& address);

} // namespace portico::load
