// Zero heap allocations per request in steady state on the plaintext and small-static paths:
// the whole process's operator new is counted while a keep-alive client repeats requests; for
// HTTP/2, the blocks nghttp2 takes from malloc through Portico's block cache.
#include "net/h2_mem.h"
#include "raw_client.h"
#include "test_support.h"

#include <portico/config/loader.h>
#include <portico/engine/engine.h>

#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <new>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {
std::atomic<std::uint64_t> g_allocations{0};
std::atomic<std::int64_t> g_liveBytes{0}; // usable bytes of the blocks operator new handed out
} // namespace

void* operator new(std::size_t n) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n ? n : 1)) {
        g_liveBytes.fetch_add(static_cast<std::int64_t>(::malloc_usable_size(p)), std::memory_order_relaxed);
        return p;
    }
    throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept {
    if (p)
        g_liveBytes.fetch_sub(static_cast<std::int64_t>(::malloc_usable_size(p)), std::memory_order_relaxed);
    std::free(p);
}
void operator delete[](void* p) noexcept { operator delete(p); }
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }
void operator delete[](void* p, std::size_t) noexcept { operator delete(p); }

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

    // HTTP/2 (h2c with prior knowledge) in steady state: nghttp2's per-request blocks (about five:
    // the stream, its HEADERS and DATA items, the response's header list) come from the worker's
    // block cache (core/src/net/h2_mem.h), not from malloc. h2load on one connection: 20,000
    // requests take from malloc what 200 take (the connection's session and tables only).
    void h2RequestsTakeNothingFromMalloc_data() {
        QTest::addColumn<QString>("path");
        QTest::newRow("respond") << "/plaintext";
        // A static file's response has more fields (ETag, Last-Modified, Accept-Ranges...): nghttp2's
        // copy of the header list is 612 bytes here.
        QTest::newRow("static file") << "/small.txt";
    }

    void h2RequestsTakeNothingFromMalloc() {
        QFETCH(QString, path);
        const QString url = QString("http://127.0.0.1:%1%2").arg(port_).arg(path);
        auto run = [&](int n) -> std::uint64_t {
            const std::uint64_t before = net::h2mem::systemAllocations();
            auto r =
                test::runProcess("h2load", {"-n", QString::number(n), "-c", "1", "-m", "16", url}, {}, 60000);
            if (r.exitCode != 0 || !r.out.contains(QString("%1 succeeded, 0 failed").arg(n).toUtf8())) {
                qWarning("%s%s", r.out.constData(), r.err.constData());
                return ~0ull;
            }
            return net::h2mem::systemAllocations() - before;
        };
        QVERIFY(run(2000) != ~0ull); // warms the worker's lists
        const std::uint64_t few = run(200);
        const std::uint64_t many = run(20000);
        QVERIFY(few != ~0ull && many != ~0ull);
        QVERIFY(few > 0); // the session allocates through the cache (it is larger than any class)
        QVERIFY2(many <= few + 20, qPrintable(QString("200 requests: %1, 20,000: %2").arg(few).arg(many)));
    }

    // Memory per idle keep-alive connection (a benchmark target, docs/benchmarks.md): once idle for
    // a tick, a connection parks (its buffers, from mmap, go back to the pool; its socket waits in
    // the worker's park set) and holds only the connection object with its shared_ptr block and
    // Asio's per-descriptor state: 232 + 168 usable bytes here. With a pending Asio operation per
    // idle connection (before parking without one) it was 504 (248 + 168 + 88).
    void idleConnectionHeapBytes() {
        constexpr int kConnections = 200;
        std::vector<int> fds;
        fds.reserve(kConnections);
        const std::int64_t b0 = g_liveBytes.load();
        std::this_thread::sleep_for(std::chrono::milliseconds(1000));
        qInfo("drift %lld", (long long)(g_liveBytes.load() - b0));
        // The engine's first per-second statistics tick allocates its series (about 0.5 MB, once):
        // let it happen before the baseline.
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        const std::int64_t before = g_liveBytes.load();
        static const char kRequest[] = "GET /plaintext HTTP/1.1\r\nHost: localhost\r\n\r\n";
        for (int i = 0; i < kConnections; ++i) {
            const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            sockaddr_in addr{};
            addr.sin_family = AF_INET;
            addr.sin_port = htons(port_);
            addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            QVERIFY(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
            fds.push_back(fd);
            QCOMPARE(::send(fd, kRequest, sizeof kRequest - 1, 0), ssize_t(sizeof kRequest - 1));
            char reply[1024];
            std::size_t got = 0;
            while (got < sizeof reply) { // the whole response: head and the 13-byte body
                const ssize_t n = ::recv(fd, reply + got, sizeof reply - got, 0);
                QVERIFY(n > 0);
                got += static_cast<std::size_t>(n);
                const std::string_view r(reply, got);
                if (const auto end = r.find("\r\n\r\n"); end != r.npos && r.size() >= end + 4 + 13) break;
            }
            QVERIFY(std::string_view(reply, got).starts_with("HTTP/1.1 200 "));
        }
        const std::int64_t active = g_liveBytes.load();
        std::this_thread::sleep_for(std::chrono::milliseconds(1000)); // > 200 ms idle + a 250 ms tick
        const std::int64_t parked = g_liveBytes.load();
        for (int fd : fds)
            ::close(fd);
        const double activeEach = double(active - before) / kConnections;
        const double parkedEach = double(parked - before) / kConnections;
        qInfo("heap per connection: %.0f bytes waiting for its next request, %.0f parked", activeEach,
              parkedEach);
        QVERIFY2(parkedEach <= 420, qPrintable(QString::number(parkedEach)));
        QVERIFY2(activeEach - parkedEach >= 64, "parking gave back no pending operation");
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
