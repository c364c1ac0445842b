// `portico` as a user runs it: version/help, serving a folder, `--test`, live config reload,
// graceful drain on SIGTERM, IPv6, the bundled demo site.
#include "test_support.h"

#include <portico/engine/engine.h>

#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace portico::test;

namespace {
void writeFile(const QString& path, const QByteArray& bytes) {
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(bytes);
}
QByteArray curl(const QStringList& args) {
    auto r = runProcess("curl", QStringList{"-s", "--max-time", "10"} + args);
    return r.out;
}
} // namespace

class TestServeCli : public QObject {
    Q_OBJECT
private slots:
    void versionAndHelp() {
        auto v = runProcess(porticoBinary(), {"version"});
        QCOMPARE(v.exitCode, 0);
        QVERIFY(v.out.startsWith("portico 0."));
        auto h = runProcess(porticoBinary(), {"help"});
        QCOMPARE(h.exitCode, 0);
        QVERIFY(h.out.contains("serve") && h.out.contains("version"));
        auto hs = runProcess(porticoBinary(), {"help", "serve"});
        QCOMPARE(hs.exitCode, 0);
        QVERIFY(hs.out.contains("--config") && hs.out.contains("--port"));
        auto bad = runProcess(porticoBinary(), {"serve", "--port", "70000"});
        QCOMPARE(bad.exitCode, 2);
        auto unknown = runProcess(porticoBinary(), {"frobnicate"});
        QCOMPARE(unknown.exitCode, 2);
        QVERIFY2(unknown.err.startsWith(
                     "portico: unknown subcommand 'frobnicate'; one of: serve, proxy, cert, bench"),
                 unknown.err.constData());
        // --version and -V as well as `version`.
        for (const char* flag : {"--version", "-V"}) {
            auto r = runProcess(porticoBinary(), {flag});
            QCOMPARE(r.exitCode, 0);
            QCOMPARE(r.out, v.out);
        }
        // help reaches nested subcommands.
        auto nested = runProcess(porticoBinary(), {"help", "har", "export"});
        QCOMPARE(nested.exitCode, 0);
        QVERIFY2(nested.out.contains("Usage: portico har export") && nested.out.contains("--filter"),
                 nested.out.constData());
        for (const QStringList& args : {QStringList{"help", "bogus"}, QStringList{"help", "har", "bogus"}}) {
            auto r = runProcess(porticoBinary(), args);
            QCOMPARE(r.exitCode, 2);
            QVERIFY2(r.err.contains("unknown subcommand 'bogus'"), r.err.constData());
        }
        // A subcommand family with a wrong or missing subcommand: what is wrong, and the choices.
        auto cert = runProcess(porticoBinary(), {"cert", "bogus"});
        QCOMPARE(cert.exitCode, 2);
        QVERIFY2(cert.err.startsWith("portico cert: unknown subcommand 'bogus'; one of: ca, export, install, "
                                     "uninstall\nRun 'portico help cert' for usage."),
                 cert.err.constData());
        auto har = runProcess(porticoBinary(), {"har"});
        QCOMPARE(har.exitCode, 2);
        QVERIFY2(har.err.startsWith("portico har: missing subcommand; one of: export, import"),
                 har.err.constData());
    }

    // Every usage error exits 2 with "portico SUBCOMMAND: what: why" and where to read more;
    // numeric ranges read as people write them; a missing file is said one way everywhere.
    void usageErrorsReadTheSame() {
        QTemporaryDir dir;
        const QString missing = dir.filePath("missing.db");
        const QString url = "http://127.0.0.1:9/";
        struct Case {
            QStringList args;
            QByteArray says;
        };
        const QList<Case> cases = {
            {{"bench", url, "-c", "0"},
             "portico bench: --connections: 0 is out of range (expected 1 to 100000)"},
            {{"bench", url, "-c", "ten"},
             "--connections: 'ten' is not a whole number (expected 1 to 100000)"},
            {{"bench", url, "-n", "0"}, "--requests: 0 is out of range (expected 1 to 1000000000000)"},
            {{"bench", url, "-R", "0"}, "--rate: 0 is out of range (expected 0.001 to 100000000)"},
            {{"bench", url, "--streams", "5000"}, "--streams: 5000 is out of range (expected 1 to 1024)"},
            {{"serve", "--port", "70000"},
             "portico serve: --port: 70000 is out of range (expected 0 to 65535)"},
            {{"serve", "--workers", "0"}, "--workers: 0 is out of range (expected 1 to 256)"},
            {{"replay", sourceDir() + "/README.md", "--timeout", "0"},
             "--timeout: 0 is out of range (expected 1 to 600000)"},
            {{"replay", sourceDir() + "/README.md", "--timeout", "5s"},
             "--timeout: '5s' is not a whole number"},
            {{"serve", "--config", missing}, "--config: " + missing.toUtf8() + ": no such file"},
            {{"serve", dir.filePath("nope")}, dir.filePath("nope").toUtf8() + ": no such folder"},
            {{"replay", missing}, missing.toUtf8() + ": no such file"},
            {{"har", "export", missing, "-"}, missing.toUtf8() + ": no such file"},
            {{"har", "import", missing, dir.filePath("o.db")}, missing.toUtf8() + ": no such file"},
            {{"bench", "--from", missing, url}, "--from: " + missing.toUtf8() + ": no such file"},
            {{"bench", url, "--body", missing}, "--body: " + missing.toUtf8() + ": no such file"},
            {{"serve", "--no-such-flag"}, "portico serve: unexpected argument(s): --no-such-flag"},
        };
        for (const Case& c : cases) {
            auto r = runProcess(porticoBinary(), c.args);
            const QByteArray what = c.args.join(' ').toUtf8() + ": " + r.err;
            QVERIFY2(r.exitCode == 2, what.constData());
            QVERIFY2(r.err.contains(c.says), what.constData());
            QVERIFY2(r.err.contains("Run 'portico help " + c.args.front().toUtf8()), what.constData());
        }
    }

    // On a terminal `serve` prints one line per exchange (time, method, target, status, duration,
    // size) and one per live-reload batch; --quiet turns them off; on a pipe there are none.
    void requestLinesOnATerminal() {
        QTemporaryDir dir;
        writeFile(dir.filePath("index.html"), "<p>hi</p>\n");
        const std::uint16_t port = freePort();
        const QString base = QString("http://127.0.0.1:%1").arg(port);
        auto onTerminal = [&](const QString& extra) {
            QProcess p;
            const QString command = QString("'%1' serve '%2' --host 127.0.0.1 --port %3 %4")
                                        .arg(porticoBinary(), dir.path())
                                        .arg(port)
                                        .arg(extra);
            p.start("script", {"-q", "-e", "-c", command, "/dev/null"});
            QByteArray out;
            const bool ready = QTest::qWaitFor(
                [&] {
                    out += p.readAllStandardOutput();
                    return out.contains("Press Ctrl+C to stop.");
                },
                10000);
            if (ready) {
                curl({base + "/index.html"});
                curl({base + "/missing"});
                rawExchange(port, "GET /\x1b[31m HTTP/1.1\r\nHost: x\r\n\r\n"); // refused: 400
                QTest::qWait(200);
                QFile f(dir.filePath("style.css"));
                if (f.open(QIODevice::WriteOnly)) f.write("p{}");
                f.close();
                QTest::qWaitFor(
                    [&] {
                        out += p.readAllStandardOutput();
                        return out.contains("live reload:");
                    },
                    5000);
            }
            ::kill(static_cast<pid_t>(p.processId()), SIGTERM); // script passes it on to portico
            p.waitForFinished(10000);
            out += p.readAllStandardOutput();
            return out;
        };
        const QByteArray out = onTerminal("");
        static const QRegularExpression line(
            R"(\n\d\d:\d\d:\d\d GET /index\.html 200 \d+(\.\d\d)? ms \d+(\.\d)? (B|KiB)\r?\n)");
        QVERIFY2(line.match(QString::fromUtf8(out)).hasMatch(), out.constData());
        QVERIFY2(out.contains(" GET /missing 404 "), out.constData());
        // A request line with a control byte is refused (400) and its bytes never reach the terminal.
        QVERIFY2(out.contains(" - - 400 "), out.constData());
        QVERIFY2(!out.contains('\x1b'), out.constData());
        QVERIFY2(out.contains(" live reload: /style.css changed; no page is open"), out.constData());

        const QByteArray quiet = onTerminal("--quiet");
        QVERIFY2(quiet.contains("Listening on"), quiet.constData());
        QVERIFY2(!quiet.contains(" GET /index.html ") && !quiet.contains("live reload:"), quiet.constData());

        ServerProcess piped({dir.path()});
        QVERIFY2(piped.waitReady(), piped.output().constData());
        curl({piped.baseUrl() + "/index.html"});
        QCOMPARE(piped.terminate(), 0);
        QVERIFY2(!piped.output().contains(" GET /index.html "), piped.output().constData());
    }

    // --port, --record and the other command-line settings hold across a reload of the file.
    void reloadKeepsCommandLineSettings() {
        QTemporaryDir dir;
        const QString cfg = dir.filePath("portico.yaml");
        auto config = [](const char* body) {
            return QByteArray("listen: [\"127.0.0.1:0\"]\nvhosts:\n  - routes:\n      - path: /v\n        "
                              "respond: {body: ") +
                   body + "}\n";
        };
        writeFile(cfg, config("one"));
        const std::uint16_t port = freePort();
        const QString base = QString("http://127.0.0.1:%1").arg(port);
        ServerProcess s(
            {"--config", cfg, "--host", "127.0.0.1", "--port", QString::number(port), "--server-timing"});
        QVERIFY2(s.waitReady(), s.output().constData());
        QCOMPARE(curl({base + "/v"}), QByteArray("one"));
        QTest::qWait(1100); // a new mtime second
        writeFile(cfg, config("two"));
        QTRY_COMPARE_WITH_TIMEOUT(curl({base + "/v"}), QByteArray("two"), 5000);
        QVERIFY2(!s.output().contains("Listening on http://127.0.0.1:0") &&
                     !s.output().contains("Stopped listening"),
                 s.output().constData());
        QVERIFY2(curl({"-i", base + "/v"}).contains("Server-Timing:"), s.output().constData());
        QVERIFY2(!s.output().contains("take effect after a restart"), s.output().constData());
        QCOMPARE(s.terminate(), 0);
    }

    // Without a display the desktop app says so in one line and how to serve headless (exit 1);
    // Qt's plugin error used to abort the process (SIGABRT, exit 134).
    void noDisplaySaysSoInOneLine() {
        QTemporaryDir home;
        QProcessEnvironment env;
        env.insert("PATH", qEnvironmentVariable("PATH"));
        env.insert("HOME", home.path());
        for (const QStringList& args : {QStringList{}, QStringList{"gui"}}) {
            auto r = runProcessIn(porticoBinary(), args, env, home.path(), 20000);
            QVERIFY2(r.exitCode == 1, (args.join(' ') + ": " + r.err).toUtf8().constData());
            QVERIFY2(r.err.startsWith("portico: no display"), r.err.constData());
            QVERIFY2(r.err.contains("portico serve"), r.err.constData());
            QCOMPARE(r.err.count('\n'), 1);
        }
    }

    void servesAFolderWithoutConfig() {
        QTemporaryDir dir;
        writeFile(dir.filePath("index.html"), "<!doctype html><title>x</title>home\n");
        writeFile(dir.filePath("app.mjs"), "export const x = 1;\n");
        ServerProcess s({dir.path()});
        QVERIFY2(s.waitReady(), s.output().constData());
        QVERIFY(s.output().contains("Listening on http://127.0.0.1:"));
        // Live reload is on by default for a folder: the page carries its script once.
        const QByteArray page = curl({s.baseUrl() + "/"});
        QVERIFY2(page.startsWith("<!doctype html><title>x</title>home\n"), page.constData());
        QCOMPARE(page.count("<script data-portico-live-reload>"), 1);
        QByteArray head = curl({"-I", s.baseUrl() + "/app.mjs"});
        QVERIFY2(head.contains("Content-Type: text/javascript"), head.constData());
        QCOMPARE(s.terminate(), 0);
    }

    void testFlagChecksWithoutServing() {
        QTemporaryDir dir;
        writeFile(dir.filePath("ok.yaml"), "listen: [\"127.0.0.1:0\"]\nvhosts:\n  - routes:\n      - path: "
                                           "/x\n        respond: {body: x}\n");
        auto ok = runProcess(porticoBinary(), {"serve", "--config", dir.filePath("ok.yaml"), "--test"});
        QCOMPARE(ok.exitCode, 0);
        writeFile(
            dir.filePath("bad.yaml"),
            "vhosts:\n  - routes:\n      - path: /x\n        respond: {status: 999}\n      - pathh: /y\n");
        auto bad = runProcess(porticoBinary(), {"serve", "--config", dir.filePath("bad.yaml"), "--test"});
        QCOMPARE(bad.exitCode, 1);
        // Located: file:line:column: path: message — for both errors, not just the first.
        QVERIFY2(QRegularExpression(QRegularExpression::escape(dir.filePath("bad.yaml")) +
                                    ":4:\\d+: vhosts\\[0\\]\\.routes\\[0\\]")
                     .match(QString::fromUtf8(bad.err))
                     .hasMatch(),
                 bad.err.constData());
        QVERIFY2(bad.err.contains(":5:"), bad.err.constData());
    }

    void reloadsValidConfigAndKeepsOldOnError() {
        QTemporaryDir dir;
        const QString cfg = dir.filePath("portico.yaml");
        auto config = [](const char* body) {
            return QByteArray("listen: [\"127.0.0.1:0\"]\nvhosts:\n  - routes:\n      - path: /v\n        "
                              "respond: {body: ") +
                   body + "}\n";
        };
        writeFile(cfg, config("one"));
        ServerProcess s({"--config", cfg});
        QVERIFY2(s.waitReady(), s.output().constData());
        QCOMPARE(curl({s.baseUrl() + "/v"}), QByteArray("one"));
        QTest::qWait(1100); // a new mtime second for filesystems with coarse timestamps
        writeFile(cfg, config("two"));
        QTRY_COMPARE_WITH_TIMEOUT(curl({s.baseUrl() + "/v"}), QByteArray("two"), 5000);
        QTRY_VERIFY_WITH_TIMEOUT(s.output().contains("reloaded"), 3000);
        QTest::qWait(1100);
        writeFile(cfg, "vhosts:\n  - routes:\n      - path: /v\n        respond: {bogus: 1}\n");
        QTRY_VERIFY_WITH_TIMEOUT(s.output().contains("not reloaded"), 5000);
        QVERIFY2(s.output().contains("portico.yaml:4:"), s.output().constData());
        QCOMPARE(curl({s.baseUrl() + "/v"}), QByteArray("two")); // the old config keeps serving
        QCOMPARE(s.terminate(), 0);
    }

    // A reload that changes the listeners says the new URLs (and the ones that went away).
    void reloadSaysNewListeners() {
        QTemporaryDir dir;
        const QString cfg = dir.filePath("portico.yaml");
        const QByteArray vhosts = "vhosts:\n  - routes:\n      - path: /v\n        respond: {body: v}\n";
        writeFile(cfg, "listen: [\"127.0.0.1:0\"]\n" + vhosts);
        ServerProcess s({"--config", cfg});
        QVERIFY2(s.waitReady(), s.output().constData());
        const std::uint16_t added = freePort();
        QTest::qWait(1100); // a new mtime second
        writeFile(cfg, QByteArray("listen: [\"[::1]:") + QByteArray::number(added) + "\"]\n" + vhosts);
        const QByteArray url = "Listening on http://[::1]:" + QByteArray::number(added) + "/";
        QTRY_VERIFY2_WITH_TIMEOUT(s.output().contains(url), s.output().constData(), 5000);
        QVERIFY2(s.output().contains("Stopped listening on http://127.0.0.1:" + QByteArray::number(s.port()) +
                                     "/"),
                 s.output().constData());
        QCOMPARE(curl({QString("http://[::1]:%1/v").arg(added)}), QByteArray("v"));
        QCOMPARE(s.terminate(), 0);
    }

    // `portico serve DIR` without --port moves on from a taken 8080 and says so.
    void portFallbackIsSaid() {
        int blocker = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(8080);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        // Taken here, or already taken by something else: either way 8080 is in use.
        if (::bind(blocker, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) ::listen(blocker, 1);
        QTemporaryDir dir;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        auto s = ServerProcess::exactly({"serve", dir.path(), "--host", "127.0.0.1"}, env, dir.path());
        QVERIFY2(s->waitReady(), s->output().constData());
        QVERIFY2(s->output().contains("Port 8080 is in use"), s->output().constData());
        QVERIFY(s->port() != 8080);
        QVERIFY2(s->output().contains("serving on " + QByteArray::number(s->port()) + " instead"),
                 s->output().constData());
        ::close(blocker);
        QCOMPARE(s->terminate(), 0);
    }

    // `--host 0.0.0.0` prints the machine's own URLs, not http://0.0.0.0:N/ alone. Run in a network
    // namespace of its own, where the only interface is loopback: nothing is exposed.
    void wildcardHostPrintsReachableUrls() {
        if (QProcess::execute("unshare", {"--net", "true"}) != 0) QSKIP("needs root for a network namespace");
        QTemporaryDir dir;
        const QString script = "ip link set lo up || exit 9\n"
                               "timeout -s TERM 2 \"$0\" serve \"$1\" --host 0.0.0.0 --port 0 2>&1\n";
        auto r = runProcess("unshare", {"--net", "sh", "-c", script, porticoBinary(), dir.path()});
        static const QRegularExpression listening(R"(Listening on http://0\.0\.0\.0:(\d+)/)");
        const auto m = listening.match(QString::fromUtf8(r.out));
        QVERIFY2(m.hasMatch(), r.out.constData());
        QVERIFY2(r.out.contains("  reachable at http://127.0.0.1:" + m.captured(1).toUtf8() + "/"),
                 r.out.constData());
        QVERIFY2(r.out.contains("Warning: http://0.0.0.0:"), r.out.constData());
    }

    void sigtermDrainsInFlightRequests() {
        QTemporaryDir dir;
        writeFile(dir.filePath("portico.yaml"),
                  "listen: [\"127.0.0.1:0\"]\nvhosts:\n  - routes:\n      - path: /slow\n        respond: "
                  "{body: done, latency: 800ms}\n");
        ServerProcess s({"--config", dir.filePath("portico.yaml")});
        QVERIFY2(s.waitReady(), s.output().constData());
        QProcess client;
        client.start("curl", {"-s", "-o", "-", "-w", "%{http_code}", s.baseUrl() + "/slow"});
        QVERIFY(client.waitForStarted());
        QTest::qWait(300); // the request is in flight now
        QElapsedTimer t;
        t.start();
        QCOMPARE(s.terminate(), 0);
        QVERIFY(client.waitForFinished(5000));
        QCOMPARE(client.readAllStandardOutput(), QByteArray("done200"));
        QVERIFY(t.elapsed() < 4000);
        // After the drain nothing listens any more.
        auto after = runProcess("curl", {"-s", "--max-time", "2", s.baseUrl() + "/slow"});
        QVERIFY(after.exitCode != 0);
    }

    // The desktop app catches SIGTERM before its server answers, not only once its window is up:
    // the server listens before the window is built (seconds under ASan), and a SIGTERM in between
    // used to kill the app by the signal's default action, its settings unwritten. Signalled the
    // moment its port accepts a connection, it exits 0 and remembers the project.
    void guiExitsZeroOnSigtermDuringStartup() {
        QTemporaryDir dir;
        const std::uint16_t port = freePort();
        writeFile(
            dir.filePath("site/portico.yaml"),
            QString(
                "listen: [\"127.0.0.1:%1\"]\nvhosts:\n  - routes:\n      - {path: /, respond: {body: up}}\n")
                .arg(port)
                .toUtf8());
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("QT_QPA_PLATFORM", "offscreen");
        env.insert("HOME", dir.path());
        env.insert("XDG_CONFIG_HOME", dir.filePath("config"));
        env.insert("XDG_DATA_HOME", dir.filePath("data"));
        env.insert("XDG_CACHE_HOME", dir.filePath("cache"));
        env.insert("XDG_RUNTIME_DIR", dir.path());
        auto s = ServerProcess::exactly({"gui", dir.filePath("site/portico.yaml")}, env, dir.path());
        const qint64 pid = s->pid();
        QVERIFY(pid > 0);
        auto accepts = [port] {
            const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            sockaddr_in addr{};
            addr.sin_family = AF_INET;
            addr.sin_port = htons(port);
            addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
            ::close(fd);
            return ok;
        };
        // Bit 15 (SIGTERM) of SigCgt in /proc/PID/status: the process has a handler for it.
        auto catchesSigterm = [pid] {
            QFile status(QString("/proc/%1/status").arg(pid));
            if (!status.open(QIODevice::ReadOnly)) return false;
            for (const QByteArray& line : status.readAll().split('\n'))
                if (line.startsWith("SigCgt:"))
                    return ((line.mid(7).trimmed().toULongLong(nullptr, 16) >> (SIGTERM - 1)) & 1) != 0;
            return false;
        };
        QElapsedTimer t;
        t.start();
        while (!accepts() && s->pid() > 0 && t.elapsed() < 60000)
            QThread::usleep(500);
        const bool handled = catchesSigterm();
        QVERIFY2(accepts(), s->output().constData());
        QVERIFY2(handled, "the server answered before the app caught SIGTERM");
        const int code = s->terminate(kSanitized ? 30000 : 10000);
        QVERIFY2(code == 0,
                 (QByteArray("exit ") + QByteArray::number(code) + "\n" + s->output()).constData());
        QFile settings(dir.filePath("config/Portico/Portico.conf"));
        QVERIFY2(settings.open(QIODevice::ReadOnly) && settings.readAll().contains("lastProject"),
                 "~/.config/Portico/Portico.conf has no lastProject");
    }

    // Both sides of limits.drain_timeout (1 s here): on SIGTERM an exchange that needs ~300 ms more
    // finishes; one that needs 6 s more is cut when the drain time is up, and the server exits then
    // instead of waiting for it.
    void drainTimeoutBothSides() {
        QTemporaryDir dir;
        writeFile(dir.filePath("portico.yaml"),
                  "listen: [\"127.0.0.1:0\"]\nlimits: {drain_timeout: 1s}\n"
                  "vhosts:\n  - routes:\n"
                  "      - path: /quick\n        respond: {body: quick, latency: 600ms}\n"
                  "      - path: /long\n        respond: {body: long, latency: 6s}\n");
        ServerProcess s({"--config", dir.filePath("portico.yaml")});
        QVERIFY2(s.waitReady(), s.output().constData());
        QProcess quick, slow;
        quick.start("curl",
                    {"-s", "--max-time", "20", "-o", "-", "-w", "%{http_code}", s.baseUrl() + "/quick"});
        slow.start("curl",
                   {"-s", "--max-time", "20", "-o", "-", "-w", "%{http_code}", s.baseUrl() + "/long"});
        QVERIFY(quick.waitForStarted() && slow.waitForStarted());
        QTest::qWait(300); // both requests are in flight now
        QElapsedTimer t;
        t.start();
        QCOMPARE(s.terminate(), 0);
        const qint64 stopped = t.elapsed();
        QVERIFY(quick.waitForFinished(5000) && slow.waitForFinished(5000));
        QCOMPARE(quick.readAllStandardOutput(), QByteArray("quick200"));
        QCOMPARE(slow.readAllStandardOutput(), QByteArray("000")); // cut: no response at all
        QVERIFY(slow.exitCode() != 0);
        // The server waited for the drain time, not for the 6 s exchange.
        QVERIFY2(stopped >= 900 && stopped < 4000, qPrintable(QString::number(stopped)));
    }

    void listensOnIpv6Loopback() {
        QTemporaryDir dir;
        writeFile(dir.filePath("a.txt"), "six\n");
        ServerProcess s({dir.path(), "--host", "::1", "--port", "0"});
        QVERIFY2(s.waitReady(), s.output().constData());
        QVERIFY(s.output().contains("http://[::1]:"));
        QCOMPARE(curl({"-g", QStringLiteral("http://[::1]:%1/a.txt").arg(s.port())}), QByteArray("six\n"));
    }

    // What the CLI and the GUI warn about: an address other machines can reach. (Tests never
    // bind one, so this checks the classification; loopback listeners print no warning.)
    void nonLoopbackAddressesAreTold() {
        for (const char* host : {"127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"})
            QVERIFY2((portico::engine::Endpoint{host, 80, false}.loopback()), host);
        for (const char* host :
             {"0.0.0.0", "::", "192.168.1.10", "10.0.0.1", "::ffff:192.168.1.1", "fe80::1", "x"})
            QVERIFY2((!portico::engine::Endpoint{host, 80, false}.loopback()), host);
        QTemporaryDir dir;
        ServerProcess s({dir.path(), "--port", "0"});
        QVERIFY2(s.waitReady(), s.output().constData());
        QVERIFY(!s.output().contains("Warning"));
    }

    void accessLogFormats() {
        QTemporaryDir dir;
        writeFile(dir.filePath("site/a.txt"), "abc\n");
        writeFile(dir.filePath("portico.yaml"),
                  "listen: [\"127.0.0.1:0\"]\naccess_log: {format: json, path: "
                  "./access.jsonl}\nvhosts:\n  - root: ./site\n"
                  "    routes:\n      - path: /slow\n        respond: {body: s, latency: 300ms}\n");
        {
            ServerProcess s({"--config", dir.filePath("portico.yaml")});
            QVERIFY2(s.waitReady(), s.output().constData());
            curl({"-A", "ua/1 \"quoted\"", s.baseUrl() + "/a.txt"});
            curl({s.baseUrl() + "/missing"});
            curl({s.baseUrl() + "/slow"});
            rawExchange(s.port(), "GARBAGE\r\n\r\n"); // a parse error is logged too
            QCOMPARE(s.terminate(), 0);
            QVERIFY2(s.output().contains("stopped after 3 request(s), 1 malformed"), s.output().constData());
        }
        QFile json(dir.filePath("access.jsonl"));
        QVERIFY(json.open(QIODevice::ReadOnly));
        QList<QByteArray> lines = json.readAll().trimmed().split('\n');
        QCOMPARE(lines.size(), 4);
        QJsonParseError err;
        QJsonObject first = QJsonDocument::fromJson(lines[0], &err).object();
        QCOMPARE(err.error, QJsonParseError::NoError);
        QCOMPARE(first["method"].toString(), QString("GET"));
        QCOMPARE(first["target"].toString(), QString("/a.txt"));
        QCOMPARE(first["status"].toInt(), 200);
        QCOMPARE(first["bytes"].toInt(), 4);
        QCOMPARE(first["user_agent"].toString(), QString("ua/1 \"quoted\""));
        QCOMPARE(QJsonDocument::fromJson(lines[1]).object()["status"].toInt(), 404);
        // duration_ns is measured, not the worker's coarse tick: 300 ms of latency shows as such.
        QJsonObject slow = QJsonDocument::fromJson(lines[2]).object();
        QCOMPARE(slow["target"].toString(), QString("/slow"));
        QVERIFY2(slow["duration_ns"].toDouble() >= 300e6 && slow["duration_ns"].toDouble() < 5e9,
                 lines[2].constData());
        QJsonObject bad = QJsonDocument::fromJson(lines[3]).object();
        QCOMPARE(bad["status"].toInt(), 400);
        QCOMPARE(bad["method"].toString(), QString("-"));

        // Combined Log Format through the command line.
        const QString clf = dir.filePath("access.log");
        {
            ServerProcess s({dir.filePath("site"), "--access-log", clf});
            QVERIFY2(s.waitReady(), s.output().constData());
            curl({"-e", "http://ref/", "-A", "agent", s.baseUrl() + "/a.txt"});
            QCOMPARE(s.terminate(), 0);
        }
        QFile log(clf);
        QVERIFY(log.open(QIODevice::ReadOnly));
        const QString line = QString::fromUtf8(log.readAll().trimmed());
        static const QRegularExpression clfLine(
            QStringLiteral("^127\\.0\\.0\\.1 - - \\[\\d{2}/\\w{3}/\\d{4}:\\d{2}:\\d{2}:\\d{2} \\+0000\\] "
                           "\"GET /a\\.txt HTTP/1\\.1\" 200 4 \"http://ref/\" \"agent\"$"));
        QVERIFY2(clfLine.match(line).hasMatch(), qPrintable(line));

        // `format: dev`, the terminal's short line, into a file.
        writeFile(dir.filePath("dev.yaml"),
                  "listen: [\"127.0.0.1:0\"]\naccess_log: {format: dev, path: ./dev.log}\n"
                  "vhosts:\n  - root: ./site\n");
        {
            ServerProcess s({"--config", dir.filePath("dev.yaml")});
            QVERIFY2(s.waitReady(), s.output().constData());
            curl({s.baseUrl() + "/a.txt"});
            QCOMPARE(s.terminate(), 0);
        }
        // The time as the dev format writes it: 2 decimals under 10 ms, whole ms under 1 s, else
        // seconds (a sanitizer build can take over 10 ms for this request).
        QFile dev(dir.filePath("dev.log"));
        QVERIFY(dev.open(QIODevice::ReadOnly));
        const QString devLine = QString::fromUtf8(dev.readAll().trimmed());
        static const QRegularExpression devRe(QStringLiteral(
            "^\\d{2}:\\d{2}:\\d{2} GET /a\\.txt 200 (\\d\\.\\d\\d ms|\\d{2,3} ms|\\d+\\.\\d\\d s) 4 B$"));
        QVERIFY2(devRe.match(devLine).hasMatch(), qPrintable(devLine));
    }

    // SO_REUSEPORT must not let a second server join a port that is already served.
    void refusesAPortAnotherServerHolds() {
        QTemporaryDir dir;
        writeFile(dir.filePath("a.txt"), "first\n");
        ServerProcess first({dir.path()});
        QVERIFY2(first.waitReady(), first.output().constData());
        auto second = runProcess(porticoBinary(),
                                 {"serve", dir.path(), "--port", QString::number(first.port())}, {}, 10000);
        QCOMPARE(second.exitCode, 1);
        QVERIFY2(second.err.contains("Address already in use"), second.err.constData());
        QCOMPARE(curl({first.baseUrl() + "/a.txt"}), QByteArray("first\n"));
    }

    void reloadSaysWhatNeedsARestart() {
        QTemporaryDir dir;
        const QString cfg = dir.filePath("portico.yaml");
        writeFile(cfg, "workers: 1\nlisten: [\"127.0.0.1:0\"]\nvhosts:\n  - routes:\n      - path: /v\n      "
                       "  respond: {body: one}\n");
        ServerProcess s({"--config", cfg});
        QVERIFY2(s.waitReady(), s.output().constData());
        QTest::qWait(1100);
        writeFile(cfg, "workers: 2\nlisten: [\"127.0.0.1:0\"]\nvhosts:\n  - routes:\n      - path: /v\n      "
                       "  respond: {body: two}\n");
        QTRY_COMPARE_WITH_TIMEOUT(curl({s.baseUrl() + "/v"}), QByteArray("two"), 5000);
        QTRY_VERIFY_WITH_TIMEOUT(s.output().contains("'workers' changes take effect after a restart"), 3000);
    }

    void demoSiteServes() {
        ServerProcess s({"--config", sourceDir() + "/resources/demo/portico.yaml", "--port", "0"});
        QVERIFY2(s.waitReady(), s.output().constData());
        QVERIFY(curl({s.baseUrl() + "/"}).contains("Portico is serving"));
        QCOMPARE(curl({s.baseUrl() + "/api/hello/ada"}), QByteArray(R"({"hello":"ada","from":"Portico"})"));
        QVERIFY(curl({s.baseUrl() + "/api/todos"}).contains("Serve a folder"));
        QVERIFY(curl({"-I", s.baseUrl() + "/js/app.mjs"}).contains("text/javascript"));
        QVERIFY(curl({"-I", s.baseUrl() + "/images/logo.svg"}).contains("image/svg+xml"));
        QByteArray missing = curl({"-i", s.baseUrl() + "/nope"});
        QVERIFY(missing.startsWith("HTTP/1.1 404"));
        QVERIFY(missing.contains("nothing here")); // the custom error page
    }
};

QTEST_GUILESS_MAIN(TestServeCli)
#include "tst_serve_cli.moc"
