// The load generator allocates nothing per request in steady state: the whole process's operator new
// is counted over a short and a long run against an in-process portico; the difference, spread over
// the extra requests, must be near zero (setup costs the same in both runs).
#include <portico/engine/engine.h>
#include <portico/load/runner.h>
#include <portico/validate/load.h>

#include <QtTest>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<std::uint64_t> g_allocations{0};
}

void* operator new(std::size_t n) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

using namespace portico;

class TestLoadAllocations : public QObject {
    Q_OBJECT
    engine::Engine engine_;
    std::uint16_t port_ = 0;

    // Allocations of one run of `count` requests; `samples` gets the drill-down samples it kept
    // (Options::samples as `keepSamples`).
    std::uint64_t allocationsFor(std::uint64_t count, unsigned pipeline, bool keepSamples = true,
                                 std::size_t* samples = nullptr) {
        load::Options o;
        load::RequestSpec r;
        r.url = "http://127.0.0.1:" + std::to_string(port_) + "/plaintext";
        o.requests.push_back(r);
        o.connections = 2;
        o.pipeline = pipeline;
        o.count = count;
        o.samples = keepSamples;
        const std::uint64_t before = g_allocations.load();
        auto res = load::run(o);
        const std::uint64_t n = g_allocations.load() - before;
        if (!res.ok() || res.requests.completed != count) return ~0ull;
        if (samples) *samples = res.samples.size();
        return n;
    }

private slots:
    void initTestCase() {
        std::string yaml =
            "workers: 1\nlisten: [\"127.0.0.1:0\"]\nvhosts:\n  - routes:\n      - path: /plaintext\n"
            "        respond: {body: \"Hello, World!\"}\n";
        auto r = config::loadConfigText(yaml, "alloc.yaml", ".");
        QVERIFY(r.ok());
        std::string error;
        QVERIFY2(engine_.start(r.config, error), error.c_str());
        port_ = engine_.endpoints().front().port;
    }

    void steadyStateAllocatesNothing_data() {
        QTest::addColumn<unsigned>("pipeline");
        QTest::newRow("keep-alive") << 1u;
        QTest::newRow("pipelined x8") << 8u;
    }
    // Without the drill-down sample nothing at all; with it, only what the samples kept need (a
    // sample's response fields are strings: a longer run keeps more samples, a few per second and
    // per latency bin, each a few allocations), far from one per request.
    void steadyStateAllocatesNothing() {
        QFETCH(unsigned, pipeline);
        allocationsFor(1000, pipeline); // Asio's per-thread recycling caches, the resolver, ...
        const std::uint64_t small = allocationsFor(2000, pipeline, false);
        const std::uint64_t large = allocationsFor(42000, pipeline, false);
        QVERIFY(small != ~0ull && large != ~0ull);
        // 40,000 more requests; a per-request allocation would add ≥ 40,000.
        const auto extra = large > small ? large - small : 0;
        QVERIFY2(extra < 40, qPrintable(QStringLiteral("small %1, large %2").arg(small).arg(large)));

        std::size_t fewer = 0, more = 0;
        const std::uint64_t smallSampled = allocationsFor(2000, pipeline, true, &fewer);
        const std::uint64_t largeSampled = allocationsFor(42000, pipeline, true, &more);
        QVERIFY(smallSampled != ~0ull && largeSampled != ~0ull);
        const auto extraSampled = largeSampled > smallSampled ? largeSampled - smallSampled : 0;
        const std::size_t kept = more > fewer ? more - fewer : 0;
        qInfo("sampled: %llu more allocations for %zu more samples",
              static_cast<unsigned long long>(extraSampled), kept);
        QVERIFY2(extraSampled < 64 + 16 * kept,
                 qPrintable(QStringLiteral("sampled: small %1 (%2 samples), large %3 (%4 samples)")
                                .arg(smallSampled)
                                .arg(fewer)
                                .arg(largeSampled)
                                .arg(more)));
    }

    void cleanupTestCase() { engine_.stop(); }
};

QTEST_GUILESS_MAIN(TestLoadAllocations)
#include "tst_load_allocations.moc"
