// The capture of proxied WebSocket sessions (`proxy: {ws: true}`): python3-websockets clients
// (ws://, and wss:// with permessage-deflate) talk through an in-process engine to a
// python3-websockets echo upstream (tests/support/ws_upstream.py), with and without
// permessage-deflate; the tunnel's record must hold every message both ways (direction, opcode,
// size, bounded prefix, compressed flag) like a local session's, and keep them in HAR and the
// session file. Bytes that are no WebSocket frames (ws_raw_upstream.py) still pass unchanged and
// only stop the recording.
#include "test_support.h"

#include <portico/capture/har.h>
#include <portico/capture/store.h>
#include <portico/engine/engine.h>
#include <portico/validate/load.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace portico;
using capture::Phase;

namespace {

// What a message of the conversation should look like in the record.
struct Expected {
    bool fromClient;
    std::uint8_t opcode;
    std::string data; // the whole payload (the record keeps its first body_bytes)
    bool compressible;
};

std::string bigPayload() {
    std::string b(1 << 20, '\0');
    for (std::size_t i = 0; i < b.size(); ++i)
        b[i] = static_cast<char>((i * 31 + 7) & 255);
    return b;
}

// ws_tunnel_client.py's "talk" conversation as the upstream echoes it.
std::vector<Expected> conversation() {
    const std::string bin("\x00\xff\x01\xfe\x00\xff\x01\xfe\x00\xff\x01\xfe\x00\xff\x01\xfe", 16);
    const std::string close = std::string("\x0f\xa1", 2) + "bye"; // 4001 "bye"
    return {{true, 1, "hello", true},       {false, 1, "hello", true},     {true, 2, bin, true},
            {false, 2, bin, true},          {true, 1, "fragmented", true}, {false, 1, "fragmented", true},
            {true, 9, "p", false},          {false, 10, "p", false},       {true, 2, bigPayload(), true},
            {false, 2, bigPayload(), true}, {true, 8, close, false},       {false, 8, close, false}};
}

QString show(const capture::Message& m) {
    return QStringLiteral("%1 op %2 size %3 %4 [%5]")
        .arg(m.fromClient ? "send" : "receive")
        .arg(m.opcode)
        .arg(m.size)
        .arg(m.compressed ? "z" : "-")
        .arg(QString(QByteArray::fromStdString(m.data.substr(0, 16)).toHex()));
}

bool ordered(const capture::Exchange& e) {
    std::int64_t last = -1;
    for (auto phase : capture::kTimelineOrder) {
        const std::int64_t p = e.at(phase);
        if (p < 0) continue;
        if (p < last) return false;
        last = p;
    }
    return true;
}

} // namespace

class TestProxyWebSocketCapture : public QObject {
    Q_OBJECT
    static constexpr std::size_t kBodyBytes = 64;
    QTemporaryDir dir_;
    QProcess echo_, raw_;
    int echoPort_ = 0, rawPort_ = 0;
    engine::Engine engine_;
    std::uint16_t port_ = 0, tlsPort_ = 0;
    QString storePath_;

    static int startUpstream(QProcess& p, const QString& script, const QString& portFile) {
        return test::startSupportScript(p, script, portFile);
    }

    QByteArray client(const QString& mode, const QString& path, bool tls = false) {
        const QString url = QStringLiteral("%1://127.0.0.1:%2%3")
                                .arg(tls ? "wss" : "ws")
                                .arg(tls ? tlsPort_ : port_)
                                .arg(path);
        auto r = test::runProcess(test::debianPython(),
                                  {test::sourceDir() + "/tests/support/ws_tunnel_client.py", mode, url}, {},
                                  60000);
        if (!r.err.isEmpty()) qWarning().noquote() << r.err;
        return r.out.trimmed();
    }

    // The complete WebSocket record of `target` (waits for the tunnel to close).
    std::optional<capture::Exchange> session(const std::string& target) {
        for (int i = 0; i < 300; ++i) {
            engine_.flushCapture();
            for (auto& e : engine_.recentExchanges(0, 100000))
                if (e.target == target && !(e.flags & capture::kIncomplete)) return e;
            QTest::qWait(20);
        }
        return std::nullopt;
    }

    void checkConversation(const capture::Exchange& e, bool deflate) {
        QCOMPARE(e.protocol, capture::Protocol::WebSocket);
        QCOMPARE(e.status, 101);
        QCOMPARE(e.route, std::string("/ws/*"));
        QVERIFY2(e.error.empty(), e.error.c_str());
        for (Phase p : {Phase::Accepted, Phase::RequestHeaders, Phase::RouteMatched, Phase::UpstreamConnected,
                        Phase::UpstreamFirstByte, Phase::ResponseFirstByte, Phase::ResponseDone})
            QVERIFY2(e.at(p) >= 0, phaseName(p).data());
        QVERIFY(ordered(e));
        QCOMPARE(QString::fromStdString(std::string(e.responseHeader("Upgrade"))).toLower(),
                 QString("websocket"));
        QCOMPARE(!e.responseHeader("Sec-WebSocket-Extensions").empty(), deflate);
        const auto want = conversation();
        QStringList got;
        for (const auto& m : e.messages)
            got << show(m);
        QVERIFY2(e.messages.size() == want.size(), qPrintable(got.join("\n")));
        QCOMPARE(e.messageCount, std::uint64_t(want.size()));
        QVERIFY(!(e.flags & capture::kMessagesTruncated));
        std::int64_t last = e.at(Phase::ResponseFirstByte);
        for (std::size_t i = 0; i < want.size(); ++i) {
            const auto& m = e.messages[i];
            const auto& w = want[i];
            const QByteArray where = QByteArray::number(qulonglong(i)) + ": " + show(m).toUtf8();
            QVERIFY2(m.fromClient == w.fromClient, where.constData());
            QVERIFY2(m.opcode == w.opcode, where.constData());
            QVERIFY2(m.size == w.data.size(), where.constData());
            QVERIFY2(m.data == w.data.substr(0, kBodyBytes), where.constData());
            // python3-websockets compresses every data message once the extension is on.
            QVERIFY2(m.compressed == (deflate && w.compressible), where.constData());
            QVERIFY2(m.timeNs >= last && m.timeNs <= e.at(Phase::ResponseDone), where.constData());
            last = m.timeNs;
        }
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        echoPort_ = startUpstream(echo_, "ws_upstream.py", dir_.filePath("echo.port"));
        QVERIFY2(echoPort_, echo_.readAllStandardError().constData());
        rawPort_ = startUpstream(raw_, "ws_raw_upstream.py", dir_.filePath("raw.port"));
        QVERIFY2(rawPort_, raw_.readAllStandardError().constData());
        storePath_ = dir_.filePath("session.db");
        auto cert =
            test::makeSelfSignedCert(dir_.filePath("local.crt"), dir_.filePath("local.key"), "127.0.0.1");
        QCOMPARE(cert.exitCode, 0);
        const std::string yaml = QStringLiteral(R"(workers: 2
listen:
  - 127.0.0.1:0
  - {address: 127.0.0.1:0, tls: {cert: %5, key: %6}}
capture: {enabled: true, body_bytes: %1, store: %2}
vhosts:
  - names: [127.0.0.1]
    default: true
    routes:
      - path: /ws/*
        proxy: {upstream: http://127.0.0.1:%3, strip_prefix: /ws, ws: true}
      - path: /raw/*
        proxy: {upstream: http://127.0.0.1:%4, ws: true}
)")
                                     .arg(kBodyBytes)
                                     .arg(storePath_)
                                     .arg(echoPort_)
                                     .arg(rawPort_)
                                     .arg(dir_.filePath("local.crt"), dir_.filePath("local.key"))
                                     .toStdString();
        auto r = config::loadConfigText(yaml, "tunnel-capture.yaml", ".");
        QVERIFY2(r.ok(), r.ok() ? "" : r.errors.front().toString().c_str());
        std::string error;
        QVERIFY2(engine_.start(r.config, error), error.c_str());
        for (const auto& ep : engine_.endpoints())
            (ep.tls ? tlsPort_ : port_) = ep.port;
        QVERIFY(port_ && tlsPort_);
    }
    void cleanupTestCase() {
        engine_.stop();
        for (QProcess* p : {&echo_, &raw_}) {
            p->kill();
            p->waitForFinished();
        }
    }

    void messagesBothWays() {
        QCOMPARE(client("talk", "/ws/plain?t=1"), QByteArray("ok"));
        auto e = session("/ws/plain?t=1");
        QVERIFY(e);
        checkConversation(*e, false);
    }

    void messagesWithPermessageDeflate_data() {
        QTest::addColumn<bool>("tls");
        QTest::newRow("ws") << false;
        QTest::newRow("wss") << true; // the client's side of the tunnel reads through OpenSSL
    }
    void messagesWithPermessageDeflate() {
        QFETCH(bool, tls);
        const QString target = tls ? "/ws/deflate?tls=1" : "/ws/deflate?t=1";
        QCOMPARE(client("deflate", target, tls), QByteArray("ok"));
        auto e = session(target.toStdString());
        QVERIFY(e);
        QCOMPARE(e->scheme, std::string(tls ? "https" : "http"));
        QCOMPARE(e->tlsVersion.empty(), !tls);
        checkConversation(*e, true);
    }

    // Exported like a local session's messages: HAR's `_webSocketMessages`, and back.
    void harExport() {
        auto plain = session("/ws/plain?t=1");
        auto deflated = session("/ws/deflate?t=1");
        QVERIFY(plain && deflated);
        const std::vector<capture::Exchange> both{*plain, *deflated};
        const std::string har = capture::toHar(both);
        const QJsonArray entries = QJsonDocument::fromJson(QByteArray::fromStdString(har))
                                       .object()["log"]
                                       .toObject()["entries"]
                                       .toArray();
        QCOMPARE(entries.size(), 2);
        for (int k = 0; k < 2; ++k) {
            const QJsonObject entry = entries[k].toObject();
            QCOMPARE(entry["_resourceType"].toString(), QString("websocket"));
            const QJsonArray m = entry["_webSocketMessages"].toArray();
            QCOMPARE(m.size(), 12);
            QCOMPARE(m[0].toObject()["type"].toString(), QString("send"));
            QCOMPARE(m[0].toObject()["opcode"].toInt(), 1);
            QCOMPARE(m[0].toObject()["data"].toString(), QString("hello"));
            QCOMPARE(m[0].toObject()["_compressed"].toBool(), k == 1);
            QCOMPARE(m[9].toObject()["type"].toString(), QString("receive"));
            QCOMPARE(m[9].toObject()["_size"].toInteger(), qint64(1) << 20);
            QCOMPARE(m[11].toObject()["opcode"].toInt(), 8);
            QVERIFY(!m[11].toObject().contains("_compressed"));
        }
        auto back = capture::fromHar(har);
        QVERIFY2(back.ok(), back.error.c_str());
        QCOMPARE(back.exchanges.size(), std::size_t(2));
        for (std::size_t k = 0; k < 2; ++k) {
            QCOMPARE(back.exchanges[k].protocol, capture::Protocol::WebSocket);
            QVERIFY(back.exchanges[k].messages == both[k].messages);
        }
    }

    // Not WebSocket after the 101: every byte still goes through both ways, the record keeps what
    // came before and says where it stopped, and the server carries on.
    void garbagePassesThrough() {
        QCOMPARE(client("garbage", "/raw/junk"), QByteArray("ok"));
        auto e = session("/raw/junk");
        QVERIFY(e);
        QCOMPARE(e->protocol, capture::Protocol::WebSocket);
        QVERIFY2(e->error.starts_with("capture stopped: the client's bytes are not WebSocket frames"),
                 e->error.c_str());
        QVERIFY2(e->error.find("RSV2/RSV3") != std::string::npos, e->error.c_str());
        QCOMPARE(e->messages.size(), std::size_t(2));
        QVERIFY(!e->messages[0].fromClient);
        QCOMPARE(e->messages[0].opcode, std::uint8_t(1));
        QCOMPARE(e->messages[0].data, std::string("hi"));
        QVERIFY(e->messages[1].fromClient);
        QCOMPARE(e->messages[1].data, std::string("ok"));
        QCOMPARE(e->messages[1].size, std::uint64_t(2));
        // Still serving, and still recording other tunnels.
        QCOMPARE(client("talk", "/ws/after?t=1"), QByteArray("ok"));
        auto after = session("/ws/after?t=1");
        QVERIFY(after);
        QCOMPARE(after->messages.size(), std::size_t(12));
    }

    // Last: the session file holds the final records (the engine stops to close it).
    void sessionFile() {
        auto plain = session("/ws/plain?t=1");
        auto deflated = session("/ws/deflate?t=1");
        QVERIFY(plain && deflated);
        engine_.stop();
        std::string error;
        auto store = capture::Store::open(storePath_.toStdString(), error);
        QVERIFY2(store, error.c_str());
        std::size_t found = 0;
        for (const auto& e : store->load())
            for (const auto* b : {&*plain, &*deflated})
                if (e.id == b->id) {
                    ++found;
                    QVERIFY(!(e.flags & capture::kIncomplete));
                    QCOMPARE(e.protocol, capture::Protocol::WebSocket);
                    QVERIFY(e.messages == b->messages);
                }
        QCOMPARE(found, std::size_t(2));
    }
};

QTEST_GUILESS_MAIN(TestProxyWebSocketCapture)
#include "tst_proxy_websocket_capture.moc"
