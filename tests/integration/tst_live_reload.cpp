// Live reload over the wire: script injection into static HTML (case LRL-01: commented and scripted
// `</body>`, no `<body>`), consistent Content-Length / ETag / gzip / HEAD (precompressed siblings
// unused), the off switch (CLI and per vhost), the reserved endpoint's Host/Origin checks (cases
// HST-01, HST-02) and protocol errors (cases WS-01, WS-02), debounced change notifications from the
// watcher, and a headless Chromium that reloads on an HTML edit and swaps CSS without reloading.
#include "test_support.h"

#include <QDateTime>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

#include <zlib.h>

using namespace portico::test;

namespace {

const QByteArray kMarker = "<script data-portico-live-reload>";

struct Reply {
    QByteArray head;
    QByteArray body;
};

// One request on its own connection; the body is everything after the head (Connection: close).
Reply get(quint16 port, const QByteArray& target, const QByteArray& extra = {},
          const QByteArray& method = "GET", const QByteArray& host = "127.0.0.1") {
    auto r = rawExchange(port, method + " " + target + " HTTP/1.1\r\nHost: " + host + ":" +
                                   QByteArray::number(port) + "\r\nConnection: close\r\n" + extra + "\r\n");
    int end = r.bytes.indexOf("\r\n\r\n");
    return {r.bytes.left(end + 2), end < 0 ? QByteArray() : r.bytes.mid(end + 4)};
}

QByteArray field(const QByteArray& head, const QByteArray& name) {
    for (const QByteArray& line : head.split('\n'))
        if (line.toLower().startsWith(name.toLower() + ":")) return line.mid(name.size() + 1).trimmed();
    return {};
}

QByteArray gunzip(const QByteArray& in) {
    z_stream z{};
    if (inflateInit2(&z, 16 + 15) != Z_OK) return {};
    QByteArray out(1 << 20, '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    int rc = inflate(&z, Z_FINISH);
    out.resize(static_cast<int>(z.total_out));
    inflateEnd(&z);
    return rc == Z_STREAM_END ? out : QByteArray();
}

void writeFile(const QString& path, const QByteArray& bytes) {
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(bytes);
}

} // namespace

class TestLiveReload : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    std::unique_ptr<ServerProcess> server_;
    QString root_;
    QString log_;

    // ../shared/cases/tools/wsprobe.py MODE against the reserved endpoint (`env` may set PORT).
    QByteArray probe(const QStringList& env, const QString& mode = "handshake") {
        QProcess p;
        auto e = QProcessEnvironment::systemEnvironment();
        e.insert("PORT", QString::number(server_->port()));
        e.insert("PATH_", "/__portico/livereload");
        for (const QString& kv : env)
            e.insert(kv.section('=', 0, 0), kv.section('=', 1));
        p.setProcessEnvironment(e);
        p.start(debianPython(), {sourceDir() + "/tests/support/cases/wsprobe.py", mode});
        if (!p.waitForFinished(20000)) p.kill();
        return p.readAllStandardOutput().trimmed();
    }

    QByteArray accessLog() {
        QFile f(log_);
        return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
    }

    // Waits (bounded) until the access log contains `needle`.
    bool waitLog(const QByteArray& needle, int timeoutMs = 30000) {
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < timeoutMs) {
            if (accessLog().contains(needle)) return true;
            QTest::qWait(100);
        }
        return false;
    }

private slots:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        root_ = tmp_.filePath("root");
        // LRL-01 fixtures (../shared/cases/README.md).
        writeFile(root_ + "/nobody.html", "<!doctype html><title>t</title><h1>no body tag</h1>\n");
        writeFile(
            root_ + "/tricky.html",
            "<!doctype html>\n<!-- <body class=\"old\"> -->\n<html><head><script>/* see </body> */</script>"
            "</head>\n<body><p>x</p></body></html>\n");
        writeFile(root_ + "/withhtml.html", "<p>a</p><style>/* </html> */</style></html>\n");
        writeFile(root_ + "/a.txt", "hello\n");
        QByteArray big = "<!doctype html><body>";
        for (int i = 0; i < 300; ++i)
            big += "<p>paragraph " + QByteArray::number(i) + "</p>\n";
        big += "</body>\n";
        writeFile(root_ + "/big.html", big);
        // A precompressed sibling holds the file without the script.
        writeFile(root_ + "/pre.html", big);
        QCOMPARE(runProcess("gzip", {"-k", "-n", root_ + "/pre.html"}).exitCode, 0);
        writeFile(root_ + "/sub/keep.txt", "x\n");
        log_ = tmp_.filePath("access.log");
        server_ = std::make_unique<ServerProcess>(QStringList{root_, "--access-log", log_});
        QVERIFY2(server_->waitReady(), server_->output().constData());
    }

    void injection_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QByteArray>("before");
        QTest::addColumn<QByteArray>("after");
        QTest::newRow("tricky: real </body>")
            << "tricky.html" << QByteArray("<body><p>x</p>") << QByteArray("</body></html>\n");
        QTest::newRow("no <body>: at the end")
            << "nobody.html" << QByteArray("<h1>no body tag</h1>\n") << QByteArray();
        QTest::newRow("</html> outside the style")
            << "withhtml.html" << QByteArray("*/</style>") << QByteArray("</html>\n");
    }
    void injection() {
        QFETCH(QString, file);
        QFETCH(QByteArray, before);
        QFETCH(QByteArray, after);
        QFile f(root_ + "/" + file);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray original = f.readAll();
        Reply r = get(server_->port(), "/" + file.toUtf8());
        QVERIFY2(r.head.startsWith("HTTP/1.1 200 "), r.head.constData());
        QCOMPARE(r.body.count(kMarker), 1);
        QCOMPARE(field(r.head, "Content-Length").toInt(), r.body.size());
        const int at = r.body.indexOf(kMarker);
        QVERIFY2(r.body.left(at).endsWith(before), r.body.constData());
        const int end = r.body.indexOf("</script>", at) + 9;
        QCOMPARE(r.body.mid(end), after.isEmpty() ? QByteArray("\n") : "\n" + after);
        // Removing the snippet gives the file back byte for byte.
        QCOMPARE(r.body.left(at) + r.body.mid(end + 1), original);
    }

    void representationIsConsistent() {
        const quint16 port = server_->port();
        Reply g = get(port, "/big.html");
        Reply h = get(port, "/big.html", {}, "HEAD");
        QVERIFY(g.head.startsWith("HTTP/1.1 200 ") && h.head.startsWith("HTTP/1.1 200 "));
        QVERIFY2(field(g.head, "ETag").endsWith("-lr\""), g.head.constData());
        QCOMPARE(field(h.head, "ETag"), field(g.head, "ETag"));
        QCOMPARE(field(h.head, "Content-Length"), field(g.head, "Content-Length"));
        QCOMPARE(field(g.head, "Content-Length").toInt(), g.body.size());
        QVERIFY(h.body.isEmpty());
        // gzip is made from the injected bytes, with its own ETag.
        Reply z = get(port, "/big.html", "Accept-Encoding: gzip\r\n");
        QCOMPARE(field(z.head, "Content-Encoding"), QByteArray("gzip"));
        QCOMPARE(field(z.head, "ETag"), field(g.head, "ETag").chopped(1) + "-gz\"");
        QCOMPARE(gunzip(z.body), g.body);
        // Conditional requests use the injected representation's validator.
        Reply c = get(port, "/big.html", "If-None-Match: " + field(g.head, "ETag") + "\r\n");
        QVERIFY2(c.head.startsWith("HTTP/1.1 304 "), c.head.constData());
        // Ranges are ranges of what GET sends.
        Reply part = get(port, "/big.html", "Range: bytes=-20\r\n");
        QVERIFY(part.head.startsWith("HTTP/1.1 206 "));
        QCOMPARE(part.body, g.body.right(20));
        // Non-HTML is untouched.
        QCOMPARE(get(port, "/a.txt").body, QByteArray("hello\n"));
        // The directory listing gets the script too.
        QCOMPARE(get(port, "/sub/").body.count(kMarker), 1);
    }

    // The injected page is compressed from its own bytes, never taken from a .gz sibling made from
    // the file (which would carry no script).
    void precompressedSiblingIsNotUsed() {
        const quint16 port = server_->port();
        QVERIFY(QFile::exists(root_ + "/pre.html.gz"));
        Reply g = get(port, "/pre.html");
        QCOMPARE(g.body.count(kMarker), 1);
        Reply z = get(port, "/pre.html", "Accept-Encoding: gzip\r\n");
        QVERIFY2(z.head.startsWith("HTTP/1.1 200 "), z.head.constData());
        QCOMPARE(field(z.head, "Content-Encoding"), QByteArray("gzip"));
        QCOMPARE(field(z.head, "Content-Length").toInt(), z.body.size());
        QCOMPARE(gunzip(z.body), g.body);
        QCOMPARE(field(z.head, "ETag"), field(g.head, "ETag").chopped(1) + "-gz\"");
    }

    void switchedOff() {
        ServerProcess off({root_, "--no-live-reload"});
        QVERIFY2(off.waitReady(), off.output().constData());
        Reply r = get(off.port(), "/tricky.html");
        QVERIFY(r.head.startsWith("HTTP/1.1 200 "));
        QCOMPARE(r.body.count(kMarker), 0);
        QVERIFY(!field(r.head, "ETag").endsWith("-lr\""));
        Reply ws = get(off.port(), "/__portico/livereload");
        QVERIFY2(ws.head.startsWith("HTTP/1.1 404 "), ws.head.constData()); // no reserved endpoint either
    }

    // `live_reload` is a per-vhost switch in the config: one vhost gets the script (its root and its
    // static routes) and the reserved endpoint, the other serves the same files untouched.
    void perVhostSwitch() {
        const QString assets = tmp_.filePath("assets");
        writeFile(assets + "/page.html", "<!doctype html><body><p>asset</p></body>\n");
        const QString yaml = tmp_.filePath("vhosts.yaml");
        writeFile(yaml, QStringLiteral("listen: [127.0.0.1:0]\n"
                                       "vhosts:\n"
                                       "  - names: [on.localhost]\n"
                                       "    root: %1\n"
                                       "    live_reload: true\n"
                                       "    routes:\n"
                                       "      - {path: /assets/*, static: {root: %2}}\n"
                                       "  - names: [off.localhost]\n"
                                       "    default: true\n"
                                       "    root: %1\n"
                                       "    live_reload: false\n"
                                       "    routes:\n"
                                       "      - {path: /assets/*, static: {root: %2}}\n")
                            .arg(root_, assets)
                            .toUtf8());
        ServerProcess server({"--config", yaml});
        QVERIFY2(server.waitReady(), server.output().constData());
        const quint16 port = server.port();
        for (const QByteArray& target : {QByteArray("/tricky.html"), QByteArray("/assets/page.html")}) {
            Reply on = get(port, target, {}, "GET", "on.localhost");
            QVERIFY2(on.head.startsWith("HTTP/1.1 200 "), on.head.constData());
            QCOMPARE(on.body.count(kMarker), 1);
            QVERIFY(field(on.head, "ETag").endsWith("-lr\""));
            Reply off = get(port, target, {}, "GET", "off.localhost");
            QVERIFY2(off.head.startsWith("HTTP/1.1 200 "), off.head.constData());
            QCOMPARE(off.body.count(kMarker), 0);
            QVERIFY(!field(off.head, "ETag").endsWith("-lr\""));
        }
        const QString p = QString::number(port);
        QCOMPARE(probe({"PORT=" + p, "HOSTHDR=on.localhost:" + p}),
                 QByteArray("handshake: HTTP/1.1 101 Switching Protocols"));
        QVERIFY(
            get(port, "/__portico/livereload", {}, "GET", "off.localhost").head.startsWith("HTTP/1.1 404 "));
        QCOMPARE(server.terminate(), 0);
    }

    // Cases WS-01 and WS-02 (../shared/cases/README.md) as written: against the live-reload socket.
    void protocolErrorsOnReservedEndpoint_data() {
        QTest::addColumn<QString>("mode");
        QTest::addColumn<QByteArray>("expected");
        QTest::newRow("unmasked") << "unmasked" << QByteArray("recv CLOSE code=1002");
        QTest::newRow("bad-utf8") << "bad-utf8" << QByteArray("recv CLOSE code=1007");
        QTest::newRow("bad-utf8-frag") << "bad-utf8-frag" << QByteArray("recv CLOSE code=1007");
        QTest::newRow("close-bad-utf8") << "close-bad-utf8" << QByteArray("recv CLOSE code=1007");
        QTest::newRow("close-1005") << "close-1005" << QByteArray("recv CLOSE code=1002");
        QTest::newRow("close-1byte") << "close-1byte" << QByteArray("recv CLOSE code=1002");
        QTest::newRow("rsv1") << "rsv1" << QByteArray("recv CLOSE code=1002");
        QTest::newRow("big-ping") << "big-ping" << QByteArray("recv CLOSE code=1002");
        QTest::newRow("frag-ping") << "frag-ping" << QByteArray("recv CLOSE code=1002");
    }
    void protocolErrorsOnReservedEndpoint() {
        QFETCH(QString, mode);
        QFETCH(QByteArray, expected);
        QByteArray out = probe({}, mode);
        QVERIFY2(out.startsWith("handshake: HTTP/1.1 101 "), out.constData());
        QVERIFY2(out.contains(expected), out.constData());
        // The Close frame first, then the server closes TCP.
        QVERIFY2(out.indexOf(expected) < out.indexOf("end: server closed the connection"), out.constData());
        QCOMPARE(out.count("recv "), 1);
    }

    // HST-01 / HST-02 on the reserved endpoint.
    void endpointChecksHostAndOrigin_data() {
        QTest::addColumn<QStringList>("env");
        QTest::addColumn<QByteArray>("status");
        const QString p = ":%1";
        QTest::newRow("no Origin") << QStringList{} << QByteArray("101");
        QTest::newRow("foreign Origin") << QStringList{"ORIGIN=http://evil.example"} << QByteArray("403");
        QTest::newRow("localhost Origin, same port")
            << QStringList{"ORIGIN=http://localhost" + p} << QByteArray("101");
        QTest::newRow("https Origin") << QStringList{"ORIGIN=https://127.0.0.1" + p} << QByteArray("403");
        QTest::newRow("other port Origin") << QStringList{"ORIGIN=http://127.0.0.1:1"} << QByteArray("403");
        // A foreign address with this server's port is another machine's page, not ours.
        QTest::newRow("foreign IPv4 Origin, same port")
            << QStringList{"ORIGIN=http://203.0.113.7" + p} << QByteArray("403");
        QTest::newRow("foreign IPv6 Origin, same port")
            << QStringList{"ORIGIN=http://[2001:db8::1]" + p} << QByteArray("403");
        QTest::newRow("loopback IPv4 Origin, same port")
            << QStringList{"ORIGIN=http://127.0.0.1" + p} << QByteArray("101");
        QTest::newRow("loopback IPv6 Origin, same port")
            << QStringList{"ORIGIN=http://[::1]" + p} << QByteArray("101");
        QTest::newRow("Host evil.example") << QStringList{"HOSTHDR=evil.example" + p} << QByteArray("403");
        QTest::newRow("Host localhost.evil.example")
            << QStringList{"HOSTHDR=localhost.evil.example" + p} << QByteArray("403");
        QTest::newRow("Host 127.0.0.1.nip.io")
            << QStringList{"HOSTHDR=127.0.0.1.nip.io" + p} << QByteArray("403");
        QTest::newRow("Host LOCALHOST") << QStringList{"HOSTHDR=LOCALHOST" + p} << QByteArray("101");
        QTest::newRow("Host app.localhost") << QStringList{"HOSTHDR=app.localhost" + p} << QByteArray("101");
        QTest::newRow("Host [::1]") << QStringList{"HOSTHDR=[::1]" + p} << QByteArray("101");
    }
    void endpointChecksHostAndOrigin() {
        QFETCH(QStringList, env);
        QFETCH(QByteArray, status);
        for (QString& e : env)
            if (e.contains("%1")) e = e.arg(server_->port());
        QByteArray out = probe(env);
        QVERIFY2(out.startsWith("handshake: HTTP/1.1 " + status + " "), out.constData());
    }

    // Starts a client on the reserved endpoint that prints the next two messages; waits until it
    // is connected (its output so far in `out`).
    void startListener(QProcess& p, QByteArray& out) {
        auto env = QProcessEnvironment::systemEnvironment();
        env.insert("PORT", QString::number(server_->port()));
        p.setProcessEnvironment(env);
        p.start(debianPython(),
                {sourceDir() + "/tests/integration/ws_client.py", "listen", "/__portico/livereload"});
        QVERIFY(p.waitForStarted());
        for (int i = 0; i < 100 && !out.contains("ready"); ++i) {
            p.waitForReadyRead(100);
            out += p.readAllStandardOutput();
        }
        QVERIFY2(out.contains("ready"), out + p.readAllStandardError());
    }

    void changesAreAnnounced() {
        QProcess p;
        QByteArray out;
        startListener(p, out);
        if (QTest::currentTestFailed()) return;
        writeFile(root_ + "/theme.css", "p { color: red }\n");
        for (int i = 0; i < 100 && !out.contains("\n{"); ++i) {
            p.waitForReadyRead(100);
            out += p.readAllStandardOutput();
        }
        QVERIFY2(out.contains("{\"type\":\"css\",\"paths\":[\"/theme.css\"]}"), out.constData());
        writeFile(root_ + "/sub/new.js", "1\n");
        QVERIFY(p.waitForFinished(15000));
        out += p.readAllStandardOutput();
        QVERIFY2(out.contains("{\"type\":\"reload\",\"paths\":[\"/sub/new.js\"]}"), out.constData());
    }

    // Changes are debounced (100 ms of quiet): files written together arrive as one message that
    // names them all; one file that is no stylesheet among them makes it a reload.
    void burstIsOneMessage() {
        QProcess p;
        QByteArray out;
        startListener(p, out);
        if (QTest::currentTestFailed()) return;
        for (const char* name : {"/b1.css", "/b2.css", "/b3.css"}) {
            writeFile(root_ + name, "p { color: blue }\n");
            QThread::msleep(20); // well inside the quiet period; a watcher without one reports each
        }
        for (int i = 0; i < 100 && out.count('\n') < 2; ++i) {
            p.waitForReadyRead(100);
            out += p.readAllStandardOutput();
        }
        QVERIFY2(out.endsWith("\n{\"type\":\"css\",\"paths\":[\"/b1.css\",\"/b2.css\",\"/b3.css\"]}\n"),
                 out.constData());
        writeFile(root_ + "/b4.css", "p { color: green }\n");
        QThread::msleep(20);
        writeFile(root_ + "/sub/page.html", "<p>new</p>\n");
        QVERIFY(p.waitForFinished(15000));
        out += p.readAllStandardOutput();
        QVERIFY2(out.endsWith("\n{\"type\":\"reload\",\"paths\":[\"/b4.css\",\"/sub/page.html\"]}\n"),
                 out.constData());
    }

    // A real browser: an HTML edit reloads the page; a CSS edit is applied without a reload.
    void chromiumReloadsAndSwapsCss() {
        const QString chromium = QStandardPaths::findExecutable("chromium");
        if (chromium.isEmpty()) QSKIP("chromium is not installed (installers/dev.sh installs it)");
        const QString site = tmp_.filePath("browser");
        writeFile(site + "/style.css", "#x { color: rgb(0, 0, 255) }\n");
        writeFile(site + "/index.html",
                  "<!doctype html><html><head><link rel=\"stylesheet\" href=\"style.css\"></head><body>"
                  "<p id=\"x\">v1</p><script>\n"
                  "const el = document.getElementById('x');\n"
                  "const report = (q) => fetch('/log?' + q);\n"
                  "let color = getComputedStyle(el).color;\n"
                  "report('event=load&v=' + el.textContent + '&color=' + encodeURIComponent(color));\n"
                  "setInterval(() => { const c = getComputedStyle(el).color;\n"
                  "  if (c !== color) { color = c; report('event=color&v=' + el.textContent + '&color=' + "
                  "encodeURIComponent(c)); } }, 50);\n"
                  "</script></body></html>\n");
        const QString log = tmp_.filePath("browser.log");
        ServerProcess server({site, "--access-log", log});
        QVERIFY2(server.waitReady(), server.output().constData());
        log_ = log;
        QTemporaryDir profile;
        QProcess browser;
        browser.setProcessChannelMode(QProcess::MergedChannels);
        browser.start(chromium,
                      {"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                       "--disable-component-update", "--disable-sync", "--no-first-run",
                       "--user-data-dir=" + profile.path(), "--remote-debugging-port=0",
                       QStringLiteral("http://127.0.0.1:%1/index.html").arg(server.port())});
        QVERIFY(browser.waitForStarted());
        auto cleanup = qScopeGuard([&] {
            browser.kill(); // only the browser this test started
            browser.waitForFinished(5000);
        });
        if (!waitLog("event=load&v=v1")) {
            QByteArray why = browser.readAll();
            if (browser.state() != QProcess::Running)
                QSKIP(qPrintable("chromium could not run here: " + QString::fromLocal8Bit(why.left(400))));
            QFAIL("the page never reported its first load");
        }
        QVERIFY2(waitLog("GET /__portico/livereload HTTP/1.1\" 101"), accessLog().constData());
        // CSS edit: the colour changes in place, no second load.
        writeFile(site + "/style.css", "#x { color: rgb(255, 0, 0) }\n");
        QVERIFY2(waitLog("event=color&v=v1&color=rgb(255%2C%200%2C%200)"), accessLog().constData());
        QVERIFY(waitLog("/style.css?portico-reload="));
        QCOMPARE(accessLog().count("event=load"), 1);
        // HTML edit: the page reloads and shows the new content (with the current stylesheet).
        QFile f(site + "/index.html");
        QVERIFY(f.open(QIODevice::ReadOnly));
        QByteArray html = f.readAll().replace(">v1<", ">v2<");
        f.close();
        writeFile(site + "/index.html", html);
        QVERIFY2(waitLog("event=load&v=v2&color=rgb(255%2C%200%2C%200)"), accessLog().constData());
        QCOMPARE(accessLog().count("event=load"), 2);
    }

    // A real browser and an edited script: the reloaded page runs the new one. The script was
    // last modified days ago, so without `Cache-Control: no-cache` Chromium holds it as
    // heuristically fresh and the reload ran the old copy.
    void chromiumRunsTheEditedScript() {
        const QString chromium = QStandardPaths::findExecutable("chromium");
        if (chromium.isEmpty()) QSKIP("chromium is not installed (installers/dev.sh installs it)");
        const QString site = tmp_.filePath("script");
        writeFile(site + "/index.html",
                  "<!doctype html><html><body><p>s</p><script src=\"app.js\"></script></body></html>\n");
        writeFile(site + "/app.js", "fetch('/log?event=load&v=a1');\n");
        {
            QFile js(site + "/app.js");
            QVERIFY(js.open(QIODevice::ReadWrite));
            QVERIFY(js.setFileTime(QDateTime::currentDateTimeUtc().addDays(-10),
                                   QFileDevice::FileModificationTime));
        }
        const QString log = tmp_.filePath("script.log");
        ServerProcess server({site, "--access-log", log});
        QVERIFY2(server.waitReady(), server.output().constData());
        const auto head = curlFetch({"-I", QStringLiteral("http://127.0.0.1:%1/app.js").arg(server.port())});
        QVERIFY2(head.body.contains("Cache-Control: no-cache"), head.body.constData());
        // Validators still answer a revalidation with 304.
        const QByteArray modified =
            head.body.mid(head.body.indexOf("Last-Modified: ") + 15).split('\r').first();
        const auto again = curlFetch({"-H", "If-Modified-Since: " + QString::fromLatin1(modified),
                                      QStringLiteral("http://127.0.0.1:%1/app.js").arg(server.port())});
        QCOMPARE(again.status, 304);
        log_ = log;
        QTemporaryDir profile;
        QProcess browser;
        browser.setProcessChannelMode(QProcess::MergedChannels);
        browser.start(chromium,
                      {"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                       "--disable-component-update", "--disable-sync", "--no-first-run",
                       "--user-data-dir=" + profile.path(), "--remote-debugging-port=0",
                       QStringLiteral("http://127.0.0.1:%1/index.html").arg(server.port())});
        QVERIFY(browser.waitForStarted());
        auto cleanup = qScopeGuard([&] {
            browser.kill(); // only the browser this test started
            browser.waitForFinished(5000);
        });
        if (!waitLog("event=load&v=a1")) {
            QByteArray why = browser.readAll();
            if (browser.state() != QProcess::Running)
                QSKIP(qPrintable("chromium could not run here: " + QString::fromLocal8Bit(why.left(400))));
            QFAIL("the page never reported its first load");
        }
        QVERIFY2(waitLog("GET /__portico/livereload HTTP/1.1\" 101"), accessLog().constData());
        writeFile(site + "/app.js", "fetch('/log?event=load&v=a2');\n");
        QVERIFY2(waitLog("event=load&v=a2"), accessLog().constData());
    }

    // A real browser across a server restart on the same port: the script reconnects (with its
    // backoff, ≤ 5 s between tries), reloads once to pick up whatever changed while the server was
    // away, and the next edit reloads the page again through the new server.
    void chromiumReconnectsAfterRestart() {
        const QString chromium = QStandardPaths::findExecutable("chromium");
        if (chromium.isEmpty()) QSKIP("chromium is not installed (installers/dev.sh installs it)");
        const QString site = tmp_.filePath("restart");
        writeFile(site + "/index.html",
                  "<!doctype html><html><body><p id=\"x\">r1</p><script>\n"
                  "fetch('/log?event=load&v=' + document.getElementById('x').textContent);\n"
                  "</script></body></html>\n");
        const QString log = tmp_.filePath("restart.log");
        auto first = std::make_unique<ServerProcess>(QStringList{site, "--access-log", log});
        QVERIFY2(first->waitReady(), first->output().constData());
        const quint16 port = first->port();
        log_ = log;
        QTemporaryDir profile;
        QProcess browser;
        browser.setProcessChannelMode(QProcess::MergedChannels);
        browser.start(chromium,
                      {"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                       "--disable-component-update", "--disable-sync", "--no-first-run",
                       "--user-data-dir=" + profile.path(), "--remote-debugging-port=0",
                       QStringLiteral("http://127.0.0.1:%1/index.html").arg(port)});
        QVERIFY(browser.waitForStarted());
        auto cleanup = qScopeGuard([&] {
            browser.kill(); // only the browser this test started
            browser.waitForFinished(5000);
        });
        const QByteArray upgraded = "GET /__portico/livereload HTTP/1.1\" 101";
        if (!waitLog("event=load&v=r1")) {
            QByteArray why = browser.readAll();
            if (browser.state() != QProcess::Running)
                QSKIP(qPrintable("chromium could not run here: " + QString::fromLocal8Bit(why.left(400))));
            QFAIL("the page never reported its first load");
        }
        QVERIFY2(waitLog(upgraded), accessLog().constData());

        // Stop (the session gets Close 1001), then a new process on the same port.
        QCOMPARE(first->terminate(), 0);
        first.reset();
        ServerProcess second({site, "--access-log", log, "--port", QString::number(port)});
        QVERIFY2(second.waitReady(), second.output().constData());
        QCOMPARE(second.port(), port);

        // Reconnected: the script reloads once, and the reloaded page connects again.
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < 30000 &&
               (accessLog().count("event=load&v=r1") < 2 || accessLog().count(upgraded) < 3))
            QTest::qWait(100);
        QVERIFY2(accessLog().count("event=load&v=r1") == 2, accessLog().constData());
        QVERIFY2(accessLog().count(upgraded) >= 3, accessLog().constData());

        // An edit now reaches the page through the new server.
        writeFile(site + "/index.html",
                  "<!doctype html><html><body><p id=\"x\">r2</p><script>\n"
                  "fetch('/log?event=load&v=' + document.getElementById('x').textContent);\n"
                  "</script></body></html>\n");
        QVERIFY2(waitLog("event=load&v=r2"), accessLog().constData());
        QCOMPARE(second.terminate(), 0);
    }

    void cleanupTestCase() {
        if (server_) QCOMPARE(server_->terminate(), 0);
    }
};

QTEST_GUILESS_MAIN(TestLiveReload)
#include "tst_live_reload.moc"
