// Live latency statistics written by one server worker and read by the engine's collector while
// the worker keeps writing: the same buckets as stats::Histogram (3 significant digits, 1 µs..1 h),
// counts as relaxed atomics (a plain load/store on x86-64: the writer pays no lock).
#pragma once

#include <portico/stats/histogram.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace portico::stats {

/// Number of buckets of a Histogram (and of a LiveHistogram).
constexpr std::size_t kBucketCount = detail::histogramIndex(Histogram::kHighest) + 1;

/// Bucket counts of a histogram: `counts[i]` exchanges fell into bucket i (see bucketHighest()).
using BucketCounts = std::vector<std::uint64_t>;
/// Highest value (ns) that lands in bucket `index`.
std::uint64_t bucketHighest(std::size_t index);
/// Bucket index of `valueNs` (clamped to [Histogram::kLowest, Histogram::kHighest]).
std::size_t bucketOf(std::uint64_t valueNs);
/// The non-zero buckets of a histogram as (bucket index, count), by ascending index.
using SparseCounts = std::vector<std::pair<std::uint32_t, std::uint64_t>>;
/// Nearest-rank percentile (0..100) of `counts` as the highest equivalent value of its bucket, ns; 0 if
/// empty.
std::uint64_t percentileOf(const BucketCounts& counts, double p);
/// The same for sparse counts (equal results for equal histograms).
std::uint64_t percentileOf(const SparseCounts& counts, double p);

/// One writer thread, any number of reader threads. `record` never allocates or locks.
class LiveHistogram {
public:
    LiveHistogram();
    /// Writer only: one exchange of `valueNs` nanoseconds; `error`: counted in errors() (5xx, reset);
    /// `clientError`: in clientErrors() (4xx).
    void record(std::uint64_t valueNs, bool error, bool clientError);

    // Readers (any thread): a consistent-enough view (each counter is read once; counts written
    // during the read may or may not be included).
    std::uint64_t count() const { return total_.load(std::memory_order_relaxed); }
    std::uint64_t errors() const { return errors_.load(std::memory_order_relaxed); }
    std::uint64_t clientErrors() const { return clientErrors_.load(std::memory_order_relaxed); }
    /// Adds this histogram's buckets to `h` (each bucket as its highest equivalent value, so
    /// percentiles read from `h` are never below the exact ones and within kRelativePrecision).
    void addTo(Histogram& h) const;
    /// Adds the bucket counts to `out` (resized to kBucketCount if smaller).
    void addCounts(BucketCounts& out) const;

private:
    std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;
    std::atomic<std::uint64_t> total_{0};
    std::atomic<std::uint64_t> errors_{0};
    std::atomic<std::uint64_t> clientErrors_{0};
};

} // namespace portico::stats
