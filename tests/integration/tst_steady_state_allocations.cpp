// Zero heap allocations per request in steady state on the plaintext and small-static paths:
// the whole process's operator new is counted while a keep-alive client repeats requests.
#include "raw_client.h"

#include <portico/config/loader.h>
#include <portico/engine/engine.h>

#include <QTemporaryDir>
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

class TestSteadyStateAllocations : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    engine::Engine engine_;
    std::uint16_t port_ = 0;

    static constexpr int kMeasured = 20000;
    // Heap allocations in the whole process during kMeasured keep-alive requests after warm-up.
    // Per-request work must allocate nothing; the only allowance is the worker's 250 ms ticker,
    // whose timer operation Asio may allocate when its per-thread recycling slots are taken, so
    // the bound is "fewer than one per 1,000 requests" (a per-request allocation gives ≥ 20,000).
    std::uint64_t allocationsFor(std::string_view request, std::string_view expectBody) {
        test::RawClient client(port_);
        if (!client.ok()) return ~0ull;
        for (int i = 0; i < 2000; ++i)
            if (client.exchange(request) != 200) return ~0ull;
        std::uint64_t before = g_allocations.load();
        for (int i = 0; i < kMeasured; ++i)
            if (client.exchange(request) != 200 || client.body() != expectBody) return ~0ull;
        return g_allocations.load() - before;
    }

private slots:
    void initTestCase() {
        QFile f(dir_.filePath("small.txt"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("Hello, World!");
        f.close();
        std::string yaml =
            "workers: 1\nlisten: [\"127.0.0.1:0\"]\nvhosts:\n  - root: " + dir_.path().toStdString() +
            "\n    routes:\n      - path: /plaintext\n        respond: {body: \"Hello, World!\", "
            "headers: {Content-Type: text/plain}}\n";
        auto r = config::loadConfigText(yaml, "alloc.yaml", ".");
        QVERIFY2(r.ok(), r.ok() ? "" : r.errors.front().toString().c_str());
        std::string error;
        QVERIFY2(engine_.start(r.config, error), error.c_str());
        port_ = engine_.endpoints().front().port;
    }

    void plaintextAllocatesNothing() {
        const std::uint64_t n =
            allocationsFor("GET /plaintext HTTP/1.1\r\nHost: localhost\r\n\r\n", "Hello, World!");
        QVERIFY2(n < kMeasured / 1000, qPrintable(QString::number(n)));
    }

    void smallStaticAllocatesNothing() {
        const std::uint64_t n = allocationsFor(
            "GET /small.txt HTTP/1.1\r\nHost: localhost\r\nUser-Agent: t\r\n\r\n", "Hello, World!");
        QVERIFY2(n < kMeasured / 1000, qPrintable(QString::number(n)));
    }

    // The counter itself must be able to fail: a request path that allocates shows up.
    void counterSeesAllocations() {
        std::uint64_t before = g_allocations.load();
        auto* p = new std::string(100, 'x');
        delete p;
        QVERIFY(g_allocations.load() > before);
    }

    void cleanupTestCase() { engine_.stop(); }
};

QTEST_GUILESS_MAIN(TestSteadyStateAllocations)
#include "tst_steady_state_allocations.moc"
