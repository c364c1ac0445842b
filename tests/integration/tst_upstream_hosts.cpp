// `hosts:` and `--resolve NAME=ADDR`: upstream names Portico connects to at fixed addresses — a
// forward proxy's origins (absolute-form, CONNECT tunnels, intercepted https with the certificate
// checked against the name) and a reverse proxy's `proxy:` upstreams. The names used here are in
// no /etc/hosts and are never looked up: every one the tests send is mapped (a name the map does
// not hold would go to the resolver, which no test may query).
#include "test_support.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace portico::test;

namespace {

// The Host field upstream.py's /echo received.
QString receivedHost(const QByteArray& body) {
    for (const auto& pair : QJsonDocument::fromJson(body).object().value("headers").toArray())
        if (pair.toArray().at(0).toString().toLower() == "host") return pair.toArray().at(1).toString();
    return {};
}

} // namespace

class TestUpstreamHosts : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    QProcess plain_, tls_;
    int plainPort_ = 0, tlsPort_ = 0;
    std::unique_ptr<ServerProcess> proxy_;
    QString proxyUrl_, ca_;

private slots:
    void initTestCase() {
        plainPort_ = startSupportScript(plain_, "upstream.py", tmp_.filePath("plain.port"));
        // The origin's certificate names only api.example.test and pass.example.test: no IP address,
        // so a check against 127.0.0.1 would fail.
        auto gen = makeSelfSignedCert(tmp_.filePath("origin.pem"), tmp_.filePath("origin.key"),
                                      "api.example.test", "DNS:api.example.test,DNS:pass.example.test");
        QVERIFY2(gen.exitCode == 0, gen.err.constData());
        tlsPort_ = startSupportScript(tls_, "upstream.py", tmp_.filePath("tls.port"),
                                      {"--tls", tmp_.filePath("origin.pem"), tmp_.filePath("origin.key")});
        QVERIFY(plainPort_ && tlsPort_);
        QFile cfg(tmp_.filePath("proxy.yaml"));
        QVERIFY(cfg.open(QIODevice::WriteOnly));
        cfg.write(
            QStringLiteral("hosts:\n"
                           "  api.example.test: 127.0.0.1\n"
                           "  pass.example.test: 127.0.0.1\n"
                           "  other.example.test: 127.0.0.1\n"
                           "  \"*.wild.test\": \"[127.0.0.1]\"\n"
                           "listen:\n"
                           "  - address: 127.0.0.1:0\n"
                           "    forward_proxy: {intercept: true, upstream_cacert: origin.pem, "
                           "tls_passthrough: [pass.example.test]}\n"
                           "vhosts:\n"
                           "  - routes:\n"
                           "      - path: /rp/*\n"
                           "        proxy: {upstream: \"http://api.example.test:%1\", strip_prefix: /rp}\n")
                .arg(plainPort_)
                .toUtf8());
        cfg.close();
        proxy_ = std::make_unique<ServerProcess>(QStringList{"--config", cfg.fileName()},
                                                 QStringList{"PORTICO_DATA_DIR=" + tmp_.filePath("data")});
        QVERIFY2(proxy_->waitReady(), proxy_->output().constData());
        proxyUrl_ = proxy_->baseUrl();
        ca_ = tmp_.filePath("data/ca/ca.crt");
    }
    void cleanupTestCase() {
        for (QProcess* p : {&plain_, &tls_}) {
            p->kill();
            p->waitForFinished();
        }
    }

    // An absolute-form request to a mapped name reaches the local origin, with the name as Host.
    void absoluteFormToAMappedName() {
        auto r = curlFetch(
            {"-x", proxyUrl_, QStringLiteral("http://api.example.test:%1/echo?n=1").arg(plainPort_)});
        QVERIFY2(r.status == 200, r.err + r.body);
        QCOMPARE(receivedHost(r.body), QStringLiteral("api.example.test:%1").arg(plainPort_));
        r = curlFetch({"-x", proxyUrl_, QStringLiteral("http://deep.a.wild.test:%1/echo").arg(plainPort_)});
        QVERIFY2(r.status == 200, r.err + r.body);
        QCOMPARE(receivedHost(r.body), QStringLiteral("deep.a.wild.test:%1").arg(plainPort_));
    }

    // CONNECT to a mapped name: a tunnel passed unread (tls_passthrough: the client checks the
    // origin's certificate for the name itself), and plain HTTP inside an intercepted CONNECT.
    void connectTunnelsToAMappedName() {
        auto r = curlFetch({"-x", proxyUrl_, "--cacert", tmp_.filePath("origin.pem"),
                            QStringLiteral("https://pass.example.test:%1/echo?t=1").arg(tlsPort_)});
        QVERIFY2(r.status == 200, r.err + r.body);
        QCOMPARE(QJsonDocument::fromJson(r.body).object().value("path").toString(), QString("/echo?t=1"));
        r = curlFetch(
            {"-p", "-x", proxyUrl_, QStringLiteral("http://api.example.test:%1/echo?t=2").arg(plainPort_)});
        QVERIFY2(r.status == 200, r.err + r.body);
        QCOMPARE(QJsonDocument::fromJson(r.body).object().value("path").toString(), QString("/echo?t=2"));
    }

    // Intercepted: the proxy connects to 127.0.0.1 and verifies the origin's certificate against
    // the name (SNI and hostname check), which the certificate holds; a name it does not hold is a
    // 502 even though the address is the same.
    void interceptedOriginIsVerifiedByName() {
        for (const char* mode : {"--http1.1", "--http2"}) {
            auto r = curlFetch({"-x", proxyUrl_, "--cacert", ca_, mode,
                                QStringLiteral("https://api.example.test:%1/echo?i=1").arg(tlsPort_)});
            QVERIFY2(r.status == 200, r.err + r.body);
            QCOMPARE(receivedHost(r.body), QStringLiteral("api.example.test:%1").arg(tlsPort_));
        }
        auto r = curlFetch({"-x", proxyUrl_, "--cacert", ca_,
                            QStringLiteral("https://other.example.test:%1/echo").arg(tlsPort_)});
        QCOMPARE(r.status, 502);
        QVERIFY2(r.body.contains("certificate"), r.body.constData());
    }

    // A `proxy:` route's upstream named by a mapped name.
    void reverseProxyUpstream() {
        auto r = curlFetch({proxyUrl_ + "/rp/echo?rp=1"});
        QVERIFY2(r.status == 200, r.err + r.body);
        QCOMPARE(QJsonDocument::fromJson(r.body).object().value("path").toString(), QString("/echo?rp=1"));
    }

    // A name mapped to the proxy's own address and port is a loop.
    void aMappedNameCanBeALoop() {
        auto r =
            curlFetch({"-x", proxyUrl_, QStringLiteral("http://api.example.test:%1/").arg(proxy_->port())});
        QCOMPARE(r.status, 508);
    }

    // `portico proxy --resolve NAME=ADDR` and `portico serve --resolve`; curl's NAME:PORT:ADDR
    // form is a usage error that says so.
    void commandLine() {
        auto env = QProcessEnvironment::systemEnvironment();
        env.insert("PORTICO_DATA_DIR", tmp_.filePath("data"));
        auto proxy = ServerProcess::exactly(
            {"proxy", "--port", "0", "-q", "--no-intercept", "--resolve", "cli.example.test=127.0.0.1"}, env,
            tmp_.path());
        QVERIFY2(proxy->waitReady(), proxy->output().constData());
        auto r = curlFetch({"-x", proxy->baseUrl(),
                            QStringLiteral("http://cli.example.test:%1/echo?cli=1").arg(plainPort_)});
        QVERIFY2(r.status == 200, r.err + r.body);
        QCOMPARE(receivedHost(r.body), QStringLiteral("cli.example.test:%1").arg(plainPort_));
        QCOMPARE(proxy->terminate(), 0);

        QFile cfg(tmp_.filePath("serve.yaml"));
        QVERIFY(cfg.open(QIODevice::WriteOnly));
        cfg.write(QStringLiteral("listen: [127.0.0.1:0]\nhosts: {api.example.test: 127.0.0.9}\nvhosts:\n"
                                 "  - routes:\n      - path: /*\n        proxy: http://api.example.test:%1\n")
                      .arg(plainPort_)
                      .toUtf8());
        cfg.close();
        // The command line's entry wins over the file's (127.0.0.9: nothing listens there).
        ServerProcess serve({"--config", cfg.fileName(), "--resolve", "API.example.test=127.0.0.1"});
        QVERIFY2(serve.waitReady(), serve.output().constData());
        r = curlFetch({serve.baseUrl() + "/echo?serve=1"});
        QVERIFY2(r.status == 200, r.err + r.body);
        QCOMPARE(serve.terminate(), 0);

        env.insert("PORTICO_CHECK_ARGS", "1");
        auto bad = runProcessIn(porticoBinary(), {"proxy", "--resolve", "api.example.test:443:127.0.0.1"},
                                env, tmp_.path());
        QCOMPARE(bad.exitCode, 2);
        QVERIFY2(bad.err.contains("expected NAME=ADDR") && bad.err.contains("curl's NAME:PORT:ADDR"),
                 bad.err.constData());
        bad = runProcessIn(porticoBinary(), {"serve", "--resolve", "api.example.test=localhost"}, env,
                           tmp_.path());
        QCOMPARE(bad.exitCode, 2);
        QVERIFY2(bad.err.contains("'localhost' is not an IPv4 or IPv6 address"), bad.err.constData());
    }
};

QTEST_GUILESS_MAIN(TestUpstreamHosts)
#include "tst_upstream_hosts.moc"
