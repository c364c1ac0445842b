// WebSocket routes over the wire (RFC 6455, RFC 7692): Python `websockets` clients for echo, rooms,
// close codes, subprotocols and permessage-deflate; raw frames for the protocol-error cases WS-01 and
// WS-02 of ../shared/cases (tools/wsprobe.py); handshake refusals; all on ws:// and wss://. The hook
// and room statistics are checked on an in-process engine.
#include "test_support.h"

#include <portico/engine/engine.h>
#include <portico/validate/load.h>

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <mutex>

using namespace portico::test;

namespace {

bool makeCert(const QString& dir) {
    return makeSelfSignedCert(dir + "/local.crt", dir + "/local.key", "localhost",
                              "DNS:localhost,IP:127.0.0.1")
               .exitCode == 0;
}

constexpr char kConfig[] = "listen:\n"
                           "  - 127.0.0.1:0\n"
                           "  - address: 127.0.0.1:0\n"
                           "    tls: {cert: local.crt, key: local.key}\n"
                           "limits: {max_header_count: 50}\n"
                           "vhosts:\n"
                           "  - names: [localhost, 127.0.0.1]\n"
                           "    default: true\n"
                           "    routes:\n"
                           "      - {path: /echo, websocket: echo}\n"
                           "      - {path: /rooms/:room, websocket: room}\n"
                           "      - path: /small\n"
                           "        websocket: {max_message_bytes: 1KiB}\n"
                           "      - path: /proto\n"
                           "        websocket: {subprotocols: [c, b]}\n"
                           "      - path: /strict\n"
                           "        websocket: {origins: [\"http://allowed.test\"]}\n"
                           "      - path: /idle\n"
                           "        websocket: {idle_timeout: 1s, ping_interval: 300ms}\n"
                           "      - {path: /hello, respond: {body: \"hi\\n\"}}\n";

} // namespace

class TestWebSocket : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    std::unique_ptr<ServerProcess> server_;

    quint16 port(bool tls) const { return tls ? server_->tlsPort() : server_->plainPort(); }

    QByteArray client(bool tls, const QString& mode, const QString& path) {
        QProcess p;
        auto env = QProcessEnvironment::systemEnvironment();
        env.insert("PORT", QString::number(port(tls)));
        env.insert("TLS", tls ? "1" : "0");
        p.setProcessEnvironment(env);
        p.start(debianPython(), {sourceDir() + "/tests/integration/ws_client.py", mode, path});
        if (!p.waitForFinished(30000)) p.kill();
        const QByteArray err = p.readAllStandardError();
        if (!err.isEmpty()) qWarning().noquote() << err;
        return p.readAllStandardOutput().trimmed();
    }

    // ../shared/cases/tools/wsprobe.py MODE against PATH_; returns its output.
    QByteArray probe(bool tls, const QString& mode, const QString& path, const QStringList& extraEnv = {}) {
        QProcess p;
        auto env = QProcessEnvironment::systemEnvironment();
        env.insert("PORT", QString::number(port(tls)));
        env.insert("PATH_", path);
        if (tls) env.insert("TLS", "1");
        for (const QString& e : extraEnv)
            env.insert(e.section('=', 0, 0), e.section('=', 1));
        p.setProcessEnvironment(env);
        p.start(debianPython(), {sourceDir() + "/tests/support/cases/wsprobe.py", mode});
        if (!p.waitForFinished(30000)) p.kill();
        return p.readAllStandardOutput();
    }

    QByteArray handshake(const QByteArray& fields, const QByteArray& path = "/echo",
                         const QByteArray& method = "GET") {
        auto r = rawExchange(server_->plainPort(),
                             method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" +
                                 QByteArray::number(server_->plainPort()) + "\r\n" + fields + "\r\n",
                             800);
        return r.bytes;
    }

private slots:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        QVERIFY(makeCert(tmp_.path()));
        QFile y(tmp_.filePath("portico.yaml"));
        QVERIFY(y.open(QIODevice::WriteOnly));
        y.write(kConfig);
        y.close();
        server_ = std::make_unique<ServerProcess>(QStringList{"--config", tmp_.filePath("portico.yaml")});
        QVERIFY2(server_->waitReady(), server_->output().constData());
        QVERIFY(server_->tlsPort() && server_->plainPort());
    }

    void echo_data() {
        QTest::addColumn<bool>("tls");
        QTest::newRow("ws") << false;
        QTest::newRow("wss") << true;
    }
    void echo() {
        QFETCH(bool, tls);
        QCOMPARE(client(tls, "echo", "/echo"),
                 QByteArray("text True\nbinary True\nfragmented True\npong True"));
    }

    void rooms_data() { echo_data(); }
    void rooms() {
        QFETCH(bool, tls);
        QCOMPARE(
            client(tls, "rooms", "/rooms/lobby"),
            QByteArray(
                "c1 from 0 c2 from 0\nsender skipped\nc0 b'\\x01\\x02' c1 b'\\x01\\x02'\nrooms separate"));
    }

    void closeEchoesCode_data() { echo_data(); }
    void closeEchoesCode() {
        QFETCH(bool, tls);
        QCOMPARE(client(tls, "close", "/echo"), QByteArray("close 4321"));
    }

    void tooBig() { QCOMPARE(client(false, "toobig", "/small"), QByteArray("closed 1009")); }

    void subprotocolByServerPreference() {
        QCOMPARE(client(false, "proto", "/proto"), QByteArray("proto c"));
        QCOMPARE(client(false, "proto", "/echo"), QByteArray("proto None"));
    }

    void deflate_data() { echo_data(); }
    void deflate() {
        QFETCH(bool, tls);
        QByteArray out = client(tls, "deflate", "/echo");
        QVERIFY2(out.startsWith("ext permessage-deflate; server_no_context_takeover"), out.constData());
        QVERIFY2(out.endsWith("big True\ntiny True"), out.constData());
        // Raw frames: our compressed frame (RSV1) is understood, and the echo comes back compressed.
        out = client(tls, "rawdeflate", "/echo");
        QVERIFY2(out.contains("permessage-deflate; server_no_context_takeover; client_no_context_takeover"),
                 out.constData());
        QVERIFY2(out.contains("rsv1 True"), out.constData());
        QVERIFY2(out.endsWith("same True"), out.constData());
    }

    // Cases WS-01 and WS-02 (../shared/cases/README.md), on both schemes.
    void protocolErrors_data() {
        QTest::addColumn<bool>("tls");
        QTest::addColumn<QString>("mode");
        QTest::addColumn<QByteArray>("expected");
        const char* cases[][2] = {
            {"unmasked", "recv CLOSE code=1002"},      {"bad-utf8", "recv CLOSE code=1007"},
            {"bad-utf8-frag", "recv CLOSE code=1007"}, {"close-bad-utf8", "recv CLOSE code=1007"},
            {"close-1005", "recv CLOSE code=1002"},    {"close-1byte", "recv CLOSE code=1002"},
            {"rsv1", "recv CLOSE code=1002"},          {"big-ping", "recv CLOSE code=1002"},
            {"frag-ping", "recv CLOSE code=1002"},
        };
        for (bool tls : {false, true})
            for (auto& c : cases)
                QTest::newRow(QByteArray(tls ? "wss " : "ws ").append(c[0]).constData())
                    << tls << QString(c[0]) << QByteArray(c[1]);
    }
    void protocolErrors() {
        QFETCH(bool, tls);
        QFETCH(QString, mode);
        QFETCH(QByteArray, expected);
        QByteArray out = probe(tls, mode, "/echo");
        QVERIFY2(out.contains("handshake: HTTP/1.1 101"), out.constData());
        QVERIFY2(out.contains(expected), out.constData());
        // The Close frame came first, then the server closed TCP (no 1006-style bare close).
        QVERIFY2(out.indexOf(expected) < out.indexOf("end: server closed the connection"), out.constData());
        QCOMPARE(out.count("recv "), 1);
    }

    void controlBetweenFragments() {
        QByteArray out = probe(false, "ping-between", "/echo");
        QVERIFY2(out.contains("recv PONG fin=1 b'p'\n  recv TEXT fin=1 b'Hello'"), out.constData());
    }

    void handshakeChecks() {
        const QByteArray upgrade = "Upgrade: websocket\r\nConnection: Upgrade\r\n";
        const QByteArray key = "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";
        QByteArray ok = handshake(upgrade + key + "Sec-WebSocket-Version: 13\r\n");
        QVERIFY2(ok.startsWith("HTTP/1.1 101 "), ok.constData());
        QVERIFY(ok.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n")); // RFC 6455 §1.3
        QByteArray v12 = handshake(upgrade + key + "Sec-WebSocket-Version: 12\r\n");
        QVERIFY2(v12.startsWith("HTTP/1.1 426 "), v12.constData());
        QVERIFY(v12.contains("Sec-WebSocket-Version: 13\r\n"));
        QVERIFY(handshake(upgrade + "Sec-WebSocket-Key: short==\r\nSec-WebSocket-Version: 13\r\n")
                    .startsWith("HTTP/1.1 400 "));
        QVERIFY(handshake(upgrade + key + key + "Sec-WebSocket-Version: 13\r\n").startsWith("HTTP/1.1 400 "));
        QByteArray plain = handshake("");
        QVERIFY2(plain.startsWith("HTTP/1.1 426 "), plain.constData());
        QVERIFY(plain.contains("Upgrade: websocket\r\n"));
        QVERIFY(
            handshake(upgrade + key + "Sec-WebSocket-Version: 13\r\nContent-Length: 0\r\n", "/echo", "POST")
                .startsWith("HTTP/1.1 405 "));
        // Origins: foreign → 403; this server's own pages and listed origins → 101.
        const QByteArray base = upgrade + key + "Sec-WebSocket-Version: 13\r\n";
        QVERIFY(handshake(base + "Origin: http://evil.example\r\n").startsWith("HTTP/1.1 403 "));
        QVERIFY(handshake(base + "Origin: null\r\n").startsWith("HTTP/1.1 403 "));
        // A foreign address with this server's own port is a foreign page.
        const QByteArray port = QByteArray::number(server_->plainPort());
        for (const QByteArray foreign : {"http://203.0.113.7:", "http://[2001:db8::1]:", "http://10.1.2.3:"})
            QVERIFY2(handshake(base + "Origin: " + foreign + port + "\r\n").startsWith("HTTP/1.1 403 "),
                     foreign);
        QVERIFY(handshake(base + "Origin: http://127.0.0.1:" + port + "\r\n").startsWith("HTTP/1.1 101 "));
        QVERIFY(handshake(base + QByteArray("Origin: http://localhost:") +
                          QByteArray::number(server_->plainPort()) + "\r\n")
                    .startsWith("HTTP/1.1 101 "));
        QVERIFY(handshake(base + "Origin: http://allowed.test\r\n", "/strict").startsWith("HTTP/1.1 101 "));
        QVERIFY(handshake(base + "Origin: http://other.test\r\n", "/strict").startsWith("HTTP/1.1 403 "));
    }

    void absurdHeaderCount() {
        QByteArray fields = "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";
        for (int i = 0; i < 5000; ++i)
            fields += "X-" + QByteArray::number(i) + ": y\r\n";
        QByteArray out = handshake(fields);
        QVERIFY2(out.startsWith("HTTP/1.1 431 ") || out.startsWith("HTTP/1.1 400 "),
                 out.left(80).constData());
        // Still serving WebSockets afterwards.
        QCOMPARE(client(false, "close", "/echo"), QByteArray("close 4321"));
    }

    void heartbeatAndIdleTimeout() {
        // Silent client: a PING arrives (ping_interval 300ms), then Close 1001 (idle_timeout 1s).
        QByteArray out = probe(false, "handshake", "/idle");
        QVERIFY2(out.contains("101"), out.constData());
        auto r =
            rawExchange(server_->plainPort(),
                        "GET /idle HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: "
                        "Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: "
                        "13\r\n\r\n",
                        4000);
        QVERIFY2(r.bytes.startsWith("HTTP/1.1 101 "), r.bytes.constData());
        QByteArray frames = r.bytes.mid(r.bytes.indexOf("\r\n\r\n") + 4);
        QVERIFY2(frames.startsWith(QByteArray("\x89\x07portico", 9)), frames.toHex().constData());
        QVERIFY2(
            frames.contains(QByteArray("\x88", 1) + char(2 + 12) + QByteArray("\x03\xe9idle timeout", 14)),
            frames.toHex().constData());
        QVERIFY(r.closedByServer);
        // A client that sends nothing but answers the pings is not idle: still open after 2.5 s.
        QCOMPARE(client(false, "quiet", "/idle"), QByteArray("alive True"));
    }

    // The capture hook and room statistics on an in-process engine.
    void hookAndStats() {
        auto loaded = portico::config::loadConfigText("listen: [127.0.0.1:0]\nworkers: 1\nvhosts:\n  - "
                                                      "routes:\n      - {path: /rooms/:room, websocket: "
                                                      "room}\n",
                                                      "hook.yaml", tmp_.path().toStdString());
        QVERIFY(loaded.ok());
        portico::engine::Engine engine;
        std::mutex m;
        QStringList events;
        engine.setWebSocketHook([&](const portico::ws::WsMessageEvent& e) {
            using K = portico::ws::WsMessageEvent::Kind;
            QString line;
            switch (e.kind) {
            case K::Open:
                line = "open " + QString::fromStdString(std::string(e.target));
                break;
            case K::Join:
                line = "join " + QString::fromStdString(std::string(e.room));
                break;
            case K::Leave:
                line = "leave " + QString::fromStdString(std::string(e.room));
                break;
            case K::Closed:
                line = "closed";
                break;
            case K::Message:
                line = QString(e.direction == portico::ws::WsMessageEvent::Direction::In ? "in " : "out ") +
                       QString::number(int(e.opcode)) + " " + QString::number(e.size) + " " +
                       QString::fromStdString(std::string(e.prefix));
                break;
            }
            std::lock_guard lock(m);
            events << line;
        });
        std::string error;
        QVERIFY2(engine.start(loaded.config, error), error.c_str());
        QProcess p;
        auto env = QProcessEnvironment::systemEnvironment();
        env.insert("PORT", QString::number(engine.endpoints().front().port));
        p.setProcessEnvironment(env);
        p.start(debianPython(), {sourceDir() + "/tests/integration/ws_client.py", "hold", "/rooms/kitchen"});
        QVERIFY(p.waitForStarted());
        QByteArray out;
        for (int i = 0; i < 200 && !out.contains("ready"); ++i) {
            p.waitForReadyRead(100);
            out += p.readAllStandardOutput();
        }
        QVERIFY2(out.contains("got hello room\nready"), out + p.readAllStandardError());
        auto stats = engine.webSocketStats();
        QCOMPARE(stats.open, 2u);
        QCOMPARE(int(stats.rooms.size()), 1);
        QCOMPARE(QString::fromStdString(stats.rooms[0].name), QString("kitchen"));
        QCOMPARE(QString::fromStdString(stats.rooms[0].route), QString("/rooms/:room"));
        QCOMPARE(stats.rooms[0].members, 2u);
        QCOMPARE(stats.rooms[0].messages, 1u);
        QCOMPARE(stats.rooms[0].delivered, 1u);
        // Messages per second: the one message over the room's first completed window (≥ 1 s), seen
        // by this read if that window had already passed, else by the next one.
        double rate = stats.rooms[0].messagesPerSecond;
        QTest::qWait(1100);
        stats = engine.webSocketStats();
        QCOMPARE(int(stats.rooms.size()), 1);
        rate = std::max(rate, stats.rooms[0].messagesPerSecond);
        QVERIFY2(rate > 0 && rate <= 1.0, QByteArray::number(rate).constData());
        p.write("\n");
        QVERIFY(p.waitForFinished(10000));
        QVERIFY(p.readAllStandardOutput().contains("done"));
        for (int i = 0; i < 100 && engine.webSocketStats().open != 0; ++i)
            QTest::qWait(50);
        stats = engine.webSocketStats();
        QCOMPARE(stats.open, 0u);
        QVERIFY(stats.rooms.empty());
        QCOMPARE(stats.messagesIn, 1u);
        QCOMPARE(stats.messagesOut, 1u);
        engine.stop();
        std::lock_guard lock(m);
        QCOMPARE(events.count("open /rooms/kitchen"), 2);
        QCOMPARE(events.count("join kitchen"), 2);
        QCOMPARE(events.count("in 1 10 hello room"), 1);
        QCOMPARE(events.count("out 1 10 hello room"), 1);
        QCOMPARE(events.count("leave kitchen"), 2);
        QCOMPARE(events.count("closed"), 2);
    }

    void cleanupTestCase() {
        if (server_) QCOMPARE(server_->terminate(), 0);
    }
};

QTEST_MAIN(TestWebSocket)
#include "tst_websocket.moc"
