// The load generator's HTTP/2 client codec (core/src/client/h2_client_codec.h), driven in memory:
// the server's frames are built here by hand, its header blocks with nghttp2's own HPACK encoder
// (the oracle), and what the codec writes is parsed back into frames and its header blocks decoded
// with nghttp2's HPACK decoder. Expectations follow RFC 9113 (HTTP/2) and RFC 7541 (HPACK).
#include "client/connection.h"
#include "client/h2_client_codec.h"

#include <QtTest>
#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using namespace portico::client;
using namespace std::string_literals;
using Verdict = H2ClientCodec::Verdict;

namespace {

constexpr std::string_view kMagic = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr std::uint32_t kNoSlot = 0xffffffffu;

// Frame types, flags and error codes (RFC 9113 §6, §7) and SETTINGS identifiers (§6.5.2).
constexpr std::uint8_t kData = 0, kHeaders = 1, kPriority = 2, kRstStream = 3, kSettings = 4,
                       kPushPromise = 5, kPing = 6, kGoaway = 7, kWindowUpdate = 8, kContinuation = 9;
constexpr std::uint8_t kEndStream = 0x1, kAck = 0x1, kEndHeaders = 0x4, kPadded = 0x8, kPriorityFlag = 0x20;
constexpr std::uint32_t kNoError = 0, kProtocolError = 1, kInternalError = 2, kFlowControlError = 3,
                        kStreamClosed = 5, kFrameSizeError = 6, kRefusedStream = 7, kCancel = 8,
                        kCompressionError = 9, kEnhanceYourCalm = 0xb, kHttp11Required = 0xd;
constexpr std::uint16_t kHeaderTableSize = 1, kEnablePush = 2, kMaxConcurrentStreams = 3,
                        kInitialWindowSize = 4, kMaxFrameSize = 5;

std::string u32(std::uint32_t v) {
    return {static_cast<char>(v >> 24), static_cast<char>(v >> 16 & 0xff), static_cast<char>(v >> 8 & 0xff),
            static_cast<char>(v & 0xff)};
}

std::uint32_t be32(std::string_view s, std::size_t at) {
    return std::uint32_t(std::uint8_t(s[at])) << 24 | std::uint32_t(std::uint8_t(s[at + 1])) << 16 |
           std::uint32_t(std::uint8_t(s[at + 2])) << 8 | std::uint8_t(s[at + 3]);
}

std::string frameHeader(std::size_t length, std::uint8_t type, std::uint8_t flags, std::uint32_t stream) {
    std::string h{static_cast<char>(length >> 16 & 0xff), static_cast<char>(length >> 8 & 0xff),
                  static_cast<char>(length & 0xff), static_cast<char>(type), static_cast<char>(flags)};
    return h + u32(stream);
}

std::string frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream, std::string_view payload) {
    return frameHeader(payload.size(), type, flags, stream) + std::string(payload);
}

std::string settings(std::initializer_list<std::pair<std::uint16_t, std::uint32_t>> values = {}) {
    std::string p;
    for (const auto& [id, value] : values) {
        p += static_cast<char>(id >> 8);
        p += static_cast<char>(id & 0xff);
        p += u32(value);
    }
    return frame(kSettings, 0, 0, p);
}

std::string settingsAck() { return frame(kSettings, kAck, 0, {}); }
std::string ping(std::string_view payload, std::uint8_t flags = 0) { return frame(kPing, flags, 0, payload); }
std::string windowUpdate(std::uint32_t stream, std::uint32_t increment) {
    return frame(kWindowUpdate, 0, stream, u32(increment));
}
std::string rstStream(std::uint32_t stream, std::uint32_t code) {
    return frame(kRstStream, 0, stream, u32(code));
}
std::string goaway(std::uint32_t last, std::uint32_t code) {
    return frame(kGoaway, 0, 0, u32(last) + u32(code));
}
std::string data(std::uint32_t stream, std::string_view payload, std::uint8_t flags = 0) {
    return frame(kData, flags, stream, payload);
}
// The pieces in order: the elements of a braced list are evaluated in order, the operands of +
// are not, and HPACK encoding has state (the dynamic table).
std::string cat(std::initializer_list<std::string> pieces) {
    std::string s;
    for (const auto& p : pieces)
        s += p;
    return s;
}
// A PADDED frame's payload: the pad length, `content`, then `pad` zero octets (§6.1).
std::string padded(std::string_view content, std::uint8_t pad) {
    return std::string(1, static_cast<char>(pad)) + std::string(content) + std::string(pad, '\0');
}

// A frame the codec wrote.
struct Frame {
    std::uint8_t type = 0;
    std::uint8_t flags = 0;
    std::uint32_t stream = 0;
    std::string payload;
};
constexpr std::uint8_t kTruncated = 0xff; // bytes at the end that are no whole frame

std::vector<Frame> parseFrames(std::string_view s) {
    std::vector<Frame> frames;
    std::size_t at = 0;
    while (s.size() - at >= 9) {
        const std::size_t len = std::size_t(std::uint8_t(s[at])) << 16 |
                                std::size_t(std::uint8_t(s[at + 1])) << 8 | std::uint8_t(s[at + 2]);
        if (s.size() - at - 9 < len) break;
        Frame f;
        f.type = std::uint8_t(s[at + 3]);
        f.flags = std::uint8_t(s[at + 4]);
        f.stream = be32(s, at + 5);
        f.payload = std::string(s.substr(at + 9, len));
        frames.push_back(std::move(f));
        at += 9 + len;
    }
    if (at < s.size()) {
        Frame f;
        f.type = kTruncated;
        f.payload = std::string(s.substr(at));
        frames.push_back(std::move(f));
    }
    return frames;
}

QString describe(const Frame& f) {
    QString s;
    const auto onStream0 = [&] {
        if (f.stream != 0) s += QString(" stream=%1").arg(f.stream);
    };
    switch (f.type) {
    case kData:
        s = QString("DATA %1 %2").arg(f.stream).arg(f.payload.size());
        if (f.flags & kEndStream) s += " END_STREAM";
        if (f.flags & kPadded) s += " PADDED";
        break;
    case kHeaders:
        s = QString("HEADERS %1").arg(f.stream);
        if (f.flags & kEndStream) s += " END_STREAM";
        if (f.flags & kEndHeaders) s += " END_HEADERS";
        if (f.flags & kPadded) s += " PADDED";
        if (f.flags & kPriorityFlag) s += " PRIORITY";
        break;
    case kContinuation:
        s = QString("CONTINUATION %1").arg(f.stream);
        if (f.flags & kEndHeaders) s += " END_HEADERS";
        break;
    case kSettings:
        s = "SETTINGS";
        if (f.flags & kAck) s += " ACK";
        if (f.payload.size() % 6) {
            s += QString(" len=%1").arg(f.payload.size());
        } else {
            for (std::size_t i = 0; i < f.payload.size(); i += 6)
                s += QString(" %1=%2")
                         .arg(std::uint8_t(f.payload[i]) << 8 | std::uint8_t(f.payload[i + 1]))
                         .arg(be32(f.payload, i + 2));
        }
        onStream0();
        break;
    case kPing:
        s = (f.flags & kAck) ? "PING ACK " : "PING ";
        s += QString::fromLatin1(f.payload.data(), qsizetype(f.payload.size()));
        onStream0();
        break;
    case kWindowUpdate:
        if (f.payload.size() == 4)
            s = QString("WINDOW_UPDATE %1 +%2").arg(f.stream).arg(be32(f.payload, 0));
        else
            s = QString("WINDOW_UPDATE %1 len=%2").arg(f.stream).arg(f.payload.size());
        break;
    case kRstStream:
        if (f.payload.size() == 4)
            s = QString("RST_STREAM %1 %2").arg(f.stream).arg(be32(f.payload, 0));
        else
            s = QString("RST_STREAM %1 len=%2").arg(f.stream).arg(f.payload.size());
        break;
    case kGoaway:
        if (f.payload.size() >= 8)
            s = QString("GOAWAY %1 %2").arg(be32(f.payload, 0) & 0x7fffffff).arg(be32(f.payload, 4));
        else
            s = QString("GOAWAY len=%1").arg(f.payload.size());
        onStream0();
        break;
    case kTruncated:
        s = QString("TRUNCATED %1 bytes").arg(f.payload.size());
        break;
    default:
        s = QString("FRAME type=%1 stream=%2 flags=%3 len=%4")
                .arg(int(f.type))
                .arg(f.stream)
                .arg(int(f.flags))
                .arg(f.payload.size());
    }
    return s;
}

QStringList describeEach(const std::vector<Frame>& frames) {
    QStringList l;
    for (const auto& f : frames)
        l << describe(f);
    return l;
}
QString describe(const std::vector<Frame>& frames) { return describeEach(frames).join("; "); }

QByteArray qb(std::string_view s) { return QByteArray(s.data(), qsizetype(s.size())); }

using Fields = std::vector<std::pair<std::string, std::string>>;
using FieldList = std::initializer_list<std::pair<std::string_view, std::string_view>>;

// The server's HPACK encoder: nghttp2's, with its dynamic table (one per connection).
class Deflater {
public:
    Deflater() { nghttp2_hd_deflate_new(&d_, 4096); }
    ~Deflater() { nghttp2_hd_deflate_del(d_); }
    Deflater(const Deflater&) = delete;
    Deflater& operator=(const Deflater&) = delete;

    std::string block(FieldList fields) {
        std::vector<nghttp2_nv> nva;
        for (const auto& [name, value] : fields)
            nva.push_back({const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(name.data())),
                           const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(value.data())),
                           name.size(), value.size(), NGHTTP2_NV_FLAG_NONE});
        std::string out(nghttp2_hd_deflate_bound(d_, nva.data(), nva.size()), '\0');
        const auto n = nghttp2_hd_deflate_hd(d_, reinterpret_cast<std::uint8_t*>(out.data()), out.size(),
                                             nva.data(), nva.size());
        out.resize(n < 0 ? 0 : std::size_t(n));
        return out;
    }

private:
    nghttp2_hd_deflater* d_ = nullptr;
};

// Decodes one header block with nghttp2's HPACK decoder; false on a decoding error.
bool inflate(nghttp2_hd_inflater* inflater, std::string_view block, Fields& fields) {
    auto in = reinterpret_cast<const std::uint8_t*>(block.data());
    std::size_t left = block.size();
    for (;;) {
        nghttp2_nv nv;
        int flags = 0;
        const auto rv = nghttp2_hd_inflate_hd2(inflater, &nv, &flags, in, left, 1);
        if (rv < 0) return false;
        in += rv;
        left -= std::size_t(rv);
        if (flags & NGHTTP2_HD_INFLATE_EMIT)
            fields.emplace_back(std::string(reinterpret_cast<const char*>(nv.name), nv.namelen),
                                std::string(reinterpret_cast<const char*>(nv.value), nv.valuelen));
        if (flags & NGHTTP2_HD_INFLATE_FINAL) {
            nghttp2_hd_inflate_end_headers(inflater);
            return true;
        }
        if (!(flags & NGHTTP2_HD_INFLATE_EMIT) && left == 0) return true;
    }
}

std::string encode(std::initializer_list<HeaderField> fields) {
    return encodeRequestBlock(std::span<const HeaderField>(fields.begin(), fields.size()));
}

PreparedRequest request(std::string body = {}, bool head = false) {
    PreparedRequest r;
    const std::string_view method = head ? "HEAD" : body.empty() ? "GET" : "POST";
    r.h2Block =
        encode({{":method", method}, {":scheme", "http"}, {":authority", "localhost"}, {":path", "/"}});
    r.head = head;
    r.body = std::move(body);
    return r;
}

// A body whose bytes say where they are, so a misplaced piece shows.
std::string pattern(std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i)
        s[i] = static_cast<char>('a' + (i * 7 + i / 26) % 26);
    return s;
}

QString failureName(Failure f) {
    switch (f) {
    case Failure::Reset:
        return "Reset";
    case Failure::Timeout:
        return "Timeout";
    case Failure::Protocol:
        return "Protocol";
    case Failure::Refused:
        return "Refused";
    }
    return "?";
}

QString verdictName(Verdict v) {
    switch (v) {
    case Verdict::Open:
        return "Open";
    case Verdict::Closed:
        return "Closed";
    case Verdict::Error:
        return "Error";
    }
    return "?";
}

struct Recorder final : H2ClientEvents {
    QStringList log;
    std::set<std::uint32_t> hold; // slots whose final head holdResponseHead keeps
    bool logHold = false;         // log each holdResponseHead call as "H<slot>"
    bool holdResponseHead(std::uint32_t slot) override {
        if (logHold) log << QString("H%1").arg(slot);
        return hold.count(slot) > 0;
    }
    void onResponseField(std::uint32_t slot, std::string_view name, std::string_view value) override {
        log << QString("f%1:%2=%3")
                   .arg(slot)
                   .arg(QString::fromUtf8(name.data(), static_cast<int>(name.size())))
                   .arg(QString::fromUtf8(value.data(), static_cast<int>(value.size())));
    }
    void onStreamResponse(std::uint32_t slot, int status) override {
        log << QString("R%1:%2").arg(slot).arg(status);
    }
    void onStreamFailed(std::uint32_t slot, Failure why) override {
        log << QString("F%1:%2").arg(slot).arg(failureName(why));
    }
};

// One codec, started, with what it wrote and what it reported.
struct Client {
    explicit Client(unsigned depth = 4, H2ClientCodec::Settings s = {}) : codec(recorder, depth, s) {
        started = codec.start(preface);
    }

    // Feeds `in` whole: "Open", "Closed" or "Error"; with what was consumed when it was not all of
    // it (and the verdict is not Error).
    QString feed(std::string_view in) {
        used = 0xdeadbeef;
        verdict = codec.receive(reinterpret_cast<const std::uint8_t*>(in.data()), in.size(), used, out);
        QString s = verdictName(verdict);
        if (verdict != Verdict::Error && used != in.size())
            s += QString(" (used %1 of %2)").arg(used).arg(in.size());
        return s;
    }
    // The server's preface (`serverSettings`) and its ACK of the client's SETTINGS, and what the
    // client answered.
    QString handshake(std::string_view serverSettings = settings()) {
        const QString v = feed(std::string(serverSettings) + settingsAck());
        return v + " / " + take();
    }
    std::uint32_t submit(const PreparedRequest& r) {
        std::uint32_t slot = kNoSlot;
        submitted = codec.submit(r, slot, out);
        return submitted ? slot : kNoSlot;
    }
    QString take() { return describe(takeFrames()); }
    QStringList takeSorted() {
        QStringList l = describeEach(takeFrames());
        l.sort();
        return l;
    }
    std::vector<Frame> takeFrames() {
        auto f = parseFrames(out);
        out.clear();
        return f;
    }
    QString events() {
        const QString s = recorder.log.join(' ');
        recorder.log.clear();
        return s;
    }
    // A HEADERS frame of the server's, its block from this connection's HPACK encoder.
    std::string headers(std::uint32_t stream, FieldList fields, std::uint8_t flags = kEndHeaders) {
        return frame(kHeaders, flags, stream, hpack.block(fields));
    }

    Recorder recorder;
    H2ClientCodec codec;
    Deflater hpack;
    std::string preface, out;
    std::size_t used = 0;
    Verdict verdict = Verdict::Open;
    bool started = false;
    bool submitted = false;
};

QString ev(char kind, std::uint32_t slot, const QString& what) {
    return QString("%1%2:%3").arg(kind).arg(slot).arg(what);
}
QString resp(std::uint32_t slot, int status) { return ev('R', slot, QString::number(status)); }
QString fail(std::uint32_t slot, const char* why) { return ev('F', slot, why); }

const std::string kStatus200 = "\x88"; // :status 200, static index 8

struct DataSummary {
    std::size_t total = 0, frames = 0, largest = 0;
    bool endStream = false;   // on the last DATA frame
    bool endTooEarly = false; // END_STREAM on a DATA frame that is not the last
    std::string bytes;
};
DataSummary dataOf(const std::vector<Frame>& frames, std::uint32_t stream) {
    DataSummary d;
    for (const auto& f : frames) {
        if (f.type != kData || f.stream != stream) continue;
        if (d.endStream) d.endTooEarly = true;
        d.total += f.payload.size();
        d.largest = std::max(d.largest, f.payload.size());
        ++d.frames;
        d.endStream = f.flags & kEndStream;
        d.bytes += f.payload;
    }
    return d;
}

} // namespace

namespace portico::client {
char* toString(const H2ClientCodec::Verdict& v) { return qstrdup(verdictName(v).toLatin1().constData()); }
} // namespace portico::client

class TestH2ClientCodec : public QObject {
    Q_OBJECT

private slots:
    // --- encodeRequestBlock (RFC 7541) ---

    void encodeRequestBlockForms_data() {
        QTest::addColumn<QByteArray>("name");
        QTest::addColumn<QByteArray>("value");
        QTest::addColumn<QByteArray>("expected");
        const auto hex = [](const char* h) { return QByteArray::fromHex(h); };
        // Indexed fields (§6.1): name and value in the static table (Appendix A).
        QTest::newRow(":method GET") << QByteArray(":method") << QByteArray("GET") << hex("82");
        QTest::newRow(":method POST") << QByteArray(":method") << QByteArray("POST") << hex("83");
        QTest::newRow(":path /") << QByteArray(":path") << QByteArray("/") << hex("84");
        QTest::newRow(":path /index.html") << QByteArray(":path") << QByteArray("/index.html") << hex("85");
        QTest::newRow(":scheme http") << QByteArray(":scheme") << QByteArray("http") << hex("86");
        QTest::newRow(":scheme https") << QByteArray(":scheme") << QByteArray("https") << hex("87");
        QTest::newRow("accept-encoding gzip, deflate")
            << QByteArray("accept-encoding") << QByteArray("gzip, deflate") << hex("90");
        // Literal without indexing, indexed name (§6.2.2): 4-bit prefix index, raw string (H = 0).
        QTest::newRow(":method PUT") << QByteArray(":method") << QByteArray("PUT") << hex("0203") + "PUT";
        QTest::newRow(":path /a") << QByteArray(":path") << QByteArray("/a") << hex("0402") + "/a";
        QTest::newRow(":authority") << QByteArray(":authority") << QByteArray("localhost:8080")
                                    << hex("010e") + "localhost:8080";
        QTest::newRow("accept-encoding br")
            << QByteArray("accept-encoding") << QByteArray("br") << hex("0f0102") + "br";
        // Index 15 fills the 4-bit prefix: 0x0f then 0 (§5.1).
        QTest::newRow("name index 15")
            << QByteArray("accept-charset") << QByteArray("utf-8") << hex("0f0005") + "utf-8";
        QTest::newRow("user-agent (58)")
            << QByteArray("user-agent") << QByteArray("portico") << hex("0f2b07") + "portico";
        QTest::newRow("www-authenticate (61)")
            << QByteArray("www-authenticate") << QByteArray("x") << hex("0f2e01") + "x";
        // Literal without indexing, new name (§6.2.2).
        QTest::newRow("new name") << QByteArray("x-custom") << QByteArray("v")
                                  << hex("0008") + "x-custom" + hex("01") + "v";
        QTest::newRow("new name, empty value")
            << QByteArray("x-empty") << QByteArray("") << hex("0007") + "x-empty" + hex("00");
        QTest::newRow("static name, empty value not in the table")
            << QByteArray(":path") << QByteArray("") << hex("0400");
        QTest::newRow("user-agent, empty value (index 58)")
            << QByteArray("user-agent") << QByteArray("") << hex("ba");
        // String lengths on a 7-bit prefix (§5.1, §5.2).
        QTest::newRow("value 126") << QByteArray("x-long") << QByteArray(126, 'a')
                                   << hex("0006") + "x-long" + hex("7e") + QByteArray(126, 'a');
        QTest::newRow("value 127") << QByteArray("x-long") << QByteArray(127, 'a')
                                   << hex("0006") + "x-long" + hex("7f00") + QByteArray(127, 'a');
        QTest::newRow("value 200") << QByteArray("x-long") << QByteArray(200, 'a')
                                   << hex("0006") + "x-long" + hex("7f49") + QByteArray(200, 'a');
        QTest::newRow("value 300") << QByteArray("x-long") << QByteArray(300, 'a')
                                   << hex("0006") + "x-long" + hex("7fad01") + QByteArray(300, 'a');
        QTest::newRow("value 16511") << QByteArray("x-long") << QByteArray(16511, 'a')
                                     << hex("0006") + "x-long" + hex("7f808001") + QByteArray(16511, 'a');
        QTest::newRow("user-agent, value 200")
            << QByteArray("user-agent") << QByteArray(200, 'u') << hex("0f2b7f49") + QByteArray(200, 'u');
        QTest::newRow("name 130") << QByteArray(130, 'n') << QByteArray("v")
                                  << hex("007f03") + QByteArray(130, 'n') + hex("01") + "v";
    }
    void encodeRequestBlockForms() {
        QFETCH(QByteArray, name);
        QFETCH(QByteArray, value);
        QFETCH(QByteArray, expected);
        const std::array<HeaderField, 1> f{
            {{std::string_view(name.constData(), std::size_t(name.size())),
              std::string_view(value.constData(), std::size_t(value.size()))}}};
        QCOMPARE(qb(encodeRequestBlock(f)), expected);
    }

    // A field whose static entry has an empty value ("accept", Appendix A index 19) is an indexed
    // field when its value is empty too (§6.1): name and value are both in the table.
    void encodeEmptyValueOfAStaticEntry() {
        QCOMPARE(qb(encode({{"accept", ""}})), QByteArray::fromHex("93"));
        QCOMPARE(qb(encode({{"content-type", ""}})), QByteArray::fromHex("9f"));
    }

    void encodeRequestBlockRoundTrip() {
        const std::string longValue(5000, 'v'), longName(200, 'n');
        const std::vector<HeaderField> fields = {
            {":method", "GET"},
            {":scheme", "https"},
            {":authority", "example.com:8443"},
            {":path", "/a/b?c=d"},
            {"user-agent", "portico/0.1"},
            {"accept", "*/*"},
            {"accept", ""},
            {"accept-encoding", "gzip, deflate"},
            {"accept-encoding", "br"},
            {"x-empty", ""},
            {"x-long", longValue},
            {longName, "x"},
            {"content-type", "application/json"},
            {"cookie", "a=1"},
            {"cookie", "b=2"},
            {"x-bin", std::string_view("\x01\xff\x7f", 3)},
        };
        const std::string block = encodeRequestBlock(fields);

        nghttp2_hd_inflater* inflater = nullptr;
        QCOMPARE(nghttp2_hd_inflate_new(&inflater), 0);
        Fields decoded;
        const bool ok = inflate(inflater, block, decoded);
        const std::size_t entries = nghttp2_hd_inflate_get_num_table_entries(inflater);
        // The same bytes decode the same way a second time: nothing depends on the dynamic table.
        Fields again;
        const bool ok2 = inflate(inflater, block, again);
        nghttp2_hd_inflate_del(inflater);
        QVERIFY(ok);
        QVERIFY(ok2);
        QCOMPARE(decoded.size(), fields.size());
        for (std::size_t i = 0; i < fields.size(); ++i) {
            QCOMPARE(qb(decoded[i].first), qb(fields[i].first));
            QCOMPARE(qb(decoded[i].second), qb(fields[i].second));
        }
        QCOMPARE(again, decoded);
        QCOMPARE(entries, std::size_t(61)); // the static table only: nothing was added (§6.2.2)

        // Field by field: the block is the concatenation of each field's own representation.
        std::string concatenated;
        for (const auto& f : fields)
            concatenated += encodeRequestBlock(std::span<const HeaderField>(&f, 1));
        QCOMPARE(qb(block), qb(concatenated));
        QCOMPARE(qb(encodeRequestBlock({})), QByteArray());
    }

    // --- the connection preface ---

    void startWritesThePreface() {
        {
            Client c(4, {100000, 1u << 20});
            QVERIFY(c.started);
            QVERIFY(c.preface.size() > kMagic.size());
            QCOMPARE(qb(c.preface.substr(0, kMagic.size())), qb(kMagic));
            const auto frames = parseFrames(std::string_view(c.preface).substr(kMagic.size()));
            QCOMPARE(frames.size(), std::size_t(2));
            QCOMPARE(frames[0].type, kSettings); // the first frame after the magic (§3.4)
            QCOMPARE(frames[0].flags, std::uint8_t(0));
            QCOMPARE(frames[0].stream, 0u);
            QCOMPARE(frames[0].payload.size() % 6, std::size_t(0));
            std::map<int, std::uint32_t> values;
            for (std::size_t i = 0; i < frames[0].payload.size(); i += 6)
                values[std::uint8_t(frames[0].payload[i]) << 8 | std::uint8_t(frames[0].payload[i + 1])] =
                    be32(frames[0].payload, i + 2);
            QVERIFY(values.count(kEnablePush));
            QCOMPARE(values[kEnablePush], 0u);
            QVERIFY(values.count(kInitialWindowSize));
            QCOMPARE(values[kInitialWindowSize], 100000u);
            QCOMPARE(describe(frames[1]), QString("WINDOW_UPDATE 0 +983041")); // 2^20 - 65,535
            QVERIFY(c.out.empty());
        }
        {
            Client c; // the defaults: 2^30 - 1 both
            const auto frames = parseFrames(std::string_view(c.preface).substr(kMagic.size()));
            QCOMPARE(frames.size(), std::size_t(2));
            QVERIFY(describe(frames[0]).contains(" 4=1073741823"));
            QVERIFY(describe(frames[0]).contains(" 2=0"));
            QCOMPARE(describe(frames[1]), QString("WINDOW_UPDATE 0 +1073676288"));
        }
        {
            // The connection window is already 65,535: no WINDOW_UPDATE (an increment of 0 is a
            // PROTOCOL_ERROR, §6.9).
            Client c(1, {65535, 65535});
            const auto frames = parseFrames(std::string_view(c.preface).substr(kMagic.size()));
            QCOMPARE(frames.size(), std::size_t(1));
            QVERIFY(describe(frames[0]).contains(" 4=65535"));
        }
    }

    void startAgainForgetsEverything() {
        Client c(2);
        const auto r = request();
        c.submit(r);
        c.submit(r);
        QCOMPARE(c.codec.inFlight(), std::size_t(2));
        QCOMPARE(c.handshake(),
                 QString("Open / HEADERS 1 END_STREAM END_HEADERS; HEADERS 3 END_STREAM END_HEADERS; "
                         "SETTINGS ACK"));
        QCOMPARE(c.feed(goaway(0x7fffffff, kNoError)), QString("Open"));
        QVERIFY(c.codec.draining());
        std::string again;
        QVERIFY(c.codec.start(again));
        QCOMPARE(qb(again.substr(0, kMagic.size())), qb(kMagic));
        QCOMPARE(c.codec.inFlight(), std::size_t(0));
        QCOMPARE(c.events(), QString());
        QVERIFY(!c.codec.draining());
        // A new connection: stream ids start again at 1, and the server's preface is expected.
        const auto b = c.submit(r);
        QVERIFY(c.submitted);
        QVERIFY(b < 2);
        QCOMPARE(c.take(), QString("HEADERS 1 END_STREAM END_HEADERS"));
        QCOMPARE(c.feed(ping("12345678")), QString("Error"));
        QVERIFY(c.take().contains("GOAWAY 0 1"));
    }

    // --- requests and responses ---

    void requestsAndResponses() {
        Client c(3);
        const auto r = request();
        const auto s1 = c.submit(r), s2 = c.submit(r), s3 = c.submit(r);
        QVERIFY(s1 < 3 && s2 < 3 && s3 < 3);
        QVERIFY(s1 != s2 && s2 != s3 && s1 != s3);
        QCOMPARE(c.codec.inFlight(), std::size_t(3));
        const auto frames = c.takeFrames();
        QCOMPARE(describe(frames),
                 QString("HEADERS 1 END_STREAM END_HEADERS; HEADERS 3 END_STREAM END_HEADERS; "
                         "HEADERS 5 END_STREAM END_HEADERS"));
        for (const auto& f : frames)
            QCOMPARE(qb(f.payload), qb(r.h2Block));
        QCOMPARE(c.handshake(), QString("Open / SETTINGS ACK"));

        QCOMPARE(c.feed(c.headers(1, {{":status", "200"}}, kEndHeaders | kEndStream)), QString("Open"));
        QCOMPARE(c.events(), resp(s1, 200));
        QCOMPARE(c.codec.inFlight(), std::size_t(2));
        QCOMPARE(
            c.feed(c.headers(5, {{":status", "404"}, {"content-length", "2"}}) + data(5, "nf", kEndStream)),
            QString("Open"));
        QCOMPARE(c.events(), resp(s3, 404));
        QCOMPARE(c.feed(c.headers(3, {{":status", "200"}, {"content-type", "text/plain"}})), QString("Open"));
        QCOMPARE(c.events(), QString());
        QCOMPARE(c.feed(data(3, "hello") + data(3, " world")), QString("Open"));
        QCOMPARE(c.events(), QString());
        QCOMPARE(c.codec.inFlight(), std::size_t(1));
        QCOMPARE(c.feed(data(3, "", kEndStream)), QString("Open"));
        QCOMPARE(c.events(), resp(s2, 200));
        QCOMPARE(c.codec.inFlight(), std::size_t(0));
        QCOMPARE(c.take(), QString());
    }

    void requestWithBody() {
        Client c(1);
        QCOMPARE(c.handshake(), QString("Open / SETTINGS ACK"));
        const auto r = request(pattern(100));
        const auto s = c.submit(r);
        const auto frames = c.takeFrames();
        QCOMPARE(describe(frames), QString("HEADERS 1 END_HEADERS; DATA 1 100 END_STREAM"));
        QCOMPARE(qb(frames[0].payload), qb(r.h2Block));
        QCOMPARE(qb(frames[1].payload), qb(r.body));
        QCOMPARE(c.feed(c.headers(1, {{":status", "201"}}, kEndHeaders | kEndStream)), QString("Open"));
        QCOMPARE(c.events(), resp(s, 201));
    }

    void slotsAreReused() {
        Client c(2);
        QCOMPARE(c.handshake(), QString("Open / SETTINGS ACK"));
        const auto r = request();
        const auto a = c.submit(r), b = c.submit(r);
        QCOMPARE(c.take(), QString("HEADERS 1 END_STREAM END_HEADERS; HEADERS 3 END_STREAM END_HEADERS"));
        QCOMPARE(c.feed(c.headers(1, {{":status", "200"}}, kEndHeaders | kEndStream)), QString("Open"));
        QCOMPARE(c.events(), resp(a, 200));
        QCOMPARE(c.codec.inFlight(), std::size_t(1));
        const auto d = c.submit(r);
        QCOMPARE(d, a); // the only free slot
        QCOMPARE(c.take(), QString("HEADERS 5 END_STREAM END_HEADERS"));
        QCOMPARE(c.codec.inFlight(), std::size_t(2));
        std::vector<std::uint32_t> seen;
        c.codec.forEachInFlight([&](std::uint32_t slot) { seen.push_back(slot); });
        std::sort(seen.begin(), seen.end());
        QCOMPARE(seen, (std::vector<std::uint32_t>{0, 1}));
        QCOMPARE(c.feed(cat({c.headers(5, {{":status", "204"}}, kEndHeaders | kEndStream),
                             c.headers(3, {{":status", "500"}}, kEndHeaders | kEndStream)})),
                 QString("Open"));
        QCOMPARE(c.events(), resp(d, 204) + " " + resp(b, 500));
        QCOMPARE(c.codec.inFlight(), std::size_t(0));
    }

    // Thousands of requests through a full stream table, ended in a scrambled order by responses
    // and resets: each event names the slot of its own stream (the id → slot table's probing and
    // erasing).
    void manyRequestsThroughTheIdTable() {
        constexpr unsigned depth = 8;
        Client c(depth);
        QCOMPARE(c.handshake(), QString("Open / SETTINGS ACK"));
        const auto r = request();
        std::map<std::uint32_t, std::uint32_t> streamSlot; // in flight
        std::uint32_t nextId = 1;
        const auto submitOne = [&] {
            const auto slot = c.submit(r);
            const auto frames = c.takeFrames();
            if (!c.submitted || slot >= depth || frames.size() != 1 || frames[0].stream != nextId)
                return false;
            for (const auto& [id, s] : streamSlot)
                if (s == slot) return false;
            streamSlot[nextId] = slot;
            nextId += 2;
            return true;
        };
        for (unsigned i = 0; i < depth; ++i)
            QVERIFY(submitOne());
        std::uint32_t rng = 12345;
        for (int round = 0; round < 3000; ++round) {
            rng = rng * 1103515245u + 12345u;
            auto it = streamSlot.begin();
            std::advance(it, (rng >> 16) % streamSlot.size());
            const auto [id, slot] = *it;
            const bool reset = (rng >> 8) % 5 == 0;
            QCOMPARE(c.feed(reset ? rstStream(id, kRefusedStream)
                                  : c.headers(id, {{":status", "200"}}, kEndHeaders | kEndStream)),
                     QString("Open"));
            QCOMPARE(c.events(), reset ? fail(slot, "Refused") : resp(slot, 200));
            streamSlot.erase(it);
            QCOMPARE(c.codec.inFlight(), std::size_t(depth - 1));
            QVERIFY(submitOne());
        }
        QCOMPARE(c.take(), QString());
    }

    // --- connection-level frames ---

    void settingsAreAcknowledged() {
        Client c(1);
        QCOMPARE(c.handshake(settings({{kMaxConcurrentStreams, 100}, {kHeaderTableSize, 0}})),
                 QString("Open / SETTINGS ACK"));
        QCOMPARE(c.feed(settings({{kInitialWindowSize, 70000}})), QString("Open"));
        QCOMPARE(c.take(), QString("SETTINGS ACK"));
        QCOMPARE(c.feed(settings()), QString("Open"));
        QCOMPARE(c.take(), QString("SETTINGS ACK"));
        QCOMPARE(c.feed(settingsAck()), QString("Open"));
        QCOMPARE(c.take(), QString());
    }

    void pingIsAnswered() {
        Client c(1);
        QCOMPARE(c.handshake(), QString("Open / SETTINGS ACK"));
        QCOMPARE(c.feed(ping("abcdefgh")), QString("Open"));
        QCOMPARE(c.take(), QString("PING ACK abcdefgh"));
        QCOMPARE(c.feed(ping("\x01\x02\x03\x04\x05\x06\x07\x08")), QString("Open"));
        const auto frames = c.takeFrames();
        QCOMPARE(frames.size(), std::size_t(1));
        QCOMPARE(frames[0].flags, kAck);
        QCOMPARE(qb(frames[0].payload), QByteArray("\x01\x02\x03\x04\x05\x06\x07\x08"));
        QCOMPARE(c.feed(ping("abcdefgh", kAck)), QString("Open")); // an answer is not answered
        QCOMPARE(c.take(), QString());
        // Undefined flags are ignored (§4.1).
        QCOMPARE(c.feed(ping("zyxwvuts", 0xf0)), QString("Open"));
        QCOMPARE(c.take(), QString("PING ACK zyxwvuts"));
        QCOMPARE(c.feed(ping("a") + ping("b") + ping("ponmlkji")),
                 QString("Error")); // 1 octet: FRAME_SIZE_ERROR
        QVERIFY(c.take().endsWith("GOAWAY 0 6"));
    }

    void firstFrameMustBeSettings_data() {
        QTest::addColumn<QByteArray>("in");
        QTest::newRow("PING") << qb(ping("12345678"));
        QTest::newRow("WINDOW_UPDATE") << qb(windowUpdate(0, 100));
        QTest::newRow("HEADERS") << qb(frame(kHeaders, kEndHeaders | kEndStream, 1, kStatus200));
        QTest::newRow("SETTINGS ACK") << qb(settingsAck() + settings());
    }
    void firstFrameMustBeSettings() {
        QFETCH(QByteArray, in);
        Client c(1);
        const auto r = request();
        c.submit(r);
        c.out.clear();
        QCOMPARE(c.feed(std::string_view(in.constData(), std::size_t(in.size()))), QString("Error"));
        const auto frames = c.takeFrames();
        QVERIFY(!frames.empty());
        QCOMPARE(describe(frames.back()), QString("GOAWAY 0 1")); // PROTOCOL_ERROR (§3.4)
    }

    void http1AnswerIsAnError() {
        Client c(1);
        QCOMPARE(c.feed("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"), QString("Error"));
        const auto frames = c.takeFrames();
        QVERIFY(!frames.empty());
        QCOMPARE(frames.back().type, kGoaway);
    }

    // --- partial input ---

    void framesMayArriveInPieces() {
        Deflater d;
        const std::string block1 = d.block({{":status", "200"}, {"content-length", "5"}});
        const std::string block3 =
            d.block({{":status", "200"}, {"x-a", std::string(100, 'a')}, {"x-b", "b"}});
        const std::string script =
            cat({settings({{kMaxConcurrentStreams, 100}}), settingsAck(),
                 frame(kHeaders, kEndHeaders, 1, block1), data(1, "hello", kEndStream), ping("pingpong"),
                 frame(kHeaders, 0, 3, block3.substr(0, 7)), frame(kContinuation, 0, 3, block3.substr(7, 50)),
                 frame(kContinuation, kEndHeaders, 3, block3.substr(57)), data(3, padded("abc", 7), kPadded),
                 frame(0xfa, 0, 0, "unknown"), windowUpdate(0, 1000),
                 frame(kHeaders, kEndHeaders | kEndStream, 3, d.block({{"x-checksum", "1"}})),
                 frame(kHeaders, kEndHeaders, 5, d.block({{":status", "103"}, {"link", "</a>"}})),
                 frame(kHeaders, kEndHeaders | kEndStream, 5, d.block({{":status", "204"}})), data(0, "")});
        // The last frame (DATA on stream 0) is a connection error: the verdict too must agree.

        const auto r = request();
        std::uint32_t ids[3] = {};
        const auto prepare = [&](Client& c) {
            for (auto& s : ids)
                s = c.submit(r);
            c.out.clear();
        };
        Client whole(3);
        prepare(whole);
        QCOMPARE(whole.feed(script), QString("Error"));
        const QString wholeEvents = whole.events();
        QCOMPARE(wholeEvents, resp(ids[0], 200) + " " + resp(ids[1], 200) + " " + resp(ids[2], 204));
        const QString wholeOut = whole.take();
        QCOMPARE(wholeOut, QString("SETTINGS ACK; PING ACK pingpong; GOAWAY 0 1"));

        for (std::size_t step : {std::size_t(1), std::size_t(2), std::size_t(7), std::size_t(100)}) {
            Client c(3);
            prepare(c);
            std::string pending;
            Verdict v = Verdict::Open;
            for (std::size_t at = 0; at < script.size() && v == Verdict::Open; at += step) {
                pending += script.substr(at, step);
                std::size_t used = 0xdeadbeef;
                v = c.codec.receive(reinterpret_cast<const std::uint8_t*>(pending.data()), pending.size(),
                                    used, c.out);
                if (v == Verdict::Error) break;
                QVERIFY2(used <= pending.size(), qPrintable(QString("step %1 at %2").arg(step).arg(at)));
                if (step == 1) QVERIFY(used == 0 || used == pending.size()); // one frame completes at a time
                pending.erase(0, used);
                // What is left is no whole frame.
                if (pending.size() >= 9) {
                    const std::size_t len = std::size_t(std::uint8_t(pending[0])) << 16 |
                                            std::size_t(std::uint8_t(pending[1])) << 8 |
                                            std::uint8_t(pending[2]);
                    QVERIFY(pending.size() < 9 + len);
                }
            }
            QCOMPARE(v, Verdict::Error);
            QCOMPARE(c.events(), wholeEvents);
            QCOMPARE(c.take(), wholeOut);
        }
    }

    void emptyInput() {
        Client c(1);
        QCOMPARE(c.feed(""), QString("Open"));
        QCOMPARE(c.feed(settings().substr(0, 8)), QString("Open (used 0 of 8)"));
        QCOMPARE(c.take(), QString());
    }

    // --- header blocks ---

    void continuation() {
        Client c(2);
        const auto r = request();
        const auto a = c.submit(r), b = c.submit(r);
        QCOMPARE(c.handshake(),
                 QString("Open / HEADERS 1 END_STREAM END_HEADERS; HEADERS 3 END_STREAM END_HEADERS; "
                         "SETTINGS ACK"));
        const std::string block =
            c.hpack.block({{":status", "200"}, {"x-a", std::string(300, 'a')}, {"x-b", "bb"}});
        // Split inside the status, inside the length of x-a's value and inside its value.
        QCOMPARE(c.feed(frame(kHeaders, kEndStream, 1, block.substr(0, 1))), QString("Open"));
        QCOMPARE(c.feed(frame(kContinuation, 0, 1, block.substr(1, 6))), QString("Open"));
        QCOMPARE(c.feed(frame(kContinuation, 0, 1, "")), QString("Open"));
        QCOMPARE(c.feed(frame(kContinuation, 0, 1, block.substr(7, 100))), QString("Open"));
        QCOMPARE(c.events(), QString());
        QCOMPARE(c.feed(frame(kContinuation, kEndHeaders, 1, block.substr(107))), QString("Open"));
        QCOMPARE(c.events(), resp(a, 200));
        // HEADERS without END_STREAM then CONTINUATION, then the body.
        const std::string block2 = c.hpack.block({{":status", "202"}, {"x-a", std::string(300, 'a')}});
        QCOMPARE(c.feed(frame(kHeaders, 0, 3, block2.substr(0, 2)) +
                        frame(kContinuation, kEndHeaders, 3, block2.substr(2)) + data(3, "x", kEndStream)),
                 QString("Open"));
        QCOMPARE(c.events(), resp(b, 202));
        QCOMPARE(c.take(), QString());
    }

    void interruptedHeaderBlock_data() {
        QTest::addColumn<QByteArray>("in");
        const std::string h = frame(kHeaders, kEndStream, 1, "\x88"); // no END_HEADERS
        QTest::newRow("PING") << qb(h + ping("12345678"));
        QTest::newRow("DATA") << qb(h + data(1, "x"));
        QTest::newRow("CONTINUATION of another stream") << qb(h + frame(kContinuation, kEndHeaders, 3, ""));
        QTest::newRow("HEADERS of another stream") << qb(h + frame(kHeaders, kEndHeaders, 3, "\x88"));
        QTest::newRow("unknown type")
            << qb(h + frame(0xfa, 0, 0, "") + frame(kContinuation, kEndHeaders, 1, ""));
        QTest::newRow("SETTINGS") << qb(h + settings());
    }
    // §6.10: a header block is a contiguous sequence of frames; anything else between is a
    // connection error of type PROTOCOL_ERROR.
    void interruptedHeaderBlock() {
        QFETCH(QByteArray, in);
        Client c(2);
        const auto r = request();
        c.submit(r);
        c.submit(r);
        QCOMPARE(c.handshake(),
                 QString("Open / HEADERS 1 END_STREAM END_HEADERS; HEADERS 3 END_STREAM END_HEADERS; "
                         "SETTINGS ACK"));
        QCOMPARE(c.feed(std::string_view(in.constData(), std::size_t(in.size()))), QString("Error"));
        const auto frames = c.takeFrames();
        QVERIFY(!frames.empty());
        QCOMPARE(describe(frames.back()), QString("GOAWAY 0 1"));
    }

    void padding() {
        Client c(4);
        const auto r = request();
        const auto a = c.submit(r), b = c.submit(r), d = c.submit(r), e = c.submit(r);
        QCOMPARE(c.handshake(),
                 QString("Open / HEADERS 1 END_STREAM END_HEADERS; HEADERS 3 END_STREAM END_HEADERS; "
                         "HEADERS 5 END_STREAM END_HEADERS; HEADERS 7 END_STREAM END_HEADERS; "
                         "SETTINGS ACK"));
        // DATA: padding is not content (content-length 5 is met by "hello" alone).
        QCOMPARE(c.feed(c.headers(1, {{":status", "200"}, {"content-length", "5"}}) +
                        data(1, padded("hel", 4), kPadded) + data(1, padded("lo", 0), kPadded | kEndStream)),
                 QString("Open"));
        QCOMPARE(c.events(), resp(a, 200));
        // HEADERS with PADDED and PRIORITY (§6.2): pad length, then stream dependency and weight.
        const std::string priority = u32(0) + "\x10";
        QCOMPARE(c.feed(frame(kHeaders, kEndHeaders | kEndStream | kPadded | kPriorityFlag, 3,
                              std::string(1, '\x03') + priority + c.hpack.block({{":status", "200"}}) +
                                  std::string(3, '\0'))),
                 QString("Open"));
        QCOMPARE(c.events(), resp(b, 200));
        QCOMPARE(c.feed(frame(kHeaders, kEndHeaders | kEndStream | kPriorityFlag, 5,
                              u32(0x80000001) + "\xff" + c.hpack.block({{":status", "201"}}))),
                 QString("Open"));
        QCOMPARE(c.events(), resp(d, 201));
        QCOMPARE(c.feed(frame(kHeaders, kEndHeaders | kPadded, 7,
                              padded(c.hpack.block({{":status", "202"}}), 200)) +
                        data(7, padded("", 255), kPadded | kEndStream)),
                 QString("Open"));
        QCOMPARE(c.events(), resp(e, 202));
        QCOMPARE(c.take(), QString());
    }

    void paddingTooLong_data() {
        QTest::addColumn<QByteArray>("in");
        QTest::addColumn<int>("code"); // -1: any
        // §6.1, §6.2: padding as long as the payload or longer is a PROTOCOL_ERROR.
        const std::string h = frame(kHeaders, kEndHeaders, 1, kStatus200);
        QTest::newRow("DATA pad = length") << qb(h + data(1,
                                                          "\x04"
                                                          "abc",
                                                          kPadded))
                                           << 1;
        QTest::newRow("DATA pad > length") << qb(h + data(1,
                                                          "\x0a"
                                                          "abc",
                                                          kPadded))
                                           << 1;
        QTest::newRow("HEADERS pad = length")
            << qb(frame(kHeaders, kEndHeaders | kPadded, 1, "\x02\x88")) << 1;
        QTest::newRow("HEADERS pad with priority")
            << qb(frame(kHeaders, kEndHeaders | kPadded | kPriorityFlag, 1, "\x02" + u32(0) + "\x10\x88"))
            << 1;
        QTest::newRow("DATA padded, empty") << qb(h + data(1, "", kPadded)) << -1;
        QTest::newRow("HEADERS priority, short")
            << qb(frame(kHeaders, kEndHeaders | kPriorityFlag, 1, "\x00\x00"s)) << -1;
    }
    void paddingTooLong() {
        QFETCH(QByteArray, in);
        QFETCH(int, code);
        Client c(1);
        const auto r = request();
        c.submit(r);
        QCOMPARE(c.handshake(), QString("Open / HEADERS 1 END_STREAM END_HEADERS; SETTINGS ACK"));
        QCOMPARE(c.feed(std::string_view(in.constData(), std::size_t(in.size()))), QString("Error"));
        const auto frames = c.takeFrames();
        QVERIFY(!frames.empty());
        QCOMPARE(frames.back().type, kGoaway);
        if (code >= 0) QCOMPARE(describe(frames.back()), QString("GOAWAY 0 %1").arg(code));
    }

    // Not asked unless askResponseHeads(true): no call, no field.
    void responseHeadsNotAskedByDefault() {
        Client c(1);
        const auto r = request();
        const auto a = c.submit(r);
        c.recorder.hold = {a};
        c.recorder.logHold = true;
        QVERIFY(c.handshake().startsWith("Open"));
        QCOMPARE(c.feed(c.headers(1, {{":status", "200"}, {"server", "t"}}, kEndHeaders | kEndStream)),
                 QString("Open"));
        QCOMPARE(c.events(), resp(a, 200));
    }

    // holdResponseHead is asked once per final head (not for 1xx), as its :status is decoded;
    // only a held head's other fields follow, in order, also across CONTINUATION, never trailers.
    void heldResponseFields() {
        Client c(3);
        const auto r = request();
        const auto a = c.submit(r), b = c.submit(r), d = c.submit(r);
        c.recorder.hold = {a, d};
        c.recorder.logHold = true;
        c.codec.askResponseHeads(true);
        QVERIFY(c.handshake().startsWith("Open"));
        QCOMPARE(c.feed(cat({c.headers(1, {{":status", "103"}, {"link", "</a.css>; rel=preload"}}),
                             c.headers(1, {{":status", "200"},
                                           {"content-type", "text/plain"},
                                           {"x-a", ""},
                                           {"content-length", "2"}}),
                             data(1, "ok", kEndStream)})),
                 QString("Open"));
        QCOMPARE(c.events(), QString("H%1 f%1:content-type=text/plain f%1:x-a= f%1:content-length=2 %2")
                                 .arg(a)
                                 .arg(resp(a, 200)));
        // Not held: asked, no field reported.
        QCOMPARE(c.feed(c.headers(3, {{":status", "404"}, {"server", "t"}}, kEndHeaders | kEndStream)),
                 QString("Open"));
        QCOMPARE(c.events(), QString("H%1 %2").arg(b).arg(resp(b, 404)));
        // A block split over CONTINUATION, then trailers (not reported).
        const std::string block = c.hpack.block({{":status", "200"}, {"x-long", std::string(40, 'v')}});
        QCOMPARE(c.feed(cat({frame(kHeaders, 0, 5, block.substr(0, 3)),
                             frame(kContinuation, kEndHeaders, 5, block.substr(3)), data(5, "b"),
                             c.headers(5, {{"x-sum", "1"}}, kEndHeaders | kEndStream)})),
                 QString("Open"));
        QCOMPARE(c.events(), QString("H%1 f%1:x-long=%2 %3").arg(d).arg(QString(40, 'v')).arg(resp(d, 200)));
    }

    void informationalAndTrailers() {
        Client c(2);
        const auto r = request();
        const auto a = c.submit(r), b = c.submit(r);
        QCOMPARE(c.handshake(),
                 QString("Open / HEADERS 1 END_STREAM END_HEADERS; HEADERS 3 END_STREAM END_HEADERS; "
                         "SETTINGS ACK"));
        QCOMPARE(c.feed(c.headers(1, {{":status", "100"}})), QString("Open"));
        QCOMPARE(c.feed(c.headers(1, {{":status", "103"}, {"link", "</style.css>; rel=preload"}})),
                 QString("Open"));
        QCOMPARE(c.events(), QString());
        QCOMPARE(c.codec.inFlight(), std::size_t(2));
        QCOMPARE(c.feed(c.headers(1, {{":status", "200"}}, kEndHeaders | kEndStream)), QString("Open"));
        QCOMPARE(c.events(), resp(a, 200));
        // Trailers: a second HEADERS with END_STREAM after DATA (§8.1).
        QCOMPARE(c.feed(cat({c.headers(3, {{":status", "100"}}),
                             c.headers(3, {{":status", "200"}, {"trailer", "x-sum"}}), data(3, "body"),
                             c.headers(3, {{"x-sum", "42"}}, kEndHeaders | kEndStream)})),
                 QString("Open"));
        QCOMPARE(c.events(), resp(b, 200));
        QCOMPARE(c.take(), QString());
    }

    void statusValues_data() {
        QTest::addColumn<QByteArray>("status");
        QTest::addColumn<int>("expected");
        QTest::newRow("200") << QByteArray("200") << 200;
        QTest::newRow("204") << QByteArray("204") << 204;
        QTest::newRow("302") << QByteArray("302") << 302;
        QTest::newRow("599") << QByteArray("599") << 599;
        // Not a valid :status (three digits, 100..599): malformed (§8.1.1), a stream error.
        QTest::newRow("four digits") << QByteArray("2000") << 0;
        QTest::newRow("two digits") << QByteArray("20") << 0;
        QTest::newRow("letters") << QByteArray("abc") << 0;
        QTest::newRow("digits and a letter") << QByteArray("20x") << 0;
        QTest::newRow("empty") << QByteArray("") << 0;
        QTest::newRow("600") << QByteArray("600") << 0;
        QTest::newRow("099") << QByteArray("099") << 0;
    }
    void statusValues() {
        QFETCH(QByteArray, status);
        QFETCH(int, expected);
        Client c(1);
        const auto r = request();
        const auto s = c.submit(r);
        QCOMPARE(c.handshake(), QString("Open / HEADERS 1 END_STREAM END_HEADERS; SETTINGS ACK"));
        QCOMPARE(c.feed(c.headers(1, {{":status", status.toStdString()}}, kEndHeaders | kEndStream)),
                 QString("Open"));
        if (expected) {
            QCOMPARE(c.events(), resp(s, expected));
            QCOMPARE(c.take(), QString());
        } else {
            QCOMPARE(c.events(), fail(s, "Protocol"));
            QCOMPARE(c.take(), QString("RST_STREAM 1 1"));
        }
    }

    // §8.1.1 and §8.1: a malformed response is a stream error of type PROTOCOL_ERROR: RST_STREAM.
    void malformedResponse_data() {
        QTest::addColumn<QByteArray>("in");
        // Each block from a fresh encoder: it refers to no entry the client's decoder may not have.
        const auto block = [](FieldList f) {
            Deflater fresh;
            return fresh.block(f);
        };
        QTest::newRow("content-length longer than the body")
            << qb(frame(kHeaders, kEndHeaders, 1, block({{":status", "200"}, {"content-length", "10"}})) +
                  data(1, "hello", kEndStream));
        QTest::newRow("content-length shorter than the body")
            << qb(frame(kHeaders, kEndHeaders, 1, block({{":status", "200"}, {"content-length", "3"}})) +
                  data(1, "hello", kEndStream));
        QTest::newRow("content-length shorter, over two frames")
            << qb(frame(kHeaders, kEndHeaders, 1, block({{":status", "200"}, {"content-length", "6"}})) +
                  data(1, "hel") + data(1, "lo!!") + data(1, "", kEndStream));
        QTest::newRow("two content-length values")
            << qb(frame(kHeaders, kEndHeaders | kEndStream, 1,
                        block({{":status", "200"}, {"content-length", "0"}, {"content-length", "1"}})));
        QTest::newRow("content-length and no DATA") << qb(frame(
            kHeaders, kEndHeaders | kEndStream, 1, block({{":status", "200"}, {"content-length", "1"}})));
        QTest::newRow("no :status") << qb(
            frame(kHeaders, kEndHeaders | kEndStream, 1, block({{"content-type", "text/plain"}})));
        QTest::newRow("1xx with END_STREAM")
            << qb(frame(kHeaders, kEndHeaders | kEndStream, 1, block({{":status", "100"}})));
        QTest::newRow("trailers without END_STREAM")
            << qb(frame(kHeaders, kEndHeaders, 1, block({{":status", "200"}})) + data(1, "x") +
                  frame(kHeaders, kEndHeaders, 1, block({{"x-t", "1"}})));
        QTest::newRow("DATA before HEADERS") << qb(data(1, "x", kEndStream));
    }
    void malformedResponse() {
        QFETCH(QByteArray, in);
        Client c(1);
        const auto r = request();
        const auto s = c.submit(r);
        QCOMPARE(c.handshake(), QString("Open / HEADERS 1 END_STREAM END_HEADERS; SETTINGS ACK"));
        QCOMPARE(c.feed(std::string_view(in.constData(), std::size_t(in.size()))), QString("Open"));
        QCOMPARE(c.events(), fail(s, "Protocol"));
        QCOMPARE(c.take(), QString("RST_STREAM 1 1"));
        QCOMPARE(c.codec.inFlight(), std::size_t(0));
    }

    // DATA beyond the content-length makes the response malformed (§8.1.1) as soon as it arrives:
    // the stream is reset then, not left open until an END_STREAM that may never come.
    void contentLengthExceededFailsAtOnce() {
        Client c(1);
        const auto r = request();
        const auto s = c.submit(r);
        QCOMPARE(c.handshake(), QString("Open / HEADERS 1 END_STREAM END_HEADERS; SETTINGS ACK"));
        QCOMPARE(c.feed(c.headers(1, {{":status", "200"}, {"content-length", "6"}})), QString("Open"));
        QCOMPARE(c.feed(data(1, "hel")), QString("Open"));
        QCOMPARE(c.events(), QString());
        QCOMPARE(c.feed(data(1, "lo!!")), QString("Open"));
        QCOMPARE(c.events(), fail(s, "Protocol"));
        QCOMPARE(c.take(), QString("RST_STREAM 1 1"));
    }

    // A response with no content (RFC 9110 §9.3.2, §15.4.5) may have any content-length (§8.1.1).
    void responsesWithoutContent() {
        Client c(2);
        const auto head = request({}, true);
        const auto a = c.submit(head);
        QCOMPARE(c.handshake(), QString("Open / HEADERS 1 END_STREAM END_HEADERS; SETTINGS ACK"));
        QCOMPARE(
            c.feed(c.headers(1, {{":status", "200"}, {"content-length", "10"}}, kEndHeaders | kEndStream)),
            QString("Open"));
        QCOMPARE(c.events(), resp(a, 200));
        QCOMPARE(c.take(), QString());
        // HEAD with the END_STREAM on an empty DATA frame.
        const auto b = c.submit(head);
        QCOMPARE(c.take(), QString("HEADERS 3 END_STREAM END_HEADERS"));
        QCOMPARE(
            c.feed(c.headers(3, {{":status", "200"}, {"content-length", "10"}}) + data(3, "", kEndStream)),
            QString("Open"));
        QCOMPARE(c.events(), resp(b, 200));
        QCOMPARE(c.take(), QString());
    }
    void notModifiedWithContentLength() {
        Client c(1);
        const auto r = request();
        const auto a = c.submit(r);
        QCOMPARE(c.handshake(), QString("Open / HEADERS 1 END_STREAM END_HEADERS; SETTINGS ACK"));
        QCOMPARE(
            c.feed(c.headers(1, {{":status", "304"}, {"content-length", "10"}}, kEndHeaders | kEndStream)),
            QString("Open"));
        QCOMPARE(c.events(), resp(a, 304));
        QCOMPARE(c.take(), QString());
    }

    // After the client reset a stream, the server's frames on it are ignored (§5.1 "closed"), but
    // its header blocks still update the HPACK decoder (§4.3).
    void resetStreamKeepsHpackInSync() {
        Client c(2);
        const auto r = request();
        const auto a = c.submit(r), b = c.submit(r);
        QCOMPARE(c.handshake(),
                 QString("Open / HEADERS 1 END_STREAM END_HEADERS; HEADERS 3 END_STREAM END_HEADERS; "
                         "SETTINGS ACK"));
        QCOMPARE(c.feed(data(1, "body first")), QString("Open")); // malformed: DATA before HEADERS
        QCOMPARE(c.events(), fail(a, "Protocol"));
        QCOMPARE(c.take(), QString("RST_STREAM 1 1"));
        // The server had not seen the RST_STREAM yet: a header block that adds to its dynamic
        // table, then more DATA.
        QCOMPARE(
            c.feed(c.headers(1, {{":status", "200"}, {"x-trailer", "abcdef"}}) + data(1, "more", kEndStream)),
            QString("Open"));
        QCOMPARE(c.events(), QString());
        QCOMPARE(c.take(), QString());
        const std::string block = c.hpack.block({{":status", "200"}, {"x-trailer", "abcdef"}});
        QCOMPARE(qb(block), QByteArray::fromHex("88be")); // the second field is dynamic entry 62
        QCOMPARE(c.feed(frame(kHeaders, kEndHeaders | kEndStream, 3, block)), QString("Open"));
        QCOMPARE(c.events(), resp(b, 200));
        QCOMPARE(c.take(), QString());
    }

    // --- RST_STREAM from the server ---

    void resetByServer_data() {
        QTest::addColumn<uint>("code");
        QTest::addColumn<QString>("why");
        QTest::addColumn<bool>("afterHeaders");
        QTest::newRow("NO_ERROR") << uint(kNoError) << "Protocol" << false;
        QTest::newRow("NO_ERROR after HEADERS") << uint(kNoError) << "Protocol" << true;
        QTest::newRow("PROTOCOL_ERROR") << uint(kProtocolError) << "Protocol" << false;
        QTest::newRow("INTERNAL_ERROR") << uint(kInternalError) << "Reset" << false;
        QTest::newRow("FLOW_CONTROL_ERROR") << uint(kFlowControlError) << "Protocol" << false;
        QTest::newRow("STREAM_CLOSED") << uint(kStreamClosed) << "Reset" << false;
        QTest::newRow("FRAME_SIZE_ERROR") << uint(kFrameSizeError) << "Protocol" << false;
        QTest::newRow("REFUSED_STREAM") << uint(kRefusedStream) << "Refused" << false;
        QTest::newRow("REFUSED_STREAM after HEADERS") << uint(kRefusedStream) << "Refused" << true;
        QTest::newRow("CANCEL") << uint(kCancel) << "Reset" << false;
        QTest::newRow("COMPRESSION_ERROR") << uint(kCompressionError) << "Protocol" << false;
        QTest::newRow("ENHANCE_YOUR_CALM") << uint(kEnhanceYourCalm) << "Reset" << false;
        QTest::newRow("HTTP_1_1_REQUIRED") << uint(kHttp11Required) << "Reset" << false;
        QTest::newRow("unknown code") << 0x1234u << "Reset" << false;
    }
    void resetByServer() {
        QFETCH(uint, code);
        QFETCH(QString, why);
        QFETCH(bool, afterHeaders);
        Client c(2);
        const auto r = request();
        const auto a = c.submit(r), b = c.submit(r);
        QCOMPARE(c.handshake(),
                 QString("Open / HEADERS 1 END_STREAM END_HEADERS; HEADERS 3 END_STREAM END_HEADERS; "
                         "SETTINGS ACK"));
        if (afterHeaders)
            QCOMPARE(c.feed(c.headers(3, {{":status", "200"}}) + data(3, "part")), QString("Open"));
        QCOMPARE(c.feed(rstStream(3, code)), QString("Open"));
        QCOMPARE(c.events(), ev('F', b, why));
        QCOMPARE(c.take(), QString()); // never a RST_STREAM for a RST_STREAM (§5.4.2)
        QCOMPARE(c.codec.inFlight(), std::size_t(1));
        QCOMPARE(c.feed(c.headers(1, {{":status", "200"}}, kEndHeaders | kEndStream)), QString("Open"));
        QCOMPARE(c.events(), resp(a, 200));
    }

    void resetAfterCompleteResponse() {
        Client c(1);
        const auto r = request();
        const auto a = c.submit(r);
        QCOMPARE(c.handshake(), QString("Open / HEADERS 1 END_STREAM END_HEADERS; SETTINGS ACK"));
        QCOMPARE(c.feed(c.headers(1, {{":status", "200"}}, kEndHeaders | kEndStream)), QString("Open"));
        QCOMPARE(c.events(), resp(a, 200));
        QCOMPARE(c.feed(rstStream(1, kNoError)), QString("Open"));
        QCOMPARE(c.events(), QString());
        QCOMPARE(c.take(), QString());
        // A WINDOW_UPDATE and a PRIORITY on the closed stream are allowed too (§5.1, §6.9).
        QCOMPARE(c.feed(windowUpdate(1, 100) + frame(kPriority, 0, 1, u32(0) + "\x10")), QString("Open"));
        QCOMPARE(c.events(), QString());
        QCOMPARE(c.take(), QString());
    }

    // The server answers before the request's body is all sent (§8.1): the response is reported,
    // the rest of the body is not sent (the request may be gone once its response is reported), and
    // the client ends its half of the stream with RST_STREAM so the server's stream closes.
    void responseBeforeTheRequestBodyEnds() {
        Client c(2);
        QCOMPARE(c.handshake(settings({{kInitialWindowSize, 10}})), QString("Open / SETTINGS ACK"));
        auto r = std::make_unique<PreparedRequest>(request(pattern(25)));
        const auto a = c.submit(*r);
        QCOMPARE(c.take(), QString("HEADERS 1 END_HEADERS; DATA 1 10"));
        QCOMPARE(c.feed(c.headers(1, {{":status", "413"}}, kEndHeaders | kEndStream)), QString("Open"));
        QCOMPARE(c.events(), resp(a, 413));
        r.reset();
        const auto frames = c.takeFrames();
        QCOMPARE(frames.size(), std::size_t(1));
        QCOMPARE(frames[0].type, kRstStream);
        QCOMPARE(frames[0].stream, 1u);
        QVERIFY(be32(frames[0].payload, 0) == kNoError || be32(frames[0].payload, 0) == kCancel);
        QCOMPARE(c.feed(windowUpdate(1, 100) + windowUpdate(0, 100)), QString("Open"));
        QCOMPARE(c.take(), QString());
        QCOMPARE(c.codec.inFlight(), std::size_t(0));
    }

    // --- SETTINGS_MAX_CONCURRENT_STREAMS ---

    void maxConcurrentStreams() {
        Client c(3);
        QCOMPARE(c.handshake(settings({{kMaxConcurrentStreams, 1}})), QString("Open / SETTINGS ACK"));
        const auto r = request();
        const auto a = c.submit(r), b = c.submit(r), d = c.submit(r);
        QVERIFY(a < 3 && b < 3 && d < 3 && a != b && b != d && a != d);
        QCOMPARE(c.codec.inFlight(), std::size_t(3));
        QCOMPARE(c.take(), QString("HEADERS 1 END_STREAM END_HEADERS"));
        QCOMPARE(c.feed(c.headers(1, {{":status", "200"}}, kEndHeaders | kEndStream)), QString("Open"));
        QCOMPARE(c.events(), resp(a, 200));
        QCOMPARE(c.take(), QString("HEADERS 3 END_STREAM END_HEADERS"));
        QCOMPARE(c.feed(rstStream(3, kRefusedStream)), QString("Open")); // a reset ends a stream too
        QCOMPARE(c.events(), fail(b, "Refused"));
        QCOMPARE(c.take(), QString("HEADERS 5 END_STREAM END_HEADERS"));
        QCOMPARE(c.feed(c.headers(5, {{":status", "200"}}) + data(5, "x", kEndStream)), QString("Open"));
        QCOMPARE(c.events(), resp(d, 200));
        QCOMPARE(c.take(), QString());
        QCOMPARE(c.codec.inFlight(), std::size_t(0));
        c.submit(r);
        QCOMPARE(c.take(), QString("HEADERS 7 END_STREAM END_HEADERS"));
    }

    // Before the server's SETTINGS the codec may hold back streams (it does above 100, as nghttp2
    // does); once SETTINGS came without SETTINGS_MAX_CONCURRENT_STREAMS there is no limit (§6.5.2:
    // "Initially, there is no limit to this value").
    void noStreamLimitUnlessAnnounced() {
        constexpr unsigned depth = 300;
        Client c(depth);
        QCOMPARE(c.handshake(), QString("Open / SETTINGS ACK"));
        const auto r = request();
        for (unsigned i = 0; i < depth; ++i)
            c.submit(r);
        const auto frames = c.takeFrames();
        QCOMPARE(frames.size(), std::size_t(depth));
        QCOMPARE(describe(frames.back()), QString("HEADERS %1 END_STREAM END_HEADERS").arg(2 * depth - 1));
    }

    void maxConcurrentStreamsRaised() {
        Client c(3);
        QCOMPARE(c.handshake(settings({{kMaxConcurrentStreams, 0}})), QString("Open / SETTINGS ACK"));
        const auto r = request(pattern(20));
        c.submit(r);
        c.submit(r);
        c.submit(r);
        QCOMPARE(c.take(), QString());
        QCOMPARE(c.codec.inFlight(), std::size_t(3));
        QCOMPARE(c.feed(settings({{kMaxConcurrentStreams, 2}})), QString("Open"));
        QCOMPARE(c.takeSorted(),
                 (QStringList{"DATA 1 20 END_STREAM", "DATA 3 20 END_STREAM", "HEADERS 1 END_HEADERS",
                              "HEADERS 3 END_HEADERS", "SETTINGS ACK"}));
        QCOMPARE(c.feed(c.headers(3, {{":status", "200"}}, kEndHeaders | kEndStream)), QString("Open"));
        QCOMPARE(c.take(), QString("HEADERS 5 END_HEADERS; DATA 5 20 END_STREAM"));
    }

    // --- flow control of request bodies (§6.9) ---

    void requestBodyWaitsForTheStreamWindow() {
        Client c(1);
        QCOMPARE(c.handshake(settings({{kInitialWindowSize, 10}})), QString("Open / SETTINGS ACK"));
        const auto r = request(pattern(25));
        const auto a = c.submit(r);
        std::string sent;
        auto frames = c.takeFrames();
        QCOMPARE(describe(frames), QString("HEADERS 1 END_HEADERS; DATA 1 10"));
        sent += frames[1].payload;
        QCOMPARE(c.feed(windowUpdate(1, 10) + windowUpdate(0, 10)), QString("Open"));
        frames = c.takeFrames();
        QCOMPARE(describe(frames), QString("DATA 1 10"));
        sent += frames[0].payload;
        QCOMPARE(c.feed(windowUpdate(0, 100)), QString("Open")); // the stream's window is still 0
        QCOMPARE(c.take(), QString());
        QCOMPARE(c.feed(windowUpdate(1, 3)), QString("Open"));
        frames = c.takeFrames();
        QCOMPARE(describe(frames), QString("DATA 1 3"));
        sent += frames[0].payload;
        QCOMPARE(c.feed(windowUpdate(1, 100)), QString("Open"));
        frames = c.takeFrames();
        QCOMPARE(describe(frames), QString("DATA 1 2 END_STREAM"));
        sent += frames[0].payload;
        QCOMPARE(qb(sent), qb(r.body));
        QCOMPARE(c.feed(c.headers(1, {{":status", "200"}}, kEndHeaders | kEndStream)), QString("Open"));
        QCOMPARE(c.events(), resp(a, 200));
    }

    void connectionWindowLimitsBodies() {
        {
            Client c(1);
            QCOMPARE(c.handshake(settings({{kInitialWindowSize, 1u << 20}})), QString("Open / SETTINGS ACK"));
            const auto r = request(pattern(102400));
            c.submit(r);
            auto frames = c.takeFrames();
            QCOMPARE(describe(frames.front()), QString("HEADERS 1 END_HEADERS"));
            auto d = dataOf(frames, 1);
            QCOMPARE(d.total, std::size_t(65535)); // the connection's initial window
            QVERIFY(!d.endStream);
            QVERIFY(d.largest <= 16384);
            std::string sent = d.bytes;
            QCOMPARE(c.feed(windowUpdate(0, 65535)), QString("Open"));
            frames = c.takeFrames();
            d = dataOf(frames, 1);
            QCOMPARE(frames.size(), d.frames);
            QCOMPARE(d.total, std::size_t(102400 - 65535));
            QVERIFY(d.endStream && !d.endTooEarly);
            QVERIFY(d.largest <= 16384);
            sent += d.bytes;
            QCOMPARE(qb(sent), qb(r.body));
        }
        {
            // Three bodies share the connection's window.
            Client c(3);
            QCOMPARE(c.handshake(settings({{kInitialWindowSize, 1u << 20}})), QString("Open / SETTINGS ACK"));
            const auto r = request(pattern(50000));
            c.submit(r);
            auto d = dataOf(c.takeFrames(), 1);
            QCOMPARE(d.total, std::size_t(50000));
            QVERIFY(d.endStream);
            c.submit(r);
            d = dataOf(c.takeFrames(), 3);
            QCOMPARE(d.total, std::size_t(15535));
            QVERIFY(!d.endStream);
            c.submit(r);
            auto frames = c.takeFrames();
            QCOMPARE(describe(frames), QString("HEADERS 5 END_HEADERS"));
            QCOMPARE(c.feed(windowUpdate(0, 34465 + 50000)), QString("Open"));
            frames = c.takeFrames();
            const auto d3 = dataOf(frames, 3), d5 = dataOf(frames, 5);
            QCOMPARE(d3.total, std::size_t(34465));
            QCOMPARE(d5.total, std::size_t(50000));
            QVERIFY(d3.endStream && d5.endStream && !d3.endTooEarly && !d5.endTooEarly);
            QCOMPARE(frames.size(), d3.frames + d5.frames);
            QCOMPARE(qb(d5.bytes), qb(r.body));
            QCOMPARE(c.feed(windowUpdate(0, 1000)), QString("Open"));
            QCOMPARE(c.take(), QString());
        }
    }

    // §6.9.2: a change of SETTINGS_INITIAL_WINDOW_SIZE changes the window of every open stream by
    // the difference, and a window may go negative.
    void initialWindowChangeAdjustsOpenStreams() {
        Client c(2);
        QCOMPARE(c.handshake(settings({{kInitialWindowSize, 10}})), QString("Open / SETTINGS ACK"));
        const auto r = request(pattern(25));
        c.submit(r);
        QCOMPARE(c.take(), QString("HEADERS 1 END_HEADERS; DATA 1 10"));
        QCOMPARE(c.feed(settings({{kInitialWindowSize, 20}})), QString("Open"));
        QCOMPARE(c.takeSorted(), (QStringList{"DATA 1 10", "SETTINGS ACK"}));
        QCOMPARE(c.feed(settings({{kInitialWindowSize, 15}})), QString("Open")); // window -5
        QCOMPARE(c.take(), QString("SETTINGS ACK"));
        // A stream opened now starts with the new initial window.
        const auto r2 = request(pattern(20));
        c.submit(r2);
        QCOMPARE(c.take(), QString("HEADERS 3 END_HEADERS; DATA 3 15"));
        QCOMPARE(c.feed(windowUpdate(1, 5)), QString("Open")); // window 0
        QCOMPARE(c.take(), QString());
        QCOMPARE(c.feed(windowUpdate(1, 4)), QString("Open"));
        QCOMPARE(c.take(), QString("DATA 1 4"));
        QCOMPARE(c.feed(windowUpdate(1, 4) + windowUpdate(3, 5)), QString("Open"));
        QCOMPARE(c.takeSorted(), (QStringList{"DATA 1 1 END_STREAM", "DATA 3 5 END_STREAM"}));
    }

    // §6.9.1: a window over 2^31-1 from a WINDOW_UPDATE ends the stream (RST_STREAM
    // FLOW_CONTROL_ERROR); §6.9.2: from a SETTINGS change, it is a connection error.
    void sendWindowOverflow() {
        const auto setUp = [](Client& c, const PreparedRequest& r) {
            if (c.handshake(settings({{kInitialWindowSize, 10}})) != "Open / SETTINGS ACK") return false;
            c.submit(r);
            if (c.take() != "HEADERS 1 END_HEADERS; DATA 1 10") return false;
            // The stream's window becomes 2^31-1; the connection's (65,525 left) limits what is sent.
            if (c.feed(windowUpdate(1, 0x7fffffff)) != "Open") return false;
            return dataOf(c.takeFrames(), 1).total == 65525;
        };
        const auto r = request(pattern(100000));
        {
            Client c(1);
            QVERIFY(setUp(c, r));
            QCOMPARE(c.feed(windowUpdate(1, 65525)), QString("Open")); // exactly 2^31-1 again
            QCOMPARE(c.take(), QString());
            QCOMPARE(c.feed(windowUpdate(1, 1)), QString("Open"));
            QCOMPARE(c.events(), fail(0, "Protocol"));
            QCOMPARE(c.take(), QString("RST_STREAM 1 3"));
            QCOMPARE(c.codec.inFlight(), std::size_t(0));
        }
        {
            Client c(1);
            QVERIFY(setUp(c, r));
            QCOMPARE(c.feed(settings({{kInitialWindowSize, 10 + 65525}})), QString("Open")); // exactly 2^31-1
            QCOMPARE(c.take(), QString("SETTINGS ACK"));
            QCOMPARE(c.feed(settings({{kInitialWindowSize, 10 + 65526}})), QString("Error"));
            QVERIFY(c.take().endsWith("GOAWAY 0 3"));
        }
    }

    void windowUpdateZeroOnAStream() {
        Client c(2);
        QCOMPARE(c.handshake(settings({{kInitialWindowSize, 10}})), QString("Open / SETTINGS ACK"));
        const auto r = request(pattern(25));
        const auto a = c.submit(r);
        QCOMPARE(c.take(), QString("HEADERS 1 END_HEADERS; DATA 1 10"));
        QCOMPARE(c.feed(windowUpdate(1, 0)), QString("Open")); // a stream error (§6.9)
        QCOMPARE(c.events(), fail(a, "Protocol"));
        QCOMPARE(c.take(), QString("RST_STREAM 1 1"));
        QCOMPARE(c.feed(windowUpdate(1, 100) + windowUpdate(0, 100)), QString("Open"));
        QCOMPARE(c.take(), QString());
    }

    // --- SETTINGS_MAX_FRAME_SIZE of the server ---

    void peerMaxFrameSize() {
        const std::string big(40000, 'h');
        PreparedRequest r;
        r.h2Block = encode(
            {{":method", "GET"}, {":scheme", "http"}, {":authority", "a"}, {":path", "/"}, {"x-big", big}});
        QVERIFY(r.h2Block.size() > 40000);
        const auto checkBlock = [&](const std::vector<Frame>& frames, std::uint32_t stream, std::size_t max) {
            if (frames.size() < 3 || frames[0].type != kHeaders || frames[0].flags != kEndStream)
                return false;
            std::string block;
            for (std::size_t i = 0; i < frames.size(); ++i) {
                const auto& f = frames[i];
                if (f.stream != stream || f.payload.size() > max) return false;
                if (i > 0 && f.type != kContinuation) return false;
                if ((f.flags & kEndHeaders) != (i + 1 == frames.size() ? kEndHeaders : 0)) return false;
                block += f.payload;
            }
            return block == r.h2Block;
        };
        Client c(1);
        QCOMPARE(c.handshake(), QString("Open / SETTINGS ACK"));
        c.submit(r);
        QVERIFY2(checkBlock(c.takeFrames(), 1, 16384), "HEADERS + CONTINUATION of 16,384 at most");
        QCOMPARE(c.feed(c.headers(1, {{":status", "200"}}, kEndHeaders | kEndStream)), QString("Open"));
        const auto body = request(pattern(50000));
        c.submit(body);
        auto frames = c.takeFrames();
        auto d = dataOf(frames, 3);
        QCOMPARE(d.total, std::size_t(50000));
        QVERIFY(d.largest <= 16384 && d.endStream && !d.endTooEarly);
        QCOMPARE(c.feed(c.headers(3, {{":status", "200"}}, kEndHeaders | kEndStream)), QString("Open"));
        QCOMPARE(c.events(), QString("R0:200 R0:200"));

        QCOMPARE(c.feed(settings({{kMaxFrameSize, 20000}, {kInitialWindowSize, 1 << 20}}) +
                        windowUpdate(0, 1 << 20)),
                 QString("Open"));
        QCOMPARE(c.take(), QString("SETTINGS ACK"));
        c.submit(r);
        QVERIFY2(checkBlock(c.takeFrames(), 5, 20000), "HEADERS + CONTINUATION of 20,000 at most");
        QCOMPARE(c.feed(c.headers(5, {{":status", "200"}}, kEndHeaders | kEndStream)), QString("Open"));
        const auto body2 = request(pattern(100000));
        c.submit(body2);
        frames = c.takeFrames();
        d = dataOf(frames, 7);
        QCOMPARE(d.total, std::size_t(100000));
        QVERIFY(d.largest <= 20000 && d.endStream && !d.endTooEarly);
        QCOMPARE(qb(d.bytes), qb(body2.body));
    }

    // --- SETTINGS_HEADER_TABLE_SIZE of the server ---

    // A server that lowers SETTINGS_HEADER_TABLE_SIZE below 4,096 (the size its decoder starts
    // with) expects the next header block to begin with a dynamic table size update no larger
    // (RFC 7541 §4.2: "This dynamic table size update MUST occur at the beginning of the first
    // header block following the change ... In HTTP/2, this follows a settings acknowledgment").
    // nghttp2's decoder (Apache httpd, nghttpx, Node.js servers) refuses the block otherwise.
    void headerTableSizeBelowTheDefault() {
        Client c(2);
        QCOMPARE(c.handshake(settings({{kHeaderTableSize, 0}})), QString("Open / SETTINGS ACK"));
        nghttp2_hd_inflater* inflater = nullptr;
        QCOMPARE(nghttp2_hd_inflate_new(&inflater), 0);
        QCOMPARE(nghttp2_hd_inflate_change_table_size(inflater, 0), 0); // the server's side
        const auto r = request();
        c.submit(r);
        c.submit(r);
        const auto frames = c.takeFrames();
        Fields first, second;
        const bool ok1 = frames.size() == 2 && inflate(inflater, frames[0].payload, first);
        const bool ok2 = frames.size() == 2 && inflate(inflater, frames[1].payload, second);
        nghttp2_hd_inflate_del(inflater);
        QCOMPARE(describe(frames),
                 QString("HEADERS 1 END_STREAM END_HEADERS; HEADERS 3 END_STREAM END_HEADERS"));
        QVERIFY2(ok1, "nghttp2 refuses the first header block after SETTINGS_HEADER_TABLE_SIZE 0");
        QVERIFY(ok2);
        QCOMPARE(first.size(), std::size_t(4));
        QCOMPARE(second, first);
    }

    // --- requests prepared with H2RequestFields: indexed after a connection's first use ---

    // Two kinds sharing :authority and user-agent: the first request of each inserts what it does
    // not share, later ones are all indexed (one byte per field), and nghttp2's decoder, fed the
    // blocks in order as a server is, reads the same fields every time. A new connection (start)
    // inserts again.
    void indexedFields() {
        H2RequestFields table;
        const HeaderField a[] = {{":method", "GET"},
                                 {":scheme", "http"},
                                 {":authority", "127.0.0.1:8080"},
                                 {":path", "/a"},
                                 {"user-agent", "portico"}};
        const HeaderField b[] = {
            {":method", "POST"}, {":scheme", "http"},       {":authority", "127.0.0.1:8080"},
            {":path", "/b"},     {"user-agent", "portico"}, {"x-kind", "b"}};
        PreparedRequest ra, rb;
        ra.h2Fields = table.prepare(a);
        rb.h2Fields = table.prepare(b);
        QCOMPARE(table.entries(), std::size_t(5)); // authority, /a, user-agent, /b, x-kind
        QCOMPARE(int(ra.h2Fields[0].entry), int(H2FieldOp::kNoEntry)); // :method GET is static 2
        QCOMPARE(ra.h2Fields[2].entry, rb.h2Fields[2].entry);          // one :authority entry
        Client c(8);
        for (int round = 0; round < 2; ++round) {
            if (round) { // a new connection: nothing is in its table yet
                QVERIFY(c.codec.start(c.out));
                c.out.clear();
            }
            QCOMPARE(c.handshake(), QString("Open / SETTINGS ACK"));
            nghttp2_hd_inflater* inflater = nullptr;
            QCOMPARE(nghttp2_hd_inflate_new(&inflater), 0);
            std::vector<std::size_t> sizes;
            bool decoded = true;
            for (const auto* r : {&ra, &rb, &ra, &rb, &ra}) {
                c.submit(*r);
                const auto frames = c.takeFrames();
                QCOMPARE(frames.size(), std::size_t(1));
                Fields got;
                decoded = decoded && inflate(inflater, frames[0].payload, got);
                const auto& want =
                    r == &ra ? std::span<const HeaderField>(a) : std::span<const HeaderField>(b);
                QCOMPARE(got.size(), want.size());
                for (std::size_t i = 0; i < got.size(); ++i) {
                    QCOMPARE(qb(got[i].first), qb(want[i].first));
                    QCOMPARE(qb(got[i].second), qb(want[i].second));
                }
                sizes.push_back(frames[0].payload.size());
            }
            nghttp2_hd_inflate_del(inflater);
            QVERIFY(decoded);
            // First of a: GET 1, http 1, :authority (1+1+14), :path (1+1+2), user-agent (1+1+7):
            // 31; the first of b inserts /b and x-kind only; then every field is one byte.
            QCOMPARE(sizes[0], std::size_t(31));
            QCOMPARE(sizes[2], std::size_t(5));
            QCOMPARE(sizes[3], std::size_t(6));
            QCOMPARE(sizes[4], std::size_t(5));
            QVERIFY(sizes[1] > sizes[3]);
        }
    }

    // Fields beyond the table's 4,096 bytes are literals without indexing every time.
    void fieldsBeyondTheTableAreLiterals() {
        H2RequestFields table;
        const std::string big(4000, 'v');
        const HeaderField f[] = {
            {":method", "GET"}, {"x-big", big}, {"x-other", std::string_view(big).substr(0, 100)}};
        PreparedRequest r;
        r.h2Fields = table.prepare(f);
        QCOMPARE(table.entries(), std::size_t(1)); // x-big (4,037 bytes) fits; x-other would not
        QCOMPARE(int(r.h2Fields[2].entry), int(H2FieldOp::kNoEntry));
        Client c(2);
        QCOMPARE(c.handshake(), QString("Open / SETTINGS ACK"));
        c.submit(r);
        c.submit(r);
        const auto frames = c.takeFrames();
        QCOMPARE(frames.size(), std::size_t(2));
        // GET 1, x-big indexed 1, x-other as a literal: 1 + (1+7) + (1+100).
        QCOMPARE(frames[1].payload.size(), std::size_t(1 + 1 + 1 + 1 + 7 + 1 + 100));
        nghttp2_hd_inflater* inflater = nullptr;
        QCOMPARE(nghttp2_hd_inflate_new(&inflater), 0);
        Fields one, two;
        const bool ok =
            inflate(inflater, frames[0].payload, one) && inflate(inflater, frames[1].payload, two);
        nghttp2_hd_inflate_del(inflater);
        QVERIFY(ok);
        QCOMPARE(one, two);
        QCOMPARE(one.size(), std::size_t(3));
        QCOMPARE(one[1].second.size(), std::size_t(4000));
    }

    // A server that allows no dynamic table (HEADER_TABLE_SIZE 0) after entries were inserted: the
    // next block starts with a table size update to 0 and nothing is indexed any more.
    void tableTurnedOffAfterInsertions() {
        H2RequestFields table;
        const HeaderField f[] = {{":method", "GET"}, {":path", "/x"}, {"user-agent", "portico"}};
        PreparedRequest r;
        r.h2Fields = table.prepare(f);
        Client c(4);
        QCOMPARE(c.handshake(), QString("Open / SETTINGS ACK"));
        nghttp2_hd_inflater* inflater = nullptr;
        QCOMPARE(nghttp2_hd_inflate_new(&inflater), 0);
        Fields got;
        c.submit(r);
        auto frames = c.takeFrames();
        bool ok = inflate(inflater, frames[0].payload, got);
        QCOMPARE(c.feed(settings({{kHeaderTableSize, 0}})), QString("Open"));
        QCOMPARE(c.take(), QString("SETTINGS ACK"));
        QCOMPARE(nghttp2_hd_inflate_change_table_size(inflater, 0), 0); // the server, once acked
        for (int i = 0; i < 2; ++i) {
            c.submit(r);
            frames = c.takeFrames();
            QCOMPARE(frames.size(), std::size_t(1));
            QCOMPARE(frames[0].payload[0] == '\x20', i == 0); // the update, once
            got.clear();
            ok = ok && inflate(inflater, frames[0].payload, got);
            QCOMPARE(got.size(), std::size_t(3));
            QCOMPARE(qb(got[2].second), QByteArray("portico"));
        }
        nghttp2_hd_inflate_del(inflater);
        QVERIFY(ok);
    }

    // --- flow control of responses: what was received is given back ---

    void receivedDataIsGivenBack() {
        Client c(1, {65535, 65535});
        const auto r = request();
        const auto a = c.submit(r);
        QCOMPARE(c.handshake(), QString("Open / HEADERS 1 END_STREAM END_HEADERS; SETTINGS ACK"));
        QCOMPARE(c.feed(c.headers(1, {{":status", "200"}})), QString("Open"));
        QCOMPARE(c.feed(data(1, std::string(16384, 'x'))), QString("Open"));
        QCOMPARE(c.take(), QString()); // less than half of either window
        QCOMPARE(c.feed(data(1, padded(std::string(16128, 'x'), 255), kPadded)), QString("Open"));
        // 16,384 + 16,384 (padding and its length octet count, §6.9.1) > 65,535 / 2.
        QCOMPARE(c.takeSorted(), (QStringList{"WINDOW_UPDATE 0 +32768", "WINDOW_UPDATE 1 +32768"}));
        QCOMPARE(c.feed(data(1, "end", kEndStream)), QString("Open"));
        QCOMPARE(c.events(), resp(a, 200));
    }

    void connectionWindowIsGivenBackAlone() {
        Client c(2, {1u << 20, 65535});
        const auto r = request();
        c.submit(r);
        c.submit(r);
        QCOMPARE(c.handshake(),
                 QString("Open / HEADERS 1 END_STREAM END_HEADERS; HEADERS 3 END_STREAM END_HEADERS; "
                         "SETTINGS ACK"));
        QCOMPARE(c.feed(cat({c.headers(1, {{":status", "200"}}), c.headers(3, {{":status", "200"}})})),
                 QString("Open"));
        QCOMPARE(c.feed(data(1, std::string(16384, 'x'))), QString("Open"));
        QCOMPARE(c.take(), QString());
        QCOMPARE(c.feed(data(3, std::string(16384, 'y'))), QString("Open"));
        QCOMPARE(c.take(), QString("WINDOW_UPDATE 0 +32768"));
    }

    // The server sends a megabyte as fast as the windows it was given allow: the codec gives the
    // windows back as it goes (never more than it received), so the body never stalls.
    void serverSendsAMegabyte() {
        Client c(1, {65535, 65535});
        const auto r = request();
        const auto a = c.submit(r);
        QCOMPARE(c.handshake(), QString("Open / HEADERS 1 END_STREAM END_HEADERS; SETTINGS ACK"));
        QCOMPARE(c.feed(c.headers(1, {{":status", "200"}, {"content-length", "1048576"}})), QString("Open"));
        std::int64_t conn = 65535, stream = 65535;
        std::size_t sent = 0;
        for (int i = 0; sent < (1u << 20); ++i) {
            const std::int64_t room = std::min<std::int64_t>({conn, stream, 16384});
            QVERIFY2(room > 0, qPrintable(QString("stalled after %1 bytes").arg(sent)));
            const bool pad = i % 3 == 0 && room > 30;
            std::size_t content = std::size_t(pad ? room - 21 : room);
            content = std::min(content, (1u << 20) - sent);
            const std::string payload(content, 'z');
            const std::string f = pad ? data(1, padded(payload, 20), kPadded) : data(1, payload);
            const std::int64_t len = std::int64_t(f.size() - 9);
            conn -= len;
            stream -= len;
            sent += content;
            QCOMPARE(c.feed(f), QString("Open"));
            for (const auto& w : c.takeFrames()) {
                QCOMPARE(w.type, kWindowUpdate);
                const std::uint32_t inc = be32(w.payload, 0);
                QVERIFY(inc > 0);
                (w.stream == 0 ? conn : stream) += inc;
                QVERIFY(w.stream == 0 || w.stream == 1);
            }
            QVERIFY(conn <= 65535 && stream <= 65535); // never more than was received
        }
        QCOMPARE(c.events(), QString());
        QCOMPARE(c.feed(data(1, "", kEndStream)), QString("Open"));
        QCOMPARE(c.events(), resp(a, 200));
    }

    // --- GOAWAY (§6.8) ---

    void goawayDrains() {
        Client c(3);
        const auto r = request();
        const auto a = c.submit(r), b = c.submit(r), d = c.submit(r);
        QCOMPARE(c.handshake(),
                 QString("Open / HEADERS 1 END_STREAM END_HEADERS; HEADERS 3 END_STREAM END_HEADERS; "
                         "HEADERS 5 END_STREAM END_HEADERS; SETTINGS ACK"));
        QCOMPARE(c.feed(goaway(3, kNoError)), QString("Open"));
        QCOMPARE(c.events(), fail(d, "Refused"));
        QVERIFY(c.codec.draining());
        QCOMPARE(c.codec.inFlight(), std::size_t(2));
        QCOMPARE(c.take().contains("HEADERS"), false);
        std::uint32_t slot = kNoSlot;
        QVERIFY(!c.codec.submit(r, slot, c.out));
        QCOMPARE(c.out.size(), std::size_t(0));
        QCOMPARE(c.codec.inFlight(), std::size_t(2));
        QCOMPARE(c.feed(c.headers(1, {{":status", "200"}}, kEndHeaders | kEndStream)), QString("Open"));
        QCOMPARE(c.events(), resp(a, 200));
        QCOMPARE(c.feed(c.headers(3, {{":status", "200"}}) + data(3, "x", kEndStream)), QString("Closed"));
        QCOMPARE(c.events(), resp(b, 200));
        QCOMPARE(c.codec.inFlight(), std::size_t(0));
    }

    void goawayTwice() {
        Client c(3);
        const auto r = request();
        const auto a = c.submit(r), b = c.submit(r), d = c.submit(r);
        QCOMPARE(c.handshake(),
                 QString("Open / HEADERS 1 END_STREAM END_HEADERS; HEADERS 3 END_STREAM END_HEADERS; "
                         "HEADERS 5 END_STREAM END_HEADERS; SETTINGS ACK"));
        QCOMPARE(c.feed(goaway(0x7fffffff, kNoError)), QString("Open"));
        QCOMPARE(c.events(), QString());
        QVERIFY(c.codec.draining());
        QCOMPARE(c.feed(goaway(1, kEnhanceYourCalm)), QString("Open"));
        QCOMPARE(c.events(), fail(b, "Refused") + " " + fail(d, "Refused"));
        QCOMPARE(c.feed(c.headers(1, {{":status", "200"}}, kEndHeaders | kEndStream)), QString("Closed"));
        QCOMPARE(c.events(), resp(a, 200));
    }

    void goawayWithNothingInFlight() {
        Client c(1);
        QCOMPARE(c.handshake(), QString("Open / SETTINGS ACK"));
        QCOMPARE(c.feed(goaway(0, kNoError)), QString("Closed"));
        QVERIFY(c.codec.draining());
        const auto r = request();
        std::uint32_t slot = kNoSlot;
        QVERIFY(!c.codec.submit(r, slot, c.out));
        QCOMPARE(c.events(), QString());
    }

    void goawayFailsWaitingRequests() {
        Client c(3);
        QCOMPARE(c.handshake(settings({{kMaxConcurrentStreams, 1}})), QString("Open / SETTINGS ACK"));
        const auto r = request();
        const auto a = c.submit(r), b = c.submit(r), d = c.submit(r);
        QCOMPARE(c.take(), QString("HEADERS 1 END_STREAM END_HEADERS"));
        QCOMPARE(c.feed(goaway(1, kNoError)), QString("Open"));
        const QString events = c.events();
        QVERIFY2(events == fail(b, "Refused") + " " + fail(d, "Refused") ||
                     events == fail(d, "Refused") + " " + fail(b, "Refused"),
                 qPrintable(events));
        QCOMPARE(c.codec.inFlight(), std::size_t(1));
        QCOMPARE(c.feed(c.headers(1, {{":status", "200"}}, kEndHeaders | kEndStream)), QString("Closed"));
        QCOMPARE(c.events(), resp(a, 200));
        QCOMPARE(c.take().contains("HEADERS"), false); // the waiting requests were never sent
    }

    // --- connection errors (§5.4.1): GOAWAY with the error code ---

    void connectionErrors_data() {
        QTest::addColumn<QByteArray>("in");
        QTest::addColumn<uint>("code");
        const auto row = [](const char* name, const std::string& in, std::uint32_t code) {
            QTest::newRow(name) << qb(in) << uint(code);
        };
        const std::string headers1 = frame(kHeaders, kEndHeaders, 1, kStatus200);
        row("DATA on stream 0", data(0, "x"), kProtocolError);
        row("DATA on an idle stream", data(9, "x"), kProtocolError);
        row("HEADERS on stream 0", frame(kHeaders, kEndHeaders | kEndStream, 0, kStatus200), kProtocolError);
        row("HEADERS on a server-initiated stream", frame(kHeaders, kEndHeaders | kEndStream, 2, kStatus200),
            kProtocolError);
        row("frame over 16,384 (header only)", frameHeader(16385, kData, 0, 1), kFrameSizeError);
        row("frame over 16,384", frame(kData, 0, 1, std::string(16385, 'x')), kFrameSizeError);
        row("unknown frame over 16,384 (header only)", frameHeader(16385, 0xfa, 0, 0), kFrameSizeError);
        row("SETTINGS of 5 octets", frame(kSettings, 0, 0, "\x00\x04\x00\x00\x01"s), kFrameSizeError);
        row("SETTINGS of 7 octets", frame(kSettings, 0, 0, std::string(7, '\0')), kFrameSizeError);
        row("SETTINGS ACK with a payload", frame(kSettings, kAck, 0, std::string(6, '\0')), kFrameSizeError);
        row("SETTINGS on a stream", frame(kSettings, 0, 1, ""), kProtocolError);
        row("ENABLE_PUSH 1", settings({{kEnablePush, 1}}), kProtocolError);
        row("ENABLE_PUSH 2", settings({{kEnablePush, 2}}), kProtocolError);
        row("INITIAL_WINDOW_SIZE 2^31", settings({{kInitialWindowSize, 0x80000000u}}), kFlowControlError);
        row("INITIAL_WINDOW_SIZE 2^32-1", settings({{kInitialWindowSize, 0xffffffffu}}), kFlowControlError);
        row("MAX_FRAME_SIZE 16,383", settings({{kMaxFrameSize, 16383}}), kProtocolError);
        row("MAX_FRAME_SIZE 2^24", settings({{kMaxFrameSize, 1u << 24}}), kProtocolError);
        row("PUSH_PROMISE",
            frame(kPushPromise, kEndHeaders, 1,
                  u32(2) + "\x82\x86\x84\x41\x01"
                           "a"),
            kProtocolError);
        row("HPACK index 0", frame(kHeaders, kEndHeaders | kEndStream, 1, "\x80"), kCompressionError);
        row("HPACK index 62 (empty dynamic table)", frame(kHeaders, kEndHeaders | kEndStream, 1, "\x88\xbe"),
            kCompressionError);
        row("HPACK index 70", frame(kHeaders, kEndHeaders | kEndStream, 1, "\xc6"), kCompressionError);
        row("HPACK table size over SETTINGS_HEADER_TABLE_SIZE",
            frame(kHeaders, kEndHeaders | kEndStream, 1, "\x3f\xe2\x1f\x88"), kCompressionError);
        row("HPACK literal cut short",
            frame(kHeaders, kEndHeaders | kEndStream, 1,
                  "\x88\x00\x05"
                  "ab"s),
            kCompressionError);
        row("HPACK integer cut short", frame(kHeaders, kEndHeaders | kEndStream, 1, "\x88\x0f"),
            kCompressionError);
        row("PING of 7 octets", frame(kPing, 0, 0, "1234567"), kFrameSizeError);
        row("PING on a stream", frame(kPing, 0, 1, "12345678"), kProtocolError);
        row("WINDOW_UPDATE 0 on the connection", windowUpdate(0, 0), kProtocolError);
        row("WINDOW_UPDATE of 3 octets", frame(kWindowUpdate, 0, 0, "\x00\x00\x01"s), kFrameSizeError);
        row("WINDOW_UPDATE on an idle stream", windowUpdate(9, 1), kProtocolError);
        row("connection window over 2^31-1", windowUpdate(0, 0x7fffffff), kFlowControlError);
        row("RST_STREAM on stream 0", rstStream(0, kCancel), kProtocolError);
        row("RST_STREAM of 3 octets", frame(kRstStream, 0, 1, "\x00\x00\x08"s), kFrameSizeError);
        row("RST_STREAM on an idle stream", rstStream(9, kCancel), kProtocolError);
        row("CONTINUATION without HEADERS", frame(kContinuation, kEndHeaders, 1, kStatus200), kProtocolError);
        row("GOAWAY on a stream", frame(kGoaway, 0, 1, u32(0) + u32(0)), kProtocolError);
        row("GOAWAY of 7 octets", frame(kGoaway, 0, 0, std::string(7, '\0')), kFrameSizeError);
        row("DATA padding too long",
            headers1 + data(1,
                            "\x05"
                            "abc",
                            kPadded),
            kProtocolError);
    }
    void connectionErrors() {
        QFETCH(QByteArray, in);
        QFETCH(uint, code);
        Client c(2);
        const auto r = request();
        c.submit(r);
        QCOMPARE(c.handshake(), QString("Open / HEADERS 1 END_STREAM END_HEADERS; SETTINGS ACK"));
        QCOMPARE(c.feed(std::string_view(in.constData(), std::size_t(in.size()))), QString("Error"));
        const auto frames = c.takeFrames();
        QVERIFY(!frames.empty());
        QCOMPARE(describe(frames.back()), QString("GOAWAY 0 %1").arg(code));
    }

    // Unknown frame types, unknown SETTINGS and PRIORITY are ignored (§4.1, §5.5, §6.3, §6.5.2).
    void ignoredFrames() {
        Client c(2);
        const auto r = request();
        const auto a = c.submit(r);
        QCOMPARE(c.handshake(settings({{0x99, 5}, {kEnablePush, 0}, {0xffff, 0xffffffffu}})),
                 QString("Open / HEADERS 1 END_STREAM END_HEADERS; SETTINGS ACK"));
        QCOMPARE(c.feed(frame(0xfa, 0xff, 0, "xyz") + frame(0xfa, 0, 1, "") + frame(0xfb, 0x4, 77, "abc") +
                        frame(kPriority, 0, 1, u32(0) + "\x10") + frame(kPriority, 0, 9, u32(3) + "\x10") +
                        windowUpdate(1, 100) + frame(0xfa, 0, 0, std::string(16384, 'u'))),
                 QString("Open"));
        QCOMPARE(c.take(), QString());
        QCOMPARE(c.feed(c.headers(1, {{":status", "200"}}) + frame(0xfc, 0, 1, "in the middle") +
                        data(1, "x", kEndStream)),
                 QString("Open"));
        QCOMPARE(c.events(), resp(a, 200));
        QCOMPARE(c.take(), QString());
    }
};

QTEST_APPLESS_MAIN(TestH2ClientCodec)
#include "tst_h2_client_codec.moc"
