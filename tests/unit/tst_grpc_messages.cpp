// gRPC messages of captured calls, without a network: the Length-Prefixed-Message splitter (split
// anywhere, bounded), the raw protobuf view against `protoc --decode_raw` as an oracle, descriptor
// sets written by protoc from tests/support/grpc_test.proto (JSON, errors), the `descriptor_set`
// config key, how broken messages read, and gRPC records through the session file and HAR.
#include "test_support.h"

#include <portico/capture/grpc.h>
#include <portico/capture/har.h>
#include <portico/capture/store.h>
#include <portico/config/writer.h>
#include <portico/validate/load.h>

#include <QTemporaryDir>
#include <QtTest>

using namespace portico;
using capture::GrpcMessageText;

namespace {

std::string framed(std::uint8_t flag, std::string_view payload) {
    std::string out(5, '\0');
    out[0] = static_cast<char>(flag);
    const auto n = static_cast<std::uint32_t>(payload.size());
    out[1] = static_cast<char>(n >> 24);
    out[2] = static_cast<char>(n >> 16);
    out[3] = static_cast<char>(n >> 8);
    out[4] = static_cast<char>(n);
    return out + std::string(payload);
}

struct Got {
    std::uint8_t flag;
    std::uint32_t length;
    std::string prefix;
    bool operator==(const Got&) const = default;
};

QString protoDir() { return test::sourceDir() + "/tests/support"; }

// protoc --encode=test.EchoMessage from text format.
std::string encode(const QByteArray& textFormat) {
    auto r = test::runProcess("protoc", {"-I" + protoDir(), "--encode=test.EchoMessage", "grpc_test.proto"},
                              textFormat);
    if (r.exitCode != 0) qWarning("protoc --encode: %s", r.err.constData());
    return r.out.toStdString();
}

capture::Exchange call(std::string target) {
    capture::Exchange e;
    e.protocol = capture::Protocol::Grpc;
    e.httpVersion = 20;
    e.method = "POST";
    e.scheme = "http";
    e.authority = "127.0.0.1";
    e.target = std::move(target);
    return e;
}

capture::Message message(bool fromClient, std::string data, std::uint8_t flag = 0) {
    capture::Message m;
    m.fromClient = fromClient;
    m.opcode = flag;
    m.size = data.size();
    m.data = std::move(data);
    return m;
}

} // namespace

class TestGrpcMessages : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QString descriptorSet_;

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        if (test::runProcess("protoc", {"--version"}).exitCode != 0)
            QSKIP("protoc is not installed (protobuf-compiler; installers/dev.sh installs it)");
        descriptorSet_ = dir_.filePath("grpc_test.pb");
        auto r = test::runProcess("protoc", {"-I" + protoDir(), "--include_imports",
                                             "--descriptor_set_out=" + descriptorSet_, "grpc_test.proto"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
    }

    // Every way of cutting three messages into two or three pieces gives the same messages.
    void splitterReassemblesAcrossPieces() {
        const std::string stream = framed(0, "hello") + framed(1, std::string(300, 'x')) + framed(0, "");
        const std::vector<Got> want{{0, 5, "hello"}, {1, 300, std::string(64, 'x')}, {0, 0, ""}};
        for (std::size_t a = 0; a <= stream.size(); ++a) {
            for (std::size_t b = a; b <= stream.size(); b += 7) {
                capture::GrpcMessageSplitter sp(64);
                std::vector<Got> got;
                auto on = [&](std::uint8_t f, std::uint32_t n, std::string_view p) {
                    got.push_back({f, n, std::string(p)});
                };
                sp.feed(std::string_view(stream).substr(0, a), on);
                sp.feed(std::string_view(stream).substr(a, b - a), on);
                sp.feed(std::string_view(stream).substr(b), on);
                QVERIFY2(got == want, qPrintable(QString("split at %1, %2").arg(a).arg(b)));
                QVERIFY(!sp.midMessage());
            }
        }
        // One byte at a time, including the 5-byte prefix.
        capture::GrpcMessageSplitter sp(64);
        std::vector<Got> got;
        for (char c : stream)
            sp.feed(std::string_view(&c, 1), [&](std::uint8_t f, std::uint32_t n, std::string_view p) {
                got.push_back({f, n, std::string(p)});
            });
        QVERIFY(got == want);
    }

    void splitterKeepsOnlyAPrefixAndSaysWhereItStopped() {
        capture::GrpcMessageSplitter sp(16);
        int calls = 0;
        auto on = [&](std::uint8_t, std::uint32_t, std::string_view) { ++calls; };
        // Claims 4 GiB - 1: nothing is buffered beyond the prefix.
        sp.feed(std::string("\x00\xff\xff\xff\xff", 5) + std::string(100000, 'a'), on);
        QCOMPARE(calls, 0);
        QVERIFY(sp.midMessage());
        QCOMPARE(sp.pendingLength(), 0xffffffffu);
        QCOMPARE(sp.pendingReceived(), std::uint64_t(100000));
        QCOMPARE(sp.pendingPrefix(), std::string_view("aaaaaaaaaaaaaaaa"));
        capture::GrpcMessageSplitter half(16);
        half.feed(std::string("\x01\x00", 2), on);
        QVERIFY(half.midMessage());
        QCOMPARE(half.pendingFlag(), std::uint8_t(1));
        QCOMPARE(half.pendingLength(), 0u);
    }

    // The raw view prints exactly what `protoc --decode_raw` prints, and refuses what it refuses.
    void rawViewMatchesProtocDecodeRaw_data() {
        QTest::addColumn<QByteArray>("bytes");
        auto add = [](const char* name, const std::string& b) {
            QTest::newRow(name) << QByteArray(b.data(), qsizetype(b.size()));
        };
        add("scalars", encode("text: \"hello\" n: 42 f32: 7 f64: 123456789012 s: -5 d: 1.5 flag: true"));
        add("nested and packed",
            encode("inner {label: \"x\" values: [1, 2, 300, -1]} tags: \"a\" tags: \"b\""));
        add("escapes",
            encode("text: \"tab\\there \\\"q\\\" 'a' back\\\\slash\\n\" blob: \"\\000\\001\\377\\200\""));
        add("map", encode("counts {key: \"k\" value: -7} counts {key: \"\" value: 0}"));
        add("negative int32", encode("n: -1"));
        add("empty", std::string());
        add("empty string field", std::string("\x0a\x00", 2));
        add("string that parses as a message", encode("text: \"\\x08\\x01\""));
        add("group", std::string("\x0b\x08\x01\x0c\x10\x02", 6));
        add("deep nesting (past protoc's recursion limit)", [] {
            std::string m = "\x08\x01";
            for (int i = 0; i < 120; ++i) {
                std::string len;
                for (std::size_t n = m.size();; n >>= 7) {
                    len.push_back(static_cast<char>((n & 0x7f) | (n >= 0x80 ? 0x80 : 0)));
                    if (n < 0x80) break;
                }
                m = "\x0a" + len + m;
            }
            return m;
        }());
        add("truncated varint", std::string("\x08\xff", 2));
        add("length past the end", std::string("\x0a\x05hi", 4));
        add("field number 0", std::string("\x00\x01", 2));
        add("wire type 7", std::string("\x0f\x01", 2));
        add("end group alone", std::string("\x0c", 1));
        add("unterminated group", std::string("\x0b\x08\x01", 3));
        add("text", std::string("msg-12"));
    }
    void rawViewMatchesProtocDecodeRaw() {
        QFETCH(QByteArray, bytes);
        auto oracle = test::runProcess("protoc", {"--decode_raw"}, bytes);
        std::string ours;
        const bool ok = capture::protobufRawText(std::string_view(bytes.constData(), bytes.size()), ours);
        QCOMPARE(ok, oracle.exitCode == 0);
        if (ok)
            QCOMPARE(QString::fromStdString(ours), QString::fromUtf8(oracle.out));
        else
            QVERIFY(ours.find("error: ") != std::string::npos);
    }

    void descriptorSetDecodesToJson() {
        std::string error;
        auto schema = capture::GrpcSchema::load(descriptorSet_.toStdString(), error);
        QVERIFY2(schema, error.c_str());
        std::string in, out;
        QVERIFY(schema->methodTypes("/test.Echo/Unary", in, out));
        QCOMPARE(in, std::string("test.EchoMessage"));
        QCOMPARE(out, std::string("test.EchoMessage"));
        QVERIFY(!schema->methodTypes("/test.Echo/Nope", in, out));
        QVERIFY(!schema->methodTypes("/other.Svc/Unary", in, out));
        QVERIFY(!schema->methodTypes("nonsense", in, out));
        const auto e = call("/test.Echo/Bidi");
        const auto t = capture::describeGrpcMessage(
            e,
            message(true, encode("text: \"hello\" n: 42 inner {label: \"x\" values: [1, 2, 3]} flag: true")),
            schema.get());
        QCOMPARE(int(t.kind), int(GrpcMessageText::Kind::Json));
        QCOMPARE(t.type, std::string("test.EchoMessage"));
        QCOMPARE(QString::fromStdString(t.text), QString("{\"text\":\"hello\",\"n\":42,\"inner\":{\"label\":"
                                                         "\"x\",\"values\":[1,2,3]},\"flag\":true}"));
        // Not this message type: the raw view, and why.
        const auto bad =
            capture::describeGrpcMessage(e, message(false, std::string("\x0a\x05hi", 4)), schema.get());
        QCOMPARE(int(bad.kind), int(GrpcMessageText::Kind::Malformed));
        QVERIFY(!bad.note.empty());
        const auto wrongType =
            capture::describeGrpcMessage(e, message(false, std::string("\x08\x01\x08\x01", 4)), schema.get());
        QCOMPARE(int(wrongType.kind),
                 int(GrpcMessageText::Kind::Json)); // field 1 as varint: unknown field kept
        // A method the set does not have: raw fields, with a note.
        const auto other =
            capture::describeGrpcMessage(call("/x.Y/Z"), message(true, encode("n: 3")), schema.get());
        QCOMPARE(int(other.kind), int(GrpcMessageText::Kind::Raw));
        QCOMPARE(other.text, std::string("2: 3\n"));
        QCOMPARE(other.note, std::string("method not in the descriptor set"));
    }

    void brokenMessagesReadAsSuch() {
        const auto e = call("/test.Echo/Unary");
        const auto none = capture::describeGrpcMessage(e, message(true, encode("n: 3")), nullptr);
        QCOMPARE(int(none.kind), int(GrpcMessageText::Kind::Raw));
        QCOMPARE(none.text, std::string("2: 3\n"));
        auto c = capture::describeGrpcMessage(e, message(true, "\x1f\x8b garbage", 1), nullptr);
        QCOMPARE(int(c.kind), int(GrpcMessageText::Kind::Compressed));
        auto flag = capture::describeGrpcMessage(e, message(true, "x", 7), nullptr);
        QCOMPARE(int(flag.kind), int(GrpcMessageText::Kind::Malformed));
        QVERIFY(flag.note.find("Compressed-Flag 7") != std::string::npos);
        auto m = message(true, "\x0a\x03"
                               "ab");
        m.size = 100;
        m.cut = true;
        auto cut = capture::describeGrpcMessage(e, m, nullptr);
        QCOMPARE(int(cut.kind), int(GrpcMessageText::Kind::Malformed));
        QVERIFY(cut.note.starts_with("cut: the stream ended after 4 of 100 bytes"));
        auto prefix = message(false, encode("n: 3"));
        prefix.size = 1000;
        auto p = capture::describeGrpcMessage(e, prefix, nullptr);
        QCOMPARE(int(p.kind), int(GrpcMessageText::Kind::Raw));
        QVERIFY(p.note.starts_with("prefix only"));
        // Random bytes never crash the raw view.
        std::string junk;
        for (int i = 0; i < 20000; ++i) {
            junk.push_back(static_cast<char>((i * 7919) ^ (i >> 3)));
            if (i % 97 == 0) {
                std::string out;
                capture::protobufRawText(junk, out);
            }
        }
    }

    void descriptorSetFilesThatDoNotLoad() {
        std::string error;
        QVERIFY(!capture::GrpcSchema::load(dir_.filePath("missing.pb").toStdString(), error));
        QVERIFY2(error.starts_with("cannot read "), error.c_str());
        QFile garbage(dir_.filePath("garbage.pb"));
        QVERIFY(garbage.open(QIODevice::WriteOnly));
        garbage.write("this is not a descriptor set\xff\xff");
        garbage.close();
        QVERIFY(!capture::GrpcSchema::load(garbage.fileName().toStdString(), error));
        QVERIFY2(error.find("not a FileDescriptorSet") != std::string::npos, error.c_str());
        // A set without its imports (no --include_imports of a file that imports another).
        QFile importer(dir_.filePath("importer.proto"));
        QVERIFY(importer.open(QIODevice::WriteOnly));
        importer.write(
            "syntax = \"proto3\";\nimport \"grpc_test.proto\";\nmessage W { test.Inner i = 1; }\n");
        importer.close();
        auto r = test::runProcess("protoc",
                                  {"-I" + protoDir(), "-I" + dir_.path(),
                                   "--descriptor_set_out=" + dir_.filePath("partial.pb"), "importer.proto"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY(!capture::GrpcSchema::load(dir_.filePath("partial.pb").toStdString(), error));
        QVERIFY2(error.find("importer.proto") != std::string::npos, error.c_str());
    }

    void configKeyDescriptorSet() {
        auto load = [&](const QString& route) {
            const std::string yaml = "listen: [127.0.0.1:0]\nvhosts:\n  - names: [a]\n    routes:\n      - "
                                     "path: /test.Echo/*\n        " +
                                     route.toStdString() + "\n";
            return config::loadConfigText(yaml, "g.yaml", dir_.path().toStdString());
        };
        auto ok = load("grpc: {upstream: h2c://127.0.0.1:1, descriptor_set: grpc_test.pb}");
        QVERIFY2(ok.ok(), ok.ok() ? "" : ok.errors.front().toString().c_str());
        const auto& px = std::get<config::ProxyAction>(ok.config->vhosts[0].routes[0].action);
        QCOMPARE(QString::fromStdString(px.descriptorSet), QFileInfo(descriptorSet_).absoluteFilePath());
        // Written back relative to the file's directory, and loaded again.
        const std::string yaml = config::configToYaml(*ok.config, dir_.path().toStdString());
        QVERIFY2(yaml.find("descriptor_set: ./grpc_test.pb") != std::string::npos, yaml.c_str());
        QVERIFY(config::loadConfigText(yaml, "g.yaml", dir_.path().toStdString()).ok());
        auto missing = load("grpc: {upstream: h2c://127.0.0.1:1, descriptor_set: nope.pb}");
        QVERIFY(!missing.ok());
        QVERIFY2(missing.errors.front().toString().starts_with("g.yaml:6:"),
                 missing.errors.front().toString().c_str());
        QVERIFY(missing.errors.front().toString().find("cannot read ") != std::string::npos);
        auto garbage = load("grpc: {upstream: h2c://127.0.0.1:1, descriptor_set: garbage.pb}");
        QVERIFY(!garbage.ok());
        QVERIFY(garbage.errors.front().toString().find("not a FileDescriptorSet") != std::string::npos);
        auto notGrpc = load("proxy: {upstream: h2c://127.0.0.1:1, descriptor_set: grpc_test.pb}");
        QVERIFY(!notGrpc.ok());
        QVERIFY(notGrpc.errors.front().toString().find("descriptor_set belongs to grpc: routes") !=
                std::string::npos);
        // The schema cache finds the route by the record's labels.
        capture::GrpcSchemaCache cache;
        auto e = call("/test.Echo/Unary");
        e.vhost = "a";
        e.route = "/test.Echo/*";
        QVERIFY(cache.forCall(*ok.config, e));
        e.route = "/other";
        QVERIFY(!cache.forCall(*ok.config, e));
    }

    void grpcRecordThroughSessionFileAndHar() {
        auto e = call("/test.Echo/Bidi");
        e.id = 7;
        e.status = 200;
        e.startedUnixNs = 1'700'000'000'000'000'000;
        e.set(capture::Phase::RequestHeaders, 1000);
        e.responseHeaders = {{":status", "200"}, {"content-type", "application/grpc"}};
        e.responseTrailers = {{"grpc-status", "3"}, {"grpc-message", "bad%20thing%E2%9C%93"}};
        auto m1 = message(true, encode("n: 1"));
        m1.timeNs = 2000;
        auto m2 = message(false, std::string("\x00\xff\x01", 3), 1);
        m2.timeNs = 3000;
        m2.size = 10;
        auto m3 = message(true, "ab");
        m3.timeNs = 4000;
        m3.size = 50;
        m3.cut = true;
        e.messages = {m1, m2, m3};
        e.messageCount = 5;
        e.flags = capture::kMessagesTruncated;
        QCOMPARE(e.grpcStatus(), 3);
        QCOMPARE(e.grpcMessage(), std::string("bad thing\xE2\x9C\x93"));

        std::string error;
        auto store = capture::Store::open(dir_.filePath("s.db").toStdString(), error);
        QVERIFY2(store, error.c_str());
        std::vector<capture::Exchange> v{e};
        QVERIFY(store->append(v));
        QVERIFY(store->commit());
        auto back = store->load();
        QCOMPARE(back.size(), std::size_t(1));
        QCOMPARE(back[0].protocol, capture::Protocol::Grpc);
        QVERIFY(back[0].messages == e.messages);
        QVERIFY(back[0].responseTrailers == e.responseTrailers);
        QCOMPARE(back[0].messageCount, std::uint64_t(5));

        const std::string har = capture::toHar({e});
        QVERIFY(har.find("\"_grpcMessages\"") != std::string::npos);
        QVERIFY(har.find("\"kind\": \"compressed\"") != std::string::npos);
        auto imported = capture::fromHar(har);
        QVERIFY2(imported.ok(), imported.error.c_str());
        QCOMPARE(imported.exchanges.size(), std::size_t(1));
        const auto& i = imported.exchanges[0];
        QCOMPARE(i.protocol, capture::Protocol::Grpc);
        QVERIFY(i.messages == e.messages);
        QVERIFY(i.responseTrailers == e.responseTrailers);
        QCOMPARE(i.messageCount, std::uint64_t(5));
        QCOMPARE(i.grpcStatus(), 3);
    }
};

QTEST_GUILESS_MAIN(TestGrpcMessages)
#include "tst_grpc_messages.moc"
