// Request bodies that stream to the upstream of a `proxy:` route with backpressure: 1 GiB uploads
// from HTTP/1.1 and HTTP/2 clients to an HTTP/1.1 upstream (tests/support/upstream.py counts the
// bytes and their crc32) in bounded memory (the server's VmHWM), a slow upstream that makes the
// client wait, chunked bodies and trailers, an upstream that fails mid-body, max_body_bytes, and
// an HTTP/1.1 client's body going to an h2c upstream.
#include "test_support.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace portico::test;

namespace {
constexpr qint64 kGiB = 1024ll * 1024 * 1024;
constexpr qint64 kMiB = 1024ll * 1024;

QJsonObject json(const QByteArray& bytes) { return QJsonDocument::fromJson(bytes).object(); }

int startUpstream(QProcess& p, const QString& portFile, const QStringList& extra = {}) {
    return startSupportScript(p, "upstream.py", portFile, extra);
}

// A field of /proc/PID/status in KiB (VmHWM: the peak resident set size), -1 if unreadable.
qint64 statusKiB(qint64 pid, const QByteArray& field) {
    QFile f(QStringLiteral("/proc/%1/status").arg(pid));
    if (!f.open(QIODevice::ReadOnly)) return -1;
    for (const QByteArray& line : f.readAll().split('\n'))
        if (line.startsWith(field + ":"))
            return line.mid(field.size() + 1).trimmed().split(' ').value(0).toLongLong();
    return -1;
}

// Resets VmHWM to the current RSS (proc(5): "5" to clear_refs), so a peak is this test's own.
bool resetPeak(qint64 pid) {
    QFile f(QStringLiteral("/proc/%1/clear_refs").arg(pid));
    return f.open(QIODevice::WriteOnly) && f.write("5") == 1;
}
} // namespace

class TestProxyUpload : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    QProcess upstream_, tight_;
    int upstreamPort_ = 0, tightPort_ = 0;
    std::unique_ptr<ServerProcess> h2cUpstream_, server_, strict_;

    // Runs tests/support/upload_client.py; its JSON report.
    QJsonObject upload(const QStringList& args) {
        auto r = runProcess(debianPython(),
                            QStringList{sourceDir() + "/tests/support/upload_client.py"} + args, {}, 180000);
        if (r.exitCode != 0) qWarning() << "upload_client:" << r.err;
        return json(r.out);
    }
    QString url(const ServerProcess& s, const QString& path) const {
        return QStringLiteral("http://127.0.0.1:%1%2").arg(s.plainPort()).arg(path);
    }
    QString writeConfig(const QString& name, const QString& text) {
        QFile cfg(tmp_.filePath(name));
        if (!cfg.open(QIODevice::WriteOnly)) return {};
        cfg.write(text.toUtf8());
        return cfg.fileName();
    }
    // The upload must have reached the upstream whole and in order.
    static void checkArrived(const QJsonObject& report, qint64 bytes) {
        QCOMPARE(report.value("status").toInt(), 200);
        QCOMPARE(qint64(report.value("sent").toDouble()), bytes);
        const QJsonObject up = json(report.value("body").toString().toLatin1());
        QCOMPARE(qint64(up.value("bytes").toDouble()), bytes);
        QCOMPARE(qint64(up.value("crc32").toDouble()), qint64(report.value("crc32").toDouble()));
    }

private slots:
    void initTestCase() {
        upstreamPort_ = startUpstream(upstream_, tmp_.filePath("up.port"));
        tightPort_ = startUpstream(tight_, tmp_.filePath("tight.port"), {"--small-rcvbuf"});
        QVERIFY(upstreamPort_ && tightPort_);
        // An h2c upstream: a portico whose respond route sends the body back.
        const QString h2c = writeConfig("h2c.yaml", R"(listen: [127.0.0.1:0]
workers: 1
vhosts:
  - routes:
      - path: /echo
        respond: {body: "{{body}}"}
)");
        h2cUpstream_ = std::make_unique<ServerProcess>(QStringList{"--config", h2c});
        QVERIFY2(h2cUpstream_->waitReady(), h2cUpstream_->output().constData());
        // One worker: the pooled upstream connection of one request is the next one's.
        const QString routes = QStringLiteral(R"(
vhosts:
  - names: [127.0.0.1]
    routes:
      - path: /up/*
        proxy: {upstream: http://127.0.0.1:%1, strip_prefix: /up}
      - path: /tight/*
        proxy: {upstream: http://127.0.0.1:%2, strip_prefix: /tight}
      - path: /h2c/*
        proxy: {upstream: h2c://127.0.0.1:%3, strip_prefix: /h2c}
)")
                                   .arg(upstreamPort_)
                                   .arg(tightPort_)
                                   .arg(h2cUpstream_->port());
        const QString main =
            writeConfig("main.yaml", "listen: [127.0.0.1:0, {address: 127.0.0.1:0, tls: auto}]\n"
                                     "workers: 1\nlimits: {max_body_bytes: 2GiB}\n" +
                                         routes);
        server_ = std::make_unique<ServerProcess>(
            QStringList{"--config", main, "--record", tmp_.filePath("session.db")},
            QStringList{"PORTICO_DATA_DIR=" + tmp_.filePath("data")});
        QVERIFY2(server_->waitReady(), server_->output().constData());
        const QString strict = writeConfig(
            "strict.yaml",
            "listen: [127.0.0.1:0]\nworkers: 1\nlimits: {max_body_bytes: 1MiB, body_timeout: 1s}\n" + routes);
        strict_ = std::make_unique<ServerProcess>(QStringList{"--config", strict});
        QVERIFY2(strict_->waitReady(), strict_->output().constData());
    }
    void cleanupTestCase() {
        for (QProcess* p : {&upstream_, &tight_}) {
            p->kill();
            p->waitForFinished();
        }
    }

    void gibibyteUploadFromHttp1StreamsInBoundedMemory() {
        QVERIFY(resetPeak(server_->pid()));
        const auto report =
            upload({"h1", QString::number(server_->plainPort()), "/up/upload", QString::number(kGiB)});
        checkArrived(report, kGiB);
        const auto up = json(report.value("body").toString().toLatin1());
        QCOMPARE(up.value("content_length").toString(), QString::number(kGiB)); // the length went up
        QCOMPARE(up.value("chunked").toBool(), false);
        const qint64 peak = statusKiB(server_->pid(), "VmHWM");
        qInfo("HTTP/1.1 → HTTP/1.1, 1 GiB in %.1f s, server VmHWM %lld KiB",
              report.value("seconds").toDouble(), peak);
        QVERIFY2(peak > 0 && (kSanitized || peak < 200 * 1024), // ASan: quarantine and shadow
                 qPrintable(QStringLiteral("VmHWM %1 KiB").arg(peak)));
    }

    void gibibyteUploadFromHttp2StreamsInBoundedMemory() {
        QVERIFY(resetPeak(server_->pid()));
        // curl -T - over h2c: no content-length, so the HTTP/1.1 upstream gets it chunked.
        const auto report = upload({"h2", url(*server_, "/up/upload"), QString::number(kGiB)});
        checkArrived(report, kGiB);
        QCOMPARE(json(report.value("body").toString().toLatin1()).value("chunked").toBool(), true);
        const qint64 peak = statusKiB(server_->pid(), "VmHWM");
        qInfo("HTTP/2 → HTTP/1.1, 1 GiB in %.1f s, server VmHWM %lld KiB", report.value("seconds").toDouble(),
              peak);
        QVERIFY2(peak > 0 && (kSanitized || peak < 200 * 1024), // ASan: quarantine and shadow
                 qPrintable(QStringLiteral("VmHWM %1 KiB").arg(peak)));
    }

    void chunkedUploadGoesUpChunkedWithTrailers() {
        const auto report = upload({"h1-chunked", QString::number(server_->plainPort()), "/up/upload",
                                    QString::number(8 * kMiB + 5)});
        checkArrived(report, 8 * kMiB + 5);
        const auto up = json(report.value("body").toString().toLatin1());
        QCOMPARE(up.value("chunked").toBool(), true);
        // The client's trailer section reaches the upstream in the last chunk.
        const QJsonArray trailers = up.value("trailers").toArray();
        QCOMPARE(trailers.size(), 1);
        QCOMPARE(trailers.at(0).toArray().at(0).toString(), QString("X-Sum"));
        QCOMPARE(trailers.at(0).toArray().at(1).toString().toLongLong(),
                 qint64(report.value("crc32").toDouble()));
        QCOMPARE(report.value("closed").toBool(), false); // keep-alive afterwards
    }

    void tlsUploadsStream() {
        // Over TLS the connection reads through OpenSSL (which may hold decrypted bytes the socket
        // no longer signals): HTTP/1.1 chunked and HTTP/2 (ALPN) uploads.
        const QString tls = QStringLiteral("https://127.0.0.1:%1/up/upload").arg(server_->tlsPort());
        checkArrived(upload({"curl", tls, QString::number(64 * kMiB + 3), "-k", "--http1.1"}), 64 * kMiB + 3);
        checkArrived(upload({"curl", tls, QString::number(64 * kMiB + 3), "-k", "--http2"}), 64 * kMiB + 3);
    }

    void stalledBodyGets408() {
        // The head and 10 of 1000 bytes, then nothing: after body_timeout (1 s here) the client
        // gets 408 and a close, and the upstream request is cancelled.
        RawReply r = rawExchange(strict_->plainPort(),
                                 "POST /up/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n"
                                 "0123456789",
                                 3000);
        QCOMPARE(statusCodes(r.bytes), QList<int>{408});
        QVERIFY(r.closedByServer);
    }

    void expectContinueStillAnswered() {
        // curl asks for 100-continue and waits (here up to 10 s) for it before sending the body:
        // the 100 must come at once.
        QFile body(tmp_.filePath("body.bin"));
        QVERIFY(body.open(QIODevice::WriteOnly));
        QByteArray data(3 * kMiB, 'x');
        for (int i = 0; i < data.size(); ++i)
            data[i] = char((i * 7 + 3) & 255);
        body.write(data);
        body.close();
        QElapsedTimer t;
        t.start();
        auto r = runProcess("curl", {"-sS", "--max-time", "20", "--expect100-timeout", "10", "-H",
                                     "Expect: 100-continue", "--data-binary", "@" + body.fileName(),
                                     url(*server_, "/up/upload")});
        QCOMPARE(r.exitCode, 0);
        const auto up = json(r.out);
        QCOMPARE(qint64(up.value("bytes").toDouble()), qint64(data.size()));
        QVERIFY2(t.elapsed() < 5000,
                 qPrintable(QStringLiteral("%1 ms: curl waited for its 100").arg(t.elapsed())));
        // HTTP/1.1 client → h2c upstream: the body streams there as well.
        auto e = runProcess("curl", {"-sS", "--max-time", "20", "--data-binary", "@" + body.fileName(),
                                     url(*server_, "/h2c/echo")});
        QCOMPARE(e.exitCode, 0);
        QCOMPARE(e.out.size(), data.size());
        QVERIFY(e.out == data);
    }

    void slowUpstreamMakesTheClientWait() {
        // The upstream reads 48 MiB at 16 MiB/s. With backpressure the client can only finish
        // writing shortly before the upstream finished reading (kernel buffers hold a few MiB);
        // a proxy that buffered would take the whole body at once.
        QVERIFY(resetPeak(server_->pid()));
        const qint64 bytes = 48 * kMiB;
        const auto report =
            upload({"h1", QString::number(server_->plainPort()),
                    "/tight/upload?rate=" + QString::number(16 * kMiB), QString::number(bytes)});
        checkArrived(report, bytes);
        const double sendDone = report.value("send_done").toDouble();
        const double upstreamTook =
            json(report.value("body").toString().toLatin1()).value("seconds").toDouble();
        qInfo("client done writing after %.2f s, upstream read for %.2f s", sendDone, upstreamTook);
        QVERIFY(upstreamTook > 2.5);
        QVERIFY2(sendDone > 0.6 * upstreamTook,
                 qPrintable(QStringLiteral("the client finished writing after %1 s of %2 s")
                                .arg(sendDone)
                                .arg(upstreamTook)));
        const qint64 peak = statusKiB(server_->pid(), "VmHWM");
        QVERIFY2(peak > 0 && (kSanitized || peak < 100 * 1024), // ASan: quarantine and shadow
                 qPrintable(QStringLiteral("VmHWM %1 KiB").arg(peak)));
    }

    void upstreamFailingMidBodyGives502AndNoRetry() {
        // Warm the pool (one worker), so the PUT below goes out on a reused connection: an
        // idempotent request that failed there would be retried if nothing of it had been sent.
        auto warm = runProcess("curl", {"-sS", url(*server_, "/tight/hits")});
        QCOMPARE(warm.exitCode, 0);
        const int before = json(warm.out).value("upload_fail").toInt();
        QElapsedTimer t;
        t.start();
        const auto report = upload({"h1", QString::number(server_->plainPort()),
                                    "/tight/upload-fail?after=1048576", QString::number(64 * kMiB), "PUT"});
        QCOMPARE(report.value("status").toInt(), 502);
        QVERIFY2(report.value("body").toString().contains("upstream 127.0.0.1:"),
                 qPrintable(report.value("body").toString()));
        QVERIFY(report.value("closed").toBool()); // the rest of the body was never read
        QVERIFY(t.elapsed() < 20000);
        auto hits = runProcess("curl", {"-sS", url(*server_, "/tight/hits")});
        QCOMPARE(json(hits.out).value("upload_fail").toInt(), before + 1); // not retried
        // The same from an HTTP/2 client: a 502 on the stream.
        const auto h2 =
            upload({"h2", url(*server_, "/tight/upload-fail?after=1048576"), QString::number(64 * kMiB)});
        QCOMPARE(h2.value("status").toInt(), 502);
    }

    void overTheLimitGives413() {
        const QString port = QString::number(strict_->plainPort());
        // A Content-Length above max_body_bytes: refused at once.
        auto cl = upload({"h1", port, "/up/upload", QString::number(4 * kMiB)});
        QCOMPARE(cl.value("status").toInt(), 413);
        QVERIFY(cl.value("closed").toBool());
        // A chunked body that passes the limit on the way: 413, the connection closed, and the
        // upstream never gets a complete request.
        auto chunked = upload({"h1-chunked", port, "/up/upload", QString::number(4 * kMiB)});
        QCOMPARE(chunked.value("status").toInt(), 413);
        QVERIFY(chunked.value("closed").toBool());
        // HTTP/2 without a length: 413 on the stream.
        auto h2 = upload({"h2", url(*strict_, "/up/upload"), QString::number(4 * kMiB)});
        QCOMPARE(h2.value("status").toInt(), 413);
        // At the limit exactly: through.
        auto exact = upload({"h1-chunked", port, "/up/upload", QString::number(1 * kMiB)});
        checkArrived(exact, 1 * kMiB);
    }

    // Last: stops the server to read its session file.
    void streamedUploadsAreCaptured() {
        QCOMPARE(server_->terminate(), 0);
        auto r = runProcess(porticoBinary(), {"har", "export", tmp_.filePath("session.db"), "-"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QByteArray prefix(64 * 1024, '\0'); // the body's start
        for (int i = 0; i < prefix.size(); ++i)
            prefix[i] = char((i * 31 + 7) & 255);
        QList<qint64> sizes;
        for (const auto& v : QJsonDocument::fromJson(r.out).object()["log"].toObject()["entries"].toArray()) {
            const auto e = v.toObject();
            const auto p = e["_portico"].toObject();
            if (p["target"].toString() != "/up/upload") continue;
            const auto req = e["request"].toObject();
            const qint64 size = qint64(req["bodySize"].toDouble());
            sizes << size;
            if (size != kGiB) continue;
            const auto post = req["postData"].toObject();
            QCOMPARE(post["_encoding"].toString(), QString("base64"));
            const QByteArray kept = QByteArray::fromBase64(post["text"].toString().toLatin1());
            QCOMPARE(kept.size(), 4096); // capture.body_bytes (default)
            QVERIFY(kept == prefix.left(kept.size()));
            const auto ph = p["phasesNs"].toObject();
            QVERIFY2(ph["request_body_done"].toDouble() > ph["request_headers"].toDouble() &&
                         ph["response_done"].toDouble() >= ph["request_body_done"].toDouble(),
                     QJsonDocument(ph).toJson().constData());
            QCOMPARE(e["response"].toObject()["status"].toInt(), 200);
        }
        QCOMPARE(sizes.count(kGiB), 2);         // from the HTTP/1.1 and the HTTP/2 client
        QCOMPARE(sizes.count(8 * kMiB + 5), 1); // chunked
    }
};

QTEST_GUILESS_MAIN(TestProxyUpload)
#include "tst_proxy_upload.moc"
