// The rule engine (config `rules:`, rules/rules.h) against a running `portico serve`, with curl
// over HTTP/1.1 and h2c: request header changes reach the upstream (reverse proxy and forward
// proxy), `fail` answers with a status or resets, a disabled rule does nothing, response-stage
// rules change proxied, forwarded and local responses, records list the rules and the original
// fields, and a rule whose match does not parse refuses the config with the match's
// file:line:column. Upstream:
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
        QVERIFY(QDir().mkpath(tmp_.filePath("dev/assets")));
        for (const auto& [name, text] :
             std::vector<std::pair<QString, QByteArray>>{{"dev/app.js", "console.log('dev build');\n"},
                                                         {"dev/assets/style.css", "body { color: red }\n"},
                                                         {"dev/assets/index.html", "<p>assets</p>\n"}}) {
            QFile f(tmp_.filePath(name));
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(text);
        }
        QFile hello(tmp_.filePath("site/hello.txt"));
        QVERIFY(hello.open(QIODevice::WriteOnly));
        hello.write("hello\n");
        hello.close();
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
  - match: "path:/unnamed-fail"
    actions: [{fail: 418}]
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
  - name: dev bundle
    match: "path:/app.js"
    actions: [{set_header: {X-Mapped: "yes"}}, {map_local: dev/app.js}]
  - name: dev assets
    match: "path:/assets/"
    actions: [{map_local: dev/assets}]
  - name: to the local upstream
    match: "host:mapped.test"
    actions: [{map_remote: http://127.0.0.1:%1}]
  - name: api response
    stage: response
    match: "path:/api/echo status:200 header:content-type=json"
    actions:
      - set_header: {X-Debug: "1"}
      - remove_header: Content-Type
  - name: missing
    stage: response
    match: "status:404"
    actions: [{set_header: {X-Was-Missing: "yes"}}]
  - name: static text
    stage: response
    match: "path:/hello.txt header:content-type=text/plain"
    actions: [{set_header: {Cache-Control: no-store}}, {remove_header: ETag}]
  - name: forwarded response
    stage: response
    match: "path:/echo/forwarded status:2xx"
    actions: [{set_header: {X-Forwarded-Response: "yes"}}]
vhosts:
  - root: site
    routes:
      - path: /api/*
        proxy: {upstream: http://127.0.0.1:%1, strip_prefix: /api}
)")
                      .arg(upstreamPort_)
                      .toUtf8());
        cfg.close();
        server_ = std::make_unique<ServerProcess>(
            QStringList{"--config", tmp_.filePath("rules.yaml"), "--record", tmp_.filePath("rec.db")});
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

    // An unnamed rule is named by its place in the list, in the answer as in records.
    void anUnnamedRuleIsNamedByItsPlace() {
        auto r = curlFetch({"-i", url("/unnamed-fail")});
        QCOMPARE(r.status, 418);
        QVERIFY2(r.body.toLower().contains("\r\nx-portico-rule: rules[3]\r\n"), r.body.constData());
        QVERIFY2(r.body.contains(": failed by rule 'rules[3]'\n"), r.body.constData());
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

    // Response-stage rules change what an upstream answered (its fields as they go out, on both
    // protocols): `status:` and a `header:` of the response decide; a non-matching status leaves it.
    void responseRulesChangeAProxiedResponse_data() { headerChangesReachTheUpstream_data(); }
    void responseRulesChangeAProxiedResponse() {
        QFETCH(QString, m);
        auto r = curlFetch(mode(m) + QStringList{"-i", url("/api/echo")});
        QCOMPARE(r.status, 200);
        const QByteArray head = r.body.left(r.body.indexOf("\r\n\r\n")).toLower();
        QVERIFY2(head.contains("\r\nx-debug: 1"), head.constData());
        QVERIFY2(!head.contains("content-type"), head.constData());
        QVERIFY2(r.body.contains("\"headers\""), r.body.constData()); // the body as the upstream sent it
        r = curlFetch(mode(m) + QStringList{"-i", url("/api/status/404")});
        QCOMPARE(r.status, 404);
        const QByteArray missing = r.body.toLower();
        QVERIFY2(!missing.contains("x-debug"), missing.constData());
        QVERIFY2(missing.contains("\r\nx-was-missing: yes"), missing.constData()); // `status:404`
    }

    // ... and what Portico answered itself: a static file (matched by its Content-Type) and a 404.
    void responseRulesChangeALocalResponse_data() { headerChangesReachTheUpstream_data(); }
    void responseRulesChangeALocalResponse() {
        QFETCH(QString, m);
        auto r = curlFetch(mode(m) + QStringList{"-i", url("/hello.txt")});
        QCOMPARE(r.status, 200);
        QByteArray head = r.body.left(r.body.indexOf("\r\n\r\n")).toLower();
        QVERIFY2(head.contains("\r\ncache-control: no-store"), head.constData());
        QVERIFY2(!head.contains("etag"), head.constData());
        QVERIFY2(head.contains("last-modified"), head.constData()); // the file's other fields stay
        QVERIFY2(r.body.endsWith("hello\n"), r.body.constData());
        r = curlFetch(mode(m) + QStringList{"-i", url("/nothing-here")});
        QCOMPARE(r.status, 404);
        head = r.body.toLower();
        QVERIFY2(head.contains("\r\nx-was-missing: yes"), head.constData());
        QVERIFY2(!head.contains("cache-control: no-store"), head.constData());
    }

    // A forward proxy's origin answers are ruled at the response stage too.
    void forwardedResponsesAreRuled() {
        const QString origin = QStringLiteral("http://127.0.0.1:%1").arg(upstreamPort_);
        auto r = curlFetch({"-i", "-x", server_->baseUrl(), origin + "/echo/forwarded"});
        QCOMPARE(r.status, 200);
        QVERIFY2(r.body.toLower().contains("\r\nx-forwarded-response: yes"), r.body.constData());
        r = curlFetch({"-i", "-x", server_->baseUrl(), origin + "/echo/other"});
        QCOMPARE(r.status, 200);
        QVERIFY2(!r.body.toLower().contains("x-forwarded-response"), r.body.constData());
    }

    // map_local with a file: every matching request gets it, as a static file is served (type,
    // ranges, conditional requests), after the rule's own header actions; whatever the route.
    void mapLocalServesAFile_data() { headerChangesReachTheUpstream_data(); }
    void mapLocalServesAFile() {
        QFETCH(QString, m);
        auto r = curlFetch(mode(m) + QStringList{"-i", url("/app.js?v=3")});
        QCOMPARE(r.status, 200);
        QVERIFY2(r.body.endsWith("console.log('dev build');\n"), r.body.constData());
        const QByteArray head = r.body.left(r.body.indexOf("\r\n\r\n")).toLower();
        QVERIFY2(head.contains("content-type: text/javascript") ||
                     head.contains("content-type: application/javascript"),
                 head.constData());
        const int at = head.indexOf("etag: ");
        QVERIFY2(at > 0, head.constData());
        const QByteArray etag = head.mid(at + 6, head.indexOf("\r\n", at) - at - 6);
        r = curlFetch(mode(m) + QStringList{"-H", "Range: bytes=0-6", url("/app.js")});
        QCOMPARE(r.status, 206);
        QCOMPARE(r.body, QByteArray("console"));
        r = curlFetch(mode(m) +
                      QStringList{"-H", "If-None-Match: " + QString::fromLatin1(etag), url("/app.js")});
        QCOMPARE(r.status, 304);
        // The rule's set_header reached the request the file answered (the record shows it; here the
        // request is not echoed): a POST is refused as a static file refuses it.
        r = curlFetch(mode(m) + QStringList{"--data-binary", "x", url("/app.js")});
        QCOMPARE(r.status, 405);
    }

    // map_local with a folder: the path under the rule's `path:` prefix, index.html for the folder.
    void mapLocalServesAFolder_data() { headerChangesReachTheUpstream_data(); }
    void mapLocalServesAFolder() {
        QFETCH(QString, m);
        auto r = curlFetch(mode(m) + QStringList{url("/assets/style.css")});
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body, QByteArray("body { color: red }\n"));
        r = curlFetch(mode(m) + QStringList{url("/assets/")});
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body, QByteArray("<p>assets</p>\n"));
        QCOMPARE(curlFetch(mode(m) + QStringList{url("/assets/none.css")}).status, 404);
        QCOMPARE(curlFetch(mode(m) + QStringList{url("/assets/../rules.yaml")}).status, 404); // stays inside
    }

    // map_remote: another origin answers, with its own Host (change_origin); from a vhost's request
    // and from a forward proxy's, whose origin name is then never resolved.
    void mapRemoteSendsElsewhere_data() { headerChangesReachTheUpstream_data(); }
    void mapRemoteSendsElsewhere() {
        QFETCH(QString, m);
        auto r = curlFetch(mode(m) + QStringList{"-H", "Host: mapped.test", url("/echo/mapped?q=1")});
        QCOMPARE(r.status, 200);
        const auto echo = QJsonDocument::fromJson(r.body).object();
        QCOMPARE(echo.value("path").toString(), QString("/echo/mapped?q=1"));
        QCOMPARE(receivedHeaders(r.body).value("host"),
                 QStringList{QStringLiteral("127.0.0.1:%1").arg(upstreamPort_)});
        if (m == "h1") {
            r = curlFetch({"-x", server_->baseUrl(), "http://mapped.test/echo/via-proxy"});
            QCOMPARE(r.status, 200);
            QCOMPARE(QJsonDocument::fromJson(r.body).object().value("path").toString(),
                     QString("/echo/via-proxy"));
        }
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

    // Last (it stops the server): each record lists the rules that touched it, in order, and keeps
    // the fields as they were before them (HAR `_portico.rules` and `_portico.original`, exported by
    // `portico har export` from the session file).
    void recordsListTheRulesAndTheOriginals() {
        for (const QString m : {"h1", "h2"}) {
            auto r = curlFetch(mode(m) + QStringList{"-H", "X-Remove-Me: 1", url("/api/echo?rec=" + m)});
            QCOMPARE(r.status, 200);
        }
        QCOMPARE(curlFetch({url("/hello.txt?rec=local")}).status, 200);
        QCOMPARE(curlFetch({url("/plain.txt?rec=missing")}).status, 404);
        const QString origin = QStringLiteral("http://127.0.0.1:%1").arg(upstreamPort_);
        QCOMPARE(curlFetch({"-x", server_->baseUrl(), origin + "/echo/other?rec=untouched"}).status, 200);
        QCOMPARE(server_->terminate(), 0);
        const QString har = tmp_.filePath("out.har");
        auto run = runProcess(porticoBinary(), {"har", "export", tmp_.filePath("rec.db"), har});
        QVERIFY2(run.exitCode == 0, run.err.constData());
        QFile f(har);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const auto entries =
            QJsonDocument::fromJson(f.readAll()).object()["log"].toObject()["entries"].toArray();
        auto entry = [&](const QString& marker) {
            for (const auto& e : entries)
                if (e.toObject()["request"].toObject()["url"].toString().endsWith(marker))
                    return e.toObject();
            return QJsonObject();
        };
        auto names = [](const QJsonObject& e) {
            QStringList out;
            for (const auto& n : e["_portico"].toObject()["rules"].toArray())
                out << n.toString();
            return out;
        };
        auto fields = [](const QJsonObject& e, const char* side) {
            QStringList out;
            for (const auto& h : e["_portico"].toObject()["original"].toObject()[side].toArray())
                out << h.toObject()["name"].toString().toLower();
            return out;
        };
        for (const QString m : {"h1", "h2"}) {
            const QJsonObject e = entry("?rec=" + m);
            QVERIFY2(!e.isEmpty(), qPrintable(m));
            QCOMPARE(names(e), (QStringList{"tag api", "second", "api response"}));
            QVERIFY2(fields(e, "requestHeaders").contains("x-remove-me"), qPrintable(m));
            QVERIFY2(fields(e, "responseHeaders").contains("content-type"), qPrintable(m));
            // The request and response as sent: the rules' changes.
            QStringList sent;
            for (const auto& h : e["request"].toObject()["headers"].toArray())
                sent << h.toObject()["name"].toString().toLower();
            QVERIFY2(sent.contains("x-rule") && !sent.contains("x-remove-me"), qPrintable(sent.join(',')));
        }
        const QJsonObject local = entry("?rec=local");
        QCOMPARE(names(local), QStringList{"static text"});
        QVERIFY(fields(local, "responseHeaders").contains("etag"));
        QVERIFY(fields(local, "requestHeaders").isEmpty()); // the request was not changed
        const QJsonObject missing = entry("?rec=missing");
        QCOMPARE(names(missing), QStringList{"missing"});
        QVERIFY(fields(missing, "responseHeaders").contains("content-type"));
        const QJsonObject untouched = entry("?rec=untouched");
        QVERIFY(!untouched.isEmpty());
        QVERIFY(!untouched["_portico"].toObject().contains("rules"));
        QVERIFY(!untouched["_portico"].toObject().contains("original"));
    }
};

QTEST_MAIN(TestRules)
#include "tst_rules.moc"
