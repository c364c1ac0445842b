// The rule actions that shape time against a running `portico serve`, with curl over HTTP/1.1 and
// h2c: `throttle` (down: the response's bytes leave at the rate — 1 MiB under 1 Mbit/s takes
// 8.4 s ± 10 %; up: the request body's time at the rate before the answer; latency before the
// first byte; a Chrome preset), on static files, local answers and reverse-proxied answers, and
// on HTTP/2 only for its own stream; `fail: close` (no answer, the connection closes) and
// `fail: timeout` (no answer until the client gives up; other streams go on). Records name the
// rules and say why nothing came back. Upstream: tests/support/upstream.py (/big?n=N).
#include "test_support.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace portico::test;

namespace {
// curl's own clock for one transfer: "-w" with the total time and the time to the first byte.
struct Timed {
    int exitCode = -1;
    int status = 0;
    double total = 0, firstByte = 0;
    qint64 bytes = 0;
    QByteArray err;
};

Timed timedFetch(const QStringList& args) {
    auto r = runProcess("curl",
                        QStringList{"-sS", "--max-time", "30", "-o", "/dev/null", "-w",
                                    "%{http_code} %{time_total} %{time_starttransfer} %{size_download}\n"} +
                            args,
                        {}, 40000);
    Timed t;
    t.exitCode = r.exitCode;
    t.err = r.err;
    const auto parts = r.out.trimmed().split(' ');
    if (parts.size() == 4) {
        t.status = parts[0].toInt();
        t.total = parts[1].toDouble();
        t.firstByte = parts[2].toDouble();
        t.bytes = parts[3].toLongLong();
    }
    return t;
}
// `nghttp -s`'s table: the completed requests' paths and their responseEnd in seconds.
QMap<QString, double> nghttpCompleted(const QByteArray& out) {
    QMap<QString, double> done;
    for (const auto& line : out.split('\n')) {
        const auto p = line.simplified().split(' ');
        if (p.size() != 7 || !p[1].startsWith('+') || p[4] != "200") continue;
        QByteArray t = p[1].mid(1);
        double scale = 1;
        for (const auto& [unit, s] : {std::pair{"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}})
            if (t.endsWith(unit)) {
                t.chop(qstrlen(unit));
                scale = s;
                break;
            }
        done[QString::fromUtf8(p[6])] = t.toDouble() * scale;
    }
    return done;
}
} // namespace

class TestRulesThrottle : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    QProcess upstream_;
    int upstreamPort_ = 0;
    std::unique_ptr<ServerProcess> server_;

    QString url(const QString& path) const { return server_->baseUrl() + path; }
    static QStringList mode(const QString& m) {
        return m == "h2" ? QStringList{"--http2-prior-knowledge"} : QStringList{"--http1.1"};
    }
    void writeFile(const QString& name, qint64 size) {
        QFile f(tmp_.filePath(name));
        QVERIFY(f.open(QIODevice::WriteOnly));
        QVERIFY(f.write(QByteArray(size, 'x')) == size);
    }

private slots:
    void initTestCase() {
        upstreamPort_ = startSupportScript(upstream_, "upstream.py", tmp_.filePath("upstream.port"));
        QVERIFY(upstreamPort_ > 0);
        QVERIFY(QDir().mkpath(tmp_.filePath("site")));
        writeFile("site/big.bin", 1024 * 1024);
        writeFile("site/half.bin", 512 * 1024);
        writeFile("site/free.bin", 512 * 1024);
        writeFile("site/hello.txt", 6);
        writeFile("upload.bin", 64 * 1024);
        QFile cfg(tmp_.filePath("throttle.yaml"));
        QVERIFY(cfg.open(QIODevice::WriteOnly));
        cfg.write(QStringLiteral(R"(listen: [{address: 127.0.0.1:0}]
workers: 1
limits: {idle_timeout: 20s}
rules:
  - name: slow file
    match: "path:/big.bin"
    actions: [{throttle: {down: 1mbit}}]
  - name: slow half
    match: "path:/half.bin"
    actions: [{throttle: {down: 1mbit}}]
  - name: waits
    match: "path:/hello.txt"
    actions: [{throttle: {latency: 400ms}}]
  - name: slow upload
    match: "path:/upload"
    actions: [{throttle: {up: 256kbit}}]
  - name: slow proxied
    match: "path:/api/big"
    actions: [{throttle: {down: 1mbit}}]
  - name: chrome
    match: "path:/preset"
    actions: [{throttle: Slow 3G}]
  - name: hang up
    match: "path:/hangup"
    actions: [{fail: close}]
  - name: never
    match: "path:/never"
    actions: [{fail: timeout}]
vhosts:
  - root: site
    routes:
      - path: /upload
        respond: {body: "got it"}
      - path: /preset
        respond: {body: "slow"}
      - path: /api/*
        proxy: {upstream: http://127.0.0.1:%1, strip_prefix: /api}
)")
                      .arg(upstreamPort_)
                      .toUtf8());
        cfg.close();
        server_ = std::make_unique<ServerProcess>(
            QStringList{"--config", tmp_.filePath("throttle.yaml"), "--record", tmp_.filePath("rec.db")});
        QVERIFY2(server_->waitReady(), server_->output().constData());
    }
    void cleanupTestCase() {
        upstream_.kill();
        upstream_.waitForFinished();
    }

    // The issue's yardstick: 1 MiB under 1 Mbit/s is 8.39 s (1,048,576 × 8 / 10^6) ± 10 %.
    void downShapesAStaticFile() {
        const Timed t = timedFetch(mode("h1") + QStringList{url("/big.bin")});
        QVERIFY2(t.exitCode == 0, t.err.constData());
        QCOMPARE(t.status, 200);
        QCOMPARE(t.bytes, 1024 * 1024);
        QVERIFY2(t.total > 8.39 * 0.9 && t.total < 8.39 * 1.1, qPrintable(QString::number(t.total)));
    }

    // HTTP/2: the throttled stream's DATA frames are paced; a stream beside it on the same
    // connection is not (nghttp sends both on one connection).
    void downShapesOnlyItsOwnStream() {
        auto r = runProcess("nghttp", {"-n", "-s", url("/half.bin"), url("/free.bin")}, {}, 40000);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const auto done = nghttpCompleted(r.out);
        QVERIFY2(done.contains("/half.bin") && done.contains("/free.bin"), r.out.constData());
        // 512 KiB at 1 Mbit/s: 4.19 s ± 10 %; the free stream does not wait for it.
        QVERIFY2(done["/half.bin"] > 4.19 * 0.9 && done["/half.bin"] < 4.19 * 1.1, r.out.constData());
        QVERIFY2(done["/free.bin"] < 1.5, r.out.constData());
    }

    void downShapesAProxiedAnswer_data() {
        QTest::addColumn<QString>("m");
        QTest::newRow("http/1.1") << "h1";
        QTest::newRow("h2c") << "h2";
    }
    // 256 KiB from the upstream at 1 Mbit/s: 2.10 s ± 10 %, and every byte arrives.
    void downShapesAProxiedAnswer() {
        QFETCH(QString, m);
        const Timed t = timedFetch(mode(m) + QStringList{url("/api/big?n=262144")});
        QVERIFY2(t.exitCode == 0, t.err.constData());
        QCOMPARE(t.status, 200);
        QCOMPARE(t.bytes, 262144);
        QVERIFY2(t.total > 2.10 * 0.9 && t.total < 2.10 * 1.1, qPrintable(QString::number(t.total)));
    }

    // latency: nothing of the answer before 400 ms; an unthrottled answer is quick.
    void latencyComesBeforeTheFirstByte_data() { downShapesAProxiedAnswer_data(); }
    void latencyComesBeforeTheFirstByte() {
        QFETCH(QString, m);
        const Timed t = timedFetch(mode(m) + QStringList{url("/hello.txt")});
        QCOMPARE(t.status, 200);
        QVERIFY2(t.firstByte >= 0.4 && t.firstByte < 2.0, qPrintable(QString::number(t.firstByte)));
        const Timed free = timedFetch(mode(m) + QStringList{url("/free.bin")});
        QCOMPARE(free.status, 200);
        QVERIFY2(free.total < 0.4, qPrintable(QString::number(free.total)));
    }

    // up: a 64 KiB body under 256 kbit/s (32,000 B/s) takes 2.05 s before the answer.
    void upCountsTheRequestBody_data() { downShapesAProxiedAnswer_data(); }
    void upCountsTheRequestBody() {
        QFETCH(QString, m);
        // (No Expect: 100-continue, whose interim answer would be the first byte.)
        const Timed t = timedFetch(mode(m) + QStringList{"-H", "Expect:", "--data-binary",
                                                         "@" + tmp_.filePath("upload.bin"), url("/upload")});
        QCOMPARE(t.status, 200);
        QVERIFY2(t.total > 2.05 * 0.9 && t.total < 2.05 * 1.5, qPrintable(QString::number(t.total)));
    }

    // "Slow 3G" is Chrome's: 2 s of latency.
    void aPresetIsChromes() {
        const Timed t = timedFetch({url("/preset")});
        QCOMPARE(t.status, 200);
        QVERIFY2(t.firstByte >= 2.0 && t.firstByte < 4.0, qPrintable(QString::number(t.firstByte)));
    }

    // fail: close — no answer, the connection closes (curl: empty reply on HTTP/1.1, the
    // connection's end on HTTP/2).
    void failCloseHangsUp_data() { downShapesAProxiedAnswer_data(); }
    void failCloseHangsUp() {
        QFETCH(QString, m);
        auto r = curlFetch(mode(m) + QStringList{url("/hangup")});
        QCOMPARE(r.status, 0);
        // 52: empty reply from server; 18: HTTP/2 stream not closed cleanly (GOAWAY, then the
        // connection's end, before an answer); 16, 92: other HTTP/2 framing errors; 56: recv failure.
        QVERIFY2(r.exitCode == 52 || r.exitCode == 18 || r.exitCode == 16 || r.exitCode == 56 ||
                     r.exitCode == 92,
                 qPrintable(QString::number(r.exitCode) + " " + r.err));
        QCOMPARE(curlFetch(mode(m) + QStringList{url("/free.bin"), "-o", "/dev/null"}).status, 200);
    }

    // fail: timeout — nothing comes back: the client's own timeout ends it. On HTTP/2 a stream on
    // the same connection is answered meanwhile.
    void failTimeoutNeverAnswers() {
        QElapsedTimer clock;
        clock.start();
        auto r = curlFetch({"--max-time", "1.5", url("/never")});
        QCOMPARE(r.status, 0);
        QCOMPARE(r.exitCode, 28); // operation timed out
        QVERIFY(clock.elapsed() >= 1400);
        // nghttp's per-request timeout ends the held stream; the other one completed.
        auto two = runProcess("nghttp", {"-n", "-s", "-t", "2", url("/never"), url("/free.bin")}, {}, 20000);
        const auto done = nghttpCompleted(two.out);
        QVERIFY2(done.contains("/free.bin") && !done.contains("/never"), two.out.constData());
    }

    // Last (it stops the server): records name the throttle and say why nothing came back.
    void recordsSayWhatHappened() {
        QCOMPARE(server_->terminate(), 0);
        const QString har = tmp_.filePath("out.har");
        auto run = runProcess(porticoBinary(), {"har", "export", tmp_.filePath("rec.db"), har});
        QVERIFY2(run.exitCode == 0, run.err.constData());
        QFile f(har);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const auto entries =
            QJsonDocument::fromJson(f.readAll()).object()["log"].toObject()["entries"].toArray();
        QStringList bigRules, hangupErrors, neverErrors;
        for (const auto& v : entries) {
            const QJsonObject e = v.toObject();
            const QString u = e["request"].toObject()["url"].toString();
            const QJsonObject p = e["_portico"].toObject();
            if (u.endsWith("/big.bin"))
                for (const auto& n : p["rules"].toArray())
                    bigRules << n.toString();
            if (u.endsWith("/hangup")) hangupErrors << p["error"].toString();
            if (u.endsWith("/never")) neverErrors << p["error"].toString();
        }
        QCOMPARE(bigRules, QStringList{"slow file"});
        QCOMPARE(hangupErrors.size(), 2);
        for (const auto& e : hangupErrors)
            QVERIFY2(e.contains("closed without an answer"), qPrintable(e));
        QVERIFY(!neverErrors.isEmpty());
        for (const auto& e : neverErrors)
            QVERIFY2(e.contains("no answer"), qPrintable(e));
    }
};

QTEST_GUILESS_MAIN(TestRulesThrottle)
#include "tst_rules_throttle.moc"
