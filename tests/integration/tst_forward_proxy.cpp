// A listener with `forward_proxy: true` and `portico proxy`, driven by curl -x and raw sockets:
// absolute-form requests forwarded to their origin as the client sent them (RFC 9110 §7.6, RFC
// 9112 §3.2.2), CONNECT tunnels (RFC 9110 §9.3.6) to a cleartext and a TLS origin, the errors
// (502 with the reason, 400, 508 for a loop), and what the capture records of both.
#include "test_support.h"

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
    QByteArray headers;
    QByteArray body;
    int exitCode = -1;
    QByteArray err;
};

Reply curl(const QStringList& args) {
    QTemporaryFile body;
    body.open();
    QTemporaryFile head;
    head.open();
    auto r = runProcess("curl",
                        QStringList{"-sS", "--max-time", "20", "-D", head.fileName(), "-o", body.fileName(),
                                    "-w", "%{http_code}"} +
                            args,
                        {}, 30000);
    Reply out;
    out.status = QString::fromLatin1(r.out).toInt();
    out.headers = head.readAll();
    out.body = body.readAll();
    out.exitCode = r.exitCode;
    out.err = r.err;
    return out;
}

// The fields upstream.py's /echo received, lower-cased names.
QMap<QString, QStringList> receivedHeaders(const QJsonObject& echo) {
    QMap<QString, QStringList> out;
    for (const auto& pair : echo.value("headers").toArray())
        out[pair.toArray().at(0).toString().toLower()] << pair.toArray().at(1).toString();
    return out;
}

// The head lines of `head` whose name is `name` (case-insensitive), values trimmed.
QStringList headerValues(const QByteArray& head, const QByteArray& name) {
    QStringList out;
    for (const QByteArray& line : head.split('\n'))
        if (line.toLower().startsWith(name.toLower() + ":"))
            out << QString::fromLatin1(line.mid(name.size() + 1).trimmed());
    return out;
}
} // namespace

class TestForwardProxy : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    QProcess upstream_, tlsUpstream_;
    int upstreamPort_ = 0, tlsPort_ = 0;
    std::unique_ptr<ServerProcess> server_;
    QString proxy_; // "http://127.0.0.1:PORT"

    QString origin(const QString& path) const {
        return QStringLiteral("http://127.0.0.1:%1%2").arg(upstreamPort_).arg(path);
    }

private slots:
    void initTestCase() {
        upstreamPort_ = startSupportScript(upstream_, "upstream.py", tmp_.filePath("up.port"));
        QVERIFY(upstreamPort_);
        auto gen = makeSelfSignedCert(tmp_.filePath("cert.pem"), tmp_.filePath("key.pem"), "127.0.0.1");
        QVERIFY2(gen.exitCode == 0, gen.err.constData());
        tlsPort_ = startSupportScript(tlsUpstream_, "upstream.py", tmp_.filePath("tls.port"),
                                      {"--tls", tmp_.filePath("cert.pem"), tmp_.filePath("key.pem")});
        QVERIFY(tlsPort_);
        QDir().mkpath(tmp_.filePath("site"));
        QFile index(tmp_.filePath("site/index.html"));
        QVERIFY(index.open(QIODevice::WriteOnly));
        index.write("served by the proxy's own vhost\n");
        index.close();
        QFile cfg(tmp_.filePath("portico.yaml"));
        QVERIFY(cfg.open(QIODevice::WriteOnly));
        cfg.write(R"(listen: [{address: 127.0.0.1:0, forward_proxy: true}]
vhosts:
  - root: site
)");
        cfg.close();
        server_ = std::make_unique<ServerProcess>(
            QStringList{"--config", tmp_.filePath("portico.yaml"), "--record", tmp_.filePath("rec.db")});
        QVERIFY2(server_->waitReady(), server_->output().constData());
        proxy_ = server_->baseUrl();
    }
    void cleanupTestCase() {
        for (QProcess* p : {&upstream_, &tlsUpstream_}) {
            p->kill();
            p->waitForFinished();
        }
    }

    // An absolute-form request goes to its origin in origin-form, with the client's Host, without
    // the proxy's own fields (Proxy-*, hop-by-hop) and without X-Forwarded-*/Via added; the
    // origin's answer comes back with its own Date and Server.
    void absoluteFormGoesToTheOrigin() {
        auto r = curl({"-x", proxy_, "-H", "Proxy-Authorization: Basic dXNlcjpwYXNz", "-H", "X-Custom: kept",
                       origin("/echo?x=1")});
        QCOMPARE(r.status, 200);
        const auto echo = QJsonDocument::fromJson(r.body).object();
        QCOMPARE(echo.value("method").toString(), QString("GET"));
        QCOMPARE(echo.value("path").toString(), QString("/echo?x=1"));
        const auto h = receivedHeaders(echo);
        QCOMPARE(h.value("host"), QStringList{QStringLiteral("127.0.0.1:%1").arg(upstreamPort_)});
        QCOMPARE(h.value("x-custom"), QStringList{"kept"});
        for (const char* gone : {"proxy-authorization", "proxy-connection", "x-forwarded-for",
                                 "x-forwarded-proto", "x-forwarded-host", "via", "forwarded"})
            QVERIFY2(!h.contains(gone), gone);
        const QStringList server = headerValues(r.headers, "Server");
        QCOMPARE(server.size(), 1);
        QVERIFY2(server.front().contains("Python"), qPrintable(server.front())); // the origin's, not ours
        QCOMPARE(headerValues(r.headers, "Date").size(), 1);
        // A request the client sent with X-Forwarded-For keeps its list as it was.
        r = curl({"-x", proxy_, "-H", "X-Forwarded-For: 10.0.0.1", origin("/echo")});
        QCOMPARE(receivedHeaders(QJsonDocument::fromJson(r.body).object()).value("x-forwarded-for"),
                 QStringList{"10.0.0.1"});
    }

    // A body streams to the origin (the forwarded exchange starts at the end of the head) and a
    // large response streams back; both arrive whole.
    void bodiesPassBothWays() {
        QByteArray upload(3 * 1024 * 1024 + 17, '\0');
        for (int i = 0; i < upload.size(); ++i)
            upload[i] = char((i * 7 + 3) & 255);
        QFile f(tmp_.filePath("upload.bin"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(upload);
        f.close();
        auto r = curl({"-x", proxy_, "--data-binary", "@" + tmp_.filePath("upload.bin"), "-H",
                       "Content-Type: application/octet-stream", origin("/upload")});
        QCOMPARE(r.status, 200);
        const auto up = QJsonDocument::fromJson(r.body).object();
        QCOMPARE(qint64(up.value("bytes").toDouble()), qint64(upload.size()));
        r = curl({"-x", proxy_, origin("/big?n=5000000")});
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body.size(), 5000000);
        QCOMPARE(r.body.at(4999999), char((4999999 * 31 + 7) & 255));
    }

    // Origin-form requests to the proxy's port are the vhosts' (the proxy is also a server).
    void originFormIsServedHere() {
        auto r = curl({proxy_ + "/"});
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body, QByteArray("served by the proxy's own vhost\n"));
    }

    // CONNECT opens a tunnel: curl's HTTP request through it (-p), and TLS to an https origin that
    // the client verifies itself (the bytes pass unread).
    void connectTunnels() {
        auto r = curl({"-p", "-x", proxy_, origin("/echo?via=tunnel")});
        QCOMPARE(r.status, 200);
        QVERIFY2(r.headers.contains("200 Connection established"), r.headers.constData());
        const auto echo = QJsonDocument::fromJson(r.body).object();
        QCOMPARE(echo.value("path").toString(), QString("/echo?via=tunnel"));
        r = curl({"-x", proxy_, "--cacert", tmp_.filePath("cert.pem"),
                  QStringLiteral("https://127.0.0.1:%1/big?n=300000").arg(tlsPort_)});
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body.size(), 300000);
        // The origin's certificate is what the client saw: without its CA, curl refuses it.
        r = curl({"-x", proxy_, QStringLiteral("https://127.0.0.1:%1/echo").arg(tlsPort_)});
        QCOMPARE(r.exitCode, 60); // CURLE_PEER_FAILED_VERIFICATION
    }

    // Bytes that follow the CONNECT head in the same packet are the tunnel's first bytes.
    void bytesAfterConnectGoThrough() {
        const QByteArray req =
            QStringLiteral("CONNECT 127.0.0.1:%1 HTTP/1.1\r\nHost: 127.0.0.1:%1\r\n\r\n"
                           "GET /echo?early=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .arg(upstreamPort_)
                .toLatin1();
        auto reply = rawExchange(server_->port(), req, 3000);
        QVERIFY2(reply.bytes.startsWith("HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.0 200") ||
                     reply.bytes.startsWith("HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200"),
                 reply.bytes.left(200).constData());
        QVERIFY(reply.bytes.contains("\"/echo?early=1\""));
        // Garbage through a tunnel is the origin's business; the proxy stays up.
        const QByteArray garbage =
            QStringLiteral("CONNECT 127.0.0.1:%1 HTTP/1.1\r\nHost: a\r\n\r\n").arg(upstreamPort_).toLatin1() +
            QByteArrayLiteral("\x16\x03\x01\xff\xff garbage\r\n\r\n");
        reply = rawExchange(server_->port(), garbage, 2000);
        QVERIFY2(reply.bytes.startsWith("HTTP/1.1 200 Connection established\r\n\r\n"),
                 reply.bytes.left(200).constData());
        QCOMPARE(curl({"-x", proxy_, origin("/echo")}).status, 200);
    }

    // What cannot be forwarded gets the status that says why, with the reason in the body.
    void refusals_data() {
        QTest::addColumn<QString>("request");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("says");
        const int dead = freePort(); // nothing listens there
        const quint16 self = server_->port();
        QTest::newRow("CONNECT to a closed port")
            << QStringLiteral("CONNECT 127.0.0.1:%1 HTTP/1.1\r\nHost: a\r\n\r\n").arg(dead) << 502
            << QStringLiteral("cannot connect to 127.0.0.1:%1").arg(dead);
        QTest::newRow("CONNECT without a port")
            << QStringLiteral("CONNECT 127.0.0.1 HTTP/1.1\r\nHost: a\r\n\r\n") << 400
            << QStringLiteral("host:port");
        QTest::newRow("CONNECT to the proxy itself")
            << QStringLiteral("CONNECT 127.0.0.1:%1 HTTP/1.1\r\nHost: a\r\n\r\n").arg(self) << 508
            << QStringLiteral("own listener");
        QTest::newRow("CONNECT to localhost, the proxy itself")
            << QStringLiteral("CONNECT localhost:%1 HTTP/1.1\r\nHost: a\r\n\r\n").arg(self) << 508
            << QStringLiteral("own listener");
        QTest::newRow("absolute-form to the proxy itself")
            << QStringLiteral("GET http://127.0.0.1:%1/ HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
                   .arg(self)
            << 508 << QStringLiteral("own listener");
        QTest::newRow("absolute-form https (not verified here: refused)")
            << QStringLiteral("GET https://127.0.0.1:%1/ HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
                   .arg(dead)
            << 400 << QStringLiteral("send CONNECT for https");
        QTest::newRow("absolute-form to a closed port")
            << QStringLiteral("GET http://127.0.0.1:%1/x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
                   .arg(dead)
            << 502 << QStringLiteral("127.0.0.1:%1").arg(dead);
    }
    void refusals() {
        QFETCH(QString, request);
        QFETCH(int, status);
        QFETCH(QString, says);
        auto reply = rawExchange(server_->port(), request.toLatin1(), 3000);
        QVERIFY2(reply.bytes.startsWith(QStringLiteral("HTTP/1.1 %1 ").arg(status).toLatin1()),
                 reply.bytes.left(300).constData());
        QVERIFY2(reply.bytes.contains(says.toLatin1()), reply.bytes.constData());
    }

    // Last (it stops the server): the session file holds the forwarded exchange and the tunnel,
    // the tunnel with the bytes each way.
    void recordsOfBothKinds() {
        // One more tunnel whose byte counts are known: 28 bytes up, then the answer.
        const QByteArray req = QStringLiteral("CONNECT 127.0.0.1:%1 HTTP/1.1\r\nHost: 127.0.0.1:%1\r\n\r\n")
                                   .arg(upstreamPort_)
                                   .toLatin1() +
                               "GET /status/204 HTTP/1.1\r\n\r\n";
        auto reply = rawExchange(server_->port(), req, 1500);
        QVERIFY2(reply.bytes.contains("HTTP/1.0 204") || reply.bytes.contains("HTTP/1.1 204"),
                 reply.bytes.constData());
        QCOMPARE(server_->terminate(), 0);
        const QString har = tmp_.filePath("out.har");
        auto r = runProcess(porticoBinary(), {"har", "export", tmp_.filePath("rec.db"), har});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QFile f(har);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const auto entries =
            QJsonDocument::fromJson(f.readAll()).object()["log"].toObject()["entries"].toArray();
        bool sawOrigin = false, sawTunnel = false;
        for (const auto& e : entries) {
            const auto request = e.toObject()["request"].toObject();
            const auto response = e.toObject()["response"].toObject();
            const QString url = request["url"].toString();
            if (request["method"] == "GET" && url.endsWith("/echo?x=1")) {
                sawOrigin = true;
                QCOMPARE(url, origin("/echo?x=1"));
                QCOMPARE(response["status"].toInt(), 200);
                // The credentials meant for the proxy are not kept.
                bool redacted = false;
                for (const auto& h : request["headers"].toArray())
                    if (h.toObject()["name"].toString().toLower() == "proxy-authorization")
                        redacted = h.toObject()["value"].toString() == "[redacted]";
                QVERIFY(redacted);
            }
            if (request["method"] == "CONNECT" && request["bodySize"].toInt() == 28) {
                sawTunnel = true;
                QCOMPARE(url, QStringLiteral("127.0.0.1:%1").arg(upstreamPort_));
                QCOMPARE(response["status"].toInt(), 200);
                QVERIFY2(response["bodySize"].toInt() > 20,
                         qPrintable(QString::number(response["bodySize"].toInt())));
            }
        }
        QVERIFY(sawOrigin);
        QVERIFY(sawTunnel);
    }
};

// TLS interception (forward_proxy.intercept): inside CONNECT the client gets a leaf from the local
// CA for the host it asked for; its requests (HTTP/1.1 or h2 by ALPN) go to the origin over
// Portico's own TLS, verified against upstream_cacert; tls_passthrough hosts are tunnelled.
class TestInterception : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    QProcess origin_, stranger_, plain_; // stranger_: a certificate nobody trusts; plain_: no TLS
    int originPort_ = 0, strangerPort_ = 0, plainPort_ = 0;
    std::unique_ptr<ServerProcess> h2Origin_; // Portico with tls: auto under its own CA: h2 by ALPN
    std::unique_ptr<ServerProcess> proxy_;
    QString proxyUrl_, ca_; // the proxy's CA certificate (what a client must trust)

    Reply viaProxy(const QString& url, QStringList extra = {}) {
        return curl(QStringList{"-x", proxyUrl_, "--cacert", ca_} + extra + QStringList{url});
    }

private slots:
    void initTestCase() {
        auto gen = makeSelfSignedCert(tmp_.filePath("origin.pem"), tmp_.filePath("origin.key"), "origin",
                                      "IP:127.0.0.1,DNS:localhost");
        QVERIFY2(gen.exitCode == 0, gen.err.constData());
        gen = makeSelfSignedCert(tmp_.filePath("stranger.pem"), tmp_.filePath("stranger.key"), "stranger",
                                 "IP:127.0.0.1");
        QVERIFY2(gen.exitCode == 0, gen.err.constData());
        originPort_ = startSupportScript(origin_, "upstream.py", tmp_.filePath("origin.port"),
                                         {"--tls", tmp_.filePath("origin.pem"), tmp_.filePath("origin.key")});
        strangerPort_ =
            startSupportScript(stranger_, "upstream.py", tmp_.filePath("stranger.port"),
                               {"--tls", tmp_.filePath("stranger.pem"), tmp_.filePath("stranger.key")});
        plainPort_ = startSupportScript(plain_, "upstream.py", tmp_.filePath("plain.port"));
        QVERIFY(originPort_ && strangerPort_ && plainPort_);
        // An h2 origin: Portico under its own CA (another data dir).
        h2Origin_ = startTlsAutoOrigin(tmp_.path());
        QVERIFY2(h2Origin_->waitReady(), h2Origin_->output().constData());
        // upstream_cacert: the python origin's certificate and the h2 origin's CA.
        QVERIFY(writePemBundle(tmp_.filePath("origins.pem"),
                               {tmp_.filePath("origin.pem"), tmp_.filePath("origin-data/ca/ca.crt")}));
        QFile cfg(tmp_.filePath("proxy.yaml"));
        QVERIFY(cfg.open(QIODevice::WriteOnly));
        // One worker: the route's upstream connection and the interception's share one pool set.
        // /stranger/* reaches the stranger without verifying it (a route's default).
        cfg.write(QStringLiteral(R"(listen:
  - address: 127.0.0.1:0
    forward_proxy: {intercept: true, upstream_cacert: origins.pem, tls_passthrough: ["LOCAL*"]}
workers: 1
vhosts:
  - root: site
    routes:
      - path: /stranger/*
        proxy: {upstream: https://127.0.0.1:%1, strip_prefix: /stranger}
)")
                      .arg(strangerPort_)
                      .toUtf8());
        cfg.close();
        proxy_ = std::make_unique<ServerProcess>(
            QStringList{"--config", tmp_.filePath("proxy.yaml"), "--record", tmp_.filePath("rec.db")},
            QStringList{"PORTICO_DATA_DIR=" + tmp_.filePath("proxy-data")});
        QVERIFY2(proxy_->waitReady(), proxy_->output().constData());
        proxyUrl_ = proxy_->baseUrl();
        ca_ = tmp_.filePath("proxy-data/ca/ca.crt");
        QVERIFY(QFile::exists(ca_));
    }
    void cleanupTestCase() {
        for (QProcess* p : {&origin_, &stranger_, &plain_}) {
            p->kill();
            p->waitForFinished();
        }
    }

    // The client trusts only the proxy's CA, and gets the origin's answer: the request was
    // decrypted, forwarded over TLS the proxy verified, and answered as the origin answered (its
    // Server and Date; no X-Forwarded-*). HTTP/1.1 and h2 between client and proxy alike.
    void interceptsForAClientThatTrustsTheCa_data() {
        QTest::addColumn<QString>("mode");
        QTest::newRow("http/1.1") << "--http1.1";
        QTest::newRow("h2") << "--http2";
    }
    void interceptsForAClientThatTrustsTheCa() {
        QFETCH(QString, mode);
        auto r = viaProxy(QStringLiteral("https://127.0.0.1:%1/echo?q=%2").arg(originPort_).arg(mode),
                          {mode, "-H", "X-Custom: yes"});
        QVERIFY2(r.status == 200, r.err.constData());
        const auto echo = QJsonDocument::fromJson(r.body).object();
        QCOMPARE(echo.value("path").toString(), QStringLiteral("/echo?q=%1").arg(mode));
        const auto h = receivedHeaders(echo);
        QCOMPARE(h.value("x-custom"), QStringList{"yes"});
        QVERIFY(!h.contains("x-forwarded-for"));
        QVERIFY(!h.contains("via"));
        const QStringList server = headerValues(r.headers, "server");
        QCOMPARE(server.size(), 1);
        QVERIFY2(server.front().contains("Python"), qPrintable(server.front()));
        QCOMPARE(headerValues(r.headers, "date").size(), 1);
        QVERIFY2(
            r.headers.startsWith(mode == "--http2" ? "HTTP/1.1 200 Connection established" : "HTTP/1.1 200"),
            r.headers.constData());
        QVERIFY(r.headers.contains(mode == "--http2" ? "\nHTTP/2 200" : "\nHTTP/1.1 200"));
    }

    // An origin that speaks h2 (Portico with its own CA, trusted through upstream_cacert); a large
    // body both ways.
    void h2OriginAndBodies() {
        auto r = viaProxy(QStringLiteral("https://127.0.0.1:%1/index.html").arg(h2Origin_->tlsPort()),
                          {"--http2"});
        QVERIFY2(r.status == 200, r.err.constData());
        QCOMPARE(r.body, QByteArray("from the h2 origin\n"));
        r = viaProxy(QStringLiteral("https://127.0.0.1:%1/big?n=2000000").arg(originPort_), {"--http2"});
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body.size(), 2000000);
        QByteArray upload(1024 * 1024 + 3, 'u');
        QFile f(tmp_.filePath("up.bin"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(upload);
        f.close();
        r = viaProxy(QStringLiteral("https://127.0.0.1:%1/upload").arg(originPort_),
                     {"--http2", "--data-binary", "@" + tmp_.filePath("up.bin")});
        QCOMPARE(r.status, 200);
        QCOMPARE(qint64(QJsonDocument::fromJson(r.body).object().value("bytes").toDouble()),
                 qint64(upload.size()));
    }

    // An origin whose certificate the proxy cannot verify: 502 naming the reason, not the
    // origin's page.
    void unverifiedOriginIs502() {
        auto r = viaProxy(QStringLiteral("https://127.0.0.1:%1/echo").arg(strangerPort_));
        QCOMPARE(r.status, 502);
        QVERIFY2(r.body.contains("certificate"), r.body.constData());
    }

    // A route's connection to the stranger (made without verification, the route's default, and
    // pooled for keep-alive) is never lent to an intercepted request for the same address: that
    // one verifies, and fails. Upstream pools are keyed by the TLS context as well as host:port.
    void aRoutesUnverifiedConnectionIsNotReusedByInterception() {
        auto routed = curl({proxyUrl_ + "/stranger/echo"});
        QVERIFY2(routed.status == 200, routed.err.constData() + routed.body);
        auto r = viaProxy(QStringLiteral("https://127.0.0.1:%1/echo").arg(strangerPort_));
        QCOMPARE(r.status, 502);
        QVERIFY2(r.body.contains("certificate"), r.body.constData());
        routed = curl({proxyUrl_ + "/stranger/echo"}); // the route's pool still serves the route
        QCOMPARE(routed.status, 200);
    }

    // A tls_passthrough host ("LOCAL*" matches "localhost", case-insensitive) is tunnelled: the
    // client sees the origin's own certificate (trusting only the origin's works, only the
    // proxy's CA does not).
    void passthroughHostsAreTunnelled() {
        const QString url = QStringLiteral("https://localhost:%1/echo").arg(originPort_);
        auto r = curl({"-x", proxyUrl_, "--cacert", tmp_.filePath("origin.pem"), url});
        QVERIFY2(r.status == 200, r.err.constData());
        r = viaProxy(url);
        QCOMPARE(r.exitCode, 60);
    }

    // A client that refuses the proxy's certificate (it trusts only the origin's: a pinned app)
    // fails once; the proxy notes the TLS alert and passes that origin's next tunnels through
    // unread, so the client works from then on. Other origins are still intercepted.
    void aClientThatRefusesTheCaIsPassedThrough() {
        const QString pinned = QStringLiteral("https://127.0.0.1:%1/echo?pinned=1").arg(strangerPort_);
        const QStringList trustsOnlyTheOrigin{"-x", proxyUrl_, "--cacert", tmp_.filePath("stranger.pem")};
        QCOMPARE(curl(trustsOnlyTheOrigin + QStringList{pinned}).exitCode, 60); // intercepted: refused
        auto r = curl(trustsOnlyTheOrigin + QStringList{pinned});
        QVERIFY2(r.status == 200, r.err.constData());
        QCOMPARE(QJsonDocument::fromJson(r.body).object().value("path").toString(),
                 QString("/echo?pinned=1"));
        QTRY_VERIFY_WITH_TIMEOUT(proxy_->output().contains("refused the local CA's certificate"), 5000);
        // Another origin on the same host is still intercepted: only the proxy's CA works there.
        const QString other = QStringLiteral("https://127.0.0.1:%1/echo").arg(originPort_);
        QCOMPARE(viaProxy(other).status, 200);
    }

    // What a client sends inside CONNECT that is not TLS (plain HTTP, a browser's ws://) goes to
    // the host unread, as through a tunnel that is not intercepted: with the first bytes in the
    // CONNECT's packet, and sent after the 200.
    void plainBytesInsideAnInterceptedTunnel() {
        auto r =
            curl({"-p", "-x", proxyUrl_, QStringLiteral("http://127.0.0.1:%1/echo?plain=1").arg(plainPort_)});
        QCOMPARE(r.status, 200);
        QCOMPARE(QJsonDocument::fromJson(r.body).object().value("path").toString(), QString("/echo?plain=1"));
        const QByteArray req =
            QStringLiteral("CONNECT 127.0.0.1:%1 HTTP/1.1\r\nHost: a\r\n\r\n").arg(plainPort_).toLatin1() +
            "GET /echo?early=1 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
        auto reply = rawExchange(proxy_->port(), req, 3000);
        QVERIFY2(reply.bytes.startsWith("HTTP/1.1 200 Connection established\r\n\r\n"),
                 reply.bytes.constData());
        QVERIFY2(reply.bytes.contains("\"/echo?early=1\""), reply.bytes.constData());
        // Bytes to a TLS origin that are not TLS: the origin's problem; the proxy goes on.
        const QByteArray garbage =
            QStringLiteral("CONNECT 127.0.0.1:%1 HTTP/1.1\r\nHost: a\r\n\r\n").arg(originPort_).toLatin1() +
            "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
        reply = rawExchange(proxy_->port(), garbage, 3000);
        QVERIFY2(reply.bytes.startsWith("HTTP/1.1 200 Connection established\r\n\r\n"),
                 reply.bytes.constData());
        QCOMPARE(viaProxy(QStringLiteral("https://127.0.0.1:%1/echo").arg(originPort_)).status, 200);
    }

    // Last (it stops the proxy): the records hold the decrypted exchanges as https URLs.
    void recordsHoldTheDecryptedExchanges() {
        QCOMPARE(proxy_->terminate(), 0);
        const QString har = tmp_.filePath("out.har");
        auto r = runProcess(porticoBinary(), {"har", "export", tmp_.filePath("rec.db"), har});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QFile f(har);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const auto entries =
            QJsonDocument::fromJson(f.readAll()).object()["log"].toObject()["entries"].toArray();
        QStringList urls;
        for (const auto& e : entries) {
            const auto response = e.toObject()["response"].toObject();
            const QString url = e.toObject()["request"].toObject()["url"].toString();
            urls << url + " " + QString::number(response["status"].toInt());
            if (!url.contains("/echo?q=")) continue;
            // The record shows the head the client got: the origin's one Date and its Server.
            int dates = 0;
            QString server;
            for (const auto& h : response["headers"].toArray()) {
                const QString name = h.toObject()["name"].toString().toLower();
                dates += name == "date";
                if (name == "server") server = h.toObject()["value"].toString();
            }
            QVERIFY2(dates == 1, qPrintable(url));
            QVERIFY2(server.contains("Python"), qPrintable(url + " " + server));
        }
        for (const char* mode : {"--http1.1", "--http2"})
            QVERIFY2(urls.contains(
                         QStringLiteral("https://127.0.0.1:%1/echo?q=%2 200").arg(originPort_).arg(mode)),
                     qPrintable(urls.join('\n')));
        QVERIFY2(urls.contains(QStringLiteral("https://127.0.0.1:%1/echo 502").arg(strangerPort_)),
                 qPrintable(urls.join('\n')));
    }
};

// `portico proxy`: the command's listener, its banner and its page for requests to itself.
class TestProxyCommand : public QObject {
    Q_OBJECT
private slots:
    void startsAndSaysHowToUseIt() {
        QProcess upstream;
        QTemporaryDir tmp;
        const int port = startSupportScript(upstream, "upstream.py", tmp.filePath("up.port"));
        QVERIFY(port);
        auto env = QProcessEnvironment::systemEnvironment();
        env.insert("PORTICO_DATA_DIR", tmp.filePath("data"));
        auto proxy = ServerProcess::exactly({"proxy", "--port", "0", "-q"}, env, tmp.path());
        QVERIFY2(proxy->waitReady(), proxy->output().constData());
        QVERIFY2(proxy->output().contains("export http_proxy=http://127.0.0.1:"),
                 proxy->output().constData());
        const QString url = proxy->baseUrl();
        auto r = curl({url + "/"});
        QCOMPARE(r.status, 200);
        QVERIFY2(r.body.contains("curl -x " + url.toLatin1()), r.body.constData());
        r = curl({"-x", url, QStringLiteral("http://127.0.0.1:%1/echo").arg(port)});
        QCOMPARE(r.status, 200);
        QCOMPARE(QJsonDocument::fromJson(r.body).object().value("path").toString(), QString("/echo"));
        // A body over limits.max_body_bytes (10 MiB by default) is refused; --max-body-bytes raises it.
        QFile big(tmp.filePath("11m.bin"));
        QVERIFY(big.open(QIODevice::WriteOnly));
        big.write(QByteArray(11 * 1000 * 1000, 'b'));
        big.close();
        const QString upload = QStringLiteral("http://127.0.0.1:%1/upload").arg(port);
        QCOMPARE(curl({"-x", url, "--data-binary", "@" + big.fileName(), upload}).status, 413);
        QCOMPARE(proxy->terminate(), 0);
        proxy = ServerProcess::exactly({"proxy", "--port", "0", "-q", "--max-body-bytes", "20MiB"}, env,
                                       tmp.path());
        QVERIFY2(proxy->waitReady(), proxy->output().constData());
        r = curl({"-x", proxy->baseUrl(), "--data-binary", "@" + big.fileName(), upload});
        QCOMPARE(r.status, 200);
        QCOMPARE(qint64(QJsonDocument::fromJson(r.body).object().value("bytes").toDouble()),
                 qint64(11 * 1000 * 1000));
        QCOMPARE(proxy->terminate(), 0);
        upstream.kill();
        upstream.waitForFinished();
    }

    // `portico proxy env`: after eval-ing its exports, curl and Python's urllib reach an https
    // origin through the intercepting proxy with no flag of their own (HTTPS_PROXY, and the
    // bundle of system roots plus the local CA in CURL_CA_BUNDLE / SSL_CERT_FILE).
    void envExportsMakeClientsUseIt() {
        QTemporaryDir tmp;
        auto gen = makeSelfSignedCert(tmp.filePath("origin.pem"), tmp.filePath("origin.key"), "origin",
                                      "IP:127.0.0.1");
        QVERIFY2(gen.exitCode == 0, gen.err.constData());
        QProcess origin;
        const int originPort =
            startSupportScript(origin, "upstream.py", tmp.filePath("origin.port"),
                               {"--tls", tmp.filePath("origin.pem"), tmp.filePath("origin.key")});
        QVERIFY(originPort);
        auto env = QProcessEnvironment::systemEnvironment();
        env.insert("PORTICO_DATA_DIR", tmp.filePath("data"));
        auto proxy = ServerProcess::exactly(
            {"proxy", "--port", "0", "-q", "--upstream-cacert", tmp.filePath("origin.pem")}, env, tmp.path());
        QVERIFY2(proxy->waitReady(), proxy->output().constData());
        const QString port = QString::number(proxy->port());
        QProcess p;
        p.setProcessEnvironment(env);
        p.start(porticoBinary(), {"proxy", "env", "--port", port});
        QVERIFY(p.waitForFinished(20000));
        const QByteArray exports = p.readAllStandardOutput();
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        QVERIFY2(exports.contains("export HTTP_PROXY=http://127.0.0.1:" + port.toLatin1()),
                 exports.constData());
        QVERIFY(exports.contains("REQUESTS_CA_BUNDLE="));
        QVERIFY(exports.contains("NODE_EXTRA_CA_CERTS="));
        QFile bundle(tmp.filePath("data/ca/bundle.pem"));
        QVERIFY(bundle.open(QIODevice::ReadOnly));
        const QByteArray pem = bundle.readAll();
        QFile caFile(tmp.filePath("data/ca/ca.crt"));
        QVERIFY(caFile.open(QIODevice::ReadOnly));
        QVERIFY(pem.endsWith(caFile.readAll()));
        const QString script =
            QStringLiteral("eval \"$('%1' proxy env --port %2)\" && "
                           "curl -sS --max-time 20 https://127.0.0.1:%3/echo?from=curl && echo && "
                           "/usr/bin/python3 -c \"import urllib.request; print(urllib.request.urlopen("
                           "'https://127.0.0.1:%3/echo?from=python', timeout=20).read().decode())\"")
                .arg(porticoBinary(), port)
                .arg(originPort);
        p.start("bash", {"-c", script});
        QVERIFY(p.waitForFinished(60000));
        const QByteArray out = p.readAllStandardOutput();
        QVERIFY2(p.exitCode() == 0, (out + p.readAllStandardError()).constData());
        QVERIFY2(out.contains("\"/echo?from=curl\"") && out.contains("\"/echo?from=python\""),
                 out.constData());
        QCOMPARE(proxy->terminate(), 0);
        origin.kill();
        origin.waitForFinished();
    }
};

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    int status = 0;
    {
        TestForwardProxy t;
        status |= QTest::qExec(&t, argc, argv);
    }
    {
        TestInterception t;
        status |= QTest::qExec(&t, argc, argv);
    }
    {
        TestProxyCommand t;
        status |= QTest::qExec(&t, argc, argv);
    }
    return status;
}

#include "tst_forward_proxy.moc"
