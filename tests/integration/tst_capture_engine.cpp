// Capture through the engine facade with real clients: records and timelines of HTTP/1.1 and
// h2c exchanges agree with what curl measured (ordering and sanity, not tight timing), statistics
// count every exchange, Server-Timing, the ring's drop counting under a pipelined flood, and
// capture off leaving no trace.
#include "raw_client.h"
#include "test_support.h"

#include <portico/capture/har.h>
#include <portico/capture/replay.h>
#include <portico/capture/store.h>
#include <portico/engine/engine.h>
#include <portico/validate/load.h>

#include <QDir>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <thread>

using namespace portico;
using capture::Phase;

namespace {
struct CurlTimes {
    double connect = -1, pretransfer = -1, starttransfer = -1, total = -1;
    int status = 0;
};
// Runs curl once; timings in nanoseconds.
CurlTimes curl(const QStringList& extra, const QString& url) {
    QStringList args = extra;
    args << "-s"
         << "-o"
         << "/dev/null"
         << "-w"
         << "%{http_code} %{time_connect} %{time_pretransfer} %{time_starttransfer} %{time_total}\\n"
         << url;
    auto r = test::runProcess("curl", args);
    CurlTimes t;
    auto parts = QString::fromUtf8(r.out).trimmed().split(' ');
    if (parts.size() != 5) return t;
    t.status = parts[0].toInt();
    t.connect = parts[1].toDouble() * 1e9;
    t.pretransfer = parts[2].toDouble() * 1e9;
    t.starttransfer = parts[3].toDouble() * 1e9;
    t.total = parts[4].toDouble() * 1e9;
    return t;
}

bool ordered(const capture::Exchange& e) {
    std::int64_t last = -1;
    for (auto phase : capture::kTimelineOrder) {
        const std::int64_t p = e.at(phase);
        if (p < 0) continue;
        if (p < last) return false;
        last = p;
    }
    return true;
}
} // namespace

class TestCaptureEngine : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    engine::Engine engine_;
    std::uint16_t port_ = 0;

    // The first `n` records after `since`, once each is complete. A record is published right
    // after its response was written, so a client may see the response a moment before the
    // collector can see the record; and one published before the worker, back from send(),
    // stamped its end (kIncomplete, no ResponseDone yet: a delayed response yields first) is
    // completed by a later flush. Seen once under ASan: ResponseDone -1 on /slow.
    std::vector<capture::Exchange> waitFor(std::uint64_t since, std::size_t n) {
        std::vector<capture::Exchange> got;
        for (int i = 0; i < 200; ++i) {
            engine_.flushCapture();
            got = engine_.recentExchanges(since, 100);
            if (got.size() >= n && std::none_of(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(n),
                                                [](const capture::Exchange& e) {
                                                    return (e.flags & capture::kIncomplete) != 0;
                                                }))
                break;
            QTest::qWait(10);
        }
        return got;
    }

    std::shared_ptr<const config::Config> load(const std::string& extra) {
        std::string yaml = "workers: 2\nlisten: [\"127.0.0.1:0\"]\n" + extra +
                           "vhosts:\n  - names: [localhost]\n    root: " + dir_.path().toStdString() +
                           "\n    routes:\n      - path: /slow\n        name: slow\n        respond: {body: "
                           "late, latency: 60ms}\n"
                           "      - path: /api/:id\n        respond: {status: 201, body: "
                           "\"id={{param.id}}\", headers: {Content-Type: text/plain}}\n"
                           "      - path: /boom\n        respond: {status: 503, body: down}\n";
        auto r = config::loadConfigText(yaml, "capture.yaml", ".");
        if (!r.ok()) qWarning() << r.errors.front().toString().c_str();
        return r.ok() ? r.config : nullptr;
    }

private slots:
    void initTestCase() {
        QFile f(dir_.filePath("index.html"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("<p>hello</p>\n");
        f.close();
        auto cfg = load("capture: {enabled: true, server_timing: true, body_bytes: 64}\n");
        QVERIFY(cfg);
        std::string error;
        QVERIFY2(engine_.start(cfg, error), error.c_str());
        port_ = engine_.endpoints().front().port;
    }

    // The engine's threads carry names (top -H, perf, gdb): one per worker and the collector's.
    void threadsAreNamed() {
        QStringList names;
        for (const QString& tid : QDir("/proc/self/task").entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
            QFile comm("/proc/self/task/" + tid + "/comm");
            if (comm.open(QIODevice::ReadOnly)) names << QString::fromUtf8(comm.readAll()).trimmed();
        }
        QVERIFY2(names.contains("portico-w0"), qPrintable(names.join(", ")));
        QVERIFY2(names.contains("portico-capture"), qPrintable(names.join(", ")));
    }

    // A request refused after its request line was read (413 for a Content-Length above the limit,
    // 431 for its fields) is recorded with its method and URL; one whose line could not be read
    // has none, and replay refuses it instead of sending `GET /`.
    void refusedRequestsKeepWhatWasRead() {
        auto cfg = load("capture: {enabled: true}\nlimits: {max_body_bytes: 100}\n");
        QVERIFY(cfg);
        engine::Engine engine;
        std::string error;
        QVERIFY2(engine.start(cfg, error), error.c_str());
        const std::uint16_t port = engine.endpoints().front().port;
        auto big = test::rawExchange(
            port, "POST /upload?x=1 HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5000\r\n\r\n");
        QVERIFY2(big.bytes.startsWith("HTTP/1.1 413 "), big.bytes.constData());
        auto garbled = test::rawExchange(port, "G(T / HTTP/1.1\r\nHost: localhost\r\n\r\n");
        QVERIFY2(garbled.bytes.startsWith("HTTP/1.1 400 "), garbled.bytes.constData());
        std::vector<capture::Exchange> got;
        for (int i = 0; i < 200 && got.size() < 2; ++i) {
            engine.flushCapture();
            got = engine.recentExchanges(0, 10);
            QTest::qWait(10);
        }
        QCOMPARE(got.size(), std::size_t(2));
        const capture::Exchange& refused = got[0].status == 413 ? got[0] : got[1];
        const capture::Exchange& unread = got[0].status == 413 ? got[1] : got[0];
        QCOMPARE(refused.status, 413);
        QCOMPARE(refused.method, std::string("POST"));
        QCOMPARE(refused.target, std::string("/upload?x=1"));
        QCOMPARE(refused.authority, std::string("localhost"));
        QCOMPARE(unread.status, 400);
        QVERIFY2(unread.method.empty() && unread.target.empty(), unread.method.c_str());
        capture::ReplayOptions o;
        o.baseUrl = "http://127.0.0.1:" + std::to_string(port);
        auto replayed = capture::replay(unread, o);
        QVERIFY(!replayed.ok());
        QVERIFY2(replayed.error.find("no request line was recorded") != std::string::npos,
                 replayed.error.c_str());
        engine.stop();
    }

    void timelineAgreesWithCurl() {
        const QString base = QString("http://127.0.0.1:%1").arg(port_);
        const std::uint64_t since =
            engine_.recentExchanges(0, 100000).empty() ? 0 : engine_.recentExchanges(0, 100000).back().id;
        CurlTimes fast = curl({}, base + "/index.html");
        CurlTimes slow = curl({}, base + "/slow");
        QCOMPARE(fast.status, 200);
        QCOMPARE(slow.status, 200);
        auto got = waitFor(since, 2);
        QCOMPARE(got.size(), std::size_t(2));
        for (const auto& e : got) {
            QVERIFY(ordered(e));
            QVERIFY(e.at(Phase::Accepted) >= 0);
            QVERIFY(e.at(Phase::RequestHeaders) >= e.at(Phase::Accepted));
            QVERIFY(e.at(Phase::RouteMatched) >= 0);
            QVERIFY(e.at(Phase::ResponseDone) >= e.at(Phase::ResponseFirstByte));
            QCOMPARE(e.at(Phase::TlsDone), std::int64_t(-1));
            QCOMPARE(e.protocol, capture::Protocol::Http1);
            QCOMPARE(e.streamId, 1u);
            QVERIFY(e.client.starts_with("127.0.0.1:"));
            QCOMPARE(e.vhost, std::string("localhost"));
        }
        const auto& f = got[0];
        const auto& s = got[1];

        QCOMPARE(f.route, std::string("(static)"));
        QCOMPARE(f.responseBody, std::string("<p>hello</p>\n"));
        QVERIFY(!f.responseHeader("Server-Timing").empty());
        QCOMPARE(s.route, std::string("slow"));
        // What the server saw fits inside what the client measured: its request-to-response time
        // is at most the client's whole exchange, and both include the 60 ms mock latency. The
        // server stamps "done" after send() returns, which on a loaded machine can be a little
        // after the client already read the bytes: 20 ms of slack for that (a worker preempted
        // between send() and its clock read on a 2-core machine running builds beside the suite
        // was more than 5 ms late), 50 ms in a sanitizer build (11 ms late seen there).
        constexpr double kJitter = test::kSanitized ? 50e6 : 20e6;
        const std::int64_t serverSlow = s.between(Phase::RequestHeaders, Phase::ResponseDone);
        QVERIFY2(serverSlow >= 60'000'000, qPrintable(QString::number(serverSlow)));
        QVERIFY2(static_cast<double>(serverSlow) <= slow.total + kJitter,
                 qPrintable(QString("%1 > %2").arg(serverSlow).arg(slow.total)));
        QVERIFY(slow.starttransfer >= 60e6);
        // The server's wait (body done → first byte) explains the client's (connected → first byte,
        // which also holds sending the request) within 30 ms of loopback and scheduling jitter; 80 ms
        // in a sanitizer build, where curl and the server share two cores with the suite's other
        // tests (36 ms seen there with a fuzzer beside it). Both bounds still fail when the server's
        // wait misses the 60 ms mock latency.
        const double clientWait = slow.starttransfer - slow.connect;
        const double serverWait =
            static_cast<double>(s.between(Phase::RequestBodyDone, Phase::ResponseFirstByte));
        constexpr double kClientSlack = test::kSanitized ? 80e6 : 30e6;
        QVERIFY2(serverWait >= 60e6 && serverWait <= clientWait + kJitter &&
                     clientWait - serverWait < kClientSlack,
                 qPrintable(QString("server %1 client %2").arg(serverWait).arg(clientWait)));
        QVERIFY(static_cast<double>(f.between(Phase::RequestHeaders, Phase::ResponseDone)) <=
                fast.total + kJitter);
    }

    void keepAliveAndPipelining() {
        test::RawClient c(port_);
        QVERIFY(c.ok());
        engine_.flushCapture();
        auto before = engine_.recentExchanges(0, 100000);
        const std::uint64_t since = before.empty() ? 0 : before.back().id;
        for (int i = 0; i < 3; ++i)
            QCOMPARE(c.exchange("GET /api/" + std::to_string(i) + " HTTP/1.1\r\nHost: localhost\r\n\r\n"),
                     201);
        auto got = waitFor(since, 3);
        QCOMPARE(got.size(), std::size_t(3));
        for (std::uint32_t i = 0; i < 3; ++i) {
            QCOMPARE(got[i].streamId, i + 1); // the request's index on its connection
            QCOMPARE(got[i].connectionId, got[0].connectionId);
            QCOMPARE(got[i].responseBody, "id=" + std::to_string(i));
            QCOMPARE(got[i].route, std::string("/api/:id"));
            QCOMPARE(got[i].at(Phase::Accepted), got[0].at(Phase::Accepted));
            QVERIFY(ordered(got[i]));
        }
        QVERIFY(engine_.exchange(got[1].id));
        QCOMPARE(engine_.exchange(got[1].id)->target, std::string("/api/1"));
        QVERIFY(!engine_.exchange(got.back().id + 1000));
    }

    void http2Stream() {
        engine_.flushCapture();
        auto before = engine_.recentExchanges(0, 100000);
        const std::uint64_t since = before.empty() ? 0 : before.back().id;
        auto r = test::runProcess("curl", {"-s", "--http2-prior-knowledge", "-d", "abc=1", "-i",
                                           QString("http://127.0.0.1:%1/api/h2").arg(port_)});
        QVERIFY(r.out.contains("id=h2"));
        QVERIFY(r.out.toLower().contains("server-timing: "));
        auto got = waitFor(since, 1);
        QCOMPARE(got.size(), std::size_t(1));
        const auto& e = got[0];
        QCOMPARE(e.protocol, capture::Protocol::Http2);
        QCOMPARE(e.httpVersion, std::uint8_t(20));
        QVERIFY(e.streamId % 2 == 1);
        QCOMPARE(e.method, std::string("POST"));
        QCOMPARE(e.requestBody, std::string("abc=1"));
        QCOMPARE(e.status, 201);
        QCOMPARE(e.responseHeader(":status"), std::string_view("201"));
        QCOMPARE(e.responseBodySize, std::uint64_t(5));
        QVERIFY(ordered(e));
        QVERIFY(e.at(Phase::ResponseDone) > 0);
    }

    // An HTTP/2 stream answered after a 60 ms mock latency: its first byte is stamped when the
    // response goes out, after the wait (not when the route ran); a GET whose HEADERS frame ends
    // the stream has its body done at the same instant as its head; the wall-clock start is now.
    void http2MockLatencyTimeline() {
        engine_.flushCapture();
        auto before = engine_.recentExchanges(0, 100000);
        const std::uint64_t since = before.empty() ? 0 : before.back().id;
        auto wallNow = [] {
            return std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                .count();
        };
        const std::int64_t wallBefore = wallNow();
        auto r = test::runProcess(
            "curl", {"-s", "--http2-prior-knowledge", QString("http://127.0.0.1:%1/slow").arg(port_)});
        QVERIFY(r.out.contains("late"));
        auto got = waitFor(since, 1);
        QCOMPARE(got.size(), std::size_t(1));
        const auto& e = got[0];
        QCOMPARE(e.protocol, capture::Protocol::Http2);
        QVERIFY(ordered(e));
        QCOMPARE(e.at(Phase::RequestBodyDone), e.at(Phase::RequestHeaders));
        const std::int64_t wait = e.between(Phase::RouteMatched, Phase::ResponseFirstByte);
        QVERIFY2(wait >= 60'000'000, qPrintable(QString::number(wait)));
        QVERIFY2(e.startedUnixNs >= wallBefore - 1'000'000 && e.startedUnixNs <= wallNow(),
                 qPrintable(QString("%1 not in [%2, now]").arg(e.startedUnixNs).arg(wallBefore)));
    }

    void statsCountEverything() {
        test::RawClient c(port_);
        for (int i = 0; i < 20; ++i)
            QCOMPARE(c.exchange("GET /boom HTTP/1.1\r\nHost: localhost\r\n\r\n"), 503);
        engine_.flushCapture();
        auto st = engine_.stats();
        const auto counters = engine_.counters();
        QCOMPARE(st.overall.count, counters.requests);
        QCOMPARE(st.overall.histogram.count(), counters.requests);
        QVERIFY(st.overall.errors >= 20);
        bool found = false;
        std::uint64_t sumRoutes = 0;
        for (const auto& g : st.routes) {
            sumRoutes += g.count;
            if (g.route == "/boom") {
                found = true;
                QCOMPARE(g.count, std::uint64_t(20));
                QCOMPARE(g.errors, std::uint64_t(20));
                QCOMPARE(g.vhost, std::string("localhost"));
            }
        }
        QVERIFY(found);
        QCOMPARE(sumRoutes, st.overall.count);
        QCOMPARE(st.vhosts.size(), std::size_t(1));
        QCOMPARE(st.vhosts[0].count, st.overall.count);
        // The 1 s series catches up within two ticks.
        QTRY_VERIFY_WITH_TIMEOUT(!engine_.stats().overall.series.empty(), 3000);
        QTest::qWait(1100);
        // Each scope's series adds up to its count, and all of them end on the same second.
        const auto after = engine_.stats();
        auto check = [&](const stats::GroupStats& g) {
            std::uint64_t inSeries = 0, errors = 0;
            for (const auto& p : g.series) {
                inSeries += p.count;
                errors += p.errors;
                if (p.count) QVERIFY(p.p50 <= p.p90 && p.p90 <= p.p99 && p.p99 <= p.max);
            }
            QCOMPARE(inSeries, g.count);
            QCOMPARE(errors, g.errors);
            QVERIFY(!g.series.empty());
            QCOMPARE(g.series.back().unixSecond, after.overall.series.back().unixSecond);
        };
        check(after.overall);
        for (const auto& v : after.vhosts)
            check(v);
        for (const auto& g : after.routes)
            check(g);
        for (const auto& g : after.routes)
            if (g.route == "/boom") // every exchange of this route is a 503
                for (const auto& p : g.series)
                    QCOMPARE(p.errors, p.count);
    }

    void cleanupTestCase() { engine_.stop(); }
};

// TLS: the handshake is in the timeline, TLS version and ALPN in the record, and the HAR export
// gives the first exchange of the connection connect = ssl and the reused one -1 (case HAR-01).
class TestCaptureTls : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
private slots:
    void tlsTimelineAndHar() {
        auto gen = test::makeSelfSignedCert(dir_.filePath("c.pem"), dir_.filePath("k.pem"), "localhost",
                                            "DNS:localhost");
        QCOMPARE(gen.exitCode, 0);
        const std::string yaml =
            "workers: 1\nlisten: [{address: \"127.0.0.1:0\", tls: {cert: " +
            dir_.filePath("c.pem").toStdString() + ", key: " + dir_.filePath("k.pem").toStdString() +
            "}}]\ncapture: true\nvhosts:\n  - routes:\n      - path: /x\n        respond: {body: tls}\n";
        auto r = config::loadConfigText(yaml, "tls.yaml", ".");
        QVERIFY2(r.ok(), r.ok() ? "" : r.errors.front().toString().c_str());
        engine::Engine engine;
        std::string error;
        QVERIFY2(engine.start(r.config, error), error.c_str());
        const QString url = QString("https://localhost:%1/x").arg(engine.endpoints().front().port);
        // Two requests on one HTTP/1.1 connection, then one h2 connection.
        auto h1 = test::runProcess("curl", {"-sk", "--http1.1", url, url});
        QCOMPARE(h1.out, QByteArray("tlstls"));
        auto h2 = test::runProcess("curl", {"-sk", "--http2", url});
        QCOMPARE(h2.out, QByteArray("tls"));
        std::vector<capture::Exchange> got;
        for (int i = 0; i < 200 && got.size() < 3; ++i) {
            engine.flushCapture();
            got = engine.recentExchanges(0, 10);
            QTest::qWait(10);
        }
        QCOMPARE(got.size(), std::size_t(3));
        for (const auto& e : got) {
            QVERIFY(e.tlsVersion.starts_with("TLSv1."));
            QCOMPARE(e.scheme, std::string("https"));
            QVERIFY(e.at(Phase::TlsDone) > e.at(Phase::Accepted));
            QVERIFY(e.at(Phase::RequestHeaders) >= e.at(Phase::TlsDone));
            QVERIFY(ordered(e));
        }
        QCOMPARE(got[0].alpn, std::string("http/1.1"));
        QCOMPARE(got[2].alpn, std::string("h2"));
        QCOMPARE(got[2].protocol, capture::Protocol::Http2);
        QCOMPARE(got[1].connectionId, got[0].connectionId);
        auto t0 = capture::harTimings(got[0]);
        auto t1 = capture::harTimings(got[1]);
        auto t2 = capture::harTimings(got[2]);
        QVERIFY(t0.ssl > 0 && t0.connect == t0.ssl);
        QCOMPARE(t1.connect, -1.0);
        QCOMPARE(t1.ssl, -1.0);
        QVERIFY(t2.ssl > 0); // stream 1 of a new connection
        engine.stop();
    }
};

// A second engine: small rings and a pipelined flood; every exchange is either recorded or
// counted as dropped, and the statistics include them all.
class TestCaptureFlood : public QObject {
    Q_OBJECT
private slots:
    void dropsAreCounted() {
        auto r = config::loadConfigText(
            "workers: 1\nlisten: [\"127.0.0.1:0\"]\ncapture: {ring_records: 16, record_bytes: 2048}\n"
            "vhosts:\n  - routes:\n      - path: /\n        respond: {body: x}\n",
            "flood.yaml", ".");
        QVERIFY(r.ok());
        engine::Engine engine;
        std::string error;
        QVERIFY2(engine.start(r.config, error), error.c_str());
        const std::uint16_t port = engine.endpoints().front().port;
        // 20 connections × 500 pipelined requests, sent in one go each.
        std::string batch;
        for (int i = 0; i < 500; ++i)
            batch += "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
        std::vector<std::thread> clients;
        std::atomic<int> answered{0};
        for (int c = 0; c < 20; ++c)
            clients.emplace_back([&] {
                auto reply = test::rawExchange(port, QByteArray::fromStdString(batch), 1000);
                answered += test::statusCodes(reply.bytes).count(200);
            });
        for (auto& t : clients)
            t.join();
        QCOMPARE(answered.load(), 10000);
        engine.stop();
        const std::uint64_t captured = engine.capturedRecords();
        const std::uint64_t dropped = engine.droppedRecords();
        QCOMPARE(captured + dropped, std::uint64_t(10000));
        QVERIFY2(dropped > 0, "a 16-slot ring must overflow under this flood");
        QCOMPARE(engine.stats().overall.count, std::uint64_t(10000));
        QVERIFY(engine.recentExchanges(0, 100000).size() == captured);
    }

    // The session file backs the in-memory window: a record that left the window (max_records 20)
    // is still read back whole by id; past capture.store_max_bytes the oldest records leave the
    // file (and then exchange() has nothing for them), and recentExchanges() walks file and window
    // without a gap.
    void sessionFileBacksTheWindow() {
        QTemporaryDir dir_;
        const std::string file = dir_.filePath("backing.sqlite").toStdString();
        const std::string body(4000, 'b');
        auto r = config::loadConfigText(
            "workers: 1\nlisten: [\"127.0.0.1:0\"]\ncapture: {max_records: 20, store: " + file +
                ", store_max_bytes: 1MiB}\nvhosts:\n  - routes:\n      - "
                "path: /\n        respond: {body: " +
                body + "}\n",
            "backing.yaml", ".");
        QVERIFY2(r.ok(), r.ok() ? "" : r.errors.front().toString().c_str());
        QCOMPARE(r.config->capture.storeMaxBytes, std::uint64_t(1) << 20);
        engine::Engine engine;
        std::string error;
        QVERIFY2(engine.start(r.config, error), error.c_str());
        const std::uint16_t port = engine.endpoints().front().port;
        // 600 records of about 4.4 KB: 2.6 MB, well past the 1 MiB cap. Sent in rounds so the
        // ring (1024 slots) never overflows and the collector evicts along the way.
        for (int round = 0; round < 6; ++round) {
            std::string batch;
            for (int i = 0; i < 100; ++i)
                batch += "GET /?n=" + std::to_string(round * 100 + i) + " HTTP/1.1\r\nHost: a\r\n\r\n";
            auto reply = test::rawExchange(port, QByteArray::fromStdString(batch), 1000);
            QCOMPARE(test::statusCodes(reply.bytes).count(200), 100);
            engine.flushCapture(); // eviction is checked about once a second: the 1 s idle above
        }
        engine.flushCapture();
        QCOMPARE(engine.droppedRecords(), std::uint64_t(0));
        const std::uint64_t newest = engine.capturedRecords();
        QCOMPARE(newest, std::uint64_t(600));
        const std::uint64_t oldest = engine.oldestCapturedId();
        QVERIFY2(oldest > 1 && oldest < newest - 20, qPrintable(QString::number(oldest)));
        QVERIFY(!engine.exchange(oldest - 1));
        // Past the window (its newest 20): whole, body included, from the file.
        for (std::uint64_t id : {oldest, (oldest + newest) / 2, newest - 25}) {
            auto e = engine.exchange(id);
            QVERIFY2(e, qPrintable(QString::number(id)));
            QCOMPARE(e->id, id);
            QCOMPARE(e->status, 200);
            QCOMPARE(e->responseBody, body);
            QCOMPARE(e->target, "/?n=" + std::to_string(id - 1));
        }
        // One walk from the oldest to the newest: file then window, consecutive ids.
        auto all = engine.recentExchanges(oldest - 1, 100000);
        QCOMPARE(all.size(), std::size_t(newest - oldest + 1));
        for (std::size_t i = 0; i < all.size(); ++i)
            QCOMPARE(all[i].id, oldest + i);
        QVERIFY(all.front().responseBody.empty()); // rows read back from the file: no bodies
        QCOMPARE(all.front().responseBodySize, std::uint64_t(body.size()));
        // The file keeps to its cap (eviction goes to about 90 % of it).
        std::string why;
        auto reader = capture::Store::openReadOnly(file, why);
        QVERIFY2(reader, why.c_str());
        QVERIFY2(reader->usedBytes() <= (std::uint64_t(1) << 20) + 128 * 1024,
                 qPrintable(QString::number(reader->usedBytes())));
        QCOMPARE(reader->minId(), oldest);
        // Save capture: a consistent copy that opens as a session file with the same records.
        const std::string copy = dir_.filePath("saved.sqlite").toStdString();
        QVERIFY2(engine.saveCapture(copy, why), why.c_str());
        auto saved = capture::Store::open(copy, why);
        QVERIFY2(saved, why.c_str());
        QCOMPARE(saved->count(), newest - oldest + 1);
        QCOMPARE(saved->get(newest)->responseBody, body);
        QVERIFY(!engine.saveCapture(copy, why)); // it exists now: refused, not overwritten
        engine.stop();
    }

    void captureOffLeavesNoTrace() {
        auto r = config::loadConfigText("workers: 1\nlisten: [\"127.0.0.1:0\"]\nvhosts:\n  - routes:\n      "
                                        "- path: /\n        respond: {body: x}\n",
                                        "off.yaml", ".");
        QVERIFY(r.ok());
        engine::Engine engine;
        std::string error;
        QVERIFY(engine.start(r.config, error));
        test::RawClient c(engine.endpoints().front().port);
        auto reply =
            test::rawExchange(engine.endpoints().front().port, "GET / HTTP/1.1\r\nHost: a\r\n\r\n", 300);
        QVERIFY(!reply.bytes.contains("Server-Timing"));
        engine.flushCapture();
        QVERIFY(engine.recentExchanges(0, 10).empty());
        QCOMPARE(engine.stats().overall.count, std::uint64_t(0));
        QCOMPARE(engine.droppedRecords(), std::uint64_t(0));
        engine.stop();
    }
};

int main(int argc, char** argv) {
    int rc = 0;
    {
        TestCaptureEngine t;
        rc |= QTest::qExec(&t, argc, argv);
    }
    {
        TestCaptureTls t;
        rc |= QTest::qExec(&t, argc, argv);
    }
    {
        TestCaptureFlood t;
        rc |= QTest::qExec(&t, argc, argv);
    }
    return rc;
}
#include "tst_capture_engine.moc"
