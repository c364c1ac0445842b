// Cookie fields on their way to an HTTP/1.1 upstream: an HTTP/2 client sends each cookie as its
// own field (RFC 9113 §8.2.3 allows the split for compression) and they must be joined with "; "
// into one before a non-HTTP/2 hop; an HTTP/1.1 client's repeated Cookie lines are joined too
// (RFC 6265 §5.4: one Cookie field).
#include "raw_client.h"
#include "test_support.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace portico::test;

namespace {

// The values of the fields named `name` (any case) upstream.py's /echo received, in order.
QStringList received(const QByteArray& echoJson, const QString& name) {
    QStringList out;
    const QJsonArray headers = QJsonDocument::fromJson(echoJson)["headers"].toArray();
    for (const auto& h : headers)
        if (h.toArray().at(0).toString().compare(name, Qt::CaseInsensitive) == 0)
            out << h.toArray().at(1).toString();
    return out;
}

} // namespace

class TestProxyCookies : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    QProcess upstream_;
    std::unique_ptr<ServerProcess> server_;
    QString base_;

private slots:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        const int upPort = startSupportScript(upstream_, "upstream.py", tmp_.filePath("up.port"));
        QVERIFY2(upPort, upstream_.readAllStandardError().constData());
        QFile cfg(tmp_.filePath("portico.yaml"));
        QVERIFY(cfg.open(QIODevice::WriteOnly));
        cfg.write(QStringLiteral(R"(listen: [127.0.0.1:0]
vhosts:
  - default: true
    routes:
      - path: /up/*
        proxy: {upstream: http://127.0.0.1:%1, strip_prefix: /up}
)")
                      .arg(upPort)
                      .toUtf8());
        cfg.close();
        server_ = std::make_unique<ServerProcess>(QStringList{"--config", tmp_.filePath("portico.yaml")});
        QVERIFY2(server_->waitReady(), server_->output().constData());
        base_ = server_->baseUrl();
    }

    // Before the fix the upstream got two cookie lines.
    void http2CookieFieldsAreJoined() {
        auto r = runProcess("nghttp",
                            {"-H", "cookie: a=1", "-H", "x-other: between", "-H", "cookie: b=2", "-H",
                             "cookie: c=3", base_ + "/up/echo"},
                            {}, 10000);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QCOMPARE(received(r.out, "cookie"), QStringList{"a=1; b=2; c=3"});
        QCOMPARE(received(r.out, "x-other"), QStringList{"between"});
    }

    void http1CookieLinesAreJoined() {
        RawClient c(server_->port());
        QCOMPARE(c.exchange("GET /up/echo HTTP/1.1\r\nHost: x\r\nCookie: a=1\r\nAccept: */*\r\n"
                            "Cookie:  b=2 \r\n\r\n"),
                 200);
        const auto body = c.body();
        const QByteArray json(body.data(), qsizetype(body.size()));
        QCOMPARE(received(json, "cookie"), QStringList{"a=1; b=2"});
        QCOMPARE(received(json, "accept"), QStringList{"*/*"});
    }

    void singleCookieIsUnchanged() {
        auto r = curlFetch({"--http2-prior-knowledge", "-H", "Cookie: only=1; two=2", base_ + "/up/echo"});
        QCOMPARE(r.status, 200);
        QCOMPARE(received(r.body, "cookie"), QStringList{"only=1; two=2"});
    }

    // A body behind the head is left alone, even when it looks like a field line.
    void bodyIsNotTouched() {
        auto r = curlFetch({"--http1.1", "-H", "Cookie: a=1", "-H", "Cookie: b=2", "--data-binary",
                            "x\r\ncookie: c=3\r\n", base_ + "/up/echo"});
        QCOMPARE(r.status, 200);
        QCOMPARE(received(r.body, "cookie"), QStringList{"a=1; b=2"});
        QCOMPARE(QJsonDocument::fromJson(r.body)["body"].toString(), QString("x\r\ncookie: c=3\r\n"));
    }

    void cleanupTestCase() {
        upstream_.kill();
        upstream_.waitForFinished();
    }
};

QTEST_GUILESS_MAIN(TestProxyCookies)
#include "tst_proxy_cookies.moc"
