// LiveHistogram: single-writer relaxed-atomic buckets shared with the collector.
#include <portico/stats/live.h>

#include <algorithm>
#include <cmath>

namespace portico::stats {

std::size_t bucketOf(std::uint64_t v) {
    v = std::clamp(v, Histogram::kLowest, Histogram::kHighest);
    return detail::histogramIndex(v);
}

std::uint64_t bucketHighest(std::size_t index) {
    return Histogram::highestEquivalent(detail::histogramValue(index));
}

namespace {
// Nearest rank of percentile p among total > 0 values, rounded to 1e-9 first as Histogram does
// (99.9 % of 1000 is rank 999).
std::uint64_t nearestRank(double p, std::uint64_t total) {
    p = std::clamp(p, 0.0, 100.0);
    const long double exact = static_cast<long double>(p) / 100.0L * static_cast<long double>(total);
    return std::clamp<std::uint64_t>(static_cast<std::uint64_t>(std::ceil(std::round(exact * 1e9L) / 1e9L)),
                                     1, total);
}
} // namespace

std::uint64_t percentileOf(const BucketCounts& counts, double p) {
    std::uint64_t total = 0;
    for (auto c : counts)
        total += c;
    if (!total) return 0;
    const std::uint64_t rank = nearestRank(p, total);
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
        seen += counts[i];
        if (seen >= rank) return bucketHighest(i);
    }
    return 0;
}

std::uint64_t percentileOf(const SparseCounts& counts, double p) {
    std::uint64_t total = 0;
    for (const auto& [index, c] : counts)
        total += c;
    if (!total) return 0;
    const std::uint64_t rank = nearestRank(p, total);
    std::uint64_t seen = 0;
    for (const auto& [index, c] : counts) {
        seen += c;
        if (seen >= rank) return bucketHighest(index);
    }
    return 0;
}

LiveHistogram::LiveHistogram() : counts_(new std::atomic<std::uint64_t>[kBucketCount]) {
    for (std::size_t i = 0; i < kBucketCount; ++i)
        counts_[i].store(0, std::memory_order_relaxed);
}

void LiveHistogram::record(std::uint64_t valueNs, bool error, bool clientError) {
    auto bump = [](std::atomic<std::uint64_t>& a) {
        a.store(a.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); // single writer
    };
    bump(counts_[bucketOf(valueNs)]);
    if (error) bump(errors_);
    if (clientError) bump(clientErrors_);
    total_.store(total_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

void LiveHistogram::addTo(Histogram& h) const {
    for (std::size_t i = 0; i < kBucketCount; ++i)
        if (std::uint64_t c = counts_[i].load(std::memory_order_relaxed)) h.record(bucketHighest(i), c);
}

void LiveHistogram::addCounts(BucketCounts& out) const {
    if (out.size() < kBucketCount) out.resize(kBucketCount, 0);
    for (std::size_t i = 0; i < kBucketCount; ++i)
        out[i] += counts_[i].load(std::memory_order_relaxed);
}

} // namespace portico::stats
