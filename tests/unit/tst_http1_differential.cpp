// Differential test: a corpus of valid and hostile requests through our parser and Boost.Beast's;
// every disagreement must be a documented, RFC-backed choice, and every documented one must still differ.
#include <portico/http1/parser.h>

#include <QtTest>

#include <boost/beast/http.hpp>

#include <string>

using namespace portico::http1;
namespace beast = boost::beast;

namespace {

// One corpus entry. `ours` pins our answer (0 = accepted); `differ` is null when Beast must agree
// with us, else the RFC clause that makes our different answer right.
struct Entry {
    const char* name;
    std::string wire;
    int ours;
    const char* differ = nullptr;
};

// How a parser ended on the first message of an input.
struct Outcome {
    enum Kind { Accept, Reject, Incomplete } kind = Incomplete;
    int status = 0; // ours only
    std::string detail;
    std::string method, target, body;
    std::size_t consumed = 0; // head + body of the first message
};

const char* kindName(Outcome::Kind k) {
    return k == Outcome::Accept ? "accept" : k == Outcome::Reject ? "reject" : "incomplete";
}

ParserLimits limits() { return {}; } // the defaults: 8 KiB line, 16 KiB head, 100 fields, 10 MiB body

Outcome runOurs(std::string_view wire) {
    Outcome o;
    auto head = std::make_unique<RequestHead>();
    std::size_t used = 0;
    ParseError e;
    auto st = parseHead(wire, limits(), *head, used, e);
    if (st == ParseStatus::Incomplete) return o;
    if (st == ParseStatus::Error) {
        o.kind = Outcome::Reject;
        o.status = e.status;
        o.detail = e.reason;
        return o;
    }
    o.method = head->methodToken;
    o.target = head->target;
    std::string_view rest = wire.substr(used);
    if (head->framing == RequestHead::Framing::ContentLength) {
        if (rest.size() < head->contentLength) return o;
        o.body = rest.substr(0, head->contentLength);
        used += head->contentLength;
    } else if (head->framing == RequestHead::Framing::Chunked) {
        ChunkedDecoder d;
        d.reset(limits().maxBodyBytes);
        std::size_t bodyUsed = 0;
        auto bst = d.decode(rest, o.body, bodyUsed, e);
        if (bst == ChunkedDecoder::Status::NeedMore) return o;
        if (bst == ChunkedDecoder::Status::Error) {
            o.kind = Outcome::Reject;
            o.status = e.status;
            o.detail = e.reason;
            return o;
        }
        used += bodyUsed;
    }
    o.kind = Outcome::Accept;
    o.consumed = used;
    return o;
}

Outcome runBeast(std::string_view wire) {
    Outcome o;
    beast::http::request_parser<beast::http::string_body> p;
    p.eager(true);
    p.header_limit(static_cast<std::uint32_t>(limits().maxHeaderBytes));
    p.body_limit(limits().maxBodyBytes);
    beast::error_code ec;
    std::size_t used = 0;
    while (!p.is_done()) {
        std::size_t n = p.put(boost::asio::const_buffer(wire.data() + used, wire.size() - used), ec);
        used += n;
        if (ec == beast::http::error::need_more) return o;
        if (ec) {
            o.kind = Outcome::Reject;
            o.detail = ec.message();
            return o;
        }
        if (n == 0) return o; // no progress and no error: it wants more input
    }
    const auto& m = p.get();
    o.kind = Outcome::Accept;
    o.method = std::string(m.method_string());
    o.target = std::string(m.target());
    o.body = m.body();
    o.consumed = used;
    return o;
}

std::string rep(char c, std::size_t n) { return std::string(n, c); }

std::string manyFields(int n) {
    std::string s;
    for (int i = 0; i < n; ++i)
        s += "X-F" + std::to_string(i) + ": v\r\n";
    return s;
}

// The corpus: valid traffic, SMG-01/03/05 and PTH-05 from /work/shared/cases, and one entry per
// rejection rule of parser.h.
std::vector<Entry> corpus() {
    using namespace std::string_literals;
    const std::string G = "GET / HTTP/1.1\r\nHost: t\r\n";
    const std::string P = "POST /echo HTTP/1.1\r\nHost: t\r\n";
    const std::string C = P + "Transfer-Encoding: chunked\r\n\r\n";
    // clang-format off
    return {
        // ---- valid ----
        {"simple GET", G + "\r\n", 0},
        {"GET with query", "GET /a/b?x=1&y=2 HTTP/1.1\r\nHost: t\r\n\r\n", 0},
        {"POST Content-Length", P + "Content-Length: 5\r\n\r\nhello", 0},
        {"POST CL 0", P + "Content-Length: 0\r\n\r\n", 0},
        {"CL leading zeros", P + "Content-Length: 005\r\n\r\nhello", 0},
        {"chunked", C + "5\r\nhello\r\n0\r\n\r\n", 0},
        {"chunked several, hex", C + "a\r\n0123456789\r\nA\r\nabcdefghij\r\n0\r\n\r\n", 0},
        {"chunked leading zeros", C + "0005\r\nhello\r\n000\r\n\r\n", 0},
        {"chunked ext", C + "5;foo=bar;baz\r\nhello\r\n0;x=1\r\n\r\n", 0},
        {"chunked ext quoted", C + "5;q=\"a b\\\"c\"\r\nhello\r\n0\r\n\r\n", 0},
        {"chunked ext BWS", C + "5 ; a = b\r\nhello\r\n0\r\n\r\n", 0},
        {"chunked trailers", C + "5\r\nhello\r\n0\r\nX-Sum: 1\r\nY: 2\r\n\r\n", 0},
        {"chunked TE mixed case", P + "Transfer-Encoding: Chunked\r\n\r\n0\r\n\r\n", 0},
        {"HTTP/1.0 no Host", "GET /old HTTP/1.0\r\n\r\n", 0},
        {"HTTP/1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 0},
        {"extension method", "PURGE /c HTTP/1.1\r\nHost: t\r\n\r\n", 0},
        {"OPTIONS *", "OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n", 0},
        {"absolute-form", "GET http://h:8080/p?q=1 HTTP/1.1\r\nHost: t\r\n\r\n", 0},
        {"CONNECT authority-form", "CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n", 0},
        {"obs-text in value", G + "X: caf\xc3\xa9\r\n\r\n", 0},
        {"HTAB in value", G + "X: a\tb\r\n\r\n", 0},
        {"empty value", G + "X:\r\n\r\n", 0},
        {"IPv6 Host", "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", 0},
        {"50 fields", G + manyFields(50) + "\r\n", 0},
        {"Expect 100-continue", P + "Expect: 100-continue\r\nContent-Length: 2\r\n\r\nhi", 0},
        {"upgrade websocket", G + "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n", 0},
        {"raw UTF-8 target", "GET /caf\xc3\xa9 HTTP/1.1\r\nHost: t\r\n\r\n", 0},
        {"pipelined: first of two", G + "\r\n" + G + "\r\n", 0},
        {"pipelined: chunked then GET", C + "3\r\nabc\r\n0\r\n\r\n" + G + "\r\n", 0},
        {"head at 16 KiB limit", G + "X: " + rep('v', 16 * 1024 - 25 - 7) + "\r\n\r\n", 0},
        {"CL at body limit", P + "Content-Length: 10485760\r\n\r\n", -1},

        // ---- cases from /work/shared/cases ----
        {"SMG-01 bare LF after chunk size", C + "5\nhello\r\n0\r\n\r\n", 400},
        {"SMG-01 bare LF in chunk-ext", C + "5;x\nhello\r\n0\r\n\r\n", 400},
        {"SMG-03 obs-fold hiding Content-Length",
         "POST / HTTP/1.1\r\nHost: t\r\n Content-Length: 35\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n", 400,
         "RFC 9112 §5.2: a server MUST reject obs-fold with 400 or replace it by SP (then Host is invalid, "
         "§3.2 → 400). Beast unfolds it into Host, reads no body and would serve /smuggled next"},
        {"SMG-05 Content-Length +3", P + "Content-Length: +3\r\n\r\nabc", 400},
        {"SMG-05 differing duplicate CL", P + "Content-Length: 5\r\nContent-Length: 0\r\n\r\nhello", 400},
        {"SMG-05 CL 5, 5 (RFC 9110 §8.6 allows)", P + "Content-Length: 5, 5\r\n\r\nhello", 0},
        {"SMG-05 CL lines 5 and 5", P + "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 0},
        {"CL list 5, 6", P + "Content-Length: 5, 6\r\n\r\nhello", 400},
        {"SMG-05 TE chunked, gzip", P + "Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", 400,
         "RFC 9112 §6.3 item 4: TE in a request whose final coding is not chunked cannot be framed; the server "
         "MUST respond 400 and close. Beast accepts, reads no body and would parse \"0\" as the next request"},
        {"SMG-05 CL + TE",
         P + "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n", 400},
        {"PTH-05 raw NUL in target", "GET /a.txt\0.png HTTP/1.1\r\nHost: t\r\n\r\n"s, 400},

        // ---- request line ----
        {"HTTP/2.0", "GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505},
        {"HTTP/1.2", "GET / HTTP/1.2\r\nHost: t\r\n\r\n", 505},
        {"HTTP/0.9 version", "GET / HTTP/0.9\r\nHost: t\r\n\r\n", 505},
        {"no version (HTTP/0.9 simple request)", "GET /\r\n\r\n", 400},
        {"lowercase http", "GET / http/1.1\r\nHost: t\r\n\r\n", 400},
        {"double space", "GET  / HTTP/1.1\r\nHost: t\r\n\r\n", 400},
        {"method with (", "GE(T / HTTP/1.1\r\nHost: t\r\n\r\n", 400},
        {"target with CTL", "GET /a\x01z HTTP/1.1\r\nHost: t\r\n\r\n", 400},
        {"target with DEL", "GET /a\x7fz HTTP/1.1\r\nHost: t\r\n\r\n", 400},
        {"fragment in target", "GET /a#f HTTP/1.1\r\nHost: t\r\n\r\n", 400,
         "RFC 9112 §3.2.1: origin-form = absolute-path [\"?\" query]; '#' is not allowed (hops disagree on "
         "stripping it). Beast does not check the target grammar"},
        {"relative target", "GET a/b HTTP/1.1\r\nHost: t\r\n\r\n", 400,
         "RFC 9112 §3.2: the target must be origin-, absolute-, authority- (CONNECT) or asterisk-form "
         "(OPTIONS); Beast does not check the target grammar"},
        {"asterisk for GET", "GET * HTTP/1.1\r\nHost: t\r\n\r\n", 400,
         "RFC 9112 §3.2.4: asterisk-form is only for OPTIONS; Beast does not check the target grammar"},
        {"absolute-form userinfo", "GET http://u@h/ HTTP/1.1\r\nHost: t\r\n\r\n", 400,
         "RFC 9110 §4.2.4: userinfo in an http(s) URI is invalid, a recipient SHOULD treat it as an error; "
         "Beast does not check the target grammar"},
        {"request line above 8 KiB", "GET /" + rep('a', 8 * 1024) + " HTTP/1.1\r\nHost: t\r\n\r\n", 414,
         "RFC 9112 §3: a server receiving a request-target longer than it wishes to parse MUST answer 414; "
         "Beast has no request-line limit (only the 16 KiB header limit)"},
        {"leading CRLF", "\r\n" + G + "\r\n", 0,
         "RFC 9112 §2.2: a server SHOULD ignore at least one empty line before the request-line; Beast "
         "rejects it"},

        // ---- fields ----
        {"bare LF line ends", "GET / HTTP/1.1\nHost: t\n\n", 0,
         "RFC 9112 §2.2: a recipient MAY recognise a single LF as the line terminator of the start-line and "
         "fields; Beast requires CRLF"},
        {"bare CR in field", G + "X: a\rb\r\n\r\n", 400},
        {"whitespace before colon", "GET / HTTP/1.1\r\nHost : t\r\n\r\n", 400},
        {"whitespace before first field", "GET / HTTP/1.1\r\n Host: t\r\n\r\n", 400},
        {"obs-fold", G + "X: a\r\n b\r\n\r\n", 400,
         "RFC 9112 §5.2: a server MUST reject obs-fold (400) or replace it with SP before interpreting; "
         "we reject, Beast unfolds"},
        {"empty field name", G + ": v\r\n\r\n", 400},
        {"NUL in value", G + "X: a\0b\r\n\r\n"s, 400},
        {"DEL in value", G + "X: a\x7f\r\n\r\n", 400},
        {"ESC in value", G + "X: \x1b[0m\r\n\r\n", 400},
        {"missing Host 1.1", "GET / HTTP/1.1\r\n\r\n", 400,
         "RFC 9112 §3.2: a server MUST answer 400 to an HTTP/1.1 request without Host; Beast does not check"},
        {"two Hosts", G + "Host: u\r\n\r\n", 400,
         "RFC 9112 §3.2: a server MUST answer 400 to more than one Host field line; Beast does not check"},
        {"Host with space", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400,
         "RFC 9112 §3.2: a Host with an invalid field value MUST get 400 (uri-host [\":\" port], RFC 3986 "
         "§3.2.2); Beast does not check"},
        {"too many fields", G + manyFields(100) + "\r\n", 431,
         "RFC 6585 §5: 431 when the header fields are too large; our limit is 100 field lines, Beast only "
         "limits bytes"},
        {"head above 16 KiB", G + "X: " + rep('v', 16 * 1024) + "\r\n\r\n", 431},

        // ---- message length ----
        {"CL letters", P + "Content-Length: abc\r\n\r\n", 400},
        {"CL overflow", P + "Content-Length: 18446744073709551616\r\n\r\n", 400},
        {"CL above body limit", P + "Content-Length: 10485761\r\n\r\n", 413},
        {"TE gzip", P + "Transfer-Encoding: gzip\r\n\r\n", 400,
         "RFC 9112 §6.3 item 4: chunked is not the final coding, so the length cannot be determined: 400 and "
         "close; Beast accepts it as a request without body"},
        {"TE gzip, chunked", P + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501,
         "RFC 9112 §6.1: a transfer coding the server does not understand SHOULD get 501; Beast removes "
         "only the chunked framing and hands the still-gzipped body to the application"},
        {"TE chunked, chunked", P + "Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", 400,
         "RFC 9112 §6.1: a sender MUST NOT apply chunked more than once, so the framing is invalid (§6.3 "
         "→ 400). Beast accepts, reads no body and would parse \"0\" as the next request"},
        {"TE in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400,
         "RFC 9112 §6.1: TE in an HTTP/1.0 message MUST be treated as faulty framing; we answer 400 and "
         "close, Beast decodes it as chunked"},
        {"TE in HTTP/1.0 with keep-alive",
         "POST / HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400,
         "RFC 9112 §6.1 as above: faulty framing, never a reusable connection; Beast decodes it as chunked"},
        {"chunk size overflow", C + "10000000000000000\r\n", 400},
        {"chunk size non-hex", C + "g\r\n", 400},
        {"chunk size above body limit", C + "A00001\r\n", 413},
        {"chunk data too long", C + "5\r\nhelloX\r\n0\r\n\r\n", 400},
        {"bare LF after chunk data", C + "5\r\nhello\n0\r\n\r\n", 400},
        {"bare LF ends trailer section", C + "5\r\nhello\r\n0\r\n\n", 400,
         "RFC 9112 §7.1: chunked-body ends with trailer-section CRLF; a hop that takes the bare LF as the "
         "end would frame differently, so we refuse it at once (as for SMG-01). Beast keeps waiting "
         "for a CRLF (incomplete)"},
        {"trailer obs-fold", C + "0\r\nX: 1\r\n 2\r\n\r\n", 400,
         "RFC 9112 §5.2 (obs-fold in a request: reject or replace) applies to the trailer section's field "
         "lines too (§7.1.2); we reject, Beast unfolds"},
        {"whitespace before chunk CRLF", C + "5 \r\nhello\r\n0\r\n\r\n", 400},
        {"empty chunk-ext name", C + "5;\r\nhello\r\n0\r\n\r\n", 400},
        {"chunk ext NUL", C + "5;a=\"\0\"\r\nhello\r\n0\r\n\r\n"s, 400,
         "RFC 9112 §7.1.1 chunk-ext-val = token / quoted-string, and RFC 9110 §5.6.4 qdtext excludes CTLs "
         "such as NUL; Beast does not check quoted-string contents"},
    };
    // clang-format on
}

} // namespace

class TestHttp1Differential : public QObject {
    Q_OBJECT

private slots:
    void corpus_data();
    void corpus();
    void corpusSize();
};

void TestHttp1Differential::corpus_data() {
    QTest::addColumn<int>("index");
    const auto c = ::corpus();
    for (std::size_t i = 0; i < c.size(); ++i)
        QTest::newRow(c[i].name) << int(i);
}

void TestHttp1Differential::corpus() {
    QFETCH(int, index);
    const Entry e = ::corpus()[static_cast<std::size_t>(index)];
    const Outcome ours = runOurs(e.wire);
    const Outcome theirs = runBeast(e.wire);
    auto show = [](const Outcome& o) {
        if (o.kind == Outcome::Accept)
            return QStringLiteral("accept (consumed %1 of input, body %2 bytes)")
                .arg(o.consumed)
                .arg(o.body.size());
        return QStringLiteral("%1 %2(%3)")
            .arg(kindName(o.kind), o.status ? QString::number(o.status) + ' ' : QString(),
                 QString::fromStdString(o.detail));
    };
    const QString desc =
        QStringLiteral("wire %1 bytes; ours=%2; beast=%3").arg(e.wire.size()).arg(show(ours), show(theirs));

    // Our own answer is pinned, so the corpus also guards our behaviour.
    if (e.ours == 0)
        QVERIFY2(ours.kind == Outcome::Accept, qPrintable(desc));
    else if (e.ours == -1)
        QVERIFY2(ours.kind == Outcome::Incomplete, qPrintable(desc));
    else
        QVERIFY2(ours.kind == Outcome::Reject && ours.status == e.ours, qPrintable(desc));

    bool agree = ours.kind == theirs.kind;
    if (agree && ours.kind == Outcome::Accept)
        agree = ours.method == theirs.method && ours.target == theirs.target && ours.body == theirs.body &&
                ours.consumed == theirs.consumed;
    if (!e.differ) {
        QVERIFY2(agree, qPrintable("unexplained disagreement: " + desc));
        if (ours.kind == Outcome::Accept) {
            QCOMPARE(QByteArray::fromStdString(ours.method), QByteArray::fromStdString(theirs.method));
            QCOMPARE(QByteArray::fromStdString(ours.target), QByteArray::fromStdString(theirs.target));
            QCOMPARE(QByteArray::fromStdString(ours.body), QByteArray::fromStdString(theirs.body));
        }
    } else {
        qInfo("%s", qPrintable(desc));
        QVERIFY2(!agree, qPrintable(QStringLiteral("marked as differing but both agree (%1); note was: %2")
                                        .arg(desc, QString::fromUtf8(e.differ))));
    }
}

void TestHttp1Differential::corpusSize() {
    const auto c = ::corpus();
    QVERIFY(c.size() >= 60);
    int differ = 0;
    for (const auto& e : c)
        differ += e.differ ? 1 : 0;
    qInfo("%zu corpus entries, %d documented differences from Beast", c.size(), differ);
}

QTEST_APPLESS_MAIN(TestHttp1Differential)
#include "tst_http1_differential.moc"
