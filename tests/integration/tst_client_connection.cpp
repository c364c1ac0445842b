// client::Connection, the load generator's client (core/src/client/connection.h), driven directly:
// HTTP/1.1 pipelining against a scripted loopback server that answers byte for byte what each
// case needs (responses in send order, HEAD, chunked and close-delimited bodies, Connection: close
// with requests still in flight, malformed and cut responses, unsolicited bytes), and HTTP/2 with
// prior knowledge against Portico's own server (streams completing out of order, a reset stream,
// slots reused). Every case checks the exact sequence of handler calls.
#include "client/connection.h"
#include "raw_client.h"
#include "test_support.h"

#include <portico/engine/engine.h>
#include <portico/validate/load.h>

#include <boost/asio/io_context.hpp>

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace portico;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// Records the handler calls as text: "open", "connect failed", "response SLOT STATUS",
// "failed SLOT reset|timeout|protocol", "closed". onProgress is not recorded (it comes after any
// read) but runs `onProgress` when set.
struct Recorder final : client::ConnectionHandler {
    std::vector<std::string> events;
    std::function<void()> onProgressHook;
    std::function<void(std::uint32_t)> onResponseHook; // runs inside onResponse when set
    void onOpen() override { events.push_back("open"); }
    void onConnectFailed() override { events.push_back("connect failed"); }
    void onResponse(std::uint32_t slot, int status) override {
        events.push_back("response " + std::to_string(slot) + " " + std::to_string(status));
        if (onResponseHook) onResponseHook(slot);
    }
    void onFailed(std::uint32_t slot, client::Failure why) override {
        const char* w = why == client::Failure::Reset     ? "reset"
                        : why == client::Failure::Refused ? "refused"
                        : why == client::Failure::Timeout ? "timeout"
                                                          : "protocol";
        events.push_back("failed " + std::to_string(slot) + " " + w);
    }
    void onClosed() override { events.push_back("closed"); }
    void onProgress() override {
        if (onProgressHook) onProgressHook();
    }
    QString text() const {
        QStringList l;
        for (const auto& e : events)
            l << QString::fromStdString(e);
        return l.join(QStringLiteral(" | "));
    }
};

// One scripted connection: accepts once on 127.0.0.1:0, reads until `requests` request heads
// arrived (blank lines counted), writes `reply` (and `later` 300 ms after it, when given), then
// closes when `closeAfter`, else waits for the client to close. Everything it read is kept in
// `received`.
class ScriptedServer {
public:
    ScriptedServer(int requests, std::string reply, bool closeAfter, std::string later = {}) {
        listener_ = test::listenLoopback(port_, 4);
        thread_ =
            std::thread([this, requests, reply = std::move(reply), closeAfter, later = std::move(later)] {
                const int fd = ::accept(listener_, nullptr, nullptr);
                if (fd < 0) return;
                timeval tv{5, 0};
                ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
                char buf[4096];
                auto heads = [&] {
                    int n = 0;
                    for (std::size_t p = 0; (p = received.find("\r\n\r\n", p)) != std::string::npos; p += 4)
                        ++n;
                    return n;
                };
                while (heads() < requests) {
                    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
                    if (n <= 0) break;
                    received.append(buf, static_cast<std::size_t>(n));
                }
                ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
                if (!later.empty()) {
                    std::this_thread::sleep_for(300ms);
                    ::send(fd, later.data(), later.size(), MSG_NOSIGNAL);
                }
                if (!closeAfter)
                    while (::recv(fd, buf, sizeof buf, 0) > 0) {
                    }
                ::close(fd);
            });
    }
    ~ScriptedServer() {
        ::shutdown(listener_, SHUT_RDWR);
        if (thread_.joinable()) thread_.join();
        ::close(listener_);
    }
    std::uint16_t port() const { return port_; }
    std::string received; // read by the test after the thread ended (join)
    void join() {
        if (thread_.joinable()) thread_.join();
    }

private:
    int listener_ = -1;
    std::uint16_t port_ = 0;
    std::thread thread_;
};

client::PreparedRequest http1Request(const std::string& method, const std::string& path) {
    client::PreparedRequest r;
    r.http1 = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    r.head = method == "HEAD";
    return r;
}

// Runs `io` until `done` or 5 s.
template <class Done> bool runUntil(asio::io_context& io, Done done) {
    const auto end = std::chrono::steady_clock::now() + 5s;
    while (!done() && std::chrono::steady_clock::now() < end) {
        io.restart();
        io.run_for(10ms);
    }
    return done();
}

struct Http1Case {
    asio::io_context io;
    client::ConnectionSettings settings;
    Recorder rec;
    client::TrafficCounters counters;
    client::Connection conn;
    std::vector<client::PreparedRequest> requests;
    Http1Case(std::uint16_t port, unsigned depth) : conn(io, settings, rec, counters, depth) {
        settings.endpoint = tcp::endpoint(asio::ip::address_v4::loopback(), port); // read at connect()
    }
    // Connects, sends every request of `requests` and reads until `events` handler calls came.
    bool exchange(std::size_t events) {
        conn.connect();
        if (!runUntil(io, [&] { return !rec.events.empty(); }) || rec.events[0] != "open") return false;
        conn.receive();
        for (const auto& r : requests) {
            std::uint32_t slot = 99;
            if (!conn.send(r, slot)) return false;
        }
        conn.flush();
        return runUntil(io, [&] { return rec.events.size() >= events; });
    }
};

} // namespace

class TestClientConnection : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    engine::Engine engine_;
    std::uint16_t h2Port_ = 0;

private slots:
    // Three pipelined requests, one write of three responses: each reported in send order with its
    // status; a HEAD response's Content-Length is not read as a body; chunked bodies are framed.
    void pipelinedResponsesInSendOrder() {
        ScriptedServer server(
            3,
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
            "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
            false);
        Http1Case c(server.port(), 3);
        c.requests = {http1Request("GET", "/a"), http1Request("GET", "/b"), http1Request("HEAD", "/c")};
        QVERIFY2(c.exchange(4), qPrintable(c.rec.text()));
        QCOMPARE(c.rec.text(), QStringLiteral("open | response 0 200 | response 1 404 | response 2 200"));
        QCOMPARE(c.conn.inFlight(), std::size_t{0});
        QVERIFY(c.conn.open());
        QCOMPARE(c.counters.bytesWritten,
                 std::uint64_t{c.requests[0].http1.size() + c.requests[1].http1.size() +
                               c.requests[2].http1.size()});
        c.conn.close();
        server.join();
        QCOMPARE(QString::fromStdString(server.received),
                 QString::fromStdString(c.requests[0].http1 + c.requests[1].http1 + c.requests[2].http1));
    }

    // `Connection: close` on the first of three: the other two fail as reset, then the connection
    // reports itself closed.
    void connectionCloseFailsTheRest() {
        ScriptedServer server(3, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", true);
        Http1Case c(server.port(), 4);
        c.requests = {http1Request("GET", "/"), http1Request("GET", "/"), http1Request("GET", "/")};
        QVERIFY2(c.exchange(5), qPrintable(c.rec.text()));
        QCOMPARE(c.rec.text(),
                 QStringLiteral("open | response 0 200 | failed 1 reset | failed 2 reset | closed"));
        QVERIFY(c.conn.idle());
        QCOMPARE(c.conn.inFlight(), std::size_t{0});
    }

    // A response without length ends when the server closes (RFC 9112 §6.3 item 8).
    void closeDelimitedBody() {
        ScriptedServer server(1, "HTTP/1.0 200 OK\r\n\r\nuntil the end", true);
        Http1Case c(server.port(), 1);
        c.requests = {http1Request("GET", "/")};
        QVERIFY2(c.exchange(3), qPrintable(c.rec.text()));
        QCOMPARE(c.rec.text(), QStringLiteral("open | response 0 200 | closed"));
    }

    // firstByteNs: a response that came in one read has none (0: "this read"); one whose body came
    // 300 ms after its head has the time of the read that brought the head.
    void firstByteTime() {
        ScriptedServer server(2,
                              "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                              "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nla",
                              false, "te");
        Http1Case c(server.port(), 2);
        c.requests = {http1Request("GET", "/a"), http1Request("GET", "/b")};
        std::vector<std::pair<std::int64_t, std::int64_t>> seen; // firstByteNs, time of onResponse
        c.rec.onResponseHook = [&](std::uint32_t slot) {
            seen.emplace_back(c.conn.firstByteNs(slot),
                              std::chrono::steady_clock::now().time_since_epoch().count());
        };
        const auto sent = std::chrono::steady_clock::now().time_since_epoch().count();
        QVERIFY2(c.exchange(3), qPrintable(c.rec.text()));
        QCOMPARE(c.rec.text(), QStringLiteral("open | response 0 200 | response 1 200"));
        QCOMPARE(seen.size(), std::size_t(2));
        QCOMPARE(seen[0].first, std::int64_t(0));
        QVERIFY2(seen[1].first >= sent && seen[1].second - seen[1].first >= 250'000'000,
                 qPrintable(QString("first byte %1, done %2").arg(seen[1].first).arg(seen[1].second)));
        c.conn.close();
    }

    // A response cut short by the close: the request failed as reset.
    void cutResponseIsReset() {
        ScriptedServer server(2, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", true);
        Http1Case c(server.port(), 2);
        c.requests = {http1Request("GET", "/"), http1Request("GET", "/")};
        QVERIFY2(c.exchange(4), qPrintable(c.rec.text()));
        QCOMPARE(c.rec.text(), QStringLiteral("open | failed 0 reset | failed 1 reset | closed"));
    }

    // A status line that is not HTTP: a protocol failure, and the connection is closed by the client.
    void malformedResponseIsProtocol() {
        ScriptedServer server(1, "HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n", false);
        Http1Case c(server.port(), 1);
        c.requests = {http1Request("GET", "/")};
        QVERIFY2(c.exchange(3), qPrintable(c.rec.text()));
        QCOMPARE(c.rec.text(), QStringLiteral("open | failed 0 protocol | closed"));
    }

    // Bytes after the last answered request: nobody asked for them, the connection is closed.
    void unsolicitedBytesClose() {
        ScriptedServer server(1,
                              "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
                              "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
                              false);
        Http1Case c(server.port(), 1);
        c.requests = {http1Request("GET", "/")};
        QVERIFY2(c.exchange(3), qPrintable(c.rec.text()));
        QCOMPARE(c.rec.text(), QStringLiteral("open | response 0 200 | closed"));
    }

    // The owner gives up (its timeout): every request in flight fails as timeout, oldest first.
    void ownerTimeout() {
        ScriptedServer server(2, "", false); // reads both requests, never answers
        Http1Case c(server.port(), 2);
        c.requests = {http1Request("GET", "/"), http1Request("GET", "/")};
        QVERIFY(c.exchange(1));
        QCOMPARE(c.conn.inFlight(), std::size_t{2});
        c.conn.fail(client::Failure::Timeout);
        QCOMPARE(c.rec.text(), QStringLiteral("open | failed 0 timeout | failed 1 timeout | closed"));
        QVERIFY(c.conn.idle());
    }

    // Nothing listens: onConnectFailed, and the connection can be tried again.
    void refusedConnect() {
        const std::uint16_t port = test::freePort();
        Http1Case c(port, 1);
        c.conn.connect();
        QVERIFY(runUntil(c.io, [&] { return !c.rec.events.empty(); }));
        QCOMPARE(c.rec.text(), QStringLiteral("connect failed"));
        QVERIFY(c.conn.idle());
        c.conn.fail(client::Failure::Timeout); // nothing open, nothing in flight: no callback
        QCOMPARE(c.rec.text(), QStringLiteral("connect failed"));
        c.conn.connect();
        QVERIFY(runUntil(c.io, [&] { return c.rec.events.size() == 2; }));
        QCOMPARE(c.rec.text(), QStringLiteral("connect failed | connect failed"));
    }

    // HTTP/2 with prior knowledge against Portico: four streams at once on one connection, one of
    // them reset by the server (a route with drop_rate 1); each slot reported once, and the freed
    // slots carry the next requests.
    void h2StreamsAndReset() {
        QVERIFY(dir_.isValid());
        const std::string yaml = "workers: 1\nlisten: [127.0.0.1:0]\nvhosts:\n  - routes:\n"
                                 "      - path: /ok\n        respond: {body: fine}\n"
                                 "      - path: /drop\n        respond: {body: never, drop_rate: 1}\n";
        auto r = config::loadConfigText(yaml, "client.yaml", ".");
        QVERIFY2(r.ok(), r.ok() ? "" : r.errors.front().toString().c_str());
        std::string error;
        QVERIFY2(engine_.start(r.config, error), error.c_str());
        h2Port_ = engine_.endpoints().front().port;

        asio::io_context io;
        client::ConnectionSettings settings;
        settings.endpoint = tcp::endpoint(asio::ip::address_v4::loopback(), h2Port_);
        settings.h2 = true;
        Recorder rec;
        client::TrafficCounters counters;
        client::Connection conn(io, settings, rec, counters, 4);
        auto request = [](const char* path) {
            client::PreparedRequest p;
            const client::HeaderField fields[] = {
                {":method", "GET"}, {":scheme", "http"}, {":authority", "127.0.0.1"}, {":path", path}};
            p.h2Block = client::encodeRequestBlock(fields);
            return p;
        };
        const auto ok = request("/ok"), drop = request("/drop");
        conn.connect();
        QVERIFY(runUntil(io, [&] { return !rec.events.empty(); }));
        QCOMPARE(rec.text(), QStringLiteral("open"));
        conn.receive();
        std::vector<std::uint32_t> taken;
        for (const auto* p : {&ok, &drop, &ok, &ok}) {
            std::uint32_t slot = 99;
            QVERIFY(conn.send(*p, slot));
            taken.push_back(slot);
        }
        QCOMPARE(conn.inFlight(), std::size_t{4});
        std::sort(taken.begin(), taken.end());
        QCOMPARE(taken, (std::vector<std::uint32_t>{0, 1, 2, 3}));
        conn.flush();
        QVERIFY2(runUntil(io, [&] { return rec.events.size() >= 5; }), qPrintable(rec.text()));
        QCOMPARE(conn.inFlight(), std::size_t{0});
        QVERIFY(conn.open());
        int responses = 0, resets = 0;
        for (std::size_t i = 1; i < rec.events.size(); ++i) {
            const QString e = QString::fromStdString(rec.events[i]);
            if (e.startsWith(QLatin1String("response ")) && e.endsWith(QLatin1String(" 200")))
                ++responses;
            else if (e.startsWith(QLatin1String("failed ")) && e.endsWith(QLatin1String(" reset")))
                ++resets;
        }
        QVERIFY2(responses == 3 && resets == 1, qPrintable(rec.text()));
        // The four slots are free again: four more requests fit and complete.
        rec.events.clear();
        for (int i = 0; i < 4; ++i) {
            std::uint32_t slot = 99;
            QVERIFY(conn.send(ok, slot));
            QVERIFY(slot < 4);
        }
        conn.flush();
        QVERIFY2(runUntil(io, [&] { return rec.events.size() >= 4; }), qPrintable(rec.text()));
        for (const auto& e : rec.events)
            QVERIFY2(QString::fromStdString(e).endsWith(QLatin1String(" 200")), e.c_str());
        QVERIFY(counters.bytesRead > 0 && counters.bytesWritten > 0);
        conn.close();
    }

    // Against another implementation (python3-h2, tests/support/h2_load_peer.py) with the RFC's
    // 65,535-byte windows and at most 2 streams at once: eight requests in flight wait for streams;
    // two 200,000-byte uploads go out as the server opens its windows; trailers, a 103 before the
    // 200, a padded DATA frame and a 20,000-byte header field (HEADERS + CONTINUATION) each end in
    // one response; then GOAWAY: draining() turns true, no new request is taken, and the
    // connection closes after the last response (onClosed), ready to open again.
    void h2AgainstAnotherImplementation() {
        QTemporaryDir tmp;
        QProcess py;
        const int port = test::startSupportScript(py, "h2_load_peer.py", tmp.filePath("port"));
        QVERIFY2(port, py.readAllStandardError().constData());
        asio::io_context io;
        client::ConnectionSettings settings;
        settings.endpoint = tcp::endpoint(asio::ip::address_v4::loopback(), static_cast<std::uint16_t>(port));
        settings.h2 = true;
        Recorder rec;
        client::TrafficCounters counters;
        client::Connection conn(io, settings, rec, counters, 8);
        auto request = [](const char* method, const char* path, std::string body = {}) {
            client::PreparedRequest p;
            const std::string length = std::to_string(body.size());
            std::vector<client::HeaderField> fields{
                {":method", method}, {":scheme", "http"}, {":authority", "127.0.0.1"}, {":path", path}};
            if (!body.empty()) fields.emplace_back("content-length", length);
            p.h2Block = client::encodeRequestBlock(fields);
            p.body = std::move(body);
            return p;
        };
        const client::PreparedRequest upload = request("POST", "/length", std::string(200000, 'u')),
                                      trailers = request("GET", "/trailers"),
                                      early = request("GET", "/early"), padded = request("GET", "/padded"),
                                      big = request("GET", "/big"), missing = request("GET", "/missing"),
                                      goaway = request("GET", "/goaway");
        conn.connect();
        QVERIFY(runUntil(io, [&] { return !rec.events.empty(); }));
        QCOMPARE(rec.text(), QStringLiteral("open"));
        conn.receive();
        // One request first: its response follows the server's SETTINGS (MAX_CONCURRENT_STREAMS 2),
        // which python3-h2 enforces as a connection error (RFC 9113 §5.1.2 allows either).
        std::uint32_t first = 99;
        QVERIFY(conn.send(missing, first));
        conn.flush();
        QVERIFY2(runUntil(io, [&] { return rec.events.size() >= 2; }), qPrintable(rec.text()));
        QCOMPARE(rec.text(), QStringLiteral("open | response 0 404"));
        rec.events.clear();
        const client::PreparedRequest* order[] = {&upload, &trailers, &early,  &upload,
                                                  &padded, &big,      &missing};
        for (std::uint32_t i = 0; i < 7; ++i) {
            std::uint32_t slot = 99;
            QVERIFY(conn.send(*order[i], slot));
            QCOMPARE(slot, i);
        }
        conn.flush();
        // onProgress flushes, as the load generator does: WINDOW_UPDATEs open the windows, and
        // streams that waited for MAX_CONCURRENT_STREAMS go out as others end.
        rec.onProgressHook = [&] { conn.flush(); };
        QVERIFY2(runUntil(io, [&] { return rec.events.size() >= 7; }), qPrintable(rec.text()));
        QVERIFY2(rec.text().count(QLatin1String("response")) == 7,
                 qPrintable(rec.text() + " / the server said: " + py.readAllStandardError()));
        QStringList got = rec.text().split(QStringLiteral(" | "));
        got.sort();
        QCOMPARE(got.join(QLatin1Char(',')), QStringLiteral("response 0 200,response 1 200,response 2 200,"
                                                            "response 3 200,response 4 200,response 5 200,"
                                                            "response 6 404"));
        QVERIFY(counters.bytesWritten > 400000);
        rec.events.clear();
        std::uint32_t slot = 99;
        QVERIFY(conn.send(goaway, slot));
        conn.flush();
        QVERIFY2(runUntil(io, [&] { return rec.events.size() >= 2; }), qPrintable(rec.text()));
        QCOMPARE(rec.text(), QStringLiteral("response %1 200 | closed").arg(slot));
        QVERIFY(conn.idle());
        QVERIFY(!conn.draining());
        // GOAWAY with an error and the close right after it (python3-h2 and nginx do so): the
        // request in flight fails at once as reset, not at the owner's timeout.
        rec.events.clear();
        conn.connect();
        QVERIFY(runUntil(io, [&] { return !rec.events.empty(); }));
        conn.receive();
        const auto abort = request("GET", "/abort");
        QVERIFY(conn.send(abort, slot));
        conn.flush();
        std::this_thread::sleep_for(300ms); // the GOAWAY and the FIN both wait for one read
        QVERIFY2(runUntil(io, [&] { return rec.events.size() >= 3; }), qPrintable(rec.text()));
        QCOMPARE(rec.text(), QStringLiteral("open | failed 0 reset | closed"));
        // Open again on a new connection of the same server.
        rec.events.clear();
        conn.connect();
        QVERIFY(runUntil(io, [&] { return !rec.events.empty(); }));
        conn.receive();
        QVERIFY(conn.send(missing, slot));
        conn.flush();
        QVERIFY2(runUntil(io, [&] { return rec.events.size() >= 2; }), qPrintable(rec.text()));
        QCOMPARE(rec.text(), QStringLiteral("open | response 0 404"));
        conn.close();
        py.kill();
        py.waitForFinished();
    }

    void cleanupTestCase() { engine_.stop(); }
};

QTEST_GUILESS_MAIN(TestClientConnection)
#include "tst_client_connection.moc"
