// Byte ranges on static files (RFC 9110 §14): single, suffix, open-ended, multipart/byteranges,
// 416 with "bytes */LEN" (case RNG-03), ignored syntax errors, If-Range and the max_ranges cap.
#include "handlers_test_util.h"

#include <QTemporaryDir>
#include <QtTest>

using namespace portico;
using namespace portico::test;
using Kind = http::Response::BodyKind;

namespace {

struct Part {
    std::string contentType;
    std::string contentRange;
    std::string bytes;
};

// Splits a multipart/byteranges body by the boundary from Content-Type; empty on malformed input.
std::vector<Part> parseMultipart(const std::string& contentType, const std::string& body) {
    std::vector<Part> parts;
    const std::string key = "boundary=";
    std::size_t k = contentType.find(key);
    if (k == std::string::npos) return {};
    std::string delim = "--" + contentType.substr(k + key.size());
    std::size_t pos = 0;
    if (body.compare(0, delim.size(), delim) != 0) return {};
    pos = delim.size();
    while (true) {
        if (body.compare(pos, 2, "--") == 0)
            return body.compare(pos, 4, "--\r\n") == 0 ? parts : std::vector<Part>{};
        if (body.compare(pos, 2, "\r\n") != 0) return {};
        pos += 2;
        std::size_t headEnd = body.find("\r\n\r\n", pos);
        if (headEnd == std::string::npos) return {};
        Part p;
        std::string head = body.substr(pos, headEnd - pos);
        for (const auto& line : QString::fromStdString(head).split("\r\n")) {
            if (line.startsWith("Content-Type: ")) p.contentType = line.mid(14).toStdString();
            if (line.startsWith("Content-Range: ")) p.contentRange = line.mid(15).toStdString();
        }
        pos = headEnd + 4;
        std::size_t next = body.find("\r\n" + delim, pos);
        if (next == std::string::npos) return {};
        p.bytes = body.substr(pos, next - pos);
        parts.push_back(p);
        pos = next + 2 + delim.size();
    }
}

} // namespace

class StaticRangesTest : public QObject {
    Q_OBJECT

private:
    QTemporaryDir tmp_;
    handlers::WorkerState worker_;
    std::string big_;

    http::Response get(const std::string& target,
                       const std::vector<std::pair<std::string, std::string>>& headers,
                       std::uint64_t maxRanges = 16) {
        Site site(tmp_.path());
        site.config.limits.maxRanges = maxRanges;
        TestRequest req(target);
        for (const auto& [n, v] : headers)
            req.header(n, v);
        http::Response res;
        run(site.config, fallbackResult(), req, worker_, res);
        return res;
    }

private slots:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        QVERIFY(writeFile(tmp_.path(), "a.txt", "hello\n"));
        QVERIFY(writeFile(tmp_.path(), "empty.txt", ""));
        big_.resize(1024 * 1024);
        std::uint32_t x = 12345;
        for (auto& c : big_) {
            x = x * 1103515245 + 12345;
            c = static_cast<char>(x >> 16);
        }
        QVERIFY(writeFile(tmp_.path(), "big.bin", QByteArray::fromStdString(big_)));
        std::string js;
        for (int i = 0; i < 400; ++i)
            js += "console.log('line " + std::to_string(i) + "');\n";
        QVERIFY(writeFile(tmp_.path(), "app.js", QByteArray::fromStdString(js)));
    }

    void singleRanges_data() {
        QTest::addColumn<QString>("range");
        QTest::addColumn<QString>("contentRange");
        QTest::addColumn<QString>("body");
        QTest::newRow("first two") << "bytes=0-1"
                                   << "bytes 0-1/6"
                                   << "he";
        QTest::newRow("suffix") << "bytes=-2"
                                << "bytes 4-5/6"
                                << "o\n";
        QTest::newRow("suffix longer than file") << "bytes=-100"
                                                 << "bytes 0-5/6"
                                                 << "hello\n";
        QTest::newRow("open-ended") << "bytes=2-"
                                    << "bytes 2-5/6"
                                    << "llo\n";
        QTest::newRow("last clamped") << "bytes=4-100"
                                      << "bytes 4-5/6"
                                      << "o\n";
        QTest::newRow("unit case, spaces") << "Bytes = 1-1 "
                                           << "bytes 1-1/6"
                                           << "e";
        QTest::newRow("one satisfiable of two") << "bytes=1-2, 50-60"
                                                << "bytes 1-2/6"
                                                << "el";
        QTest::newRow("huge last") << "bytes=0-99999999999999999999999"
                                   << "bytes 0-5/6"
                                   << "hello\n";
    }
    void singleRanges() {
        QFETCH(QString, range);
        QFETCH(QString, contentRange);
        QFETCH(QString, body);
        auto res = get("/a.txt", {{"Range", range.toStdString()}});
        QCOMPARE(res.status, 206);
        QCOMPARE(hv(res, "Content-Range"), contentRange);
        QCOMPARE(QString::fromStdString(bodyOf(res)), body);
        QCOMPARE(hv(res, "Content-Type"), QString("text/plain; charset=utf-8"));
        QCOMPARE(hv(res, "Accept-Ranges"), QString("bytes"));
    }

    void rng03_data() {
        QTest::addColumn<QString>("range");
        QTest::addColumn<int>("status");
        QTest::newRow("6-") << "bytes=6-" << 416;
        QTest::newRow("100-200") << "bytes=100-200" << 416;
        QTest::newRow("-0") << "bytes=-0" << 416;
        QTest::newRow("3-1 invalid: ignored") << "bytes=3-1" << 200;
        QTest::newRow("abc: ignored") << "bytes=abc" << 200;
        QTest::newRow("items unit: ignored") << "items=0-1" << 200;
        QTest::newRow("no equals") << "bytes" << 200;
        QTest::newRow("signed") << "bytes=+1-2" << 200;
        QTest::newRow("empty set") << "bytes=" << 200;
        QTest::newRow("0-0,-1 multipart") << "bytes=0-0,-1" << 206;
    }
    void rng03() {
        QFETCH(QString, range);
        QFETCH(int, status);
        auto res = get("/a.txt", {{"Range", range.toStdString()}});
        QCOMPARE(res.status, status);
        if (status == 416) QCOMPARE(hv(res, "Content-Range"), QString("bytes */6"));
        if (status == 200) QCOMPARE(bodyOf(res), std::string("hello\n"));
        QCOMPARE(hv(res, "Accept-Ranges"), QString("bytes"));
        if (status == 206) {
            auto parts = parseMultipart(hv(res, "Content-Type").toStdString(), bodyOf(res));
            QCOMPARE(parts.size(), std::size_t(2));
            QCOMPARE(parts[0].contentRange, std::string("bytes 0-0/6"));
            QCOMPARE(parts[0].bytes, std::string("h"));
            QCOMPARE(parts[1].contentRange, std::string("bytes 5-5/6"));
            QCOMPARE(parts[1].bytes, std::string("\n"));
            QCOMPARE(parts[0].contentType, std::string("text/plain; charset=utf-8"));
        }
    }

    void emptyFileIsUnsatisfiable() {
        auto res = get("/empty.txt", {{"Range", "bytes=0-"}});
        QCOMPARE(res.status, 416);
        QCOMPARE(hv(res, "Content-Range"), QString("bytes */0"));
    }

    void bigFileSingleRangeIsFileBody() {
        auto res = get("/big.bin", {{"Range", "bytes=1000-1999"}});
        QCOMPARE(res.status, 206);
        QCOMPARE(res.bodyKind(), Kind::File);
        QCOMPARE(res.fileOffset(), std::uint64_t(1000));
        QCOMPARE(res.bodyLength(), std::uint64_t(1000));
        QVERIFY(bodyOf(res) == big_.substr(1000, 1000));
        QCOMPARE(hv(res, "Content-Range"), QString("bytes 1000-1999/1048576"));
    }

    void bigFileMultipart() {
        auto res = get("/big.bin", {{"Range", "bytes=0-99, 500000-500099, -50"}});
        QCOMPARE(res.status, 206);
        QVERIFY(hv(res, "Content-Type").startsWith("multipart/byteranges; boundary="));
        auto parts = parseMultipart(hv(res, "Content-Type").toStdString(), bodyOf(res));
        QCOMPARE(parts.size(), std::size_t(3));
        QCOMPARE(parts[0].contentRange, std::string("bytes 0-99/1048576"));
        QVERIFY(parts[0].bytes == big_.substr(0, 100));
        QCOMPARE(parts[1].contentRange, std::string("bytes 500000-500099/1048576"));
        QVERIFY(parts[1].bytes == big_.substr(500000, 100));
        QCOMPARE(parts[2].contentRange, std::string("bytes 1048526-1048575/1048576"));
        QVERIFY(parts[2].bytes == big_.substr(1048526));
        QCOMPARE(parts[0].contentType, std::string("application/octet-stream"));
    }

    void cappedRangesGiveWholeFile() {
        auto res = get("/a.txt", {{"Range", "bytes=0-0,1-1,2-2"}}, 2);
        QCOMPARE(res.status, 200);
        QCOMPARE(bodyOf(res), std::string("hello\n"));
        res = get("/a.txt", {{"Range", "bytes=0-0,1-1"}}, 2);
        QCOMPARE(res.status, 206);
    }

    void overlappingRangesGiveWholeFile() {
        // Parts adding up to more than the file are an amplification attempt (§14.2).
        auto res = get("/a.txt", {{"Range", "bytes=0-5,0-5"}});
        QCOMPARE(res.status, 200);
        QCOMPARE(bodyOf(res), std::string("hello\n"));
    }

    void ifRange() {
        QString etag = hv(get("/a.txt", {}), "ETag");
        QString date = hv(get("/a.txt", {}), "Last-Modified");
        QCOMPARE(get("/a.txt", {{"Range", "bytes=0-1"}, {"If-Range", etag.toStdString()}}).status, 206);
        QCOMPARE(get("/a.txt", {{"Range", "bytes=0-1"}, {"If-Range", "\"old\""}}).status, 200);
        QCOMPARE(get("/a.txt", {{"Range", "bytes=0-1"}, {"If-Range", ("W/" + etag).toStdString()}}).status,
                 200);
        QCOMPARE(get("/a.txt", {{"Range", "bytes=0-1"}, {"If-Range", date.toStdString()}}).status, 206);
        QCOMPARE(
            get("/a.txt", {{"Range", "bytes=0-1"}, {"If-Range", "Thu, 01 Jan 1970 00:00:00 GMT"}}).status,
            200);
        auto res = get("/a.txt", {{"Range", "bytes=0-1"}, {"If-Range", "\"old\""}});
        QCOMPARE(bodyOf(res), std::string("hello\n"));
    }

    void rangeOnCompressibleIsIdentity() {
        auto res = get("/app.js", {{"Range", "bytes=0-6"}, {"Accept-Encoding", "gzip, br"}});
        QCOMPARE(res.status, 206);
        QCOMPARE(hv(res, "Content-Encoding"), QString());
        QCOMPARE(bodyOf(res), std::string("console"));
        QCOMPARE(hv(res, "Vary"), QString("Accept-Encoding"));
    }

    void rangeWithHead() {
        Site site(tmp_.path());
        TestRequest req("/a.txt", "HEAD");
        req.header("Range", "bytes=0-1");
        http::Response res;
        run(site.config, fallbackResult(), req, worker_, res);
        QCOMPARE(res.status, 206);
        QCOMPARE(res.bodyLength(), std::uint64_t(2));
    }

    void notModifiedBeatsRange() {
        QString etag = hv(get("/a.txt", {}), "ETag");
        QCOMPARE(get("/a.txt", {{"Range", "bytes=0-1"}, {"If-None-Match", etag.toStdString()}}).status, 304);
    }
};

QTEST_APPLESS_MAIN(StaticRangesTest)
#include "tst_static_ranges.moc"
