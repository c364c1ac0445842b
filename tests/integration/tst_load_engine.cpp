// The load generator against real servers on loopback: latency of a fixed injected delay, coordinated
// omission (open vs closed model across a server stall), request accounting against the server's
// own count (LDT-01), clear setup errors, and the `portico bench` command line with its JSON.
#include "test_support.h"

#include <portico/load/runner.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

using namespace portico;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

void writeFile(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(bytes);
}

// A portico config with a 20 ms route, a 500 ms route and a fast one, on an ephemeral port.
QByteArray latencyConfig() {
    return "listen: [\"127.0.0.1:0\"]\n"
           "vhosts:\n"
           "  - routes:\n"
           "      - path: /delay20\n"
           "        respond: {body: twenty, latency: 20ms}\n"
           "      - path: /slow\n"
           "        respond: {body: slow, latency: 500ms}\n"
           "      - path: /fast\n"
           "        respond: {body: fast}\n"
           "      - path: /drop\n"
           "        respond: {body: never, drop_rate: 1}\n";
}

// "stopped after N request(s)" from a terminated portico's output; -1 if absent.
qint64 serverCount(const QByteArray& output) {
    auto m =
        QRegularExpression(QStringLiteral("stopped after (\\d+) request")).match(QString::fromUtf8(output));
    return m.hasMatch() ? m.captured(1).toLongLong() : -1;
}

load::Options options(const QString& url) {
    load::Options o;
    load::RequestSpec r;
    r.url = url.toStdString();
    o.requests.push_back(r);
    return o;
}

bool addsUp(const load::RequestCounts& c) { return c.started == c.completed + c.failed + c.cancelled; }

// tests/support/h2_load_peer.py on loopback for one test (port 0 if it did not start), stopped
// when it goes out of scope; options() aims an HTTP/2 run at one of its paths.
struct H2Peer {
    QTemporaryDir tmp;
    QProcess py;
    int port = test::startSupportScript(py, "h2_load_peer.py", tmp.filePath("port"));
    ~H2Peer() {
        py.kill();
        py.waitForFinished();
    }
    load::Options options(const char* path) const {
        auto o = ::options(QStringLiteral("http://127.0.0.1:%1%2").arg(port).arg(path));
        o.protocol = load::Protocol::Http2;
        return o;
    }
};

// A tiny HTTP/1.1 server on its own thread that answers every request head with a canned 200 and can
// be told to stall: requests that arrive while it stalls are answered when the stall ends. Counts
// the request heads it received.
class StallServer {
public:
    StallServer() : acceptor_(io_, tcp::endpoint(asio::ip::address_v4::loopback(), 0)) {
        accept();
        thread_ = std::thread([this] { io_.run(); });
    }
    ~StallServer() {
        io_.stop();
        thread_.join();
    }
    std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
    std::uint64_t requests() const { return requests_.load(); }
    void stall(std::chrono::milliseconds d) {
        stallUntil_.store((std::chrono::steady_clock::now() + d).time_since_epoch().count());
    }

private:
    struct Session : std::enable_shared_from_this<Session> {
        Session(StallServer& s, tcp::socket sock) : server(s), socket(std::move(sock)), timer(s.io_) {}
        StallServer& server;
        tcp::socket socket;
        asio::steady_timer timer;
        char buf[16384];
        int matched = 0; // progress through "\r\n\r\n" across reads
        std::string out;

        void read() {
            socket.async_read_some(asio::buffer(buf), [self = shared_from_this()](auto ec, std::size_t n) {
                if (ec) return;
                int heads = 0;
                for (std::size_t i = 0; i < n; ++i) {
                    const char want = (self->matched % 2 == 0) ? '\r' : '\n';
                    if (self->buf[i] == want) {
                        if (++self->matched == 4) {
                            ++heads;
                            self->matched = 0;
                        }
                    } else {
                        self->matched = self->buf[i] == '\r' ? 1 : 0;
                    }
                }
                self->server.requests_ += static_cast<std::uint64_t>(heads);
                self->answer(heads);
            });
        }
        void answer(int heads) {
            out.clear();
            for (int i = 0; i < heads; ++i)
                out += "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
            const auto until = std::chrono::steady_clock::time_point(
                std::chrono::steady_clock::duration(server.stallUntil_.load()));
            if (std::chrono::steady_clock::now() < until) {
                timer.expires_at(until);
                timer.async_wait([self = shared_from_this()](auto) { self->write(); });
            } else {
                write();
            }
        }
        void write() {
            if (out.empty()) return read();
            asio::async_write(socket, asio::buffer(out), [self = shared_from_this()](auto ec, std::size_t) {
                if (!ec) self->read();
            });
        }
    };

    void accept() {
        acceptor_.async_accept([this](auto ec, tcp::socket s) {
            if (ec) return;
            std::make_shared<Session>(*this, std::move(s))->read();
            accept();
        });
    }

    asio::io_context io_;
    tcp::acceptor acceptor_;
    std::thread thread_;
    std::atomic<std::uint64_t> requests_{0};
    std::atomic<std::int64_t> stallUntil_{0};
};

} // namespace

class TestLoadEngine : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;

    // Starts portico with latencyConfig(); QVERIFY-fails the caller on error.
    std::unique_ptr<test::ServerProcess> startPortico() {
        writeFile(dir_.filePath("portico.yaml"), latencyConfig());
        auto s = std::make_unique<test::ServerProcess>(
            QStringList{"--config", dir_.filePath("portico.yaml"), "--no-reload"});
        if (!s->waitReady()) {
            qWarning("%s", s->output().constData());
            return nullptr;
        }
        return s;
    }

private slots:
    // `portico bench` saves runs in the history: keep them in a throw-away data dir.
    void initTestCase() { qputenv("PORTICO_DATA_DIR", dir_.filePath("data").toUtf8()); }

    // A route with a fixed 20 ms delay: the measured median is within 5 % of it, and every request the
    // generator started reached the server (its own count at SIGTERM).
    void fixedDelayMedian() {
        auto server = startPortico();
        QVERIFY(server);
        auto o = options(server->baseUrl() + "/delay20");
        o.connections = 4;
        o.duration = 1500ms;
        o.warmup = 200ms;
        auto r = load::run(o);
        QVERIFY2(r.ok(), r.error.c_str());
        QVERIFY(r.requests.completed >= 20);
        const double p50 = static_cast<double>(r.latency->valueAtPercentile(50));
        QVERIFY2(std::abs(p50 - 20e6) <= 0.05 * 20e6, qPrintable(QStringLiteral("p50 %1 ns").arg(p50)));
        QCOMPARE(r.statuses.at(200), r.requests.completed);
        QVERIFY(addsUp(r.requests) && addsUp(r.warmup));
        QCOMPARE(r.requests.failed + r.requests.cancelled, 0u);
        QVERIFY(r.warmup.started > 0);
        QCOMPARE(server->terminate(), 0);
        QCOMPARE(serverCount(server->output()), static_cast<qint64>(r.requests.started + r.warmup.started));
        // The time series covers the measured window and sums to the completed requests.
        std::uint64_t sum = 0;
        for (auto n : r.perSlot)
            sum += n;
        QCOMPARE(sum, r.requests.completed);
        QVERIFY(r.perSlot.size() >= 15 && r.perSlot.size() <= 20);
    }

    // Transfer/sec and "X read" count the measured window only: a warm-up as long as the run used
    // to double them. Every response here has the same size, so the measured bytes are the
    // measured responses' bytes (give or take the few in flight at the boundary).
    void warmupBytesNotCounted() {
        auto server = startPortico();
        QVERIFY(server);
        auto o = options(server->baseUrl() + "/delay20");
        o.connections = 2;
        o.duration = 600ms;
        o.warmup = 600ms;
        auto r = load::run(o);
        QVERIFY2(r.ok(), r.error.c_str());
        const std::uint64_t all = r.requests.completed + r.warmup.completed;
        QVERIFY(r.warmup.completed >= 20 && r.requests.completed >= 20);
        const double perResponse = static_cast<double>(r.bytesRead) / static_cast<double>(all);
        const double expected = perResponse * static_cast<double>(r.requests.completed);
        QVERIFY2(
            std::abs(static_cast<double>(r.measuredBytesRead) - expected) <= perResponse * o.connections,
            qPrintable(
                QStringLiteral("measured %1 bytes, expected %2").arg(r.measuredBytesRead).arg(expected)));
        QVERIFY(r.measuredBytesWritten < r.bytesWritten);
        // Sizes counted in 1024s say so (KiB, MiB), as the docs' sample output does.
        const std::string text = load::summaryText(r);
        static const QRegularExpression sizes(R"(, \d+\.\d\d(KiB|MiB) read, \d+(\.\d\d)?(B|KiB) written)");
        QVERIFY2(sizes.match(QString::fromStdString(text)).hasMatch(), text.c_str());
        QVERIFY2(QString::fromStdString(text).contains(
                     QRegularExpression(R"(Transfer/sec: +\d+\.\d\d(KiB|MiB)\n)")),
                 text.c_str());
        QCOMPARE(server->terminate(), 0);
    }

    // LDT-01: a timed run against a 500 ms handler stops with requests in flight. With the default
    // grace they complete; with a short one they are cancelled. Either way nothing vanishes and the
    // server saw exactly the requests started.
    void ldt01InFlightAtStop() {
        for (auto grace : {5000ms, 100ms}) {
            auto server = startPortico();
            QVERIFY(server);
            auto o = options(server->baseUrl() + "/slow");
            o.connections = 10;
            o.duration = 1250ms; // stops halfway through the third round of 500 ms requests
            o.stopGrace = grace;
            auto r = load::run(o);
            QVERIFY2(r.ok(), r.error.c_str());
            QVERIFY(addsUp(r.requests));
            QCOMPARE(r.requests.started, 30u);
            if (grace > 1s) {
                QCOMPARE(r.requests.completed, 30u);
                QCOMPARE(r.latency->count(), 30u);
            } else {
                QCOMPARE(r.requests.completed, 20u);
                QCOMPARE(r.requests.cancelled, 10u);
                QCOMPARE(r.latency->count(), 20u); // percentiles over completed requests only
            }
            QCOMPARE(server->terminate(), 0);
            QCOMPARE(serverCount(server->output()), static_cast<qint64>(r.requests.started));
        }
    }

    // -n: exactly that many measured requests, all answered, the same number counted by the server.
    void countBound() {
        auto server = startPortico();
        QVERIFY(server);
        auto o = options(server->baseUrl() + "/fast");
        o.connections = 3;
        o.threads = 2;
        o.pipeline = 4;
        o.count = 2000;
        auto r = load::run(o);
        QVERIFY2(r.ok(), r.error.c_str());
        QCOMPARE(r.requests.started, 2000u);
        QCOMPARE(r.requests.completed, 2000u);
        QCOMPARE(r.statuses.at(200), 2000u);
        QCOMPARE(server->terminate(), 0);
        QCOMPARE(serverCount(server->output()), 2000);
    }

    // The drill-down sample's first byte: a response whose HEADERS come at once and whose body
    // 300 ms later (tests/support/h2_load_peer.py /slowbody) has firstByteNs near sentNs and at
    // least 250 ms before doneNs; the JSON carries it.
    void h2SampleFirstByte() {
        H2Peer peer;
        QVERIFY2(peer.port, peer.py.readAllStandardError().constData());
        auto o = peer.options("/slowbody");
        o.connections = 1;
        o.count = 3;
        auto r = load::run(o);
        QVERIFY2(r.ok(), r.error.c_str());
        QCOMPARE(r.requests.completed, 3u);
        QVERIFY(!r.samples.empty());
        for (const auto& x : r.samples) {
            QVERIFY2(x.firstByteNs >= x.sentNs && x.firstByteNs < x.sentNs + 200'000'000,
                     qPrintable(QString("sent %1 first byte %2").arg(x.sentNs).arg(x.firstByteNs)));
            QVERIFY2(x.doneNs - x.firstByteNs >= 250'000'000,
                     qPrintable(QString("first byte %1 done %2").arg(x.firstByteNs).arg(x.doneNs)));
        }
    }

    // Requests the server did not process (above GOAWAY's last stream id, RFC 9113 §6.8) are sent
    // again on the next connection, not counted as failures: a server that processes only the
    // first stream of each connection (h2_load_peer.py /refuse), two streams per connection.
    void h2UnprocessedAreSentAgain() {
        H2Peer peer;
        QVERIFY2(peer.port, peer.py.readAllStandardError().constData());
        auto o = peer.options("/refuse");
        o.streams = 2;
        o.connections = 1;
        o.count = 8;
        auto r = load::run(o);
        QVERIFY2(r.ok(), r.error.c_str());
        const QString counts =
            QString("started %1 completed %2 failed %3 (reset %4, protocol %5) cancelled %6")
                .arg(r.requests.started)
                .arg(r.requests.completed)
                .arg(r.requests.failed)
                .arg(r.errors.reset)
                .arg(r.errors.protocol)
                .arg(r.requests.cancelled);
        QVERIFY2(r.requests.started == 8 && r.requests.completed == 8, qPrintable(counts));
        QCOMPARE(r.statuses.at(200), 8u);
    }

    // HTTP/2 against a server that sends GOAWAY and then answers the streams it got 50 ms later
    // (python3-h2, tests/support/h2_load_peer.py /goaway), as nginx does when keepalive_requests is
    // reached: meanwhile the generator must not open streams (they would fail); each connection
    // drains, closes and opens again, and every request completes.
    void h2GoawayReconnects() {
        H2Peer peer;
        QVERIFY2(peer.port, peer.py.readAllStandardError().constData());
        auto o = peer.options("/goaway");
        o.streams = 2; // the peer's MAX_CONCURRENT_STREAMS
        o.connections = 2;
        o.count = 40;
        auto r = load::run(o);
        QVERIFY2(r.ok(), r.error.c_str());
        QCOMPARE(r.requests.started, 40u);
        QCOMPARE(r.requests.completed, 40u);
        QCOMPARE(r.requests.failed, 0u);
        QCOMPARE(r.statuses.at(200), 40u);
    }

    // A server that stops answering for one second mid-run. The open model's latency, counted from
    // intended send times, shows the stall at p99; the closed model's p99 does not (only the few
    // requests in flight during the stall waited), although its max proves the stall happened.
    void coordinatedOmission() {
        auto runWithStall = [](load::Options o, StallServer& server) {
            auto fut = std::async(std::launch::async, [o] { return load::run(o); });
            std::this_thread::sleep_for(1000ms);
            server.stall(1000ms);
            return fut.get();
        };
        {
            StallServer server;
            auto o = options(QStringLiteral("http://127.0.0.1:%1/").arg(server.port()));
            o.connections = 10;
            o.rate = 1000;
            o.duration = 3s;
            auto r = runWithStall(o, server);
            QVERIFY2(r.ok(), r.error.c_str());
            QVERIFY(addsUp(r.requests));
            QCOMPARE(r.requests.failed + r.requests.cancelled, 0u);
            QCOMPARE(server.requests(), r.requests.started);
            const auto p99 = r.latency->valueAtPercentile(99);
            const auto uncorrected = r.serviceTime->valueAtPercentile(99);
            QVERIFY2(p99 >= 500'000'000, qPrintable(QStringLiteral("open p99 %1 ns").arg(p99)));
            QVERIFY2(uncorrected < p99 / 2,
                     qPrintable(QStringLiteral("uncorrected p99 %1 ns vs %2").arg(uncorrected).arg(p99)));
        }
        {
            StallServer server;
            auto o = options(QStringLiteral("http://127.0.0.1:%1/").arg(server.port()));
            o.connections = 4;
            o.duration = 3s;
            auto r = runWithStall(o, server);
            QVERIFY2(r.ok(), r.error.c_str());
            QVERIFY(addsUp(r.requests));
            QCOMPARE(server.requests(), r.requests.started);
            QCOMPARE(r.requests.completed, r.requests.started);
            const auto p99 = r.latency->valueAtPercentile(99);
            QVERIFY2(r.requests.completed > 1000, "too few requests to judge p99");
            QVERIFY2(p99 < 100'000'000, qPrintable(QStringLiteral("closed p99 %1 ns").arg(p99)));
            QVERIFY2(r.latency->max() >= 800'000'000,
                     qPrintable(QStringLiteral("closed max %1 ns").arg(r.latency->max())));
        }
    }

    void clearErrors() {
        // Refused: a port that was just free.
        std::uint16_t freePort = 0;
        {
            asio::io_context io;
            tcp::acceptor a(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
            freePort = a.local_endpoint().port();
        }
        auto o = options(QStringLiteral("http://127.0.0.1:%1/").arg(freePort));
        o.duration = 1s;
        auto r = load::run(o);
        QVERIFY(!r.ok());
        QVERIFY2(r.error.find("cannot connect to 127.0.0.1:") != std::string::npos &&
                     r.error.find("refused") != std::string::npos,
                 r.error.c_str());

        auto check = [](const char* url, const char* expect) {
            auto opts = options(QString::fromUtf8(url));
            opts.duration = 1s;
            auto res = load::run(opts);
            QVERIFY2(!res.ok() && res.error.find(expect) != std::string::npos,
                     (std::string(url) + " -> " + res.error).c_str());
        };
        check("ftp://127.0.0.1/", "scheme must be http or https");
        check("http:///x", "no host");
        check("http://127.0.0.1:99999/", "port must be");
        check("127.0.0.1:8080", "expected http://");
        check("http://127.0.0.1/a b", "whitespace");
        check("http://no-such-host.invalid/", "cannot resolve 'no-such-host.invalid'");
        check("http://10.0.0.1/", "not a loopback address");
        check("http://[2001:db8::1]:80/", "not a loopback address");

        auto unbounded = options(QStringLiteral("http://127.0.0.1:%1/").arg(freePort));
        auto u = load::run(unbounded);
        QVERIFY2(!u.ok() && u.error.find("bounded") != std::string::npos, u.error.c_str());
    }

    // Open model: arrivals that found no free connection are counted (wrk2's way) and said, instead
    // of percentiles of only what was sent; a rate that is met misses none.
    void openModelSaysWhenTheRateIsNotMet() {
        auto server = startPortico();
        QVERIFY(server);
        auto slow = options(server->baseUrl() + "/slow"); // 500 ms per response
        slow.rate = 50;
        slow.connections = 1;
        slow.duration = 1s;
        auto r = load::run(slow);
        QVERIFY2(r.ok(), r.error.c_str());
        QVERIFY2(r.missedArrivals >= 40, qPrintable(QString::number(r.missedArrivals)));
        QCOMPARE(r.latency->count(), r.requests.completed + r.missedArrivals);
        // The corrected latency includes the missed arrivals' waits: far above the service time.
        QVERIFY(r.latency->max() >= static_cast<std::uint64_t>(500'000'000));
        const std::string text = load::summaryText(r);
        QVERIFY2(text.find("Rate not met: sent " + std::to_string(r.requests.started) + " of " +
                           std::to_string(r.requests.started + r.missedArrivals)) != std::string::npos,
                 text.c_str());
        QVERIFY(load::toJson(r).find("\"missedArrivals\":" + std::to_string(r.missedArrivals)) !=
                std::string::npos);

        auto fast = options(server->baseUrl() + "/fast");
        fast.rate = 100;
        fast.connections = 4;
        fast.duration = 500ms;
        auto met = load::run(fast);
        QVERIFY2(met.ok(), met.error.c_str());
        QCOMPARE(met.missedArrivals, std::uint64_t(0));
        QVERIFY(load::summaryText(met).find("Rate not met") == std::string::npos);
        QCOMPARE(server->terminate(), 0);
    }

    // On a terminal (a pseudo-terminal from `script`): the header at once, then a live line until the
    // summary; the header is not repeated. Not on a pipe (benchCommandLine checks that).
    void benchLiveLineOnATerminal() {
        auto server = startPortico();
        QVERIFY(server);
        const QString command = QString("'%1' bench %2/fast -d 1500ms -c 2 --no-save")
                                    .arg(test::porticoBinary(), server->baseUrl());
        auto r = test::runProcess("script", {"-q", "-e", "-c", command, "/dev/null"}, {}, 30000);
        QVERIFY2(r.exitCode == 0, (r.out + r.err).constData());
        QVERIFY2(r.out.contains(" req/s now  p50 "), r.out.constData());
        QCOMPARE(r.out.count("Running 1.50s test @"), 1);
        QVERIFY2(r.out.indexOf("Running 1.50s test @") < r.out.indexOf("req/s now"), r.out.constData());
        QVERIFY2(r.out.contains("Requests/sec:"), r.out.constData());
        QCOMPARE(server->terminate(), 0);
    }

    // What `portico bench` says when it cannot run, or runs and nothing completes.
    void benchCommandEdges() {
        auto server = startPortico();
        QVERIFY(server);
        // -d 0s is a usage error, not a silent 10 s run.
        auto zero =
            test::runProcess(test::porticoBinary(), {"bench", server->baseUrl() + "/fast", "-d", "0s"});
        QCOMPARE(zero.exitCode, 2);
        QVERIFY2(zero.err.contains("--duration '0s': must be more than 0"), zero.err.constData());
        // A run that cannot start still writes its JSON, with `error` (docs/load-results.md).
        const std::uint16_t dead = test::freePort();
        const QString json = dir_.filePath("failed.json");
        auto refused =
            test::runProcess(test::porticoBinary(), {"bench", QString("http://127.0.0.1:%1/").arg(dead), "-n",
                                                     "1", "--json", json, "--no-save"});
        QCOMPARE(refused.exitCode, 1);
        QFile f(json);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const auto doc = QJsonDocument::fromJson(f.readAll()).object();
        QVERIFY2(doc["error"].toString().contains("cannot connect to 127.0.0.1:"), f.fileName().toUtf8());
        // An unwritable --json path is said before the run (the dead target is never tried).
        auto unwritable = test::runProcess(test::porticoBinary(),
                                           {"bench", QString("http://127.0.0.1:%1/").arg(dead), "-n", "1",
                                            "--json", dir_.filePath("no/such/dir/r.json"), "--no-save"});
        QCOMPARE(unwritable.exitCode, 1);
        QVERIFY2(unwritable.err.contains("--json") && unwritable.err.contains("cannot write"),
                 unwritable.err.constData());
        QVERIFY2(!unwritable.err.contains("cannot connect"), unwritable.err.constData());
        // Every request failed: no latency table of zeros.
        auto dropped = test::runProcess(
            test::porticoBinary(), {"bench", server->baseUrl() + "/drop", "-c", "1", "-n", "5", "--no-save"});
        QVERIFY2(dropped.exitCode == 0, dropped.err.constData());
        QVERIFY2(dropped.out.contains("No measured request completed"), dropped.out.constData());
        QVERIFY2(!dropped.out.contains("Latency Distribution"), dropped.out.constData());
        QVERIFY2(dropped.out.contains("Errors:"), dropped.out.constData());
    }

    void benchCommandLine() {
        auto server = startPortico();
        QVERIFY(server);
        const QString json = dir_.filePath("result.json");
        auto r = test::runProcess(test::porticoBinary(),
                                  {"bench", server->baseUrl() + "/fast", "-c", "2", "-d", "500ms", "--warmup",
                                   "100ms", "-H", "X-Test: 1", "--json", json},
                                  {}, 30000);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        for (const char* s :
             {"Latency Distribution", "99.99%", "Requests/sec:", "started =", "Generator CPU"})
            QVERIFY2(r.out.contains(s), r.out.constData());
        QVERIFY2(!r.out.contains("req/s now"), r.out.constData()); // no live line on a pipe
        QFile f(json);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QJsonParseError pe;
        auto doc = QJsonDocument::fromJson(f.readAll(), &pe);
        QVERIFY2(pe.error == QJsonParseError::NoError, qPrintable(pe.errorString()));
        auto o = doc.object();
        QCOMPARE(o["schema"].toInt(), 1);
        QCOMPARE(o["options"].toObject()["model"].toString(), QStringLiteral("closed"));
        auto req = o["requests"].toObject();
        QVERIFY(req["started"].toInteger() > 0);
        QCOMPARE(req["started"].toInteger(),
                 req["completed"].toInteger() + req["failed"].toInteger() + req["cancelled"].toInteger());
        auto lat = o["latency"].toObject();
        QCOMPARE(lat["unit"].toString(), QStringLiteral("ns"));
        QCOMPARE(lat["count"].toInteger(), req["completed"].toInteger());
        for (const char* p : {"50", "75", "90", "99", "99.9", "99.99", "100"})
            QVERIFY2(lat["percentiles"].toObject().contains(p), p);
        QVERIFY(lat["buckets"].toArray().size() > 0);
        QCOMPARE(o["statuses"].toObject()["200"].toInteger(), req["completed"].toInteger());
        QVERIFY(o["series"].toObject()["completed"].toArray().size() >= 5);
        QVERIFY(o["bytes"].toObject()["read"].toInteger() > 0);
        QVERIFY(o["errors"].toObject().contains("protocol"));
        QVERIFY(o["cpu"].toObject().contains("userSeconds"));
        QVERIFY(o["requestsPerSecond"].toDouble() > 0);
        QVERIFY(o["measuredSeconds"].toDouble() >= 0.45);
        QCOMPARE(server->terminate(), 0);

        // Errors: not loopback → 1 with the reason; no URL or an unknown option → 2.
        auto remote = test::runProcess(test::porticoBinary(), {"bench", "http://10.0.0.1/", "-d", "1s"});
        QCOMPARE(remote.exitCode, 1);
        QVERIFY2(remote.err.contains("not a loopback address") && remote.err.contains("--allow-remote"),
                 remote.err.constData());
        QCOMPARE(test::runProcess(test::porticoBinary(), {"bench"}).exitCode, 2);
        auto noUnit = test::runProcess(test::porticoBinary(), {"bench", server->baseUrl(), "-d", "10"});
        QCOMPARE(noUnit.exitCode, 2);
        QVERIFY2(noUnit.err.contains("unit"), noUnit.err.constData());
    }
};

QTEST_GUILESS_MAIN(TestLoadEngine)
#include "tst_load_engine.moc"
