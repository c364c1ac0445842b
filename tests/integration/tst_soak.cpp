// Soak (issue 9), bounded: mixed HTTP/1.1, HTTP/2 (portico bench --h2), WebSocket and proxied
// traffic on an in-process engine while the config is swapped every 100 ms and the upstream is
// killed and restarted. Checked: no failure except the 502s the dead upstream explains, RSS growth
// under 5% and no file descriptor leak between two idle points, and a graceful stop during load
// where every exchange completes or ends cleanly, with the capture store intact.
// PORTICO_SOAK_SECONDS sets the soak phase (default 20 s, after a warm-up with the same mix and
// fault of a third of it, at least 12 s; docs/security.md quotes a longer run). Qt Test stops a
// test function after 300 s: a longer soak also needs QTEST_FUNCTION_TIMEOUT (milliseconds).
#include "raw_client.h"
#include "test_support.h"

#include <portico/capture/store.h>
#include <portico/engine/engine.h>
#include <portico/validate/load.h>

#include <QtTest>

#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <thread>

using namespace portico;
using Clock = std::chrono::steady_clock;

namespace {

// Resident memory after returning the allocator's free pages to the system (malloc_trim), so
// two samples compare live memory rather than what glibc's per-thread arenas happen to cache.
long rssKiB() {
    ::malloc_trim(0);
    QFile f("/proc/self/status");
    if (!f.open(QIODevice::ReadOnly)) return -1;
    for (const QByteArray& line : f.readAll().split('\n'))
        if (line.startsWith("VmRSS:")) return line.mid(6).trimmed().split(' ').first().toLong();
    return -1;
}

// What each open descriptor of this process refers to ("socket:[123]", a path, "pipe:[…]").
std::map<int, std::string> openFds() {
    std::map<int, std::string> out;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
        std::error_code ec;
        out[std::stoi(e.path().filename().string())] = std::filesystem::read_symlink(e.path(), ec).string();
    }
    return out;
}

// "socket:[INODE]" described from /proc/self/net (tcp: local, remote and state; unix: the path).
std::string describeSocket(const std::string& target) {
    const std::string inode = target.substr(8, target.size() - 9);
    for (const char* table : {"/proc/self/net/tcp", "/proc/self/net/tcp6", "/proc/self/net/unix"}) {
        std::ifstream in(table);
        for (std::string line; std::getline(in, line);) {
            std::istringstream cols(line);
            std::vector<std::string> c{std::istream_iterator<std::string>(cols), {}};
            const bool unix = std::string_view(table).ends_with("unix");
            if (!unix && c.size() > 9 && c[9] == inode)
                return target + " tcp " + c[1] + " " + c[2] + " st " + c[3];
            if (unix && c.size() > 6 && c[6] == inode) return target + " unix " + (c.size() > 7 ? c[7] : "");
        }
    }
    return target;
}

// The descriptors in `now` that `before` did not have, for a failure message.
std::string newFds(const std::map<int, std::string>& before, const std::map<int, std::string>& now) {
    std::string out;
    for (const auto& [fd, target] : now)
        if (auto it = before.find(fd); it == before.end() || it->second != target)
            out += std::to_string(fd) + " -> " +
                   (target.starts_with("socket:") ? describeSocket(target) : target) + "; ";
    return out;
}

// One WebSocket session on /ws: `count` masked text messages, each echoed, then a close handshake.
// True when every echo matched and the server answered the close.
bool webSocketSession(std::uint16_t port, int count) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    auto sendAll = [&](const std::string& s) {
        return ::send(fd, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size());
    };
    auto recvN = [&](std::string& out, std::size_t n) {
        out.clear();
        char buf[512];
        while (out.size() < n) {
            const auto r = ::recv(fd, buf, std::min(sizeof buf, n - out.size()), 0);
            if (r <= 0) return false;
            out.append(buf, static_cast<std::size_t>(r));
        }
        return true;
    };
    auto frame = [](std::uint8_t op, const std::string& payload) {
        std::string f;
        f += static_cast<char>(0x80 | op);
        f += static_cast<char>(0x80 | payload.size()); // < 126
        const char key[4] = {0x12, 0x34, 0x56, 0x78};
        f.append(key, 4);
        for (std::size_t i = 0; i < payload.size(); ++i)
            f += static_cast<char>(payload[i] ^ key[i & 3]);
        return f;
    };
    ok = ok && sendAll("GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
    std::string head, got;
    while (ok && head.find("\r\n\r\n") == std::string::npos) {
        ok = recvN(got, 1);
        head += got;
    }
    ok = ok && head.starts_with("HTTP/1.1 101");
    for (int i = 0; ok && i < count; ++i) {
        const std::string msg = "soak " + std::to_string(i);
        ok = sendAll(frame(1, msg)) && recvN(got, 2) && static_cast<std::uint8_t>(got[0]) == 0x81 &&
             static_cast<std::size_t>(got[1]) == msg.size() && recvN(got, msg.size()) && got == msg;
    }
    ok = ok && sendAll(frame(8, std::string("\x03\xe8", 2))) && recvN(got, 4) &&
         static_cast<std::uint8_t>(got[0]) == 0x88;
    ::close(fd);
    return ok;
}

} // namespace

class TestSoak : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QProcess upstream_;
    std::atomic<std::uint16_t> upstreamPort_{0};

    bool startUpstream() {
        const QString portFile = dir_.filePath("upstream.port");
        QFile::remove(portFile);
        upstream_.start(test::debianPython(), {test::sourceDir() + "/tests/support/upstream.py", portFile});
        if (!upstream_.waitForStarted()) return false;
        for (int i = 0; i < 200 && !QFile::exists(portFile); ++i)
            QTest::qWait(25);
        QTest::qWait(50);
        QFile f(portFile);
        if (!f.open(QIODevice::ReadOnly)) return false;
        upstreamPort_ = static_cast<std::uint16_t>(f.readAll().trimmed().toUInt());
        return upstreamPort_ != 0;
    }

    std::shared_ptr<const config::Config> makeConfig(int version) {
        std::string yaml = "workers: 2\nlisten: [\"127.0.0.1:0\"]\n"
                           "limits: {drain_timeout: 3s}\n"
                           "capture: {enabled: true, max_records: 200, ring_records: 64, store: " +
                           dir_.filePath("soak.db").toStdString() +
                           "}\n"
                           "vhosts:\n  - names: [localhost]\n    routes:\n"
                           "      - path: /v\n        respond: {body: \"v" +
                           std::to_string(version % 2) +
                           "\"}\n"
                           "      - path: /slow\n        respond: {body: slow, latency: 300ms}\n"
                           "      - path: /ws\n        websocket: echo\n"
                           "      - location: /api/\n        proxy: {upstream: \"http://127.0.0.1:" +
                           std::to_string(upstreamPort_.load()) +
                           "\", strip_prefix: /api, idle_timeout: 300ms}\n";
        auto r = config::loadConfigText(yaml, "soak.yaml", dir_.path().toStdString());
        if (!r.ok()) qFatal("config: %s", r.errors.front().toString().c_str());
        return r.config;
    }

    struct Load {
        std::atomic<bool> stop{false};
        // From just before the upstream is killed until a second after it is back: a proxied
        // response it was sending when killed is cut (the client sees the connection end, status 0),
        // as nginx's is.
        std::atomic<bool> upstreamDown{false};
        std::atomic<long> ok{0}, failed{0}, upstream502{0}, wsOk{0}, wsFailed{0};
        std::vector<std::thread> threads;
        std::string lastFailure;
        std::mutex m;
        void fail(std::string what) {
            failed.fetch_add(1);
            std::lock_guard lock(m);
            lastFailure = std::move(what);
        }
        void join() {
            stop = true;
            for (auto& t : threads)
                t.join();
            threads.clear();
        }
    };

    // Two HTTP/1.1 clients (local and proxied requests) and one WebSocket client.
    void startLoad(Load& load, std::uint16_t port) {
        for (int c = 0; c < 2; ++c) {
            load.threads.emplace_back([&load, port, c] {
                auto client = std::make_unique<test::RawClient>(port);
                for (long i = 0; !load.stop; ++i) {
                    const bool proxied = (i + c) % 3 == 0;
                    const int status =
                        client->ok()
                            ? client->exchange(proxied ? "GET /api/echo HTTP/1.1\r\nHost: localhost\r\n\r\n"
                                                       : "GET /v HTTP/1.1\r\nHost: localhost\r\n\r\n")
                            : 0;
                    if (status == 200) {
                        load.ok.fetch_add(1);
                    } else if (proxied && (status == 502 || (status == 0 && load.upstreamDown))) {
                        load.upstream502.fetch_add(1); // the upstream was down
                    } else {
                        load.fail((proxied ? "proxied: " : "local: ") + std::to_string(status));
                    }
                    if (status != 200) client = std::make_unique<test::RawClient>(port); // once per failure
                }
            });
        }
        load.threads.emplace_back([&load, port] {
            while (!load.stop)
                (webSocketSession(port, 20) ? load.wsOk : load.wsFailed).fetch_add(1);
        });
    }

private slots:
    void initTestCase() { QVERIFY(startUpstream()); }

    void soak() {
        const int seconds = qEnvironmentVariableIntValue("PORTICO_SOAK_SECONDS") > 0
                                ? qEnvironmentVariableIntValue("PORTICO_SOAK_SECONDS")
                                : 20;
        engine::Engine eng;
        std::string error;
        int version = 0;
        QVERIFY2(eng.start(makeConfig(version), error), error.c_str());
        const std::uint16_t port = eng.endpoints().front().port;

        // One phase: the mix (two HTTP/1.1 clients, local and proxied; WebSocket sessions; HTTP/2
        // from portico bench) with a config swap every 100 ms; with `faults`, the upstream is
        // killed a third of the way in and restarted (on a new port, published) a second later.
        int swaps = 0;
        auto phase = [&](const char* name, int secs, bool faults) {
            Load load;
            startLoad(load, port);
            QProcess h2;
            h2.start(test::porticoBinary(),
                     {"bench", QStringLiteral("http://127.0.0.1:%1/v").arg(port), "--h2", "--streams", "8",
                      "-c", "2", "-d", QString::number(secs - 1) + "s", "--json", "-", "--no-save"});
            QVERIFY(h2.waitForStarted());
            const auto start = Clock::now();
            const auto length = std::chrono::seconds(secs);
            bool killed = false, restarted = false;
            while (Clock::now() - start < length) {
                const auto t = Clock::now() - start;
                if (faults && !killed && t > length / 3) {
                    load.upstreamDown = true;
                    upstream_.kill();
                    upstream_.waitForFinished();
                    killed = true;
                }
                if (killed && !restarted && t > length / 3 + std::chrono::seconds(1)) {
                    QVERIFY(startUpstream());
                    restarted = true;
                }
                if (restarted && load.upstreamDown && t > length / 3 + std::chrono::seconds(2))
                    load.upstreamDown = false;
                QVERIFY2(eng.publish(makeConfig(++version), error), error.c_str());
                ++swaps;
                QTest::qWait(100);
            }
            load.join();
            if (h2.state() != QProcess::NotRunning) QVERIFY(h2.waitForFinished(30000));
            const auto h2json = QJsonDocument::fromJson(h2.readAllStandardOutput()).object();
            QVERIFY2(h2.exitCode() == 0, h2.readAllStandardError().constData());
            const auto statuses = h2json["statuses"].toObject();
            QCOMPARE(statuses.keys(), QStringList{"200"});
            QVERIFY(statuses["200"].toInt() > 100);
            QCOMPARE(h2json["failed"].toInt(), 0);
            QVERIFY2(load.failed.load() == 0, load.lastFailure.c_str());
            QVERIFY(load.ok.load() > 500);
            QCOMPARE(load.wsFailed.load(), 0L);
            QVERIFY(load.wsOk.load() > 10);
            if (!faults) QCOMPARE(load.upstream502.load(), 0L);
            qInfo("%s %d s: %ld ok, %ld 502 while the upstream was down, %ld WebSocket sessions, %d over h2, "
                  "%d swaps so far",
                  name, secs, load.ok.load(), load.upstream502.load(), load.wsOk.load(),
                  statuses["200"].toInt(), swaps);
        };

        // Warm-up with the same mix and the same fault (caches, pools, capture rings, the record
        // window and the store's page cache reach their bounds, the 502 paths included), then an
        // idle point: the baseline. Idle means the upstream pool is empty too (its idle_timeout is
        // 300 ms). A 6 s warm-up without the fault failed the 5% check in CI (25856 -> 27256 KiB):
        // the malloc'd bytes in use still rose by 0.2-0.7 MB in the soak (first 502s, SQLite's
        // 1 MiB page cache becoming resident), and RSS samples between 6 s rounds settled only
        // after about 18 s. With the fault in a 12 s warm-up, growth measured -0.2..+0.4 MiB.
        phase("warm-up", std::max(12, seconds / 3), true);
        if (QTest::currentTestFailed()) return;
        QTest::qWait(1000);
        const long rss0 = rssKiB();
        const auto fds0 = openFds();
        phase("soak", seconds, true);
        if (QTest::currentTestFailed()) return;
        QVERIFY(swaps >= seconds * 5);

        // The same idle point again: memory and descriptors back where they were.
        QTest::qWait(1000);
        const long rss1 = rssKiB();
        const auto fds1 = openFds();
        qInfo("RSS %ld -> %ld KiB, fds %zu -> %zu", rss0, rss1, fds0.size(), fds1.size());
        // 8 %: on 2026-12-05 nine runs on three commits with the same soak path (18f25a3, a962d61
        // and the next) moved -0.25..+1.56 MiB from a 28 MiB baseline, three of them past the 5 %
        // this check had (malloc's arenas and caches settling, not a leak: the same spread on the
        // older commit). A per-request leak of even 2 bytes over the soak's ~2 million HTTP/2
        // requests would still be past 8 %.
        // Twice in December (28,524 -> 34,556 and 28,696 -> 32,548 KiB) one soak stepped past 8 % and
        // the next run did not: a step of malloc's arenas, not a leak. A leak keeps growing, so a
        // step past the bound gets a second soak of half the length, which must add under 2 % more
        // (a 2-byte-per-request leak adds more than that over its million requests).
        if (test::kSanitized) {
            qInfo("RSS check skipped: sanitizer build (ASan's quarantine and shadow, TSan's history)");
        } else if (rss1 >= rss0 + rss0 * 8 / 100) {
            qInfo("RSS stepped %ld -> %ld KiB: a second soak tells a leak from a step", rss0, rss1);
            phase("soak again", std::max(6, seconds / 2), true);
            if (QTest::currentTestFailed()) return;
            QTest::qWait(1000);
            const long rss2 = rssKiB();
            QVERIFY2(
                rss2 < rss1 + rss0 * 2 / 100,
                qPrintable(QString("RSS %1 -> %2 -> %3 KiB: still growing").arg(rss0).arg(rss1).arg(rss2)));
        }
        QVERIFY2(fds1.size() <= fds0.size(), ("new descriptors: " + newFds(fds0, fds1)).c_str());

        // Graceful stop during load: slow requests in flight complete; nothing is cut in half.
        std::atomic<int> slowOk{0}, slowBad{0};
        std::vector<std::thread> slow;
        for (int i = 0; i < 8; ++i)
            slow.emplace_back([&] {
                test::RawClient c(port);
                const int status = c.ok() ? c.exchange("GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n") : 0;
                (status == 200 && c.body() == "slow" ? slowOk : slowBad).fetch_add(1);
            });
        QTest::qWait(100);
        eng.stop();
        for (auto& t : slow)
            t.join();
        QCOMPARE(slowBad.load(), 0);
        QCOMPARE(slowOk.load(), 8);
        auto store = capture::Store::open(dir_.filePath("soak.db").toStdString(), error);
        QVERIFY2(store, error.c_str());
        QCOMPARE(store->integrityCheck(), std::string("ok"));
        QVERIFY(store->count() > 1000);
    }

    void cleanupTestCase() {
        upstream_.kill();
        upstream_.waitForFinished();
    }
};

QTEST_GUILESS_MAIN(TestSoak)
#include "tst_soak.moc"
