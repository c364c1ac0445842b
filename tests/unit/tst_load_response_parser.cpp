// Unit tests for the load generator's HTTP/1.1 response parser: framing by Content-Length, chunked,
// close; interim 1xx; HEAD/204/304; keep-alive; errors; every input also fed one byte at a time.
#include "../../core/src/load/response_parser.h"

#include <QtTest>

#include <string>
#include <vector>

using portico::load::ResponseParser;

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

} // namespace

class TestLoadResponseParser : public QObject {
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
};

QTEST_APPLESS_MAIN(TestLoadResponseParser)
#include "tst_load_response_parser.moc"
