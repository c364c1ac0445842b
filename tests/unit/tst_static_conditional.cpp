// Conditional requests on static files: ETag / Last-Modified, 304 and 412 with RFC 9110 §13.2.2
// precedence (case CND-01: If-None-Match overrides If-Modified-Since).
#include "handlers_test_util.h"

#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>
#include <utime.h>

using namespace portico;
using namespace portico::test;

class StaticConditionalTest : public QObject {
    Q_OBJECT

private:
    QTemporaryDir tmp_;
    handlers::WorkerState worker_;
    QString etag_;
    static constexpr std::int64_t kMtime = 1700000000; // Tue, 14 Nov 2023 22:13:20 GMT

    http::Response get(const std::vector<std::pair<std::string, std::string>>& headers,
                       const std::string& method = "GET", const std::string& target = "/a.txt") {
        Site site(tmp_.path());
        TestRequest req(target, method);
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
        struct utimbuf times {
            kMtime, kMtime
        };
        QCOMPARE(::utime((tmp_.path() + "/a.txt").toUtf8().constData(), &times), 0);
        etag_ = hv(get({}), "ETag");
    }

    void validators() {
        auto res = get({});
        QCOMPARE(res.status, 200);
        struct stat st {};
        QCOMPARE(::stat((tmp_.path() + "/a.txt").toUtf8().constData(), &st), 0);
        std::int64_t ns = std::int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
        QCOMPARE(hv(res, "ETag"), QString("\"6-%1\"").arg(QString::number(ns, 16)));
        QCOMPARE(hv(res, "Last-Modified"), QString("Tue, 14 Nov 2023 22:13:20 GMT"));
    }

    void ifNoneMatch_data() {
        QTest::addColumn<QString>("value");
        QTest::addColumn<int>("status");
        QTest::newRow("same") << "%E" << 304;
        QTest::newRow("other") << "\"nope\"" << 200;
        QTest::newRow("star") << "*" << 304;
        QTest::newRow("in list") << "\"x\", %E, \"y\"" << 304;
        QTest::newRow("weak form matches (weak comparison)") << "W/%E" << 304;
        QTest::newRow("comma inside a tag") << "\"a,b\", %E" << 304;
        QTest::newRow("unquoted garbage") << "garbage" << 200;
    }
    void ifNoneMatch() {
        QFETCH(QString, value);
        QFETCH(int, status);
        auto res = get({{"If-None-Match", value.replace("%E", etag_).toStdString()}});
        QCOMPARE(res.status, status);
        if (status == 304) {
            QCOMPARE(hv(res, "ETag"), etag_); // §15.4.5
            QCOMPARE(hv(res, "Last-Modified"), QString("Tue, 14 Nov 2023 22:13:20 GMT"));
            QCOMPARE(res.bodyLength(), std::uint64_t(0));
        }
    }

    void ifModifiedSince_data() {
        QTest::addColumn<QString>("date");
        QTest::addColumn<int>("status");
        QTest::newRow("equal") << "Tue, 14 Nov 2023 22:13:20 GMT" << 304;
        QTest::newRow("later") << "Fri, 01 Jan 2100 00:00:00 GMT" << 304;
        QTest::newRow("earlier") << "Tue, 14 Nov 2023 22:13:19 GMT" << 200;
        QTest::newRow("rfc850") << "Tuesday, 14-Nov-23 22:13:20 GMT" << 304;
        QTest::newRow("asctime") << "Tue Nov 14 22:13:20 2023" << 304;
        QTest::newRow("invalid is ignored") << "yesterday" << 200;
    }
    void ifModifiedSince() {
        QFETCH(QString, date);
        QFETCH(int, status);
        QCOMPARE(get({{"If-Modified-Since", date.toStdString()}}).status, status);
        QCOMPARE(get({{"If-Modified-Since", date.toStdString()}}, "HEAD").status, status);
    }

    void noneMatchOverridesModifiedSince() {
        // CND-01, first probe: INM fails, so a future IMS must not turn it into 304.
        auto res =
            get({{"If-None-Match", "\"nope\""}, {"If-Modified-Since", "Fri, 01 Jan 2100 00:00:00 GMT"}});
        QCOMPARE(res.status, 200);
        QCOMPARE(res.bodyLength(), std::uint64_t(6));
        // Second probe: INM matches, so a 1970 IMS must not turn it into 200.
        res = get(
            {{"If-None-Match", etag_.toStdString()}, {"If-Modified-Since", "Thu, 01 Jan 1970 00:00:00 GMT"}});
        QCOMPARE(res.status, 304);
        QCOMPARE(hv(res, "ETag"), etag_);
    }

    void ifMatch_data() {
        QTest::addColumn<QString>("value");
        QTest::addColumn<int>("status");
        QTest::newRow("same") << "%E" << 200;
        QTest::newRow("star") << "*" << 200;
        QTest::newRow("other") << "\"nope\"" << 412;
        QTest::newRow("weak never matches (strong comparison)") << "W/%E" << 412;
    }
    void ifMatch() {
        QFETCH(QString, value);
        QFETCH(int, status);
        QCOMPARE(get({{"If-Match", value.replace("%E", etag_).toStdString()}}).status, status);
    }

    void ifUnmodifiedSince() {
        QCOMPARE(get({{"If-Unmodified-Since", "Thu, 01 Jan 1970 00:00:00 GMT"}}).status, 412);
        QCOMPARE(get({{"If-Unmodified-Since", "Tue, 14 Nov 2023 22:13:20 GMT"}}).status, 200);
        QCOMPARE(get({{"If-Unmodified-Since", "not a date"}}).status, 200);
        // If-Match present: If-Unmodified-Since is not evaluated (§13.2.2 step 2).
        QCOMPARE(
            get({{"If-Match", etag_.toStdString()}, {"If-Unmodified-Since", "Thu, 01 Jan 1970 00:00:00 GMT"}})
                .status,
            200);
    }

    void preconditionFailedBeatsNotModified() {
        // Step 1 runs before step 3: a failing If-Match wins over a matching If-None-Match.
        auto res = get({{"If-Match", "\"nope\""}, {"If-None-Match", etag_.toStdString()}});
        QCOMPARE(res.status, 412);
    }

    void spaFallbackHasValidatorsToo() {
        QVERIFY(writeFile(tmp_.path(), "index.html", "<p>app</p>"));
        Site site(tmp_.path());
        site.root().spaFallback = "/index.html";
        TestRequest req("/deep/link");
        http::Response res;
        run(site.config, fallbackResult(), req, worker_, res);
        QCOMPARE(res.status, 200);
        QString etag = hv(res, "ETag");
        QVERIFY(!etag.isEmpty());
        TestRequest again("/other/link");
        again.header("If-None-Match", etag.toStdString());
        run(site.config, fallbackResult(), again, worker_, res);
        QCOMPARE(res.status, 304);
    }
};

QTEST_APPLESS_MAIN(StaticConditionalTest)
#include "tst_static_conditional.moc"
