// What the forward proxy's records say about each exchange (issue: "records: source, client
// process, upstream phases, both TLS versions/ALPN"), tls_passthrough decided by the ClientHello's
// SNI name, and the record of an interception the client refused (with an alert, or by closing
// after our certificate without one). Clients: curl -x and tests/support/connect_tls_client.py;
// origins: Python's upstream.py (HTTP/1.1, TLS with its own certificate) and Portico with
// `tls: auto` under its own CA (h2 by ALPN).
#include "test_support.h"

#include <portico/capture/filter.h>
#include <portico/capture/har.h>
#include <portico/capture/session_file.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <functional>

using namespace portico;
using namespace portico::test;
using capture::Phase;

namespace {

// The phases present, in the order they happened, must not go back in time.
bool ordered(const capture::Exchange& e) {
    std::int64_t last = -1;
    for (auto phase : capture::kTimelineOrder) {
        const std::int64_t t = e.at(phase);
        if (t < 0) continue;
        if (t < last) return false;
        last = t;
    }
    return true;
}

QString describe(const std::vector<capture::Exchange>& records) {
    QStringList out;
    for (const auto& e : records)
        out << QString::fromStdString(e.method + " " + e.url() +
                                      " source=" + std::string(capture::sourceName(e.source)) +
                                      " route=" + e.route + " error=" + e.error);
    return out.join('\n');
}

} // namespace

class TestForwardProxyRecords : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    QProcess origin_, plain_, pinned_, alerting_;
    int originPort_ = 0, plainPort_ = 0, pinnedPort_ = 0, alertingPort_ = 0;
    std::unique_ptr<ServerProcess> h2Origin_, proxy_;
    QString proxyUrl_, ca_;

    // The first record of the session file that `pick` accepts (waits for the collector).
    std::optional<capture::Exchange> waitRecord(const std::function<bool(const capture::Exchange&)>& pick,
                                                std::vector<capture::Exchange>* all = nullptr) {
        std::vector<capture::Exchange> records;
        for (int i = 0; i < 100; ++i) {
            std::string error;
            records = capture::loadSessionFile(tmp_.filePath("rec.db").toStdString(), error);
            for (const auto& e : records)
                if (pick(e)) return e;
            QTest::qWait(50);
        }
        if (all) *all = records;
        qWarning("records so far:\n%s", qPrintable(describe(records)));
        return std::nullopt;
    }

    ProcessResult curl(const QStringList& args) {
        return runProcess("curl", QStringList{"-sS", "--max-time", "20", "-x", proxyUrl_} + args, {}, 30000);
    }

    ProcessResult client(const QStringList& args) {
        return runProcess("/usr/bin/python3",
                          QStringList{sourceDir() + "/tests/support/connect_tls_client.py", "--proxy",
                                      QString::number(proxy_->port())} +
                              args,
                          {}, 30000);
    }

private slots:
    void initTestCase() {
        // One certificate for every name the TLS origins answer to, pass.test included (the
        // tls_passthrough name a client asks for by SNI).
        for (const char* name : {"origin", "pinned", "alerting"}) {
            auto gen = makeSelfSignedCert(tmp_.filePath(QString(name) + ".pem"),
                                          tmp_.filePath(QString(name) + ".key"), name,
                                          "IP:127.0.0.1,DNS:localhost,DNS:pass.test");
            QVERIFY2(gen.exitCode == 0, gen.err.constData());
        }
        originPort_ = startSupportScript(origin_, "upstream.py", tmp_.filePath("origin.port"),
                                         {"--tls", tmp_.filePath("origin.pem"), tmp_.filePath("origin.key")});
        pinnedPort_ = startSupportScript(pinned_, "upstream.py", tmp_.filePath("pinned.port"),
                                         {"--tls", tmp_.filePath("pinned.pem"), tmp_.filePath("pinned.key")});
        alertingPort_ =
            startSupportScript(alerting_, "upstream.py", tmp_.filePath("alerting.port"),
                               {"--tls", tmp_.filePath("alerting.pem"), tmp_.filePath("alerting.key")});
        plainPort_ = startSupportScript(plain_, "upstream.py", tmp_.filePath("plain.port"));
        QVERIFY(originPort_ && pinnedPort_ && alertingPort_ && plainPort_);
        // /slow answers after 200 ms: the client is still connected when its process is looked up
        // (a client gone before that has no process in its records: a lookup races a fast exit).
        h2Origin_ = startTlsAutoOrigin(
            tmp_.path(), "    routes:\n      - path: /slow\n        respond: {body: slow, latency: 200ms}\n",
            "h2origin.yaml");
        QVERIFY2(h2Origin_->waitReady(), h2Origin_->output().constData());
        QVERIFY(writePemBundle(tmp_.filePath("origins.pem"),
                               {tmp_.filePath("origin.pem"), tmp_.filePath("origin-data/ca/ca.crt")}));
        QFile cfg(tmp_.filePath("proxy.yaml"));
        QVERIFY(cfg.open(QIODevice::WriteOnly));
        cfg.write(R"(listen:
  - address: 127.0.0.1:0
    forward_proxy: {intercept: true, upstream_cacert: origins.pem, tls_passthrough: ["pass.test", "localhost"]}
vhosts:
  - root: site
)");
        cfg.close();
        proxy_ = std::make_unique<ServerProcess>(
            QStringList{"--config", tmp_.filePath("proxy.yaml"), "--record", tmp_.filePath("rec.db")},
            QStringList{"PORTICO_DATA_DIR=" + tmp_.filePath("proxy-data")});
        QVERIFY2(proxy_->waitReady(), proxy_->output().constData());
        proxyUrl_ = proxy_->baseUrl();
        ca_ = tmp_.filePath("proxy-data/ca/ca.crt");
        QVERIFY(QFile::exists(ca_));
    }
    void cleanupTestCase() {
        for (QProcess* p : {&origin_, &plain_, &pinned_, &alerting_}) {
            p->kill();
            p->waitForFinished();
        }
    }

    // An absolute-form request: source "forward", curl's process, the upstream's address and the
    // new connection's phases (DNS, TCP, ready, request sent, first byte) in order.
    void forwardRecord() {
        const QString url = QStringLiteral("http://127.0.0.1:%1/slow?ms=200").arg(plainPort_);
        auto r = curl({url});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        auto e = waitRecord([&](const capture::Exchange& x) { return x.url() == url.toStdString(); });
        QVERIFY(e);
        QCOMPARE(e->source, capture::Source::Forward);
        QCOMPARE(e->status, 200);
        QVERIFY2(QString::fromStdString(e->clientProcess).contains(QRegularExpression("^\\d+ curl$")),
                 e->clientProcess.c_str());
        QCOMPARE(e->upstreamAddress, QStringLiteral("127.0.0.1:%1").arg(plainPort_).toStdString());
        QVERIFY(e->upstreamTlsVersion.empty());
        for (Phase p : {Phase::UpstreamResolved, Phase::UpstreamTcpConnected, Phase::UpstreamConnected,
                        Phase::UpstreamRequestSent, Phase::UpstreamFirstByte, Phase::ResponseDone})
            QVERIFY2(e->at(p) >= 0, capture::phaseName(p).data());
        QVERIFY(ordered(*e));
        // The same filter language the Traffic tab and `--filter` use.
        std::string error;
        auto f = capture::Filter::parse("source:forward process:curl", error);
        QVERIFY2(f, error.c_str());
        QVERIFY(f->matches(*e));
        f = capture::Filter::parse("source:intercepted", error);
        QVERIFY(f && !f->matches(*e));
        QVERIFY(!capture::Filter::parse("source:elsewhere", error));
        QVERIFY2(QString::fromStdString(error).contains("server, forward, intercepted or tunnel"),
                 error.c_str());
    }

    // Decrypted exchanges: source "intercepted", both sides' TLS (the client's with the proxy, the
    // proxy's with the origin) and the upstream's ALPN, over HTTP/1.1 and h2 on each side.
    void interceptedRecords_data() {
        QTest::addColumn<bool>("h2Origin");
        QTest::addColumn<QString>("clientHttp");
        QTest::addColumn<QString>("clientAlpn");
        QTest::addColumn<QString>("upstreamAlpn");
        QTest::newRow("h2 origin, h2 client") << true << "--http2"
                                              << "h2"
                                              << "h2";
        QTest::newRow("h2 origin, HTTP/1.1 client") << true << "--http1.1"
                                                    << "http/1.1"
                                                    << "h2";
        QTest::newRow("HTTP/1.1 origin, h2 client") << false << "--http2"
                                                    << "h2"
                                                    << "";
        QTest::newRow("HTTP/1.1 origin, HTTP/1.1 client") << false << "--http1.1"
                                                          << "http/1.1"
                                                          << "";
    }
    void interceptedRecords() {
        QFETCH(bool, h2Origin);
        QFETCH(QString, clientHttp);
        QFETCH(QString, clientAlpn);
        QFETCH(QString, upstreamAlpn);
        const int port = h2Origin ? h2Origin_->port() : originPort_;
        const QString url = QStringLiteral("https://127.0.0.1:%1/%2mode=%3")
                                .arg(port)
                                .arg(h2Origin ? "slow?" : "slow?ms=200&")
                                .arg(clientHttp.mid(2));
        auto r = curl({"--cacert", ca_, clientHttp, url});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        auto e = waitRecord([&](const capture::Exchange& x) { return x.url() == url.toStdString(); });
        QVERIFY(e);
        QCOMPARE(e->status, 200);
        QCOMPARE(e->source, capture::Source::Intercepted);
        QCOMPARE(e->route, std::string("(intercepted)"));
        QVERIFY2(QString::fromStdString(e->clientProcess).endsWith(" curl"), e->clientProcess.c_str());
        QCOMPARE(QString::fromStdString(e->alpn), clientAlpn);
        QVERIFY2(e->tlsVersion.starts_with("TLSv1."), e->tlsVersion.c_str());
        QVERIFY2(e->upstreamTlsVersion.starts_with("TLSv1."), e->upstreamTlsVersion.c_str());
        QCOMPARE(QString::fromStdString(e->upstreamAlpn), upstreamAlpn);
        for (Phase p : {Phase::UpstreamConnected, Phase::UpstreamFirstByte, Phase::ResponseDone})
            QVERIFY2(e->at(p) >= 0, capture::phaseName(p).data());
        // A connection this exchange opened has its DNS and TCP phases and its address; a pooled one
        // has neither (as DevTools shows a reused connection).
        const bool opened = e->at(Phase::UpstreamTcpConnected) >= 0;
        QCOMPARE(e->at(Phase::UpstreamResolved) >= 0, opened);
        QCOMPARE(!e->upstreamAddress.empty(), opened);
        if (opened) QCOMPARE(e->upstreamAddress, QStringLiteral("127.0.0.1:%1").arg(port).toStdString());
        QVERIFY(ordered(*e));
        std::string error;
        auto f = capture::Filter::parse("source:intercepted", error);
        QVERIFY(f && f->matches(*e));
    }
    // The first exchange with each origin opened its connection: at least those records have it.
    void someInterceptedRecordOpenedItsConnection() {
        std::vector<capture::Exchange> all;
        for (int port : {h2Origin_->port(), std::uint16_t(originPort_)}) {
            const std::string address = "127.0.0.1:" + std::to_string(port);
            auto e = waitRecord(
                [&](const capture::Exchange& x) {
                    return x.source == capture::Source::Intercepted && x.upstreamAddress == address &&
                           x.at(Phase::UpstreamTcpConnected) >= 0;
                },
                &all);
            QVERIFY2(e, address.c_str());
        }
    }

    // tls_passthrough by the ClientHello's SNI: a CONNECT to an address whose client asks for
    // pass.test passes through unread (the client verifies the origin's own certificate), and the
    // tunnel is one record with its bytes; another name on the same address is intercepted.
    void passthroughBySni() {
        const QString target = QStringLiteral("127.0.0.1:%1").arg(originPort_);
        auto r = client({"--connect", target, "--sni", "pass.test", "--cafile", tmp_.filePath("origin.pem"),
                         "--path", "/echo?sni=pass"});
        QVERIFY2(r.exitCode == 0, r.out + r.err);
        QVERIFY2(r.out.startsWith("HTTP/1.1 200"), r.out.constData());
        QVERIFY2(r.out.contains("/echo?sni=pass"), r.out.constData());
        auto e = waitRecord([&](const capture::Exchange& x) {
            return x.method == "CONNECT" && x.route == "(tls_passthrough)" && x.responseBodySize > 0;
        });
        QVERIFY(e);
        QCOMPARE(e->source, capture::Source::Tunnel);
        QCOMPARE(e->url(), target.toStdString());
        QVERIFY(e->requestBodySize > 100); // the ClientHello at least
        QCOMPARE(e->upstreamAddress, target.toStdString());
        QVERIFY(e->at(Phase::UpstreamResolved) >= 0 && e->at(Phase::UpstreamTcpConnected) >= 0);
        QVERIFY(ordered(*e));
        QVERIFY2(QString::fromStdString(e->clientProcess).contains("python3"), e->clientProcess.c_str());
        // The same address with a name not in the list: intercepted (the proxy's CA verifies it).
        r = client(
            {"--connect", target, "--sni", "intercepted.test", "--cafile", ca_, "--path", "/echo?sni=other"});
        QVERIFY2(r.exitCode == 0 && r.out.contains("/echo?sni=other"), r.out + r.err);
        // The CONNECT host alone still decides for a client without a name of its own (curl to localhost).
        auto c = curl({"--cacert", tmp_.filePath("origin.pem"),
                       QStringLiteral("https://localhost:%1/echo").arg(originPort_)});
        QVERIFY2(c.exitCode == 0, c.err.constData());
        QVERIFY(waitRecord([&](const capture::Exchange& x) {
            return x.method == "CONNECT" &&
                   x.url() == QStringLiteral("localhost:%1").arg(originPort_).toStdString() &&
                   x.source == capture::Source::Tunnel &&
                   x.upstreamAddress.ends_with(":" + std::to_string(originPort_)) &&
                   x.at(Phase::UpstreamTcpConnected) >= 0;
        }));
    }

    // An open tunnel holds no buffer of its own while idle (bytes are read into the worker's scratch
    // and written on at once): 300 tunnels with TLS done through them add well under 40 KiB of the
    // proxy's RSS each (two 64 KiB buffers per tunnel made it ~150 KB before).
    void openTunnelsCostLittleMemory() {
        auto rss = [this] {
            QFile f(QStringLiteral("/proc/%1/status").arg(proxy_->pid()));
            if (!f.open(QIODevice::ReadOnly)) return -1LL;
            for (const QByteArray& line : f.readAll().split('\n'))
                if (line.startsWith("VmRSS:")) return line.mid(6).trimmed().split(' ').front().toLongLong();
            return -1LL;
        };
        const qint64 before = rss();
        QVERIFY(before > 0);
        constexpr int kTunnels = 300;
        QProcess holder;
        holder.start("/usr/bin/python3", {sourceDir() + "/tests/support/connect_tls_client.py", "--proxy",
                                          QString::number(proxy_->port()), "--connect",
                                          QStringLiteral("localhost:%1").arg(h2Origin_->port()), "--sni",
                                          "localhost", "--cafile", tmp_.filePath("origin-data/ca/ca.crt"),
                                          "--path", "/index.html", "--hold", QString::number(kTunnels)});
        QVERIFY(holder.waitForStarted());
        QByteArray said;
        QTRY_VERIFY_WITH_TIMEOUT((said += holder.readAllStandardOutput()).contains("open") ||
                                     holder.state() == QProcess::NotRunning,
                                 60000);
        QVERIFY2(holder.state() == QProcess::Running, holder.readAllStandardError().constData());
        QTest::qWait(300);
        const qint64 with = rss();
        holder.closeWriteChannel();
        QVERIFY(holder.waitForFinished(10000));
        const qint64 perTunnel = (with - before) * 1024 / kTunnels;
        qInfo("RSS %lld -> %lld KiB: %lld bytes per open tunnel", before, with, perTunnel);
        // Under ASan the allocator's redzones and quarantine of freed blocks make RSS no measure.
        if (kSanitized) QSKIP("RSS is not a measure under a sanitizer (redzones, quarantine)");
        QVERIFY2(perTunnel < 40 * 1024, qPrintable(QString::number(perTunnel)));
    }

    // A client that closes right after our certificate, without an alert (a pinned app that just
    // hangs up), is recognised as one that refuses it: one record saying so, and its next tunnel
    // to that host:port passes through unread.
    void closeAfterOurCertificate() {
        const QString target = QStringLiteral("127.0.0.1:%1").arg(pinnedPort_);
        auto r = client({"--connect", target, "--sni", "pinned.test", "--close-after-hello"});
        QVERIFY2(r.exitCode == 0, r.out + r.err);
        auto e = waitRecord(
            [&](const capture::Exchange& x) { return x.url() == target.toStdString() && !x.error.empty(); });
        QVERIFY(e);
        QCOMPARE(e->source, capture::Source::Intercepted);
        QVERIFY2(QString::fromStdString(e->error).contains(
                     "closed the connection after the local CA's certificate"),
                 e->error.c_str());
        QVERIFY2(QString::fromStdString(e->error).contains("pass through unread"), e->error.c_str());
        r = client({"--connect", target, "--sni", "localhost", "--cafile", tmp_.filePath("pinned.pem"),
                    "--path", "/echo?pinned=2"});
        QVERIFY2(r.exitCode == 0 && r.out.contains("/echo?pinned=2"), r.out + r.err);
    }

    // A client that refuses our certificate with an alert: the record names the alert.
    void alertIsRecorded() {
        const QString url = QStringLiteral("https://127.0.0.1:%1/echo").arg(alertingPort_);
        auto r = curl({"--cacert", tmp_.filePath("alerting.pem"), url});
        QCOMPARE(r.exitCode, 60);
        const std::string target = "127.0.0.1:" + std::to_string(alertingPort_);
        auto e =
            waitRecord([&](const capture::Exchange& x) { return x.url() == target && !x.error.empty(); });
        QVERIFY(e);
        QCOMPARE(e->source, capture::Source::Intercepted);
        QVERIFY2(QString::fromStdString(e->error).contains(
                     "refused the local CA's certificate (tlsv1 alert unknown ca)"),
                 e->error.c_str());
    }

    // Last (it stops the proxy): the HAR export keeps the new fields in `_portico`.
    void harKeepsThem() {
        QCOMPARE(proxy_->terminate(), 0);
        const QString har = tmp_.filePath("out.har");
        auto r = runProcess(porticoBinary(), {"har", "export", tmp_.filePath("rec.db"), har});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QFile f(har);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const auto entries =
            QJsonDocument::fromJson(f.readAll()).object()["log"].toObject()["entries"].toArray();
        QSet<QString> sources;
        bool upstream = false;
        for (const auto& entry : entries) {
            const auto p = entry.toObject()["_portico"].toObject();
            sources << p["source"].toString();
            if (p["source"].toString() == "intercepted" &&
                p["upstreamTlsVersion"].toString().startsWith("TLSv1.") &&
                p["clientProcess"].toString().endsWith(" curl") &&
                p["phasesNs"].toObject().contains("upstream_request_sent"))
                upstream = true;
        }
        QVERIFY2(sources.contains("forward") && sources.contains("intercepted") && sources.contains("tunnel"),
                 qPrintable(QStringList(sources.begin(), sources.end()).join(',')));
        QVERIFY(upstream);
        // And reads back: the import of its own export keeps them exactly.
        std::string error;
        const auto records = capture::loadSessionFile(tmp_.filePath("rec.db").toStdString(), error);
        QVERIFY2(!records.empty(), error.c_str());
        f.seek(0);
        const auto imported = capture::fromHar(f.readAll().toStdString());
        QCOMPARE(imported.exchanges.size(), records.size());
        for (std::size_t i = 0; i < records.size(); ++i) {
            QCOMPARE(imported.exchanges[i].source, records[i].source);
            QCOMPARE(imported.exchanges[i].clientProcess, records[i].clientProcess);
            QCOMPARE(imported.exchanges[i].upstreamAddress, records[i].upstreamAddress);
            QCOMPARE(imported.exchanges[i].upstreamTlsVersion, records[i].upstreamTlsVersion);
            QCOMPARE(imported.exchanges[i].upstreamAlpn, records[i].upstreamAlpn);
            QCOMPARE(imported.exchanges[i].phases, records[i].phases);
        }
    }
};

QTEST_GUILESS_MAIN(TestForwardProxyRecords)
#include "tst_forward_proxy_records.moc"
