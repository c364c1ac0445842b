// Unit tests for the HTTP/1.1 request-head parser and chunked decoder: RFC 9112 strictness, limits,
// keep-alive, pipelining, incremental input, smuggling cases SMG-01/03/05, and zero allocation.
#include <portico/http1/parser.h>

#include <QtTest>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

// Counting global allocator: lets the suite prove that parsing allocates nothing.
namespace {
std::atomic<bool> gCountAllocs{false};
std::atomic<long> gAllocs{0};
} // namespace

void* operator new(std::size_t size) {
    if (gCountAllocs.load(std::memory_order_relaxed)) gAllocs.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(size ? size : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

using namespace portico;
using namespace portico::http1;

namespace {

// Byte array from a literal, embedded NULs included.
template <std::size_t N> QByteArray B(const char (&s)[N]) {
    return QByteArray(s, static_cast<qsizetype>(N - 1));
}

std::string_view sv(const QByteArray& a) { return {a.constData(), static_cast<std::size_t>(a.size())}; }
QByteArray qb(std::string_view s) { return QByteArray(s.data(), static_cast<qsizetype>(s.size())); }

// Outcome code used by the tables: 0 = Complete, -1 = Incomplete, else the error status.
constexpr int kOk = 0;
constexpr int kIncomplete = -1;

// Keeps the input alive (implicitly shared, same bytes) so that the head's views stay valid.
struct HeadResult {
    QByteArray input;
    int code = kIncomplete;
    std::size_t consumed = 0;
    ParseError error;
    std::unique_ptr<RequestHead> head = std::make_unique<RequestHead>();
};

HeadResult parse(const QByteArray& in, const ParserLimits& limits = {}) {
    HeadResult r;
    r.input = in;
    ParseStatus st = parseHead(sv(r.input), limits, *r.head, r.consumed, r.error);
    r.code = st == ParseStatus::Complete ? kOk : st == ParseStatus::Incomplete ? kIncomplete : r.error.status;
    return r;
}

QByteArray field(const RequestHead& h, std::string_view name) {
    for (std::size_t i = 0; i < h.headerCount; ++i)
        if (http::iequals(h.headers[i].name, name)) return qb(h.headers[i].value);
    return {};
}

struct BodyResult {
    int code = kIncomplete; // 0 = Done, -1 = NeedMore, else error status
    std::string body;
    std::size_t consumed = 0;
    QList<QPair<QByteArray, QByteArray>> trailers;
};

int decoderCode(ChunkedDecoder::Status st, const ParseError& e) {
    return st == ChunkedDecoder::Status::Done       ? kOk
           : st == ChunkedDecoder::Status::NeedMore ? kIncomplete
                                                    : e.status;
}

void copyTrailers(const ChunkedDecoder& d, BodyResult& r) {
    for (const auto& t : d.trailers())
        r.trailers.append({qb(t.name), qb(t.value)});
}

// Whole input in one call.
BodyResult decodeAll(const QByteArray& in, std::uint64_t maxBody = 1 << 20,
                     std::size_t maxTrailer = 16 * 1024) {
    BodyResult r;
    ChunkedDecoder d;
    d.reset(maxBody, maxTrailer);
    ParseError e;
    r.code = decoderCode(d.decode(sv(in), r.body, r.consumed, e), e);
    if (r.code == kOk) copyTrailers(d, r);
    return r;
}

// One byte at a time, keeping the unconsumed rest as the header contract asks. `consumed` is
// reported relative to the whole input.
BodyResult decodeBytewise(const QByteArray& in, std::uint64_t maxBody = 1 << 20,
                          std::size_t maxTrailer = 16 * 1024) {
    BodyResult r;
    ChunkedDecoder d;
    d.reset(maxBody, maxTrailer);
    ParseError e;
    QByteArray pending;
    std::size_t base = 0; // offset of pending[0] in `in`
    for (qsizetype i = 0; i < in.size(); ++i) {
        pending.append(in[i]);
        std::size_t used = 0;
        auto st = d.decode(sv(pending), r.body, used, e);
        r.code = decoderCode(st, e);
        if (r.code == kOk) copyTrailers(d, r);
        if (r.code != kIncomplete) {
            r.consumed = base + used;
            return r;
        }
        pending.remove(0, static_cast<qsizetype>(used));
        base += used;
    }
    r.consumed = base;
    return r;
}

// Serves every request in `wire` as a server would (head, then body by its framing) until an
// error or the end. Returns "METHOD target body" per served request, then "ERR <status>" if any.
QStringList serveAll(const QByteArray& wire, ParserLimits limits = {}) {
    QStringList out;
    std::string_view rest = sv(wire);
    auto head = std::make_unique<RequestHead>();
    while (!rest.empty()) {
        std::size_t used = 0;
        ParseError e;
        auto st = parseHead(rest, limits, *head, used, e);
        if (st == ParseStatus::Error) return out << QStringLiteral("ERR %1").arg(e.status);
        if (st == ParseStatus::Incomplete) return out << QStringLiteral("INCOMPLETE");
        rest.remove_prefix(used);
        std::string body;
        if (head->framing == RequestHead::Framing::ContentLength) {
            if (rest.size() < head->contentLength) return out << QStringLiteral("INCOMPLETE");
            body.assign(rest.substr(0, head->contentLength));
            rest.remove_prefix(head->contentLength);
        } else if (head->framing == RequestHead::Framing::Chunked) {
            ChunkedDecoder d;
            d.reset(limits.maxBodyBytes);
            auto bst = d.decode(rest, body, used, e);
            if (bst == ChunkedDecoder::Status::Error) return out << QStringLiteral("ERR %1").arg(e.status);
            if (bst == ChunkedDecoder::Status::NeedMore) return out << QStringLiteral("INCOMPLETE");
            rest.remove_prefix(used);
        }
        out << QString::fromLatin1(qb(head->methodToken) + ' ' + qb(head->target) + ' ' + qb(body));
        if (!head->keepAlive) break;
    }
    return out;
}

QByteArray repeat(char c, qsizetype n) { return QByteArray(n, c); }

} // namespace

class TestHttp1Parser : public QObject {
    Q_OBJECT

private slots:
    // http::iequals against a table-free oracle: every pair of bytes, both as a one-byte name
    // and inside a longer one. Only A-Z and a-z fold (RFC 9110 §5.1 names are ASCII tokens;
    // bytes >= 0x80 and punctuation such as '@'/'`' or '['/'{' differ only in bit 0x20 and must
    // not match).
    void iequalsFoldsAsciiLettersOnly() {
        auto oracle = [](unsigned char x, unsigned char y) {
            auto low = [](unsigned char c) {
                return c >= 'A' && c <= 'Z' ? static_cast<unsigned char>(c + 32) : c;
            };
            return low(x) == low(y);
        };
        int matches = 0;
        for (int x = 0; x < 256; ++x)
            for (int y = 0; y < 256; ++y) {
                const char a[] = {'c', 'o', static_cast<char>(x), 'X'};
                const char b[] = {'C', 'o', static_cast<char>(y), 'x'};
                const bool want = oracle(static_cast<unsigned char>(x), static_cast<unsigned char>(y));
                if (http::iequals(std::string_view(a + 2, 1), std::string_view(b + 2, 1)) != want ||
                    http::iequals(std::string_view(a, 4), std::string_view(b, 4)) != want)
                    QFAIL(qPrintable(QString("bytes %1 and %2").arg(x).arg(y)));
                matches += want;
            }
        QCOMPARE(matches, 256 + 2 * 26); // each byte with itself, and each letter with its other case
        QVERIFY(!http::iequals("Content-Length", "Content-Lengt"));
        QVERIFY(http::iequals("", ""));
    }
    void validHeads_data();
    void validHeads();
    void invalidHeads_data();
    void invalidHeads();
    void limits_data();
    void limits();
    void maxHeadersCap();
    void keepAlive_data();
    void keepAlive();
    void absoluteForm_data();
    void absoluteForm();
    void headerFieldsKept();
    void pipelined();
    void splitAtEveryByte_data();
    void splitAtEveryByte();
    void chunked_data();
    void chunked();
    void chunkedErrors_data();
    void chunkedErrors();
    void chunkedBodyLimit();
    void chunkedTrailerWaitsForWholeSection();
    void chunkedStopsAtMessageEnd();
    void chunkedAfterDoneAndError();
    void smuggling_data();
    void smuggling();
    void noAllocation();
    void badByteAtEveryPosition_data();
    void badByteAtEveryPosition();
    void mutationProperties();
    void earlyRejectOfNonHttp_data();
    void earlyRejectOfNonHttp();
};

// ---- heads -------------------------------------------------------------------------------------

void TestHttp1Parser::validHeads_data() {
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<QByteArray>("method");
    QTest::addColumn<int>("methodEnum");
    QTest::addColumn<QByteArray>("rawPath");
    QTest::addColumn<QByteArray>("query");
    QTest::addColumn<QByteArray>("host");
    QTest::addColumn<int>("minor");
    QTest::addColumn<int>("framing");
    QTest::addColumn<qulonglong>("length");

    using F = RequestHead::Framing;
    const int none = int(F::None), cl = int(F::ContentLength), ch = int(F::Chunked);
    const int get = int(http::Method::Get), post = int(http::Method::Post), other = int(http::Method::Other);
    // clang-format off
    QTest::newRow("simple") << B("GET / HTTP/1.1\r\nHost: a\r\n\r\n") << B("GET") << get << B("/") << B("") << B("a") << 1 << none << 0ull;
    QTest::newRow("bare LF line ends") << B("GET /x HTTP/1.1\nHost: a\n\n") << B("GET") << get << B("/x") << B("") << B("a") << 1 << none << 0ull;
    QTest::newRow("mixed line ends") << B("GET /x HTTP/1.1\nHost: a\r\n\n") << B("GET") << get << B("/x") << B("") << B("a") << 1 << none << 0ull;
    QTest::newRow("leading empty lines") << B("\r\n\nGET / HTTP/1.1\r\nHost: a\r\n\r\n") << B("GET") << get << B("/") << B("") << B("a") << 1 << none << 0ull;
    QTest::newRow("query") << B("GET /a/b?x=1&y=%20 HTTP/1.1\r\nHost: a\r\n\r\n") << B("GET") << get << B("/a/b") << B("x=1&y=%20") << B("a") << 1 << none << 0ull;
    QTest::newRow("empty query") << B("GET /a? HTTP/1.1\r\nHost: a\r\n\r\n") << B("GET") << get << B("/a") << B("") << B("a") << 1 << none << 0ull;
    QTest::newRow("question mark in query") << B("GET /a?b?c HTTP/1.1\r\nHost: a\r\n\r\n") << B("GET") << get << B("/a") << B("b?c") << B("a") << 1 << none << 0ull;
    QTest::newRow("POST CL") << B("POST /e HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n") << B("POST") << post << B("/e") << B("") << B("a") << 1 << cl << 5ull;
    QTest::newRow("CL zero") << B("POST /e HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n") << B("POST") << post << B("/e") << B("") << B("a") << 1 << cl << 0ull;
    QTest::newRow("CL leading zeros") << B("POST /e HTTP/1.1\r\nHost: a\r\nContent-Length: 0005\r\n\r\n") << B("POST") << post << B("/e") << B("") << B("a") << 1 << cl << 5ull;
    QTest::newRow("CL identical list (RFC 9110 8.6)") << B("POST /e HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n") << B("POST") << post << B("/e") << B("") << B("a") << 1 << cl << 5ull;
    QTest::newRow("CL identical lines (RFC 9110 8.6)") << B("POST /e HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\n") << B("POST") << post << B("/e") << B("") << B("a") << 1 << cl << 5ull;
    QTest::newRow("CL case-insensitive name") << B("POST /e HTTP/1.1\r\nHost: a\r\nCONTENT-LENGTH:7\r\n\r\n") << B("POST") << post << B("/e") << B("") << B("a") << 1 << cl << 7ull;
    QTest::newRow("chunked") << B("POST /e HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n") << B("POST") << post << B("/e") << B("") << B("a") << 1 << ch << 0ull;
    QTest::newRow("chunked mixed case") << B("POST /e HTTP/1.1\r\nHost: a\r\ntransfer-encoding: ChUnKeD\r\n\r\n") << B("POST") << post << B("/e") << B("") << B("a") << 1 << ch << 0ull;
    QTest::newRow("chunked empty list elements") << B("POST /e HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: , chunked ,\r\n\r\n") << B("POST") << post << B("/e") << B("") << B("a") << 1 << ch << 0ull;
    QTest::newRow("extension method") << B("PURGE /c HTTP/1.1\r\nHost: a\r\n\r\n") << B("PURGE") << other << B("/c") << B("") << B("a") << 1 << none << 0ull;
    QTest::newRow("lowercase method is a token") << B("get / HTTP/1.1\r\nHost: a\r\n\r\n") << B("get") << other << B("/") << B("") << B("a") << 1 << none << 0ull;
    QTest::newRow("tchar method") << B("M-SEARCH! / HTTP/1.1\r\nHost: a\r\n\r\n") << B("M-SEARCH!") << other << B("/") << B("") << B("a") << 1 << none << 0ull;
    QTest::newRow("HTTP/1.0 without Host") << B("GET /old HTTP/1.0\r\n\r\n") << B("GET") << get << B("/old") << B("") << B("") << 0 << none << 0ull;
    QTest::newRow("OPTIONS *") << B("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n") << B("OPTIONS") << int(http::Method::Options) << B("*") << B("") << B("a") << 1 << none << 0ull;
    QTest::newRow("CONNECT authority-form") << B("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n") << B("CONNECT") << int(http::Method::Connect) << B("") << B("") << B("example.com:443") << 1 << none << 0ull;
    QTest::newRow("IPv6 Host with port") << B("GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n") << B("GET") << get << B("/") << B("") << B("[::1]:8080") << 1 << none << 0ull;
    QTest::newRow("empty Host value") << B("GET / HTTP/1.1\r\nHost:\r\n\r\n") << B("GET") << get << B("/") << B("") << B("") << 1 << none << 0ull;
    QTest::newRow("Host OWS trimmed") << B("GET / HTTP/1.1\r\nHost: \t a:1 \t\r\n\r\n") << B("GET") << get << B("/") << B("") << B("a:1") << 1 << none << 0ull;
    QTest::newRow("raw UTF-8 in target tolerated") << B("GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n") << B("GET") << get << B("/caf\xc3\xa9") << B("") << B("a") << 1 << none << 0ull;
    QTest::newRow("HTAB and obs-text in values") << B("GET / HTTP/1.1\r\nHost: a\r\nX: a\tb \xff\r\n\r\n") << B("GET") << get << B("/") << B("") << B("a") << 1 << none << 0ull;
    QTest::newRow("empty field value") << B("GET / HTTP/1.1\r\nHost: a\r\nX-Empty:\r\n\r\n") << B("GET") << get << B("/") << B("") << B("a") << 1 << none << 0ull;
    QTest::newRow("TE chunked and unrelated fields") << B("PUT /u HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n") << B("PUT") << int(http::Method::Put) << B("/u") << B("") << B("a") << 1 << ch << 0ull;
    // clang-format on
}

void TestHttp1Parser::validHeads() {
    QFETCH(QByteArray, input);
    auto r = parse(input);
    QCOMPARE(r.code, kOk);
    QCOMPARE(r.consumed, std::size_t(input.size()));
    const RequestHead& h = *r.head;
    QTEST(qb(h.methodToken), "method");
    QTEST(int(h.method), "methodEnum");
    QTEST(qb(h.rawPath), "rawPath");
    QTEST(qb(h.query), "query");
    QTEST(qb(h.host), "host");
    QTEST(h.versionMinor, "minor");
    QTEST(int(h.framing), "framing");
    QTEST(qulonglong(h.contentLength), "length");
}

void TestHttp1Parser::invalidHeads_data() {
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<int>("status");
    // clang-format off
    // Request line and version.
    QTest::newRow("HTTP/2.0") << B("GET / HTTP/2.0\r\nHost: a\r\n\r\n") << 505;
    QTest::newRow("HTTP/1.2") << B("GET / HTTP/1.2\r\nHost: a\r\n\r\n") << 505;
    QTest::newRow("HTTP/0.9 version") << B("GET / HTTP/0.9\r\nHost: a\r\n\r\n") << 505;
    // RFC 9112 §3: no HTTP-version at all is a malformed line (400), not an unsupported version.
    QTest::newRow("no version (HTTP/0.9 simple request)") << B("GET /\r\n\r\n") << 400;
    QTest::newRow("no version: a body's leftovers") << B(".html HTTP/1.1\r\n\r\n") << 400;
    QTest::newRow("HTTP/3.1") << B("GET / HTTP/3.1\r\nHost: a\r\n\r\n") << 505;
    QTest::newRow("lowercase http") << B("GET / http/1.1\r\nHost: a\r\n\r\n") << 400;
    QTest::newRow("version two digits") << B("GET / HTTP/1.10\r\nHost: a\r\n\r\n") << 400;
    QTest::newRow("version no dot") << B("GET / HTTP/11\r\nHost: a\r\n\r\n") << 400;
    QTest::newRow("version letters") << B("GET / HTTP/x.y\r\nHost: a\r\n\r\n") << 400;
    QTest::newRow("trailing space after version") << B("GET / HTTP/1.1 \r\nHost: a\r\n\r\n") << 400;
    QTest::newRow("garbage after version") << B("GET / HTTP/1.1 x\r\nHost: a\r\n\r\n") << 400;
    QTest::newRow("double space") << B("GET  / HTTP/1.1\r\nHost: a\r\n\r\n") << 400;
    QTest::newRow("tab separator") << B("GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n") << 400;
    QTest::newRow("empty method") << B(" / HTTP/1.1\r\nHost: a\r\n\r\n") << 400;
    QTest::newRow("method with (") << B("GE(T / HTTP/1.1\r\nHost: a\r\n\r\n") << 400;
    QTest::newRow("method with @") << B("G@T / HTTP/1.1\r\nHost: a\r\n\r\n") << 400;
    QTest::newRow("method with NUL") << B("G\0T / HTTP/1.1\r\nHost: a\r\n\r\n") << 400;
    QTest::newRow("only method") << B("GET\r\n\r\n") << 400;
    QTest::newRow("binary garbage") << B("\x16\x03\x01\x02\x00\x01\r\n\r\n") << 400;
    QTest::newRow("target CTL") << B("GET /a\x01z HTTP/1.1\r\nHost: a\r\n\r\n") << 400;
    QTest::newRow("target DEL") << B("GET /a\x7fz HTTP/1.1\r\nHost: a\r\n\r\n") << 400;
    QTest::newRow("target tab") << B("GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n") << 400;
    QTest::newRow("PTH-05 raw NUL in target") << B("GET /a.txt\0.png HTTP/1.1\r\nHost: t\r\n\r\n") << 400;
    QTest::newRow("fragment in target") << B("GET /a#frag HTTP/1.1\r\nHost: a\r\n\r\n") << 400;
    QTest::newRow("relative target") << B("GET a/b HTTP/1.1\r\nHost: a\r\n\r\n") << 400;
    QTest::newRow("asterisk for GET") << B("GET * HTTP/1.1\r\nHost: a\r\n\r\n") << 400;
    QTest::newRow("CONNECT origin-form") << B("CONNECT /x HTTP/1.1\r\nHost: a\r\n\r\n") << 400;
    QTest::newRow("CONNECT bad authority") << B("CONNECT a/b:1 HTTP/1.1\r\nHost: a\r\n\r\n") << 400;
    QTest::newRow("absolute ftp scheme") << B("GET ftp://a/x HTTP/1.1\r\nHost: a\r\n\r\n") << 400;
    QTest::newRow("absolute empty authority") << B("GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n") << 400;
    QTest::newRow("absolute userinfo") << B("GET http://u:p@a/x HTTP/1.1\r\nHost: a\r\n\r\n") << 400;
    // Line ends.
    QTest::newRow("bare CR after request line") << B("GET / HTTP/1.1\rHost: a\r\n\r\n") << 400;
    QTest::newRow("bare CR in field line") << B("GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n") << 400;
    QTest::newRow("CR CR LF") << B("GET / HTTP/1.1\r\nHost: a\r\r\n\r\n") << 400;
    QTest::newRow("bare CR as empty line") << B("GET / HTTP/1.1\r\nHost: a\r\n\r\r\n") << 400;
    // Host.
    QTest::newRow("missing Host in 1.1") << B("GET / HTTP/1.1\r\n\r\n") << 400;
    QTest::newRow("two Hosts") << B("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n") << 400;
    QTest::newRow("two Hosts differing case") << B("GET / HTTP/1.1\r\nHost: a\r\nhOST: b\r\n\r\n") << 400;
    QTest::newRow("two Hosts in 1.0") << B("GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n") << 400;
    QTest::newRow("Host with space") << B("GET / HTTP/1.1\r\nHost: a b\r\n\r\n") << 400;
    QTest::newRow("Host with slash") << B("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n") << 400;
    QTest::newRow("Host with userinfo") << B("GET / HTTP/1.1\r\nHost: u@a\r\n\r\n") << 400;
    // RFC 9110 §7.2, RFC 3986 §3.2.2-3: a port needs a host; a port is digits within 0..65535.
    QTest::newRow("Host only a colon") << B("GET / HTTP/1.1\r\nHost: :\r\n\r\n") << 400;
    QTest::newRow("Host port without host") << B("GET / HTTP/1.1\r\nHost: :80\r\n\r\n") << 400;
    QTest::newRow("Host port out of range") << B("GET / HTTP/1.1\r\nHost: :99999\r\n\r\n") << 400;
    QTest::newRow("Host port 65536") << B("GET / HTTP/1.1\r\nHost: a:65536\r\n\r\n") << 400;
    QTest::newRow("Host port letters") << B("GET / HTTP/1.1\r\nHost: x:abc\r\n\r\n") << 400;
    QTest::newRow("Host two ports") << B("GET / HTTP/1.1\r\nHost: x:1:2\r\n\r\n") << 400;
    QTest::newRow("Host unclosed IPv6") << B("GET / HTTP/1.1\r\nHost: [::1\r\n\r\n") << 400;
    QTest::newRow("Host IPv6 junk after") << B("GET / HTTP/1.1\r\nHost: [::1]x\r\n\r\n") << 400;
    QTest::newRow("Host IPv6 not hex") << B("GET / HTTP/1.1\r\nHost: [::g]\r\n\r\n") << 400;
    QTest::newRow("absolute-form port out of range") << B("GET http://a:70000/ HTTP/1.1\r\nHost: a\r\n\r\n") << 400;
    // Field syntax.
    QTest::newRow("space before colon") << B("GET / HTTP/1.1\r\nHost : a\r\n\r\n") << 400;
    QTest::newRow("tab before colon") << B("GET / HTTP/1.1\r\nHost\t: a\r\n\r\n") << 400;
    QTest::newRow("obs-fold") << B("GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n") << 400;
    QTest::newRow("obs-fold tab") << B("GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n\tb\r\n\r\n") << 400;
    QTest::newRow("whitespace before first field") << B("GET / HTTP/1.1\r\n Host: a\r\n\r\n") << 400;
    QTest::newRow("no colon") << B("GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n") << 400;
    QTest::newRow("empty name") << B("GET / HTTP/1.1\r\nHost: a\r\n: v\r\n\r\n") << 400;
    QTest::newRow("invalid name char") << B("GET / HTTP/1.1\r\nHost: a\r\nX(y): v\r\n\r\n") << 400;
    QTest::newRow("NUL in value") << B("GET / HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n") << 400;
    QTest::newRow("DEL in value") << B("GET / HTTP/1.1\r\nHost: a\r\nX: a\x7f\r\n\r\n") << 400;
    QTest::newRow("VT in value") << B("GET / HTTP/1.1\r\nHost: a\r\nX: a\x0b\r\n\r\n") << 400;
    QTest::newRow("ESC in value") << B("GET / HTTP/1.1\r\nHost: a\r\nX: \x1b[0m\r\n\r\n") << 400;
    // Content-Length (SMG-05 family).
    QTest::newRow("CL +3") << B("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +3\r\n\r\n") << 400;
    QTest::newRow("CL -1") << B("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n") << 400;
    QTest::newRow("CL hex") << B("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x10\r\n\r\n") << 400;
    QTest::newRow("CL letters") << B("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: abc\r\n\r\n") << 400;
    QTest::newRow("CL trailing letter") << B("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3a\r\n\r\n") << 400;
    QTest::newRow("CL empty") << B("POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n") << 400;
    QTest::newRow("CL inner space") << B("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1 2\r\n\r\n") << 400;
    QTest::newRow("CL decimal point") << B("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1.0\r\n\r\n") << 400;
    QTest::newRow("CL list differing") << B("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 6\r\n\r\n") << 400;
    QTest::newRow("CL list trailing comma") << B("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5,\r\n\r\n") << 400;
    QTest::newRow("CL lines differing") << B("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 0\r\n\r\n") << 400;
    QTest::newRow("CL overflow") << B("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 18446744073709551616\r\n\r\n") << 400;
    QTest::newRow("CL huge") << B("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n") << 400;
    // Transfer-Encoding.
    QTest::newRow("CL and TE") << B("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n") << 400;
    QTest::newRow("TE and CL") << B("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 6\r\n\r\n") << 400;
    QTest::newRow("TE gzip only") << B("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n") << 400;
    QTest::newRow("TE identity") << B("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n") << 400;
    QTest::newRow("TE chunked, gzip") << B("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n") << 400;
    QTest::newRow("TE lines chunked then gzip") << B("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n") << 400;
    QTest::newRow("TE chunked, chunked") << B("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n") << 400;
    QTest::newRow("TE lines chunked twice") << B("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n") << 400;
    QTest::newRow("TE empty") << B("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n\r\n") << 400;
    QTest::newRow("TE chunked with params") << B("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked;q=1\r\n\r\n") << 400;
    QTest::newRow("TE invalid coding") << B("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: g(z), chunked\r\n\r\n") << 400;
    QTest::newRow("TE misspelt") << B("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunkedx\r\n\r\n") << 400;
    QTest::newRow("TE in HTTP/1.0") << B("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n") << 400;
    QTest::newRow("TE gzip, chunked") << B("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n") << 501;
    QTest::newRow("TE lines gzip then chunked") << B("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n") << 501;
    QTest::newRow("TE deflate;x=1, chunked") << B("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: deflate;x=1, chunked\r\n\r\n") << 501;
    // clang-format on
}

void TestHttp1Parser::invalidHeads() {
    QFETCH(QByteArray, input);
    QFETCH(int, status);
    auto r = parse(input);
    QCOMPARE(r.code, status);
    QVERIFY(r.error.reason && *r.error.reason);
}

void TestHttp1Parser::limits_data() {
    // Small limits so that both sides of each boundary are cheap to build.
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<int>("code");
    // Limits used by limits(): request line 64, head 256, 4 fields, body 100.
    const QByteArray host = "Host: a\r\n"; // 9 bytes

    // Request line "GET /xxx HTTP/1.1\r\n": 15 bytes + path length.
    auto requestLine = [](qsizetype total) { return "GET /" + repeat('x', total - 16) + " HTTP/1.1\r\n"; };
    QTest::newRow("request line == limit") << requestLine(64) + host + "\r\n" << kOk;
    QTest::newRow("request line == limit+1") << requestLine(65) + host + "\r\n" << 414;
    QTest::newRow("request line limit-1 bytes, no LF yet") << requestLine(64).left(63) << kIncomplete;
    QTest::newRow("request line limit bytes, no LF yet") << requestLine(65).left(64) << 414;
    QTest::newRow("request line bare LF == limit")
        << "GET /" + repeat('x', 64 - 15) + " HTTP/1.1\n" + host + "\r\n"
        << kOk;
    QTest::newRow("request line bare LF == limit+1")
        << "GET /" + repeat('x', 65 - 15) + " HTTP/1.1\n" + host + "\r\n"
        << 414;

    // Whole head: "GET / HTTP/1.1\r\n" (16) + host (9) + "X: v...\r\n" + "\r\n".
    auto head = [&](qsizetype total) {
        QByteArray h = "GET / HTTP/1.1\r\n" + host;
        qsizetype fieldLen = total - h.size() - 2; // "X: " + v + "\r\n"
        return h + "X: " + repeat('v', fieldLen - 5) + "\r\n\r\n";
    };
    QTest::newRow("head == limit") << head(256) << kOk;
    QTest::newRow("head == limit+1") << head(257) << 431;
    QTest::newRow("head limit-1 bytes, incomplete") << head(256).left(255) << kIncomplete;
    QTest::newRow("head limit bytes, incomplete") << head(257).left(256) << 431;
    QTest::newRow("head == limit with bare LF end") << head(256).chopped(2) + "\n" + "" << kOk;

    QByteArray fields = "GET / HTTP/1.1\r\n" + host;
    for (int i = 0; i < 3; ++i)
        fields += "X: 1\r\n"; // 4 fields incl. Host
    QTest::newRow("field count == limit") << fields + "\r\n" << kOk;
    QTest::newRow("field count == limit+1") << fields + "Y: 2\r\n\r\n" << 431;
    QTest::newRow("field count limit+1, incomplete") << fields + "Y: 2\r\n" << 431;

    QTest::newRow("CL == maxBody") << B("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n") << kOk;
    QTest::newRow("CL == maxBody+1") << B("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 101\r\n\r\n") << 413;
    QTest::newRow("CL max uint64")
        << B("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 18446744073709551615\r\n\r\n") << 413;
    QTest::newRow("CRLF flood before request") << repeat('\n', 256) << 431;
    QTest::newRow("CRLF flood just below limit") << repeat('\n', 255) << kIncomplete;
}

void TestHttp1Parser::limits() {
    QFETCH(QByteArray, input);
    QFETCH(int, code);
    const ParserLimits lim{64, 256, 4, 100};
    auto r = parse(input, lim);
    QCOMPARE(r.code, code);
    if (code == kOk) QCOMPARE(r.consumed, std::size_t(input.size()));
}

void TestHttp1Parser::maxHeadersCap() {
    // A configured count above kMaxHeaders is capped by the array.
    ParserLimits lim;
    lim.maxHeaderCount = 1000;
    QByteArray h = "GET / HTTP/1.1\r\nHost: a\r\n";
    for (std::size_t i = 1; i < kMaxHeaders; ++i)
        h += "X: 1\r\n";
    QCOMPARE(parse(h + "\r\n", lim).code, kOk);
    QCOMPARE(parse(h + "\r\n", lim).head->headerCount, kMaxHeaders);
    QCOMPARE(parse(h + "Y: 1\r\n\r\n", lim).code, 431);
}

void TestHttp1Parser::keepAlive_data() {
    QTest::addColumn<QByteArray>("version");
    QTest::addColumn<QByteArray>("fields");
    QTest::addColumn<bool>("keepAlive");
    QTest::addColumn<bool>("upgrade");
    QTest::addColumn<bool>("expectContinue");
    // clang-format off
    QTest::newRow("1.1 default") << B("1.1") << B("") << true << false << false;
    QTest::newRow("1.1 close") << B("1.1") << B("Connection: close\r\n") << false << false << false;
    QTest::newRow("1.1 CLOSE") << B("1.1") << B("Connection: CLOSE\r\n") << false << false << false;
    QTest::newRow("1.1 keep-alive") << B("1.1") << B("Connection: keep-alive\r\n") << true << false << false;
    QTest::newRow("1.1 keep-alive, close") << B("1.1") << B("Connection: keep-alive, close\r\n") << false << false << false;
    QTest::newRow("1.1 close in second line") << B("1.1") << B("Connection: keep-alive\r\nConnection: foo,close\r\n") << false << false << false;
    QTest::newRow("1.1 closed is not close") << B("1.1") << B("Connection: closed\r\n") << true << false << false;
    QTest::newRow("1.1 empty elements") << B("1.1") << B("Connection: ,, close ,\r\n") << false << false << false;
    QTest::newRow("1.0 default") << B("1.0") << B("") << false << false << false;
    QTest::newRow("1.0 keep-alive") << B("1.0") << B("Connection: keep-alive\r\n") << true << false << false;
    QTest::newRow("1.0 Keep-Alive") << B("1.0") << B("Connection: Keep-Alive\r\n") << true << false << false;
    QTest::newRow("1.0 keep-alive, close") << B("1.0") << B("Connection: Keep-Alive, close\r\n") << false << false << false;
    QTest::newRow("1.0 close") << B("1.0") << B("Connection: close\r\n") << false << false << false;
    QTest::newRow("1.0 keep-alives") << B("1.0") << B("Connection: keep-alives\r\n") << false << false << false;
    QTest::newRow("1.1 upgrade") << B("1.1") << B("Connection: Upgrade\r\nUpgrade: websocket\r\n") << true << true << false;
    QTest::newRow("1.1 keep-alive, upgrade") << B("1.1") << B("Connection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n") << true << true << false;
    QTest::newRow("1.1 upgrade without Upgrade field") << B("1.1") << B("Connection: upgrade\r\n") << true << false << false;
    QTest::newRow("1.1 Upgrade field without token") << B("1.1") << B("Upgrade: websocket\r\n") << true << false << false;
    QTest::newRow("1.0 upgrade ignored") << B("1.0") << B("Connection: upgrade\r\nUpgrade: websocket\r\n") << false << false << false;
    QTest::newRow("1.1 expect") << B("1.1") << B("Expect: 100-continue\r\n") << true << false << true;
    QTest::newRow("1.1 expect mixed case") << B("1.1") << B("expect:  100-Continue \r\n") << true << false << true;
    QTest::newRow("1.1 other expectation") << B("1.1") << B("Expect: 200-ok\r\n") << true << false << false;
    QTest::newRow("1.0 expect ignored") << B("1.0") << B("Expect: 100-continue\r\n") << false << false << false;
    // clang-format on
}

void TestHttp1Parser::keepAlive() {
    QFETCH(QByteArray, version);
    QFETCH(QByteArray, fields);
    auto r = parse("GET / HTTP/" + version + "\r\nHost: a\r\n" + fields + "\r\n");
    QCOMPARE(r.code, kOk);
    QTEST(r.head->keepAlive, "keepAlive");
    QTEST(r.head->upgrade, "upgrade");
    QTEST(r.head->expectContinue, "expectContinue");
}

void TestHttp1Parser::absoluteForm_data() {
    QTest::addColumn<QByteArray>("target");
    QTest::addColumn<QByteArray>("authority");
    QTest::addColumn<QByteArray>("rawPath");
    QTest::addColumn<QByteArray>("query");
    // clang-format off
    QTest::newRow("host:port/path?q") << B("http://host:8080/path?q=1") << B("host:8080") << B("/path") << B("q=1");
    QTest::newRow("no path") << B("http://host") << B("host") << B("/") << B("");
    QTest::newRow("query without path") << B("http://host?x") << B("host") << B("/") << B("x");
    QTest::newRow("https upper-case scheme") << B("HTTPS://h.example/a/b/") << B("h.example") << B("/a/b/") << B("");
    QTest::newRow("IPv6 literal") << B("http://[::1]:81/x") << B("[::1]:81") << B("/x") << B("");
    QTest::newRow("encoded path kept raw") << B("http://h/%2e%2e/x?a=%20") << B("h") << B("/%2e%2e/x") << B("a=%20");
    // clang-format on
}

void TestHttp1Parser::absoluteForm() {
    QFETCH(QByteArray, target);
    auto r = parse("GET " + target + " HTTP/1.1\r\nHost: other:1\r\n\r\n");
    QCOMPARE(r.code, kOk);
    QCOMPARE(qb(r.head->target), target);
    QTEST(qb(r.head->authority), "authority");
    QTEST(qb(r.head->host), "authority"); // the authority wins over Host (RFC 9112 §3.2.2)
    QTEST(qb(r.head->rawPath), "rawPath");
    QTEST(qb(r.head->query), "query");
    QCOMPARE(field(*r.head, "host"), QByteArray("other:1")); // the field itself is kept
}

void TestHttp1Parser::headerFieldsKept() {
    auto r = parse("GET / HTTP/1.1\r\nHost: a\r\nAccept: */*\r\nX-Dup: 1\r\nx-dup:  2 \r\n\r\n");
    QCOMPARE(r.code, kOk);
    const RequestHead& h = *r.head;
    QCOMPARE(h.headerCount, std::size_t(4));
    QCOMPARE(qb(h.headers[1].name), QByteArray("Accept"));
    QCOMPARE(qb(h.headers[1].value), QByteArray("*/*"));
    QCOMPARE(qb(h.headers[2].value), QByteArray("1"));
    QCOMPARE(qb(h.headers[3].name), QByteArray("x-dup"));
    QCOMPARE(qb(h.headers[3].value), QByteArray("2"));
}

void TestHttp1Parser::pipelined() {
    const QByteArray r1 = "GET /one HTTP/1.1\r\nHost: a\r\n\r\n";
    const QByteArray r2 = "POST /two HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello";
    const QByteArray r3 = "POST /three HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                          "3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nT: v\r\n\r\n";
    const QByteArray r4 = "GET /four?q HTTP/1.1\nHost: a\n\n";
    const QByteArray wire = r1 + r2 + r3 + r4;

    std::string_view rest = sv(wire);
    auto head = std::make_unique<RequestHead>();
    std::size_t used = 0;
    ParseError e;
    QCOMPARE(parseHead(rest, {}, *head, used, e), ParseStatus::Complete);
    QCOMPARE(used, std::size_t(r1.size()));
    QCOMPARE(qb(head->rawPath), QByteArray("/one"));
    rest.remove_prefix(used);

    QCOMPARE(parseHead(rest, {}, *head, used, e), ParseStatus::Complete);
    QCOMPARE(head->contentLength, std::uint64_t(5));
    QCOMPARE(used + 5, std::size_t(r2.size()));
    QCOMPARE(qb(rest.substr(used, 5)), QByteArray("hello"));
    rest.remove_prefix(used + 5);

    QCOMPARE(parseHead(rest, {}, *head, used, e), ParseStatus::Complete);
    QCOMPARE(qb(head->rawPath), QByteArray("/three"));
    QCOMPARE(head->framing, RequestHead::Framing::Chunked);
    rest.remove_prefix(used);
    ChunkedDecoder d;
    d.reset(1000);
    std::string body;
    std::size_t bodyUsed = 0;
    QCOMPARE(d.decode(rest, body, bodyUsed, e), ChunkedDecoder::Status::Done);
    QCOMPARE(body, std::string("abcde"));
    QCOMPARE(d.trailers().size(), std::size_t(1));
    QCOMPARE(used + bodyUsed, std::size_t(r3.size()));
    rest.remove_prefix(bodyUsed);

    QCOMPARE(parseHead(rest, {}, *head, used, e), ParseStatus::Complete);
    QCOMPARE(qb(head->rawPath), QByteArray("/four"));
    QCOMPARE(qb(head->query), QByteArray("q"));
    QCOMPARE(used, rest.size());

    QCOMPARE(serveAll(wire),
             QStringList({"GET /one ", "POST /two hello", "POST /three abcde", "GET /four?q "}));
}

void TestHttp1Parser::splitAtEveryByte_data() {
    QTest::addColumn<QByteArray>("input");
    QTest::newRow("GET") << B("GET /index.html?x=1 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n");
    QTest::newRow("bare LF") << B("GET / HTTP/1.1\nHost: a\nX: y\n\n");
    QTest::newRow("leading CRLF") << B("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n");
    QTest::newRow("POST with fields") << B("POST /api HTTP/1.1\r\nHost: a:80\r\nContent-Length: 11\r\n"
                                           "Connection: keep-alive\r\nExpect: 100-continue\r\n\r\n");
    QTest::newRow("absolute-form 1.0") << B("GET http://h:1/p?q HTTP/1.0\r\n\r\n");
}

void TestHttp1Parser::splitAtEveryByte() {
    QFETCH(QByteArray, input);
    auto full = parse(input);
    QCOMPARE(full.code, kOk);
    QCOMPARE(full.consumed, std::size_t(input.size()));
    for (qsizetype k = 0; k < input.size(); ++k) {
        auto r = parse(input.left(k));
        if (r.code != kIncomplete) qWarning() << "prefix" << k << input.left(k);
        QCOMPARE(r.code, kIncomplete);
    }
    // Trailing bytes of a next request change nothing.
    auto more = parse(input + "GET / HT");
    QCOMPARE(more.code, kOk);
    QCOMPARE(more.consumed, full.consumed);
    QCOMPARE(qb(more.head->target), qb(full.head->target));
}

// ---- chunked -----------------------------------------------------------------------------------

void TestHttp1Parser::chunked_data() {
    QTest::addColumn<QByteArray>("wire");
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<QByteArray>("trailers"); // "name=value;" per trailer
    // clang-format off
    QTest::newRow("one chunk") << B("5\r\nhello\r\n0\r\n\r\n") << B("hello") << B("");
    QTest::newRow("empty body") << B("0\r\n\r\n") << B("") << B("");
    QTest::newRow("several chunks") << B("3\r\nabc\r\n1\r\nd\r\n0\r\n\r\n") << B("abcd") << B("");
    QTest::newRow("hex sizes") << B("a\r\n0123456789\r\nA\r\nABCDEFGHIJ\r\n0\r\n\r\n") << B("0123456789ABCDEFGHIJ") << B("");
    QTest::newRow("leading zeros") << B("0005\r\nhello\r\n000\r\n\r\n") << B("hello") << B("");
    QTest::newRow("CRLF inside data") << B("4\r\n\r\n\r\n\r\n0\r\n\r\n") << B("\r\n\r\n") << B("");
    QTest::newRow("binary data") << B("3\r\n\0\xff\n\r\n0\r\n\r\n") << B("\0\xff\n") << B("");
    QTest::newRow("ext name") << B("5;foo\r\nhello\r\n0\r\n\r\n") << B("hello") << B("");
    QTest::newRow("ext name=value") << B("5;foo=bar\r\nhello\r\n0;last=1\r\n\r\n") << B("hello") << B("");
    QTest::newRow("ext several") << B("5;a;b=c;d=\"e f\"\r\nhello\r\n0\r\n\r\n") << B("hello") << B("");
    QTest::newRow("ext BWS") << B("5 ;\ta = b ; c\r\nhello\r\n0\r\n\r\n") << B("hello") << B("");
    QTest::newRow("ext quoted escapes") << B("5;q=\"a\\\"b;c\\\\\"\r\nhello\r\n0\r\n\r\n") << B("hello") << B("");
    QTest::newRow("ext quoted then ws") << B("5;q=\"x\" ;r\r\nhello\r\n0\r\n\r\n") << B("hello") << B("");
    QTest::newRow("trailers") << B("5\r\nhello\r\n0\r\nX-Sum: abc\r\nY:  2 \r\n\r\n") << B("hello") << B("X-Sum=abc;Y=2;");
    QTest::newRow("forbidden trailer kept") << B("0\r\nContent-Length: 5\r\n\r\n") << B("") << B("Content-Length=5;");
    QTest::newRow("empty trailer value") << B("0\r\nX:\r\n\r\n") << B("") << B("X=;");
    // clang-format on
}

void TestHttp1Parser::chunked() {
    QFETCH(QByteArray, wire);
    QFETCH(QByteArray, body);
    QFETCH(QByteArray, trailers);
    auto flat = [](const BodyResult& r) {
        QByteArray s;
        for (const auto& [n, v] : r.trailers)
            s += n + '=' + v + ';';
        return s;
    };
    auto whole = decodeAll(wire);
    QCOMPARE(whole.code, kOk);
    QCOMPARE(qb(whole.body), body);
    QCOMPARE(whole.consumed, std::size_t(wire.size()));
    QCOMPARE(flat(whole), trailers);

    auto bytes = decodeBytewise(wire);
    QCOMPARE(bytes.code, kOk);
    QCOMPARE(qb(bytes.body), body);
    QCOMPARE(bytes.consumed, std::size_t(wire.size()));
    QCOMPARE(flat(bytes), trailers);

    // Every prefix is NeedMore and never an error.
    for (qsizetype k = 0; k < wire.size(); ++k)
        QCOMPARE(decodeAll(wire.left(k)).code, kIncomplete);
}

void TestHttp1Parser::chunkedErrors_data() {
    QTest::addColumn<QByteArray>("wire");
    QTest::addColumn<int>("status");
    // clang-format off
    QTest::newRow("SMG-01 bare LF after size") << B("5\nhello\r\n0\r\n\r\n") << 400;
    QTest::newRow("SMG-01 bare LF in chunk-ext") << B("5;x\nhello\r\n0\r\n\r\n") << 400;
    QTest::newRow("bare LF in ext value") << B("5;x=y\nhello\r\n0\r\n\r\n") << 400;
    QTest::newRow("bare LF after quoted ext") << B("5;x=\"y\"\nhello\r\n0\r\n\r\n") << 400;
    QTest::newRow("bare LF in last-chunk line") << B("5\r\nhello\r\n0\n\r\n") << 400;
    QTest::newRow("bare LF after data") << B("5\r\nhello\n0\r\n\r\n") << 400;
    QTest::newRow("bare LF ends trailer section") << B("5\r\nhello\r\n0\r\n\n") << 400;
    QTest::newRow("bare LF ends trailer line") << B("0\r\nX: 1\n\r\n") << 400;
    QTest::newRow("CR without LF after size") << B("5\rhello\r\n0\r\n\r\n") << 400;
    QTest::newRow("data longer than size") << B("5\r\nhelloX\r\n0\r\n\r\n") << 400;
    QTest::newRow("no size") << B("\r\nhello\r\n") << 400;
    QTest::newRow("non-hex size") << B("g\r\n") << 400;
    QTest::newRow("negative size") << B("-5\r\nhello\r\n") << 400;
    QTest::newRow("0x prefix") << B("0x5\r\nhello\r\n") << 400;
    QTest::newRow("size overflow 17 digits") << B("10000000000000000\r\n") << 400;
    QTest::newRow("size overflow long") << B("fffffffffffffffff\r\n") << 400;
    QTest::newRow("size with leading space") << B(" 5\r\nhello\r\n") << 400;
    QTest::newRow("whitespace before CRLF") << B("5 \r\nhello\r\n0\r\n\r\n") << 400;
    QTest::newRow("whitespace after ext name") << B("5;a \r\nhello\r\n0\r\n\r\n") << 400;
    QTest::newRow("empty ext name") << B("5;\r\nhello\r\n") << 400;
    QTest::newRow("ext =value without name") << B("5;=v\r\nhello\r\n") << 400;
    QTest::newRow("ext empty value") << B("5;a=\r\nhello\r\n") << 400;
    QTest::newRow("ext invalid char") << B("5;a(b)\r\nhello\r\n") << 400;
    QTest::newRow("ext garbage after size") << B("5x\r\nhello\r\n") << 400;
    QTest::newRow("ext unterminated quote") << B("5;a=\"b\r\nhello\r\n") << 400;
    QTest::newRow("ext NUL in quote") << B("5;a=\"\0\"\r\nhello\r\n") << 400;
    QTest::newRow("ext chars after quote") << B("5;a=\"b\"c\r\nhello\r\n") << 400;
    QTest::newRow("trailer obs-fold") << B("0\r\nX: 1\r\n 2\r\n\r\n") << 400;
    QTest::newRow("trailer space before colon") << B("0\r\nX : 1\r\n\r\n") << 400;
    QTest::newRow("trailer NUL") << B("0\r\nX: a\0b\r\n\r\n") << 400;
    QTest::newRow("trailer no colon") << B("0\r\nX\r\n\r\n") << 400;
    QTest::newRow("trailer bare CR") << B("0\r\nX: a\rb\r\n\r\n") << 400;
    // clang-format on
    QTest::newRow("ext too long") << "5;a=" + repeat('b', 5000) + "\r\nhello\r\n0\r\n\r\n" << 400;
    QTest::newRow("too many size digits") << repeat('0', 65) + "5\r\nhello\r\n0\r\n\r\n" << 400;
    QByteArray many = "0\r\n";
    for (int i = 0; i < 33; ++i)
        many += "T: 1\r\n";
    QTest::newRow("33 trailers") << many + "\r\n" << 431;
    QTest::newRow("trailer section too large") << "0\r\nT: " + repeat('v', 20000) + "\r\n\r\n" << 431;
    QTest::newRow("trailer section too large, incomplete") << "0\r\nT: " + repeat('v', 20000) << 431;
}

void TestHttp1Parser::chunkedErrors() {
    QFETCH(QByteArray, wire);
    QFETCH(int, status);
    QCOMPARE(decodeAll(wire).code, status);
    QCOMPARE(decodeBytewise(wire).code, status);
}

void TestHttp1Parser::chunkedBodyLimit() {
    const QByteArray ten = "a\r\n0123456789\r\n";
    // maxBody 20: two chunks of 10 fit exactly, one more byte is 413, announced at its size line.
    QCOMPARE(decodeAll(ten + ten + "0\r\n\r\n", 20).code, kOk);
    QCOMPARE(decodeAll(ten + ten + "1\r\nx\r\n0\r\n\r\n", 20).code, 413);
    QCOMPARE(decodeAll(ten + ten + "1\r\n", 20).code, 413); // before any of its data arrives
    QCOMPARE(decodeBytewise(ten + ten + "1\r\nx\r\n0\r\n\r\n", 20).code, 413);
    QCOMPARE(decodeAll("15\r\n", 20).code, 413); // 0x15 = 21
    QCOMPARE(decodeAll("14\r\n", 20).code, kIncomplete);
    QCOMPARE(decodeAll("ffffffffffffffff\r\n", 20).code, 413); // largest size that does not overflow
    // Trailer limit both sides: the field lines ("T: v..\r\n") may total exactly maxTrailerBytes.
    QByteArray t = "0\r\nT: " + repeat('v', 10 - 5) + "\r\n\r\n"; // field line is 10 bytes
    QCOMPARE(decodeAll(t, 20, 10).code, kOk);
    QCOMPARE(decodeBytewise(t, 20, 10).code, kOk);
    QCOMPARE(decodeAll(t, 20, 9).code, 431);
    QCOMPARE(decodeBytewise(t, 20, 9).code, 431);
}

void TestHttp1Parser::chunkedTrailerWaitsForWholeSection() {
    const QByteArray wire = "5\r\nhello\r\n0\r\nX-A: 1\r\nX-B: 2\r\n";
    ChunkedDecoder d;
    d.reset(100);
    std::string body;
    std::size_t used = 0;
    ParseError e;
    QCOMPARE(d.decode(sv(wire), body, used, e), ChunkedDecoder::Status::NeedMore);
    QCOMPARE(used, std::size_t(wire.indexOf("X-A"))); // stops at the start of the trailer section
    QCOMPARE(body, std::string("hello"));
    QByteArray rest = wire.mid(qsizetype(used)) + "\r\nNEXT";
    QCOMPARE(d.decode(sv(rest), body, used, e), ChunkedDecoder::Status::Done);
    QCOMPARE(used, std::size_t(rest.indexOf("NEXT")));
    QCOMPARE(d.trailers().size(), std::size_t(2));
    QCOMPARE(qb(d.trailers()[1].name), QByteArray("X-B"));
    // The views point into the buffer of the call that returned Done.
    QVERIFY(d.trailers()[0].name.data() >= rest.constData() &&
            d.trailers()[0].name.data() < rest.constData() + rest.size());
    QCOMPARE(body, std::string("hello"));
}

void TestHttp1Parser::chunkedStopsAtMessageEnd() {
    const QByteArray msg = "3\r\nabc\r\n0\r\n\r\n";
    auto r = decodeAll(msg + "GET / HTTP/1.1\r\n");
    QCOMPARE(r.code, kOk);
    QCOMPARE(r.consumed, std::size_t(msg.size()));
    QCOMPARE(r.body, std::string("abc"));
}

void TestHttp1Parser::chunkedAfterDoneAndError() {
    ChunkedDecoder d;
    d.reset(100);
    std::string body;
    std::size_t used = 0;
    ParseError e;
    QCOMPARE(d.decode("0\r\n\r\n", body, used, e), ChunkedDecoder::Status::Done);
    QCOMPARE(d.decode("5\r\nhello", body, used, e), ChunkedDecoder::Status::Done);
    QCOMPARE(used, std::size_t(0));
    d.reset(100);
    QCOMPARE(d.decode("x", body, used, e), ChunkedDecoder::Status::Error);
    QCOMPARE(d.decode("0\r\n\r\n", body, used, e), ChunkedDecoder::Status::Error); // stays failed
    d.reset(100);
    QCOMPARE(d.decode("0\r\n\r\n", body, used, e), ChunkedDecoder::Status::Done); // reset revives it
    QVERIFY(d.trailers().empty());
}

// ---- smuggling cases from /work/shared/cases (SMG-01, SMG-03, SMG-05) --------------------------

void TestHttp1Parser::smuggling_data() {
    QTest::addColumn<QByteArray>("wire");
    QTest::addColumn<QStringList>("served");
    // clang-format off
    QTest::newRow("SMG-01 bare LF after chunk size")
        << B("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n")
        << QStringList{"ERR 400"};
    QTest::newRow("SMG-01 bare LF in chunk-ext")
        << B("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;x\nhello\r\n0\r\n\r\n")
        << QStringList{"ERR 400"};
    QTest::newRow("SMG-03 obs-fold hiding Content-Length")
        << B("POST / HTTP/1.1\r\nHost: t\r\n Content-Length: 35\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n")
        << QStringList{"ERR 400"};
    QTest::newRow("SMG-05 Content-Length +3")
        << B("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: +3\r\n\r\nabc")
        << QStringList{"ERR 400"};
    QTest::newRow("SMG-05 duplicate differing Content-Length")
        << B("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 0\r\n\r\nhello")
        << QStringList{"ERR 400"};
    QTest::newRow("SMG-05 Content-Length 5, 5 accepted as 5")
        << B("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5, 5\r\n\r\nhello")
        << QStringList{"POST /echo hello"};
    QTest::newRow("SMG-05 TE not ending in chunked")
        << B("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n")
        << QStringList{"ERR 400"};
    QTest::newRow("SMG-05 CL + TE")
        << B("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n")
        << QStringList{"ERR 400"};
    QTest::newRow("obs-fold after a valid request")
        << B("GET /a HTTP/1.1\r\nHost: t\r\n\r\nPOST / HTTP/1.1\r\nHost: t\r\n Content-Length: 35\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n")
        << QStringList{"GET /a ", "ERR 400"};
    QTest::newRow("chunked body then honest request")
        << B("POST /e HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /next HTTP/1.1\r\nHost: t\r\n\r\n")
        << QStringList{"POST /e abc", "GET /next "};
    // clang-format on
}

void TestHttp1Parser::smuggling() {
    QFETCH(QByteArray, wire);
    QFETCH(QStringList, served);
    const QStringList got = serveAll(wire);
    QCOMPARE(got, served);
    for (const QString& s : got)
        QVERIFY2(!s.contains("/smuggled"), qPrintable(s));
}

// ---- allocation --------------------------------------------------------------------------------

void TestHttp1Parser::noAllocation() {
    const QByteArray head = "POST http://h:1/a/b?c=d HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                            "Connection: keep-alive, Upgrade\r\nUpgrade: x\r\nExpect: 100-continue\r\n"
                            "X-Many: 1, 2, 3\r\n\r\n";
    const QByteArray bad = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 6\r\n\r\n";
    const QByteArray body = "5;a=\"b\"\r\nhello\r\n3\r\nabc\r\n0\r\nT: 1\r\nU: 2\r\n\r\n";
    auto h = std::make_unique<RequestHead>();
    ChunkedDecoder d;
    std::string out;
    out.reserve(64);
    std::size_t used = 0;
    ParseError e;

    gAllocs = 0;
    gCountAllocs = true;
    auto s1 = parseHead(sv(head), {}, *h, used, e);
    auto s2 = parseHead(sv(bad), {}, *h, used, e);
    auto s3 = parseHead(sv(head.left(40)), {}, *h, used, e);
    d.reset(1000);
    auto s4 = d.decode(sv(body), out, used, e);
    // Byte by byte with a fixed buffer for the unconsumed rest, so that NeedMore paths count too.
    d.reset(1000);
    out.clear();
    char pending[128];
    std::size_t pendingLen = 0;
    auto s5 = ChunkedDecoder::Status::NeedMore;
    for (char c : body) {
        pending[pendingLen++] = c;
        s5 = d.decode(std::string_view(pending, pendingLen), out, used, e);
        std::memmove(pending, pending + used, pendingLen - used);
        pendingLen -= used;
    }
    gCountAllocs = false;

    QCOMPARE(s1, ParseStatus::Complete);
    QCOMPARE(s2, ParseStatus::Error);
    QCOMPARE(s3, ParseStatus::Incomplete);
    QCOMPARE(s4, ChunkedDecoder::Status::Done);
    QCOMPARE(s5, ChunkedDecoder::Status::Done);
    QCOMPARE(out, std::string("helloabc"));
    QCOMPARE(gAllocs.load(), 0L);
}

// ---- properties --------------------------------------------------------------------------------

void TestHttp1Parser::badByteAtEveryPosition_data() {
    // Values and targets are checked 8 bytes at a time; a bad byte must be found in every lane,
    // and bytes that merely look suspicious to the word test (HTAB, obs-text) must still pass.
    QTest::addColumn<char>("byte");
    QTest::addColumn<int>("valueCode");
    QTest::addColumn<int>("targetCode");
    QTest::newRow("NUL") << '\0' << 400 << 400;
    QTest::newRow("0x01") << '\x01' << 400 << 400;
    QTest::newRow("0x1f") << '\x1f' << 400 << 400;
    QTest::newRow("CR") << '\r' << 400 << 400;
    QTest::newRow("DEL") << '\x7f' << 400 << 400;
    QTest::newRow("HTAB") << '\t' << kOk << 400;
    QTest::newRow("#") << '#' << kOk << 400;
    QTest::newRow("SP") << ' ' << kOk << 400; // in the target it splits the line: bad version
    QTest::newRow("0x80") << '\x80' << kOk << kOk;
    QTest::newRow("0xff") << '\xff' << kOk << kOk;
    QTest::newRow("~") << '~' << kOk << kOk;
    QTest::newRow("!") << '!' << kOk << kOk;
}

void TestHttp1Parser::badByteAtEveryPosition() {
    QFETCH(char, byte);
    QFETCH(int, valueCode);
    QFETCH(int, targetCode);
    for (int len = 1; len <= 24; ++len) {
        for (int at = 0; at < len; ++at) {
            QByteArray v = repeat('v', len);
            v[at] = byte;
            bool edgeWs = (byte == ' ' || byte == '\t') && (at == 0 || at == len - 1); // trimmed as OWS
            auto r = parse("GET / HTTP/1.1\r\nHost: a\r\nX: " + v + "\r\n\r\n");
            QCOMPARE(r.code, valueCode);
            if (r.code == kOk) QCOMPARE(field(*r.head, "x").size(), edgeWs ? len - 1 : len);
            QByteArray t = "/" + repeat('t', len);
            t[at + 1] = byte;
            QCOMPARE(parse("GET " + t + " HTTP/1.1\r\nHost: a\r\n\r\n").code, targetCode);
        }
    }
}

void TestHttp1Parser::mutationProperties() {
    // Deterministic mutations of valid requests: whatever the parser says must be self-consistent.
    const QByteArray seeds[] = {
        "GET /a?b HTTP/1.1\r\nHost: t\r\nX: y\r\n\r\n",
        "POST /e HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc",
        "POST /e HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3;a=\"b\"\r\nabc\r\n0\r\nT: "
        "1\r\n\r\n",
        "GET http://h:1/p HTTP/1.0\nConnection: keep-alive\n\n",
    };
    const char alphabet[] = "\r\n \t:;=\"\\0aZ9-,\x7f\xff";
    QRandomGenerator rng(20261130);
    int completes = 0, errors = 0;
    for (int iter = 0; iter < 4000; ++iter) {
        QByteArray in = seeds[iter % 4];
        int edits = 1 + int(rng.bounded(3));
        for (int k = 0; k < edits && !in.isEmpty(); ++k) {
            qsizetype at = qsizetype(rng.bounded(quint32(in.size())));
            char c = alphabet[rng.bounded(quint32(sizeof alphabet - 1))];
            switch (rng.bounded(3)) {
            case 0:
                in[at] = c;
                break;
            case 1:
                in.insert(at, c);
                break;
            default:
                in.remove(at, 1);
                break;
            }
        }
        auto r = parse(in);
        if (r.code != kOk) {
            errors += r.code > 0;
            continue;
        }
        ++completes;
        QVERIFY(r.consumed <= std::size_t(in.size()));
        const char* lo = in.constData();
        const char* hi = lo + in.size();
        auto inside = [&](std::string_view v) {
            return v.empty() || (v.data() >= lo && v.data() + v.size() <= hi);
        };
        QVERIFY(inside(r.head->methodToken) && inside(r.head->target) && inside(r.head->query));
        for (std::size_t i = 0; i < r.head->headerCount; ++i)
            QVERIFY(inside(r.head->headers[i].name) && inside(r.head->headers[i].value));
        for (qsizetype k = 0; k < qsizetype(r.consumed); ++k)
            QCOMPARE(parse(in.left(k)).code, kIncomplete);
        if (r.head->framing == RequestHead::Framing::Chunked) {
            QByteArray body = in.mid(qsizetype(r.consumed));
            auto a = decodeAll(body);
            auto b = decodeBytewise(body);
            QCOMPARE(a.code, b.code);
            if (a.code != kIncomplete) QCOMPARE(a.consumed, b.consumed);
            QCOMPARE(a.body, b.body);
            QCOMPARE(a.trailers, b.trailers);
        }
    }
    qInfo("mutations: %d complete, %d rejected, rest incomplete", completes, errors);
    QVERIFY(completes > 100 && errors > 100);
}

// A partial request line is judged as far as it goes: bytes that cannot start a method are refused
// at once (a TLS ClientHello on the cleartext port gets 400 now, not 408 after header_timeout).
void TestHttp1Parser::earlyRejectOfNonHttp_data() {
    QTest::addColumn<QByteArray>("partial");
    QTest::addColumn<bool>("rejected");
    QTest::newRow("TLS ClientHello start") << QByteArray("\x16\x03\x01\x02\x00\x01", 6) << true;
    QTest::newRow("binary NUL") << QByteArray("\0\0", 2) << true;
    QTest::newRow("G@T") << QByteArray("G@T") << true;
    QTest::newRow("bare CR then junk") << QByteArray("\r\x01") << true;
    QTest::newRow("GE (could be GET)") << QByteArray("GE") << false;
    QTest::newRow("GET /pa") << QByteArray("GET /pa") << false;
    QTest::newRow("lone CR (an empty line's start)") << QByteArray("\r") << false;
    QTest::newRow("custom method token") << QByteArray("M-SEARCH") << false;
}

void TestHttp1Parser::earlyRejectOfNonHttp() {
    QFETCH(QByteArray, partial);
    QFETCH(bool, rejected);
    portico::http1::RequestHead head;
    portico::http1::ParseError err;
    std::size_t consumed = 0;
    auto st = portico::http1::parseHead(std::string_view(partial.constData(), partial.size()), {}, head,
                                        consumed, err);
    QCOMPARE(st == portico::http1::ParseStatus::Error, rejected);
    if (rejected)
        QCOMPARE(err.status, 400);
    else
        QCOMPARE(st, portico::http1::ParseStatus::Incomplete);
}

QTEST_APPLESS_MAIN(TestHttp1Parser)
#include "tst_http1_parser.moc"
