// The HTTP/1.1 response parser (http1/response_parser.h), used by the reverse proxy, the load
// generator and replay: framing by Content-Length, chunked, close; interim 1xx; HEAD/204/304;
// keep-alive; errors; every input also fed one byte at a time. Then differential: thousands of
// generated responses, split at random, against Boost.Beast's parser as the oracle.
#include <portico/http1/response_parser.h>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <QtTest>

#include <random>
#include <string>
#include <vector>

using portico::http1::ResponseHead;
using portico::http1::ResponseParser;
namespace beast = boost::beast;

namespace {

struct Parsed {
    std::vector<int> statuses;
    std::vector<bool> keepAlive;
    bool error = false;
    bool endsAtEof = false; // the last response is close-delimited and still open
    std::size_t leftover = 0;
};

// Feeds `input` in pieces of `step` bytes (0 = all at once) the way a connection does: unconsumed
// bytes stay at the front of the buffer and new ones are appended. `heads` says per response
// whether its request was HEAD.
Parsed feed(const std::string& input, std::size_t step, std::vector<bool> heads = {}) {
    Parsed out;
    ResponseParser p;
    std::string buf;
    std::size_t pos = 0, n = 0;
    bool active = false;
    while (pos < input.size()) {
        const std::size_t take = step ? std::min(step, input.size() - pos) : input.size() - pos;
        buf.append(input, pos, take);
        pos += take;
        for (;;) {
            if (buf.empty()) break;
            if (!active) {
                p.begin(n < heads.size() && heads[n]);
                active = true;
            }
            std::size_t used = 0;
            auto st = p.parse(buf.data(), buf.size(), used);
            buf.erase(0, used);
            if (st == ResponseParser::Status::Error) {
                out.error = true;
                return out;
            }
            if (st == ResponseParser::Status::NeedMore) break;
            out.statuses.push_back(p.status());
            out.keepAlive.push_back(p.keepAlive());
            active = false;
            ++n;
        }
    }
    out.endsAtEof = active && p.completesAtEof();
    out.leftover = buf.size();
    return out;
}

// What Deliver::Events reports: each head, each response's body (the Body pieces joined), and what
// follows a 101.
struct Events {
    struct Head {
        int status;
        std::string reason, fields;
        bool keepAlive;
        ResponseHead::Framing framing;
    };
    std::vector<Head> heads;
    std::vector<std::string> bodies; // one per complete response (and a close-delimited last one)
    bool error = false;
    std::string errorText;
    bool upgraded = false;
    std::string afterUpgrade;
};

Events feedEvents(const std::string& input, std::size_t step, bool headRequest = false) {
    Events out;
    ResponseParser p;
    std::string buf, body;
    std::size_t pos = 0;
    bool active = false;
    while (pos < input.size()) {
        const std::size_t take = step ? std::min(step, input.size() - pos) : input.size() - pos;
        buf.append(input, pos, take);
        pos += take;
        for (;;) {
            if (!active) {
                if (buf.empty()) break;
                p.begin(headRequest, ResponseParser::Deliver::Events);
                active = true;
                body.clear();
            }
            std::size_t used = 0;
            const auto st = p.parse(buf.data(), buf.size(), used);
            if (st == ResponseParser::Status::Head) {
                const auto& h = p.head();
                out.heads.push_back(
                    {h.status, std::string(h.reason), std::string(h.fields), h.keepAlive, h.framing});
                buf.erase(0, used);
                if (h.status == 101) {
                    out.upgraded = true;
                    out.afterUpgrade = buf + input.substr(pos);
                    return out;
                }
                continue;
            }
            if (st == ResponseParser::Status::Body) {
                if (p.body().empty()) {
                    out.error = true;
                    out.errorText = "empty Body event";
                    return out;
                }
                body.append(p.body());
                buf.erase(0, used);
                continue;
            }
            buf.erase(0, used);
            if (st == ResponseParser::Status::Error) {
                out.error = true;
                out.errorText = p.error();
                return out;
            }
            if (st == ResponseParser::Status::NeedMore) break;
            out.bodies.push_back(body);
            active = false;
        }
    }
    if (active && p.completesAtEof()) out.bodies.push_back(body);
    return out;
}

// Beast's verdict on one response (the oracle): fed whole, then end of input.
struct Oracle {
    bool ok = false;
    int status = 0;
    std::string body;
    bool keepAlive = false;
};

Oracle beastParse(const std::string& input, bool headRequest) {
    Oracle o;
    std::size_t at = 0;
    for (int round = 0; round < 4; ++round) { // interim responses first
        beast::http::response_parser<beast::http::string_body> bp;
        bp.eager(true);
        bp.header_limit(64 * 1024);
        bp.body_limit(boost::none);
        if (headRequest) bp.skip(true);
        beast::error_code ec;
        while (at < input.size() && !bp.is_done()) {
            const std::size_t n = bp.put(boost::asio::buffer(input.data() + at, input.size() - at), ec);
            at += n;
            if (ec == beast::http::error::need_more) {
                if (n == 0) break;
                ec = {};
                continue;
            }
            if (ec) return o;
        }
        if (!bp.is_done()) {
            bp.put_eof(ec);
            if (ec || !bp.is_done()) return o;
        }
        const int status = bp.get().result_int();
        if (status >= 100 && status < 200 && status != 101) continue;
        o.ok = true;
        o.status = status;
        o.body = bp.get().body();
        o.keepAlive = bp.keep_alive() && !bp.need_eof();
        return o;
    }
    return o;
}

// A random response as servers send them: any of the framings, extensions, trailers, folded case.
std::string generate(std::mt19937& rng, bool headRequest, std::string& body) {
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    static const int kStatuses[] = {200, 201, 204, 301, 304, 404, 418, 500, 503};
    const int status = kStatuses[pick(9)];
    const bool http10 = pick(6) == 0;
    std::string r = std::string(http10 ? "HTTP/1.0 " : "HTTP/1.1 ") + std::to_string(status) + " ";
    if (pick(4)) r += pick(2) ? "OK" : "Some Reason Here";
    r += "\r\n";
    if (pick(5) == 0) r = "HTTP/1.1 100 Continue\r\n\r\n" + r;
    const int framing = (status == 204 || status == 304) ? 0 : pick(3); // 0 length, 1 chunked, 2 close
    body.clear();
    const int size = pick(4) == 0 ? pick(20000) : pick(300);
    for (int i = 0; i < size; ++i)
        body += static_cast<char>(pick(256));
    if (status == 204 || status == 304 || headRequest) body.clear();
    const int extra = pick(6);
    for (int i = 0; i < extra; ++i)
        r += (pick(2) ? "X-Field-" : "x-other-") + std::to_string(i) + ":" + (pick(2) ? " " : "") + "v" +
             std::to_string(pick(1000)) + (pick(3) ? "" : " \t") + "\r\n";
    if (pick(3) == 0) r += pick(2) ? "Connection: close\r\n" : "connection: Keep-Alive\r\n";
    if (framing == 0 && status != 204 && status != 304) {
        const std::size_t len = headRequest ? static_cast<std::size_t>(pick(500)) : body.size();
        r += (pick(2) ? "Content-Length: " : "content-length:") + std::to_string(len) + "\r\n\r\n";
        if (!headRequest) r += body;
    } else if (framing == 0) {
        r += "\r\n";
    } else if (framing == 1) {
        r += pick(2) ? "Transfer-Encoding: chunked\r\n\r\n" : "transfer-encoding: gzip, CHUNKED\r\n\r\n";
        if (!headRequest) {
            std::size_t at = 0;
            while (at < body.size()) {
                const std::size_t n =
                    std::min<std::size_t>(body.size() - at, 1 + static_cast<std::size_t>(pick(700)));
                char hex[32];
                std::snprintf(hex, sizeof hex, pick(2) ? "%zx" : "%zX", n);
                r += hex;
                if (pick(4) == 0) r += ";ext=1";
                r += "\r\n" + body.substr(at, n) + "\r\n";
                at += n;
            }
            r += pick(2) ? "0\r\n\r\n" : "0\r\nX-Trailer: yes\r\n\r\n";
        }
    } else {
        r += "\r\n";
        if (!headRequest) r += body;
    }
    return r;
}

} // namespace

class TestHttp1ResponseParser : public QObject {
    Q_OBJECT

private slots:
    void framing_data() {
        QTest::addColumn<QByteArray>("input");
        QTest::addColumn<QList<int>>("statuses");
        QTest::addColumn<bool>("endsAtEof");
        QTest::newRow("content-length")
            << QByteArray("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello") << QList<int>{200} << false;
        QTest::newRow("two pipelined") << QByteArray("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                                                     "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                                       << QList<int>{200, 404} << false;
        QTest::newRow("chunked, ext, trailers")
            << QByteArray("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                          "5;name=val\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n"
                          "HTTP/1.1 204 No Content\r\n\r\n")
            << QList<int>{200, 204} << false;
        QTest::newRow("chunked, upper-case hex, no trailers")
            << QByteArray("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n1F\r\n"
                          "0123456789012345678901234567890\r\n0\r\n\r\n")
            << QList<int>{200} << false;
        QTest::newRow("interim 100 then 200")
            << QByteArray("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx")
            << QList<int>{201} << false;
        QTest::newRow("304 and 204 have no body")
            << QByteArray("HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n"
                          "HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n")
            << QList<int>{304, 204} << false;
        QTest::newRow("close-delimited")
            << QByteArray("HTTP/1.1 200 OK\r\n\r\nbody until close") << QList<int>{} << true;
        QTest::newRow("bare LF heads")
            << QByteArray("HTTP/1.1 200 OK\nContent-Length: 1\n\nx") << QList<int>{200} << false;
        QTest::newRow("big body") << QByteArray("HTTP/1.1 200 OK\r\nContent-Length: 70000\r\n\r\n") +
                                         QByteArray(70000, 'b')
                                  << QList<int>{200} << false;
    }
    void framing() {
        QFETCH(QByteArray, input);
        QFETCH(QList<int>, statuses);
        QFETCH(bool, endsAtEof);
        for (std::size_t step : {std::size_t{0}, std::size_t{1}, std::size_t{7}}) {
            auto r = feed(input.toStdString(), step);
            QVERIFY2(!r.error, qPrintable(QStringLiteral("step %1").arg(step)));
            QCOMPARE(QList<int>(r.statuses.begin(), r.statuses.end()), statuses);
            QCOMPARE(r.endsAtEof, endsAtEof);
            QCOMPARE(r.leftover, 0u);
        }
    }

    void headRequestHasNoBody() {
        // The Content-Length of a response to HEAD describes the body a GET would get (RFC 9110 §9.3.2).
        auto r =
            feed("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
                 3, {true, false});
        QVERIFY(!r.error);
        QCOMPARE(r.statuses.size(), 2u);
        QCOMPARE(r.leftover, 0u);
    }

    void keepAlive() {
        auto r = feed("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
                      "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"
                      "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n"
                      "HTTP/1.1 200 OK\r\nConnection: foo, keep-alive\r\nContent-Length: 0\r\n\r\n",
                      0);
        QVERIFY(!r.error);
        QCOMPARE(r.keepAlive, (std::vector<bool>{false, false, true, true}));
    }

    void errors_data() {
        QTest::addColumn<QByteArray>("input");
        QTest::newRow("not http") << QByteArray("SSH-2.0-OpenSSH\r\n\r\n");
        QTest::newRow("http/2 status line") << QByteArray("HTTP/2 200\r\n\r\n");
        QTest::newRow("short status") << QByteArray("HTTP/1.1 20 OK\r\n\r\n");
        QTest::newRow("status 600") << QByteArray("HTTP/1.1 600 Odd\r\n\r\n");
        QTest::newRow("conflicting lengths")
            << QByteArray("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n");
        QTest::newRow("bad length") << QByteArray("HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n");
        QTest::newRow("101") << QByteArray("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n");
        QTest::newRow("bad chunk size")
            << QByteArray("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
        QTest::newRow("chunk without CRLF")
            << QByteArray("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab");
        QTest::newRow("field without colon") << QByteArray("HTTP/1.1 200 OK\r\nNoColon\r\n\r\n");
        QTest::newRow("head over 64 KiB")
            << QByteArray("HTTP/1.1 200 OK\r\nX: ") + QByteArray(70000, 'a') + QByteArray("\r\n\r\n");
    }
    void errors() {
        QFETCH(QByteArray, input);
        QVERIFY(feed(input.toStdString(), 0).error);
        QVERIFY(feed(input.toStdString(), 1).error);
    }

    // Deliver::Events: heads with their fields and reason, interim heads, body pieces that join to
    // the body, for every split of the input.
    void eventsGiveHeadsAndBodies() {
        const std::string input = "HTTP/1.1 100 Continue\r\n\r\n"
                                  "HTTP/1.1 200 Fine\r\nX-A: 1\r\nTransfer-Encoding: chunked\r\n\r\n"
                                  "3\r\nabc\r\n4;x=y\r\ndefg\r\n0\r\nT: 1\r\n\r\n"
                                  "HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno"
                                  "HTTP/1.1 204 No Content\r\n\r\n"
                                  "HTTP/1.0 200 OK\nServer: old\n\nuntil the end";
        for (std::size_t step : {std::size_t{0}, std::size_t{1}, std::size_t{5}}) {
            const auto r = feedEvents(input, step);
            QVERIFY2(!r.error, r.errorText.c_str());
            QCOMPARE(r.heads.size(), 5u);
            QCOMPARE(r.heads[0].status, 100);
            QCOMPARE(r.heads[1].status, 200);
            QCOMPARE(r.heads[1].reason, std::string("Fine"));
            QCOMPARE(r.heads[1].fields, std::string("X-A: 1\r\nTransfer-Encoding: chunked\r\n"));
            QVERIFY(r.heads[1].framing == ResponseHead::Framing::Chunked);
            QVERIFY(r.heads[3].framing == ResponseHead::Framing::None);
            QVERIFY(r.heads[4].framing == ResponseHead::Framing::UntilClose);
            QVERIFY(!r.heads[4].keepAlive);
            QCOMPARE(r.heads[4].fields, std::string("Server: old\n"));
            QCOMPARE(r.bodies, (std::vector<std::string>{"abcdefg", "no", "", "until the end"}));
        }
    }

    // A 101 ends the parser's part: what follows belongs to the new protocol. CountOnly refuses it.
    void upgradeHandsOverTheRest() {
        const std::string input = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                                  "Connection: Upgrade\r\n\r\n\x81\x02hi";
        for (std::size_t step : {std::size_t{0}, std::size_t{1}}) {
            const auto r = feedEvents(input, step);
            QVERIFY(!r.error);
            QVERIFY(r.upgraded);
            QCOMPARE(r.heads.back().status, 101);
            QCOMPARE(r.afterUpgrade, std::string("\x81\x02hi"));
        }
        QVERIFY(feed(input, 0).error);
    }

    void framingEdgeCases() {
        // Transfer-Encoding wins over Content-Length, and the connection is not reused (RFC 9112 §6.3).
        auto r = feedEvents("HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n"
                            "2\r\nok\r\n0\r\n\r\n",
                            0);
        QVERIFY(!r.error);
        QCOMPARE(r.bodies, std::vector<std::string>{"ok"});
        QVERIFY(!r.heads[0].keepAlive);
        // A list of equal Content-Lengths is one (RFC 9110 §8.6); unequal ones are an error.
        r = feedEvents("HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok", 0);
        QVERIFY2(!r.error, r.errorText.c_str());
        QCOMPARE(r.bodies, std::vector<std::string>{"ok"});
        QVERIFY(feedEvents("HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\nok", 0).error);
        QVERIFY(feedEvents("HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551616\r\n\r\n", 0).error);
        // A coding other than chunked last: the body runs to the close (RFC 9112 §6.3 item 4).
        ResponseParser p;
        const std::string chunkedGzip = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nzz";
        p.begin(false, ResponseParser::Deliver::Events);
        std::size_t used = 0;
        QVERIFY(p.parse(chunkedGzip.data(), chunkedGzip.size(), used) == ResponseParser::Status::Head);
        QVERIFY(p.head().framing == ResponseHead::Framing::UntilClose);
        QVERIFY(p.head().otherCodings && !p.head().keepAlive);
        // Chunked last after another coding: chunked framing, the bytes still coded.
        const std::string gzipChunked =
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n";
        p.begin(false, ResponseParser::Deliver::Events);
        QVERIFY(p.parse(gzipChunked.data(), gzipChunked.size(), used) == ResponseParser::Status::Head);
        QVERIFY(p.head().framing == ResponseHead::Framing::Chunked && p.head().otherCodings);
        const std::string plain = "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n";
        p.begin(false, ResponseParser::Deliver::Events);
        QVERIFY(p.parse(plain.data(), plain.size(), used) == ResponseParser::Status::Head);
        QVERIFY(p.head().framing == ResponseHead::Framing::Chunked && !p.head().otherCodings);
        // Chunked framing needs CRLF (a bare LF lets two parsers disagree, CVE-2025-22871).
        QVERIFY(
            feedEvents("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\nok\r\n0\r\n\r\n", 0).error);
        QVERIFY(
            feedEvents("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\n0\r\n\r\n", 0).error);
        // Field lines: a token name right before the colon; no obs-fold; no CR or NUL in a value.
        QVERIFY(feedEvents("HTTP/1.1 200 OK\r\nX-A : 1\r\nContent-Length: 0\r\n\r\n", 0).error);
        QVERIFY(feedEvents("HTTP/1.1 200 OK\r\nX-A: 1\r\n 2\r\nContent-Length: 0\r\n\r\n", 0).error);
        QVERIFY(feedEvents("HTTP/1.1 200 OK\r\nX-A: 1\rSet-Cookie: x\r\nContent-Length: 0\r\n\r\n", 0).error);
        QVERIFY(feedEvents(std::string("HTTP/1.1 200 OK\r\nX-A: a\0b\r\nContent-Length: 0\r\n\r\n", 48), 0)
                    .error);
        QVERIFY(!feedEvents("HTTP/1.1 200 OK\r\nX-A: caf\xc3\xa9\t\r\nContent-Length: 0\r\n\r\n", 0).error);
        // Sixteen hex digits overflow the cap.
        QVERIFY(
            feedEvents("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000\r\n", 0).error);
    }

    // Differential: generated responses (every framing, HEAD, interim, HTTP/1.0, binary bodies) fed
    // to Beast whole and to ours in random pieces; status, body and reuse agree. Then mutated copies:
    // wherever both accept, they agree.
    void agreesWithBeast() {
        std::mt19937 rng(20261203);
        int compared = 0, mutatedBoth = 0;
        for (int i = 0; i < 20000; ++i) {
            const bool headRequest = rng() % 8 == 0;
            std::string body;
            const std::string input = generate(rng, headRequest, body);
            const Oracle o = beastParse(input, headRequest);
            QVERIFY2(o.ok,
                     qPrintable(QString("beast refused #%1: %2")
                                    .arg(i)
                                    .arg(QByteArray::fromStdString(input).left(200).toPercentEncoding())));
            const auto r = feedEvents(input, 1 + rng() % 64, headRequest);
            QVERIFY2(!r.error,
                     qPrintable(QString("#%1: %2").arg(i).arg(QString::fromStdString(r.errorText))));
            QVERIFY(!r.heads.empty() && r.bodies.size() == 1);
            QCOMPARE(r.heads.back().status, o.status);
            QCOMPARE(r.bodies[0].size(), o.body.size());
            QVERIFY(r.bodies[0] == o.body);
            QVERIFY(r.bodies[0] == body);
            QCOMPARE(r.heads.back().keepAlive, o.keepAlive);
            ++compared;

            std::string m = input;
            const int edits = 1 + static_cast<int>(rng() % 3);
            for (int e = 0; e < edits && !m.empty(); ++e) {
                const std::size_t at = rng() % m.size();
                switch (rng() % 3) {
                case 0:
                    m[at] = static_cast<char>(rng() % 256);
                    break;
                case 1:
                    m.erase(at, 1);
                    break;
                default:
                    m.insert(at, 1, "\r\n:;0 a"[rng() % 8]);
                }
            }
            const Oracle mo = beastParse(m, headRequest);
            const auto mr = feedEvents(m, 1 + rng() % 64, headRequest);
            if (mo.ok && !mr.error && !mr.upgraded && mr.bodies.size() == 1 &&
                mr.heads.back().status == mo.status) {
                QVERIFY2(mr.bodies[0] == mo.body,
                         qPrintable(QString("mutated #%1: %2 vs Beast %3 bytes; input %4")
                                        .arg(i)
                                        .arg(mr.bodies[0].size())
                                        .arg(mo.body.size())
                                        .arg(QString::fromLatin1(
                                            QByteArray::fromStdString(m).left(300).toPercentEncoding()))));
                ++mutatedBoth;
            }
        }
        QCOMPARE(compared, 20000);
        QVERIFY2(mutatedBoth > 2000, qPrintable(QString::number(mutatedBoth)));
    }
};

QTEST_APPLESS_MAIN(TestHttp1ResponseParser)
#include "tst_http1_response_parser.moc"
