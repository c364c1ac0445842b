// Who may use a forward proxy listener (`forward_proxy.allow`, `portico proxy --host/--allow`):
// a client outside the list is answered 403 at accept, before the proxy reads a byte; one inside
// is served. Loopback only: Linux routes all of 127.0.0.0/8 to lo, so `curl --interface
// 127.0.0.2` is a second client address; no test binds an address other machines reach (the CLI's
// rules for those are checked with PORTICO_CHECK_ARGS, which exits before binding).
#include "test_support.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace portico::test;

namespace {

// Connects to 127.0.0.1:`port`, sends nothing, and returns what the server sends before it closes
// (at most `ms` milliseconds of waiting).
QByteArray unsolicited(std::uint16_t port, int ms = 3000) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return {};
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    QByteArray out;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0) {
        QElapsedTimer t;
        t.start();
        for (;;) {
            pollfd p{fd, POLLIN, 0};
            const int left = ms - int(t.elapsed());
            if (left <= 0 || ::poll(&p, 1, left) <= 0) break;
            char buf[4096];
            const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0) break;
            out.append(buf, int(n));
        }
    }
    ::close(fd);
    return out;
}

} // namespace

class TestForwardProxyAllow : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    QProcess upstream_;
    int upstreamPort_ = 0;

    QString origin(const QString& path) const {
        return QStringLiteral("http://127.0.0.1:%1%2").arg(upstreamPort_).arg(path);
    }

private slots:
    void initTestCase() {
        upstreamPort_ = startSupportScript(upstream_, "upstream.py", tmp_.filePath("up.port"));
        QVERIFY(upstreamPort_);
        QDir().mkpath(tmp_.filePath("site"));
        QFile index(tmp_.filePath("site/index.html"));
        QVERIFY(index.open(QIODevice::WriteOnly));
        index.write("the proxy's own vhost\n");
        index.close();
        // 127.0.0.2 must be usable as a source address here (Linux: all of 127/8 is on lo).
        auto probe = curlFetch({"--interface", "127.0.0.2", origin("/echo")});
        QVERIFY2(probe.status == 200, probe.err.constData());
    }
    void cleanupTestCase() {
        upstream_.kill();
        upstream_.waitForFinished();
    }

    // allow: [127.0.0.2/32] on a 127.0.0.1 listener: 127.0.0.2 is served (forwarded and
    // origin-form alike), 127.0.0.1 gets 403 for anything, even before it sends a byte; the
    // refusal is said on stderr.
    void onlyTheListedClientIsServed() {
        QFile cfg(tmp_.filePath("allow.yaml"));
        QVERIFY(cfg.open(QIODevice::WriteOnly));
        cfg.write("listen: [{address: 127.0.0.1:0, forward_proxy: {allow: [127.0.0.2/32]}}]\n"
                  "vhosts:\n  - root: site\n");
        cfg.close();
        ServerProcess proxy({"--config", cfg.fileName(), "-q"});
        QVERIFY2(proxy.waitReady(), proxy.output().constData());
        const QString url = proxy.baseUrl();

        auto r = curlFetch({"--interface", "127.0.0.2", "-x", url, origin("/echo?from=2")});
        QCOMPARE(r.status, 200);
        QCOMPARE(QJsonDocument::fromJson(r.body).object().value("path").toString(), QString("/echo?from=2"));
        r = curlFetch({"--interface", "127.0.0.2", url + "/"});
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body, QByteArray("the proxy's own vhost\n"));

        r = curlFetch({"-x", url, origin("/echo?from=1")});
        QCOMPARE(r.status, 403);
        QVERIFY2(r.body.contains("forward_proxy.allow"), r.body.constData());
        QCOMPARE(curlFetch({url + "/"}).status, 403);
        QCOMPARE(curlFetch({"-p", "-x", url, origin("/echo")}).exitCode, 56); // CONNECT answered 403
        const QByteArray early = unsolicited(proxy.port());
        QVERIFY2(early.startsWith("HTTP/1.1 403 Forbidden\r\n") &&
                     early.contains("\r\nConnection: close\r\n"),
                 early.constData());
        QTRY_VERIFY_WITH_TIMEOUT(
            proxy.output().contains("portico: refused 127.0.0.1 on the forward proxy's port"), 5000);
        // Still serving the listed client afterwards.
        QCOMPARE(curlFetch({"--interface", "127.0.0.2", "-x", url, origin("/echo")}).status, 200);
        QCOMPARE(proxy.terminate(), 0);
    }

    // Without allow a loopback listener admits every loopback client (all of 127/8), and an
    // explicit list on the command line replaces that default.
    void loopbackByDefaultAndTheCommandLine() {
        auto env = QProcessEnvironment::systemEnvironment();
        env.insert("PORTICO_DATA_DIR", tmp_.filePath("data"));
        auto proxy =
            ServerProcess::exactly({"proxy", "--port", "0", "-q", "--no-intercept"}, env, tmp_.path());
        QVERIFY2(proxy->waitReady(), proxy->output().constData());
        QCOMPARE(curlFetch({"-x", proxy->baseUrl(), origin("/echo")}).status, 200);
        QCOMPARE(curlFetch({"--interface", "127.0.0.2", "-x", proxy->baseUrl(), origin("/echo")}).status,
                 200);
        QCOMPARE(proxy->terminate(), 0);

        proxy = ServerProcess::exactly(
            {"proxy", "--port", "0", "-q", "--no-intercept", "--host", "127.0.0.1", "--allow", "127.0.0.2"},
            env, tmp_.path());
        QVERIFY2(proxy->waitReady(), proxy->output().constData());
        QVERIFY2(proxy->output().contains("Clients allowed (--allow; others get 403): 127.0.0.2"),
                 proxy->output().constData());
        QCOMPARE(curlFetch({"--interface", "127.0.0.2", "-x", proxy->baseUrl(), origin("/echo")}).status,
                 200);
        QCOMPARE(curlFetch({"-x", proxy->baseUrl(), origin("/echo")}).status, 403);
        QCOMPARE(proxy->terminate(), 0);
    }

    // `portico proxy --host` on an address that is not loopback needs --allow (exit 2, naming the
    // flag); --allow's values are checked as the config's are. PORTICO_CHECK_ARGS stops a valid
    // command line before anything binds.
    void commandLineRules_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("says");
        QTest::newRow("0.0.0.0 without --allow")
            << QStringList{"--host", "0.0.0.0"} << 2
            << "portico proxy: --host 0.0.0.0 is not a loopback address: add --allow CIDR";
        QTest::newRow(":: without --allow") << QStringList{"--host", "::"} << 2 << "add --allow CIDR";
        QTest::newRow("a LAN address without --allow")
            << QStringList{"--host", "192.168.1.5"} << 2 << "--allow";
        QTest::newRow("a name") << QStringList{"--host", "proxy.lan"} << 2
                                << "--host 'proxy.lan': expected an IP address";
        QTest::newRow("bits after the prefix")
            << QStringList{"--host", "0.0.0.0", "--allow", "192.168.1.7/24"} << 2 << "write 192.168.1.0/24";
        QTest::newRow("not a network")
            << QStringList{"--allow", "lan"} << 2 << "'lan' is not an IPv4 or IPv6 address";
        QTest::newRow("0.0.0.0 with --allow")
            << QStringList{"--host", "0.0.0.0", "--allow", "10.0.0.0/8"} << 0 << "";
        QTest::newRow("loopback address without --allow") << QStringList{"--host", "127.0.0.5"} << 0 << "";
        QTest::newRow("::1 without --allow") << QStringList{"--host", "::1"} << 0 << "";
    }
    void commandLineRules() {
        QFETCH(QStringList, args);
        QFETCH(int, exitCode);
        QFETCH(QString, says);
        auto env = QProcessEnvironment::systemEnvironment();
        env.insert("PORTICO_CHECK_ARGS", "1");
        auto r = runProcessIn(porticoBinary(), QStringList{"proxy"} + args, env, tmp_.path());
        QCOMPARE(r.exitCode, exitCode);
        QVERIFY2(r.err.contains(says.toUtf8()), r.err.constData());
    }
};

QTEST_GUILESS_MAIN(TestForwardProxyAllow)
#include "tst_forward_proxy_allow.moc"
