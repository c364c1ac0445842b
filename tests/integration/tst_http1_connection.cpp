// The HTTP/1.1 connection over real sockets: pipelining, keep-alive, 100-continue, errors and their
// connection fate (RFC 9112), the smuggling cases from ../shared/cases, timeouts.
#include "raw_client.h"
#include "test_support.h"

#include <QTemporaryDir>
#include <QtTest>

#include <poll.h>

#include <memory>
#include <vector>

using namespace portico::test;

class TestHttp1Connection : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    std::unique_ptr<ServerProcess> server_;
    std::uint16_t port_ = 0;

    void writeFile(const QString& rel, const QByteArray& bytes) {
        QFile f(dir_.filePath(rel));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(bytes);
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        QDir(dir_.path()).mkpath("site");
        writeFile("site/a.txt", "hello\n");
        writeFile("site/index.html", "<!doctype html><title>t</title><p>home</p>\n");
        writeFile("portico.yaml", R"(listen: ["127.0.0.1:0"]
limits: {header_timeout: 1s, body_timeout: 1s, idle_timeout: 2s, write_timeout: 1s, max_body_bytes: 1KiB, max_request_line_bytes: 1KiB, max_header_bytes: 4KiB}
vhosts:
  - root: ./site
    routes:
      - path: /echo
        respond: {body: "{{body}}"}
      - path: /smuggled
        respond: {body: SMUGGLED}
      - path: /hello/:name
        respond: {body: "hi {{param.name}}"}
)");
        server_ = std::make_unique<ServerProcess>(QStringList{"--config", dir_.filePath("portico.yaml")});
        QVERIFY2(server_->waitReady(), server_->output().constData());
        port_ = server_->port();
    }

    void pipelinedResponsesInOrder() {
        QByteArray req = "GET /hello/one HTTP/1.1\r\nHost: t\r\n\r\n"
                         "GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n"
                         "GET /hello/three HTTP/1.1\r\nHost: t\r\n\r\n";
        RawReply r = rawExchange(port_, req, 800);
        QCOMPARE(statusCodes(r.bytes), (QList<int>{200, 200, 200}));
        int one = r.bytes.indexOf("hi one"), two = r.bytes.indexOf("hello\n"),
            three = r.bytes.indexOf("hi three");
        QVERIFY(one > 0 && two > one && three > two);
        QVERIFY(!r.closedByServer);
    }

    void keepAliveRules_data() {
        QTest::addColumn<QByteArray>("request");
        QTest::addColumn<bool>("closes");
        QTest::newRow("1.1 default keep-alive")
            << QByteArray("GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n") << false;
        QTest::newRow("1.1 close") << QByteArray(
                                          "GET /a.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                                   << true;
        QTest::newRow("1.1 Close, case-insensitive")
            << QByteArray("GET /a.txt HTTP/1.1\r\nHost: t\r\nConnection: keep-alive, CLOSE\r\n\r\n") << true;
        QTest::newRow("1.0 default close") << QByteArray("GET /a.txt HTTP/1.0\r\n\r\n") << true;
        QTest::newRow("1.0 keep-alive")
            << QByteArray("GET /a.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n") << false;
    }
    void keepAliveRules() {
        QFETCH(QByteArray, request);
        QFETCH(bool, closes);
        RawReply r = rawExchange(port_, request, 600);
        QCOMPARE(statusCodes(r.bytes), QList<int>{200});
        QCOMPARE(r.closedByServer, closes);
        if (request.contains("HTTP/1.0") && !closes) QVERIFY(r.bytes.contains("Connection: keep-alive\r\n"));
        if (closes) QVERIFY(r.bytes.contains("Connection: close\r\n"));
    }

    // Each malformed request gets its RFC status and the connection is closed afterwards, so a
    // second request hidden behind it is never served.
    void errorsCloseTheConnection_data() {
        QTest::addColumn<QByteArray>("request");
        QTest::addColumn<int>("status");
        const QByteArray next = "GET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n";
        QTest::newRow("SMG-01 bare LF in chunk size")
            << "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n" +
                   next
            << 400;
        QTest::newRow("SMG-01 bare LF in chunk ext")
            << "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;x\nhello\r\n0\r\n\r\n" +
                   next
            << 400;
        QTest::newRow("SMG-03 obs-fold hides Content-Length")
            << QByteArray("POST / HTTP/1.1\r\nHost: t\r\n Content-Length: 35\r\n\r\n") + next << 400;
        QTest::newRow("SMG-05 Content-Length +3")
            << "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: +3\r\n\r\nabc" + next << 400;
        QTest::newRow("SMG-05 differing duplicate Content-Length")
            << "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd" + next
            << 400;
        QTest::newRow("SMG-05 CL and TE") << "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: "
                                             "3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" +
                                                 next
                                          << 400;
        QTest::newRow("SMG-05 TE not ending in chunked")
            << "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n" + next
            << 400;
        QTest::newRow("TE gzip alone")
            << "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n" + next << 400;
        QTest::newRow("unknown coding before chunked")
            << "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n" + next
            << 501;
        QTest::newRow("space before colon") << "GET / HTTP/1.1\r\nHost : t\r\n\r\n" + next << 400;
        QTest::newRow("missing Host in 1.1") << "GET / HTTP/1.1\r\n\r\n" + next << 400;
        QTest::newRow("HTTP/2.0 version") << "GET / HTTP/2.0\r\nHost: t\r\n\r\n" + next << 505;
        QTest::newRow("URI too long")
            << "GET /" + QByteArray(2000, 'a') + " HTTP/1.1\r\nHost: t\r\n\r\n" + next << 414;
        QTest::newRow("header too large")
            << "GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + QByteArray(5000, 'b') + "\r\n\r\n" + next << 431;
        QTest::newRow("body too large")
            << QByteArray("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2000\r\n\r\n") << 413;
        QTest::newRow("chunked body too large")
            << "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n" +
                   QByteArray(2048, 'x') + "\r\n0\r\n\r\n" + next
            << 413;
        QTest::newRow("PTH-05 NUL in path")
            << QByteArray("GET /a.txt%00.html HTTP/1.1\r\nHost: t\r\n\r\n") << 400;
        QTest::newRow("encoded slash") << QByteArray("GET /..%2fsecret HTTP/1.1\r\nHost: t\r\n\r\n") << 400;
    }
    void errorsCloseTheConnection() {
        QFETCH(QByteArray, request);
        QFETCH(int, status);
        RawReply r = rawExchange(port_, request, 1500);
        QCOMPARE(statusCodes(r.bytes), QList<int>{status});
        QVERIFY(!r.bytes.contains("SMUGGLED"));
        if (status != 400 || !request.contains("%")) {
            QVERIFY2(r.closedByServer, r.bytes.constData());
        }
    }

    // A path error is not a framing error: the connection may stay, but it must not serve the file.
    void traversalNeverLeavesRoot() {
        RawReply r = rawExchange(
            port_, "GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        QVERIFY(!statusCodes(r.bytes).isEmpty());
        QVERIFY(statusCodes(r.bytes).first() == 400 || statusCodes(r.bytes).first() == 404);
        QVERIFY(!r.bytes.contains("root:"));
    }

    // RFC 9110 §9.1: an unrecognised method gets 501 (methods are case-sensitive: "get" is one).
    void unknownMethodIs501() {
        for (const QByteArray& m : {QByteArray("FOO"), QByteArray("get"), QByteArray(300, 'X')}) {
            RawReply r = rawExchange(port_, m + " /a.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
            QCOMPARE(statusCodes(r.bytes), QList<int>{501});
        }
    }

    // CONNECT (authority-form) asks for a tunnel, which an origin server does not offer: 501, as on
    // HTTP/2 (one serve stage for both), and the connection carries the next request.
    void connectIs501() {
        RawReply r = rawExchange(port_, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"
                                        "GET /a.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        QCOMPARE(statusCodes(r.bytes), (QList<int>{501, 200}));
    }

    // Not HTTP at all (a TLS ClientHello on the cleartext port): 400 at once, not 408 later.
    void nonHttpBytesAreRefusedAtOnce() {
        RawReply r = rawExchange(port_, QByteArray("\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", 11), 700);
        QCOMPARE(statusCodes(r.bytes), QList<int>{400});
        QVERIFY(r.closedByServer);
    }

    void chunkedBodyWithTrailers() {
        RawReply r = rawExchange(
            port_, "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                   "5;name=v\r\nhello\r\n6\r\n world\r\n0\r\nX-Checksum: 1\r\n\r\n");
        QCOMPARE(statusCodes(r.bytes), QList<int>{200});
        QVERIFY(r.bytes.endsWith("\r\n\r\nhello world"));
        QVERIFY(r.bytes.contains("Content-Length: 11\r\n"));
    }

    void expectContinue() {
        // Head first, then wait: the server must say 100 Continue before we send the body.
        RawReply head = rawExchange(
            port_, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n",
            500);
        QVERIFY2(head.bytes.startsWith("HTTP/1.1 100 Continue\r\n\r\n"), head.bytes.constData());
        // With curl, which waits for the 100 before sending the body.
        auto c = runProcess("curl", {"-s", "-H", "Expect: 100-continue", "--data-binary", "ping",
                                     QStringLiteral("http://127.0.0.1:%1/echo").arg(port_)});
        QCOMPARE(c.exitCode, 0);
        QCOMPARE(c.out, QByteArray("ping"));
    }

    // RFC 9110 §10.1.1: when the head alone decides the answer, send it instead of 100 Continue.
    void expectContinueRefusedWithoutBody() {
        RawReply r = rawExchange(port_,
                                 "POST /no-such-route HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n"
                                 "Expect: 100-continue\r\n\r\n",
                                 1500);
        QCOMPARE(statusCodes(r.bytes), QList<int>{405}); // the static root takes GET/HEAD only
        QVERIFY(!r.bytes.contains("100 Continue"));
        QVERIFY(r.closedByServer);
        RawReply ok = rawExchange(port_,
                                  "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n"
                                  "Expect: 100-continue\r\n\r\n",
                                  500);
        QVERIFY(ok.bytes.startsWith("HTTP/1.1 100 Continue\r\n\r\n")); // a route that takes the body
    }

    void absoluteFormTarget() {
        RawReply r = rawExchange(
            port_, "GET http://t/hello/abs?x=1 HTTP/1.1\r\nHost: other\r\nConnection: close\r\n\r\n");
        QCOMPARE(statusCodes(r.bytes), QList<int>{200});
        QVERIFY(r.bytes.endsWith("hi abs"));
    }

    void headHasGetHeadersAndNoBody() { // case HED-01
        RawReply r = rawExchange(
            port_, "HEAD /a.txt HTTP/1.1\r\nHost: t\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n", 600);
        QCOMPARE(statusCodes(r.bytes), (QList<int>{200, 200}));
        int second = r.bytes.indexOf("HTTP/1.1 200", 10);
        QByteArray headPart = r.bytes.left(second);
        QVERIFY(headPart.contains("Content-Length: 6\r\n"));
        QVERIFY(headPart.endsWith("\r\n\r\n"));
        QVERIFY(r.bytes.endsWith("hello\n"));
    }

    void dateAndServerHeaders() {
        RawReply r = rawExchange(port_, "GET /a.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        QVERIFY(QRegularExpression("\r\nDate: \\w{3}, \\d{2} \\w{3} \\d{4} \\d{2}:\\d{2}:\\d{2} GMT\r\n")
                    .match(QString::fromLatin1(r.bytes))
                    .hasMatch());
        QVERIFY(r.bytes.contains("\r\nServer: Portico/"));
    }

    void headerTimeoutAnswers408() {
        QElapsedTimer t;
        t.start();
        RawReply r = rawExchange(port_, "GET / HTTP/1.1\r\nHost: t\r\n", 4000); // never finishes the head
        QCOMPARE(statusCodes(r.bytes), QList<int>{408});
        QVERIFY(r.closedByServer);
        QVERIFY(t.elapsed() >= 900);
    }

    // The under side of header_timeout (1 s here, for the whole head): a head that comes in three
    // pieces over ~300 ms is served. (The over side: headerTimeoutAnswers408, tst_slow_clients.)
    void headerTimeoutNotReachedServes() {
        RawReply r = rawExchangePaced(
            port_, {"GET /a.txt HTTP/1.1\r\n", "Host: t\r\n", "X-Slow: yes\r\nConnection: close\r\n\r\n"},
            150);
        QCOMPARE(statusCodes(r.bytes), QList<int>{200});
        QVERIFY(r.bytes.endsWith("hello\n"));
    }

    void idleTimeoutClosesSilently() {
        RawReply r = rawExchange(port_, "GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n", 4000);
        QCOMPARE(statusCodes(r.bytes), QList<int>{200});
        QVERIFY(r.closedByServer); // idle_timeout is 2 s, we wait up to 4 s
        QCOMPARE(r.bytes.count("HTTP/1.1"), 1);
    }

private slots:
    // A client that stops reading: once the socket buffers are full, nothing moves for
    // write_timeout (1 s) and the server closes instead of holding the connection forever.
    void writeTimeoutClosesStalledReader() {
        QFile big(dir_.filePath("site/big.bin"));
        QVERIFY(big.open(QIODevice::WriteOnly));
        big.resize(64 << 20);
        big.close();
        const int fd = connectLoopback(port_, 4096);
        QVERIFY(fd >= 0);
        const char req[] = "GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n";
        QCOMPARE(::send(fd, req, sizeof req - 1, 0), ssize_t(sizeof req - 1));
        QTest::qWait(3000); // stall well past write_timeout (+ a 250 ms tick)
        qint64 total = 0;
        char buf[65536];
        bool closed = false;
        for (;;) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 2000) <= 0) break;
            ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0) {
                closed = true;
                break;
            }
            total += n;
        }
        ::close(fd);
        QVERIFY(closed);
        QVERIFY2(total < (64 << 20), qPrintable(QString::number(total)));
        QFile::remove(dir_.filePath("site/big.bin"));
    }

    // The under side of write_timeout (1 s here): a reader that stalls 300 ms at a time, five times,
    // with the server's writes blocked each time, still gets the whole file.
    void writeTimeoutSparesSlowReader() {
        constexpr int kSize = 32 << 20;
        QFile big(dir_.filePath("site/slow.bin"));
        QVERIFY(big.open(QIODevice::WriteOnly));
        big.resize(kSize);
        big.close();
        const int fd = connectLoopback(port_, 4096);
        QVERIFY(fd >= 0);
        const char req[] = "GET /slow.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
        QCOMPARE(::send(fd, req, sizeof req - 1, 0), ssize_t(sizeof req - 1));
        QByteArray got;
        char buf[65536];
        bool closed = false;
        int stalls = 0;
        while (!closed) {
            // 2 MiB between stalls, then everything: enough for the server's waiting write to go on
            // each time (the kernel says writable only once a third of its send buffer is free),
            // and its buffers fill up again during the next stall.
            const qsizetype until = stalls < 5 ? got.size() + (2 << 20) : qsizetype(kSize) * 2;
            while (got.size() < until) {
                pollfd p{fd, POLLIN, 0};
                if (::poll(&p, 1, 3000) <= 0) break;
                ssize_t n = ::recv(fd, buf, sizeof buf, 0);
                if (n <= 0) {
                    closed = true;
                    break;
                }
                got.append(buf, n);
            }
            if (stalls == 5) break;
            QTest::qWait(300);
            ++stalls;
        }
        ::close(fd);
        QFile::remove(dir_.filePath("site/slow.bin"));
        QCOMPARE(stalls, 5);
        QVERIFY(closed); // Connection: close, after the whole body
        const qsizetype head = got.indexOf("\r\n\r\n") + 4;
        QVERIFY(got.startsWith("HTTP/1.1 200 "));
        QCOMPARE(got.size() - head, qsizetype(kSize));
    }

    // After a tick of idleness the connection gives its buffers back (parks) and must still serve.
    void parkedConnectionKeepsServing() {
        portico::test::RawClient c(port_);
        QCOMPARE(c.exchange("GET /hello/first HTTP/1.1\r\nHost: t\r\n\r\n"), 200);
        QTest::qWait(700); // > 200 ms park delay + a 250 ms tick, < 2 s idle timeout
        QCOMPARE(c.exchange("GET /hello/second HTTP/1.1\r\nHost: t\r\n\r\n"), 200);
        QCOMPARE(c.body(), std::string_view("hi second"));
    }

    // Parked connections (their sockets in the worker's park set, no read pending) that the
    // client closes are noticed and freed: the server's descriptors come back to where they were.
    void parkedConnectionsClosedByClientAreFreed() {
        auto openFds = [pid = server_->pid()] {
            return QDir(QString("/proc/%1/fd").arg(pid))
                .entryList(QDir::NoDotAndDotDot | QDir::System)
                .size();
        };
        // Connections of the tests before this one may still be closing: wait until the count holds.
        qsizetype before = openFds();
        for (int i = 0; i < 20; ++i) {
            QTest::qWait(200);
            const qsizetype now = openFds();
            if (now == before) break;
            before = now;
        }
        {
            std::vector<std::unique_ptr<portico::test::RawClient>> clients;
            for (int i = 0; i < 40; ++i) {
                clients.push_back(std::make_unique<portico::test::RawClient>(port_));
                QCOMPARE(clients.back()->exchange("GET /hello/p HTTP/1.1\r\nHost: t\r\n\r\n"), 200);
            }
            QCOMPARE(openFds(), before + 40);
            QTest::qWait(700); // parked: > 200 ms idle + a 250 ms tick, < 2 s idle timeout
            QCOMPARE(clients.front()->exchange("GET /hello/awake HTTP/1.1\r\nHost: t\r\n\r\n"), 200);
            QCOMPARE(clients.front()->body(), std::string_view("hi awake"));
        }                                                   // all 40 close
        QTRY_COMPARE_WITH_TIMEOUT(openFds(), before, 1500); // well before the 2 s idle timeout
    }

    // The under side of body_timeout (1 s here, between body reads, not for the whole body): eight
    // pieces 300 ms apart take 2.1 s in all and are served whole.
    void bodyTimeoutIsPerGapNotPerBody() {
        QElapsedTimer t;
        t.start();
        RawReply r = rawExchangePaced(port_,
                                      {"POST /echo HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
                                       "Content-Length: 16\r\n\r\nab",
                                       "cd", "ef", "gh", "ij", "kl", "mn", "op"},
                                      300);
        QCOMPARE(statusCodes(r.bytes), QList<int>{200});
        QVERIFY2(r.bytes.endsWith("\r\n\r\nabcdefghijklmnop"), r.bytes.constData());
        QVERIFY(t.elapsed() >= 2000); // twice body_timeout in all
    }

    void bodyTimeoutAnswers408() {
        RawReply r =
            rawExchange(port_, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc", 4000);
        QCOMPARE(statusCodes(r.bytes), QList<int>{408});
        QVERIFY(r.closedByServer);
    }

    // Both sides of limits.max_body_bytes (1 KiB here): 1024 bytes pass, 1025 get 413.
    void bodyLimitBothSides() {
        QByteArray at =
            "POST /echo HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: 1024\r\n\r\n" +
            QByteArray(1024, 'x');
        QCOMPARE(statusCodes(rawExchange(port_, at).bytes), QList<int>{200});
        QByteArray over =
            "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1025\r\n\r\n" + QByteArray(1025, 'x');
        QCOMPARE(statusCodes(rawExchange(port_, over).bytes), QList<int>{413});
    }

    // A huge max_body_bytes must not overflow the buffering bound into a tiny one.
    void hugeBodyLimitStillAcceptsBodies() {
        QTemporaryDir dir;
        QFile f(dir.filePath("big.yaml"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("listen: [\"127.0.0.1:0\"]\nlimits: {max_body_bytes: 18446744073709551615}\n"
                "vhosts:\n  - routes:\n      - path: /echo\n        respond: {body: \"{{body}}\"}\n");
        f.close();
        ServerProcess s({"--config", dir.filePath("big.yaml")});
        QVERIFY2(s.waitReady(), s.output().constData());
        QByteArray body(300 * 1024, 'b');
        RawReply r =
            rawExchange(s.port(), "POST /echo HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: " +
                                      QByteArray::number(body.size()) + "\r\n\r\n" + body);
        QCOMPARE(statusCodes(r.bytes), QList<int>{200});
        QVERIFY(r.bytes.endsWith(body));
    }

    void connectionLimitRefusesClearly() {
        QTemporaryDir dir;
        QFile f(dir.filePath("limit.yaml"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("workers: 1\nlisten: [\"127.0.0.1:0\"]\nlimits: {max_connections_per_worker: 2}\n"
                "vhosts:\n  - routes:\n      - path: /x\n        respond: {body: x}\n");
        f.close();
        ServerProcess s({"--config", dir.filePath("limit.yaml")});
        QVERIFY2(s.waitReady(), s.output().constData());
        portico::test::RawClient a(s.port()), b(s.port());
        QCOMPARE(a.exchange("GET /x HTTP/1.1\r\nHost: t\r\n\r\n"), 200);
        QCOMPARE(b.exchange("GET /x HTTP/1.1\r\nHost: t\r\n\r\n"), 200);
        RawReply third = rawExchange(s.port(), "GET /x HTTP/1.1\r\nHost: t\r\n\r\n");
        QCOMPARE(statusCodes(third.bytes), QList<int>{503});
        QVERIFY(third.closedByServer);
        QCOMPARE(a.exchange("GET /x HTTP/1.1\r\nHost: t\r\n\r\n"), 200); // the others are unaffected
    }

    void cleanupTestCase() { QCOMPARE(server_->terminate(), 0); }
};

QTEST_GUILESS_MAIN(TestHttp1Connection)
#include "tst_http1_connection.moc"
