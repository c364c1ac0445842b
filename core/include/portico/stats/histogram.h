// HDR-style latency histogram: log-linear buckets, 3 significant digits, 1 µs to 1 h, in nanoseconds.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace portico::stats {

namespace detail {
// HdrHistogram's index arithmetic with unit 1 ns and 2048 sub-buckets: bucket b (b ≥ 0) holds
// [1024·2^b, 2048·2^b) in 1024 steps of 2^b (bucket 0 also [0, 1024) in steps of 1).
constexpr std::size_t histogramIndex(std::uint64_t v) {
    const int bucket = 64 - std::countl_zero(v | 2047u) - 11;
    const std::uint64_t sub = v >> bucket;
    return (static_cast<std::size_t>(bucket + 1) << 10) + sub - 1024;
}
constexpr std::uint64_t histogramValue(std::size_t index) {
    int bucket = static_cast<int>(index >> 10) - 1;
    std::uint64_t sub = (index & 1023) + 1024;
    if (bucket < 0) {
        sub -= 1024;
        bucket = 0;
    }
    return sub << bucket;
}
} // namespace detail

/// A fixed-size, mergeable histogram of durations in nanoseconds, after HdrHistogram (Gil Tene)
/// with a unit of 1 ns and 3 significant digits: values below 2048 ns are kept exactly, larger
/// values fall into buckets whose width is 1/1024 to 1/2048 of their lower bound, so any value read
/// back is within a relative precision of `kRelativePrecision` (1/1024 ≈ 0.098 %) of the recorded
/// one. The tracked range is [`kLowest`, `kHighest`] = [1 µs, 1 h]; values outside are clamped to
/// the nearest end and counted in `clampedLow()` / `clampedHigh()` (they are still in `count()`).
///
/// The counts live in the object itself (`sizeof` ≈ 264 KiB): `record` never allocates, so one
/// histogram per worker thread, merged at the end, costs nothing on the hot path. Not thread-safe:
/// one writer at a time; merge copies taken from other threads after they stopped writing.
class Histogram {
public:
    static constexpr std::uint64_t kLowest = 1'000;                 ///< 1 µs in ns
    static constexpr std::uint64_t kHighest = 3'600'000'000'000ull; ///< 1 h in ns
    /// Largest relative difference between a value read back and the value that was recorded.
    static constexpr double kRelativePrecision = 1.0 / 1024.0;

    /// Records `count` occurrences of `valueNs` (clamped to [kLowest, kHighest]). No allocation.
    void record(std::uint64_t valueNs, std::uint64_t count = 1);
    /// Adds every count of `other` (and its clamp counters, min, max, sums) to this histogram.
    /// Afterwards this histogram equals one that recorded both value streams.
    void merge(const Histogram& other);
    /// Back to empty.
    void reset();

    /// Number of recorded values (including clamped ones).
    std::uint64_t count() const { return total_; }
    /// Values recorded below kLowest (recorded as kLowest) / above kHighest (recorded as kHighest).
    std::uint64_t clampedLow() const { return clampedLow_; }
    std::uint64_t clampedHigh() const { return clampedHigh_; }
    /// Smallest / largest recorded value after clamping, exact; 0 when empty.
    std::uint64_t min() const { return total_ ? min_ : 0; }
    std::uint64_t max() const { return max_; }
    /// Arithmetic mean and population standard deviation of the recorded (clamped) values, exact up to
    /// floating-point rounding (sums are kept in 128-bit integers); 0 when empty. Nanoseconds.
    double mean() const;
    double stddev() const;

    /// The value at percentile `p` (0..100, clamped), nearest-rank definition: with N values sorted
    /// ascending, the exact answer is the value of rank max(1, ceil(p/100 × N)) (p = 0 is the minimum,
    /// p = 100 the maximum). Returned is the highest value equivalent to it (HdrHistogram's
    /// `highestEquivalentValue` of its bucket), capped at `max()`: never below the exact answer and
    /// at most `kRelativePrecision` above it (exact below 2048 ns). 0 when empty.
    std::uint64_t valueAtPercentile(double p) const;

    /// Lowest and highest value that share the bucket of `valueNs` (after clamping).
    static std::uint64_t lowestEquivalent(std::uint64_t valueNs);
    static std::uint64_t highestEquivalent(std::uint64_t valueNs);

    /// One non-empty bucket: every value in [lowestNs, highestNs] was counted here.
    struct Bucket {
        std::uint64_t lowestNs;
        std::uint64_t highestNs;
        std::uint64_t count;
    };
    /// Rebuilds the histogram from what `forEachBucket` and the summary accessors exported (e.g. a
    /// JSON result read back): each bucket's count goes to the bucket that holds `lowestNs`; `min`
    /// and `max` are taken as exact; the sums are recomputed from `mean` and `stddev` (so mean()
    /// and stddev() are exact only to double precision afterwards). Clamp counters are not
    /// restored. False, with the histogram left empty, when a bucket is not one of this layout's
    /// (`highestNs` ≠ highestEquivalent(lowestNs)), buckets are not ascending, a count is 0,
    /// min/max do not fall into the first/last bucket, or the mean is outside [min, max] or the
    /// standard deviation above max.
    bool restore(const Bucket* buckets, std::size_t n, std::uint64_t minNs, std::uint64_t maxNs, double mean,
                 double stddev);
    /// Calls `fn(const Bucket&)` for each non-empty bucket in ascending order (for plots and export).
    template <class F> void forEachBucket(F&& fn) const {
        if (!total_) return;
        for (std::size_t i = indexOf(min_), last = indexOf(max_); i <= last; ++i)
            if (counts_[i]) {
                const std::uint64_t lo = valueAt(i);
                fn(Bucket{lo, highestEquivalent(lo), counts_[i]});
            }
    }

private:
    static constexpr std::size_t indexOf(std::uint64_t v) { return detail::histogramIndex(v); }
    static constexpr std::uint64_t valueAt(std::size_t i) { return detail::histogramValue(i); }
    static constexpr std::size_t kCountsLength = detail::histogramIndex(3'600'000'000'000ull) + 1;

    std::uint64_t total_ = 0;
    std::uint64_t clampedLow_ = 0;
    std::uint64_t clampedHigh_ = 0;
    std::uint64_t min_ = ~0ull;
    std::uint64_t max_ = 0;
    unsigned __int128 sum_ = 0;
    unsigned __int128 sumSquares_ = 0;
    std::array<std::uint64_t, kCountsLength> counts_{};
};

} // namespace portico::stats
