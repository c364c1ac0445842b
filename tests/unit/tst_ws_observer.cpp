// The passive frame reader of proxied WebSocket tunnels (core/src/ws/observer.h): the same frame
// sequence, masked (client) or not (server), plain or with permessage-deflate (context takeover),
// fed whole, byte by byte, in odd pieces and split at every point of its head, must yield the
// same messages; fragmented messages are one message, control frames in between are their own;
// malformed streams stop it with a reason, for good.
#include "ws/observer.h"

#include <QtTest>

#include <zlib.h>

#include <string>
#include <vector>

using namespace portico::ws;

namespace {

struct Seen {
    int opcode;
    std::uint64_t size;
    std::string prefix;
    bool compressed;
    bool operator==(const Seen&) const = default;
};

constexpr std::size_t kPrefix = 64;

// One frame as its side sends it (RFC 6455 §5.2): client frames masked with a fixed key.
std::string frame(bool client, int op, bool fin, std::string_view payload, bool rsv1 = false) {
    std::string f;
    f += static_cast<char>((fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | op);
    const char m = client ? char(0x80) : char(0);
    if (payload.size() < 126) {
        f += static_cast<char>(m | static_cast<char>(payload.size()));
    } else if (payload.size() <= 0xffff) {
        f += static_cast<char>(m | 126);
        f += static_cast<char>(payload.size() >> 8);
        f += static_cast<char>(payload.size());
    } else {
        f += static_cast<char>(m | 127);
        for (int i = 7; i >= 0; --i)
            f += static_cast<char>(static_cast<std::uint64_t>(payload.size()) >> (8 * i));
    }
    const unsigned char key[4] = {0x37, 0xfa, 0x21, 0x3d};
    if (client) f.append(reinterpret_cast<const char*>(key), 4);
    for (std::size_t i = 0; i < payload.size(); ++i)
        f += client ? static_cast<char>(payload[i] ^ key[i & 3]) : payload[i];
    return f;
}

// A raw-deflate compressor that keeps its window across messages (no context takeover reset).
class Compressor {
public:
    Compressor() { deflateInit2(&z_, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY); }
    ~Compressor() { deflateEnd(&z_); }
    std::string operator()(std::string_view in) {
        std::string out(in.size() + 1024, '\0');
        z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
        z_.avail_in = static_cast<uInt>(in.size());
        z_.next_out = reinterpret_cast<Bytef*>(out.data());
        z_.avail_out = static_cast<uInt>(out.size());
        deflate(&z_, Z_SYNC_FLUSH);
        out.resize(out.size() - z_.avail_out);
        // RFC 7692 §7.2.1: without 00 00 FF FF; nothing to flush (an empty message) → one 00 byte
        // (an empty non-final stored block's first bits, §7.2.3.6).
        if (out.size() >= 4) out.resize(out.size() - 4);
        if (out.empty()) out.assign(1, '\0');
        return out;
    }

private:
    z_stream z_{};
};

std::string pattern(std::size_t n, int seed) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i)
        s[i] = static_cast<char>((i * 31 + seed) & 255);
    return s;
}

// A conversation's frames from one side and the messages they are.
void build(bool client, bool deflate, std::string& wire, std::vector<Seen>& want) {
    Compressor z;
    auto data = [&](int op, const std::string& payload) {
        if (deflate) {
            wire += frame(client, op, true, z(payload), true);
            want.push_back({op, payload.size(), payload.substr(0, kPrefix), true});
        } else {
            wire += frame(client, op, true, payload);
            want.push_back({op, payload.size(), payload.substr(0, kPrefix), false});
        }
    };
    data(1, "hello");
    data(2, pattern(300, 1));     // 16-bit length
    data(2, pattern(70000, 2));   // 64-bit length
    data(1, "hello hello hello"); // with deflate, refers back to the first message
    wire += frame(client, 9, true, "ping!");
    want.push_back({9, 5, "ping!", false});
    // A fragmented message with a pong between its frames (§5.4), compressed as one message.
    const std::string whole = "fragmented " + std::string(100, 'x');
    if (deflate) {
        const std::string c = z(whole);
        wire += frame(client, 1, false, c.substr(0, 3), true);
        wire += frame(client, 10, true, "");
        wire += frame(client, 0, false, c.substr(3, 5));
        wire += frame(client, 0, true, c.substr(8));
    } else {
        wire += frame(client, 1, false, "frag");
        wire += frame(client, 10, true, "");
        wire += frame(client, 0, false, "mented ");
        wire += frame(client, 0, true, std::string(100, 'x'));
    }
    want.push_back({10, 0, "", false});
    want.push_back({1, whole.size(), whole.substr(0, kPrefix), deflate});
    data(2, ""); // empty data message
    const std::string close = std::string("\x03\xe8", 2) + "done";
    wire += frame(client, 8, true, close);
    want.push_back({8, close.size(), close, false});
}

std::vector<Seen> observe(bool client, bool deflate, std::string_view wire, std::size_t piece,
                          std::size_t splitAt = 0) {
    std::vector<Seen> got;
    FrameObserver ob({client, deflate, kPrefix, 64ull << 20}, [&](const ObservedMessage& m) {
        got.push_back({static_cast<int>(m.opcode), m.size, std::string(m.prefix), m.compressed});
    });
    std::string_view rest = wire;
    if (splitAt) {
        if (!ob.feed(rest.substr(0, splitAt))) return {};
        rest.remove_prefix(splitAt);
    }
    while (!rest.empty()) {
        const std::size_t n = std::min(piece, rest.size());
        if (!ob.feed(rest.substr(0, n))) {
            qWarning() << "stopped:" << ob.error().c_str();
            return {};
        }
        rest.remove_prefix(n);
    }
    return got;
}

} // namespace

class TestWsObserver : public QObject {
    Q_OBJECT
private slots:
    void sameMessagesWhateverTheSplit_data() {
        QTest::addColumn<bool>("client");
        QTest::addColumn<bool>("deflate");
        QTest::newRow("client plain") << true << false;
        QTest::newRow("server plain") << false << false;
        QTest::newRow("client deflate") << true << true;
        QTest::newRow("server deflate") << false << true;
    }
    void sameMessagesWhateverTheSplit() {
        QFETCH(bool, client);
        QFETCH(bool, deflate);
        std::string wire;
        std::vector<Seen> want;
        build(client, deflate, wire, want);
        QVERIFY(observe(client, deflate, wire, wire.size()) == want);
        for (std::size_t piece : {1, 2, 3, 5, 7, 13, 4096, 65536})
            QVERIFY2(observe(client, deflate, wire, piece) == want, qPrintable(QString::number(piece)));
        // Two pieces, split at every byte of the first few frames (headers, keys, payloads).
        for (std::size_t at = 1; at < std::min<std::size_t>(wire.size(), 1000); ++at)
            QVERIFY2(observe(client, deflate, wire, wire.size(), at) == want,
                     qPrintable(QString::number(at)));
    }

    void theFedBytesAreNotChanged() {
        std::string wire;
        std::vector<Seen> want;
        build(true, true, wire, want);
        const std::string copy = wire;
        observe(true, true, wire, 7);
        QVERIFY(wire == copy);
    }

    void malformedStops_data() {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<bool>("client");
        QTest::addColumn<bool>("deflate");
        QTest::addColumn<QString>("why");
        auto b = [](const std::string& s) { return QByteArray::fromStdString(s); };
        QTest::newRow("RSV2") << b(std::string("\xa1\x00", 2)) << false << false << "RSV2/RSV3";
        QTest::newRow("reserved opcode")
            << b(std::string("\x83\x00", 2)) << false << false << "reserved opcode 3";
        QTest::newRow("unmasked client frame")
            << b(frame(false, 1, true, "x")) << true << false << "unmasked";
        QTest::newRow("masked server frame")
            << b(frame(true, 1, true, "x")) << false << false << "masked server";
        QTest::newRow("fragmented ping")
            << b(frame(false, 9, false, "x")) << false << false << "fragmented control";
        QTest::newRow("long ping") << b(std::string("\x89\x7e\x00\x80", 4)) << false << false << "over 125";
        QTest::newRow("stray continuation")
            << b(frame(false, 0, true, "x")) << false << false << "continuation frame without";
        QTest::newRow("message in a message") << b(frame(false, 1, false, "a") + frame(false, 1, true, "b"))
                                              << false << false << "inside a fragmented";
        QTest::newRow("RSV1 without deflate")
            << b(frame(false, 1, true, "x", true)) << false << false << "without permessage-deflate";
        QTest::newRow("RSV1 on ping")
            << b(frame(false, 9, true, "x", true)) << false << true << "control frame";
        QTest::newRow("length top bit")
            << b(std::string("\x82\x7f\x80\x00\x00\x00\x00\x00\x00\x00", 10)) << false << false << "top bit";
        QTest::newRow("bad deflate data") << b(frame(false, 1, true, "\xff\xff\xff\xff", true)) << false
                                          << true << "invalid compressed data";
        QTest::newRow("HTTP instead of frames")
            << QByteArray("GET / HTTP/1.1\r\n\r\n") << true << false << "";
    }
    void malformedStops() {
        QFETCH(QByteArray, bytes);
        QFETCH(bool, client);
        QFETCH(bool, deflate);
        QFETCH(QString, why);
        int seen = 0;
        FrameObserver ob({client, deflate, kPrefix, 1 << 20}, [&](const ObservedMessage&) { ++seen; });
        QVERIFY(!ob.feed(bytes.toStdString()));
        QVERIFY(ob.failed());
        QVERIFY2(ob.error().find(why.toStdString()) != std::string::npos, ob.error().c_str());
        QVERIFY(ob.offset() <= std::uint64_t(bytes.size()));
        // Sticky: valid frames afterwards are not read any more.
        QVERIFY(!ob.feed(frame(client, 1, true, "ok")));
        QCOMPARE(seen, 0);
    }

    void inflateIsBounded() {
        Compressor z;
        const std::string zeros(100000, '\0');
        const std::string wire = frame(false, 2, true, z(zeros), true);
        QVERIFY(wire.size() < 1000); // a "bomb" at 100:1 and more
        int seen = 0;
        FrameObserver ob({false, true, kPrefix, 50000}, [&](const ObservedMessage&) { ++seen; });
        QVERIFY(!ob.feed(wire));
        QVERIFY2(ob.error().find("inflates to more than 50000 bytes") != std::string::npos,
                 ob.error().c_str());
        QCOMPARE(seen, 0);
        // Within the bound: the whole size, the prefix only.
        FrameObserver ok({false, true, kPrefix, 100000}, [&](const ObservedMessage& m) {
            ++seen;
            QCOMPARE(m.size, std::uint64_t(100000));
            QCOMPARE(m.prefix.size(), kPrefix);
            QVERIFY(m.compressed);
        });
        QVERIFY(ok.feed(wire));
        QCOMPARE(seen, 1);
    }

    // A control frame's prefix is capped like a data message's (a close reason went through whole).
    void controlFramePrefixIsCapped() {
        const std::string close = std::string("\x03\xe8", 2) + std::string(100, 'r');
        std::vector<std::pair<std::size_t, std::uint64_t>> got; // prefix size, size
        FrameObserver ob({true, false, 16, 1 << 20},
                         [&](const ObservedMessage& m) { got.emplace_back(m.prefix.size(), m.size); });
        QVERIFY(ob.feed(frame(true, 9, true, std::string(50, 'p')) + frame(true, 8, true, close)));
        QCOMPARE(got.size(), std::size_t(2));
        QCOMPARE(got[0], (std::pair<std::size_t, std::uint64_t>(16, 50)));
        QCOMPARE(got[1], (std::pair<std::size_t, std::uint64_t>(16, 102)));
    }

    // A message whose deflate stream ends with a final block (BFINAL, Z_FINISH) is fine at the
    // end of its last frame; compressed bytes after that block, in the same frame or in a later
    // fragment, are invalid — whatever the split. (libFuzzer, ws_observer: when the block ended
    // exactly at the end of a fed piece, the next bytes started a new stream and were accepted.)
    void bytesAfterTheFinalDeflateBlockFailWhateverTheSplit() {
        auto finished = [](std::string_view in) {
            z_stream z{};
            deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
            std::string out(in.size() + 1024, '\0');
            z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
            z.avail_in = static_cast<uInt>(in.size());
            z.next_out = reinterpret_cast<Bytef*>(out.data());
            z.avail_out = static_cast<uInt>(out.size());
            deflate(&z, Z_FINISH);
            out.resize(out.size() - z.avail_out);
            deflateEnd(&z);
            return out;
        };
        const std::string text = pattern(300, 7);
        const std::string ended = finished(text);
        Compressor more;
        const std::string ok = frame(false, 2, true, ended, true);
        const std::string trailing = frame(false, 2, true, ended + more("after"), true);
        const std::string fragment =
            frame(false, 2, false, ended, true) + frame(false, 0, true, Compressor()("after"));
        for (std::size_t piece : {std::size_t(1), std::size_t(3), ok.size() - 1, std::size_t(1 << 20)}) {
            const auto got = observe(false, true, ok, piece);
            QCOMPARE(got.size(), std::size_t(1));
            QCOMPARE(got[0].size, std::uint64_t(text.size()));
            for (const std::string* bad : {&trailing, &fragment}) {
                FrameObserver ob({false, true, kPrefix, 1 << 20}, [](const ObservedMessage&) {});
                bool fed = true;
                for (std::size_t at = 0; fed && at < bad->size(); at += piece)
                    fed = ob.feed(std::string_view(*bad).substr(at, piece));
                QVERIFY2(!fed && ob.error() == "invalid compressed data",
                         qPrintable(QString("piece %1: %2").arg(piece).arg(ob.error().c_str())));
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestWsObserver)
#include "tst_ws_observer.moc"
