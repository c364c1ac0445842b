// HTTP/1.1 responses whose end is the upstream's close, seen by the two clients that share
// http1::ResponseParser with asynchronous reads: the reverse proxy and the load generator. A
// scripted upstream answers and closes with its FIN in the same segment as the last bytes
// (TCP_CORK, then shutdown), the case where a socket marked drained never wakes again. Also: a
// transfer coding other than chunked is a 502 through the proxy (the client would get coded bytes
// unlabelled), the Trailer field of an HTTP/1.1 upstream is not forwarded (its trailers are not),
// and `Connection: close` responses end a load-test connection without counting errors.
#include "raw_client.h"
#include "test_support.h"

#include <portico/engine/engine.h>
#include <portico/load/runner.h>
#include <portico/validate/load.h>

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <map>
#include <string>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace portico;

namespace {

// One scripted answer per path: the bytes to send, then close (with the FIN in the same segment).
class ScriptedUpstream {
public:
    explicit ScriptedUpstream(std::map<std::string, std::string> answers) : answers_(std::move(answers)) {
        fd_ = test::listenLoopback(port_);
        thread_ = std::thread([this] { run(); });
    }
    ~ScriptedUpstream() {
        stop_ = true;
        ::shutdown(fd_, SHUT_RDWR);
        thread_.join();
        ::close(fd_);
    }
    std::uint16_t port() const { return port_; }
    int requests() const { return requests_; }

private:
    void run() {
        while (!stop_) {
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, 100) <= 0) continue;
            const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (c < 0) continue;
            std::string in;
            char buf[4096];
            while (in.find("\r\n\r\n") == std::string::npos) {
                pollfd q{c, POLLIN, 0};
                if (::poll(&q, 1, 2000) <= 0) break;
                const auto n = ::recv(c, buf, sizeof buf, 0);
                if (n <= 0) break;
                in.append(buf, static_cast<std::size_t>(n));
            }
            if (in.find("\r\n\r\n") == std::string::npos) { // a probe or a client that went away
                ::close(c);
                continue;
            }
            const auto sp = in.find(' ');
            const std::string path = in.substr(sp + 1, in.find(' ', sp + 1) - sp - 1);
            ++requests_;
            const auto it = answers_.find(path);
            const std::string out =
                it != answers_.end() ? it->second : "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
            const int one = 1, zero = 0;
            ::setsockopt(c, IPPROTO_TCP, TCP_CORK, &one, sizeof one);
            ::send(c, out.data(), out.size(), MSG_NOSIGNAL);
            ::shutdown(c, SHUT_WR); // the FIN joins the corked data
            ::setsockopt(c, IPPROTO_TCP, TCP_CORK, &zero, sizeof zero);
            // Wait for the other side's close before closing (no reset for unread bytes).
            pollfd q{c, POLLIN, 0};
            while (::poll(&q, 1, 2000) > 0 && ::recv(c, buf, sizeof buf, 0) > 0) {
            }
            ::close(c);
        }
    }

    std::map<std::string, std::string> answers_;
    int fd_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stop_{false};
    std::atomic<int> requests_{0};
    std::thread thread_;
};

const std::map<std::string, std::string> kAnswers = {
    {"/close", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nclose-delimited body\n"},
    {"/http10", "HTTP/1.0 200 OK\r\n\r\nold server\n"},
    {"/conn-close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 6\r\n\r\nclosed"},
    {"/interim-then-close", "HTTP/1.1 100 Continue\r\n\r\n"},
    {"/gzip-chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"},
    {"/trailer", "HTTP/1.1 200 OK\r\nTrailer: X-Sum\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "2\r\nok\r\n0\r\nX-Sum: 1\r\n\r\n"},
};

} // namespace

class TestUpstreamFraming : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    ScriptedUpstream upstream_{kAnswers};
    engine::Engine engine_;
    std::uint16_t port_ = 0;

    static int statusOf(const QByteArray& reply) { return reply.mid(9, 3).toInt(); }

private slots:
    void initTestCase() {
        QVERIFY(upstream_.port());
        const std::string yaml =
            "listen: ['127.0.0.1:0']\nworkers: 1\nvhosts:\n  - default: true\n    routes:\n"
            "      - path: /*\n        proxy: {upstream: 'http://127.0.0.1:" +
            std::to_string(upstream_.port()) + "', response_timeout: 5s}\n";
        auto r = config::loadConfigText(yaml, "t.yaml", dir_.path().toStdString());
        QVERIFY(r.ok());
        std::string error;
        QVERIFY2(engine_.start(r.config, error), error.c_str());
        port_ = engine_.endpoints().front().port;
    }

    // The body that ends at the upstream's close reaches the client whole and at once, every time
    // (before: the proxy waited for an edge that never came, and aborted after 60 s).
    void closeDelimitedBodiesEndAtOnce() {
        for (const char* path : {"/close", "/http10"}) {
            for (int i = 0; i < 10; ++i) {
                QElapsedTimer t;
                t.start();
                auto reply = test::rawExchange(
                    port_, QByteArray("GET ") + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                    3000);
                QVERIFY2(statusOf(reply.bytes) == 200, reply.bytes.constData());
                QVERIFY2(reply.bytes.endsWith("0\r\n\r\n"), (path + (": " + reply.bytes)).constData());
                QVERIFY2(t.elapsed() < 2500, qPrintable(QString("%1: %2 ms").arg(path).arg(t.elapsed())));
            }
        }
        // An upstream that closes after an interim response: 502 at once, not a timeout.
        QElapsedTimer t;
        t.start();
        auto reply = test::rawExchange(
            port_, "GET /interim-then-close HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 3000);
        QVERIFY2(statusOf(reply.bytes) == 502, reply.bytes.constData());
        QVERIFY2(t.elapsed() < 2500, qPrintable(QString("%1 ms").arg(t.elapsed())));
    }

    void otherTransferCodingsAre502() {
        auto reply = test::rawExchange(port_, "GET /gzip-chunked HTTP/1.1\r\nHost: x\r\n\r\n");
        QVERIFY2(statusOf(reply.bytes) == 502, reply.bytes.constData());
        QVERIFY2(reply.bytes.contains("transfer coding"), reply.bytes.constData());
    }

    void trailerFieldNotForwarded() {
        auto reply = test::rawExchange(port_, "GET /trailer HTTP/1.1\r\nHost: x\r\n\r\n");
        QVERIFY2(statusOf(reply.bytes) == 200, reply.bytes.constData());
        QVERIFY2(!reply.bytes.toLower().contains("\r\ntrailer:"), reply.bytes.constData());
        QVERIFY2(reply.bytes.contains("ok"), reply.bytes.constData());
    }

    // The load generator on close-delimited and "Connection: close" responses: every request it
    // counts as completed reached the upstream, and none fails (before: timeouts on /close, and
    // every Connection: close response also counted a reset).
    void loadGeneratorEndsWithTheClose() {
        for (const char* path : {"/close", "/http10", "/conn-close"}) {
            load::Options o;
            load::RequestSpec spec;
            spec.url = "http://127.0.0.1:" + std::to_string(upstream_.port()) + path;
            o.requests.push_back(spec);
            o.connections = 2;
            o.count = 40;
            o.timeout = std::chrono::seconds(2);
            const int before = upstream_.requests();
            const auto r = load::run(o);
            QVERIFY2(r.error.empty(), r.error.c_str());
            QVERIFY2(r.requests.completed == 40 && r.requests.failed == 0,
                     qPrintable(QString("%1: %2 completed, %3 failed (%4 reset, %5 timeout)")
                                    .arg(path)
                                    .arg(r.requests.completed)
                                    .arg(r.requests.failed)
                                    .arg(r.errors.reset)
                                    .arg(r.errors.timeout)));
            QCOMPARE(upstream_.requests() - before, 40);
        }
    }
};

QTEST_GUILESS_MAIN(TestUpstreamFraming)
#include "tst_upstream_framing.moc"
