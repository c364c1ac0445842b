// Replay over every transport Portico serves: an in-process engine with a cleartext listener (HTTP/1.1
// and h2c) and a `tls: auto` listener (ALPN h2 / http/1.1, leaf from a fresh local CA). The same
// recorded request is resent over HTTP/1.1, h2c with prior knowledge, h2 and HTTP/1.1 over TLS; the
// answers agree; TLS verification is off for loopback by default and on with the local CA; bad
// targets and WebSocket records are refused with clear errors; `portico replay --h2` end to end.
// Against a TLS server without ALPN (tests/support/upstream.py, as many dev backends): auto goes on
// as HTTP/1.1 on the connection it made, --h2 is refused, the timeout ends a silent server.
#include "test_support.h"

#include <portico/capture/har.h>
#include <portico/capture/replay.h>
#include <portico/engine/engine.h>
#include <portico/validate/load.h>

#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace portico;
using capture::ReplayProtocol;

class TestCaptureReplay : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    engine::Engine engine_;
    std::uint16_t plain_ = 0, tls_ = 0;

    capture::Exchange recorded(const std::string& method, const std::string& target,
                               const std::string& body = {}) {
        capture::Exchange e;
        e.method = method;
        e.scheme = "http";
        e.authority = "127.0.0.1:" + std::to_string(plain_);
        e.target = target;
        e.requestHeaders = {{"Host", e.authority}, {"Accept", "*/*"}, {"X-Test", "replay"}};
        e.requestBody = body;
        e.requestBodySize = body.size();
        return e;
    }

    capture::ReplayResult send(const capture::Exchange& e, const QString& base, ReplayProtocol p,
                               bool verify = false, const std::string& ca = {}) {
        capture::ReplayOptions o;
        o.baseUrl = base.toStdString();
        o.protocol = p;
        o.verifyTls = verify;
        o.caFile = ca;
        o.timeout = std::chrono::milliseconds(5000);
        return capture::replay(e, o);
    }

    QString http() const { return QString("http://127.0.0.1:%1").arg(plain_); }
    QString https() const { return QString("https://127.0.0.1:%1").arg(tls_); }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        qputenv("PORTICO_DATA_DIR", dir_.filePath("data").toUtf8());
        const std::string yaml =
            "listen:\n  - 127.0.0.1:0\n  - {address: 127.0.0.1:0, tls: auto}\n"
            "vhosts:\n  - names: [localhost, 127.0.0.1]\n    default: true\n    routes:\n"
            "      - path: /api/:id\n"
            "        respond: {status: 201, body: \"id={{param.id}} {{header.x-test}}\", "
            "headers: {Content-Type: text/plain}}\n"
            "      - path: /echo\n        methods: [POST]\n"
            "        respond: {body: \"got {{body}}\"}\n";
        auto r = config::loadConfigText(yaml, "replay.yaml", dir_.path().toStdString());
        if (!r.ok()) qWarning() << r.errors.front().toString().c_str();
        QVERIFY(r.ok());
        std::string error;
        QVERIFY2(engine_.start(r.config, error), error.c_str());
        for (const auto& ep : engine_.endpoints())
            (ep.tls ? tls_ : plain_) = ep.port;
        QVERIFY(plain_ && tls_);
    }

    void everyTransportGivesTheSameAnswer() {
        const auto original = recorded("GET", "/api/7");
        auto h1 = send(original, http(), ReplayProtocol::Auto);
        QVERIFY2(h1.ok(), h1.error.c_str());
        QCOMPARE(h1.exchange.protocol, capture::Protocol::Http1);
        QCOMPARE(h1.exchange.status, 201);
        QCOMPARE(h1.exchange.responseBody, std::string("id=7 replay"));

        struct Case {
            const char* name;
            QString base;
            ReplayProtocol protocol;
            capture::Protocol expect;
            const char* alpn;
        };
        const Case cases[] = {
            {"h2c prior knowledge", http(), ReplayProtocol::H2, capture::Protocol::Http2, ""},
            {"https auto → h2", https(), ReplayProtocol::Auto, capture::Protocol::Http2, "h2"},
            {"https h2", https(), ReplayProtocol::H2, capture::Protocol::Http2, "h2"},
            {"https http/1.1", https(), ReplayProtocol::Http1, capture::Protocol::Http1, "http/1.1"},
        };
        for (const auto& c : cases) {
            auto r = send(h1.exchange, c.base, c.protocol);
            QVERIFY2(r.ok(), (std::string(c.name) + ": " + r.error).c_str());
            const auto& e = r.exchange;
            QVERIFY2(e.protocol == c.expect, c.name);
            QCOMPARE(e.httpVersion, std::uint8_t(c.expect == capture::Protocol::Http2 ? 20 : 11));
            QCOMPARE(e.alpn, std::string(c.alpn));
            QCOMPARE(e.status, 201);
            QCOMPARE(e.responseBody, std::string("id=7 replay"));
            QCOMPARE(e.responseBodySize, std::uint64_t(11));
            QCOMPARE(std::string(e.responseHeader("content-type")), std::string("text/plain"));
            // Same answer as over HTTP/1.1: field names compare case-insensitively.
            std::string diffs = c.name;
            for (const auto& d : r.differences)
                diffs += "; " + d.what + ": " + d.before + " -> " + d.after;
            QVERIFY2(r.differences.empty(), diffs.c_str());
            const bool tls = c.base.startsWith("https");
            QCOMPARE(e.scheme, std::string(tls ? "https" : "http"));
            QCOMPARE(!e.tlsVersion.empty(), tls);
            QCOMPARE(e.at(capture::Phase::TlsDone) >= 0, tls);
            for (auto p : {capture::Phase::RequestHeaders, capture::Phase::RequestBodyDone,
                           capture::Phase::ResponseFirstByte, capture::Phase::ResponseDone})
                QVERIFY2(e.at(p) >= 0, c.name);
            QVERIFY(e.at(capture::Phase::ResponseDone) >= e.at(capture::Phase::ResponseFirstByte));
        }
    }

    void bodiesGoOverHttp2() {
        auto r = send(recorded("POST", "/echo", std::string("a\0b", 3)), https(), ReplayProtocol::H2);
        QVERIFY2(r.ok(), r.error.c_str());
        QCOMPARE(r.exchange.status, 200);
        QCOMPARE(r.exchange.responseBody, std::string("got a\0b", 7));
        // A body larger than one DATA frame and the initial window.
        const std::string big(200 * 1024, 'x');
        r = send(recorded("POST", "/echo", big), http(), ReplayProtocol::H2);
        QVERIFY2(r.ok(), r.error.c_str());
        QCOMPARE(r.exchange.responseBodySize, std::uint64_t(big.size() + 4));
    }

    void certificateVerification() {
        const auto original = recorded("GET", "/api/1");
        // Loopback dev targets are not verified by default; with verification and no trust: refused.
        auto r = send(original, https(), ReplayProtocol::Auto, true);
        QVERIFY(!r.ok());
        QVERIFY2(r.error.find("certificate verification") != std::string::npos, r.error.c_str());
        // Trusting the local CA (what `portico cert export` writes): verified, host 127.0.0.1 matches.
        const std::string ca = dir_.filePath("data/ca/ca.crt").toStdString();
        QVERIFY(QFile::exists(QString::fromStdString(ca)));
        r = send(original, https(), ReplayProtocol::Auto, true, ca);
        QVERIFY2(r.ok(), r.error.c_str());
        QCOMPARE(r.exchange.status, 201);
        r = send(original, https(), ReplayProtocol::Auto, true, dir_.filePath("missing.pem").toStdString());
        QVERIFY(!r.ok());
        QVERIFY2(r.error.find("cannot load CA certificates") != std::string::npos, r.error.c_str());
    }

    void badTargetsAreRefused() {
        auto original = recorded("GET", "/api/1");
        auto r = send(original, "ftp://127.0.0.1:21", ReplayProtocol::Auto);
        QVERIFY2(r.error.find("only http:// and https://") != std::string::npos, r.error.c_str());
        r = send(original, "https://", ReplayProtocol::Auto);
        QVERIFY(!r.ok());
        // h2 asked of a server that only speaks HTTP/1.1 on TLS is impossible here; h2c against a
        // closed port fails at connect.
        r = send(original, "http://127.0.0.1:1", ReplayProtocol::H2);
        QVERIFY2(r.error.find("connect") != std::string::npos, r.error.c_str());
        // TLS asked of a cleartext port: a handshake error, no crash.
        r = send(original, QString("https://127.0.0.1:%1").arg(plain_), ReplayProtocol::Auto);
        QVERIFY2(r.error.find("TLS handshake") != std::string::npos, r.error.c_str());
        original.protocol = capture::Protocol::WebSocket;
        r = send(original, http(), ReplayProtocol::Auto);
        QVERIFY2(r.error.find("WebSocket session cannot be replayed") != std::string::npos, r.error.c_str());
    }

    void cliReplaysOverH2() {
        auto h1 = send(recorded("GET", "/api/9"), http(), ReplayProtocol::Http1);
        QVERIFY2(h1.ok(), h1.error.c_str());
        h1.exchange.id = 1;
        const QString har = dir_.filePath("one.har");
        QFile f(har);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray::fromStdString(capture::toHar({h1.exchange})));
        f.close();
        for (const QString& base : {https(), http()}) {
            auto r = test::runProcess(test::porticoBinary(), {"replay", har, "--target", base, "--h2"});
            QVERIFY2(r.exitCode == 0, r.out + r.err);
            QVERIFY2(r.out.contains("201 -> 201") && r.out.contains("1 replayed: 1 same"), r.out.constData());
        }
        auto r = test::runProcess(test::porticoBinary(), {"replay", har, "--target", https(), "--verify"});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.out.contains("certificate verification"), r.out.constData());
        r = test::runProcess(test::porticoBinary(), {"replay", har, "--target", https(), "--cacert",
                                                     dir_.filePath("data/ca/ca.crt")});
        QVERIFY2(r.exitCode == 0, r.out + r.err);
        r = test::runProcess(test::porticoBinary(), {"replay", har, "--h2", "--http1"});
        QCOMPARE(r.exitCode, 2);
    }

    void tlsServerWithoutAlpn() {
        auto gen = test::makeSelfSignedCert(dir_.filePath("py.crt"), dir_.filePath("py.key"), "127.0.0.1");
        QVERIFY2(gen.exitCode == 0, gen.err.constData());
        const QString portFile = dir_.filePath("py.port");
        QProcess py;
        const int port = test::startSupportScript(
            py, "upstream.py", portFile, {"--tls", dir_.filePath("py.crt"), dir_.filePath("py.key")});
        QVERIFY2(port, py.readAllStandardError().constData());
        const QString base = QString("https://127.0.0.1:%1").arg(port);

        // Auto offers h2 and http/1.1; the server selects nothing, so HTTP/1.1 it is, on the
        // connection the handshake was made on (the upstream's first), with Connection: close.
        for (int n = 1; n <= 2; ++n) {
            auto r = send(recorded("POST", "/echo?n=1", "abc"), base, ReplayProtocol::Auto);
            QVERIFY2(r.ok(), r.error.c_str());
            const auto& e = r.exchange;
            QCOMPARE(e.protocol, capture::Protocol::Http1);
            QCOMPARE(e.httpVersion, std::uint8_t(11));
            QCOMPARE(e.status, 200);
            QVERIFY2(e.tlsVersion.starts_with("TLSv1."), e.tlsVersion.c_str());
            QVERIFY(e.at(capture::Phase::TlsDone) > 0);
            QVERIFY(e.at(capture::Phase::ResponseFirstByte) >= e.at(capture::Phase::RequestHeaders));
            const auto echo = QJsonDocument::fromJson(QByteArray::fromStdString(e.responseBody)).object();
            QCOMPARE(echo["connection_id"].toInt(), n); // one connection per replay, none wasted
            QCOMPARE(echo["body"].toString(), QString("abc"));
            QString connection;
            for (const auto& h : echo["headers"].toArray())
                if (h.toArray()[0].toString().compare("connection", Qt::CaseInsensitive) == 0)
                    connection = h.toArray()[1].toString();
            QCOMPARE(connection, QString("close"));
            // Every response field as received, Content-Length included.
            QCOMPARE(std::string(e.responseHeader("content-length")), std::to_string(e.responseBodySize));
        }
        // --h2: a server that does not select h2 is an error, not a quiet fallback.
        auto r = send(recorded("GET", "/echo"), base, ReplayProtocol::H2);
        QVERIFY(!r.ok());
        QVERIFY2(r.error.find("did not select h2") != std::string::npos, r.error.c_str());
        // A server that does not answer within the timeout: the replay ends at it.
        capture::ReplayOptions o;
        o.baseUrl = base.toStdString();
        o.timeout = std::chrono::milliseconds(400);
        QElapsedTimer t;
        t.start();
        r = capture::replay(recorded("GET", "/slow?ms=5000"), o);
        QVERIFY(!r.ok());
        QVERIFY2(r.error.find("timed out") != std::string::npos ||
                     r.error.find("timeout") != std::string::npos,
                 r.error.c_str());
        QVERIFY2(t.elapsed() < 4000, QByteArray::number(t.elapsed()).constData());
        py.kill();
        py.waitForFinished();
    }

    void cleanupTestCase() { engine_.stop(); }
};

QTEST_GUILESS_MAIN(TestCaptureReplay)
#include "tst_capture_replay.moc"
