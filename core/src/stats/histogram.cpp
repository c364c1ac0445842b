// Histogram: recording, merging and percentile queries over the fixed counts array.
#include <portico/stats/histogram.h>

#include <algorithm>
#include <cmath>

namespace portico::stats {

namespace {
std::uint64_t clampValue(std::uint64_t v) { return std::clamp(v, Histogram::kLowest, Histogram::kHighest); }
} // namespace

void Histogram::record(std::uint64_t valueNs, std::uint64_t count) {
    if (count == 0) return;
    if (valueNs < kLowest) {
        clampedLow_ += count;
        valueNs = kLowest;
    } else if (valueNs > kHighest) {
        clampedHigh_ += count;
        valueNs = kHighest;
    }
    counts_[indexOf(valueNs)] += count;
    total_ += count;
    min_ = std::min(min_, valueNs);
    max_ = std::max(max_, valueNs);
    const unsigned __int128 v = valueNs;
    sum_ += v * count;
    sumSquares_ += v * v * count;
}

void Histogram::merge(const Histogram& other) {
    if (!other.total_) return;
    for (std::size_t i = indexOf(other.min_), last = indexOf(other.max_); i <= last; ++i)
        counts_[i] += other.counts_[i];
    total_ += other.total_;
    clampedLow_ += other.clampedLow_;
    clampedHigh_ += other.clampedHigh_;
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
    sum_ += other.sum_;
    sumSquares_ += other.sumSquares_;
}

void Histogram::reset() {
    if (total_) std::fill(counts_.begin() + indexOf(min_), counts_.begin() + indexOf(max_) + 1, 0);
    total_ = clampedLow_ = clampedHigh_ = 0;
    min_ = ~0ull;
    max_ = 0;
    sum_ = sumSquares_ = 0;
}

bool Histogram::restore(const Bucket* buckets, std::size_t n, std::uint64_t minNs, std::uint64_t maxNs,
                        double mean, double stddev) {
    reset();
    if (n == 0) return true;
    std::size_t previous = 0;
    std::uint64_t total = 0;
    for (std::size_t k = 0; k < n; ++k) {
        const Bucket& b = buckets[k];
        if (b.count == 0 || b.lowestNs < kLowest || b.lowestNs > kHighest ||
            lowestEquivalent(b.lowestNs) != b.lowestNs || highestEquivalent(b.lowestNs) != b.highestNs)
            return false;
        const std::size_t i = indexOf(b.lowestNs);
        if (k > 0 && i <= previous) return false;
        previous = i;
        if (total + b.count < total) return false;
        total += b.count;
    }
    // The mean lies between min and max, the standard deviation below max; sums that would not fit
    // in 128 bits (only from a corrupt input) are refused rather than converted.
    const long double count = static_cast<long double>(total);
    const long double sum = static_cast<long double>(mean) * count;
    const long double sumSquares =
        (static_cast<long double>(stddev) * stddev + static_cast<long double>(mean) * mean) * count;
    if (minNs < buckets[0].lowestNs || minNs > buckets[0].highestNs || maxNs < buckets[n - 1].lowestNs ||
        maxNs > buckets[n - 1].highestNs || !std::isfinite(mean) || !std::isfinite(stddev) ||
        mean < static_cast<double>(minNs) * (1 - 1e-9) - 1 ||
        mean > static_cast<double>(maxNs) * (1 + 1e-9) + 1 || stddev < 0 ||
        stddev > static_cast<double>(maxNs) + 1 || !(sum < 1e38L) || !(sumSquares < 1e38L))
        return false;
    for (std::size_t k = 0; k < n; ++k)
        counts_[indexOf(buckets[k].lowestNs)] = buckets[k].count;
    total_ = total;
    min_ = minNs;
    max_ = maxNs;
    sum_ = static_cast<unsigned __int128>(sum + 0.5L);
    sumSquares_ = static_cast<unsigned __int128>(sumSquares + 0.5L);
    return true;
}

double Histogram::mean() const {
    if (!total_) return 0.0;
    return static_cast<double>(static_cast<long double>(sum_) / total_);
}

double Histogram::stddev() const {
    if (!total_) return 0.0;
    const long double n = total_;
    const long double m = static_cast<long double>(sum_) / n;
    const long double var = static_cast<long double>(sumSquares_) / n - m * m;
    return var > 0 ? static_cast<double>(std::sqrt(var)) : 0.0;
}

std::uint64_t Histogram::valueAtPercentile(double p) const {
    if (!total_) return 0;
    p = std::clamp(p, 0.0, 100.0);
    // Nearest rank. The product is rounded to 1e-9 first so that e.g. 99.9 % of 1000 is rank 999,
    // not 1000 through binary floating-point error.
    const long double exact = static_cast<long double>(p) / 100.0L * static_cast<long double>(total_);
    const long double rounded = std::round(exact * 1e9L) / 1e9L;
    std::uint64_t rank = static_cast<std::uint64_t>(std::ceil(rounded));
    rank = std::clamp<std::uint64_t>(rank, 1, total_);
    std::uint64_t seen = 0;
    for (std::size_t i = indexOf(min_), last = indexOf(max_); i <= last; ++i) {
        seen += counts_[i];
        if (seen >= rank) return std::clamp(highestEquivalent(valueAt(i)), min_, max_);
    }
    return max_;
}

std::uint64_t Histogram::lowestEquivalent(std::uint64_t valueNs) {
    return valueAt(indexOf(clampValue(valueNs)));
}

std::uint64_t Histogram::highestEquivalent(std::uint64_t valueNs) {
    const std::uint64_t v = clampValue(valueNs);
    const int bucket = 64 - std::countl_zero(v | 2047u) - 11;
    return valueAt(indexOf(v)) + (std::uint64_t{1} << bucket) - 1;
}

} // namespace portico::stats
