// WebSocket sessions in the capture: Python `websockets` clients talk to echo, room (3 members) and
// live-reload endpoints of an in-process engine; each session must be one record (protocol
// WebSocket, the upgrade request, the 101, the phases) holding its messages in order, with room
// join/leave; published at open (kIncomplete) and replaced under the same id at close; cut at
// capture.ws_messages; kept by the session file and by a HAR export → import round trip.
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

bool makeCert(const QString& dir) {
    return test::makeSelfSignedCert(dir + "/local.crt", dir + "/local.key", "localhost",
                                    "DNS:localhost,IP:127.0.0.1")
               .exitCode == 0;
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

// "send text hello", "receive close 1000", "event join lobby": one line per message.
QStringList describe(const capture::Exchange& e) {
    QStringList out;
    for (const auto& m : e.messages) {
        QString what;
        switch (m.opcode) {
        case 0:
            what = "event " + QString::fromStdString(m.data);
            break;
        case 1:
            what = "text " + QString::fromStdString(m.data);
            break;
        case 2:
            what = "binary " + QString(QByteArray::fromStdString(m.data).toHex());
            break;
        case 8: {
            const auto* p = reinterpret_cast<const unsigned char*>(m.data.data());
            what = "close " + (m.data.size() >= 2 ? QString::number((p[0] << 8) | p[1]) : QString("-"));
            break;
        }
        case 9:
            what = "ping " + QString::fromStdString(m.data);
            break;
        case 10:
            what = "pong " + QString::fromStdString(m.data);
            break;
        default:
            what = "opcode " + QString::number(m.opcode);
        }
        out << QString(m.opcode == 0 ? "" : m.fromClient ? "send " : "receive ") + what;
    }
    return out;
}

} // namespace

class TestCaptureWebSocket : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    engine::Engine engine_;
    std::uint16_t plain_ = 0, tls_ = 0;
    QString storePath_;

    std::shared_ptr<const config::Config> load(const std::string& capture) {
        const std::string d = dir_.path().toStdString();
        std::string yaml = "workers: 2\n"
                           "listen:\n  - 127.0.0.1:0\n  - address: 127.0.0.1:0\n    tls: {cert: " +
                           d + "/local.crt, key: " + d + "/local.key}\n" + capture +
                           "vhosts:\n  - names: [localhost, 127.0.0.1]\n    default: true\n    root: " + d +
                           "/site\n    live_reload: true\n    routes:\n"
                           "      - {path: /echo, websocket: echo}\n"
                           "      - {path: /rooms/:room, name: rooms, websocket: room}\n";
        auto r = config::loadConfigText(yaml, "ws-capture.yaml", ".");
        if (!r.ok()) qWarning() << r.errors.front().toString().c_str();
        return r.ok() ? r.config : nullptr;
    }

    QByteArray client(std::uint16_t port, bool tls, const QString& mode, const QString& path,
                      QProcess* keep = nullptr) {
        QProcess local;
        QProcess& p = keep ? *keep : local;
        auto env = QProcessEnvironment::systemEnvironment();
        env.insert("PORT", QString::number(port));
        env.insert("TLS", tls ? "1" : "0");
        p.setProcessEnvironment(env);
        p.start(test::debianPython(),
                {test::sourceDir() + "/tests/integration/ws_capture_client.py", mode, path});
        if (keep) return {};
        if (!p.waitForFinished(30000)) p.kill();
        const QByteArray err = p.readAllStandardError();
        if (!err.isEmpty()) qWarning().noquote() << err;
        return p.readAllStandardOutput().trimmed();
    }

    // The complete WebSocket records with id > since whose target is `target`, once there are `n`.
    std::vector<capture::Exchange> sessions(engine::Engine& eng, std::uint64_t since,
                                            const std::string& target, std::size_t n) {
        std::vector<capture::Exchange> got;
        for (int i = 0; i < 300; ++i) {
            eng.flushCapture();
            got.clear();
            for (auto& e : eng.recentExchanges(since, 100000))
                if (e.protocol == capture::Protocol::WebSocket && e.target == target &&
                    !(e.flags & capture::kIncomplete))
                    got.push_back(std::move(e));
            if (got.size() >= n) break;
            QTest::qWait(20);
        }
        return got;
    }

    std::uint64_t lastId() {
        engine_.flushCapture();
        auto all = engine_.recentExchanges(0, 1000000);
        return all.empty() ? 0 : all.back().id;
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        QVERIFY(makeCert(dir_.path()));
        QVERIFY(QDir(dir_.path()).mkpath("site"));
        storePath_ = dir_.filePath("session.db");
        auto cfg =
            load("capture: {enabled: true, body_bytes: 64, store: " + storePath_.toStdString() + "}\n");
        QVERIFY(cfg);
        std::string error;
        QVERIFY2(engine_.start(cfg, error), error.c_str());
        for (const auto& ep : engine_.endpoints())
            (ep.tls ? tls_ : plain_) = ep.port;
        QVERIFY(plain_ && tls_);
    }

    void echoSession_data() {
        QTest::addColumn<bool>("tls");
        QTest::newRow("ws") << false;
        QTest::newRow("wss") << true;
    }
    void echoSession() {
        QFETCH(bool, tls);
        const std::uint64_t since = lastId();
        QCOMPARE(client(tls ? tls_ : plain_, tls, "echo", "/echo?x=1"), QByteArray("ok"));
        auto got = sessions(engine_, since, "/echo?x=1", 1);
        QCOMPARE(got.size(), std::size_t(1));
        const auto& e = got[0];
        QCOMPARE(e.status, 101);
        QCOMPARE(e.method, std::string("GET"));
        QCOMPARE(e.httpVersion, std::uint8_t(11));
        QCOMPARE(e.vhost, std::string("localhost"));
        QCOMPARE(e.route, std::string("/echo"));
        QCOMPARE(e.scheme, std::string(tls ? "https" : "http"));
        QVERIFY(e.client.starts_with("127.0.0.1:"));
        QCOMPARE(e.localPort, tls ? tls_ : plain_);
        QVERIFY(!e.requestHeader("Sec-WebSocket-Key").empty());
        QCOMPARE(QString::fromStdString(std::string(e.responseHeader("Upgrade"))).toLower(),
                 QString("websocket"));
        QVERIFY(!e.responseHeader("Sec-WebSocket-Accept").empty());
        QVERIFY(e.error.empty());
        if (tls) {
            QVERIFY(e.tlsVersion.starts_with("TLS"));
            QVERIFY(e.at(Phase::TlsDone) > e.at(Phase::Accepted));
        } else {
            QVERIFY(e.tlsVersion.empty());
            QCOMPARE(e.at(Phase::TlsDone), std::int64_t(-1));
        }
        for (Phase p : {Phase::Accepted, Phase::RequestHeaders, Phase::RouteMatched, Phase::ResponseFirstByte,
                        Phase::ResponseDone})
            QVERIFY2(e.at(p) >= 0, phaseName(p).data());
        QVERIFY(ordered(e));
        QCOMPARE(describe(e), QStringList({"send text hello", "receive text hello",
                                           "send binary " + QString("00ff01fe").repeated(4),
                                           "receive binary " + QString("00ff01fe").repeated(4), "send ping p",
                                           "receive pong p", "send close 1000", "receive close 1000"}));
        QCOMPARE(e.messageCount, std::uint64_t(8));
        QVERIFY(!(e.flags & capture::kMessagesTruncated));
        // Every message inside the session, in order, with its exact size.
        std::int64_t last = e.at(Phase::ResponseFirstByte);
        for (const auto& m : e.messages) {
            QVERIFY(m.timeNs >= last);
            QVERIFY(m.timeNs <= e.at(Phase::ResponseDone));
            QCOMPARE(m.size, std::uint64_t(m.data.size()));
            last = m.timeNs;
        }
        QCOMPARE(e.messages[6].data.substr(2), std::string("done"));
    }

    void roomOfThree() {
        const std::uint64_t since = lastId();
        QCOMPARE(client(plain_, false, "rooms", "/rooms/lobby"), QByteArray("ok"));
        auto got = sessions(engine_, since, "/rooms/lobby", 3);
        QCOMPARE(got.size(), std::size_t(3));
        // Members may live on different workers, whose records reach the collector in worker
        // order: tell them apart by what they said (member 0 text, member 2 binary).
        auto said = [](const capture::Exchange& e, std::uint8_t op) {
            for (const auto& m : e.messages)
                if (m.fromClient && m.opcode == op) return true;
            return false;
        };
        std::sort(got.begin(), got.end(), [&](const auto& a, const auto& b) {
            auto rank = [&](const capture::Exchange& e) { return said(e, 1) ? 0 : said(e, 2) ? 2 : 1; };
            return rank(a) < rank(b);
        });
        for (const auto& e : got) {
            QCOMPARE(e.route, std::string("rooms"));
            QCOMPARE(e.status, 101);
            QVERIFY(ordered(e));
        }
        const QStringList tail{"send close 1000", "receive close 1000", "event leave lobby"};
        QCOMPARE(describe(got[0]),
                 QStringList({"event join lobby", "send text from 0", "receive binary 0102"}) + tail);
        QCOMPARE(describe(got[1]),
                 QStringList({"event join lobby", "receive text from 0", "receive binary 0102"}) + tail);
        QCOMPARE(describe(got[2]),
                 QStringList({"event join lobby", "receive text from 0", "send binary 0102"}) + tail);
    }

    void liveReloadEndpoint() {
        const std::uint64_t since = lastId();
        QCOMPARE(client(plain_, false, "open", "/__portico/livereload"), QByteArray("ok"));
        auto got = sessions(engine_, since, "/__portico/livereload", 1);
        QCOMPARE(got.size(), std::size_t(1));
        const QStringList d = describe(got[0]);
        QVERIFY2(d.size() >= 3 && d.front().startsWith("event join ") && d.back().startsWith("event leave "),
                 qPrintable(d.join(" | ")));
        QVERIFY(d.contains("send close 1000"));
    }

    void publishedAtOpenThenCompleted() {
        const std::uint64_t since = lastId();
        QProcess p;
        client(plain_, false, "hold", "/echo?hold", &p);
        QVERIFY(p.waitForReadyRead(15000));
        QCOMPARE(p.readLine().trimmed(), QByteArray("ready"));
        // While the session lives: one kIncomplete record, 101, no ResponseDone.
        std::optional<capture::Exchange> open;
        for (int i = 0; i < 200 && !open; ++i) {
            engine_.flushCapture();
            for (auto& e : engine_.recentExchanges(since, 1000))
                if (e.target == "/echo?hold") open = e;
            if (!open) QTest::qWait(10);
        }
        QVERIFY(open);
        QCOMPARE(open->protocol, capture::Protocol::WebSocket);
        QVERIFY(open->flags & capture::kIncomplete);
        QCOMPARE(open->status, 101);
        QCOMPARE(open->at(Phase::ResponseDone), std::int64_t(-1));
        QVERIFY(open->at(Phase::ResponseFirstByte) >= 0);
        p.write("\n");
        QVERIFY(p.waitForFinished(15000));
        auto done = sessions(engine_, since, "/echo?hold", 1);
        QCOMPARE(done.size(), std::size_t(1));
        QCOMPARE(done[0].id, open->id); // same record, completed in place
        auto byId = engine_.exchange(open->id);
        QVERIFY(byId);
        QVERIFY(!(byId->flags & capture::kIncomplete));
        QVERIFY(byId->at(Phase::ResponseDone) >= byId->at(Phase::ResponseFirstByte));
        QCOMPARE(describe(*byId).mid(0, 2), QStringList({"send text still here", "receive text still here"}));
    }

    void harRoundTrip() {
        std::vector<capture::Exchange> ws;
        engine_.flushCapture();
        for (auto& e : engine_.recentExchanges(0, 100000))
            if (e.protocol == capture::Protocol::WebSocket) ws.push_back(std::move(e));
        QVERIFY(ws.size() >= 5);
        const std::string har = capture::toHar(ws);
        // Chrome's shape.
        QVERIFY(har.find("\"_resourceType\": \"websocket\"") != std::string::npos);
        QVERIFY(har.find("\"_webSocketMessages\"") != std::string::npos);
        QVERIFY(har.find("\"url\": \"ws://127.0.0.1:") != std::string::npos);
        QVERIFY(har.find("\"url\": \"wss://127.0.0.1:") != std::string::npos);
        QVERIFY(har.find("\"type\": \"send\"") != std::string::npos);
        QVERIFY(har.find("\"data\": \"AP8B/gD/Af4A/wH+AP8B/g==\"") != std::string::npos); // binary → base64
        auto back = capture::fromHar(har);
        QVERIFY2(back.ok(), back.error.c_str());
        QCOMPARE(back.exchanges.size(), ws.size());
        for (std::size_t i = 0; i < ws.size(); ++i) {
            const auto& a = ws[i];
            const auto& b = back.exchanges[i];
            QCOMPARE(b.protocol, capture::Protocol::WebSocket);
            QCOMPARE(b.status, 101);
            QCOMPARE(b.target, a.target);
            QCOMPARE(b.scheme, a.scheme);
            QCOMPARE(b.messageCount, a.messageCount);
            QVERIFY(b.messages == a.messages);
            QVERIFY(b.phases == a.phases);
        }
        // A Chrome-written entry (no _portico, no _timeNs): times from Unix seconds, data per opcode.
        const char* chrome =
            "{\"log\":{\"version\":\"1.2\",\"entries\":[{\"startedDateTime\":\"2024-05-01T10:00:00.000Z\","
            "\"time\":5,\"request\":{\"method\":\"GET\",\"url\":\"wss://example.test/socket\","
            "\"httpVersion\":\"HTTP/1.1\",\"headers\":[]},\"response\":{\"status\":101,\"headers\":[]},"
            "\"timings\":{\"send\":0,\"wait\":1,\"receive\":4},\"_resourceType\":\"websocket\","
            "\"_webSocketMessages\":[{\"type\":\"send\",\"time\":1714557600.5,\"opcode\":1,\"data\":\"hi\"},"
            "{\"type\":\"receive\",\"time\":1714557600.75,\"opcode\":2,\"data\":\"AQI=\"}]}]}}";
        auto c = capture::fromHar(chrome);
        QVERIFY2(c.ok(), c.error.c_str());
        QCOMPARE(c.exchanges.size(), std::size_t(1));
        const auto& e = c.exchanges[0];
        QCOMPARE(e.protocol, capture::Protocol::WebSocket);
        QCOMPARE(e.scheme, std::string("https"));
        QCOMPARE(e.messages.size(), std::size_t(2));
        QVERIFY(e.messages[0].fromClient);
        QCOMPARE(e.messages[0].data, std::string("hi"));
        QCOMPARE(e.messages[1].data, std::string("\x01\x02"));
        QCOMPARE(e.messages[1].timeNs - e.messages[0].timeNs, std::int64_t(250'000'000));
        // A wrong shape is an error with its position, never a crash.
        auto bad = capture::fromHar(
            "{\"log\":{\"entries\":[{\"request\":{\"url\":\"ws://a/\"},\"_webSocketMessages\":[1]}]}}");
        QVERIFY(!bad.ok());
        QVERIFY2(bad.error.find("log.entries[0]._webSocketMessages[0]") != std::string::npos,
                 bad.error.c_str());
    }

    void truncatedAtTheCap() {
        engine::Engine small;
        auto cfg = load("capture: {enabled: true, ws_messages: 5, body_bytes: 2}\n");
        QVERIFY(cfg);
        std::string error;
        QVERIFY2(small.start(cfg, error), error.c_str());
        std::uint16_t port = 0;
        for (const auto& ep : small.endpoints())
            if (!ep.tls) port = ep.port;
        QCOMPARE(client(port, false, "many20", "/echo"), QByteArray("ok"));
        auto got = sessions(small, 0, "/echo", 1);
        QCOMPARE(got.size(), std::size_t(1));
        const auto& e = got[0];
        QCOMPARE(e.messages.size(), std::size_t(5));
        QCOMPARE(e.messageCount, std::uint64_t(42)); // 20 × 2 data messages + the two close frames
        QVERIFY(e.flags & capture::kMessagesTruncated);
        // body_bytes cuts payloads: "m2-payload" → "m2", with its whole size.
        QCOMPARE(e.messages[0].data, std::string("m0"));
        QCOMPARE(e.messages[0].size, std::uint64_t(10));
        QVERIFY(e.messages[0].fromClient);
        QVERIFY(!e.messages[1].fromClient);
        QCOMPARE(e.messages[4].data, std::string("m2"));
        QCOMPARE(e.messages[4].size, std::uint64_t(10));
        QVERIFY(e.approximateBytes() < 4096);
        small.stop();
    }

    void sessionFileKeepsMessages() {
        engine_.flushCapture();
        std::vector<capture::Exchange> live;
        for (auto& e : engine_.recentExchanges(0, 100000))
            if (e.protocol == capture::Protocol::WebSocket) live.push_back(std::move(e));
        engine_.stop();
        std::string error;
        auto store = capture::Store::open(storePath_.toStdString(), error);
        QVERIFY2(store, error.c_str());
        std::size_t found = 0;
        for (const auto& e : store->load()) {
            if (e.protocol != capture::Protocol::WebSocket) continue;
            for (const auto& l : live)
                if (l.id == e.id) {
                    ++found;
                    QVERIFY(!(e.flags & capture::kIncomplete));
                    QCOMPARE(e.messageCount, l.messageCount);
                    QVERIFY(e.messages == l.messages);
                    QVERIFY(e.phases == l.phases);
                    QCOMPARE(e.status, 101);
                }
        }
        QCOMPARE(found, live.size());
    }

    // The CLI path: `serve --record`, a session still open when the server stops (drain sends
    // Close 1001), then `har export`: the final records are in the file.
    void recordedByServeAndExported() {
        const QString yaml = dir_.filePath("serve.yaml");
        QFile y(yaml);
        QVERIFY(y.open(QIODevice::WriteOnly));
        y.write("listen: [127.0.0.1:0]\nvhosts:\n  - default: true\n    routes:\n"
                "      - {path: /echo, websocket: echo}\n");
        y.close();
        const QString db = dir_.filePath("serve.db");
        auto server = std::make_unique<test::ServerProcess>(QStringList{"--config", yaml, "--record", db});
        QVERIFY2(server->waitReady(), server->output().constData());
        QCOMPARE(client(server->port(), false, "echo", "/echo"), QByteArray("ok"));
        QProcess held;
        client(server->port(), false, "hold", "/echo?held", &held);
        QVERIFY(held.waitForReadyRead(15000));
        QCOMPARE(held.readLine().trimmed(), QByteArray("ready"));
        QCOMPARE(server->terminate(), 0);
        server.reset();
        held.write("\n");
        held.waitForFinished(5000);
        auto r = test::runProcess(test::porticoBinary(), {"har", "export", db, "-"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonArray entries =
            QJsonDocument::fromJson(r.out).object()["log"].toObject()["entries"].toArray();
        QCOMPARE(entries.size(), 2);
        const QJsonObject echo = entries[0].toObject(), heldEntry = entries[1].toObject();
        QCOMPARE(echo["_resourceType"].toString(), QString("websocket"));
        QCOMPARE(echo["response"].toObject()["status"].toInt(), 101);
        const QJsonArray m = echo["_webSocketMessages"].toArray();
        QCOMPARE(m.size(), 8);
        QCOMPARE(m[0].toObject()["type"].toString(), QString("send"));
        QCOMPARE(m[0].toObject()["opcode"].toInt(), 1);
        QCOMPARE(m[0].toObject()["data"].toString(), QString("hello"));
        QCOMPARE(m[1].toObject()["type"].toString(), QString("receive"));
        QCOMPARE(m[2].toObject()["data"].toString(), QString("AP8B/gD/Af4A/wH+AP8B/g=="));
        const double t0 = m[0].toObject()["time"].toDouble();
        QVERIFY(t0 > 1.6e9 && t0 <= m[7].toObject()["time"].toDouble());
        // The held session was closed by the drain: the server's Close 1001 is its last frame.
        QVERIFY(!(heldEntry["_portico"].toObject()["flags"].toInt() & capture::kIncomplete));
        const QJsonArray h = heldEntry["_webSocketMessages"].toArray();
        QVERIFY(h.size() >= 3);
        QString closeData;
        for (const auto& x : h)
            if (x.toObject()["opcode"].toInt() == 8 && x.toObject()["type"].toString() == "receive")
                closeData = x.toObject()["data"].toString();
        QCOMPARE(QByteArray::fromBase64(closeData.toLatin1()).left(2), QByteArray("\x03\xe9", 2)); // 1001
    }

    void oldSessionFileStillLoads() {
        // A file written before the message columns existed (the first portico-capture-1 schema).
        const QString path = dir_.filePath("old.db");
        const QByteArray sql =
            "CREATE TABLE portico_session (key TEXT PRIMARY KEY, value TEXT);"
            "INSERT INTO portico_session VALUES ('format', 'portico-capture-1');"
            "CREATE TABLE exchanges (id INTEGER PRIMARY KEY, started_unix_ns INTEGER NOT NULL,"
            " connection_id INTEGER, stream_id INTEGER, protocol INTEGER, http_version INTEGER,"
            " tls_version TEXT, alpn TEXT, client TEXT, local_port INTEGER, vhost TEXT, route TEXT,"
            " method TEXT, scheme TEXT, authority TEXT, target TEXT, status INTEGER, error TEXT,"
            " flags INTEGER, request_headers BLOB, request_trailers BLOB, request_body BLOB,"
            " request_body_size INTEGER, request_headers_size INTEGER, response_headers BLOB,"
            " response_body BLOB, response_body_size INTEGER, response_headers_size INTEGER,"
            " accepted_ns INTEGER, tls_done_ns INTEGER, request_headers_ns INTEGER,"
            " request_body_done_ns INTEGER, route_matched_ns INTEGER, upstream_connected_ns INTEGER,"
            " upstream_first_byte_ns INTEGER, response_first_byte_ns INTEGER, response_done_ns INTEGER);"
            "INSERT INTO exchanges (id, started_unix_ns, protocol, method, target, status) "
            "VALUES (7, 1000, 0, 'GET', '/old', 200);";
        auto r = test::runProcess("sqlite3", {path}, sql);
        QCOMPARE(r.exitCode, 0);
        std::string error;
        auto store = capture::Store::open(path.toStdString(), error);
        QVERIFY2(store, error.c_str());
        auto rows = store->load();
        QCOMPARE(rows.size(), std::size_t(1));
        QCOMPARE(rows[0].id, std::uint64_t(7));
        QCOMPARE(rows[0].target, std::string("/old"));
        QVERIFY(rows[0].messages.empty());
        QCOMPARE(rows[0].messageCount, std::uint64_t(0));
        // ... and takes new records with messages after the migration.
        capture::Exchange e;
        e.protocol = capture::Protocol::WebSocket;
        e.messages.push_back({5, true, 1, "x", 1});
        e.messageCount = 1;
        std::vector<capture::Exchange> add{e};
        QVERIFY2(store->append(add), store->error().c_str());
        QVERIFY(store->commit());
        rows = store->load(7);
        QCOMPARE(rows.size(), std::size_t(1));
        QVERIFY(rows[0].messages == e.messages);
    }
};

QTEST_GUILESS_MAIN(TestCaptureWebSocket)
#include "tst_capture_websocket.moc"
