// HTTP/1.1 fault injection's connection reset (a mock's drop_rate) behind pipelined requests: the
// answers to the requests before it are written first, then the connection is reset (RST, not
// FIN), and the dropped exchange is recorded as HTTP/2 records a reset stream: no status, no
// response head, "connection reset (fault injection)".
#include "raw_client.h"
#include "test_support.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

#include <cerrno>

using namespace portico::test;

namespace {

struct Received {
    QByteArray bytes;
    int error = 0; // errno of the read that ended it (ECONNRESET), 0 for an orderly close
};

// Sends `request` in one write, waits `pauseMs` without reading, then reads to the end.
Received sendAndRead(std::uint16_t port, const QByteArray& request, int receiveBytes = 0, int pauseMs = 0) {
    Received r;
    const int fd = connectLoopback(port, receiveBytes);
    if (fd < 0) return r;
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (::send(fd, request.constData(), static_cast<std::size_t>(request.size()), MSG_NOSIGNAL) !=
        request.size()) {
        ::close(fd);
        return r;
    }
    if (pauseMs > 0) QThread::msleep(pauseMs);
    char buf[16384];
    for (;;) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n > 0) {
            r.bytes.append(buf, n);
            continue;
        }
        r.error = n < 0 ? errno : 0;
        break;
    }
    ::close(fd);
    return r;
}

} // namespace

class TestHttp1PipelinedReset : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    std::unique_ptr<ServerProcess> server_;
    QByteArray large_;

private slots:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        QDir().mkpath(tmp_.filePath("site"));
        QFile a(tmp_.filePath("site/a.txt"));
        QVERIFY(a.open(QIODevice::WriteOnly));
        a.write("alpha\n");
        a.close();
        large_.resize(1024 * 1024);
        for (qsizetype i = 0; i < large_.size(); ++i)
            large_[i] = static_cast<char>('a' + (i * 7) % 26);
        QFile l(tmp_.filePath("site/large.txt"));
        QVERIFY(l.open(QIODevice::WriteOnly));
        l.write(large_);
        l.close();
        QFile cfg(tmp_.filePath("portico.yaml"));
        QVERIFY(cfg.open(QIODevice::WriteOnly));
        cfg.write(R"(listen: [127.0.0.1:0]
vhosts:
  - default: true
    root: site
    routes:
      - path: /ok
        respond: {body: "ok\n"}
      - path: /drop
        respond: {drop_rate: 1}
)");
        cfg.close();
        server_ = std::make_unique<ServerProcess>(
            QStringList{"--config", tmp_.filePath("portico.yaml"), "--record", tmp_.filePath("rec.db")});
        QVERIFY2(server_->waitReady(), server_->output().constData());
    }

    // Before the fix: 0 bytes, then ECONNRESET.
    void earlierAnswersArriveThenReset() {
        auto r = sendAndRead(server_->port(), "GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n"
                                              "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n"
                                              "GET /drop HTTP/1.1\r\nHost: x\r\n\r\n"
                                              "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n");
        QCOMPARE(statusCodes(r.bytes), (QList<int>{200, 200}));
        QVERIFY(r.bytes.contains("alpha\n"));
        QVERIFY(r.bytes.endsWith("ok\n"));
        QCOMPARE(r.error, ECONNRESET);
    }

    // A client that reads slowly: what the kernel still holds when the last write returned must
    // reach it before the reset (which would discard it).
    void slowReaderGetsTheWholeEarlierAnswer() {
        auto r = sendAndRead(
            server_->port(),
            "GET /large.txt HTTP/1.1\r\nHost: x\r\n\r\nGET /drop HTTP/1.1\r\nHost: x\r\n\r\n", 4096, 500);
        QCOMPARE(statusCodes(r.bytes.left(64)), (QList<int>{200}));
        QVERIFY2(r.bytes.endsWith(large_), QByteArray::number(r.bytes.size()).constData());
        QCOMPARE(r.error, ECONNRESET);
    }

    void dropAloneIsAReset() {
        auto r = sendAndRead(server_->port(), "GET /drop HTTP/1.1\r\nHost: x\r\n\r\n");
        QVERIFY(r.bytes.isEmpty());
        QCOMPARE(r.error, ECONNRESET);
    }

    // The record: the dropped exchange has no response; the earlier one is complete. Before the
    // fix the drop showed status 200, a made-up head and "connection closed before the response
    // was sent", and so did the earlier answers that were never written.
    void recordOfTheDrop() {
        QCOMPARE(server_->terminate(), 0);
        const QString har = tmp_.filePath("out.har");
        auto r = runProcess(porticoBinary(), {"har", "export", tmp_.filePath("rec.db"), har});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QFile f(har);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonArray entries = QJsonDocument::fromJson(f.readAll())["log"]["entries"].toArray();
        int drops = 0, answered = 0;
        for (const auto& v : entries) {
            const QJsonObject e = v.toObject();
            const QString url = e["request"]["url"].toString();
            const QString error = e["_portico"]["error"].toString();
            QCOMPARE(e["_portico"]["protocol"].toString(), QString("h1"));
            if (url.endsWith("/drop")) {
                ++drops;
                QCOMPARE(e["response"]["status"].toInt(), 0);
                QVERIFY(e["response"]["headers"].toArray().isEmpty());
                QCOMPARE(error, QString("connection reset (fault injection)"));
            } else {
                ++answered;
                QCOMPARE(e["response"]["status"].toInt(), 200);
                QVERIFY2(error.isEmpty(), qPrintable(url + ": " + error));
            }
        }
        QCOMPARE(drops, 3);
        QCOMPARE(answered, 3); // the /ok after the drop was never read
    }
};

QTEST_GUILESS_MAIN(TestHttp1PipelinedReset)
#include "tst_http1_pipelined_reset.moc"
