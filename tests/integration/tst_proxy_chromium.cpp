// `portico proxy chromium`: a fake browser (a shell script that writes its argv) shows every
// argument, the SPKI hash (checked against openssl's), the throw-away profile's life, the proxy it
// starts in-process (or the one already listening), Ctrl+C and the refusal of Firefox; then Debian's
// real headless Chromium loads an https page of a local origin through the intercepting proxy,
// trusting the local CA by its key only, and the session file holds the decrypted exchange.
#include "test_support.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <csignal>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace portico::test;

namespace {

// Something accepts connections on 127.0.0.1:port.
bool listening(quint16 port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return ok;
}

// The fake browser: writes its pid, how many sockets it inherited and its arguments (one a line)
// to $FAKE_OUT(.pid, .sockets), notes whether the
// profile folder exists and writes a file into it (a browser's profile is not empty), fetches
// $FAKE_FETCH through the proxy named by --proxy-server when set, then sleeps $FAKE_SLEEP seconds
// and exits with $FAKE_EXIT.
const char* kFakeBrowser = R"(#!/bin/sh
echo $$ > "$FAKE_OUT.pid"
ls -l /proc/$$/fd | grep -c socket: > "$FAKE_OUT.sockets"
: > "$FAKE_OUT.tmp"
for a in "$@"; do
  printf '%s\n' "$a" >> "$FAKE_OUT.tmp"
  case "$a" in
    --user-data-dir=*) d="${a#--user-data-dir=}"; [ -d "$d" ] && echo exists > "$FAKE_OUT.profile"; echo x > "$d/Cookies";;
    --proxy-server=*) proxy="${a#--proxy-server=}";;
  esac
done
if [ -n "$FAKE_FETCH" ]; then curl -sS --max-time 10 -x "$proxy" "$FAKE_FETCH" > "$FAKE_OUT.fetch" 2>&1; fi
mv "$FAKE_OUT.tmp" "$FAKE_OUT"
[ -n "$FAKE_SLEEP" ] && exec sleep "$FAKE_SLEEP"
exit ${FAKE_EXIT:-0}
)";

QByteArray readFile(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

} // namespace

class TestProxyChromium : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    QString fake_, out_;
    QProcess origin_, tlsOrigin_;
    int originPort_ = 0, tlsOriginPort_ = 0;

    // The environment of a run: its own data dir (the CA), TMPDIR (the profiles) and HOME.
    QProcessEnvironment env() const {
        auto e = QProcessEnvironment::systemEnvironment();
        e.insert("PORTICO_DATA_DIR", tmp_.filePath("data"));
        e.insert("TMPDIR", tmp_.filePath("tmp"));
        e.insert("HOME", tmp_.filePath("home"));
        e.insert("FAKE_OUT", out_);
        e.remove("PORTICO_BROWSER");
        return e;
    }
    QStringList leftProfiles() const {
        return QDir(tmp_.filePath("tmp")).entryList({"portico-browser-*"}, QDir::AllEntries | QDir::Hidden);
    }
    // What openssl says the CA's SPKI hash is.
    QString opensslSpki() const {
        auto r =
            runProcess("bash", {"-c",
                                "openssl x509 -pubkey -noout -in \"$0\" | openssl pkey -pubin -outform der "
                                "| openssl dgst -sha256 -binary | base64",
                                tmp_.filePath("data/ca/ca.crt")});
        return r.exitCode == 0 ? QString::fromLatin1(r.out.trimmed()) : QString();
    }

private slots:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        for (const char* d : {"tmp", "home"})
            QVERIFY(QDir().mkpath(tmp_.filePath(d)));
        fake_ = tmp_.filePath("fake-chromium");
        QFile f(fake_);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(kFakeBrowser);
        f.close();
        QVERIFY(f.setPermissions(f.permissions() | QFileDevice::ExeOwner));
        out_ = tmp_.filePath("argv.txt");
        originPort_ = startSupportScript(origin_, "upstream.py", tmp_.filePath("origin.port"));
        QVERIFY(originPort_);
        auto gen = makeSelfSignedCert(tmp_.filePath("origin.pem"), tmp_.filePath("origin.key"), "origin",
                                      "IP:127.0.0.1");
        QVERIFY2(gen.exitCode == 0, gen.err.constData());
        tlsOriginPort_ =
            startSupportScript(tlsOrigin_, "upstream.py", tmp_.filePath("tls.port"),
                               {"--tls", tmp_.filePath("origin.pem"), tmp_.filePath("origin.key")});
        QVERIFY(tlsOriginPort_);
    }
    void cleanupTestCase() {
        for (QProcess* p : {&origin_, &tlsOrigin_}) {
            p->kill();
            p->waitForFinished();
        }
    }
    void init() {
        for (const QString& suffix : {"", ".pid", ".profile", ".fetch", ".tmp"})
            QFile::remove(out_ + suffix);
    }

    // Nothing listens on the port: the proxy starts in this process, the browser gets exactly the
    // arguments of the docs (then the ones after `--`, then the URL), reaches an origin through
    // the proxy while it runs; afterwards the profile is gone and so is the proxy.
    void fakeBrowserGetsEveryArgument() {
        const quint16 port = freePort();
        QVERIFY(port && !listening(port));
        auto e = env();
        e.insert("FAKE_FETCH", QStringLiteral("http://127.0.0.1:%1/echo?from=fake-browser").arg(originPort_));
        auto r = runProcessIn(porticoBinary(),
                              {"proxy", "chromium", "http://example.test/start", "--port",
                               QString::number(port), "--browser", fake_, "-q", "--", "--headless",
                               "--foo=bar", "an argument with spaces", "--"},
                              e, tmp_.path(), 20000);
        QVERIFY2(r.exitCode == 0, (r.out + r.err).constData());
        const QStringList argv = QString::fromUtf8(readFile(out_)).split('\n', Qt::SkipEmptyParts);
        QCOMPARE(argv.size(), 11);
        QVERIFY2(argv[0].startsWith("--user-data-dir=" + tmp_.filePath("tmp") + "/portico-browser-"),
                 qPrintable(argv[0]));
        const QString profile = argv[0].mid(QString("--user-data-dir=").size());
        QCOMPARE(argv[1], QStringLiteral("--proxy-server=http://127.0.0.1:%1").arg(port));
        QCOMPARE(argv[2], QString("--proxy-bypass-list=<-loopback>"));
        const QString spki = opensslSpki();
        QCOMPARE(spki.size(), 44); // base64 of 32 bytes
        QCOMPARE(argv[3], "--ignore-certificate-errors-spki-list=" + spki);
        QCOMPARE(argv[4], QString("--no-first-run"));
        QCOMPARE(argv[5], QString("--no-default-browser-check"));
        QCOMPARE(argv.mid(6), (QStringList{"--headless", "--foo=bar", "an argument with spaces", "--",
                                           "http://example.test/start"}));
        QCOMPARE(readFile(out_ + ".profile").trimmed(), QByteArray("exists"));
        // None of the proxy's sockets (its listeners would outlive the proxy in the browser).
        QCOMPARE(readFile(out_ + ".sockets").trimmed(), QByteArray("0"));
        const auto echo = QJsonDocument::fromJson(readFile(out_ + ".fetch")).object();
        QVERIFY2(echo.value("path").toString() == "/echo?from=fake-browser",
                 readFile(out_ + ".fetch").constData());
        QVERIFY2(!QFileInfo::exists(profile), qPrintable(profile));
        QVERIFY2(leftProfiles().isEmpty(), qPrintable(leftProfiles().join(' ')));
        QVERIFY(!listening(port)); // the proxy stopped with the browser
        QVERIFY2(r.err.contains("Portico forward proxy on http://127.0.0.1:" + QByteArray::number(port)),
                 r.err.constData());
        // The browser's exit status is the command's; without a URL none is passed.
        e.insert("FAKE_EXIT", "3");
        e.remove("FAKE_FETCH");
        r = runProcessIn(porticoBinary(), {"proxy", "chromium", "--port", "0", "--browser", fake_, "-q"}, e,
                         tmp_.path(), 20000);
        QCOMPARE(r.exitCode, 3);
        QCOMPARE(QString::fromUtf8(readFile(out_)).split('\n', Qt::SkipEmptyParts).size(), 6);
        QVERIFY(leftProfiles().isEmpty());
        // PORTICO_BROWSER names the browser when --browser does not.
        e.insert("PORTICO_BROWSER", fake_);
        e.insert("FAKE_EXIT", "0");
        QFile::remove(out_);
        r = runProcessIn(porticoBinary(), {"proxy", "chromium", "--port", "0", "-q"}, e, tmp_.path(), 20000);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY(QFile::exists(out_));
    }

    // A proxy already listens on the port: the browser is only pointed at it (and it keeps running).
    void anExistingProxyIsUsed() {
        auto proxy = ServerProcess::exactly({"proxy", "--port", "0", "-q"}, env(), tmp_.path());
        QVERIFY2(proxy->waitReady(), proxy->output().constData());
        auto e = env();
        e.insert("FAKE_FETCH", QStringLiteral("http://127.0.0.1:%1/echo?from=existing").arg(originPort_));
        auto r =
            runProcessIn(porticoBinary(),
                         {"proxy", "chromium", "--port", QString::number(proxy->port()), "--browser", fake_},
                         e, tmp_.path(), 20000);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY2(r.err.contains("already listens on 127.0.0.1:" + QByteArray::number(proxy->port())),
                 r.err.constData());
        QVERIFY(!r.err.contains("Portico forward proxy on"));
        QVERIFY(readFile(out_).contains(
            QStringLiteral("--proxy-server=http://127.0.0.1:%1\n").arg(proxy->port()).toLatin1()));
        QVERIFY(readFile(out_ + ".fetch").contains("/echo?from=existing"));
        QVERIFY(listening(proxy->port()));
        QCOMPARE(proxy->terminate(), 0);
        QVERIFY(leftProfiles().isEmpty());
    }

    // Ctrl+C (SIGINT to portico) closes the browser, stops the proxy and removes the profile.
    void ctrlCStopsBoth() {
        const quint16 port = freePort();
        auto e = env();
        e.insert("FAKE_SLEEP", "30");
        QProcess p;
        p.setProcessEnvironment(e);
        p.setWorkingDirectory(tmp_.path());
        p.start(porticoBinary(),
                {"proxy", "chromium", "--port", QString::number(port), "--browser", fake_, "-q"});
        QVERIFY(p.waitForStarted());
        QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(out_), 10000);
        const pid_t browser = readFile(out_ + ".pid").trimmed().toInt();
        QVERIFY(browser > 0 && ::kill(browser, 0) == 0);
        QVERIFY(listening(port));
        QElapsedTimer t;
        t.start();
        ::kill(pid_t(p.processId()), SIGINT);
        QVERIFY(p.waitForFinished(10000));
        QVERIFY2(t.elapsed() < 8000, qPrintable(QString::number(t.elapsed())));
        QCOMPARE(p.exitStatus(), QProcess::NormalExit);
        QCOMPARE(p.exitCode(), 0);
        QVERIFY(p.readAllStandardError().contains("SIGINT: closing the browser and stopping the proxy"));
        QVERIFY(::kill(browser, 0) != 0); // gone (reaped by portico)
        QVERIFY(!listening(port));
        QVERIFY(leftProfiles().isEmpty());
    }

    // Firefox is refused as a usage error; a browser that is not there is a plain failure.
    void otherBrowsersAreRefused() {
        const QString firefox = tmp_.filePath("firefox");
        QVERIFY(QFile::copy(fake_, firefox));
        auto r = runProcessIn(porticoBinary(), {"proxy", "chromium", "--port", "0", "--browser", firefox},
                              env(), tmp_.path(), 20000);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("Chromium/Chrome only"), r.err.constData());
        QVERIFY(!QFile::exists(out_));
        r = runProcessIn(porticoBinary(),
                         {"proxy", "chromium", "--port", "0", "--browser", tmp_.filePath("no-such-browser")},
                         env(), tmp_.path(), 20000);
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("no-such-browser: not an executable file"), r.err.constData());
        auto e = env();
        e.insert("PATH", tmp_.filePath("home")); // no chromium there
        r = runProcessIn(porticoBinary(), {"proxy", "chromium", "--port", "0"}, e, tmp_.path(), 20000);
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("no Chromium or Chrome on PATH"), r.err.constData());
    }

    // Debian's Chromium, headless, loads an https page of a local origin (its own self-signed
    // certificate, trusted by the proxy through --upstream-cacert) through the proxy started here:
    // the local CA is trusted by its key hash only, so the leaf minted for 127.0.0.1 is accepted.
    // The DOM arrives on stdout and the session file holds the decrypted exchange. The extra flags
    // point Chromium's own background fetches (accounts, updates, network time) at a closed loopback
    // port, so the proxy is asked for no name outside /etc/hosts.
    void realHeadlessChromium() {
        const QString chromium = "/usr/bin/chromium";
        if (!QFileInfo(chromium).isExecutable())
            QFAIL("chromium is not installed (/usr/bin/chromium): run installers/dev.sh test to install it");
        const QString url =
            QStringLiteral("https://127.0.0.1:%1/echo?marker=through-portico").arg(tlsOriginPort_);
        const QString rec = tmp_.filePath("chromium.db");
        const QString nowhere = QStringLiteral("http://127.0.0.1:%1").arg(freePort());
        auto r = runProcessIn(porticoBinary(),
                              {"proxy",
                               "chromium",
                               url,
                               "--port",
                               "0",
                               "--browser",
                               chromium,
                               "--upstream-cacert",
                               tmp_.filePath("origin.pem"),
                               "--record",
                               rec,
                               "-q",
                               "--",
                               "--headless",
                               "--no-sandbox",
                               "--disable-gpu",
                               "--disable-background-networking",
                               "--disable-component-update",
                               "--disable-sync",
                               "--gaia-url=" + nowhere,
                               "--component-updater=url-source=" + nowhere,
                               "--apps-gallery-update-url=" + nowhere,
                               "--disable-features=NetworkTimeServiceQuerying",
                               "--dump-dom"},
                              env(), tmp_.path(), 60000);
        QVERIFY2(r.exitCode == 0, (r.out.right(2000) + r.err.right(3000)).constData());
        // The page: upstream.py's JSON (the path it received), shown by Chromium in a <pre>.
        QVERIFY2(r.out.contains("<pre>") && r.out.contains("\"path\": \"/echo?marker=through-portico\""),
                 (r.out.right(2000) + r.err.right(3000)).constData());
        QVERIFY2(r.err.contains("recorded"), r.err.constData());
        QVERIFY(leftProfiles().isEmpty());
        // The session file: the https exchange, decrypted, with the origin's answer.
        const QString har = tmp_.filePath("chromium.har");
        auto x = runProcess(porticoBinary(), {"har", "export", rec, har});
        QVERIFY2(x.exitCode == 0, x.err.constData());
        const auto entries =
            QJsonDocument::fromJson(readFile(har)).object()["log"].toObject()["entries"].toArray();
        QStringList urls;
        bool found = false;
        for (const auto& entry : entries) {
            const auto request = entry.toObject()["request"].toObject();
            const auto response = entry.toObject()["response"].toObject();
            urls << request["method"].toString() + " " + request["url"].toString() + " " +
                        QString::number(response["status"].toInt());
            if (request["url"].toString() == url && request["method"].toString() == "GET") {
                found = true;
                QCOMPARE(response["status"].toInt(), 200);
                QVERIFY(response["content"].toObject()["text"].toString().contains("through-portico"));
            }
        }
        QVERIFY2(found, qPrintable(urls.join('\n')));
        // Nothing asked the proxy for a name: every exchange went to 127.0.0.1.
        for (const QString& u : urls)
            QVERIFY2(u.contains("://127.0.0.1:") || u.startsWith("CONNECT 127.0.0.1:"),
                     qPrintable(urls.join('\n')));
    }
};

QTEST_GUILESS_MAIN(TestProxyChromium)
#include "tst_proxy_chromium.moc"
