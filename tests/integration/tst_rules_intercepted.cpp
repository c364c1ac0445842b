// Rules on intercepted HTTPS (a forward proxy with `intercept: true`): curl sends CONNECT, then
// TLS with the proxy's leaf for the origin, over HTTP/1.1 and HTTP/2; the request stage changes
// what the origin receives (a `tls: auto` Portico whose respond route echoes a field), fails or
// maps the exchange to a local file without asking the origin, and the response stage changes
// the origin's answer.
#include "test_support.h"

#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

using namespace portico::test;

class TestRulesIntercepted : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    std::unique_ptr<ServerProcess> origin_;
    std::unique_ptr<ServerProcess> proxy_;

    QString originUrl(const QString& path) const {
        return QStringLiteral("https://127.0.0.1:%1%2").arg(origin_->port()).arg(path);
    }
    CurlReply fetch(const QString& mode, const QString& path) {
        return curlFetch({mode == "h2" ? "--http2" : "--http1.1", "-i", "-x", proxy_->baseUrl(), "--cacert",
                          tmp_.filePath("proxy-data/ca/ca.crt"), originUrl(path)});
    }

private slots:
    void initTestCase() {
        origin_ = startTlsAutoOrigin(tmp_.path(), "    routes:\n"
                                                  "      - path: /echo\n"
                                                  "        respond: {body: \"x-rule={{header.x-rule}}\"}\n");
        QVERIFY2(origin_->waitReady(), origin_->output().constData());
        QFile mapped(tmp_.filePath("mapped.txt"));
        QVERIFY(mapped.open(QIODevice::WriteOnly));
        mapped.write("from a local file\n");
        mapped.close();
        QFile cfg(tmp_.filePath("proxy.yaml"));
        QVERIFY(cfg.open(QIODevice::WriteOnly));
        cfg.write(R"(listen:
  - address: 127.0.0.1:0
    forward_proxy: {intercept: true, upstream_cacert: origin-data/ca/ca.crt}
vhosts:
  - root: site
rules:
  - name: tag
    match: "path:/echo"
    actions: [{set_header: {X-Rule: intercepted}}]
  - name: refuse
    match: "path:/refused"
    actions: [{fail: 451}]
  - name: local
    match: "path:/mapped.txt"
    actions: [{map_local: mapped.txt}]
  - name: answer
    stage: response
    match: "path:/echo status:200"
    actions: [{set_header: {X-Response-Rule: "yes"}}]
)");
        cfg.close();
        proxy_ =
            std::make_unique<ServerProcess>(QStringList{"--config", tmp_.filePath("proxy.yaml")},
                                            QStringList{"PORTICO_DATA_DIR=" + tmp_.filePath("proxy-data")});
        QVERIFY2(proxy_->waitReady(), proxy_->output().constData());
    }

    void stages_data() {
        QTest::addColumn<QString>("mode");
        QTest::newRow("http/1.1") << "h1";
        QTest::newRow("h2") << "h2";
    }
    // The origin sees the request rule's field; the client sees the response rule's.
    void stages() {
        QFETCH(QString, mode);
        auto r = fetch(mode, "/echo");
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QCOMPARE(r.status, 200);
        QCOMPARE(r.httpVersion, mode == "h2" ? QString("2") : QString("1.1"));
        QVERIFY2(r.body.endsWith("x-rule=intercepted"), r.body.constData());
        QVERIFY2(r.body.toLower().contains("\r\nx-response-rule: yes\r\n"), r.body.constData());
    }

    void failAndMapLocal_data() { stages_data(); }
    // A fail and a map_local answer inside the tunnel without asking the origin (which has neither
    // path: it would say 404).
    void failAndMapLocal() {
        QFETCH(QString, mode);
        auto r = fetch(mode, "/refused");
        QCOMPARE(r.status, 451);
        QVERIFY2(r.body.contains("failed by rule 'refuse'"), r.body.constData());
        r = fetch(mode, "/mapped.txt");
        QCOMPARE(r.status, 200);
        QVERIFY2(r.body.endsWith("\r\n\r\nfrom a local file\n"), r.body.constData());
        QVERIFY2(!r.body.toLower().contains("x-response-rule"), r.body.constData());
    }
};

QTEST_MAIN(TestRulesIntercepted)
#include "tst_rules_intercepted.moc"
