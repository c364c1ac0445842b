// The Sites tab against a real in-process server: edit → Apply → a real request sees the new
// response on the same connection; inline errors keep Apply disabled; Revert; the YAML is saved
// and reloadable; external edits are picked up; a dropped folder is served.
#include "mainwindow.h"
#include "servercontroller.h"
#include "sites/sitespage.h"
#include "test_support.h"

#include <portico/validate/load.h>

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QSettings>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include <variant>

using namespace portico;
using portico::ui::MainWindow;
using portico::ui::ServerController;
using portico::ui::SitesPage;

namespace {

const char* kConfig = "listen: [127.0.0.1:0]\n"
                      "vhosts:\n"
                      "  - names: [localhost, 127.0.0.1]\n"
                      "    root: ./site\n"
                      "    routes:\n"
                      "      - path: /hello\n"
                      "        respond: {body: \"old\\n\"}\n"
                      "      - path: /other\n"
                      "        respond: {status: 202, body: other}\n";

void writeFile(const QString& path, const QByteArray& content) {
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(content);
}

struct Reply {
    int status = 0;
    QByteArray body;
};

// One HTTP/1.1 request on an open keep-alive connection; reads one Content-Length framed response.
Reply exchange(QTcpSocket& socket, const QByteArray& path, const QByteArray& host = "127.0.0.1") {
    socket.write("GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
    socket.flush();
    QByteArray data;
    QElapsedTimer clock;
    clock.start();
    while (clock.elapsed() < 5000) {
        const int headEnd = data.indexOf("\r\n\r\n");
        if (headEnd >= 0) {
            const QByteArray head = data.left(headEnd).toLower();
            const int cl = head.indexOf("content-length:");
            const int length =
                cl < 0 ? 0 : head.mid(cl + 15, head.indexOf("\r\n", cl) - cl - 15).trimmed().toInt();
            if (data.size() >= headEnd + 4 + length) {
                Reply r;
                r.status = data.mid(9, 3).toInt();
                r.body = data.mid(headEnd + 4, length);
                return r;
            }
        }
        if (!socket.waitForReadyRead(100) && socket.state() != QAbstractSocket::ConnectedState) break;
        data += socket.readAll();
    }
    return {};
}

} // namespace

class TestGuiSites : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::unique_ptr<ServerController> m_server;
    std::unique_ptr<SitesPage> m_page;

    QString configPath() const { return m_dir.path() + "/portico.yaml"; }
    std::uint16_t port() const { return m_server->engine().endpoints().front().port; }
    template <class T> T* field(const QString& name) {
        T* w = m_page->findChild<T*>(name);
        if (!w) qWarning("no field %s", qPrintable(name));
        return w;
    }
    QLabel* errorLabel(const QString& key) { return m_page->findChild<QLabel*>("error:" + key); }
    QPushButton* applyButton() { return m_page->findChild<QPushButton*>("applyButton"); }

    void typeInto(QLineEdit* edit, const QString& text) {
        edit->setFocus();
        edit->selectAll();
        QTest::keyClick(edit, Qt::Key_Backspace);
        QTest::keyClicks(edit, text);
    }

    // Picks an action in the route form as a user would (the combo's `activated`).
    void chooseAction(const QString& startsWith) {
        auto* combo = field<QComboBox>("action");
        QVERIFY(combo);
        const int index = combo->findText(startsWith, Qt::MatchStartsWith);
        QVERIFY2(index >= 0, qPrintable(startsWith));
        combo->setCurrentIndex(index);
        emit combo->activated(index);
    }

    // Reopens the server and the page on `yaml` (written as the project's config file).
    void reopen(const QByteArray& yaml) {
        m_page.reset();
        m_server.reset();
        writeFile(configPath(), yaml);
        m_server = std::make_unique<ServerController>();
        QString error;
        QVERIFY2(m_server->open(configPath(), &error, false), qPrintable(error));
        m_page = std::make_unique<SitesPage>(m_server.get());
        m_page->resize(1000, 700);
        m_page->show();
    }

    // Sends a WebSocket upgrade request for `path` to the server on `socket` and returns the
    // response head (empty when nothing came within 5 s).
    QByteArray upgrade(QTcpSocket& socket, const QByteArray& path) {
        socket.connectToHost("127.0.0.1", port());
        if (!socket.waitForConnected(3000)) return {};
        socket.write("GET " + path +
                     " HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                     "Sec-WebSocket-Version: 13\r\n\r\n");
        socket.flush();
        QByteArray head;
        QElapsedTimer clock;
        clock.start();
        while (!head.contains("\r\n\r\n") && clock.elapsed() < 5000) {
            socket.waitForReadyRead(100);
            head += socket.readAll();
        }
        return head;
    }

private slots:
    void init() {
        QVERIFY(m_dir.isValid());
        writeFile(m_dir.path() + "/site/index.html", "<h1>home</h1>\n");
        writeFile(configPath(), kConfig);
        m_server = std::make_unique<ServerController>();
        QString error;
        QVERIFY2(m_server->open(configPath(), &error, false), qPrintable(error));
        m_page = std::make_unique<SitesPage>(m_server.get());
        m_page->resize(1000, 700);
        m_page->show();
        m_page->select(0, 0);
        QCOMPARE(field<QPlainTextEdit>("respond.body")->toPlainText(), QString("old\n"));
        QVERIFY(!applyButton()->isEnabled());
    }

    void cleanup() {
        m_page.reset();
        m_server.reset();
    }

    // The status bar links every listener; only a non-loopback one (never bound in tests) adds
    // the network warning, so here it must be absent.
    void statusBarLinksListenersWithoutNetworkWarning() {
        MainWindow window(m_server.get());
        auto* label = window.findChild<QLabel*>("statusListeners");
        QVERIFY(label);
        QVERIFY2(label->text().contains(QString("http://127.0.0.1:%1/").arg(port())),
                 qPrintable(label->text()));
        QVERIFY(!label->text().contains("Reachable from the network"));
        QVERIFY(m_server->exposedUrls().isEmpty());
    }

    void editApplyServesNewResponseOnSameConnection() {
        QTcpSocket socket;
        socket.connectToHost("127.0.0.1", port());
        QVERIFY(socket.waitForConnected(3000));
        Reply before = exchange(socket, "/hello");
        QCOMPARE(before.status, 200);
        QCOMPARE(before.body, QByteArray("old\n"));

        field<QPlainTextEdit>("respond.body")->setPlainText("new body\n");
        typeInto(field<QLineEdit>("respond.status"), "201");
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));
        QVERIFY(applyButton()->isEnabled());
        // Not applied yet: the server still answers the old way.
        QCOMPARE(exchange(socket, "/hello").body, QByteArray("old\n"));

        QTest::mouseClick(applyButton(), Qt::LeftButton);
        QVERIFY(!applyButton()->isEnabled());
        Reply after = exchange(socket, "/hello");
        QCOMPARE(after.status, 201);
        QCOMPARE(after.body, QByteArray("new body\n"));
        QCOMPARE(socket.state(), QAbstractSocket::ConnectedState); // the connection was not dropped
        QCOMPARE(m_server->engine().counters().connectionsAccepted, std::uint64_t(1));

        // Saved, and the saved file loads to the same thing.
        auto reloaded = config::loadConfigFile(configPath().toStdString());
        QVERIFY(reloaded.ok());
        const auto& r = std::get<config::RespondAction>(reloaded.config->vhosts[0].routes[0].action);
        QCOMPARE(r.status, 201);
        QCOMPARE(QString::fromStdString(r.body), QString("new body\n"));
        QCOMPARE(reloaded.config->vhosts[0].routes.size(), std::size_t(2));
        QCOMPARE(QString::fromStdString(reloaded.config->vhosts[0].root->root),
                 QDir(m_dir.path()).canonicalPath() + "/site");
    }

    void invalidInputShowsInlineErrorAndBlocksApply() {
        QLineEdit* status = field<QLineEdit>("respond.status");
        typeInto(status, "600");
        // A range the reader checks: the draft's read-back runs off the UI thread, its answer
        // comes a moment later.
        QTRY_VERIFY(errorLabel("respond.status")->isVisible());
        QVERIFY2(errorLabel("respond.status")->text().contains("between 200 and 599"),
                 qPrintable(errorLabel("respond.status")->text()));
        QVERIFY(!applyButton()->isEnabled());
        QVERIFY(!m_page->apply());

        typeInto(status, "abc");
        QVERIFY(errorLabel("respond.status")->text().contains("expected a number"));
        QVERIFY(!applyButton()->isEnabled());

        typeInto(status, "200");
        QLineEdit* latency = field<QLineEdit>("respond.latency");
        typeInto(latency, "10");
        QVERIFY(errorLabel("respond.latency")->isVisible());
        QVERIFY(!errorLabel("respond.status")->isVisible());
        QVERIFY(!applyButton()->isEnabled());

        // A path the router refuses: the core's loader locates it and the form shows it.
        typeInto(latency, "");
        typeInto(field<QLineEdit>("path"), "/users/:id/*/x");
        QVERIFY(errorLabel("path")->isVisible());
        QVERIFY2(errorLabel("path")->text().contains("only allowed as the whole last segment"),
                 qPrintable(errorLabel("path")->text()));
        QVERIFY(!applyButton()->isEnabled());

        // The server still serves the last applied config.
        QTcpSocket socket;
        socket.connectToHost("127.0.0.1", port());
        QVERIFY(socket.waitForConnected(3000));
        QCOMPARE(exchange(socket, "/hello").body, QByteArray("old\n"));
    }

    // A config file with bad values opens in the form with the errors on their fields (not a
    // refusal dialog); the server keeps serving the old config until they are fixed and applied,
    // and Apply saves to the opened file.
    void badFileOpensInTheFormWithItsErrors() {
        const QString bad = m_dir.path() + "/bad.yaml";
        writeFile(bad, "listen: [127.0.0.1:0]\n"
                       "vhosts:\n"
                       "  - names: [localhost, 127.0.0.1]\n"
                       "    root: ./site\n"
                       "    routes:\n"
                       "      - path: /hello\n"
                       "        respond: {status: abc, body: \"fixed\\n\"}\n"
                       "      - path: /users/:id/*/x\n"
                       "        respond: {body: user}\n");
        QVERIFY(!config::loadConfigFile(bad.toStdString()).ok());
        // The app's settings in the test's folder: a refused file must not become the last project
        // (the next start would be refused).
        QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_dir.path() + "/settings");
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_dir.path() + "/settings");
        QVERIFY2(QSettings().fileName().startsWith(m_dir.path()), qPrintable(QSettings().fileName()));
        MainWindow window(m_server.get());
        window.show();
        // A refusal would be a modal box: close it so the test fails instead of hanging.
        QTimer::singleShot(5000, [] {
            if (QWidget* w = QApplication::activeModalWidget()) w->close();
        });
        window.openPath(bad);
        QVERIFY(!QApplication::activeModalWidget());
        QCOMPARE(m_server->configPath(), QFileInfo(bad).absoluteFilePath());
        QVERIFY(
            !QSettings().value("recentProjects").toStringList().contains(QFileInfo(bad).absoluteFilePath()));
        QVERIFY(QSettings().value("lastProject").toString() != QFileInfo(bad).absoluteFilePath());
        SitesPage* page = window.sitesPage();
        QVERIFY(page->isVisible());
        auto find = [&](const QString& name) { return page->findChild<QWidget*>(name); };
        auto error = [&](const QString& key) { return page->findChild<QLabel*>("error:" + key); };
        // The first problem's route is shown: the status that did not read.
        QVERIFY2(error("respond.status")->isVisible(), qPrintable(page->problems().join('\n')));
        QVERIFY2(!error("respond.status")->text().isEmpty(), "no message");
        QCOMPARE(page->problems().size(), 2);
        QVERIFY(!page->findChild<QPushButton*>("applyButton")->isEnabled());
        QLabel* notice = page->findChild<QLabel*>("sitesNotice");
        QVERIFY(notice && notice->isVisible());
        QVERIFY2(notice->text().contains("bad.yaml was not applied: 2 problems"), qPrintable(notice->text()));
        // The problem line names the site, route and field as the form shows them, not a YAML path.
        const QString line = page->findChild<QLabel*>("sitesProblems")->text();
        QVERIFY2(line.startsWith("2 problems: localhost, 127.0.0.1 › /hello › Status: "), qPrintable(line));
        QVERIFY2(!line.contains("vhosts["), qPrintable(line));

        // Still serving the old config.
        QTcpSocket socket;
        socket.connectToHost("127.0.0.1", port());
        QVERIFY(socket.waitForConnected(3000));
        QCOMPARE(exchange(socket, "/hello").body, QByteArray("old\n"));

        // Fix both in the form.
        auto type = [&](const QString& key, const QString& text) {
            auto* edit = qobject_cast<QLineEdit*>(find(key));
            QVERIFY2(edit, qPrintable(key));
            typeInto(edit, text);
        };
        type("respond.status", "201");
        QVERIFY(!error("respond.status")->isVisible());
        QCOMPARE(page->problems().size(), 1);
        page->select(0, 1);
        QVERIFY(error("path")->isVisible());
        QVERIFY2(error("path")->text().contains("only allowed as the whole last segment"),
                 qPrintable(error("path")->text()));
        type("path", "/users/:id");
        QVERIFY2(page->problems().isEmpty(), qPrintable(page->problems().join('\n')));
        QVERIFY(page->findChild<QPushButton*>("applyButton")->isEnabled());
        QVERIFY(page->apply());

        const Reply fixed = exchange(socket, "/hello");
        QCOMPARE(fixed.status, 201);
        QCOMPARE(fixed.body, QByteArray("fixed\n"));
        auto saved = config::loadConfigFile(bad.toStdString());
        QVERIFY2(saved.ok(), saved.errors.empty() ? "" : saved.errors.front().toString().c_str());
        QCOMPARE(saved.config->vhosts[0].routes.size(), std::size_t(2));

        // A file the form cannot fix (YAML syntax) is still refused, and nothing changes.
        const QString broken = m_dir.path() + "/broken.yaml";
        writeFile(broken, "vhosts: [\n");
        std::shared_ptr<config::Config> draft;
        std::vector<config::ConfigError> problems;
        QString why;
        QVERIFY(!m_server->openDraft(broken, draft, problems, &why));
        QVERIFY(!why.isEmpty());
        QCOMPARE(m_server->configPath(), QFileInfo(bad).absoluteFilePath());
    }

    // `portico gui BAD.yaml` starts anyway: the demo serves in its place and the window shows the
    // file in the form with its problems (here as a screenshot, the start path without a display);
    // the file is not touched. A file the form cannot fix still ends the start with the reason.
    void startWithBadFileShowsItInTheForm() {
        const QString bad = m_dir.path() + "/start-bad.yaml";
        const QByteArray text = "listen: [127.0.0.1:0]\n"
                                "vhosts:\n"
                                "  - names: [localhost]\n"
                                "    routes:\n"
                                "      - path: /hello\n"
                                "        respond: {status: 999, body: hi}\n";
        writeFile(bad, text);
        auto run = [&](const QString& project, const QString& png) {
            QProcess p;
            QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
            env.insert("QT_QPA_PLATFORM", "offscreen");
            env.insert("XDG_CONFIG_HOME", m_dir.path() + "/xdg-config");
            env.insert("XDG_DATA_HOME", m_dir.path() + "/xdg-data");
            p.setProcessEnvironment(env);
            p.start(test::porticoBinary(), {"gui", project, "--screenshot", png, "--tab", "sites"});
            if (!p.waitForFinished(120000)) p.kill();
            return std::make_pair(p.exitCode(), QString::fromUtf8(p.readAllStandardError()));
        };
        const QString png = m_dir.path() + "/draft.png";
        const auto [rc, err] = run(bad, png);
        QVERIFY2(rc == 0, qPrintable(err));
        QVERIFY2(err.contains("start-bad.yaml was not applied"), qPrintable(err));
        QVERIFY2(err.contains("start-bad.yaml:6:") && err.contains("status must be between 200 and 599"),
                 qPrintable(err));
        QVERIFY(QFileInfo(png).size() > 0);
        QFile f(bad);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll(), text);

        const QString broken = m_dir.path() + "/start-broken.yaml";
        writeFile(broken, "vhosts: [\n");
        const auto [rc2, err2] = run(broken, m_dir.path() + "/broken.png");
        QCOMPARE(rc2, 1);
        QVERIFY2(err2.contains("cannot open") && err2.contains("start-broken.yaml:"), qPrintable(err2));
        QVERIFY(!QFileInfo::exists(m_dir.path() + "/broken.png"));
    }

    void revertRestoresPublished() {
        typeInto(field<QLineEdit>("respond.status"), "abc");
        field<QPlainTextEdit>("respond.body")->setPlainText("changed");
        QVERIFY(m_page->hasChanges());
        QPushButton* revert = m_page->findChild<QPushButton*>("revertButton");
        QVERIFY(revert->isEnabled());
        QTest::mouseClick(revert, Qt::LeftButton);
        QVERIFY(!m_page->hasChanges());
        QVERIFY(m_page->problems().isEmpty());
        QCOMPARE(field<QLineEdit>("respond.status")->text(), QString("200"));
        QCOMPARE(field<QPlainTextEdit>("respond.body")->toPlainText(), QString("old\n"));
        QVERIFY(!errorLabel("respond.status")->isVisible());
        QVERIFY(!applyButton()->isEnabled());
    }

    void changesAreComparedByValue() {
        // "Has changes" is the draft against the published config, value by value: an edit undone
        // by hand is no change, whatever the form rebuilt in between.
        auto* text = field<QPlainTextEdit>("respond.body");
        text->setPlainText("something else");
        QVERIFY(m_page->hasChanges());
        QVERIFY(applyButton()->isEnabled());
        text->setPlainText("old\n");
        QVERIFY(!m_page->hasChanges());
        QVERIFY(!applyButton()->isEnabled());
        typeInto(field<QLineEdit>("path"), "/renamed");
        QVERIFY(m_page->hasChanges());
        typeInto(field<QLineEdit>("path"), "/hello");
        QVERIFY(!m_page->hasChanges());
    }

    void applyWaitsForTheFileCheck() {
        // A root that does not exist is a file check: it runs off the UI thread, and Apply pressed
        // before its answer came takes the answer first instead of publishing the draft unchecked.
        m_page->select(0, -1);
        typeInto(field<QLineEdit>("root"), "no-such-folder");
        QVERIFY(m_page->hasChanges());
        QVERIFY(!m_page->apply());
        QVERIFY2(m_page->problems().join('\n').contains("no-such-folder"),
                 qPrintable(m_page->problems().join('\n')));
        QVERIFY(!applyButton()->isEnabled());
        QCOMPARE(QString::fromStdString(m_server->config()->vhosts[0].root->root),
                 QDir(m_dir.path()).canonicalPath() + "/site");
        // And the answer that arrives later changes nothing.
        QTest::qWait(50);
        QVERIFY(!m_page->problems().isEmpty());
        typeInto(field<QLineEdit>("root"), "site");
        QTRY_VERIFY(m_page->problems().isEmpty());
        QVERIFY(!m_page->hasChanges());
    }

    void addRouteAndRemoveRoute() {
        m_page->addRoute();
        typeInto(field<QLineEdit>("path"), "/added");
        field<QPlainTextEdit>("respond.body")->setPlainText("added");
        QVERIFY(m_page->apply());
        QTcpSocket socket;
        socket.connectToHost("127.0.0.1", port());
        QVERIFY(socket.waitForConnected(3000));
        QCOMPARE(exchange(socket, "/added").body, QByteArray("added"));
        m_page->removeSelected();
        QVERIFY(m_page->apply());
        QCOMPARE(exchange(socket, "/added").status, 404);
    }

    void externalEditIsPickedUp() {
        QSignalSpy spy(m_server.get(), &ServerController::externalChange);
        QByteArray text = kConfig;
        text.replace("old\\n", "edited outside\\n");
        writeFile(configPath(), text);
        QTRY_VERIFY_WITH_TIMEOUT(spy.count() >= 1, 5000);
        QVERIFY(spy.last().at(1).toBool());
        QVERIFY(m_page->findChild<QLabel*>("sitesNotice")->isVisible());
        QCOMPARE(field<QPlainTextEdit>("respond.body")->toPlainText(), QString("edited outside\n"));
        QTcpSocket socket;
        socket.connectToHost("127.0.0.1", port());
        QVERIFY(socket.waitForConnected(3000));
        QCOMPARE(exchange(socket, "/hello").body, QByteArray("edited outside\n"));

        // A broken edit is refused with the located error; the server keeps the last good one.
        writeFile(configPath(), "vhosts:\n  - root: ./no-such-dir\n");
        QTRY_VERIFY_WITH_TIMEOUT(spy.count() >= 2, 5000);
        QVERIFY(!spy.last().at(1).toBool());
        QVERIFY(spy.last().at(0).toString().contains("no-such-dir"));
        QCOMPARE(exchange(socket, "/hello").body, QByteArray("edited outside\n"));
        // The refusal stays (its errors are to be fixed) until dismissed.
        auto* banner = m_page->findChild<QLabel*>("sitesNotice");
        QVERIFY(banner->isVisible() && banner->text().contains("no-such-dir"));
        QTest::qWait(SitesPage::kNoticeMs + 500);
        QVERIFY(banner->isVisible());
        emit banner->linkActivated("#dismiss");
        QVERIFY(!banner->isVisible());
        // A good edit's "reloaded" banner goes away by itself.
        writeFile(configPath(), text);
        QTRY_VERIFY_WITH_TIMEOUT(spy.count() >= 3, 5000);
        QVERIFY(spy.last().at(1).toBool());
        QVERIFY(banner->isVisible());
        QTRY_VERIFY_WITH_TIMEOUT(!banner->isVisible(), SitesPage::kNoticeMs + 3000);
    }

    // Rooms are visible in the status bar: sessions open, rooms, and per room (tooltip) its
    // members and messages/s. Hidden while no WebSocket was ever accepted.
    void statusBarShowsWebSocketRooms() {
        reopen("listen: [127.0.0.1:0]\nvhosts:\n  - routes:\n"
               "      - path: /rooms/:room\n        websocket: room\n");
        MainWindow window(m_server.get());
        window.show();
        auto* label = window.findChild<QLabel*>("statusWebSocket");
        QVERIFY(label);
        QVERIFY(label->isHidden());
        QTcpSocket members[2];
        for (auto& socket : members) {
            const QByteArray head = upgrade(socket, "/rooms/lobby");
            QVERIFY2(head.startsWith("HTTP/1.1 101"), head.constData());
        }
        // One masked text message "hi" (mask key 0) from the first member.
        members[0].write(QByteArray("\x81\x82\0\0\0\0hi", 8));
        members[0].flush();
        QTRY_VERIFY_WITH_TIMEOUT(label->isVisible() && label->text() == "WebSocket: 2 open · 1 room", 5000);
        QTRY_VERIFY_WITH_TIMEOUT(label->toolTip().contains("messages in 1,"), 5000);
        QVERIFY2(label->toolTip().contains("lobby (/rooms/:room): 2 members"), qPrintable(label->toolTip()));
    }

    void websocketEchoFormAppliesAndUpgrades() {
        m_page->select(0, 1);
        chooseAction("WebSocket");
        QVERIFY(field<QComboBox>("websocket.mode")->isVisible());
        QCOMPARE(field<QComboBox>("websocket.mode")->currentIndex(), 0); // echo
        QLineEdit* origins = field<QLineEdit>("websocket.origins");
        typeInto(origins, "ftp://nope.test");
        QVERIFY(errorLabel("websocket.origins")->isVisible());
        QVERIFY(!applyButton()->isEnabled());
        typeInto(origins, "http://app.example.test:5173");
        QVERIFY(!errorLabel("websocket.origins")->isVisible());
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));
        QVERIFY(applyButton()->isEnabled());
        QTest::mouseClick(applyButton(), Qt::LeftButton);
        QVERIFY(!applyButton()->isEnabled());

        QTcpSocket socket;
        const QByteArray head = upgrade(socket, "/other");
        QVERIFY2(head.startsWith("HTTP/1.1 101"), head.constData());
        QVERIFY(head.contains("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="));

        auto reloaded = config::loadConfigFile(configPath().toStdString());
        QVERIFY(reloaded.ok());
        const auto* ws = std::get_if<config::WebSocketAction>(&reloaded.config->vhosts[0].routes[1].action);
        QVERIFY(ws);
        QCOMPARE(ws->mode, config::WebSocketAction::Mode::Echo);
        QCOMPARE(ws->origins, std::vector<std::string>{"http://app.example.test:5173"});
    }

    void proxyFormForwardsToUpstream() {
        // A second in-process server is the upstream.
        QTemporaryDir upDir;
        QVERIFY(upDir.isValid());
        writeFile(upDir.path() + "/portico.yaml", "listen: [127.0.0.1:0]\n"
                                                  "vhosts:\n"
                                                  "  - routes:\n"
                                                  "      - path: /other\n"
                                                  "        respond: {body: \"from upstream\\n\"}\n");
        ServerController upstream;
        QString error;
        QVERIFY2(upstream.open(upDir.path() + "/portico.yaml", &error, false), qPrintable(error));
        const int upPort = upstream.engine().endpoints().front().port;

        m_page->select(0, 1);
        chooseAction("Reverse proxy");
        QVERIFY(field<QPlainTextEdit>("proxy.upstream")->isVisible());
        QVERIFY(!applyButton()->isEnabled()); // no upstream yet
        field<QPlainTextEdit>("proxy.upstream")->setPlainText(QString("http://127.0.0.1:%1\n").arg(upPort));
        field<QCheckBox>("proxy.change_origin")->setChecked(true);
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));
        QVERIFY(applyButton()->isEnabled());
        QTest::mouseClick(applyButton(), Qt::LeftButton);

        QTcpSocket socket;
        socket.connectToHost("127.0.0.1", port());
        QVERIFY(socket.waitForConnected(3000));
        Reply r = exchange(socket, "/other");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body, QByteArray("from upstream\n"));

        auto reloaded = config::loadConfigFile(configPath().toStdString());
        QVERIFY(reloaded.ok());
        const auto* px = std::get_if<config::ProxyAction>(&reloaded.config->vhosts[0].routes[1].action);
        QVERIFY(px);
        QCOMPARE(px->upstreams.size(), std::size_t(1));
        QCOMPARE(int(px->upstreams[0].port), upPort);
        QVERIFY(px->changeOrigin);
        QVERIFY(!px->grpc);
    }

    void badUpstreamShowsInlineErrorAndBlocksApply() {
        m_page->select(0, 1);
        chooseAction("Reverse proxy");
        auto* upstreams = field<QPlainTextEdit>("proxy.upstream");
        upstreams->setPlainText("ftp://127.0.0.1:21");
        QVERIFY(errorLabel("proxy.upstream")->isVisible());
        QVERIFY2(errorLabel("proxy.upstream")->text().contains("http://HOST:PORT"),
                 qPrintable(errorLabel("proxy.upstream")->text()));
        QVERIFY(!applyButton()->isEnabled());
        QVERIFY(!m_page->apply());
        upstreams->setPlainText("http://127.0.0.1:99999");
        QVERIFY(errorLabel("proxy.upstream")->text().contains("port"));
        QVERIFY(!applyButton()->isEnabled());
        upstreams->setPlainText("http://127.0.0.1:8081/api");
        QVERIFY(errorLabel("proxy.upstream")->text().contains("without a path"));
        QVERIFY(!applyButton()->isEnabled());
        // Mixed schemes: the core's loader refuses, located under the same field.
        upstreams->setPlainText("http://127.0.0.1:8081\nh2c://127.0.0.1:8082");
        QTRY_VERIFY2(errorLabel("proxy.upstream")->text().contains("same scheme"),
                     qPrintable(errorLabel("proxy.upstream")->text()));
        QVERIFY(!applyButton()->isEnabled());
        upstreams->setPlainText("http://127.0.0.1:8081");
        QVERIFY(!errorLabel("proxy.upstream")->isVisible());
        QVERIFY(applyButton()->isEnabled());

        // gRPC needs HTTP/2.
        chooseAction("gRPC");
        typeInto(field<QLineEdit>("grpc.upstream"), "http://127.0.0.1:50051");
        QVERIFY(errorLabel("grpc.upstream")->text().contains("gRPC needs HTTP/2"));
        QVERIFY(!applyButton()->isEnabled());
        typeInto(field<QLineEdit>("grpc.upstream"), "h2c://127.0.0.1:50051");
        QVERIFY(!errorLabel("grpc.upstream")->isVisible());
        QVERIFY(applyButton()->isEnabled());
    }

    void grpcAndFastcgiFormsLoadAndSaveKeepValues() {
        QDir().mkpath(m_dir.path() + "/php");
        reopen("listen: [127.0.0.1:0]\n"
               "vhosts:\n"
               "  - names: [localhost, 127.0.0.1]\n"
               "    routes:\n"
               "      - path: /rpc/*\n"
               "        grpc: {upstream: h2c://127.0.0.1:50051, grpc_timeout_max: 5s}\n"
               "      - path: /app/*\n"
               "        fastcgi: {address: 127.0.0.1:9000, root: ./php, index: app.php, extension: .php5}\n");
        m_page->select(0, 0);
        QCOMPARE(field<QComboBox>("action")->currentText(), QString("gRPC"));
        QVERIFY(field<QLineEdit>("grpc.upstream")->isVisible());
        QCOMPARE(field<QLineEdit>("grpc.upstream")->text(), QString("h2c://127.0.0.1:50051"));
        typeInto(field<QLineEdit>("name"), "rpc");

        m_page->select(0, 1);
        QCOMPARE(field<QComboBox>("action")->currentText(), QString("FastCGI"));
        QVERIFY(field<QLineEdit>("fastcgi.address")->isVisible());
        QCOMPARE(field<QLineEdit>("fastcgi.address")->text(), QString("127.0.0.1:9000"));
        QVERIFY(field<QLineEdit>("fastcgi.root")->text().endsWith("/php"));
        QCOMPARE(field<QLineEdit>("fastcgi.index")->text(), QString("app.php"));
        typeInto(field<QLineEdit>("fastcgi.address"), "127.0.0.1");
        QVERIFY(errorLabel("fastcgi.address")->isVisible());
        QVERIFY(!applyButton()->isEnabled());
        typeInto(field<QLineEdit>("fastcgi.address"), "127.0.0.1:9001");
        typeInto(field<QLineEdit>("fastcgi.index"), "main.php");
        QVERIFY2(m_page->problems().isEmpty(), qPrintable(m_page->problems().join('\n')));
        QVERIFY(m_page->apply());

        auto reloaded = config::loadConfigFile(configPath().toStdString());
        QVERIFY(reloaded.ok());
        const auto& routes = reloaded.config->vhosts[0].routes;
        QCOMPARE(routes.size(), std::size_t(2));
        const auto* grpc = std::get_if<config::ProxyAction>(&routes[0].action);
        QVERIFY(grpc && grpc->grpc);
        QCOMPARE(QString::fromStdString(routes[0].name), QString("rpc"));
        QCOMPARE(grpc->upstreams.size(), std::size_t(1));
        QCOMPARE(int(grpc->upstreams[0].port), 50051);
        QVERIFY(grpc->upstreams[0].protocol == config::Upstream::Protocol::H2c);
        QVERIFY(grpc->grpcTimeoutMax == std::chrono::seconds(5)); // not in the form: kept
        const auto* fcgi = std::get_if<config::ProxyAction>(&routes[1].action);
        QVERIFY(fcgi && !fcgi->fastcgi.address.empty());
        QCOMPARE(QString::fromStdString(fcgi->fastcgi.address), QString("127.0.0.1:9001"));
        QCOMPARE(int(fcgi->fastcgi.port), 9001);
        QCOMPARE(QString::fromStdString(fcgi->fastcgi.index), QString("main.php"));
        QCOMPARE(QString::fromStdString(fcgi->fastcgi.extension), QString(".php5")); // kept
        QVERIFY(QString::fromStdString(fcgi->fastcgi.root).endsWith("/php"));
    }

    void droppedFolderIsServed() {
        writeFile(m_dir.path() + "/My Docs/readme.txt", "dropped\n");
        QVERIFY(m_page->addFolder(m_dir.path() + "/My Docs"));
        QTcpSocket socket;
        socket.connectToHost("127.0.0.1", port());
        QVERIFY(socket.waitForConnected(3000));
        Reply r = exchange(socket, "/readme.txt", "my-docs.localhost");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body, QByteArray("dropped\n"));
        QVERIFY(QFile(configPath()).open(QIODevice::ReadOnly));
        QFile saved(configPath());
        QVERIFY(saved.open(QIODevice::ReadOnly));
        QVERIFY(saved.readAll().contains("my-docs.localhost"));
    }
};

QTEST_MAIN(TestGuiSites)
#include "tst_gui_sites.moc"
