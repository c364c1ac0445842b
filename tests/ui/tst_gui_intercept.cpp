// The Intercept menu of the main window, offscreen, against the real in-process engine: the switch
// opens an intercepting forward proxy on 127.0.0.1 in the running engine; curl -x through it (an
// http origin, and an https site of the project itself under the local CA) shows up in the Traffic
// model; the status bar tells the state; Copy terminal setup puts `portico proxy env`'s exports on
// the clipboard; Launch browser starts Chromium (here a fake one) through the proxy; switching off
// frees the port; a taken port keeps the switch off and says so.
#include "inspector/inspectorwidget.h"
#include "inspector/timelinewidget.h"
#include "mainwindow.h"
#include "servercontroller.h"
#include "test_support.h"
#include "traffic/trafficmodel.h"
#include "traffic/trafficpage.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QPainter>
#include <QProcess>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QtTest>

using namespace portico;
using portico::ui::MainWindow;
using portico::ui::ServerController;
using portico::ui::TrafficModel;

class TestGuiIntercept : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QProcess m_origin;
    int m_originPort = 0;
    quint16 m_port = 0;
    std::unique_ptr<ServerController> m_server;
    std::unique_ptr<MainWindow> m_window;

    QString proxyUrl() const { return QStringLiteral("http://127.0.0.1:%1").arg(m_port); }
    QString statusText() const { return m_window->findChild<QLabel*>("statusIntercept")->text(); }
    QAction* action(const char* name) const { return m_window->findChild<QAction*>(name); }
    // The row of the Traffic model whose record satisfies `pred`, -1 when none (polls the feed).
    template <typename Pred> int findRow(Pred pred) {
        auto* page = m_window->trafficPage();
        int found = -1;
        const auto scan = [&] {
            page->poll();
            const TrafficModel* m = page->model();
            for (int r = 0; r < m->rowCount() && found < 0; ++r)
                if (auto e = m_server->engine().exchange(m->idAt(r)); e && pred(*e)) found = r;
            return found >= 0;
        };
        QTest::qWaitFor(scan, 5000);
        return found;
    }
    QString tlsUrl() const {
        for (const QString& u : m_server->urls())
            if (u.startsWith("https://")) return u;
        return {};
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_dir.path() + "/settings");
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_dir.path() + "/settings");
        qputenv("PORTICO_DATA_DIR", (m_dir.path() + "/data").toLocal8Bit());
        qputenv("TMPDIR", m_dir.path().toLocal8Bit());
        m_originPort = test::startSupportScript(m_origin, "upstream.py", m_dir.filePath("origin.port"));
        QVERIFY(m_originPort);
        // Capture off in the project: the switch turns it on for the proxy's exchanges. An HTTPS
        // listener under the local CA: an origin the proxy verifies with that CA. Fixed ports:
        // with two port-0 listeners a publish mixes them up (the core's, reported).
        const quint16 plainPort = test::freePort();
        quint16 tlsPort = test::freePort();
        while (tlsPort == plainPort)
            tlsPort = test::freePort();
        QFile f(m_dir.filePath("portico.yaml"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QStringLiteral("listen: [127.0.0.1:%1, {address: 127.0.0.1:%2, tls: auto}]\ncapture: false\n"
                               "vhosts:\n  - routes:\n      - path: /hello\n        respond: {body: hi}\n")
                    .arg(plainPort)
                    .arg(tlsPort)
                    .toUtf8());
        f.close();
        m_server = std::make_unique<ServerController>();
        QString error;
        QVERIFY2(m_server->open(m_dir.filePath("portico.yaml"), &error, false), qPrintable(error));
        m_window = std::make_unique<MainWindow>(m_server.get());
        m_window->show();
        QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
        m_port = test::freePort();
        QVERIFY(m_port);
        m_window->setInterceptPort(m_port);
    }
    void cleanupTestCase() {
        m_window.reset();
        m_server.reset();
        m_origin.kill();
        m_origin.waitForFinished();
    }

    // Off at first: the menu names the port, the status bar says off.
    void offAtStart() {
        QAction* sw = action("interceptAction");
        QVERIFY(sw && sw->isCheckable() && !sw->isChecked());
        QCOMPARE(sw->text().remove('&'),
                 QStringLiteral("Intercept traffic (proxy on 127.0.0.1:%1)").arg(m_port));
        QCOMPARE(statusText(), QString("Intercept off"));
        QVERIFY(!m_window->trafficPage()->findChild<QWidget*>("trafficCaptureOff")->isHidden());
        QVERIFY(action("launchBrowserAction"));
        QVERIFY(action("copyTerminalSetupAction"));
    }

    // On: a proxy on the port; curl -x through it to an http origin and to the project's own
    // https site (intercepted: curl trusts only the local CA) lands in the Traffic model.
    void switchOnCapturesProxiedExchanges() {
        action("interceptAction")->trigger();
        QVERIFY(action("interceptAction")->isChecked());
        QVERIFY(m_server->intercepting());
        QVERIFY2(statusText().contains(QStringLiteral("Intercepting on 127.0.0.1:%1").arg(m_port)),
                 qPrintable(statusText()));
        // Capture is off in the project, on for the proxy: the Traffic tab does not say it is off.
        QVERIFY(m_window->trafficPage()->findChild<QWidget*>("trafficCaptureOff")->isHidden());
        // The proxy's listener is not one of the project's URLs (status bar links, load test target).
        QVERIFY2(!m_server->urls().join(' ').contains(QString::number(m_port)),
                 qPrintable(m_server->urls().join(' ')));
        auto r = test::curlFetch(
            {"-x", proxyUrl(), QStringLiteral("http://127.0.0.1:%1/echo?via=gui").arg(m_originPort)});
        QVERIFY2(r.status == 200, r.err.constData());
        QCOMPARE(QJsonDocument::fromJson(r.body).object().value("path").toString(), QString("/echo?via=gui"));
        const QString https = tlsUrl();
        QVERIFY2(!https.isEmpty(), qPrintable(m_server->urls().join(' ')));
        r = test::curlFetch(
            {"-x", proxyUrl(), "--cacert", m_dir.filePath("data/ca/ca.crt"), https + "hello?via=gui-tls"});
        QVERIFY2(r.status == 200, r.err.constData());
        QCOMPARE(r.body, QByteArray("hi"));
        m_server->engine().flushCapture();
        const int plain = findRow([](const capture::Exchange& e) {
            return e.target.find("/echo?via=gui") != std::string::npos && e.status == 200;
        });
        QVERIFY2(plain >= 0, "the proxied http exchange is not in the Traffic model");
        // The intercepted one: https, sent on by the proxy (the site's own record has no upstream).
        const int tls = findRow([](const capture::Exchange& e) {
            return e.scheme == "https" && e.target == "/hello?via=gui-tls" && !e.upstreamAddress.empty();
        });
        QVERIFY2(tls >= 0, "the intercepted https exchange is not in the Traffic model");
        const TrafficModel* m = m_window->trafficPage()->model();
        QCOMPARE(m->data(m->index(tls, TrafficModel::Status)).toInt(), 200);
        QCOMPARE(m->data(m->index(tls, TrafficModel::Method)).toString(), QString("GET"));
        // The project's config (and its file) know nothing of the proxy; Apply keeps it running.
        QCOMPARE(int(m_server->config()->listen.size()), 2);
        QVERIFY(!m_server->config()->capture.enabled);
        QString error;
        QVERIFY2(m_server->apply(m_server->config(), &error, false), qPrintable(error));
        QVERIFY(m_server->intercepting());
        QCOMPARE(
            test::curlFetch({"-x", proxyUrl(), QStringLiteral("http://127.0.0.1:%1/echo").arg(m_originPort)})
                .status,
            200);
    }

    // Copy terminal setup: exactly what `portico proxy env --port PORT` prints.
    void copyTerminalSetupPutsTheExports() {
        QApplication::clipboard()->clear();
        action("copyTerminalSetupAction")->trigger();
        const QString copied = QApplication::clipboard()->text();
        auto env = QProcessEnvironment::systemEnvironment();
        auto r = test::runProcessIn(test::porticoBinary(),
                                    {"proxy", "env", "--port", QString::number(m_port)}, env, m_dir.path());
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QCOMPARE(copied, QString::fromUtf8(r.out));
        QVERIFY(copied.contains(QStringLiteral("export HTTP_PROXY=http://127.0.0.1:%1 ").arg(m_port)));
        QVERIFY(copied.contains(m_dir.filePath("data/ca/bundle.pem")));
    }

    // PORTICO_INTERCEPT_SCREENSHOT=FILE: the window at 1280×800 with the Intercept menu open over
    // the Traffic tab, which lists a few more intercepted exchanges, one of them in the inspector
    // (docs/images/gui-intercept.png, and FILE-timeline.png). Nothing is checked beyond the picture being
    // written.
    void screenshot() {
        const QString file = qEnvironmentVariable("PORTICO_INTERCEPT_SCREENSHOT");
        if (file.isEmpty()) QSKIP("PORTICO_INTERCEPT_SCREENSHOT is not set");
        // The documented port when it is free (the menu and the status bar show it).
        if (QTcpServer probe; probe.listen(QHostAddress("127.0.0.1"), 8000)) {
            probe.close();
            action("interceptAction")->trigger();
            m_window->setInterceptPort(8000);
            action("interceptAction")->trigger();
            QVERIFY(m_server->intercepting());
            m_port = 8000;
        }
        const QString origin = QStringLiteral("http://127.0.0.1:%1").arg(m_originPort);
        const QStringList viaProxy{"-x", proxyUrl(), "--cacert", m_dir.filePath("data/ca/ca.crt")};
        for (const QString& url :
             {origin + "/echo?page=2&sort=name", tlsUrl() + "hello", origin + "/status/404",
              origin + "/big?n=48000", tlsUrl() + "hello?lang=en", origin + "/chunked"})
            test::curlFetch(viaProxy + QStringList{url});
        test::curlFetch(viaProxy + QStringList{"-X", "POST", "--data", "{\"name\":\"demo\"}", "-H",
                                               "Content-Type: application/json", origin + "/echo?create=1"});
        m_server->engine().flushCapture();
        m_window->resize(1280, 800);
        QVERIFY(m_window->showTab("traffic"));
        const int row = findRow([](const capture::Exchange& e) { return e.target == "/hello?lang=en"; });
        QVERIFY(row >= 0);
        m_window->trafficPage()->selectRow(row);
        m_window->statusBar()->clearMessage();
        QTest::qWait(400);
        QPixmap picture = m_window->grab();
        // The menu is a window of its own: drawn where it would open, under its title.
        QMenu* menu = nullptr;
        QRect title;
        for (QAction* a : m_window->menuBar()->actions())
            if (a->text().remove('&') == "Intercept") {
                menu = a->menu();
                title = m_window->menuBar()->actionGeometry(a);
            }
        QVERIFY(menu);
        const QPoint at = m_window->menuBar()->mapTo(m_window.get(), title.bottomLeft());
        menu->popup(m_window->mapToGlobal(at));
        menu->setActiveAction(menu->actions().value(1));
        QTest::qWait(300);
        QPainter painter(&picture);
        painter.drawPixmap(at * picture.devicePixelRatio() / picture.devicePixelRatio(), menu->grab());
        painter.end();
        menu->hide();
        QVERIFY2(picture.save(file, "PNG"), qPrintable(file));
        qInfo("screenshot: %s", qPrintable(file));
        // The same window on the Timeline of an intercepted exchange that opened its upstream
        // connection (DNS, TCP and TLS with the origin before the request went on): FILE-timeline.png.
        const int opened = findRow([](const capture::Exchange& e) {
            return e.source == capture::Source::Intercepted &&
                   e.at(capture::Phase::UpstreamTcpConnected) >= 0;
        });
        QVERIFY(opened >= 0);
        m_window->trafficPage()->selectRow(opened);
        auto* inspector = m_window->trafficPage()->inspector();
        for (int i = 0; i < inspector->tabs()->count(); ++i)
            if (inspector->tabs()->widget(i)->isAncestorOf(inspector->timeline()))
                inspector->tabs()->setCurrentIndex(i);
        QTest::qWait(400);
        QString timelineFile = file;
        timelineFile.replace(QRegularExpression("\\.png$"), "-timeline.png");
        QVERIFY2(m_window->grab().save(timelineFile, "PNG"), qPrintable(timelineFile));
        qInfo("screenshot: %s", qPrintable(timelineFile));
    }

    // Launch browser: Chromium (a fake one from PORTICO_BROWSER) through this proxy, trusting the
    // local CA's key; its profile is removed when it exits.
    void launchBrowserGoesThroughTheProxy() {
        const QString fake = m_dir.filePath("fake-chromium"), out = m_dir.filePath("browser-argv.txt");
        QFile f(fake);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QStringLiteral("#!/bin/sh\nls -l /proc/$$/fd | grep -c socket: > '%1.sockets'\n"
                               "for a in \"$@\"; do printf '%s\\n' \"$a\"; done > '%1.tmp'\n"
                               "mv '%1.tmp' '%1'\nsleep 0.3\n")
                    .arg(out)
                    .toUtf8());
        f.close();
        QVERIFY(f.setPermissions(f.permissions() | QFileDevice::ExeOwner));
        qputenv("PORTICO_BROWSER", fake.toLocal8Bit());
        action("launchBrowserAction")->trigger();
        QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(out), 10000);
        QTRY_VERIFY_WITH_TIMEOUT(m_window->browsers().isEmpty(), 10000);
        qunsetenv("PORTICO_BROWSER");
        QFile argv(out);
        QVERIFY(argv.open(QIODevice::ReadOnly));
        const QStringList args = QString::fromUtf8(argv.readAll()).split('\n', Qt::SkipEmptyParts);
        QCOMPARE(args.size(), 6);
        QVERIFY(args[0].startsWith("--user-data-dir=" + m_dir.path() + "/portico-browser-"));
        QCOMPARE(args[1], QStringLiteral("--proxy-server=http://127.0.0.1:%1").arg(m_port));
        QCOMPARE(args[2], QString("--proxy-bypass-list=<-loopback>"));
        QVERIFY(args[3].startsWith("--ignore-certificate-errors-spki-list=") && args[3].size() > 40);
        QTRY_VERIFY_WITH_TIMEOUT(!QFileInfo::exists(args[0].mid(16)), 5000);
        // None of the engine's sockets went with it (its listeners would keep the port bound).
        QFile sockets(out + ".sockets");
        QVERIFY(sockets.open(QIODevice::ReadOnly));
        QCOMPARE(sockets.readAll().trimmed(), QByteArray("0"));
    }

    // Off: the port is free again (nothing answers, a server can bind it), the project still serves.
    void switchingOffFreesThePort() {
        action("interceptAction")->trigger();
        QVERIFY(!action("interceptAction")->isChecked());
        QVERIFY(!m_server->intercepting());
        QCOMPARE(statusText(), QString("Intercept off"));
        auto r =
            test::curlFetch({"-x", proxyUrl(), QStringLiteral("http://127.0.0.1:%1/echo").arg(m_originPort)});
        QCOMPARE(r.status, 0); // connection refused
        QTcpServer server;
        QVERIFY2(server.listen(QHostAddress("127.0.0.1"), m_port), qPrintable(server.errorString()));
        server.close();
        QCOMPARE(test::curlFetch({m_server->firstHttpUrl() + "hello"}).status, 200);
    }

    // A taken port: the switch says so and stays off; on again once the port is free.
    void takenPortKeepsTheSwitchOff() {
        QTcpServer squatter;
        QVERIFY(squatter.listen(QHostAddress("127.0.0.1"), m_port));
        action("interceptAction")->trigger();
        QVERIFY(!action("interceptAction")->isChecked());
        QVERIFY(!m_server->intercepting());
        QVERIFY2(statusText().contains(QStringLiteral("127.0.0.1:%1 is not available").arg(m_port)),
                 qPrintable(statusText()));
        QVERIFY(!m_window->findChild<QLabel*>("statusIntercept")->toolTip().isEmpty());
        QCOMPARE(test::curlFetch({m_server->firstHttpUrl() + "hello"}).status,
                 200); // the project is unharmed
        squatter.close();
        action("interceptAction")->trigger();
        QVERIFY(action("interceptAction")->isChecked());
        QVERIFY(statusText().contains("Intercepting"));
        action("interceptAction")->trigger();
        QVERIFY(!m_server->intercepting());
    }
};

QTEST_MAIN(TestGuiIntercept)
#include "tst_gui_intercept.moc"
