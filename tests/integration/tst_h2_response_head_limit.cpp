// An HTTP/2 response whose header section nghttp2 will not send (over its 64 KiB
// max_send_header_block_length): the stream is answered 500 instead of waiting for ever, the
// connection's other streams go on, and the record says why. A local `respond` route and a
// proxied one (the route's fields joined to the upstream's head) take the same path.
#include "test_support.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace portico::test;

class TestH2ResponseHeadLimit : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    QProcess upstream_;
    std::unique_ptr<ServerProcess> server_;
    QString base_;

    // nghttp on one connection: the :status of each stream in the order of `paths`, and the bodies.
    struct Multi {
        QList<int> statuses;
        QByteArray out;
        int exitCode = -1;
    };
    Multi nghttp(const QStringList& paths) {
        QStringList args{"-v", "--no-dep"};
        for (const QString& p : paths)
            args << base_ + p;
        auto r = runProcess("nghttp", args, {}, 10000);
        Multi m;
        m.exitCode = r.exitCode;
        m.out = r.out;
        // nghttp --no-dep opens streams 1, 3, 5, ... in the order of the URLs.
        for (int i = 0; i < paths.size(); ++i) {
            const QByteArray key =
                QByteArray("recv (stream_id=") + QByteArray::number(2 * i + 1) + ") :status: ";
            const qsizetype at = r.out.indexOf(key);
            m.statuses << (at < 0 ? 0 : r.out.mid(at + key.size(), 3).toInt());
        }
        return m;
    }

private slots:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        const int upPort = startSupportScript(upstream_, "upstream.py", tmp_.filePath("up.port"));
        QVERIFY2(upPort, upstream_.readAllStandardError().constData());
        const QString big(70000, QChar('v'));
        QFile cfg(tmp_.filePath("portico.yaml"));
        QVERIFY(cfg.open(QIODevice::WriteOnly));
        cfg.write(QStringLiteral(R"(listen: [127.0.0.1:0]
vhosts:
  - default: true
    routes:
      - path: /big
        respond: {body: "never sent\n", headers: {X-Big: "%1"}}
      - path: /fits
        respond: {body: "fits\n", headers: {X-Big: "%2"}}
      - path: /small
        respond: {body: "small\n"}
      - path: /up/*
        proxy: {upstream: http://127.0.0.1:%3, strip_prefix: /up}
        headers: {X-Big: "%1"}
)")
                      .arg(big, QString(65000, QChar('v')))
                      .arg(upPort)
                      .toUtf8());
        cfg.close();
        server_ = std::make_unique<ServerProcess>(
            QStringList{"--config", tmp_.filePath("portico.yaml"), "--record", tmp_.filePath("rec.db")});
        QVERIFY2(server_->waitReady(), server_->output().constData());
        base_ = server_->baseUrl();
    }

    // Under the limit the field goes out as it is.
    void headUnderTheLimitIsSent() {
        auto r = curlFetch({"--http2-prior-knowledge", "-i", base_ + "/fits"});
        QCOMPARE(r.status, 200);
        QVERIFY(r.body.contains("x-big: " + QByteArray(65000, 'v')));
    }

    // Before the fix the stream waited for ever (curl timed out with nothing received).
    void localResponseOverTheLimitIs500() {
        auto r = curlFetch({"--http2-prior-knowledge", "--max-time", "5", base_ + "/big"});
        QVERIFY2(r.status == 500, r.err.constData());
        QCOMPARE(r.httpVersion, QString("2"));
        QVERIFY(!r.body.contains("never sent"));
        // HTTP/1.1 has no such limit: the same route answers as configured.
        auto h1 = curlFetch({"--http1.1", "-i", base_ + "/big"});
        QCOMPARE(h1.status, 200);
        QVERIFY(h1.body.contains("never sent"));
    }

    void otherStreamsOfTheConnectionGoOn() {
        auto m = nghttp({"/big", "/small"});
        QVERIFY2(m.statuses == (QList<int>{500, 200}), m.out.right(2000).constData());
        QVERIFY(m.out.contains("small\n"));
        QVERIFY(!m.out.contains("recv GOAWAY"));
    }

    void proxiedResponseOverTheLimitIs500() {
        auto r = curlFetch({"--http2-prior-knowledge", "--max-time", "5", base_ + "/up/echo"});
        QVERIFY2(r.status == 500, r.err.constData());
        auto m = nghttp({"/up/echo", "/small", "/up/echo?again"}); // nghttp fetches a URL once
        QVERIFY2(m.statuses == (QList<int>{500, 200, 500}), m.out.right(2000).constData());
        QVERIFY(!m.out.contains("recv GOAWAY"));
    }

    // The record: the 500 that went out, and why.
    void recordSaysWhy() {
        QCOMPARE(server_->terminate(), 0);
        const QString har = tmp_.filePath("out.har");
        auto r = runProcess(porticoBinary(), {"har", "export", tmp_.filePath("rec.db"), har});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QFile f(har);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonArray entries = QJsonDocument::fromJson(f.readAll())["log"]["entries"].toArray();
        int big = 0, proxied = 0;
        for (const auto& v : entries) {
            const QJsonObject e = v.toObject();
            const QString url = e["request"]["url"].toString();
            const QString error = e["_portico"]["error"].toString();
            if (e["_portico"]["protocol"].toString() != "h2") continue;
            if (!url.endsWith("/big") && !url.contains("/up/echo")) continue;
            QCOMPARE(e["response"]["status"].toInt(), 500);
            QVERIFY2(error.contains("64 KiB") && error.contains("500"), qPrintable(url + ": " + error));
            (url.endsWith("/big") ? big : proxied)++;
        }
        QCOMPARE(big, 2);
        QCOMPARE(proxied, 3);
    }

    void cleanupTestCase() {
        upstream_.kill();
        upstream_.waitForFinished();
    }
};

QTEST_GUILESS_MAIN(TestH2ResponseHeadLimit)
#include "tst_h2_response_head_limit.moc"
