// WebSocket upgrades through `proxy: {ws: true}` to a python3-websockets upstream
// (tests/support/ws_upstream.py): the handshake forwarded with proxy fields, then messages of all
// sizes piped both ways, also to the same upstream over TLS (an https:// upstream, the tunnel
// encrypting its side); without `ws: true` the upgrade is not forwarded.
#include "test_support.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace portico::test;

class TestProxyWebSocket : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    QProcess upstream_, tlsUpstream_;
    int upstreamPort_ = 0, tlsUpstreamPort_ = 0;
    std::unique_ptr<ServerProcess> server_;

private slots:
    void initTestCase() {
        const QString portFile = tmp_.filePath("ws.port");
        upstreamPort_ = startSupportScript(upstream_, "ws_upstream.py", portFile);
        QVERIFY2(upstreamPort_, upstream_.readAllStandardError().constData());
        // The TLS upstream: a self-signed certificate (the proxy does not verify upstreams').
        auto gen = makeSelfSignedCert(tmp_.filePath("cert.pem"), tmp_.filePath("key.pem"), "127.0.0.1");
        QVERIFY2(gen.exitCode == 0, gen.err.constData());
        const QString tlsPortFile = tmp_.filePath("wss.port");
        tlsUpstreamPort_ = startSupportScript(tlsUpstream_, "ws_upstream.py", tlsPortFile,
                                              {tmp_.filePath("cert.pem"), tmp_.filePath("key.pem")});
        QVERIFY2(tlsUpstreamPort_, tlsUpstream_.readAllStandardError().constData());
        QFile cfg(tmp_.filePath("portico.yaml"));
        QVERIFY(cfg.open(QIODevice::WriteOnly));
        cfg.write(QStringLiteral(R"(listen: [127.0.0.1:0]
vhosts:
  - names: [127.0.0.1]
    routes:
      - path: /ws/*
        proxy: {upstream: http://127.0.0.1:%1, strip_prefix: /ws, ws: true}
      - path: /wss/*
        proxy: {upstream: https://127.0.0.1:%2, strip_prefix: /wss, ws: true}
      - path: /plain/*
        proxy: {upstream: http://127.0.0.1:%1, strip_prefix: /plain}
)")
                      .arg(upstreamPort_)
                      .arg(tlsUpstreamPort_)
                      .toUtf8());
        cfg.close();
        server_ = std::make_unique<ServerProcess>(QStringList{"--config", tmp_.filePath("portico.yaml")});
        QVERIFY2(server_->waitReady(), server_->output().constData());
    }
    void cleanupTestCase() {
        upstream_.kill();
        upstream_.waitForFinished();
        tlsUpstream_.kill();
        tlsUpstream_.waitForFinished();
    }

    void messagesFlowBothWays() {
        auto r = runProcess(debianPython(),
                            {sourceDir() + "/tests/support/ws_proxy_client.py",
                             QStringLiteral("ws://127.0.0.1:%1/ws/chat?room=1").arg(server_->port())},
                            {}, 60000);
        QVERIFY2(r.out.trimmed() == "ok", (r.out + r.err).constData());
    }

    void messagesFlowBothWaysToTlsUpstream() {
        auto r = runProcess(debianPython(),
                            {sourceDir() + "/tests/support/ws_proxy_client.py",
                             QStringLiteral("ws://127.0.0.1:%1/wss/chat?room=1").arg(server_->port())},
                            {}, 60000);
        QVERIFY2(r.out.trimmed() == "ok", (r.out + r.err).constData());
    }

    void severalTunnelsAtOnce() {
        QList<QProcess*> clients;
        for (int i = 0; i < 4; ++i) {
            auto* p = new QProcess(this);
            p->start(debianPython(),
                     {sourceDir() + "/tests/support/ws_proxy_client.py",
                      QStringLiteral("ws://127.0.0.1:%1/ws/chat?room=1").arg(server_->port())});
            clients << p;
        }
        for (QProcess* p : clients) {
            QVERIFY(p->waitForFinished(60000));
            QVERIFY2(p->readAllStandardOutput().trimmed() == "ok", p->readAllStandardError().constData());
        }
    }

    void upgradeNotForwardedWithoutWs() {
        const QByteArray req = "GET /plain/chat HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                               "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                               "Sec-WebSocket-Version: 13\r\n\r\n";
        auto r = rawExchange(server_->port(), req, 1500);
        QVERIFY2(!r.bytes.startsWith("HTTP/1.1 101"), r.bytes.constData());
    }
};

QTEST_GUILESS_MAIN(TestProxyWebSocket)
#include "tst_proxy_websocket.moc"
