// gRPC calls in the capture: a python3-grpcio client → an in-process engine (h2c, `grpc:` route) →
// a python3-grpcio upstream (tests/support/grpc_upstream.py). Each call must be one record
// (protocol Grpc) holding its Length-Prefixed-Messages both ways in order, with directions, sizes,
// bounded prefixes and the grpc-status; also a message split across DATA frames (prefix included),
// a message the stream ends inside, and JSON through a descriptor set written by protoc.
#include "test_support.h"

#include <portico/capture/grpc.h>
#include <portico/engine/engine.h>
#include <portico/validate/load.h>

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace portico;
using capture::Phase;

namespace {
// "send 5 hello", "receive 8 msg-0": one line per message (data shown when printable and short).
QStringList describe(const capture::Exchange& e) {
    QStringList out;
    for (const auto& m : e.messages) {
        QString line = QString(m.fromClient ? "send " : "receive ") + QString::number(m.size);
        if (m.opcode) line += " flag" + QString::number(m.opcode);
        if (m.cut) line += " cut";
        if (m.data.size() <= 16) line += " " + QString::fromLatin1(QByteArray::fromStdString(m.data).toHex());
        out << line;
    }
    return out;
}
QString hex(const char* s) { return QString::fromLatin1(QByteArray(s).toHex()); }
} // namespace

class TestCaptureGrpc : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QProcess upstream_;
    int upstreamPort_ = 0;
    engine::Engine engine_;
    std::uint16_t port_ = 0;

    QByteArray call(const QString& scenario) {
        auto r = test::runProcess(test::debianPython(),
                                  {test::sourceDir() + "/tests/support/grpc_client.py",
                                   QStringLiteral("127.0.0.1:%1").arg(port_), scenario},
                                  {}, 60000);
        if (r.out.trimmed() != "ok") qWarning("%s", r.err.constData());
        return r.out.trimmed();
    }

    std::uint64_t lastId() {
        engine_.flushCapture();
        auto all = engine_.recentExchanges(0, 1000000);
        return all.empty() ? 0 : all.back().id;
    }

    // The gRPC records after `since` whose target is `target`, once there are `n`.
    std::vector<capture::Exchange> calls(std::uint64_t since, const std::string& target, std::size_t n) {
        std::vector<capture::Exchange> got;
        for (int i = 0; i < 300; ++i) {
            engine_.flushCapture();
            got.clear();
            for (auto& e : engine_.recentExchanges(since, 100000))
                if (e.target == target) got.push_back(std::move(e));
            if (got.size() >= n) break;
            QTest::qWait(20);
        }
        return got;
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        if (test::runProcess(test::debianPython(), {"-c", "import grpc, h2"}).exitCode != 0)
            QSKIP("python3-grpcio / python3-h2 are not installed (installers/dev.sh installs them)");
        if (test::runProcess("protoc", {"--version"}).exitCode != 0)
            QSKIP("protoc is not installed (protobuf-compiler; installers/dev.sh installs it)");
        auto r = test::runProcess("protoc",
                                  {"-I" + test::sourceDir() + "/tests/support", "--include_imports",
                                   "--descriptor_set_out=" + dir_.filePath("echo.pb"), "grpc_test.proto"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QString portFile = dir_.filePath("grpc.port");
        upstreamPort_ = test::startSupportScript(upstream_, "grpc_upstream.py", portFile);
        QVERIFY2(upstreamPort_, upstream_.readAllStandardError().constData());
        const std::string yaml = "workers: 2\nlisten: [127.0.0.1:0]\nlimits: {max_body_bytes: 64MiB}\n"
                                 "capture: {enabled: true, body_bytes: 64, ws_messages: 30}\n"
                                 "vhosts:\n  - names: [127.0.0.1]\n    default: true\n    routes:\n"
                                 "      - path: /test.Echo/*\n        grpc: {upstream: h2c://127.0.0.1:" +
                                 std::to_string(upstreamPort_) + ", descriptor_set: echo.pb}\n";
        auto loaded = config::loadConfigText(yaml, "grpc-capture.yaml", dir_.path().toStdString());
        QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.errors.front().toString().c_str());
        std::string error;
        QVERIFY2(engine_.start(loaded.config, error), error.c_str());
        port_ = engine_.endpoints().front().port;
    }
    void cleanupTestCase() {
        engine_.stop();
        upstream_.kill();
        upstream_.waitForFinished();
    }

    void unaryWithA8MiBMessage() {
        const auto since = lastId();
        QCOMPARE(call("unary"), QByteArray("ok"));
        auto got = calls(since, "/test.Echo/Unary", 2);
        QCOMPARE(got.size(), std::size_t(2));
        const auto& small = got[0];
        QCOMPARE(small.protocol, capture::Protocol::Grpc);
        QCOMPARE(small.httpVersion, std::uint8_t(20));
        QCOMPARE(small.status, 200);
        QCOMPARE(small.grpcStatus(), 0);
        QVERIFY(small.error.empty());
        QCOMPARE(describe(small), QStringList({"send 5 " + hex("hello"), "receive 5 " + hex("hello")}));
        QCOMPARE(small.messageCount, std::uint64_t(2));
        QVERIFY(!small.responseTrailers.empty());
        // 8 MiB both ways, through hundreds of DATA frames: one message each, 64-byte prefixes.
        const auto& big = got[1];
        QCOMPARE(big.messages.size(), std::size_t(2));
        for (const auto& m : big.messages) {
            QCOMPARE(m.size, std::uint64_t(8) << 20);
            QCOMPARE(m.data.size(), std::size_t(64));
            QCOMPARE(static_cast<unsigned char>(m.data[1]), static_cast<unsigned char>(31 + 7));
            QVERIFY(!m.cut);
        }
        QVERIFY(big.messages[0].fromClient && !big.messages[1].fromClient);
        QVERIFY(big.messages[0].timeNs <= big.messages[1].timeNs);
        QVERIFY(big.messages[0].timeNs >= big.at(Phase::RequestHeaders));
    }

    void serverStreaming() {
        const auto since = lastId();
        QCOMPARE(call("server_stream"), QByteArray("ok"));
        auto got = calls(since, "/test.Echo/ServerStream", 1);
        QCOMPARE(got.size(), std::size_t(1));
        const auto& e = got[0];
        // 1 request + 100 answers, 30 kept (capture.ws_messages), all counted.
        QCOMPARE(e.messageCount, std::uint64_t(101));
        QCOMPARE(e.messages.size(), std::size_t(30));
        QVERIFY(e.flags & capture::kMessagesTruncated);
        QCOMPARE(e.messages[0].fromClient, true);
        QCOMPARE(e.messages[0].data, std::string("100"));
        for (std::size_t i = 1; i < e.messages.size(); ++i) {
            QVERIFY(!e.messages[i].fromClient);
            QCOMPARE(e.messages[i].data, "msg-" + std::to_string(i - 1));
            QVERIFY(e.messages[i].timeNs >= e.messages[i - 1].timeNs);
        }
        QCOMPARE(e.grpcStatus(), 0);
    }

    void clientStreaming() {
        const auto since = lastId();
        QCOMPARE(call("client_stream"), QByteArray("ok"));
        auto got = calls(since, "/test.Echo/ClientStream", 1);
        QCOMPARE(got.size(), std::size_t(1));
        const auto& e = got[0];
        QCOMPARE(e.messageCount, std::uint64_t(51));
        for (std::size_t i = 0; i < 29; ++i) {
            QVERIFY(e.messages[i].fromClient);
            QCOMPARE(e.messages[i].data, "m" + std::to_string(i));
        }
        QCOMPARE(e.grpcStatus(), 0);
    }

    void bidiPingPongInOrder() {
        const auto since = lastId();
        QCOMPARE(call("bidi"), QByteArray("ok"));
        auto got = calls(since, "/test.Echo/Bidi", 2);
        QCOMPARE(got.size(), std::size_t(2));
        // Ping-pong: each request's answer comes before the next request.
        const auto& pp = got[0];
        QCOMPARE(pp.messageCount, std::uint64_t(40));
        for (std::size_t i = 0; i < pp.messages.size(); ++i) {
            QCOMPARE(pp.messages[i].fromClient, i % 2 == 0);
            QCOMPARE(pp.messages[i].data, "ping-" + std::to_string(i / 2));
        }
        // All requests, then a half-close: each direction in order (answers may overtake requests).
        QStringList sent, received;
        for (const QString& line : describe(got[1]))
            (line.startsWith("send") ? sent : received) << line;
        QCOMPARE(sent, QStringList({"send 1 61", "send 1 62", "send 1 63"}));
        QCOMPARE(received, QStringList({"receive 1 61", "receive 1 62", "receive 1 63"}));
    }

    void errorStatusAndMessage() {
        const auto since = lastId();
        QCOMPARE(call("error"), QByteArray("ok"));
        auto got = calls(since, "/test.Echo/Unary", 2);
        QCOMPARE(got.size(), std::size_t(2));
        QCOMPARE(got[0].grpcStatus(), 3);
        QCOMPARE(got[0].grpcMessage(), std::string("bad request: fail"));
        QCOMPARE(describe(got[0]), QStringList({"send 4 " + hex("fail")}));
        // Trailers-Only: the status is in the headers, there are no trailers.
        QCOMPARE(got[1].grpcStatus(), 9);
        QVERIFY(got[1].responseTrailers.empty());
    }

    // A call that runs past the client's deadline: either Portico's own grpc-timeout answers
    // (Trailers-Only DEADLINE_EXCEEDED) or the client's RST_STREAM(CANCEL) comes first (no status,
    // said as a cancel). Never a 200 without a gRPC status, as it was recorded before.
    void deadlineCallIsNotAPlain200() {
        const auto since = lastId();
        QCOMPARE(call("deadline"), QByteArray("ok"));
        auto got = calls(since, "/test.Echo/Slow", 1);
        QCOMPARE(got.size(), std::size_t(1));
        const capture::Exchange& e = got[0];
        if (e.status == 200) {
            QCOMPARE(e.grpcStatus(), 4);
        } else {
            QCOMPARE(e.status, 0);
            QVERIFY2(e.error.find("cancelled by the client") != std::string::npos, e.error.c_str());
        }
    }

    void messageSplitAcrossFrames() {
        const auto since = lastId();
        QCOMPARE(call("split"), QByteArray("ok"));
        auto got = calls(since, "/test.Echo/Unary", 1);
        QCOMPARE(got.size(), std::size_t(1));
        QCOMPARE(describe(got[0]), QStringList({"send 5 " + hex("hello"), "receive 5 " + hex("hello")}));
    }

    void streamEndsInsideAMessage() {
        const auto since = lastId();
        call("corrupt");
        auto got = calls(since, "/test.Echo/Unary", 1);
        QCOMPARE(got.size(), std::size_t(1));
        QVERIFY(!got[0].messages.empty());
        const auto& m = got[0].messages[0];
        QVERIFY(m.fromClient);
        QVERIFY(m.cut);
        QCOMPARE(m.size, std::uint64_t(100));
        QCOMPARE(m.data, std::string("0123456789"));
        const auto t = capture::describeGrpcMessage(got[0], m, nullptr);
        QCOMPARE(int(t.kind), int(capture::GrpcMessageText::Kind::Malformed));
    }

    void decodedWithTheRoutesDescriptorSet() {
        const auto since = lastId();
        QCOMPARE(call("proto"), QByteArray("ok"));
        auto got = calls(since, "/test.Echo/Unary", 1);
        QCOMPARE(got.size(), std::size_t(1));
        capture::GrpcSchemaCache cache;
        std::string error;
        auto schema = cache.forCall(*engine_.config(), got[0], &error);
        QVERIFY2(schema, error.c_str());
        QCOMPARE(got[0].messages.size(), std::size_t(2));
        for (const auto& m : got[0].messages) {
            const auto t = capture::describeGrpcMessage(got[0], m, schema.get());
            QCOMPARE(int(t.kind), int(capture::GrpcMessageText::Kind::Json));
            QCOMPARE(QString::fromStdString(t.text),
                     QString("{\"text\":\"hello\",\"n\":42,\"inner\":{\"label\":\"x\",\"values\":[1,2,3]}}"));
        }
    }
};

QTEST_GUILESS_MAIN(TestCaptureGrpc)
#include "tst_capture_grpc.moc"
