// Unit tests for the HDR-style histogram: percentiles against exact ones of seeded random samples,
// merge equals recording everything, edge values, clamping, iteration, mean and stddev.
#include <portico/stats/histogram.h>

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

using portico::stats::Histogram;

namespace {

// The histogram is ~264 KiB: keep it off the test's stack.
std::unique_ptr<Histogram> makeHistogram() { return std::make_unique<Histogram>(); }

// Exact nearest-rank percentile of sorted `v`, the definition documented in histogram.h.
std::uint64_t exactPercentile(const std::vector<std::uint64_t>& sorted, double p) {
    const long double exact = static_cast<long double>(p) / 100.0L * sorted.size();
    const long double rounded = std::round(exact * 1e9L) / 1e9L;
    auto rank = static_cast<std::uint64_t>(std::ceil(rounded));
    rank = std::clamp<std::uint64_t>(rank, 1, sorted.size());
    return sorted[rank - 1];
}

std::uint64_t clampNs(std::uint64_t v) { return std::clamp(v, Histogram::kLowest, Histogram::kHighest); }

enum class Dist { Uniform, LogNormal, Exponential, Bimodal, Constant };

std::vector<std::uint64_t> samples(Dist d, std::size_t n, std::uint32_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::uint64_t> v;
    v.reserve(n);
    std::uniform_int_distribution<std::uint64_t> uni(1'000, 5'000'000'000ull);
    std::lognormal_distribution<double> logn(std::log(2e6), 1.5); // median 2 ms, long tail
    std::exponential_distribution<double> expo(1.0 / 300e3);      // mean 300 µs
    std::normal_distribution<double> fast(50e3, 5e3), slow(800e6, 50e6);
    std::bernoulli_distribution coin(0.97);
    for (std::size_t i = 0; i < n; ++i) {
        double x = 0;
        switch (d) {
        case Dist::Uniform:
            x = static_cast<double>(uni(rng));
            break;
        case Dist::LogNormal:
            x = logn(rng);
            break;
        case Dist::Exponential:
            x = expo(rng);
            break;
        case Dist::Bimodal:
            x = coin(rng) ? fast(rng) : slow(rng);
            break;
        case Dist::Constant:
            x = 20e6;
            break;
        }
        v.push_back(clampNs(static_cast<std::uint64_t>(std::max(0.0, x))));
    }
    return v;
}

const double kPercentiles[] = {0, 0.1, 1, 10, 25, 50, 75, 90, 95, 99, 99.9, 99.99, 99.999, 100};

} // namespace

Q_DECLARE_METATYPE(Dist)

class TestHistogram : public QObject {
    Q_OBJECT

private slots:
    void percentilesWithinPrecision_data() {
        QTest::addColumn<Dist>("dist");
        QTest::addColumn<int>("n");
        QTest::addColumn<uint>("seed");
        QTest::newRow("uniform 1µs..5s") << Dist::Uniform << 100000 << 1u;
        QTest::newRow("lognormal") << Dist::LogNormal << 100000 << 2u;
        QTest::newRow("exponential") << Dist::Exponential << 50000 << 3u;
        QTest::newRow("bimodal 97/3") << Dist::Bimodal << 100000 << 4u;
        QTest::newRow("constant") << Dist::Constant << 1000 << 5u;
        QTest::newRow("few samples") << Dist::LogNormal << 7 << 6u;
        QTest::newRow("one sample") << Dist::Uniform << 1 << 7u;
    }
    void percentilesWithinPrecision() {
        QFETCH(Dist, dist);
        QFETCH(int, n);
        QFETCH(uint, seed);
        auto v = samples(dist, static_cast<std::size_t>(n), seed);
        auto h = makeHistogram();
        for (auto x : v)
            h->record(x);
        std::sort(v.begin(), v.end());
        QCOMPARE(h->count(), static_cast<std::uint64_t>(n));
        QCOMPARE(h->min(), v.front());
        QCOMPARE(h->max(), v.back());
        for (double p : kPercentiles) {
            const std::uint64_t exact = exactPercentile(v, p);
            const std::uint64_t got = h->valueAtPercentile(p);
            // Never below the exact answer, at most the stated relative precision above it.
            const auto bound = static_cast<std::uint64_t>(exact * (1.0 + Histogram::kRelativePrecision));
            QVERIFY2(got >= exact && got <= bound,
                     qPrintable(QStringLiteral("p%1: exact %2, histogram %3").arg(p).arg(exact).arg(got)));
        }
        // Mean and stddev are exact (up to floating point).
        long double sum = 0, sq = 0;
        for (auto x : v)
            sum += x;
        const long double mean = sum / v.size();
        for (auto x : v)
            sq += (x - mean) * (x - mean);
        const double sd = std::sqrt(static_cast<double>(sq / v.size()));
        QVERIFY(std::abs(h->mean() - static_cast<double>(mean)) <= 1e-9 * static_cast<double>(mean));
        QVERIFY2(std::abs(h->stddev() - sd) <= 1e-6 * std::max(1.0, sd),
                 qPrintable(QStringLiteral("stddev %1 vs %2").arg(h->stddev()).arg(sd)));
    }

    void mergeEqualsRecordingAll() {
        auto a = samples(Dist::LogNormal, 40000, 11);
        auto b = samples(Dist::Bimodal, 30000, 12);
        auto ha = makeHistogram(), hb = makeHistogram(), all = makeHistogram();
        for (auto x : a) {
            ha->record(x);
            all->record(x);
        }
        for (auto x : b) {
            hb->record(x);
            all->record(x);
        }
        hb->record(5, 3); // clamped low
        all->record(5, 3);
        ha->merge(*hb);
        QCOMPARE(ha->count(), all->count());
        QCOMPARE(ha->min(), all->min());
        QCOMPARE(ha->max(), all->max());
        QCOMPARE(ha->clampedLow(), all->clampedLow());
        QCOMPARE(ha->mean(), all->mean());
        QCOMPARE(ha->stddev(), all->stddev());
        for (double p : kPercentiles)
            QCOMPARE(ha->valueAtPercentile(p), all->valueAtPercentile(p));
        std::vector<Histogram::Bucket> x, y;
        ha->forEachBucket([&](const Histogram::Bucket& bk) { x.push_back(bk); });
        all->forEachBucket([&](const Histogram::Bucket& bk) { y.push_back(bk); });
        QCOMPARE(x.size(), y.size());
        for (std::size_t i = 0; i < x.size(); ++i)
            QVERIFY(x[i].lowestNs == y[i].lowestNs && x[i].count == y[i].count);
        // Merging an empty histogram changes nothing; merging into an empty one copies.
        auto empty = makeHistogram();
        ha->merge(*empty);
        QCOMPARE(ha->count(), all->count());
        empty->merge(*all);
        QCOMPARE(empty->valueAtPercentile(99), all->valueAtPercentile(99));
    }

    void edgesAndClamping() {
        auto h = makeHistogram();
        QCOMPARE(h->count(), 0u);
        QCOMPARE(h->valueAtPercentile(50), 0u);
        QCOMPARE(h->min(), 0u);
        QCOMPARE(h->mean(), 0.0);
        h->record(0);
        h->record(999);
        h->record(Histogram::kLowest);
        QCOMPARE(h->clampedLow(), 2u);
        QCOMPARE(h->min(), Histogram::kLowest);
        QCOMPARE(h->valueAtPercentile(100), Histogram::kLowest);
        h->record(Histogram::kHighest);
        h->record(Histogram::kHighest + 1);
        h->record(~0ull, 2);
        QCOMPARE(h->clampedHigh(), 3u);
        QCOMPARE(h->count(), 7u);
        QCOMPARE(h->max(), Histogram::kHighest);
        QCOMPARE(h->valueAtPercentile(100), Histogram::kHighest);
        QCOMPARE(h->valueAtPercentile(0), Histogram::kLowest);
        QCOMPARE(h->valueAtPercentile(-5), Histogram::kLowest);   // p clamped to 0
        QCOMPARE(h->valueAtPercentile(250), Histogram::kHighest); // p clamped to 100
        h->record(12345, 0);                                      // zero count: nothing
        QCOMPARE(h->count(), 7u);
        h->reset();
        QCOMPARE(h->count(), 0u);
        QCOMPARE(h->clampedHigh(), 0u);
        h->record(2047);
        h->record(2048);
        QCOMPARE(h->valueAtPercentile(50), 2047u); // exact below 2048 ns
        QCOMPARE(h->valueAtPercentile(100), 2048u);
    }

    void bucketBoundaries() {
        // Every bucket is [lowest, highest] with width ≤ lowest/1024 and consecutive buckets touch.
        std::mt19937_64 rng(99);
        std::uniform_int_distribution<int> bits(10, 41);
        for (int i = 0; i < 20000; ++i) {
            const std::uint64_t v = clampNs(rng() >> (64 - bits(rng)));
            const auto lo = Histogram::lowestEquivalent(v), hi = Histogram::highestEquivalent(v);
            QVERIFY(lo <= v && v <= hi);
            QVERIFY(static_cast<double>(hi - lo) <= lo * Histogram::kRelativePrecision);
            QCOMPARE(Histogram::lowestEquivalent(hi + 1), hi + 1);
            QCOMPARE(Histogram::lowestEquivalent(hi), lo);
        }
        QCOMPARE(Histogram::lowestEquivalent(1500), 1500u);
        QCOMPARE(Histogram::highestEquivalent(1500), 1500u);
        QCOMPARE(Histogram::lowestEquivalent(4097), 4096u);
        QCOMPARE(Histogram::highestEquivalent(4097), 4099u); // 4096..8191 in steps of 4
        QCOMPARE(Histogram::lowestEquivalent(20'000'123), 20'000'000u - 20'000'000u % 16384u);
    }

    void iterationCoversEveryCount() {
        auto v = samples(Dist::Exponential, 10000, 21);
        auto h = makeHistogram();
        for (auto x : v)
            h->record(x);
        std::uint64_t total = 0, prevHigh = 0;
        bool ascending = true;
        h->forEachBucket([&](const Histogram::Bucket& b) {
            total += b.count;
            ascending = ascending && b.lowestNs > prevHigh && b.highestNs >= b.lowestNs;
            prevHigh = b.highestNs;
        });
        QCOMPARE(total, h->count());
        QVERIFY(ascending);
        std::uint64_t ofMax = 0;
        h->forEachBucket([&](const Histogram::Bucket& b) {
            if (b.lowestNs <= h->max() && h->max() <= b.highestNs) ofMax = b.count;
        });
        QVERIFY(ofMax >= 1);
    }
};

QTEST_APPLESS_MAIN(TestHistogram)
#include "tst_histogram.moc"
