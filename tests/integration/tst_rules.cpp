// The rule engine's request stage (config `rules:`, rules/rules.h) against a running `portico
// serve`, with curl over HTTP/1.1 and h2c: header changes reach the upstream (reverse proxy and
// forward proxy), `fail` answers with a status or resets, a disabled rule does nothing, and a rule
// whose match does not parse refuses the config with the match's file:line:column. Upstream:
// tests/support/upstream.py (its /echo returns the fields it received).
#include "test_support.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace portico::test;

namespace {
// The fields upstream.py's /echo received, lower-cased names.
QMap<QString, QStringList> receivedHeaders(const QByteArray& body) {
    QMap<QString, QStringList> out;
    const auto echo = QJsonDocument::fromJson(body).object();
    for (const auto& pair : echo.value("headers").toArray())
        out[pair.toArray().at(0).toString().toLower()] << pair.toArray().at(1).toString();
    return out;
}
} // namespace

class TestRules : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    QProcess upstream_;
    int upstreamPort_ = 0;
    std::unique_ptr<ServerProcess> server_;

    QString url(const QString& path) const { return server_->baseUrl() + path; }
    static QStringList mode(const QString& m) {
        return m == "h2" ? QStringList{"--http2-prior-knowledge"} : QStringList{"--http1.1"};
    }

private slots:
    void initTestCase() {
        upstreamPort_ = startSupportScript(upstream_, "upstream.py", tmp_.filePath("upstream.port"));
        QVERIFY(upstreamPort_ > 0);
        QDir().mkpath(tmp_.filePath("site"));
        QFile cfg(tmp_.filePath("rules.yaml"));
        QVERIFY(cfg.open(QIODevice::WriteOnly));
        cfg.write(QStringLiteral(R"(listen: [{address: 127.0.0.1:0, forward_proxy: true}]
workers: 1
rules:
  - name: tag api
    match: "path:/api method:GET"
    actions:
      - set_header: {X-Rule: tagged, X-Keep: replaced}
      - remove_header: X-Remove-Me
  - name: second
    match: "header:x-rule=tagged"
    actions: [{set_header: {X-Second: saw-the-first}}]
  - name: broken
    match: "path:/flaky"
    actions: [{fail: 503}]
  - name: dropped
    match: path:/drop
    actions: [{fail: reset}]
  - name: off
    enabled: false
    match: "path:/off"
    actions: [{fail: 500}]
  - name: forwarded
    match: "host:127.0.0.1:%1 path:/echo/forwarded"
    actions: [{set_header: {X-Forwarded-Rule: yes}}]
  - name: forwarded fail
    match: "path:/echo/refused"
    actions: [{fail: 502}]
vhosts:
  - root: site
    routes:
      - path: /api/*
        proxy: {upstream: http://127.0.0.1:%1, strip_prefix: /api}
)")
                      .arg(upstreamPort_)
                      .toUtf8());
        cfg.close();
        server_ = std::make_unique<ServerProcess>(QStringList{"--config", tmp_.filePath("rules.yaml")});
        QVERIFY2(server_->waitReady(), server_->output().constData());
    }
    void cleanupTestCase() {
        upstream_.kill();
        upstream_.waitForFinished();
    }

    void headerChangesReachTheUpstream_data() {
        QTest::addColumn<QString>("m");
        QTest::newRow("http/1.1") << "h1";
        QTest::newRow("h2c") << "h2";
    }
    // Rules run in order: the second sees the first's field. X-Keep is replaced (one field), the
    // removed field is gone, others pass as sent.
    void headerChangesReachTheUpstream() {
        QFETCH(QString, m);
        auto r = curlFetch(mode(m) + QStringList{"-H", "X-Remove-Me: 1", "-H", "X-Keep: sent", "-H",
                                                 "X-Other: as-sent", url("/api/echo")});
        QVERIFY2(r.status == 200, r.err.constData() + r.body);
        QCOMPARE(r.httpVersion, m == "h2" ? QString("2") : QString("1.1"));
        const auto h = receivedHeaders(r.body);
        QCOMPARE(h.value("x-rule"), QStringList{"tagged"});
        QCOMPARE(h.value("x-keep"), QStringList{"replaced"});
        QVERIFY2(!h.contains("x-remove-me"), r.body.constData());
        QCOMPARE(h.value("x-other"), QStringList{"as-sent"});
        QCOMPARE(h.value("x-second"), QStringList{"saw-the-first"});
    }

    // `method:GET` does not match a POST: nothing is changed.
    void aRuleThatDoesNotMatchChangesNothing() {
        auto r = curlFetch({"-H", "X-Remove-Me: 1", "--data-binary", "body", url("/api/echo")});
        QCOMPARE(r.status, 200);
        const auto h = receivedHeaders(r.body);
        QVERIFY(!h.contains("x-rule"));
        QVERIFY(!h.contains("x-second"));
        QCOMPARE(h.value("x-remove-me"), QStringList{"1"});
    }

    void failAnswersWithItsStatus_data() { headerChangesReachTheUpstream_data(); }
    void failAnswersWithItsStatus() {
        QFETCH(QString, m);
        auto r = curlFetch(mode(m) + QStringList{"-i", url("/flaky/anything")});
        QCOMPARE(r.status, 503);
        QVERIFY2(r.body.contains("failed by rule 'broken'"), r.body.constData());
        QVERIFY2(r.body.toLower().contains("x-portico-rule: broken"), r.body.constData());
        // The connection stays good: the next request on it is served (curl says it reused it).
        auto two = curlFetch(mode(m) + QStringList{"-v", url("/flaky"), "--next"} + mode(m) +
                             QStringList{"-v", "-o", tmp_.filePath("second.json"), url("/api/echo")});
        QVERIFY2(two.body.startsWith("503 Service Unavailable: failed by rule 'broken'"),
                 two.body.constData());
        QFile second(tmp_.filePath("second.json"));
        QVERIFY(second.open(QIODevice::ReadOnly));
        QCOMPARE(receivedHeaders(second.readAll()).value("x-rule"), QStringList{"tagged"}); // the echo, ruled
        QVERIFY2(two.err.contains("Re-using existing connection"), two.err.constData());
    }

    void failResetSendsNothing_data() { headerChangesReachTheUpstream_data(); }
    void failResetSendsNothing() {
        QFETCH(QString, m);
        auto r = curlFetch(mode(m) + QStringList{url("/drop")});
        QCOMPARE(r.status, 0);
        // 52: empty reply (the connection closed), 56: reset while receiving; 92: HTTP/2 stream reset.
        QVERIFY2(r.exitCode == 52 || r.exitCode == 56 || r.exitCode == 92,
                 qPrintable(QString::number(r.exitCode) + " " + r.err));
    }

    void aDisabledRuleDoesNothing() {
        auto r = curlFetch({url("/off")});
        QCOMPARE(r.status, 404); // no route, no rule
    }

    // A forward proxy's absolute-form requests are ruled too, and a fail answers there without
    // asking the origin, also with a request body that was still to be read (it streams).
    void forwardedRequestsAreRuled() {
        const QString origin = QStringLiteral("http://127.0.0.1:%1").arg(upstreamPort_);
        auto r = curlFetch({"-x", server_->baseUrl(), origin + "/echo/forwarded"});
        QCOMPARE(r.status, 200);
        QCOMPARE(receivedHeaders(r.body).value("x-forwarded-rule"), QStringList{"yes"});
        QByteArray big(300000, 'b');
        QFile f(tmp_.filePath("big.bin"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(big);
        f.close();
        r = curlFetch({"-x", server_->baseUrl(), "--data-binary", "@" + tmp_.filePath("big.bin"),
                       origin + "/echo/refused"});
        QCOMPARE(r.status, 502);
        QVERIFY2(r.body.contains("failed by rule 'forwarded fail'"), r.body.constData());
        r = curlFetch({"-x", server_->baseUrl(), origin + "/echo/other"});
        QCOMPARE(r.status, 200);
        QVERIFY(!receivedHeaders(r.body).contains("x-forwarded-rule"));
    }

    // A match that does not parse refuses the whole config, naming the file, line and column of
    // the match and what is wrong in it.
    void aBadMatchRefusesTheConfig_data() {
        QTest::addColumn<QString>("match");
        QTest::addColumn<QString>("expected");
        QTest::newRow("unknown key") << "pth:/x"
                                     << "unknown key 'pth' (did you mean 'path'?)";
        QTest::newRow("status at the request stage") << "status:500"
                                                     << "stage: response";
        QTest::newRow("record-only key") << "route:x"
                                         << "Traffic filter only";
        QTest::newRow("unterminated quote") << R"(path:\"/x)"
                                            << "unterminated quote";
    }
    void aBadMatchRefusesTheConfig() {
        QFETCH(QString, match);
        QFETCH(QString, expected);
        QFile cfg(tmp_.filePath("bad.yaml"));
        QVERIFY(cfg.open(QIODevice::WriteOnly));
        cfg.write(QStringLiteral("listen: [{address: 127.0.0.1:0}]\nrules:\n  - match: \"%1\"\n"
                                 "    actions: [{fail: 503}]\nvhosts: [{root: site}]\n")
                      .arg(match)
                      .toUtf8());
        cfg.close();
        auto r = runProcess(porticoBinary(), {"serve", "--config", tmp_.filePath("bad.yaml")}, {}, 15000);
        QVERIFY2(r.exitCode != 0, r.out.constData());
        const QByteArray all = r.out + r.err;
        QVERIFY2(all.contains("bad.yaml:3:"), all.constData());
        QVERIFY2(all.contains(expected.toUtf8()), all.constData());
    }
};

QTEST_MAIN(TestRules)
#include "tst_rules.moc"
