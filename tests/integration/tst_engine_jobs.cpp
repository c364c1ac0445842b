// The desktop app's client jobs (engine/jobs.h) against an in-process engine on 127.0.0.1 port 0:
// a resend and its comparison, a resend cancelled while it waits for the answer (the socket is
// closed: the listener reads end of stream), while it connects and before it starts; a load run
// cancelled mid-way (returns within its stop grace, marked stopped) and ones that reach their bound
// (not stopped, also when cancelled after it); a suite cancelled before it starts.
#include "raw_client.h"
#include "test_support.h"

#include <portico/engine/engine.h>
#include <portico/engine/jobs.h>
#include <portico/validate/load.h>

#include <QTemporaryDir>
#include <QtTest>

#include <cerrno>
#include <chrono>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace portico;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

qint64 msSince(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

// A listener on 127.0.0.1 that completes handshakes (the kernel does) but never answers: a resend
// to it connects, sends and then waits.
class SilentListener {
public:
    SilentListener() { fd_ = test::listenLoopback(port_, 8); }
    ~SilentListener() {
        if (fd_ >= 0) ::close(fd_);
    }
    std::uint16_t port() const { return port_; }
    /// The next connection in the accept queue within `ms`, or -1.
    int accept(int ms) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, ms) <= 0) return -1;
        return ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    }

private:
    int fd_ = -1;
    std::uint16_t port_ = 0;
};

// Reads `fd` until end of stream or `ms` of silence: what arrived and whether the peer closed.
std::pair<std::string, bool> drain(int fd, int ms) {
    std::string got;
    char buf[4096];
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, ms) <= 0) return {got, false};
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n == 0) return {got, true};
        if (n < 0) return {got, errno == ECONNRESET};
        got.append(buf, std::size_t(n));
    }
}

} // namespace

class TestEngineJobs : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    engine::Engine engine_;
    std::uint16_t port_ = 0;

    std::string base() const { return "http://127.0.0.1:" + std::to_string(port_); }

    capture::Exchange recorded(const std::string& target, int status, const std::string& body) const {
        capture::Exchange e;
        e.method = "GET";
        e.scheme = "http";
        e.authority = "127.0.0.1:" + std::to_string(port_);
        e.target = target;
        e.requestHeaders = {{"Host", e.authority}, {"Accept", "*/*"}};
        e.status = status;
        e.responseHeaders = {{"Content-Type", "text/plain"}};
        e.responseBody = body;
        e.responseBodySize = body.size();
        return e;
    }

    load::Options loadOptions(std::chrono::nanoseconds duration) const {
        load::Options o;
        load::RequestSpec spec;
        spec.url = base() + "/fast";
        o.requests = {spec};
        o.connections = 2;
        o.threads = 1;
        o.duration = duration;
        o.stopGrace = 1s;
        return o;
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        qputenv("PORTICO_DATA_DIR", dir_.filePath("data").toUtf8());
        const std::string yaml =
            "listen: [127.0.0.1:0]\n"
            "vhosts:\n  - names: [localhost, 127.0.0.1]\n    default: true\n    routes:\n"
            "      - path: /fast\n"
            "        respond: {body: fast, headers: {Content-Type: text/plain}}\n"
            "      - path: /slow\n"
            "        respond: {body: slow, latency: 600ms}\n"
            "      - path: /item/:id\n"
            "        respond: {status: 201, body: \"item {{param.id}}\", "
            "headers: {Content-Type: text/plain}}\n";
        auto r = config::loadConfigText(yaml, "jobs.yaml", dir_.path().toStdString());
        if (!r.ok()) qWarning() << r.errors.front().toString().c_str();
        QVERIFY(r.ok());
        std::string error;
        QVERIFY2(engine_.start(r.config, error), error.c_str());
        port_ = engine_.endpoints().front().port;
        QVERIFY(port_ != 0);
    }

    // One exchange: the answer, and its differences from the recorded one.
    void resendComparesTheAnswer() {
        capture::ReplayOptions o;
        o.baseUrl = base();
        o.timeout = 5s;
        const auto first = engine::resend(recorded("/item/7", 201, "item 7"), o);
        QVERIFY2(first.ok(), first.error.c_str());
        QCOMPARE(first.exchange.status, 201);
        QCOMPARE(first.exchange.responseBody, std::string("item 7"));
        // Sent again, the answer is the same (Date and the like are not compared).
        const capture::Exchange original = first.exchange;
        const auto same = engine::resend(original, o);
        QVERIFY2(same.ok(), same.error.c_str());
        QVERIFY2(same.differences.empty(),
                 same.differences.empty() ? "" : same.differences.front().what.c_str());
        // An edited target gives another answer: the body differs.
        o.target = "/item/8";
        engine::Cancel unused;
        const auto edited = engine::resend(original, o, &unused);
        QVERIFY2(edited.ok(), edited.error.c_str());
        QCOMPARE(edited.exchange.target, std::string("/item/8"));
        QCOMPARE(edited.exchange.responseBody, std::string("item 8"));
        QCOMPARE(edited.differences.size(), std::size_t(1));
        QCOMPARE(edited.differences.front().what, std::string("body"));
        QVERIFY(!unused.cancelled());
    }

    // Cancelled while waiting for an answer that never comes: it returns at once, says so, and
    // closes its socket (the listener's side reads the request, then end of stream).
    void resendCancelledWhileWaiting() {
        SilentListener silent;
        QVERIFY(silent.port());
        capture::ReplayOptions o;
        o.baseUrl = "http://127.0.0.1:" + std::to_string(silent.port());
        o.timeout = 20s;
        engine::Cancel cancel;
        capture::ReplayResult result;
        const auto start = Clock::now();
        std::thread worker([&] { result = engine::resend(recorded("/item/1", 201, "item 1"), o, &cancel); });
        const int conn = silent.accept(5000);
        QVERIFY(conn >= 0);
        // The request arrives; then nothing until the cancel.
        const auto [request, closedEarly] = drain(conn, 300);
        QVERIFY2(request.starts_with("GET /item/1 HTTP/1.1\r\n"), request.c_str());
        QVERIFY(!closedEarly);
        const auto cancelled = Clock::now();
        cancel.cancel();
        worker.join();
        const qint64 took = msSince(cancelled);
        QCOMPARE(result.error, std::string("cancelled"));
        QVERIFY2(took < 1000, qPrintable(QString::number(took)));
        QVERIFY(msSince(start) < 10000);
        const auto [rest, closed] = drain(conn, 2000);
        QVERIFY(rest.empty());
        QVERIFY2(closed, "the resend's socket was not closed");
        ::close(conn);
        QVERIFY(cancel.cancelled());
    }

    // Cancelled while connecting to an address whose SYN is dropped.
    void resendCancelledWhileConnecting() {
        test::StuckListener stuck;
        QVERIFY(stuck.port());
        capture::ReplayOptions o;
        o.baseUrl = "http://127.0.0.1:" + std::to_string(stuck.port());
        o.timeout = 20s;
        engine::Cancel cancel;
        capture::ReplayResult result;
        std::thread worker([&] { result = engine::resend(recorded("/item/1", 201, "item 1"), o, &cancel); });
        std::this_thread::sleep_for(300ms);
        const auto cancelled = Clock::now();
        cancel.cancel();
        worker.join();
        QCOMPARE(result.error, std::string("cancelled"));
        QVERIFY2(msSince(cancelled) < 1000, qPrintable(QString::number(msSince(cancelled))));
    }

    // A cancel before the start: nothing is sent (no connection reaches the listener).
    void resendCancelledBeforeStart() {
        SilentListener silent;
        QVERIFY(silent.port());
        capture::ReplayOptions o;
        o.baseUrl = "http://127.0.0.1:" + std::to_string(silent.port());
        engine::Cancel cancel;
        cancel.cancel();
        cancel.cancel(); // idempotent
        const auto result = engine::resend(recorded("/item/1", 201, "item 1"), o, &cancel);
        QCOMPARE(result.error, std::string("cancelled"));
        QCOMPARE(silent.accept(200), -1);
    }

    // A 30 s run cancelled after 400 ms: back within the stop grace, measured, marked stopped; the
    // live totals were fed.
    void loadRunCancelled() {
        engine::Cancel cancel;
        load::Live live;
        engine::LoadRun run;
        const auto o = loadOptions(30s);
        std::thread worker([&] { run = engine::runLoad(o, &cancel, &live); });
        std::this_thread::sleep_for(400ms);
        const auto cancelled = Clock::now();
        cancel.cancel();
        worker.join();
        const qint64 took = msSince(cancelled);
        QVERIFY2(run.result.ok(), run.result.error.c_str());
        QVERIFY2(took < 2500, qPrintable(QString::number(took))); // 10 ms poll + 1 s stop grace
        QVERIFY(run.stopped);
        QVERIFY(run.result.requests.completed > 0);
        QVERIFY(run.result.measured < 5s);
        const load::Live::Totals t = live.totals();
        QVERIFY(t.started);
        QVERIFY(t.completed > 0);
    }

    // Runs that are not stopped: one that reaches its bound, one with no cancel, one cancelled after
    // its bound, and one that could not start (an error, cancelled or not).
    void loadRunNotStopped() {
        engine::Cancel cancel;
        const engine::LoadRun bounded = engine::runLoad(loadOptions(300ms), &cancel);
        QVERIFY2(bounded.result.ok(), bounded.result.error.c_str());
        QVERIFY(!bounded.stopped);
        QVERIFY(bounded.result.requests.completed > 0);
        const engine::LoadRun plain = engine::runLoad(loadOptions(200ms));
        QVERIFY(plain.result.ok());
        QVERIFY(!plain.stopped);

        // Cancelled after the duration bound, while the last answers are still coming (600 ms each
        // for a 200 ms run): the run ended anyway, so it is not a stop.
        auto slow = loadOptions(200ms);
        slow.requests.front().url = base() + "/slow";
        engine::Cancel late;
        engine::LoadRun ended;
        std::thread worker([&] { ended = engine::runLoad(slow, &late); });
        std::this_thread::sleep_for(400ms);
        late.cancel();
        worker.join();
        QVERIFY2(ended.result.ok(), ended.result.error.c_str());
        QVERIFY(ended.result.measured >= slow.duration);
        QVERIFY(!ended.stopped);

        auto refused = loadOptions(200ms);
        refused.requests.front().url = "http://127.0.0.1:" + std::to_string(test::freePort()) + "/";
        engine::Cancel early;
        early.cancel();
        const engine::LoadRun failed = engine::runLoad(refused, &early);
        QVERIFY(!failed.result.ok());
        QVERIFY(!failed.stopped);
    }

    // A suite cancelled before it starts runs at most its first route, briefly, and skips the rest.
    void suiteCancelled() {
        auto o = loadOptions(10s);
        engine::Cancel cancel;
        cancel.cancel();
        std::size_t progressCalls = 0;
        const auto start = Clock::now();
        const load::SuiteResult suite = engine::runLoadSuite(
            base(), o, &cancel, [&](std::size_t, const load::SuiteRun&) { ++progressCalls; });
        QVERIFY2(msSince(start) < 5000, qPrintable(QString::number(msSince(start))));
        QVERIFY(suite.runs.size() < load::suiteRoutes().size());
        QCOMPARE(progressCalls, suite.runs.size());
    }

    void cleanupTestCase() { engine_.stop(); }
};

QTEST_GUILESS_MAIN(TestEngineJobs)
#include "tst_engine_jobs.moc"
