// `fastcgi:` routes end to end: curl (HTTP/1.1 and h2c) → portico → Debian's php-fpm over TCP.
// CGI parameters, request bodies, Status and Location, large streamed output, 502 when php-fpm
// is not there, both sides of connect_timeout and response_timeout.
#include "test_support.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace portico::test;

namespace {
struct Reply {
    int status = 0;
    QByteArray headers;
    QByteArray body;
    int exitCode = -1;
};

Reply curl(const QString& url, QStringList extra = {}) {
    QTemporaryFile head;
    head.open();
    auto r = runProcess("curl",
                        QStringList{"-s", "--max-time", "20", "-D", head.fileName(), "-w", "\n%{http_code}"} +
                            extra + QStringList{url});
    Reply out;
    const int nl = r.out.lastIndexOf('\n');
    out.body = r.out.left(nl);
    out.status = r.out.mid(nl + 1).toInt();
    out.headers = head.readAll();
    out.exitCode = r.exitCode;
    return out;
}
} // namespace

class TestProxyFastCgi : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    QProcess fpm_;
    int fpmPort_ = 0;
    std::unique_ptr<ServerProcess> server_;
    QString base_;
    StuckListener stuck_; // connect_timeout's application server

    void write(const QString& name, const QByteArray& text) {
        QFile f(tmp_.filePath(name));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(text);
    }

private slots:
    void initTestCase() {
        const QString fpm = "/usr/sbin/php-fpm8.2";
        if (!QFile::exists(fpm)) QSKIP("php8.2-fpm is not installed (installers/dev.sh installs it)");
        QDir().mkpath(tmp_.filePath("php/sub"));
        write(
            "php/info.php",
            "<?php\n"
            "header('X-Php: yes');\n"
            "echo json_encode(['method' => $_SERVER['REQUEST_METHOD'], 'query' => $_SERVER['QUERY_STRING'],\n"
            "    'script' => $_SERVER['SCRIPT_NAME'], 'file' => $_SERVER['SCRIPT_FILENAME'],\n"
            "    'path_info' => $_SERVER['PATH_INFO'] ?? '', 'uri' => $_SERVER['REQUEST_URI'],\n"
            "    'custom' => $_SERVER['HTTP_X_CUSTOM'] ?? '', 'type' => $_SERVER['CONTENT_TYPE'] ?? '',\n"
            "    'length' => $_SERVER['CONTENT_LENGTH'] ?? '', 'remote' => $_SERVER['REMOTE_ADDR'],\n"
            "    'body' => file_get_contents('php://input')]);\n");
        write("php/sub/index.php", "<?php echo 'index of sub';\n");
        write("php/missing.php", "<?php http_response_code(404); echo 'nope';\n");
        write("php/redirect.php", "<?php header('Location: /elsewhere');\n");
        write("php/big.php",
              "<?php for ($i = 0; $i < 64; $i++) echo str_repeat(chr(65 + $i % 26), 65536);\n");
        // For the timeouts (vhost timeouts.test): scripts that take their time.
        QDir().mkpath(tmp_.filePath("php/patient"));
        QDir().mkpath(tmp_.filePath("php/quick-connect"));
        write("php/patient/sleep.php", "<?php usleep((int)$_GET['ms'] * 1000); echo 'slept';\n");
        write("php/quick-connect/sleep.php", "<?php usleep((int)$_GET['ms'] * 1000); echo 'slept';\n");
        write("php/patient/trickle.php", "<?php echo 'h'; flush();\n"
                                         "for ($i = 0; $i < (int)$_GET['n']; $i++) {\n"
                                         "    usleep((int)$_GET['ms'] * 1000); echo 't'; flush();\n}\n");
        fpmPort_ = freePort();
        write("fpm.conf", QStringLiteral("[global]\nerror_log = %1/fpm.log\ndaemonize = no\n[www]\n"
                                         "listen = 127.0.0.1:%2\npm = static\npm.max_children = 4\n"
                                         "clear_env = no\n")
                              .arg(tmp_.path())
                              .arg(fpmPort_)
                              .toUtf8());
        fpm_.setProcessChannelMode(QProcess::MergedChannels);
        fpm_.start(fpm, {"-n", "-R", "-F", "-y", tmp_.filePath("fpm.conf")});
        QVERIFY(fpm_.waitForStarted());
        bool up = false;
        for (int i = 0; i < 100 && !up; ++i) {
            int fd = ::socket(AF_INET, SOCK_STREAM, 0);
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            a.sin_port = htons(static_cast<std::uint16_t>(fpmPort_));
            up = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
            ::close(fd);
            if (!up) QTest::qWait(50);
        }
        QVERIFY2(up, fpm_.readAll().constData());
        write("portico.yaml", QStringLiteral("listen: [127.0.0.1:0]\n"
                                             "vhosts:\n"
                                             "  - names: [127.0.0.1]\n"
                                             "    root: php\n"
                                             "    routes:\n"
                                             "      - location: \"~ \\\\.php(/|$)\"\n"
                                             "        fastcgi: {address: 127.0.0.1:%1, root: php}\n"
                                             "      - path: /sub/\n"
                                             "        fastcgi: {address: 127.0.0.1:%1, root: php}\n"
                                             "      - path: /down/*\n"
                                             "        fastcgi: {address: 127.0.0.1:%2, root: php}\n"
                                             "  - names: [timeouts.test]\n"
                                             "    routes:\n"
                                             "      - path: /patient/*\n"
                                             "        fastcgi: {address: 127.0.0.1:%1, root: php, "
                                             "response_timeout: 1s}\n"
                                             "      - path: /quick-connect/*\n"
                                             "        fastcgi: {address: 127.0.0.1:%1, root: php, "
                                             "connect_timeout: 300ms}\n"
                                             "      - path: /stuck/*\n"
                                             "        fastcgi: {address: 127.0.0.1:%3, root: php, "
                                             "connect_timeout: 300ms}\n")
                                  .arg(fpmPort_)
                                  .arg(freePort())
                                  .arg(stuck_.port())
                                  .toUtf8());
        server_ = std::make_unique<ServerProcess>(QStringList{"--config", tmp_.filePath("portico.yaml")});
        QVERIFY2(server_->waitReady(), server_->output().constData());
        base_ = QStringLiteral("http://127.0.0.1:%1").arg(server_->port());
    }
    void cleanupTestCase() {
        if (fpm_.state() != QProcess::NotRunning) {
            fpm_.terminate();
            if (!fpm_.waitForFinished(5000)) fpm_.kill();
        }
    }

    void cgiParametersAndBody() {
        for (const QString& mode : {QString(), QString("--http2-prior-knowledge")}) {
            QStringList extra{"-H",         "X-Custom: hi", "-H", "Content-Type: text/plain", "--data-binary",
                              "posted body"};
            if (!mode.isEmpty()) extra << mode;
            auto r = curl(base_ + "/info.php/extra/path?a=1&b=2", extra);
            QCOMPARE(r.status, 200);
            QVERIFY2(r.headers.toLower().contains("x-php: yes"), r.headers.constData());
            const auto j = QJsonDocument::fromJson(r.body).object();
            QCOMPARE(j["method"].toString(), QString("POST"));
            QCOMPARE(j["query"].toString(), QString("a=1&b=2"));
            QCOMPARE(j["script"].toString(), QString("/info.php"));
            QCOMPARE(j["path_info"].toString(), QString("/extra/path"));
            QCOMPARE(j["file"].toString(), tmp_.filePath("php/info.php"));
            QCOMPARE(j["uri"].toString(), QString("/info.php/extra/path?a=1&b=2"));
            QCOMPARE(j["custom"].toString(), QString("hi"));
            QCOMPARE(j["type"].toString(), QString("text/plain"));
            QCOMPARE(j["length"].toString(), QString("11"));
            QCOMPARE(j["remote"].toString(), QString("127.0.0.1"));
            QCOMPARE(j["body"].toString(), QString("posted body"));
        }
    }

    void statusLocationAndIndex() {
        auto m = curl(base_ + "/missing.php");
        QCOMPARE(m.status, 404);
        QCOMPARE(m.body, QByteArray("nope"));
        auto r = curl(base_ + "/redirect.php");
        QCOMPARE(r.status, 302);
        QVERIFY(r.headers.contains("/elsewhere"));
        auto i = curl(base_ + "/sub/");
        QCOMPARE(i.status, 200);
        QCOMPARE(i.body, QByteArray("index of sub"));
    }

    void largeOutputStreams() {
        for (const QString& mode : {QString(), QString("--http2-prior-knowledge")}) {
            auto r = curl(base_ + "/big.php", mode.isEmpty() ? QStringList{} : QStringList{mode});
            QCOMPARE(r.status, 200);
            QCOMPARE(r.body.size(), 64 * 65536);
            QCOMPARE(r.body.mid(65536 * 3, 3), QByteArray("DDD"));
        }
    }

    // Both sides of response_timeout (1 s) for the head: a script that answers after 300 ms is
    // relayed, one that takes 2.5 s gets 504.
    void responseTimeoutBothSidesForTheHead() {
        for (const QString& mode : {QString(), QString("--http2-prior-knowledge")}) {
            QStringList extra{"-H", "Host: timeouts.test"};
            if (!mode.isEmpty()) extra << mode;
            auto ok = curl(base_ + "/patient/sleep.php?ms=300", extra);
            QCOMPARE(ok.status, 200);
            QCOMPARE(ok.body, QByteArray("slept"));
            auto late = curl(base_ + "/patient/sleep.php?ms=2500", extra);
            QCOMPARE(late.status, 504);
        }
    }

    // ... and between body reads: output a byte every 300 ms (1.5 s in all) arrives whole; output
    // that stops for 2.5 s after the head aborts the client's connection or stream.
    void responseTimeoutBothSidesBetweenBodyReads() {
        for (const QString& mode : {QString(), QString("--http2-prior-knowledge")}) {
            QStringList extra{"-H", "Host: timeouts.test"};
            if (!mode.isEmpty()) extra << mode;
            auto ok = curl(base_ + "/patient/trickle.php?n=5&ms=300", extra);
            QCOMPARE(ok.exitCode, 0);
            QCOMPARE(ok.status, 200);
            QCOMPARE(ok.body, QByteArray("httttt"));
            auto stalled = curl(base_ + "/patient/trickle.php?n=1&ms=2500", extra);
            QVERIFY2(stalled.exitCode != 0, qPrintable(QString::number(stalled.exitCode)));
            QVERIFY(!stalled.body.endsWith("ht"));
        }
    }

    // Both sides of connect_timeout (300 ms): it bounds the connect only (a script that then takes
    // 1 s is relayed); an application server whose connect never completes gets 504.
    void connectTimeoutBothSides() {
        const QStringList host{"-H", "Host: timeouts.test"};
        auto ok = curl(base_ + "/quick-connect/sleep.php?ms=1000", host);
        QCOMPARE(ok.status, 200);
        QElapsedTimer t;
        t.start();
        auto stuck = curl(base_ + "/stuck/x.php", host);
        QCOMPARE(stuck.status, 504);
        QVERIFY2(stuck.body.contains("connect_timeout"), stuck.body.constData());
        QVERIFY2(t.elapsed() >= 300 && t.elapsed() < 5000, qPrintable(QString::number(t.elapsed())));
    }

    void fpmDownGives502() {
        auto r = curl(base_ + "/down/x.php");
        QCOMPARE(r.status, 502);
        QVERIFY2(r.body.contains("fastcgi 127.0.0.1:"), r.body.constData());
    }
};

QTEST_GUILESS_MAIN(TestProxyFastCgi)
#include "tst_proxy_fastcgi.moc"
