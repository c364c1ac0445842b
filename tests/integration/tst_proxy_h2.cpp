// `proxy:` to HTTP/2 upstreams over the wire: curl (HTTP/1.1 and h2c downstream) → portico →
// another portico serving h2c (prior knowledge) and h2 (TLS, ALPN) as the upstream. Bodies both
// ways, many concurrent requests on one upstream connection, 502 and 504, config round trip.
// The pool's idle_timeout and an upstream closing a pooled connection against h2c_upstream.py,
// which says which connection each request came on.
#include "raw_client.h"
#include "test_support.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace portico::test;

namespace {
struct Reply {
    int status = 0;
    QString version;
    QByteArray headers;
    QByteArray body;
    int exitCode = -1;
};

Reply curl(const QString& url, const QStringList& extra = {}) {
    QTemporaryFile body;
    body.open();
    QTemporaryFile head;
    head.open();
    auto r = runProcess("curl",
                        QStringList{"-s", "--max-time", "20", "-D", head.fileName(), "-o", body.fileName(),
                                    "-w", "%{http_code} %{http_version}"} +
                            extra + QStringList{url},
                        {}, 30000);
    Reply out;
    const QStringList w = QString::fromLatin1(r.out).split(' ');
    out.status = w.value(0).toInt();
    out.version = w.value(1);
    out.headers = head.readAll();
    out.body = body.readAll();
    out.exitCode = r.exitCode;
    return out;
}

QString headerValue(const QByteArray& head, const QByteArray& name) {
    for (const QByteArray& line : head.split('\n'))
        if (line.toLower().startsWith(name.toLower() + ":"))
            return QString::fromLatin1(line.mid(name.size() + 1).trimmed());
    return {};
}

QByteArray pattern(int n) {
    QByteArray b(n, '\0');
    for (int i = 0; i < n; ++i)
        b[i] = char((i * 31 + 7) & 255);
    return b;
}

// What h2c_upstream.py reported for a GET of `path` on `c` (connection_id, client_port, open,
// goaways); empty unless the proxy answered 200.
QJsonObject upstreamSaw(RawClient& c, const char* path) {
    const std::string req = std::string("GET ") + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    if (c.exchange(req) != 200) return {};
    const auto body = c.body();
    return QJsonDocument::fromJson(QByteArray(body.data(), qsizetype(body.size()))).object();
}
} // namespace

class TestProxyH2 : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    std::unique_ptr<ServerProcess> upstream_, server_;
    std::unique_ptr<ServerProcess> upstreamH1_; // TLS with HTTP/2 off: selects http/1.1 with ALPN
    QProcess h2py_;                             // h2c_upstream.py: only the pool tests use it
    int h2pyPort_ = 0;
    QProcess tlspy_; // upstream.py --tls: Python's ssl module, HTTP/1.1, no ALPN
    int tlspyPort_ = 0;
    QString base_;
    QByteArray big_;

    QStringList both() const { return {"", "--http2-prior-knowledge"}; }
    Reply get(const QString& path, const QString& mode, QStringList extra = {}) {
        if (!mode.isEmpty()) extra.prepend(mode);
        return curl(base_ + path, extra);
    }

private slots:
    void initTestCase() {
        // The upstream: a portico with a cleartext listener (h2c by prior knowledge) and a TLS one
        // (ALPN h2, a leaf from its own local CA).
        QDir().mkpath(tmp_.filePath("up"));
        big_ = pattern(3 * 1024 * 1024 + 5);
        QFile bigFile(tmp_.filePath("up/big.bin"));
        QVERIFY(bigFile.open(QIODevice::WriteOnly));
        bigFile.write(big_);
        bigFile.close();
        QFile huge(tmp_.filePath("up/huge.bin"));
        QVERIFY(huge.open(QIODevice::WriteOnly));
        QVERIFY(huge.resize(qint64(256) * 1024 * 1024)); // sparse: cheap to create and to serve
        huge.close();
        QFile up(tmp_.filePath("up.yaml"));
        QVERIFY(up.open(QIODevice::WriteOnly));
        up.write(R"(listen: [127.0.0.1:0, {address: 127.0.0.1:0, tls: auto}]
vhosts:
  - names: [127.0.0.1, localhost]
    default: true
    root: up
    routes:
      - path: /teapot
        respond: {status: 418, body: "short and stout", headers: {X-Up: "yes"}}
      - path: /slow
        respond: {status: 200, body: slow, latency: 2s}
      - path: /fields
        respond: {body: "xff={{header.x-forwarded-for}}|proto={{header.x-forwarded-proto}}|host={{header.x-forwarded-host}}|via={{header.via}}|fwd={{header.forwarded}}|te={{header.te}}|drop={{header.x-drop}}|keep={{header.x-keep}}"}
)");
        up.close();
        upstream_ = std::make_unique<ServerProcess>(
            QStringList{"--config", tmp_.filePath("up.yaml"), "--record", tmp_.filePath("up.db")},
            QStringList{"PORTICO_DATA_DIR=" + tmp_.filePath("data")});
        QVERIFY2(upstream_->waitReady(), upstream_->output().constData());
        QVERIFY(upstream_->plainPort() && upstream_->tlsPort());
        QFile up1(tmp_.filePath("up1.yaml"));
        QVERIFY(up1.open(QIODevice::WriteOnly));
        up1.write(R"(listen: [{address: 127.0.0.1:0, tls: auto}]
http2: {enabled: false}
limits: {max_body_bytes: 8MiB}
vhosts:
  - names: [127.0.0.1, localhost]
    default: true
    root: up
    routes:
      - path: /echo
        respond: {status: 201, body: "{{body}}", headers: {X-Up: "h1"}}
      - path: /fields
        respond: {body: "proto={{header.x-forwarded-proto}}|via={{header.via}}|host={{header.host}}|len={{header.content-length}}|te={{header.transfer-encoding}}"}
)");
        up1.close();
        upstreamH1_ = std::make_unique<ServerProcess>(
            QStringList{"--config", tmp_.filePath("up1.yaml"), "--record", tmp_.filePath("up1.db")},
            QStringList{"PORTICO_DATA_DIR=" + tmp_.filePath("data")});
        QVERIFY2(upstreamH1_->waitReady(), upstreamH1_->output().constData());
        const QString portFile = tmp_.filePath("h2py.port");
        h2pyPort_ = startSupportScript(h2py_, "h2c_upstream.py", portFile);
        QVERIFY2(h2pyPort_, h2py_.readAllStandardError().constData());
        auto gen = makeSelfSignedCert(tmp_.filePath("cert.pem"), tmp_.filePath("key.pem"), "127.0.0.1");
        QVERIFY2(gen.exitCode == 0, gen.err.constData());
        const QString tlspyPortFile = tmp_.filePath("tlspy.port");
        tlspyPort_ = startSupportScript(tlspy_, "upstream.py", tlspyPortFile,
                                        {"--tls", tmp_.filePath("cert.pem"), tmp_.filePath("key.pem")});
        QVERIFY2(tlspyPort_, tlspy_.readAllStandardError().constData());
        QDir().mkpath(tmp_.filePath("site"));
        QFile cfg(tmp_.filePath("portico.yaml"));
        QVERIFY(cfg.open(QIODevice::WriteOnly));
        cfg.write(QStringLiteral(R"(listen: [127.0.0.1:0]
limits: {max_body_bytes: 8MiB}
access_log: {format: combined, path: access.log}
vhosts:
  - names: [127.0.0.1]
    root: site
    routes:
      - path: /h2c/*
        proxy: {upstream: h2c://127.0.0.1:%1, strip_prefix: /h2c}
        headers: {X-Route: h2c}
      - path: /tls/*
        proxy: {upstream: https://127.0.0.1:%2, strip_prefix: /tls, change_origin: true}
      - path: /tls1/*
        proxy: {upstream: https://127.0.0.1:%5, strip_prefix: /tls1}
      - path: /py/*
        proxy: {upstream: https://127.0.0.1:%6, strip_prefix: /py}
      - path: /tls1grpc/*
        grpc: https://127.0.0.1:%5
      - path: /dead/*
        proxy: h2c://127.0.0.1:%3
      - path: /fwd/*
        proxy: {upstream: h2c://127.0.0.1:%1, strip_prefix: /fwd, forwarded: true}
      - path: /impatient/*
        proxy: {upstream: h2c://127.0.0.1:%1, strip_prefix: /impatient, response_timeout: 300ms}
      - path: /idle/*
        proxy: {upstream: h2c://127.0.0.1:%4, strip_prefix: /idle, idle_timeout: 1s}
)")
                      .arg(upstream_->plainPort())
                      .arg(upstream_->tlsPort())
                      .arg(freePort())
                      .arg(h2pyPort_)
                      .arg(upstreamH1_->tlsPort())
                      .arg(tlspyPort_)
                      .toUtf8());
        cfg.close();
        server_ = std::make_unique<ServerProcess>(
            QStringList{"--config", tmp_.filePath("portico.yaml"), "--record", tmp_.filePath("session.db")});
        QVERIFY2(server_->waitReady(), server_->output().constData());
        base_ = QStringLiteral("http://127.0.0.1:%1").arg(server_->port());
    }

    void h2cUpstreamServesBothDownstreams() {
        for (const QString& mode : both()) {
            auto r = get("/h2c/teapot", mode);
            QCOMPARE(r.status, 418);
            QCOMPARE(r.body, QByteArray("short and stout"));
            QCOMPARE(headerValue(r.headers, "x-up"), QString("yes"));
            QCOMPARE(headerValue(r.headers, "x-route"), QString("h2c")); // the route's headers apply
            auto b = get("/h2c/big.bin", mode);
            QCOMPARE(b.status, 200);
            QCOMPARE(b.body.size(), big_.size());
            QVERIFY(b.body == big_);
            QCOMPARE(headerValue(b.headers, "content-length"), QString::number(big_.size()));
            auto h = get("/h2c/big.bin", mode, {"-I"});
            QCOMPARE(h.status, 200);
            QCOMPARE(headerValue(h.headers, "content-length"), QString::number(big_.size()));
            auto n = get("/h2c/missing", mode);
            QCOMPARE(n.status, 404); // the upstream's error passes through
        }
    }

    // The fields a proxy adds and removes (RFC 9110 §7.6) reach an HTTP/2 upstream as they reach an
    // HTTP/1.1 one (tst_proxy): received X-Forwarded-For and Via lists extended, X-Forwarded-Proto
    // and -Host, Forwarded (RFC 7239), TE: trailers kept, fields named in Connection dropped.
    void forwardingFieldsReachTheUpstream() {
        const QString host = QStringLiteral("127.0.0.1:%1").arg(server_->port());
        auto r = get("/fwd/fields", "",
                     {"-H", "X-Forwarded-For: 10.0.0.1", "-H", "Via: 1.1 edge", "-H", "Connection: X-Drop",
                      "-H", "X-Drop: 1", "-H", "X-Keep: 2", "-H", "TE: trailers"});
        QCOMPARE(r.status, 200);
        QCOMPARE(QString::fromUtf8(r.body),
                 QStringLiteral("xff=10.0.0.1, 127.0.0.1|proto=http|host=%1|via=1.1 edge, 1.1 portico|"
                                "fwd=for=127.0.0.1;proto=http;host=\"%1\"|te=trailers|drop=|keep=2")
                     .arg(host));
    }

    void requestBodiesGoUp() {
        QFile f(tmp_.filePath("body.bin"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(pattern(2 * 1024 * 1024));
        f.close();
        for (const QString& mode : both()) {
            auto r = get("/h2c/teapot", mode, {"--data-binary", "@" + f.fileName()});
            QCOMPARE(r.status, 418);
        }
    }

    void requestTrailersGoUp() {
        // An HTTP/2 request with a body and trailers streams to the HTTP/2 upstream, trailers
        // included (checked in the upstream's capture at the end).
        QFile f(tmp_.filePath("small.txt"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("with trailers");
        f.close();
        auto r = runProcess("nghttp", {"-n", "-s", "--trailer=x-checksum: abc123", "-d", f.fileName(),
                                       base_ + "/h2c/teapot?trailers=1"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.contains(" 418 "), r.out.constData());
    }

    void tlsUpstreamWithAlpnH2() {
        for (const QString& mode : both()) {
            auto b = get("/tls/big.bin", mode);
            QCOMPARE(b.status, 200);
            QVERIFY(b.body == big_);
            auto t = get("/tls/teapot", mode);
            QCOMPARE(t.status, 418);
        }
    }

    // An https:// upstream that selects http/1.1 with ALPN (a TLS backend without HTTP/2, as most
    // dev servers are) is spoken to in HTTP/1.1 over TLS. The first requests of each worker wait
    // for an HTTP/2 connection, learn the protocol from its handshake and are handed over, bodies
    // included; later ones go straight to HTTP/1.1 and reuse its keep-alive connections.
    void tlsUpstreamSelectingHttp1() {
        const QByteArray small("hello over tls");
        QFile f(tmp_.filePath("up1body.bin"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        const QByteArray large = pattern(2 * 1024 * 1024 + 3);
        f.write(large);
        f.close();
        for (int round = 0; round < 3; ++round) {
            for (const QString& mode : both()) {
                auto e = get("/tls1/echo", mode, {"--data-binary", QString::fromLatin1(small)});
                QCOMPARE(e.status, 201);
                QCOMPARE(e.body, small);
                QCOMPARE(headerValue(e.headers, "x-up"), QString("h1"));
                auto b = get("/tls1/big.bin", mode);
                QCOMPARE(b.status, 200);
                QVERIFY(b.body == big_);
                auto up = get("/tls1/echo", mode, {"--data-binary", "@" + f.fileName()});
                QCOMPARE(up.status, 201);
                QVERIFY(up.body == large);
            }
        }
        // Sequential requests reuse the worker's pooled TLS connections: the upstream saw the 18
        // requests above on a few connections (one per worker and downstream connection at a time).
        // Its session file is read while it runs (the capture writer commits every 50 ms).
        QSet<QString> connections;
        int requests = 0;
        for (int attempt = 0; attempt < 40 && requests < 18; ++attempt) {
            QTest::qWait(100);
            auto har = runProcess(porticoBinary(), {"har", "export", tmp_.filePath("up1.db"), "-"});
            QVERIFY2(har.exitCode == 0, har.err.constData());
            connections.clear();
            requests = 0;
            for (const auto& v :
                 QJsonDocument::fromJson(har.out).object()["log"].toObject()["entries"].toArray()) {
                ++requests;
                connections.insert(v.toObject()["connection"].toString());
            }
        }
        QCOMPARE(requests, 18);
        QVERIFY2(connections.size() <= 6, QByteArray::number(connections.size()).constData());
        // A streamed body of unknown length (chunked from an HTTP/1.1 client) goes up chunked.
        auto c = get("/tls1/fields", "",
                     {"-H", "Transfer-Encoding: chunked", "--data-binary", "@" + f.fileName()});
        QCOMPARE(c.status, 200);
        QCOMPARE(QString::fromUtf8(c.body),
                 QStringLiteral("proto=http|via=1.1 portico|host=127.0.0.1:%1|len=|"
                                "te=chunked")
                     .arg(server_->port()));
        auto c2 =
            get("/tls1/echo", "", {"-H", "Transfer-Encoding: chunked", "--data-binary", "@" + f.fileName()});
        QCOMPARE(c2.status, 201);
        QVERIFY(c2.body == large);
        // Many requests at once on HTTP/2 downstream: each a request of its own upstream.
        auto r = runProcess("nghttp", {"-n", "-s", "-m", "20", base_ + "/tls1/big.bin"}, {}, 60000);
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(r.out.count(" 200 "), 20);
        // gRPC needs HTTP/2: a clear 502, not a hang or an HTTP/1.1 exchange.
        for (int i = 0; i < 2; ++i) {
            auto g = get("/tls1grpc/pkg.Svc/Call", "",
                         {"-H", "Content-Type: application/grpc", "--data-binary", "x"});
            QCOMPARE(g.status, 502);
            QVERIFY2(g.body.contains("gRPC needs HTTP/2"), g.body.constData());
        }
    }

    // Python's ssl module as an HTTPS backend: a close-delimited response ends at a close without
    // close_notify (read as the end, as curl does), and an answer the upstream gives before taking
    // the whole body (its 413, then a close that resets the upload) reaches the client instead of a
    // 502 for the failed write.
    void tlsUpstreamWithoutAlpnKeepsTheFirstConnection() {
        // The first request to an https:// upstream that selects no protocol: the HTTP/2 client's
        // handshake found HTTP/1.1, and that TLS connection carries the request (the upstream's
        // first connection), not a second connect and handshake.
        auto r = get("/py/echo", "");
        QCOMPARE(r.status, 200);
        const auto echo = QJsonDocument::fromJson(r.body).object();
        QCOMPARE(echo["connection_id"].toInt(), 1);
        QCOMPARE(echo["path"].toString(), QString("/echo"));
    }

    void tlsUpstreamCloseDelimitedAndEarlyAnswer() {
        QFile f(tmp_.filePath("six.bin"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(pattern(6 * 1024 * 1024));
        f.close();
        for (int round = 0; round < 3; ++round) {
            for (const QString& mode : both()) {
                auto c = get("/py/close-delimited?n=300001", mode);
                QCOMPARE(c.exitCode, 0);
                QCOMPARE(c.status, 200);
                QVERIFY(c.body == pattern(300001));
                auto e = get("/py/early", mode, {"--data-binary", "@" + f.fileName()});
                QCOMPARE(e.status, 413);
                QCOMPARE(e.body, QByteArray("too big, says the upstream\n"));
            }
        }
    }

    void manyConcurrentStreamsOnOneUpstream() {
        // 40 multiplexed downstream streams (nghttp: curl 7.88's --parallel trips over prior
        // knowledge) become 40 streams on the worker's upstream connection.
        auto r = runProcess("nghttp", {"-n", "-s", "-m", "40", base_ + "/h2c/big.bin"}, {}, 60000);
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(r.out.count(" 200 "), 40);
    }

    void slowReaderKeepsMemoryBounded() {
        // A client reading at 4 MB/s from a 256 MiB response: the upstream is paced by flow
        // control (WINDOW_UPDATE only for what the client took), so the proxy's memory stays put.
        auto rssKiB = [this] {
            QFile f(QStringLiteral("/proc/%1/status").arg(server_->pid()));
            if (!f.open(QIODevice::ReadOnly)) return qint64(-1);
            for (const QByteArray& line : f.readAll().split('\n'))
                if (line.startsWith("VmRSS:")) return line.mid(6).trimmed().split(' ').value(0).toLongLong();
            return qint64(-1);
        };
        for (const QString& mode : both()) {
            const qint64 before = rssKiB();
            QProcess client;
            QStringList args{"-s", "-o", "/dev/null", "--limit-rate", "4M", "--max-time", "3"};
            if (!mode.isEmpty()) args << mode;
            client.start("curl", args << base_ + "/h2c/huge.bin");
            QVERIFY(client.waitForStarted());
            QTest::qWait(2000);
            const qint64 during = rssKiB();
            client.waitForFinished(10000);
            QVERIFY2(
                before > 0 && during - before < 48 * 1024,
                qPrintable(
                    QStringLiteral("RSS %1 KiB → %2 KiB while a slow client reads").arg(before).arg(during)));
        }
    }

    void unreachableUpstreamGives502() {
        for (const QString& mode : both()) {
            auto r = get("/dead/x", mode);
            QCOMPARE(r.status, 502);
            QVERIFY2(r.body.contains("upstream 127.0.0.1:"), r.body.constData());
            QVERIFY2(r.body.contains("refused"), r.body.constData());
        }
    }

    void slowUpstreamGives504() {
        for (const QString& mode : both()) {
            auto r = get("/impatient/slow", mode);
            QCOMPARE(r.status, 504);
            QVERIFY2(r.body.contains("timed out"), r.body.constData());
        }
        // The connection is still good for the next request.
        QCOMPARE(get("/h2c/teapot", "").status, 418);
    }

    // Both sides of the HTTP/2 upstream pool's idle_timeout (1 s on /idle), seen from one client
    // connection (one worker, one pool): a request 300 ms after the last one goes out on the pooled
    // upstream connection; one after 1.6 s idle finds it closed by the idle timer (GOAWAY, then
    // FIN) and gets a new one. The first test to use h2c_upstream.py: no other connection there.
    void h2PooledConnectionClosedAfterIdleTimeout() {
        RawClient c(server_->port());
        QVERIFY(c.ok());
        const QJsonObject first = upstreamSaw(c, "/idle/conn");
        const int id = first["connection_id"].toInt();
        QVERIFY2(id > 0, QJsonDocument(first).toJson().constData());
        QCOMPARE(first["open"].toInt(), 1);
        QElapsedTimer idle;
        idle.start();
        QTest::qWait(300);
        const QJsonObject second = upstreamSaw(c, "/idle/conn");
        QVERIFY2(idle.elapsed() < 800, qPrintable(QString::number(idle.elapsed()))); // well under 1 s
        QCOMPARE(second["connection_id"].toInt(), id);
        QCOMPARE(second["client_port"].toInt(), first["client_port"].toInt());
        QCOMPARE(second["open"].toInt(), 1);
        QTest::qWait(1600);
        const QJsonObject third = upstreamSaw(c, "/idle/conn");
        QVERIFY2(third["connection_id"].toInt() > id, QJsonDocument(third).toJson().constData());
        QCOMPARE(third["open"].toInt(), 1); // the idle one was closed, not merely set aside
        QCOMPARE(third["goaways"].toInt(), first["goaways"].toInt() + 1); // and said goodbye
    }

    void h2PooledConnectionClosedByUpstreamIsClosed() {
        // The upstream closes the connection (FIN, no GOAWAY) 200 ms after /brief. The pooled end
        // must be closed then too, not left in CLOSE_WAIT until some later request picks it.
        RawClient c(server_->port());
        QVERIFY(c.ok());
        const int id = upstreamSaw(c, "/idle/brief")["connection_id"].toInt();
        QVERIFY(id > 0);
        // The upstream's end goes to TIME_WAIT only once ours has closed as well (FIN_WAIT_2 while
        // ours sits in CLOSE_WAIT); only this test makes h2c_upstream.py close first. Within 700 ms,
        // before the 1 s idle timer would close ours anyway.
        QTRY_VERIFY_WITH_TIMEOUT(tcpSockets(Side::Local, h2pyPort_, kTimeWait) >= 1, 700);
        QCOMPARE(tcpSockets(Side::Remote, h2pyPort_, kCloseWait), 0);
        // The next request goes out on a new connection.
        const QJsonObject next = upstreamSaw(c, "/idle/conn");
        QVERIFY2(next["connection_id"].toInt() > id, QJsonDocument(next).toJson().constData());
    }

    // An HTTP/2 upstream's HEADERS that came without DATA reach the HTTP/1.1 client at once: the
    // head is held only while the rest of the same read is processed (for one write with the
    // first body bytes), not until the body comes. The upstream sends this body only when asked.
    void h2HeadWithoutDataIsNotHeldBack() {
        const int fd = connectLoopback(server_->port());
        QVERIFY(fd >= 0);
        timeval tv{5, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        const std::string req = "GET /idle/held HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
        QCOMPARE(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), ssize_t(req.size()));
        std::string got;
        char buf[4096];
        while (got.find("\r\n\r\n") == std::string::npos) {
            const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0) break; // a timeout (5 s): the head was held back
            got.append(buf, std::size_t(n));
        }
        const std::size_t end = got.find("\r\n\r\n");
        QVERIFY2(end != std::string::npos, got.c_str());
        QVERIFY2(got.starts_with("HTTP/1.1 200"), got.c_str());
        QCOMPARE(got.size(), end + 4); // no body yet: the upstream holds it
        RawClient other(server_->port());
        QCOMPARE(other.exchange("GET /idle/release HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"), 200);
        while (got.size() < end + 4 + 8) {
            const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0) break;
            got.append(buf, std::size_t(n));
        }
        ::close(fd);
        QCOMPARE(QByteArray::fromStdString(got.substr(end + 4)), QByteArray("released"));
    }

    // Last: stops the server to read its session file.
    void proxiedExchangesAreLoggedAndCaptured() {
        QCOMPARE(get("/h2c/teapot?capture=1", "").status, 418);
        QCOMPARE(get("/h2c/teapot?capture=2", "--http2-prior-knowledge").status, 418);
        const int exitCode = server_->terminate();
        QVERIFY2(exitCode == 0, server_->output().right(4000).constData()); // a sanitizer's report
        QFile log(tmp_.filePath("access.log"));
        QVERIFY(log.open(QIODevice::ReadOnly));
        const QByteArray lines = log.readAll();
        QVERIFY2(lines.contains("\"GET /h2c/teapot?capture=1 HTTP/1.1\" 418 15"), lines.constData());
        QVERIFY2(lines.contains("\"GET /h2c/teapot?capture=2 HTTP/2.0\" 418 15"), lines.constData());
        auto r = runProcess(porticoBinary(), {"har", "export", tmp_.filePath("session.db"), "-"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const auto entries = QJsonDocument::fromJson(r.out).object()["log"].toObject()["entries"].toArray();
        int seen = 0;
        for (const auto& v : entries) {
            const auto e = v.toObject();
            const auto p = e["_portico"].toObject();
            if (!p["target"].toString().startsWith("/h2c/teapot?capture=")) continue;
            ++seen;
            QCOMPARE(e["response"].toObject()["status"].toInt(), 418);
            const auto ph = p["phasesNs"].toObject();
            const double route = ph["route_matched"].toDouble(),
                         connected = ph["upstream_connected"].toDouble(),
                         first = ph["upstream_first_byte"].toDouble(), done = ph["response_done"].toDouble();
            QVERIFY2(route > 0 && connected >= route && first >= connected && done >= first,
                     QJsonDocument(p).toJson().constData());
        }
        QCOMPARE(seen, 2);
        // The upstream's own record of the request with trailers.
        QCOMPARE(upstream_->terminate(), 0);
        r = runProcess(porticoBinary(), {"har", "export", tmp_.filePath("up.db"), "-"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        bool trailers = false;
        for (const auto& v : QJsonDocument::fromJson(r.out).object()["log"].toObject()["entries"].toArray()) {
            const auto p = v.toObject()["_portico"].toObject();
            if (p["target"].toString() != "/teapot?trailers=1") continue;
            const auto t = p["requestTrailers"].toArray();
            trailers = t.size() == 1 && t[0].toObject()["name"].toString() == "x-checksum" &&
                       t[0].toObject()["value"].toString() == "abc123";
            QCOMPARE(v.toObject()["request"].toObject()["postData"].toObject()["text"].toString(),
                     QString("with trailers"));
        }
        QVERIFY2(trailers, r.out.left(4000).constData());
    }

    void cleanupTestCase() {
        h2py_.kill();
        h2py_.waitForFinished();
        tlspy_.kill();
        tlspy_.waitForFinished();
    }
};

QTEST_GUILESS_MAIN(TestProxyH2)
#include "tst_proxy_h2.moc"
